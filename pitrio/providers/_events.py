"""pi-ai's ``AssistantMessageEvent`` protocol (seed 002 s.5.6) as frozen attrs classes.

Every event but the terminal ones carries ``partial``: while a provider streams it is a
:class:`~pitrio.providers.PartialAssistantMessage` (an O(1) snapshot of the growing message);
decoded from JSON it is a plain :class:`~pitrio.providers.AssistantMessage`. Both expose the same
attributes and encode to the same JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, TypeVar, cast

import attrs

from pitrio.codec import extra_field, slot_constructor, wire
from pitrio.providers._messages import AssistantMessage, ToolCall
from pitrio.providers._partial import PartialAssistantMessage

_E = TypeVar("_E")


@wire
@attrs.frozen(kw_only=True)
class StartEvent:
    """The stream has started; ``partial`` has no content yet."""

    type: Literal["start"] = attrs.field(default="start", init=False)
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TextStartEvent:
    """A text block opens at ``content_index``."""

    type: Literal["text_start"] = attrs.field(default="text_start", init=False)
    content_index: int
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TextDeltaEvent:
    """Text appended to the block at ``content_index``."""

    type: Literal["text_delta"] = attrs.field(default="text_delta", init=False)
    content_index: int
    delta: str
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TextEndEvent:
    """The text block at ``content_index`` is complete; ``content`` is its text."""

    type: Literal["text_end"] = attrs.field(default="text_end", init=False)
    content_index: int
    content: str
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingStartEvent:
    """A thinking block opens at ``content_index``."""

    type: Literal["thinking_start"] = attrs.field(default="thinking_start", init=False)
    content_index: int
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingDeltaEvent:
    """Reasoning text appended to the block at ``content_index``."""

    type: Literal["thinking_delta"] = attrs.field(default="thinking_delta", init=False)
    content_index: int
    delta: str
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingEndEvent:
    """The thinking block at ``content_index`` is complete."""

    type: Literal["thinking_end"] = attrs.field(default="thinking_end", init=False)
    content_index: int
    content: str
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolCallStartEvent:
    """A tool call opens at ``content_index``."""

    type: Literal["toolcall_start"] = attrs.field(default="toolcall_start", init=False)
    content_index: int
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolCallDeltaEvent:
    """A piece of the tool call's JSON arguments (partial JSON)."""

    type: Literal["toolcall_delta"] = attrs.field(default="toolcall_delta", init=False)
    content_index: int
    delta: str
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolCallEndEvent:
    """The tool call at ``content_index`` is complete with parsed arguments."""

    type: Literal["toolcall_end"] = attrs.field(default="toolcall_end", init=False)
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage | PartialAssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class DoneEvent:
    """The response finished normally (terminal)."""

    type: Literal["done"] = attrs.field(default="done", init=False)
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ErrorEvent:
    """The response failed or was aborted (terminal); ``error`` is the final message."""

    type: Literal["error"] = attrs.field(default="error", init=False)
    reason: Literal["aborted", "error"]
    error: AssistantMessage
    extra: dict[str, Any] | None = extra_field()


AssistantMessageEvent: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)
"""pi-ai's ``AssistantMessageEvent`` (seed 002 s.5.6)."""

ASSISTANT_MESSAGE_EVENT_TYPES: tuple[type, ...] = (
    StartEvent,
    TextStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCallStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    DoneEvent,
    ErrorEvent,
)


DeltaEventType: TypeAlias = (
    type[TextDeltaEvent] | type[ThinkingDeltaEvent] | type[ToolCallDeltaEvent]
)


def positional_factory(cls: type[_E], names: tuple[str, ...]) -> Callable[..., _E]:
    """A function ``make(*values)`` that returns ``cls(**dict(zip(names, values)))``: the
    keyword-only constructor of a wire class called with values in a fixed order (for code
    that builds many objects of one class the same way)."""

    def make(*values: Any) -> _E:
        return cls(**dict(zip(names, values, strict=True)))

    make.__qualname__ = f"{cls.__qualname__}.positional"
    return make


DELTA_FACTORIES: Final[dict[DeltaEventType, Callable[[int, str, Any], Any]]] = {
    cls: slot_constructor(cls, ("content_index", "delta", "partial"))
    for cls in (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
}
"""``make(content_index, delta, partial)`` per delta event class: the event the keyword call
``cls(content_index=..., delta=..., partial=...)`` builds, in about half its time (see
:func:`pitrio.codec.slot_constructor`); a streaming provider builds one per token."""

text_delta_event: Final = cast(
    Callable[[int, str, Any], TextDeltaEvent], DELTA_FACTORIES[TextDeltaEvent]
)
thinking_delta_event: Final = cast(
    Callable[[int, str, Any], ThinkingDeltaEvent], DELTA_FACTORIES[ThinkingDeltaEvent]
)
tool_call_delta_event: Final = cast(
    Callable[[int, str, Any], ToolCallDeltaEvent], DELTA_FACTORIES[ToolCallDeltaEvent]
)


_TERMINAL_EVENTS: Final = (DoneEvent, ErrorEvent)
"""A tuple made once (``DoneEvent | ErrorEvent`` would build a union object per call)."""


def is_terminal(event: AssistantMessageEvent) -> bool:
    """Return whether ``event`` ends a stream (``done`` or ``error``)."""
    return isinstance(event, _TERMINAL_EVENTS)


def final_message(event: AssistantMessageEvent) -> AssistantMessage:
    """Return the final message a terminal event carries."""
    if isinstance(event, DoneEvent):
        return event.message
    if isinstance(event, ErrorEvent):
        return event.error
    raise TypeError(f"{event.type} is not a terminal event")
