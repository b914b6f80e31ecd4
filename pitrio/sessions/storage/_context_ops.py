"""The context patch ops of seed 001 and the display metadata of a persisted transform.

A ``context`` hook returns a list of patch ops;
:func:`~pitrio.sessions.context._envelope.apply_patch`
applies them to a :class:`~pitrio.sessions.context._envelope.ContextEnvelope`. The ops are wire
types
(camelCase on the wire, ``op`` the discriminator, unknown keys kept) because ``context_transform``
session entries store them and replay them when the envelope is rebuilt.

This module sits below :mod:`pitrio.sessions.storage._entries` (which stores the ops in its
entries) and
imports nothing from the sessions layer, so both the entries and the envelope can import it.

Every op has a ``scope``: ``"cached"`` for ops that change cached content (system parts, tools,
cached messages, compaction; these also need ``invalidate_cache_reason``), ``"uncached"`` for
``messages_uncached_append`` and ``"options"`` for ``options_set``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio.actors import AgentMessage
from pitrio.codec import extra_field, wire
from pitrio.providers import Tool

__all__ = [
    "CACHED_OPS",
    "CONTEXT_PATCH_OP_TYPES",
    "CompactionApplyOp",
    "ContextPatchOp",
    "ContextTransformDisplay",
    "MessagesCachedReplaceOp",
    "MessagesUncachedAppendOp",
    "OptionsSetOp",
    "SystemPart",
    "SystemPartRemoveOp",
    "SystemPartSetOp",
    "SystemPartsReplaceOp",
    "ToolDefinition",
    "ToolsRemoveOp",
    "ToolsReplaceOp",
]

ToolDefinition: TypeAlias = Tool
"""A tool definition in an envelope: ``name``, ``description``, ``parameters`` (no executor)."""


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return items if isinstance(items, tuple) else tuple(items)


@wire
@attrs.frozen(kw_only=True)
class SystemPart:
    """One named section of the system prompt (``base``, ``project_context``, ...)."""

    name: str
    text: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SystemPartSetOp:
    """Set the text of a system part; a part of a new name is appended after the others."""

    op: Literal["system_part_set"] = attrs.field(default="system_part_set", init=False)
    scope: str = "cached"
    part_name: str
    text: str
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SystemPartRemoveOp:
    """Remove a system part by name (removing a missing part changes nothing)."""

    op: Literal["system_part_remove"] = attrs.field(default="system_part_remove", init=False)
    scope: str = "cached"
    part_name: str
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SystemPartsReplaceOp:
    """Replace all system parts."""

    op: Literal["system_parts_replace"] = attrs.field(default="system_parts_replace", init=False)
    scope: str = "cached"
    parts: tuple[SystemPart, ...] = attrs.field(converter=_tuple)
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolsReplaceOp:
    """Replace the tool definitions (each must name a loaded tool when the request is sent)."""

    op: Literal["tools_replace"] = attrs.field(default="tools_replace", init=False)
    scope: str = "cached"
    tools: tuple[Tool, ...] = attrs.field(converter=_tuple)
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolsRemoveOp:
    """Remove tool definitions by name."""

    op: Literal["tools_remove"] = attrs.field(default="tools_remove", init=False)
    scope: str = "cached"
    names: tuple[str, ...] = attrs.field(converter=_tuple)
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class MessagesCachedReplaceOp:
    """Replace the cached messages."""

    op: Literal["messages_cached_replace"] = attrs.field(
        default="messages_cached_replace", init=False
    )
    scope: str = "cached"
    messages: tuple[AgentMessage, ...] = attrs.field(converter=_tuple)
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class MessagesUncachedAppendOp:
    """Append request-only messages after everything else (never needs a cache reason)."""

    op: Literal["messages_uncached_append"] = attrs.field(
        default="messages_uncached_append", init=False
    )
    scope: str = "uncached"
    messages: tuple[AgentMessage, ...] = attrs.field(converter=_tuple)
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class OptionsSetOp:
    """Set generation options; a field left ``None`` keeps its current value."""

    op: Literal["options_set"] = attrs.field(default="options_set", init=False)
    scope: str = "options"
    reasoning: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CompactionApplyOp:
    """Replace the cached messages before a kept point with a compaction summary.

    The kept point is ``first_kept_index`` (an index into the cached messages) or
    ``first_kept_entry_id`` (a session entry id, resolved by the envelope builder; a legacy
    ``compaction`` entry is read as this op). With neither, nothing before is kept.
    """

    op: Literal["compaction_apply"] = attrs.field(default="compaction_apply", init=False)
    scope: str = "cached"
    summary: str
    tokens_before: int
    first_kept_entry_id: str | None = None
    first_kept_index: int | None = None
    timestamp: int | None = None
    """Of the summary message (epoch ms); ``None`` writes 0."""
    invalidate_cache_reason: str | None = None
    extra: dict[str, Any] | None = extra_field()


ContextPatchOp: TypeAlias = (
    SystemPartSetOp
    | SystemPartRemoveOp
    | SystemPartsReplaceOp
    | ToolsReplaceOp
    | ToolsRemoveOp
    | MessagesCachedReplaceOp
    | MessagesUncachedAppendOp
    | OptionsSetOp
    | CompactionApplyOp
)
"""One patch op of seed 001 (``op`` is the discriminator on the wire)."""

CONTEXT_PATCH_OP_TYPES: Final[Mapping[str, type]] = {
    "system_part_set": SystemPartSetOp,
    "system_part_remove": SystemPartRemoveOp,
    "system_parts_replace": SystemPartsReplaceOp,
    "tools_replace": ToolsReplaceOp,
    "tools_remove": ToolsRemoveOp,
    "messages_cached_replace": MessagesCachedReplaceOp,
    "messages_uncached_append": MessagesUncachedAppendOp,
    "options_set": OptionsSetOp,
    "compaction_apply": CompactionApplyOp,
}
"""``op`` -> class."""

CACHED_OPS: Final = frozenset(
    name
    for name, cls in CONTEXT_PATCH_OP_TYPES.items()
    if attrs.fields_dict(cls)["scope"].default == "cached"
)
"""The ops that touch cached content and so need ``invalidate_cache_reason``."""


@wire
@attrs.frozen(kw_only=True)
class ContextTransformDisplay:
    """How ``/context`` (and the chat, with ``show_in_chat``) shows a persisted transform."""

    title: str
    summary: str | None = None
    markdown: str | None = None
    renderer_id: str | None = None
    renderer_props: Any = None
    show_in_chat: bool | None = None
    """Also append a transcript-only ``contextTransform`` message (never sent to the model)."""
    extra: dict[str, Any] | None = extra_field()
