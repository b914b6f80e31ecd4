"""The events extension handlers receive and the results they may return (seeds 003/004).

Events are frozen attrs wire classes: Python attribute names (``event.tool_name``), pi's
camelCase field names on the wire (``toolName``). The agent's own events (``agent_start``,
``message_update``, ``tool_execution_end`` ...) are handed to handlers as the
:mod:`pitrio.actors` event objects themselves; ``turn_start`` and ``turn_end`` get the
extension-level classes here, which add pi's ``turnIndex`` (and ``timestamp``).

Results: a handler may return the result class named for its event, a mapping with pi's keys
(``{"block": True, "reason": "..."}``, ``{"systemPrompt": ...}`` or ``{"system_prompt": ...}``),
or ``None`` (no opinion). :func:`field_of` reads either form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from pitrio.actors import AgentMessage
from pitrio.codec import camel, extra_field, wire
from pitrio.providers import ImageContent, Model, TextContent, ToolResultMessage
from pitrio.sessions import (
    CompactionEntry,
    CompactionPreparation,
    CompactionResult,
    SessionEntry,
)
from pitrio.sessions import UserBashResult as UserBashEventResult

__all__ = [
    "EVENT_NAMES",
    "AfterProviderResponseEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartEventResult",
    "BeforeProviderRequestEvent",
    "ContextEvent",
    "ContextEventResult",
    "ContextState",
    "InputEvent",
    "InputEventResult",
    "MessageEndEventResult",
    "ModelSelectEvent",
    "ResourcesDiscoverEvent",
    "ResourcesDiscoverResult",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeForkEvent",
    "SessionBeforeForkResult",
    "SessionBeforeSwitchEvent",
    "SessionBeforeSwitchResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "SessionCompactEvent",
    "SessionDirectoryEvent",
    "SessionDirectoryResult",
    "SessionForkEvent",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "SessionSwitchEvent",
    "SessionTreeEvent",
    "ThinkingLevelSelectEvent",
    "ToolCallEvent",
    "ToolCallEventResult",
    "ToolResultEvent",
    "ToolResultEventResult",
    "TurnEndEvent",
    "TurnStartEvent",
    "UserBashEvent",
    "UserBashEventResult",
    "field_of",
]

EVENT_NAMES: Final = frozenset(
    {
        # seed 004 s.1-2: input and the agent's lifecycle
        "input",
        "before_agent_start",
        "agent_start",
        "agent_end",
        # s.3: per turn
        "turn_start",
        "turn_end",
        "context",
        "before_provider_request",
        "after_provider_response",  # pi 0.73.1
        "message_start",
        "message_update",
        "message_end",
        # s.4: tools
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "tool_call",
        "tool_result",
        # s.5: the session
        "session_directory",  # seed 003 (not in pi 0.73.1)
        "session_start",
        "session_shutdown",
        "session_before_switch",
        "session_switch",  # seed 004 (pi 0.73.1: session_start with reason new / resume)
        "session_before_fork",
        "session_fork",  # seed 004 (pi 0.73.1: session_start with reason fork)
        "session_before_compact",
        "session_compact",
        "session_before_tree",
        "session_tree",
        # s.6-8
        "model_select",
        "thinking_level_select",  # pi 0.73.1
        "resources_discover",
        "user_bash",
    }
)
"""Every event name :meth:`~pitrio.extensions.ExtensionAPI.on` accepts."""


def field_of(result: Any, name: str) -> Any:
    """``result``'s ``name`` (a snake_case attribute, or a mapping key in either case)."""
    if result is None:
        return None
    if isinstance(result, Mapping):
        key = camel(name)
        if key in result:
            return result[key]
        return result.get(name)
    return getattr(result, name, None)


# --------------------------------------------------------------------------- input, agent


@wire
@attrs.frozen(kw_only=True)
class InputEvent:
    """User input, before anything else happens to it (seed 004 s.1)."""

    type: Literal["input"] = attrs.field(default="input", init=False)
    text: str
    images: tuple[ImageContent, ...] | None = None
    source: Literal["interactive", "rpc", "extension"] = "interactive"
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class InputEventResult:
    """``continue`` (default), ``transform`` (``text``; ``images`` ``None`` keeps them) or
    ``handled`` (swallowed: no run, no further handler)."""

    action: Literal["continue", "transform", "handled"] = "continue"
    text: str | None = None
    images: Sequence[ImageContent] | None = None


