"""pi 0.73.1's RPC commands and responses (``modes/rpc/rpc-types.d.ts``): the decoder and what
is RPC's own.

A command is read from one JSON record: :func:`decode_command` checks its fields and decodes it
with one cattrs converter (:data:`RPC_CONVERTER`: the JSON keys are the fields' names in
camelCase, ``type`` picks the class) into an :class:`RpcRequest`: pi's ``type``, the optional
``id`` exactly as the client sent it (any JSON value; pi echoes it unchanged), and the command.
A command that changes the session is one of the session's own command types
(:mod:`pitrio.sessions.commands`: the very classes the :class:`~pitrio.sessions.AgentSession`
facade sends), so RPC, the websocket host, extensions and the Python API speak one vocabulary;
only the read-only queries (``get_state``, ``get_messages`` ...), which the session answers
from its properties, are RPC's own classes here. A response is an :class:`RpcResponse`;
:meth:`RpcResponse.encode` writes pi's key order (``id``, ``type``, ``command``, ``success``,
``data`` or ``error``) and leaves out what pi leaves ``undefined``.

pi does not check a command's fields (a prompt without ``message`` fails deep inside with a
``TypeError``); pitrio refuses such a command with an error response naming the field
(:class:`InvalidCommand`), and the process keeps serving.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, override

from pitrio._exceptions import PitrioError
from pitrio.host.rpc._jsonl import js_json, js_string
from pitrio.providers import ImageContent
from pitrio.sessions import commands as cmd

__all__ = [
    "MISSING",
    "RPC_COMMAND_TYPES",
    "RPC_CONVERTER",
    "Clone",
    "ExportHtml",
    "GetAvailableModels",
    "GetCommands",
    "GetContext",
    "GetForkMessages",
    "GetLastAssistantText",
    "GetMessages",
    "GetSessionStats",
    "GetState",
    "InvalidCommand",
    "RpcCommand",
    "RpcQuery",
    "RpcRequest",
    "RpcResponse",
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


# --------------------------------------------------------------------------- queries
# pi's commands that only read the session (or, export_html and clone, act through the
# host's services and the session's fork): RPC's own. Every other command is the session's.


@attrs.frozen
class GetState:
    """``get_state``."""


@attrs.frozen
class GetAvailableModels:
    """``get_available_models``."""


@attrs.frozen
class GetSessionStats:
    """``get_session_stats``."""


@attrs.frozen
class ExportHtml:
    """``export_html``."""

    output_path: str | None = None


@attrs.frozen
class Clone:
    """``clone``: a ``Fork`` at the current leaf (``position="at"``)."""


@attrs.frozen
class GetForkMessages:
    """``get_fork_messages``."""


@attrs.frozen
class GetLastAssistantText:
    """``get_last_assistant_text``."""


@attrs.frozen
class GetMessages:
    """``get_messages``."""


@attrs.frozen
class GetCommands:
    """``get_commands``."""


@attrs.frozen
class GetContext:
    """``get_context``: the ``/context`` view (pitrio's addition to pi's protocol)."""

    full: bool | None = None
    ephemeral: bool | None = None


RpcQuery: TypeAlias = (
    GetState
    | GetAvailableModels
    | GetSessionStats
    | ExportHtml
    | Clone
    | GetForkMessages
    | GetLastAssistantText
    | GetMessages
    | GetCommands
    | GetContext
)
"""The commands RPC answers itself (reads of the session, export, clone)."""

RpcCommand: TypeAlias = (
    cmd.Prompt
    | cmd.Steer
    | cmd.FollowUp
    | cmd.Abort
    | cmd.NewSession
    | cmd.SetModel
    | cmd.CycleModel
    | cmd.SetThinkingLevel
    | cmd.CycleThinkingLevel
    | cmd.SetSteeringMode
    | cmd.SetFollowUpMode
    | cmd.Compact
    | cmd.SetAutoCompaction
    | cmd.SetAutoRetry
    | cmd.AbortRetry
    | cmd.Bash
    | cmd.AbortBash
    | cmd.SwitchSession
    | cmd.Fork
    | cmd.SetSessionName
    | RpcQuery
)
"""Every command of pi 0.73.1's RPC mode, and pitrio's ``get_context``."""

RPC_COMMAND_TYPES: Final[dict[str, type[Any]]] = {
    "prompt": cmd.Prompt,
    "steer": cmd.Steer,
    "follow_up": cmd.FollowUp,
    "abort": cmd.Abort,
    "new_session": cmd.NewSession,
    "get_state": GetState,
    "set_model": cmd.SetModel,
    "cycle_model": cmd.CycleModel,
    "get_available_models": GetAvailableModels,
    "set_thinking_level": cmd.SetThinkingLevel,
    "cycle_thinking_level": cmd.CycleThinkingLevel,
    "set_steering_mode": cmd.SetSteeringMode,
    "set_follow_up_mode": cmd.SetFollowUpMode,
    "compact": cmd.Compact,
    "set_auto_compaction": cmd.SetAutoCompaction,
    "set_auto_retry": cmd.SetAutoRetry,
    "abort_retry": cmd.AbortRetry,
    "bash": cmd.Bash,
    "abort_bash": cmd.AbortBash,
    "get_session_stats": GetSessionStats,
    "export_html": ExportHtml,
    "switch_session": cmd.SwitchSession,
    "fork": cmd.Fork,
    "clone": Clone,
    "get_fork_messages": GetForkMessages,
    "get_last_assistant_text": GetLastAssistantText,
    "set_session_name": cmd.SetSessionName,
    "get_messages": GetMessages,
    "get_commands": GetCommands,
    "get_context": GetContext,
}
"""pi's command ``type`` -> its class (the order of ``rpc-types.d.ts``)."""

