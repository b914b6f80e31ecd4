"""Session files: lazy first flush, the Persistence actor, torn and corrupt lines, write errors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import trio
import trio.testing
from session_script import Messages, counter_ids
from structlog.testing import capture_logs

from pitrio._exceptions import UsageError
from pitrio.sessions import (
    Persistence,
    SessionFileCorrupt,
    SessionManager,
    SessionWriteError,
    load_session_file,
    open_persistence,
)


def lines(path: str | Path | None) -> list[dict[str, object]]:
    assert path is not None
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def file_of(sm: SessionManager) -> Path:
    path = sm.get_session_file()
    assert path is not None
    return Path(path)


def saved_session(tmp_path: Path, answers: int = 2) -> tuple[SessionManager, Path]:
    sm = SessionManager.create("/p", tmp_path, new_id=counter_ids())
    m = Messages(0)
    for i in range(answers):
        sm.append_message(m.user(f"q{i}"))
        sm.append_message(m.assistant(f"a{i}"))
    sm.close()
    return sm, file_of(sm)


# --------------------------------------------------------------------------- lazy first flush


def test_nothing_is_written_before_the_first_assistant_message(tmp_path: Path) -> None:
    """The file appears with the first answer, holding everything before it in order."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    ids = [sm.append_model_change("p", "m"), sm.append_message(m.user("q"))]
    path = file_of(sm)
    assert not path.exists()
    assert not any(sm.is_entry_persisted(i) for i in ids)
    ids.append(sm.append_message(m.assistant("a")))
    assert [line.get("id") for line in lines(path)] == [sm.get_session_id(), *ids]
    ids.append(sm.append_message(m.user("again")))
    assert [line.get("id") for line in lines(path)][1:] == ids
    assert all(sm.is_entry_persisted(i) for i in ids)


def test_reopened_file_without_answer_is_not_written_twice(tmp_path: Path) -> None:
    """Held-back entries of a reopened file are written once, after the lines already there."""
    path = tmp_path / "s.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "s",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/p",
    }
    entry = {
        "type": "message",
        "id": "00000001",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "q", "timestamp": 1},
    }
    path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(entry) + b"\n")
    sm = SessionManager.open(path, new_id=counter_ids(2))
    m = Messages(0)
    sm.append_message(m.user("q2"))
    assert len(lines(path)) == 2
    sm.append_message(m.assistant("a"))
    assert [line.get("id") for line in lines(path)] == ["s", "00000001", "00000002", "00000003"]


# --------------------------------------------------------------------------- the actor


async def test_actor_writes_a_burst_in_one_batch(tmp_path: Path) -> None:
    """Entries appended between two checkpoints are written together, in append order."""
    sm = SessionManager.create("/p", tmp_path, new_id=counter_ids())
    m = Messages(0)
    async with open_persistence(sm) as persistence:
        ids = [sm.append_message(m.user("q")), sm.append_message(m.assistant("a"))]
        ids += [sm.append_message(m.user(f"u{i}")) for i in range(5)]
        assert not file_of(sm).exists()
        assert all([await sm.wait_persisted(i) for i in ids])
        stats = persistence.statistics()
        assert (stats.batches, stats.submitted, stats.processed) == (1, 7, 7)
    assert [line.get("id") for line in lines(file_of(sm))][1:] == ids


async def test_wait_persisted_waits_for_the_first_answer(tmp_path: Path) -> None:
    """An entry held back by the lazy flush is reported persisted once an answer arrives."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    results: list[bool] = []
    async with open_persistence(sm), trio.open_nursery() as nursery:
        question = sm.append_message(m.user("q"))

        async def wait() -> None:
            results.append(await sm.wait_persisted(question))

        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        await sm.flush()
        assert results == [] and not sm.is_entry_persisted(question)
        sm.append_message(m.assistant("a"))
    assert results == [True]


async def test_held_back_entry_of_an_abandoned_session_is_never_persisted(tmp_path: Path) -> None:
    """Starting a new session drops the unanswered one; waiting for its entries gives False."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    async with open_persistence(sm), trio.open_nursery() as nursery:
        question = sm.append_message(m.user("q"))
        results: list[bool] = []

        async def wait() -> None:
            results.append(await sm.wait_persisted(question))

        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        sm.new_session()
        sm.append_message(m.assistant("wakes the actor"))
    assert results == [False]


async def test_full_inbox_makes_the_appender_write(tmp_path: Path) -> None:
    """Beyond the inbox size the appending task writes the backlog itself; order is kept."""
    sm = SessionManager.create("/p", tmp_path, new_id=counter_ids())
    m = Messages(0)
    async with open_persistence(sm, inbox_size=4) as persistence:
        sm.append_message(m.assistant("a"))
        ids = [sm.append_message(m.user(f"u{i}")) for i in range(50)]
        stats = persistence.statistics()
        assert stats.inline_batches > 0
        assert stats.peak_queued <= stats.max_queued + 1
        await sm.flush()
    assert [line.get("id") for line in lines(file_of(sm))][2:] == ids


