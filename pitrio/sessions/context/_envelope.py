"""The ContextEnvelope of seed 001: everything one provider request sends, as hooks see it.

Every provider request is one :class:`ContextEnvelope`: the system prompt as named parts
(:class:`SystemPrompt`, whose ``compiled`` text is the parts joined with no separator), the tool
definitions, the messages split into ``cached`` (the stable history) and ``uncached`` (a
request-only tail, always sent last), the generation options and request metadata.

``context`` hooks (reasons :data:`ContextReason`) return :class:`ContextResult` s whose patch ops
(:mod:`pitrio.sessions.storage._context_ops`) :func:`apply_patch` applies. It is pure: it returns a
new envelope and raises :class:`ContextPatchError` for a malformed op or for an op that touches
cached content (system parts, tools, cached messages, compaction) without an
``invalidate_cache_reason``.

``message_end`` hooks return a :class:`MessageEndResult`: a replacement message, or ``None`` to
drop the message.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal, TypeAlias, cast

import attrs

from pitrio.actors import AgentMessage
from pitrio.providers import Model
from pitrio.sessions.storage._context_ops import (
    CACHED_OPS,
    CONTEXT_PATCH_OP_TYPES,
    CompactionApplyOp,
    ContextPatchOp,
    ContextTransformDisplay,
    MessagesCachedReplaceOp,
    MessagesUncachedAppendOp,
    OptionsSetOp,
    SystemPart,
    SystemPartRemoveOp,
    SystemPartSetOp,
    SystemPartsReplaceOp,
    ToolDefinition,
    ToolsRemoveOp,
    ToolsReplaceOp,
)
from pitrio.sessions.storage._entries import CompactionSummaryMessage, SessionError

__all__ = [
    "CompactionApplyOp",
    "ContextEnvelope",
    "ContextMessages",
    "ContextMeta",
    "ContextPatchError",
    "ContextPatchOp",
    "ContextReason",
    "ContextResult",
    "ContextTransformDisplay",
    "GenerationOptions",
    "MessageEndResult",
    "MessagesCachedReplaceOp",
    "MessagesUncachedAppendOp",
    "OptionsSetOp",
    "SystemPart",
    "SystemPartRemoveOp",
    "SystemPartSetOp",
    "SystemPartsReplaceOp",
    "SystemPrompt",
    "ToolDefinition",
    "ToolsRemoveOp",
    "ToolsReplaceOp",
    "apply_patch",
    "replace_messages",
    "unknown_tool_names",
]

ContextReason: TypeAlias = Literal["before_request", "ephemeral", "turn_end"]
"""Why a ``context`` hook runs: before each request (persisted), for this request only, or after
a turn (persisted)."""


class ContextPatchError(SessionError, ValueError):
    """A context patch op that cannot be applied (malformed, or touches cached content without
    an ``invalidate_cache_reason``), or a tool definition that names no loaded tool.

    Attributes:
        op: the op's name (``"system_part_set"`` ...), or ``None`` when it has none.
        index: the op's position in its patch, or ``None``.
        reason: what is wrong.
    """

    def __init__(self, reason: str, *, op: str | None = None, index: int | None = None) -> None:
        where = f"patch op {index} ({op})" if index is not None else f"patch op {op}"
        super().__init__(f"{where}: {reason}" if op is not None or index is not None else reason)
        self.op = op
        self.index = index
        self.reason = reason


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return items if isinstance(items, tuple) else tuple(items)


@attrs.frozen(kw_only=True)
class SystemPrompt:
    """The system prompt as named parts; the provider receives :attr:`compiled`."""

    parts: tuple[SystemPart, ...] = attrs.field(default=(), converter=_tuple)

    @property
    def compiled(self) -> str:
        """The parts' texts concatenated, with no separators (seed 001)."""
        return "".join(part.text for part in self.parts)

    def part(self, name: str) -> SystemPart | None:
        """The part called ``name``, or ``None``."""
        for part in self.parts:
            if part.name == name:
                return part
        return None

    @classmethod
    def of(cls, text: str, name: str = "base") -> SystemPrompt:
        """A prompt of one part (``text`` empty: no parts)."""
        return cls(parts=(SystemPart(name=name, text=text),) if text else ())


@attrs.frozen(kw_only=True)
class ContextMessages:
    """The messages of a request: ``cached`` history first, then the request-only ``uncached``."""

    cached: tuple[AgentMessage, ...] = attrs.field(default=(), converter=_tuple)
    uncached: tuple[AgentMessage, ...] = attrs.field(default=(), converter=_tuple)

    @property
    def all(self) -> tuple[AgentMessage, ...]:
        """What the provider receives: ``cached + uncached`` (uncached always last)."""
        return self.cached + self.uncached


