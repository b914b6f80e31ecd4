"""Session files: foreign files are refused, one writer per file, file work off the event loop."""

from __future__ import annotations

import ast
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest
import trio
import trio.testing
from session_script import Messages, counter_ids

import pitrio.sessions
from pitrio.sessions import (
    FILE_WORK_THREADS,
    SessionFileChanged,
    SessionFileCorrupt,
    SessionLocked,
    SessionManager,
    file_limiter,
    open_persistence,
)
from pitrio.sessions.storage._files import lock_holder, lock_session_file

HOLDER = Path(__file__).parent.parent.joinpath("lock_holder.py")
PROMPT = ("-p", "hi")


def saved_session(directory: Path, answers: int = 1) -> Path:
    sm = SessionManager.create("/p", directory, new_id=counter_ids())
    m = Messages(0)
    for i in range(answers):
        sm.append_message(m.user(f"q{i}"))
        sm.append_message(m.assistant(f"a{i}"))
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    return Path(path)


def headers(path: Path) -> int:
    return sum(orjson.loads(line)["type"] == "session" for line in path.read_bytes().splitlines())


def answer(sm: SessionManager, m: Messages, text: str) -> str:
    sm.append_message(m.user(f"question for {text}"))
    return sm.append_message(m.assistant(text))


@contextmanager
def holder_process(path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A separate process that writes ``path`` and keeps it until the block ends."""
    process = subprocess.Popen(
        [sys.executable, str(HOLDER), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline().split()
        assert ready == [b"ready", str(process.pid).encode()], process.stderr
        yield process
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()


# --------------------------------------------------------------------------- foreign files

NOT_SESSIONS = {
    "text_without_newline": b"my notes about the project",
    "text_lines": b"line one\nline two\n",
    "binary": bytes(b for b in range(256) if b != 0x0A) * 4,
    "torn_header": b'{"type":"session","version":3,"id":"0196-abc","timestamp":"2025-01-0',
    "json_array": b"[1, 2, 3]",
    "other_json": b'{"name": "package.json", "version": "1.0.0"}\n',
}


@pytest.mark.parametrize("content", NOT_SESSIONS.values(), ids=NOT_SESSIONS.keys())
def test_a_file_that_is_not_a_session_is_refused_and_kept(tmp_path: Path, content: bytes) -> None:
    """Opening a file whose first line is not a session header raises and never writes it."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(SessionFileCorrupt) as info:
        SessionManager.open(path)
    assert info.value.path == str(path) and info.value.line_no == 1
    assert str(path) in str(info.value) and "not a session file" in str(info.value)
    assert path.read_bytes() == content


def test_switching_to_a_foreign_file_keeps_the_current_session(tmp_path: Path) -> None:
    """set_session_file on a text file raises and leaves the session and the file as they were."""
    sm = SessionManager.open(saved_session(tmp_path / "s"))
    before = sm.get_entries()
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"no newline here")
    with pytest.raises(SessionFileCorrupt):
        sm.set_session_file(notes)
    assert sm.get_entries() == before and notes.read_bytes() == b"no newline here"


def test_torn_last_line_of_a_session_is_still_repaired(tmp_path: Path) -> None:
    """A real session file (first line a header) with a torn last line opens and is repaired."""
    path = saved_session(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good + b'{"type":"message","id":"torn","pa')
    sm = SessionManager.open(path)
    assert [p.kind for p in sm.load_problems] == ["torn_last_line"]
    sm.append_message(Messages(50).user("after"))
    assert path.read_bytes().startswith(good) and headers(path) == 1
    assert orjson.loads(path.read_bytes().splitlines()[-1])["message"]["content"] == "after"


