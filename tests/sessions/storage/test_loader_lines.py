"""The session loader's line loop: every line that is not a plain entry (blank, escaped lone
surrogate, second header, damaged) is sorted out as before, and decoded messages share the
string values that repeat from message to message."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from pitrio import _wire_fast
from pitrio.providers import AssistantMessage, ToolCall, ToolResultMessage
from pitrio.sessions import SessionFileCorrupt, SessionManager, SessionMessageEntry

ACCELERATED: Final = pytest.mark.skipif(
    not _wire_fast.ENABLED, reason="PITRIO_ACCELERATORS=0: values are decoded by cattrs, not shared"
)

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}


def entry(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": message,
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": call_id, "name": "echo", "arguments": {}}],
        "api": "faux",
        "provider": "faux",
        "model": "faux-1",
        "usage": {
            "input": 1,
            "output": 2,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 3,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "toolUse",
        "timestamp": 2,
    }


def result(call_id: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "echo",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": 3,
    }


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_lines_that_are_not_plain_entries_are_sorted_out(tmp_path: Path) -> None:
    """Blank lines are skipped, an escaped lone surrogate (JSON from JavaScript) is read, and a
    second header is skipped and reported with its line number."""
    path = write(
        tmp_path / "s.jsonl",
        [
            orjson.dumps({**HEADER, "cwd": "/p"}),
            orjson.dumps(entry("a", None, user("one"))),
            b"",
            b"   ",
            orjson.dumps(entry("b", "a", user("two"))).replace(b"two", b"t\\ud800o"),
            orjson.dumps({**HEADER, "cwd": "/p"}),
            orjson.dumps(entry("c", "b", user("three"))),
        ],
    )
    manager = SessionManager.open(path)
    entries = manager.get_entries()
    assert [e.id for e in entries] == ["a", "b", "c"]
    second = entries[1]
    assert isinstance(second, SessionMessageEntry)
    assert second.message.content[0].text == "t\ud800o"  # type: ignore[union-attr]
    assert [(p.kind, p.line_no) for p in manager.load_problems] == [("extra_header", 6)]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"type": "message", "id": ', "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (orjson.dumps({"type": "message", "id": "x", "parentId": None}), "message"),
    ],
)
def test_a_damaged_line_in_the_middle_names_its_line(
    tmp_path: Path, bad: bytes, reason: str
) -> None:
    """A line before the last that is not JSON, not an object or not an entry's shape is
    reported with its line number, and the file is left as it was."""
    lines = [
        orjson.dumps({**HEADER, "cwd": "/p"}),
        orjson.dumps(entry("a", None, user("one"))),
        bad,
        orjson.dumps(entry("c", "a", user("three"))),
    ]
    path = write(tmp_path / "s.jsonl", lines)
    before = path.read_bytes()
    with pytest.raises(SessionFileCorrupt) as caught:
        SessionManager.open(path)
    assert caught.value.line_no == 3
    assert reason in caught.value.reason
    assert path.read_bytes() == before


@ACCELERATED
def test_repeated_message_values_are_one_string_object(tmp_path: Path) -> None:
    """The values that repeat from message to message (api, provider, model, tool names, stop
    reasons) are decoded as one shared string each; equal values, fewer objects."""
    path = write(
        tmp_path / "s.jsonl",
        [
            orjson.dumps({**HEADER, "cwd": "/p"}),
            orjson.dumps(entry("a", None, assistant("call_1"))),
            orjson.dumps(entry("b", "a", result("call_1"))),
            orjson.dumps(entry("c", "b", assistant("call_2"))),
            orjson.dumps(entry("d", "c", result("call_2"))),
        ],
    )
    messages = SessionManager.open(path).build_session_context().messages
    first, first_result, second, second_result = messages
    assert isinstance(first, AssistantMessage) and isinstance(second, AssistantMessage)
    for name in ("api", "provider", "model", "stop_reason"):
        assert getattr(first, name) is getattr(second, name), name
    calls = [m.content[0] for m in (first, second)]
    assert isinstance(calls[0], ToolCall) and isinstance(calls[1], ToolCall)
    assert calls[0].name is calls[1].name
    assert isinstance(first_result, ToolResultMessage)
    assert isinstance(second_result, ToolResultMessage)
    assert first_result.tool_name is second_result.tool_name