async def test_leaving_the_block_writes_what_is_queued(tmp_path: Path) -> None:
    """Closing the actor writes queued entries; appends afterwards are written directly."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    async with open_persistence(sm):
        first = sm.append_message(m.assistant("a"))
    assert sm.persistence is None and sm.is_entry_persisted(first)
    second = sm.append_message(m.user("u"))
    assert sm.is_entry_persisted(second)
    assert len(lines(file_of(sm))) == 3


async def test_cancelled_actor_loses_nothing(tmp_path: Path) -> None:
    """Cancelling the actor's scope right after appends still gets every entry on disk."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    with trio.CancelScope() as scope:
        async with open_persistence(sm):
            ids = [sm.append_message(m.assistant("a")), sm.append_message(m.user("u"))]
            scope.cancel()
            await trio.sleep_forever()
    assert [line.get("id") for line in lines(file_of(sm))][1:] == ids


async def test_one_actor_per_session(tmp_path: Path) -> None:
    """A second Persistence actor for the same manager is refused."""
    sm = SessionManager.create("/p", tmp_path)
    async with open_persistence(sm), trio.open_nursery() as nursery:
        with pytest.raises(UsageError):
            await nursery.start(Persistence(sm).run)


# --------------------------------------------------------------------------- damaged files


def test_torn_last_line_is_skipped_reported_and_cut(tmp_path: Path) -> None:
    """A half-written last line is skipped with a warning; the next append cuts it off."""
    sm, path = saved_session(tmp_path)
    before = path.read_bytes()
    path.write_bytes(before + b'{"type":"message","id":"torn","par')
    with capture_logs() as logs:
        reopened = SessionManager.open(path)
    (problem,) = reopened.load_problems
    assert (problem.kind, problem.line_no) == ("torn_last_line", 6)
    assert any(log["event"] == "session_line_skipped" and log["line_no"] == 6 for log in logs)
    assert reopened.get_entries() == sm.get_entries()
    assert path.read_bytes().startswith(before)
    new_id = reopened.append_message(Messages(10).user("after the crash"))
    assert path.read_bytes() == before + path.read_bytes()[len(before) :]
    again = SessionManager.open(path)
    assert again.load_problems == ()
    assert [e.id for e in again.get_entries()] == [*(e.id for e in sm.get_entries()), new_id]


def test_torn_last_line_followed_by_newline(tmp_path: Path) -> None:
    """A broken last line is torn even if a newline follows it."""
    sm, path = saved_session(tmp_path)
    path.write_bytes(path.read_bytes() + b'{"type":"mess\n\n')
    reopened = SessionManager.open(path)
    assert [p.kind for p in reopened.load_problems] == ["torn_last_line"]
    assert reopened.get_entries() == sm.get_entries()


def test_last_line_without_newline_gets_one(tmp_path: Path) -> None:
    """A complete last line missing its newline is kept and the next entry starts a new line."""
    sm, path = saved_session(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    reopened = SessionManager.open(path)
    assert reopened.load_problems == ()
    reopened.append_message(Messages(10).user("next"))
    assert len(SessionManager.open(path).get_entries()) == len(sm.get_entries()) + 1


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        (b'{"type":"message",', "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"type":"message","id":"x","parentId":null,"timestamp":"t"}', "message"),
        (b'{"type":"label","id":"x","parentId":null,"timestamp":"t","targetId":5}', "string"),
    ],
)
def test_corrupt_line_names_file_and_line(tmp_path: Path, bad_line: bytes, reason: str) -> None:
    """A damaged line before the last raises SessionFileCorrupt with its line number."""
    _, path = saved_session(tmp_path)
    good = path.read_bytes().splitlines(keepends=True)
    damaged = b"".join([*good[:3], bad_line + b"\n", *good[3:]])
    path.write_bytes(damaged)
    with pytest.raises(SessionFileCorrupt) as info:
        SessionManager.open(path)
    assert (info.value.path, info.value.line_no) == (str(path), 4)
    assert str(info.value).startswith(f"{path}:4: ") and reason in str(info.value)
    assert path.read_bytes() == damaged


def test_first_line_must_be_a_header(tmp_path: Path) -> None:
    """A file whose first line is not a session header is refused, not overwritten."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"message","id":"x"}\n')
    with pytest.raises(SessionFileCorrupt) as info:
        SessionManager.open(path)
    assert info.value.line_no == 1
    assert path.read_bytes() == b'{"type":"message","id":"x"}\n'


def test_extra_header_is_skipped_and_reported(tmp_path: Path) -> None:
    """A second header line (old pi re-flush bug) is skipped and listed as a problem."""
    sm, path = saved_session(tmp_path)
    data = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*data[:2], data[0], *data[2:]]))
    loaded = load_session_file(str(path))
    assert [(p.kind, p.line_no) for p in loaded.problems] == [("extra_header", 3)]
    assert loaded.entries == sm.get_entries()


def test_write_failure_is_an_error_and_stops_writing(tmp_path: Path) -> None:
    """A failed write raises SessionWriteError naming the file, and later writes are refused."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    sm.append_message(m.user("q"))
    file_of(sm).mkdir()
    with pytest.raises(SessionWriteError) as info:
        sm.append_message(m.assistant("a"))
    assert info.value.path == str(file_of(sm))
    with pytest.raises(SessionWriteError):
        sm.append_message(m.user("again"))


async def test_write_failure_ends_the_actor(tmp_path: Path) -> None:
    """The Persistence actor stops with SessionWriteError; its nursery sees it."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    file_of(sm).mkdir()
    with pytest.RaisesGroup(SessionWriteError, flatten_subgroups=True):
        async with open_persistence(sm):
            sm.append_message(m.assistant("a"))
            await trio.sleep_forever()
    assert sm.persistence is None