def test_the_cli_refuses_a_text_file_as_session(tmp_path: Path) -> None:
    """``pitrio --provider faux --session ./notes.txt -p hi`` exits 1 and leaves notes.txt."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"remember the milk")
    env = {**os.environ, "HOME": str(tmp_path), "PITRIO_CODING_AGENT_DIR": str(tmp_path / "a")}
    done = subprocess.run(
        [sys.executable, "-m", "pitrio", "--provider", "faux", "--session", "./notes.txt", *PROMPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done
    assert b"notes.txt" in done.stderr and b"not a session file" in done.stderr
    assert notes.read_bytes() == b"remember the milk"


# --------------------------------------------------------------------------- one writer per file


def test_second_writer_in_this_process_is_refused(tmp_path: Path) -> None:
    """Two managers on one file: the second writer gets SessionLocked, then SessionFileChanged."""
    path = saved_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    m = Messages(10)
    answer(first, m, "first")
    with pytest.raises(SessionLocked) as info:
        second.append_message(m.user("second"))
    assert info.value.path == str(path) and info.value.pid == os.getpid()
    first.close()
    with pytest.raises(SessionFileChanged) as changed:
        second.append_message(m.user("second again"))
    assert changed.value.path == str(path)
    reopened = SessionManager.open(path)
    assert [e.id for e in reopened.get_entries()] == [e.id for e in first.get_entries()]
    assert len(reopened.get_tree()) == 1  # no second root: the tree did not fork


def test_a_session_that_stopped_writing_leaves_its_file_to_the_next_writer(
    tmp_path: Path,
) -> None:
    """After ``stop_writing`` (its file is another writer's now) a session appends in memory
    only, and its lock is released at once: the next writer appends to the file it read."""
    path = saved_session(tmp_path)
    old = SessionManager.open(path)
    m = Messages(10)
    answer(old, m, "before")
    saved = path.read_bytes()
    old.stop_writing()
    new = SessionManager.open(path)
    answer(old, m, "after the loss")  # in memory only
    assert path.read_bytes() == saved
    answer(new, m, "the new owner's")
    reopened = SessionManager.open(path)
    assert [e.id for e in reopened.get_entries()] == [e.id for e in new.get_entries()]
    old.close()
    new.close()


def test_a_write_guard_that_says_no_stops_the_writing_for_good(tmp_path: Path) -> None:
    """``guard_writes``: the guard is asked before each write; while it says yes the lines
    go to the file, and its first no writes nothing of that append (or after it, even once it
    would say yes again) and releases the file to the next writer."""
    path = saved_session(tmp_path)
    manager = SessionManager.open(path)
    m = Messages(10)
    allowed = [True]
    asked = []

    def guard() -> bool:
        asked.append(allowed[0])
        return allowed[0]

    manager.guard_writes(guard)
    answer(manager, m, "while it may")
    saved = path.read_bytes()
    assert b"while it may" in saved
    assert asked and all(asked)
    allowed[0] = False
    answer(manager, m, "after the lapse")
    assert path.read_bytes() == saved
    allowed[0] = True
    answer(manager, m, "and later")
    assert path.read_bytes() == saved
    next_writer = SessionManager.open(path)  # the lock was released
    answer(next_writer, m, "the next writer's")
    assert b"the next writer's" in path.read_bytes()
    manager.close()
    next_writer.close()


def test_two_managers_creating_one_file_write_one_header(tmp_path: Path) -> None:
    """Two new sessions at one missing path: only the first creates it, one header in it."""
    path = tmp_path / "new.jsonl"
    first, second = SessionManager.open(path), SessionManager.open(path)
    m = Messages(0)
    answer(first, m, "first")
    with pytest.raises(SessionLocked):
        answer(second, m, "second")
    first.close()
    with pytest.raises(SessionFileChanged):
        second.append_message(m.user("again"))
    assert headers(path) == 1
    assert SessionManager.open(path).get_session_id() == first.get_session_id()


async def test_running_session_locks_its_file_at_start(tmp_path: Path) -> None:
    """A Persistence actor locks an existing file as it starts and releases it as it stops."""
    path = saved_session(tmp_path)
    first = SessionManager.open(path)
    async with open_persistence(first):
        with pytest.raises(SessionLocked):
            async with open_persistence(SessionManager.open(path)):
                pytest.fail("a second actor started on a locked file")
        answer(first, Messages(20), "written while locked")
    async with open_persistence(SessionManager.open(path)) as persistence:
        assert persistence.running


async def test_switching_a_running_session_to_a_locked_file_is_refused(tmp_path: Path) -> None:
    """A running session cannot resume a file another writer holds; its own stays current."""
    mine, theirs = saved_session(tmp_path / "mine"), saved_session(tmp_path / "theirs")
    other = SessionManager.open(theirs)
    other.append_message(Messages(30).user("holding it"))
    sm = SessionManager.open(mine)
    async with open_persistence(sm):
        with pytest.raises(SessionLocked):
            sm.set_session_file(theirs)
        assert sm.get_session_file() == str(mine)
        sm.set_session_file(mine)  # its own file: the lock passes to the new writer
        answer(sm, Messages(40), "still mine")
    other.close()


def test_another_process_holding_the_file_is_named(tmp_path: Path) -> None:
    """A file kept by another process is refused with that process's pid; reading still works."""
    path = saved_session(tmp_path)
    with holder_process(path) as process:
        reader = SessionManager.open(path)  # reading needs no lock
        assert reader.build_session_context().messages
        assert [info.path for info in SessionManager.list_sessions("/p", tmp_path)] == [str(path)]
        with pytest.raises(SessionLocked) as info:
            answer(reader, Messages(60), "mine")
        assert info.value.pid == process.pid
        assert f"pid {process.pid}" in str(info.value)
    # The holder wrote nothing after the reader loaded, so once it is gone the reader writes.
    answer(reader, Messages(70), "after the holder")
    reader.close()
    assert headers(path) == 1


def test_two_processes_creating_one_file(tmp_path: Path) -> None:
    """A file another process created and keeps is neither written nor given a second header."""
    path = tmp_path / "shared.jsonl"
    late = SessionManager.open(path)  # opened while the file did not exist yet
    with holder_process(path) as process:
        with pytest.raises(SessionLocked) as info:
            answer(late, Messages(0), "late")
        assert info.value.pid == process.pid
    with pytest.raises(SessionFileChanged):
        late.append_message(Messages(5).user("later"))
    assert headers(path) == 1


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path) -> None:
    """After the writing process is killed with SIGKILL the file can be written at once."""
    path = saved_session(tmp_path)
    with holder_process(path) as process:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    sm = SessionManager.open(path)
    answer(sm, Messages(80), "after the crash")
    sm.close()
    assert sorted(os.listdir(tmp_path)) == [path.name]


