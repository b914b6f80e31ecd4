"""``AgentEvent``: the ordered lifecycle events an agent emits (seed 002 s.7.1).

Frozen wire classes; the actors codec (:mod:`pitrio.actors._codec`) gives pi's JSON for each.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from pitrio.actors._messages import AgentMessage, StreamingMessage
from pitrio.codec import extra_field, wire
from pitrio.providers import AssistantMessageEvent, ToolResultMessage
from pitrio.tools import AgentToolResult


def _messages(items: Any) -> tuple[AgentMessage, ...]:
    return items if isinstance(items, tuple) else tuple(items)


def _results(items: Any) -> tuple[ToolResultMessage, ...]:
    return items if isinstance(items, tuple) else tuple(items)


@wire
@attrs.frozen(kw_only=True)
class AgentStartEvent:
    """A run begins."""

    type: Literal["agent_start"] = attrs.field(default="agent_start", init=False)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AgentEndEvent:
    """A run ended; ``messages`` are the messages it added to the transcript. Always last."""

    type: Literal["agent_end"] = attrs.field(default="agent_end", init=False)
    messages: tuple[AgentMessage, ...] = attrs.field(converter=_messages)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TurnStartEvent:
    """A turn (one LLM call and the tools it asks for) begins."""

    type: Literal["turn_start"] = attrs.field(default="turn_start", init=False)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TurnEndEvent:
    """A turn ended with ``message`` (the assistant's) and its tool results."""

    type: Literal["turn_end"] = attrs.field(default="turn_end", init=False)
    message: AgentMessage
    tool_results: tuple[ToolResultMessage, ...] = attrs.field(converter=_results)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class MessageStartEvent:
    """A message enters the transcript (for the assistant: it starts streaming)."""

    type: Literal["message_start"] = attrs.field(default="message_start", init=False)
    message: StreamingMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class MessageUpdateEvent:
    """The streaming assistant message changed; ``assistant_message_event`` says how."""

    type: Literal["message_update"] = attrs.field(default="message_update", init=False)
    assistant_message_event: AssistantMessageEvent
    message: StreamingMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class MessageEndEvent:
    """A message is complete and appended to the transcript (unless ``dropped``)."""

    type: Literal["message_end"] = attrs.field(default="message_end", init=False)
    message: AgentMessage
    dropped: bool | None = None
    """True when a ``message_end`` hook dropped this (streamed) message: it closes the stream
    but is not in the transcript (and not in a session file). Not on the wire otherwise."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolExecutionStartEvent:
    """A tool call is about to be prepared and run."""

    type: Literal["tool_execution_start"] = attrs.field(default="tool_execution_start", init=False)
    tool_call_id: str
    tool_name: str
    args: Any
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolExecutionUpdateEvent:
    """A running tool reported progress (its ``on_update`` callback)."""

    type: Literal["tool_execution_update"] = attrs.field(
        default="tool_execution_update", init=False
    )
    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: AgentToolResult
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolExecutionEndEvent:
    """A tool call finished (or failed, was blocked, skipped or not found)."""

    type: Literal["tool_execution_end"] = attrs.field(default="tool_execution_end", init=False)
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    extra: dict[str, Any] | None = extra_field()


AgentEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)
"""pi-agent-core's ``AgentEvent`` (seed 002 s.7.1)."""

AGENT_EVENT_TYPES: tuple[type, ...] = (
    AgentStartEvent,
    AgentEndEvent,
    TurnStartEvent,
    TurnEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MessageEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolExecutionEndEvent,
)