@wire
@attrs.frozen(kw_only=True)
class BeforeAgentStartEvent:
    """Once per prompt, before the agent runs; ``system_prompt`` is the chained one."""

    type: Literal["before_agent_start"] = attrs.field(default="before_agent_start", init=False)
    prompt: str
    images: tuple[ImageContent, ...] | None = None
    system_prompt: str
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class BeforeAgentStartEventResult:
    """A message to inject after the user message (a mapping or object with ``custom_type``,
    ``content``, ``display``, ``details``) and/or the system prompt for this run."""

    message: Any = None
    system_prompt: str | None = None


@wire
@attrs.frozen(kw_only=True)
class TurnStartEvent:
    """A turn begins (``turn_index`` counts from 0 within the run)."""

    type: Literal["turn_start"] = attrs.field(default="turn_start", init=False)
    turn_index: int
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class TurnEndEvent:
    """A turn ended: its assistant message and its tool results."""

    type: Literal["turn_end"] = attrs.field(default="turn_end", init=False)
    turn_index: int
    message: AgentMessage
    tool_results: tuple[ToolResultMessage, ...]
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ContextEvent:
    """Before an LLM call: the messages it will see (a copy; safe to change)."""

    type: Literal["context"] = attrs.field(default="context", init=False)
    messages: list[AgentMessage]
    reason: str | None = None
    """The envelope's reason (seed 001: ``before_request``, ``ephemeral``, ``turn_end``)."""
    envelope: Any = None
    """The ContextEnvelope (seed 001), when the session builds one."""
    extra: dict[str, Any] | None = extra_field()

    @property
    def state(self) -> ContextState:
        """Seed 001's ``event.state``: ``state.envelope`` is :attr:`envelope`."""
        return ContextState(envelope=self.envelope)


@attrs.frozen
class ContextState:
    """What a ``context`` handler works on (seed 001's ``{envelope}``)."""

    envelope: Any


@attrs.frozen(kw_only=True)
class ContextEventResult:
    """The messages to send instead (``None``: unchanged) or, with an envelope, a patch."""

    messages: Sequence[AgentMessage] | None = None
    patch: Any = None


@attrs.frozen(kw_only=True)
class MessageEndEventResult:
    """The message to keep instead (same role); ``drop=True`` (or ``{"message": None}``)
    drops it."""

    message: AgentMessage | None = None
    drop: bool = False


@wire
@attrs.frozen(kw_only=True)
class BeforeProviderRequestEvent:
    """The provider request body; return a replacement body (anything but ``None``)."""

    type: Literal["before_provider_request"] = attrs.field(
        default="before_provider_request", init=False
    )
    payload: Any
    model: Model | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AfterProviderResponseEvent:
    """A provider request's HTTP response, before its body is read (pi 0.73.1): the status
    and the response headers. Informational: results are ignored."""

    type: Literal["after_provider_response"] = attrs.field(
        default="after_provider_response", init=False
    )
    status: int
    headers: dict[str, str]
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- tools


@wire
@attrs.frozen(kw_only=True)
class ToolCallEvent:
    """A tool call, validated, before it executes."""

    type: Literal["tool_call"] = attrs.field(default="tool_call", init=False)
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class ToolCallEventResult:
    """``block=True`` stops the call; ``reason`` becomes its error result."""

    block: bool = False
    reason: str | None = None


