"""Decoded messages that hold only leaves are not tracked by the cyclic garbage collector
(``pitrio._wire_fast.ACYCLIC``), anything that may hold a cycle still is, and nothing else
about the objects changes: equal, freed by reference counting, the same on the slow path."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import orjson
from session_script import Messages, counter_ids, step_clock

from pitrio.codec import dumps
from pitrio.providers import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from pitrio.sessions import SessionManager, load_session_file
from pitrio.sessions._codec import SESSIONS_CODEC

T = 1735689600000
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
USAGE = {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}


def assistant(**changes: Any) -> dict[str, Any]:
    """An assistant message as pi writes it, with ``changes`` applied."""
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "thinkingSignature": "s"},
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"text": "x"}},
        ],
        "api": "faux",
        "provider": "faux",
        "model": "faux-1",
        "usage": {**USAGE, "cost": ZERO_COST},
        "stopReason": "toolUse",
        "timestamp": T,
        **changes,
    }


def decode(data: dict[str, Any]) -> Any:
    """``data`` decoded as an agent message by the sessions codec (its fast path)."""
    return SESSIONS_CODEC.from_wire(AssistantMessage | UserMessage | ToolResultMessage, data)


def tracked_parts(message: Any) -> list[str]:
    """Which of the message, its content tuple and its blocks the collector tracks."""
    parts = [("message", message), ("content", message.content)]
    parts += [(f"block {i}", block) for i, block in enumerate(message.content)]
    return [name for name, obj in parts if gc.is_tracked(obj)]


def test_a_plain_message_its_content_and_blocks_are_untracked() -> None:
    """A message of leaves is untracked with its content tuple, blocks and usage."""
    message = decode(assistant())
    assert tracked_parts(message) == []
    assert not gc.is_tracked(message.usage) and not gc.is_tracked(message.usage.cost)
    user = decode({"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": T})
    assert tracked_parts(user) == []
    text = decode({"role": "user", "content": "q", "timestamp": T})
    assert not gc.is_tracked(text)
    result = decode(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "echo",
            "content": [{"type": "text", "text": "x"}],
            "details": {"exit": 0},
            "isError": False,
            "timestamp": T,
        }
    )
    assert tracked_parts(result) == []


def test_what_may_hold_a_cycle_stays_tracked() -> None:
    """Unknown keys, nested containers in a dict, a list of diagnostics or a block with unknown
    keys keep the objects that hold them (and those holding those) tracked."""
    extra = decode(assistant(future={"a": 1}))
    assert tracked_parts(extra) == ["message"]
    nested = assistant()
    nested["content"][2]["arguments"] = {"edits": [{"old": "a", "new": "b"}]}
    assert tracked_parts(decode(nested)) == ["message", "content", "block 2"]
    assert tracked_parts(decode(assistant(diagnostics=[{"kind": "x"}]))) == ["message"]
    block_extra = assistant()
    block_extra["content"][1]["future"] = 1
    assert tracked_parts(decode(block_extra)) == ["message", "content", "block 1"]
    result = decode(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "echo",
            "content": [],
            "details": {"lines": ["a"]},
            "isError": False,
            "timestamp": T,
        }
    )
    assert gc.is_tracked(result)
    usage_extra = decode(assistant(usage={**USAGE, "x": 1, "cost": ZERO_COST}))
    assert gc.is_tracked(usage_extra.usage) and tracked_parts(usage_extra) == ["message"]


def test_untracked_messages_equal_built_ones_and_are_freed() -> None:
    """An untracked message equals, hashes and encodes as one built by its constructor, and
    goes when its last reference does (reference counting needs no collector)."""
    data = {"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": T}
    message = decode(data)
    built = UserMessage(content=[TextContent(text="q")], timestamp=T)
    assert message == built and hash(message) == hash(built) and dumps(message) == dumps(built)
    block = message.content[0]
    held = sys.getrefcount(block)  # this frame's, getrefcount's argument and the message's
    del message
    # The message went at once, and with it its reference to the block (the block takes no
    # weak references: see pitrio._fast_init.layout_twin).
    assert sys.getrefcount(block) == held - 1


def test_a_loaded_session_leaves_its_messages_untracked(tmp_path: Path) -> None:
    """Opening a session file keeps its plain messages untracked (no full collection owed
    for them), and a line with unknown keys tracked; the entries equal those written."""
    sm = SessionManager.create("/p", tmp_path, clock=step_clock(T), new_id=counter_ids())
    m = Messages(0)
    sm.append_message(m.user("one"))
    sm.append_message(m.assistant("two"))
    written = sm.get_entries()
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    line = orjson.loads(Path(path).read_bytes().splitlines()[-1])
    line["message"]["future"] = True
    line["id"], line["parentId"] = "x1", written[-1].id
    with open(path, "ab") as file:
        file.write(orjson.dumps(line) + b"\n")
    loaded = load_session_file(path)
    messages = [entry.message for entry in loaded.entries if hasattr(entry, "message")]
    assert [gc.is_tracked(message) for message in messages] == [False, False, True]
    assert [e.message for e in loaded.entries[:2]] == [e.message for e in written]  # type: ignore[attr-defined]
