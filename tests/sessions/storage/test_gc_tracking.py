"""Messages loaded from a session file are ordinary objects to the cyclic garbage collector:
tracked like any other, so a reference cycle someone builds through one later (a tool call's
``arguments`` made to hold its message) is collected once nothing else refers to it."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import orjson

from pitrio.providers import AssistantMessage, ToolCall
from pitrio.sessions import SessionMessageEntry, load_session_file

T = 1735689600000
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "t0", "cwd": "/p"}
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
USAGE = {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}


def assistant_line(entry_id: str, parent_id: str | None) -> dict[str, Any]:
    """A message line of an assistant message with a tool call, as pi writes it."""
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"text": "x"}},
            ],
            "api": "faux",
            "provider": "faux",
            "model": "faux-1",
            "usage": {**USAGE, "cost": ZERO_COST},
            "stopReason": "toolUse",
            "timestamp": T,
        },
    }


def write_session(tmp_path: Path) -> str:
    path = tmp_path / "s.jsonl"
    lines = [HEADER, assistant_line("a1", None), assistant_line("a2", "a1")]
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    return str(path)


def test_loaded_messages_and_their_parts_are_tracked(tmp_path: Path) -> None:
    """A loaded message, its content and its blocks are tracked by the collector."""
    loaded = load_session_file(write_session(tmp_path))
    for entry in loaded.entries:
        assert isinstance(entry, SessionMessageEntry)
        message = entry.message
        assert isinstance(message, AssistantMessage)
        parts = [message, message.content, *message.content, message.usage, message.usage.cost]
        assert all(gc.is_tracked(part) for part in parts)


def test_a_cycle_made_through_a_loaded_message_is_collected(tmp_path: Path) -> None:
    """A tool call's arguments made to hold their message: once the session and the message
    are dropped, a collection frees the cycle."""
    loaded = load_session_file(write_session(tmp_path))
    entry = loaded.entries[0]
    assert isinstance(entry, SessionMessageEntry)
    message = entry.message
    assert isinstance(message, AssistantMessage)
    call = message.content[1]
    assert isinstance(call, ToolCall)
    probe = _Probe()
    call.arguments["message"] = message  # the cycle: message -> content -> call -> dict
    call.arguments["probe"] = probe  # freed with the cycle
    gone = weakref.ref(probe)
    del loaded, entry, message, call, probe
    gc.collect()
    assert gone() is None, "the cycle through the loaded message was not collected"


class _Probe:
    """An object that takes weak references, to see when the cycle holding it is freed."""
