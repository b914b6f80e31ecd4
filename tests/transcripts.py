"""Checks on transcripts shared by the agent and session tests."""

from __future__ import annotations

from typing import Any

from pitrio.providers import AssistantMessage, ToolResultMessage


def assert_valid_transcript(messages: Any) -> None:
    """Every tool call is answered, in order, before the next assistant message."""
    open_calls: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert open_calls == [], f"unanswered tool calls {open_calls}"
            open_calls = [c.id for c in message.tool_calls()]
        elif isinstance(message, ToolResultMessage):
            assert open_calls and open_calls[0] == message.tool_call_id
            open_calls.pop(0)
    assert open_calls == []