@wire
@attrs.frozen(kw_only=True)
class ToolResultEvent:
    """A tool's result (also an error one), as changed by the handlers before this one."""

    type: Literal["tool_result"] = attrs.field(default="tool_result", init=False)
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    content: tuple[TextContent | ImageContent, ...]
    details: Any = None
    is_error: bool = False
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class ToolResultEventResult:
    """Fields to replace (``None`` keeps the current value)."""

    content: Sequence[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None


@wire
@attrs.frozen(kw_only=True)
class UserBashEvent:
    """A user shell command (``!cmd``; ``!!cmd`` sets ``exclude_from_context``)."""

    type: Literal["user_bash"] = attrs.field(default="user_bash", init=False)
    command: str
    exclude_from_context: bool
    cwd: str
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- session


@wire
@attrs.frozen(kw_only=True)
class SessionDirectoryEvent:
    """The CLI is about to choose the session directory (seed 003; handlers get no ctx)."""

    type: Literal["session_directory"] = attrs.field(default="session_directory", init=False)
    cwd: str
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class SessionDirectoryResult:
    """The session directory to use (unless ``--session-dir`` names one); the first wins."""

    session_dir: str | None = None


@wire
@attrs.frozen(kw_only=True)
class SessionStartEvent:
    type: Literal["session_start"] = attrs.field(default="session_start", init=False)
    reason: Literal["startup", "new", "resume", "fork", "reload"]
    previous_session_file: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionShutdownEvent:
    type: Literal["session_shutdown"] = attrs.field(default="session_shutdown", init=False)
    reason: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionBeforeSwitchEvent:
    type: Literal["session_before_switch"] = attrs.field(
        default="session_before_switch", init=False
    )
    reason: Literal["new", "resume"]
    target_session_file: str | None = None
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class SessionBeforeSwitchResult:
    cancel: bool = False


@wire
@attrs.frozen(kw_only=True)
class SessionSwitchEvent:
    """After ``/new`` or ``/resume`` (seed 004), just before ``session_start``."""

    type: Literal["session_switch"] = attrs.field(default="session_switch", init=False)
    reason: Literal["new", "resume"]
    previous_session_file: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionBeforeForkEvent:
    type: Literal["session_before_fork"] = attrs.field(default="session_before_fork", init=False)
    entry_id: str
    position: str = "before"
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class SessionBeforeForkResult:
    cancel: bool = False
    skip_conversation_restore: bool = False


@wire
@attrs.frozen(kw_only=True)
class SessionForkEvent:
    """After ``/fork`` (seed 004), just before ``session_start``."""

    type: Literal["session_fork"] = attrs.field(default="session_fork", init=False)
    previous_session_file: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionBeforeCompactEvent:
    type: Literal["session_before_compact"] = attrs.field(
        default="session_before_compact", init=False
    )
    preparation: CompactionPreparation
    branch_entries: list[SessionEntry]
    custom_instructions: str | None = None
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class SessionBeforeCompactResult:
    cancel: bool = False
    compaction: CompactionResult | None = None


@wire
@attrs.frozen(kw_only=True)
class SessionCompactEvent:
    type: Literal["session_compact"] = attrs.field(default="session_compact", init=False)
    compaction_entry: CompactionEntry
    from_extension: bool
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionBeforeTreeEvent:
    type: Literal["session_before_tree"] = attrs.field(default="session_before_tree", init=False)
    preparation: Any
    """A :class:`~pitrio.sessions.TreePreparation`."""
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class SessionBeforeTreeResult:
    """``summary`` is ``{"summary": str, "details": ...}`` (or an object with those)."""

    cancel: bool = False
    summary: Any = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


@wire
@attrs.frozen(kw_only=True)
class SessionTreeEvent:
    type: Literal["session_tree"] = attrs.field(default="session_tree", init=False)
    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: Any = None
    from_extension: bool | None = None
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- models, resources


@wire
@attrs.frozen(kw_only=True)
class ModelSelectEvent:
    type: Literal["model_select"] = attrs.field(default="model_select", init=False)
    model: Model
    previous_model: Model | None
    source: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingLevelSelectEvent:
    type: Literal["thinking_level_select"] = attrs.field(
        default="thinking_level_select", init=False
    )
    level: str
    previous_level: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ResourcesDiscoverEvent:
    type: Literal["resources_discover"] = attrs.field(default="resources_discover", init=False)
    cwd: str
    reason: Literal["startup", "reload"] = "startup"
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen(kw_only=True)
class ResourcesDiscoverResult:
    """Extra skill, prompt-template and theme paths (every handler's are collected)."""

    skill_paths: Sequence[str] = ()
    prompt_paths: Sequence[str] = ()
    theme_paths: Sequence[str] = ()
