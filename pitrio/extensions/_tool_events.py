"""Typed views of ``tool_call`` events for the built-in tools (seed 004's type guard).

:func:`is_tool_call_event_type` is pi 0.73.1's ``isToolCallEventType``: a plain
``event.tool_name == name`` check whose :data:`~typing.TypeGuard` overloads tell a type
checker what ``event.input`` holds for each built-in tool. The input TypedDicts carry the
argument names of the tools' JSON schemas as the model sends them (``oldText``, ``ignoreCase``:
wire names, not snake_case), since ``event.input`` is the validated argument dict itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, Protocol, TypedDict, TypeGuard, overload

from pitrio.extensions._events import ToolCallEvent, field_of

__all__ = [
    "BashToolCallEvent",
    "BashToolInput",
    "EditToolCallEvent",
    "EditToolEdit",
    "EditToolInput",
    "FindToolCallEvent",
    "FindToolInput",
    "GrepToolCallEvent",
    "GrepToolInput",
    "LsToolCallEvent",
    "LsToolInput",
    "ReadToolCallEvent",
    "ReadToolInput",
    "WriteToolCallEvent",
    "WriteToolInput",
    "is_tool_call_event_type",
]


class BashToolInput(TypedDict):
    command: str
    timeout: NotRequired[float]


class ReadToolInput(TypedDict):
    path: str
    offset: NotRequired[int]
    limit: NotRequired[int]


class EditToolEdit(TypedDict):
    oldText: str
    newText: str


"""One replacement of an ``edit`` call."""


class EditToolInput(TypedDict):
    path: str
    edits: list[EditToolEdit]


class WriteToolInput(TypedDict):
    path: str
    content: str


class GrepToolInput(TypedDict):
    pattern: str
    path: NotRequired[str]
    glob: NotRequired[str]
    ignoreCase: NotRequired[bool]
    literal: NotRequired[bool]
    context: NotRequired[int]
    limit: NotRequired[int]


class FindToolInput(TypedDict):
    pattern: str
    path: NotRequired[str]
    limit: NotRequired[int]


class LsToolInput(TypedDict):
    path: NotRequired[str]
    limit: NotRequired[int]


# The narrowed event types: read-only protocols over ToolCallEvent's attributes (TypeGuard may
# narrow to a type that is not a subclass, which is how one attrs class gets seven views).


class BashToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["bash"]: ...
    @property
    def input(self) -> BashToolInput: ...


class ReadToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["read"]: ...
    @property
    def input(self) -> ReadToolInput: ...


class EditToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["edit"]: ...
    @property
    def input(self) -> EditToolInput: ...


class WriteToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["write"]: ...
    @property
    def input(self) -> WriteToolInput: ...


class GrepToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["grep"]: ...
    @property
    def input(self) -> GrepToolInput: ...


class FindToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["find"]: ...
    @property
    def input(self) -> FindToolInput: ...


class LsToolCallEvent(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> Literal["ls"]: ...
    @property
    def input(self) -> LsToolInput: ...


class _ToolCallLike(Protocol):
    """A tool_call event or one of its narrowed views (so a narrowed event can be re-tested)."""

    @property
    def tool_name(self) -> str: ...
    @property
    def input(self) -> Mapping[str, object]: ...


# TypeGuard narrows a function's FIRST argument, so the narrowing overloads take the event
# first; pi's order (name, event) is accepted too and returns a plain bool.
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["bash"]
) -> TypeGuard[BashToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["read"]
) -> TypeGuard[ReadToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["edit"]
) -> TypeGuard[EditToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["write"]
) -> TypeGuard[WriteToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["grep"]
) -> TypeGuard[GrepToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["find"]
) -> TypeGuard[FindToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: Literal["ls"]
) -> TypeGuard[LsToolCallEvent]: ...
@overload
def is_tool_call_event_type(
    event: _ToolCallLike | Mapping[str, Any], tool_name: str
) -> TypeGuard[ToolCallEvent]: ...
@overload
def is_tool_call_event_type(event: str, tool_name: object) -> bool: ...
def is_tool_call_event_type(event: object, tool_name: object) -> bool:
    """Whether a ``tool_call`` event is one of the tool ``tool_name`` (pi's
    ``isToolCallEventType``).

    ``is_tool_call_event_type(event, "read")`` narrows: a type checker then knows
    ``event.input`` is a :class:`ReadToolInput` (likewise bash, edit, write, grep, find, ls; a
    custom name narrows to :class:`~pitrio.extensions.ToolCallEvent`, input
    ``dict[str, Any]``). Python's ``TypeGuard`` narrows only the first argument, hence the
    event first; pi's order, ``is_tool_call_event_type("read", event)``, gives the same answer
    without narrowing. ``event`` may be a mapping (``toolName`` or ``tool_name``).
    """
    if isinstance(event, str) and not isinstance(tool_name, str):
        event, tool_name = tool_name, event
    kind = field_of(event, "type")
    if kind is not None and kind != "tool_call":
        return False
    return bool(field_of(event, "tool_name") == tool_name)
