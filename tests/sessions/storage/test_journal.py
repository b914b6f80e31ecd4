"""The host's sidecar files: the epoch of each opening, the journal of the answer in flight, and
the recovery that closes a turn a crash interrupted (pitrio/sessions/storage/_journal.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pitrio.providers import AssistantMessage, TextContent, ThinkingContent, ToolCall
from pitrio.sessions import SessionManager
from pitrio.sessions.storage._journal import (
    HOST_STOPPED_MESSAGE,
    encode_journal,
    journal_path,
    next_epoch,
    read_epoch,
    read_journal,
    recover_interrupted_turn,
    write_journal,
)


def _message(*content: Any, timestamp: int = 2_000) -> AssistantMessage:
    return AssistantMessage(
        content=content,
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason="stop",
        timestamp=timestamp,
    )


def _lines(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _session_file(tmp_path: Path, *entries: dict[str, Any]) -> str:
    path = str(tmp_path / "s.jsonl")
    header = {"type": "session", "version": 3, "id": "sid", "timestamp": "2026-01-01T00:00:00.000Z"}
    with open(path, "w") as f:
        for line in (header | {"cwd": str(tmp_path)}, *entries):
            f.write(json.dumps(line) + "\n")
    return path


def _user(entry_id: str, parent: str | None, text: str, timestamp: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": timestamp},
    }


def test_epochs_increase_from_one_and_an_unreadable_file_counts_as_none(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    assert read_epoch(path) == 0
    assert [next_epoch(path) for _ in range(3)] == [1, 2, 3]
    Path(path + ".epoch").write_text("garbage")
    assert next_epoch(path) == 1


def test_a_journal_reads_back_as_the_message_it_holds(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    message = _message(
        ThinkingContent(thinking="hmm"),
        TextContent(text="partial answer"),
        ToolCall(id="t1", name="read", arguments={"path": "a"}),
    )
    write_journal(path, message)
    assert read_journal(path) == message
    assert not os.path.exists(journal_path(path) + ".tmp")


def test_a_journal_is_bounded_and_keeps_the_prefix_that_fits(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    long = "é\n" * 10_000  # escapes and UTF-8: more bytes than characters
    message = _message(TextContent(text="first"), TextContent(text=long), TextContent(text="x"))
    written = write_journal(path, message, 4_000)
    assert written <= 4_000
    assert os.path.getsize(journal_path(path)) == written
    kept = read_journal(path)
    assert kept is not None
    texts = [block.text for block in kept.content if isinstance(block, TextContent)]
    assert texts[0] == "first"
    assert len(texts) == 2 and long.startswith(texts[1]) and 1_000 < len(texts[1]) < len(long)


def test_a_tool_call_that_does_not_fit_is_left_out() -> None:
    message = _message(
        TextContent(text="a"), ToolCall(id="t", name="w", arguments={"c": "x" * 999})
    )
    data = encode_journal(message, 400)  # the header takes ~280 of them
    assert len(data) <= 400 and data.count(b"\n") == 2  # header and the text block


@pytest.mark.parametrize("cut", [1, 10, 40, -30, -3, -1])
def test_a_torn_journal_keeps_its_complete_lines(tmp_path: Path, cut: int) -> None:
    path = str(tmp_path / "s.jsonl")
    message = _message(TextContent(text="one"), TextContent(text="two"), TextContent(text="three"))
    write_journal(path, message)
    data = Path(journal_path(path)).read_bytes()
    Path(journal_path(path)).write_bytes(data[:cut])
    torn = read_journal(path)
    complete_lines = data[:cut].count(b"\n")
    if complete_lines == 0:
        assert torn is None
    else:
        assert torn is not None
        assert torn.content == message.content[: complete_lines - 1]


def test_recovery_closes_a_turn_with_the_journal_text_and_deletes_the_journal(
    tmp_path: Path,
) -> None:
    path = _session_file(tmp_path, _user("u1", None, "hello", 1_000))
    write_journal(path, _message(TextContent(text="half an ans"), timestamp=1_500))
    closing = recover_interrupted_turn(path, now_ms=9_000)
    assert closing is not None
    *_, user, assistant = _lines(path)
    assert assistant["parentId"] == user["id"] == "u1"
    assert assistant["message"]["content"] == [{"type": "text", "text": "half an ans"}]
    assert assistant["message"]["stopReason"] == "aborted"
    assert assistant["message"]["errorMessage"] == HOST_STOPPED_MESSAGE
    assert not os.path.exists(journal_path(path))
    # The file loads, the closing message its leaf.
    manager = SessionManager.open(path)
    assert manager.get_leaf_id() == assistant["id"]
    assert recover_interrupted_turn(path) is None  # the turn is closed: nothing more


def test_recovery_without_a_journal_closes_the_turn_empty(tmp_path: Path) -> None:
    model_change = {
        "type": "model_change",
        "id": "m1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.500Z",
        "provider": "faux",
        "modelId": "faux-1",
    }
    path = _session_file(tmp_path, model_change, _user("u1", "m1", "hello", 1_000))
    closing = recover_interrupted_turn(path, now_ms=9_000)
    assert closing is not None and closing.content == () and closing.timestamp == 9_000
    last = _lines(path)[-1]["message"]
    assert (last["provider"], last["model"], last["stopReason"]) == ("faux", "faux-1", "aborted")


def test_a_journal_older_than_the_waiting_message_is_not_its_answer(tmp_path: Path) -> None:
    """A journal left by the previous answer (killed before it was deleted) is not taken for
    the answer to a later message."""
    path = _session_file(tmp_path, _user("u1", None, "again", 5_000))
    write_journal(path, _message(TextContent(text="old answer"), timestamp=4_000))
    closing = recover_interrupted_turn(path, now_ms=9_000)
    assert closing is not None and closing.content == ()


def test_a_finished_turn_is_left_alone_and_its_stale_journal_deleted(tmp_path: Path) -> None:
    answer = {
        "type": "message",
        "id": "a1",
        "parentId": "u1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "api": "faux",
            "provider": "faux",
            "model": "faux-1",
            "usage": {
                "input": 0,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": "stop",
            "timestamp": 1_500,
        },
    }
    path = _session_file(tmp_path, _user("u1", None, "hello", 1_000), answer)
    before = Path(path).read_bytes()
    write_journal(path, _message(TextContent(text="done"), timestamp=1_500))
    assert recover_interrupted_turn(path) is None
    assert Path(path).read_bytes() == before
    assert not os.path.exists(journal_path(path))


def test_recovery_after_a_torn_last_line_keeps_the_closing_entry_on_its_own_line(
    tmp_path: Path,
) -> None:
    path = _session_file(tmp_path, _user("u1", None, "hello", 1_000))
    with open(path, "a") as f:
        f.write('{"type":"message","id":"u2","par')  # a write cut short
    assert recover_interrupted_turn(path, now_ms=9_000) is not None
    last = _lines_skipping_torn(path)[-1]
    assert last["parentId"] == "u1" and last["message"]["stopReason"] == "aborted"


def _lines_skipping_torn(path: str) -> list[dict[str, Any]]:
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out