@attrs.frozen(kw_only=True)
class GenerationOptions:
    """Generation knobs (``None``: the provider's or session's default)."""

    reasoning: str | None = None
    """The thinking level (``"off"``, ``"low"`` ...)."""
    temperature: float | None = None
    max_tokens: int | None = None


@attrs.frozen(kw_only=True)
class ContextMeta:
    """Request metadata for hooks (not sent; patches cannot change it)."""

    model: Model | None = None
    limit: int | None = None
    """The model's context window (tokens), when known."""
    turn_index: int = 0
    """0-based turn within the current run."""
    request_index: int = 0
    """0-based provider request within the current run."""
    session_id: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class ContextEnvelope:
    """One provider request, as ``context`` hooks see and patch it (seed 001)."""

    system: SystemPrompt = attrs.field(factory=SystemPrompt)
    tools: tuple[ToolDefinition, ...] = attrs.field(default=(), converter=_tuple)
    messages: ContextMessages = attrs.field(factory=ContextMessages)
    options: GenerationOptions = attrs.field(factory=GenerationOptions)
    meta: ContextMeta = attrs.field(factory=ContextMeta)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tool definitions, in order."""
        return tuple(tool.name for tool in self.tools)


@attrs.frozen(kw_only=True)
class ContextResult:
    """What one ``context`` handler returned: patch ops plus optional display metadata."""

    patch: tuple[ContextPatchOp, ...] = attrs.field(default=(), converter=_tuple)
    transformer_name: str | None = None
    display: ContextTransformDisplay | None = None
    messages: tuple[AgentMessage, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_tuple)
    )
    """Seed 004's ``{messages: [...]}``: the messages to send instead (cached and uncached),
    for this request only (pi 0.73.1's semantics: never persisted, never replayed). Honoured
    for ``before_request`` only; applied before :attr:`patch`."""


@attrs.frozen(kw_only=True)
class MessageEndResult:
    """What a ``message_end`` handler decided: the message to keep, or ``None`` to drop it."""

    message: AgentMessage | None


EntryResolver: TypeAlias = Callable[[str], "int | None"]
"""Maps a session entry id to the index of its message in the cached messages (or ``None``)."""


def replace_messages(
    envelope: ContextEnvelope, messages: Iterable[AgentMessage]
) -> ContextEnvelope:
    """``envelope`` sending ``messages`` instead of its own (seed 004's message-list result):
    they become the cached messages and the uncached tail is emptied (the list a ``context``
    handler sees, and so returns, is cached then uncached)."""
    return attrs.evolve(envelope, messages=ContextMessages(cached=tuple(messages)))


def unknown_tool_names(tools: Iterable[ToolDefinition], loaded: Collection[str]) -> list[str]:
    """The names of tool definitions that match no loaded tool implementation."""
    return [tool.name for tool in tools if tool.name not in loaded]


def _check(op: object, index: int) -> str:
    """Validate an op's kind, scope and cache reason; return its name."""
    name = getattr(op, "op", None)
    cls = CONTEXT_PATCH_OP_TYPES.get(name) if isinstance(name, str) else None
    if cls is None or type(op) is not cls or not isinstance(name, str):
        known = ", ".join(CONTEXT_PATCH_OP_TYPES)
        raise ContextPatchError(
            f"not a context patch op (expected one of: {known})",
            op=name if isinstance(name, str) else None,
            index=index,
        )
    expected = attrs.fields_dict(cast(Any, cls))["scope"].default
    scope = getattr(op, "scope", None)
    if scope != expected:
        raise ContextPatchError(f"scope must be {expected!r}, got {scope!r}", op=name, index=index)
    reason = getattr(op, "invalidate_cache_reason", None)
    if name in CACHED_OPS and not (isinstance(reason, str) and reason.strip()):
        raise ContextPatchError(
            "changes cached content and needs an invalidateCacheReason", op=name, index=index
        )
    return name


def _set_part(parts: tuple[SystemPart, ...], name: str, text: str) -> tuple[SystemPart, ...]:
    for position, part in enumerate(parts):
        if part.name == name:
            return (*parts[:position], attrs.evolve(part, text=text), *parts[position + 1 :])
    return (*parts, SystemPart(name=name, text=text))


def _apply_one(
    envelope: ContextEnvelope,
    op: ContextPatchOp,
    index: int,
    resolve_entry: EntryResolver | None,
    loaded_tools: Collection[str] | None,
) -> ContextEnvelope:
    name = _check(op, index)
    match op:
        case SystemPartSetOp():
            if not isinstance(op.part_name, str) or not isinstance(op.text, str):
                raise ContextPatchError("partName and text must be strings", op=name, index=index)
            parts = _set_part(envelope.system.parts, op.part_name, op.text)
            return attrs.evolve(envelope, system=SystemPrompt(parts=parts))
        case SystemPartRemoveOp():
            parts = tuple(p for p in envelope.system.parts if p.name != op.part_name)
            return attrs.evolve(envelope, system=SystemPrompt(parts=parts))
        case SystemPartsReplaceOp():
            names = [part.name for part in op.parts]
            if len(set(names)) != len(names):
                raise ContextPatchError(f"duplicate part names in {names}", op=name, index=index)
            return attrs.evolve(envelope, system=SystemPrompt(parts=op.parts))
        case ToolsReplaceOp():
            tool_names = [tool.name for tool in op.tools]
            if len(set(tool_names)) != len(tool_names):
                raise ContextPatchError(
                    f"duplicate tool names in {tool_names}", op=name, index=index
                )
            if loaded_tools is not None:
                unknown = unknown_tool_names(op.tools, loaded_tools)
                if unknown:
                    raise ContextPatchError(
                        f"tool definitions name no loaded tool: {', '.join(unknown)}",
                        op=name,
                        index=index,
                    )
            return attrs.evolve(envelope, tools=op.tools)
        case ToolsRemoveOp():
            removed = set(op.names)
            tools = tuple(tool for tool in envelope.tools if tool.name not in removed)
            return attrs.evolve(envelope, tools=tools)
        case MessagesCachedReplaceOp():
            messages = attrs.evolve(envelope.messages, cached=op.messages)
            return attrs.evolve(envelope, messages=messages)
        case MessagesUncachedAppendOp():
            uncached = envelope.messages.uncached + op.messages
            return attrs.evolve(
                envelope, messages=attrs.evolve(envelope.messages, uncached=uncached)
            )
        case OptionsSetOp():
            current = envelope.options
            options = GenerationOptions(
                reasoning=current.reasoning if op.reasoning is None else op.reasoning,
                temperature=current.temperature if op.temperature is None else op.temperature,
                max_tokens=current.max_tokens if op.max_tokens is None else op.max_tokens,
            )
            return attrs.evolve(envelope, options=options)
        case CompactionApplyOp():
            cached = envelope.messages.cached
            first = op.first_kept_index
            if first is None and op.first_kept_entry_id is not None:
                if resolve_entry is None:
                    raise ContextPatchError(
                        "firstKeptEntryId needs a session to resolve it; give firstKeptIndex",
                        op=name,
                        index=index,
                    )
                first = resolve_entry(op.first_kept_entry_id)
            if first is None:
                first = len(cached)
            if not 0 <= first <= len(cached):
                raise ContextPatchError(
                    f"firstKeptIndex {first} is outside 0..{len(cached)}", op=name, index=index
                )
            summary = CompactionSummaryMessage(
                summary=op.summary, tokens_before=op.tokens_before, timestamp=op.timestamp or 0
            )
            messages = attrs.evolve(envelope.messages, cached=(summary, *cached[first:]))
            return attrs.evolve(envelope, messages=messages)
    raise ContextPatchError("unhandled op", op=name, index=index)  # pragma: no cover


def apply_patch(
    envelope: ContextEnvelope,
    ops: Iterable[ContextPatchOp],
    *,
    resolve_entry: EntryResolver | None = None,
    loaded_tools: Collection[str] | None = None,
) -> ContextEnvelope:
    """Apply patch ops in order and return the new envelope (``envelope`` is not changed).

    Args:
        envelope: the envelope to patch.
        ops: the patch ops.
        resolve_entry: resolves ``compaction_apply``'s ``first_kept_entry_id`` (the session's
            envelope builder passes one); without it such an op needs ``first_kept_index``.
        loaded_tools: when given, a ``tools_replace`` naming a tool outside it is rejected.

    Raises:
        ContextPatchError: an op is malformed, touches cached content without an
            ``invalidate_cache_reason``, or (with ``loaded_tools``) names an unknown tool.
            Nothing is applied then (the function is pure).
    """
    for index, op in enumerate(ops):
        envelope = _apply_one(envelope, op, index, resolve_entry, loaded_tools)
    return envelope
