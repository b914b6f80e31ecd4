"""pi 0.73.1's RPC commands and responses (``modes/rpc/rpc-types.d.ts``) as attrs types.

A command is read from one JSON record: :func:`decode_command` checks its fields and returns
one of the command classes below (named after pi's ``type``), each carrying the optional
``id`` exactly as the client sent it (any JSON value; pi echoes it unchanged). A response is an
:class:`RpcResponse`; :meth:`RpcResponse.encode` writes pi's key order (``id``, ``type``,
``command``, ``success``, ``data`` or ``error``) and leaves out what pi leaves ``undefined``.

pi does not check a command's fields (a prompt without ``message`` fails deep inside with a
``TypeError``); pitrio refuses such a command with an error response naming the field
(:class:`InvalidCommand`), and the process keeps serving.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from pitrio._exceptions import PitrioError
from pitrio.host._jsonl import js_json, js_string

__all__ = [
    "MISSING",
    "RPC_COMMAND_TYPES",
    "Abort",
    "AbortBash",
    "AbortRetry",
    "Bash",
    "Clone",
    "Compact",
    "CycleModel",
    "CycleThinkingLevel",
    "ExportHtml",
    "FollowUp",
    "Fork",
    "GetAvailableModels",
    "GetCommands",
    "GetContext",
    "GetForkMessages",
    "GetLastAssistantText",
    "GetMessages",
    "GetSessionStats",
    "GetState",
    "InvalidCommand",
    "NewSession",
    "Prompt",
    "RpcCommand",
    "RpcResponse",
    "SetAutoCompaction",
    "SetAutoRetry",
    "SetFollowUpMode",
    "SetModel",
    "SetSessionName",
    "SetSteeringMode",
    "SetThinkingLevel",
    "Steer",
    "SwitchSession",
    "UnknownCommand",
    "decode_command",
]


class _Missing:
    """pi's ``undefined``: a key that is not written at all."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""A value that is absent (written as no key), as opposed to JSON ``null``."""

THINKING_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh")
QUEUE_MODES: Final = ("all", "one-at-a-time")


class UnknownCommand(PitrioError, LookupError):
    """A record whose ``type`` is not one of pi's commands.

    Attributes:
        type: the ``type`` value as parsed (``MISSING`` when there was none).
    """

    def __init__(self, type_: Any) -> None:
        self.type = type_
        super().__init__(f"Unknown command: {_js_type_name(type_)}")


class InvalidCommand(PitrioError, ValueError):
    """A known command with a field of the wrong type (or a required one missing).

    Attributes:
        command: the command's ``type``.
        id: the command's ``id`` (``MISSING`` if none), echoed in the error response.
        field: the offending field's JSON name.
    """

    def __init__(self, command: str, id_: Any, field: str, expected: str) -> None:
        self.command = command
        self.id = id_
        self.field = field
        super().__init__(f'Invalid {command} command: "{field}" must be {expected}')


def _js_type_name(value: Any) -> str:
    return "undefined" if value is MISSING else js_string(value)


# --------------------------------------------------------------------------- responses


@attrs.frozen
class RpcResponse:
    """One ``{"type": "response", ...}`` record.

    ``data`` is plain JSON-able data (already in pi's wire shape), ``MISSING`` for none.
    ``id`` and ``command`` are echoed as parsed (``MISSING`` writes no key, as pi's
    ``undefined``).
    """

    command: Any
    success: bool
    id: Any = MISSING
    data: Any = MISSING
    error: str | None = None

    @classmethod
    def ok(cls, id_: Any, command: str, data: Any = MISSING) -> RpcResponse:
        """A success, with ``data`` unless it is ``MISSING``."""
        return cls(command=command, success=True, id=id_, data=data)

    @classmethod
    def fail(cls, id_: Any, command: Any, message: str) -> RpcResponse:
        """A failure with pi's ``error`` text."""
        return cls(command=command, success=False, id=id_, error=message)

    def encode(self) -> bytes:
        """The record's JSON (no newline), byte for byte as pi's ``JSON.stringify``."""
        parts = []
        if self.id is not MISSING:
            parts.append(f'"id":{js_json(self.id)}')
        parts.append('"type":"response"')
        if self.command is not MISSING:
            parts.append(f'"command":{js_json(self.command)}')
        head = "{" + ",".join(parts)
        if not self.success:
            return f'{head},"success":false,"error":{js_json(self.error or "")}}}'.encode()
        if self.data is MISSING:
            return f'{head},"success":true}}'.encode()
        return head.encode() + b',"success":true,"data":' + orjson.dumps(self.data) + b"}"