def test_migration_is_not_written_under_another_writer(tmp_path: Path) -> None:
    """An old file is not rewritten while another writer holds it; opening it says so."""
    path = tmp_path / "old.jsonl"
    old = [
        {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    ]
    content = b"".join(orjson.dumps(line) + b"\n" for line in old)
    path.write_bytes(content)
    fd = lock_session_file(str(path), create=False)
    try:
        with pytest.raises(SessionLocked):
            SessionManager.open(path)
        assert path.read_bytes() == content
    finally:
        os.close(fd)
    assert SessionManager.open(path).get_header() is not None


def test_lock_holder_reads_proc_locks(tmp_path: Path) -> None:
    """The holder's pid comes from the /proc/locks line with the file's device and inode."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    stat = path.stat()
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}"
    table = tmp_path / "locks"
    table.write_text(
        f"1: POSIX  ADVISORY  WRITE 11 {device}:{stat.st_ino} 0 EOF\n"
        f"2: FLOCK  ADVISORY  READ  12 {device}:{stat.st_ino} 0 EOF\n"
        f"3: FLOCK  ADVISORY  WRITE 13 {device}:{stat.st_ino + 1} 0 EOF\n"
        f"4: FLOCK  ADVISORY  WRITE 4242 {device}:{stat.st_ino} 0 EOF\n"
        f"4: -> FLOCK  ADVISORY  WRITE 99 {device}:{stat.st_ino} 0 EOF\n"
    )
    fd = os.open(path, os.O_RDONLY)
    try:
        assert lock_holder(fd, str(table)) == 4242
        table.write_text(f"1: FLOCK  ADVISORY  WRITE 77 00:99:{stat.st_ino} 0 EOF\n")
        assert lock_holder(fd, str(table)) == 77  # another device name, one inode: an overlay
        assert lock_holder(fd, str(tmp_path / "missing")) is None
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- off the event loop


async def test_async_twins_go_through_the_shared_file_limiter(tmp_path: Path) -> None:
    """aopen waits for the shared limiter, so file work never runs on the event loop."""
    path = saved_session(tmp_path)
    limiter = file_limiter()
    assert file_limiter() is limiter
    borrowers = [object() for _ in range(int(limiter.total_tokens))]
    for borrower in borrowers:
        limiter.acquire_on_behalf_of_nowait(borrower)
    opened: list[SessionManager] = []

    async def open_it() -> None:
        opened.append(await SessionManager.aopen(path))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_it)
        await trio.testing.wait_all_tasks_blocked()
        assert limiter.statistics().tasks_waiting == 1 and not opened
        for borrower in borrowers:
            limiter.release_on_behalf_of(borrower)
    assert opened[0].get_entries() == SessionManager.open(path).get_entries()


async def test_async_twins_match_the_sync_api(tmp_path: Path) -> None:
    """The a-prefixed twins return what their synchronous originals return."""
    path = saved_session(tmp_path / "s")
    listed = await SessionManager.alist_sessions("/p", tmp_path / "s")
    assert listed == SessionManager.list_sessions("/p", tmp_path / "s")
    assert [info.path for info in await SessionManager.alist_all_sessions(tmp_path)] == [str(path)]
    recent = await SessionManager.acontinue_recent("/p", tmp_path / "s")
    assert recent.get_session_file() == str(path)
    fork = await SessionManager.afork_from(path, "/q", tmp_path / "f")
    assert [e.id for e in fork.get_entries()] == [e.id for e in recent.get_entries()]
    created = await SessionManager.acreate("/p", tmp_path / "new")
    assert (tmp_path / "new").is_dir() and created.get_entries() == []
    await created.aset_session_file(path)
    assert created.get_session_id() == recent.get_session_id()
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"text")
    with pytest.raises(SessionFileCorrupt):
        await created.aset_session_file(notes)


def test_file_limiter_belongs_to_one_trio_run() -> None:
    """Each Trio run gets its own limiter of FILE_WORK_THREADS tokens (one cannot cross runs)."""

    async def limiter() -> trio.CapacityLimiter:
        return file_limiter()

    first, second = trio.run(limiter), trio.run(limiter)
    assert first is not second
    assert first.total_tokens == second.total_tokens == FILE_WORK_THREADS


def test_loading_leaves_the_garbage_collector_alone(tmp_path: Path) -> None:
    """Loading (and migrating) a session never turns off the collector for the process."""
    path = tmp_path / "old.jsonl"
    old = [
        {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in old))
    seen: list[bool] = []

    def new_id() -> str:
        seen.append(gc.isenabled())  # called by the v1 migration, in the middle of the load
        return f"{len(seen):08x}"

    assert gc.isenabled()
    SessionManager.open(path, new_id=new_id)
    assert seen and all(seen)


# --------------------------------------------------------------------------- layering


def test_persistence_does_not_import_the_manager() -> None:
    """The file and actor modules never import the manager (no import circle)."""
    package = Path(pitrio.sessions.__file__).parent / "storage"
    for name in ("_persistence", "_writer", "_loader", "_files"):
        tree = ast.parse((package / f"{name}.py").read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        }
        assert "pitrio.sessions.storage._manager" not in imported, name