_Kind = Literal["str", "bool", "images", "level", "mode", "any"]

_WIRE_FIELDS: Final[dict[type[Any], dict[str, tuple[_Kind, bool]]]] = {
    cmd.Prompt: {
        "message": ("str", True),
        "images": ("images", False),
        "streaming_behavior": ("any", False),
    },
    cmd.Steer: {"message": ("str", True), "images": ("images", False)},
    cmd.FollowUp: {"message": ("str", True), "images": ("images", False)},
    cmd.NewSession: {"parent_session": ("str", False)},
    cmd.SetModel: {"provider": ("str", True), "model_id": ("str", True)},
    cmd.SetThinkingLevel: {"level": ("level", True)},
    cmd.SetSteeringMode: {"mode": ("mode", True)},
    cmd.SetFollowUpMode: {"mode": ("mode", True)},
    cmd.Compact: {"custom_instructions": ("str", False)},
    cmd.SetAutoCompaction: {"enabled": ("bool", True)},
    cmd.SetAutoRetry: {"enabled": ("bool", True)},
    cmd.Bash: {"command": ("str", True)},
    ExportHtml: {"output_path": ("str", False)},
    cmd.SwitchSession: {"session_path": ("str", True)},
    cmd.Fork: {"entry_id": ("str", True)},
    cmd.SetSessionName: {"name": ("str", True)},
    GetContext: {"full": ("bool", False), "ephemeral": ("bool", False)},
}
"""What each command reads from its record: field -> (kind checked, required). The JSON key
is the field's name in camelCase; a command's other fields (its reply, the facade's options)
keep their defaults. ``prompt`` comes with ``source="rpc"`` (the input hook's source)."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _images(value: Any, _: Any) -> tuple[ImageContent, ...] | None:
    if not value:
        return None
    return tuple(ImageContent(data=image["data"], mime_type=image["mimeType"]) for image in value)


def _streaming_behavior(value: Any, _: Any) -> cmd.StreamingBehavior | None:
    # pi: any truthy value other than "followUp" steers.
    if not value:
        return None
    return "follow_up" if value == "followUp" else "steer"


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    hooks = {"images": _images, "streaming_behavior": _streaming_behavior}
    for cls in RPC_COMMAND_TYPES.values():
        wire = _WIRE_FIELDS.get(cls, {})
        overrides = {
            field.name: (
                override(rename=_camel(field.name), struct_hook=hooks.get(field.name))
                if field.name in wire
                else override(omit=True)
            )
            for field in attrs.fields(cls)
        }
        converter.register_structure_hook(
            cls,
            make_dict_structure_fn(cls, converter, **overrides),  # type: ignore[arg-type]
        )
    return converter


RPC_CONVERTER: Final = _make_converter()
"""The one converter from pi's JSON commands to their classes (see :data:`_WIRE_FIELDS`)."""


@attrs.frozen
class RpcRequest:
    """One decoded command record."""

    name: str
    """pi's ``type``."""
    command: RpcCommand
    id: Any = MISSING
    """The client's ``id``, as sent (``MISSING`` when none), echoed in the response."""


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


def decode_command(record: Any) -> RpcRequest:
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
    for name, (kind, required) in _WIRE_FIELDS.get(cls, {}).items():
        key = _camel(name)
        value = record.get(key)
        if value is None and not required:
            continue
        if not _valid(kind, value):
            raise InvalidCommand(type_, id_, key, _EXPECTED.get(kind, "valid"))
        values[key] = value
    command: RpcCommand = RPC_CONVERTER.structure(values, cls)
    if type(command) is cmd.Prompt:
        command.source = "rpc"
    return RpcRequest(type_, command, id_)