# --------------------------------------------------------------------------- commands

_Kind = Literal["str", "bool", "images", "level", "mode", "any"]


def _field(wire: str, kind: _Kind, *, required: bool = True) -> Any:
    if required:
        return attrs.field(metadata={"wire": wire, "kind": kind})
    return attrs.field(default=None, metadata={"wire": wire, "kind": kind})


@attrs.frozen
class Prompt:
    """``prompt``: run a user message, or queue it with ``streamingBehavior``."""

    message: str = _field("message", "str")
    images: tuple[dict[str, Any], ...] | None = _field("images", "images", required=False)
    streaming_behavior: str | None = _field("streamingBehavior", "any", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Steer:
    """``steer``."""

    message: str = _field("message", "str")
    images: tuple[dict[str, Any], ...] | None = _field("images", "images", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class FollowUp:
    """``follow_up``."""

    message: str = _field("message", "str")
    images: tuple[dict[str, Any], ...] | None = _field("images", "images", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Abort:
    """``abort``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class NewSession:
    """``new_session``."""

    parent_session: str | None = _field("parentSession", "str", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetState:
    """``get_state``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetModel:
    """``set_model``."""

    provider: str = _field("provider", "str")
    model_id: str = _field("modelId", "str")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class CycleModel:
    """``cycle_model``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetAvailableModels:
    """``get_available_models``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetThinkingLevel:
    """``set_thinking_level``."""

    level: str = _field("level", "level")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class CycleThinkingLevel:
    """``cycle_thinking_level``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetSteeringMode:
    """``set_steering_mode``."""

    mode: str = _field("mode", "mode")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetFollowUpMode:
    """``set_follow_up_mode``."""

    mode: str = _field("mode", "mode")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Compact:
    """``compact``."""

    custom_instructions: str | None = _field("customInstructions", "str", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetAutoCompaction:
    """``set_auto_compaction``."""

    enabled: bool = _field("enabled", "bool")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetAutoRetry:
    """``set_auto_retry``."""

    enabled: bool = _field("enabled", "bool")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class AbortRetry:
    """``abort_retry``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Bash:
    """``bash``: run a command for the conversation's context (user bash)."""

    command: str = _field("command", "str")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class AbortBash:
    """``abort_bash``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetSessionStats:
    """``get_session_stats``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class ExportHtml:
    """``export_html``."""

    output_path: str | None = _field("outputPath", "str", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SwitchSession:
    """``switch_session``."""

    session_path: str = _field("sessionPath", "str")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Fork:
    """``fork``."""

    entry_id: str = _field("entryId", "str")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class Clone:
    """``clone``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetForkMessages:
    """``get_fork_messages``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetLastAssistantText:
    """``get_last_assistant_text``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class SetSessionName:
    """``set_session_name``."""

    name: str = _field("name", "str")
    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetMessages:
    """``get_messages``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetCommands:
    """``get_commands``."""

    id: Any = attrs.field(default=MISSING, kw_only=True)


@attrs.frozen
class GetContext:
    """``get_context``: the ``/context`` view (pitrio's addition to pi's protocol)."""

    full: bool | None = _field("full", "bool", required=False)
    ephemeral: bool | None = _field("ephemeral", "bool", required=False)
    id: Any = attrs.field(default=MISSING, kw_only=True)


RpcCommand: TypeAlias = (
    Prompt
    | Steer
    | FollowUp
    | Abort
    | NewSession
    | GetState
    | SetModel
    | CycleModel
    | GetAvailableModels
    | SetThinkingLevel
    | CycleThinkingLevel
    | SetSteeringMode
    | SetFollowUpMode
    | Compact
    | SetAutoCompaction
    | SetAutoRetry
    | AbortRetry
    | Bash
    | AbortBash
    | GetSessionStats
    | ExportHtml
    | SwitchSession
    | Fork
    | Clone
    | GetForkMessages
    | GetLastAssistantText
    | SetSessionName
    | GetMessages
    | GetCommands
    | GetContext
)
"""Every command of pi 0.73.1's RPC mode, and pitrio's ``get_context``."""

RPC_COMMAND_TYPES: Final[dict[str, type[Any]]] = {
    "prompt": Prompt,
    "steer": Steer,
    "follow_up": FollowUp,
    "abort": Abort,
    "new_session": NewSession,
    "get_state": GetState,
    "set_model": SetModel,
    "cycle_model": CycleModel,
    "get_available_models": GetAvailableModels,
    "set_thinking_level": SetThinkingLevel,
    "cycle_thinking_level": CycleThinkingLevel,
    "set_steering_mode": SetSteeringMode,
    "set_follow_up_mode": SetFollowUpMode,
    "compact": Compact,
    "set_auto_compaction": SetAutoCompaction,
    "set_auto_retry": SetAutoRetry,
    "abort_retry": AbortRetry,
    "bash": Bash,
    "abort_bash": AbortBash,
    "get_session_stats": GetSessionStats,
    "export_html": ExportHtml,
    "switch_session": SwitchSession,
    "fork": Fork,
    "clone": Clone,
    "get_fork_messages": GetForkMessages,
    "get_last_assistant_text": GetLastAssistantText,
    "set_session_name": SetSessionName,
    "get_messages": GetMessages,
    "get_commands": GetCommands,
    "get_context": GetContext,
}
"""pi's command ``type`` -> its class (the order of ``rpc-types.d.ts``)."""

_EXPECTED: Final[dict[str, str]] = {
    "str": "a string",
    "bool": "a boolean",
    "images": "an array of image objects",
    "level": f"one of {', '.join(THINKING_LEVELS)}",
    "mode": f"one of {', '.join(QUEUE_MODES)}",
}


def _valid(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "images":
        return isinstance(value, list) and all(
            isinstance(image, dict)
            and isinstance(image.get("data"), str)
            and isinstance(image.get("mimeType"), str)
            for image in value
        )
    if kind == "level":
        return value in THINKING_LEVELS
    if kind == "mode":
        return value in QUEUE_MODES
    return True


def decode_command(record: Any) -> RpcCommand:
    """The command a parsed record holds.

    Raises:
        UnknownCommand: not an object with one of pi's ``type`` values.
        InvalidCommand: a field of the wrong type (``null`` counts as absent for optional
            fields, as pi's ``?:`` fields read it).
    """
    if not isinstance(record, dict):
        raise UnknownCommand(MISSING)
    type_ = record.get("type", MISSING)
    cls = RPC_COMMAND_TYPES.get(type_) if isinstance(type_, str) else None
    if cls is None:
        raise UnknownCommand(type_)
    id_ = record.get("id", MISSING)
    values: dict[str, Any] = {}
    for field in attrs.fields(cls):
        wire = field.metadata.get("wire")
        if wire is None:
            continue
        kind = field.metadata["kind"]
        value = record.get(wire)
        required = field.default is attrs.NOTHING
        if value is None and not required:
            continue
        if not _valid(kind, value):
            raise InvalidCommand(type_, id_, wire, _EXPECTED.get(kind, "valid"))
        values[field.name] = tuple(value) if isinstance(value, list) else value
    command: RpcCommand = cls(**values, id=id_)
    return command
