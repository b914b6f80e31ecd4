"""The AgentSession's own events, its results, and the hooks the extension layer plugs into.

Events (pi 0.73.1's ``AgentSessionEvent``): every :data:`~pitrio.actors.AgentEvent` plus
``queue_update``, ``thinking_level_changed``, ``session_info_changed``, the compaction events
(seed 002 s.7.2's ``auto_compaction_*`` and pi 0.73.1's ``compaction_*``) and the retry events.

Hooks (:class:`SessionHooks`): the points where seeds 003/004 let extensions intercept the
session (``input``, ``before_agent_start``, ``context_envelope``, ``session_before_compact``
...). The
base class does nothing; the extension layer subclasses it and hands an instance to the
session. A hook that raises is logged and treated as if it had returned ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import attrs

from pitrio.actors import (
    AGENT_EVENT_TYPES,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentEvent,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from pitrio.codec import extra_field, wire
from pitrio.providers import ImageContent, Model, ModelThinkingLevel
from pitrio.sessions.compaction._compaction import (
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    CompactionEndEvent,
    CompactionPreparation,
    CompactionResult,
    CompactionStartEvent,
)
from pitrio.sessions.context._envelope import (
    ContextEnvelope,
    ContextReason,
    ContextResult,
    MessageEndResult,
)
from pitrio.sessions.runtime._bash_executor import BashResult
from pitrio.sessions.runtime._retry import AutoRetryEndEvent, AutoRetryStartEvent
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessage,
    SessionEntry,
)
from pitrio.tools.builtin import BashOperations

__all__ = [
    "AGENT_SESSION_EVENT_TYPES",
    "AgentSessionEvent",
    "BeforeAgentStartResult",
    "BeforeCompactResult",
    "BeforeTreeResult",
    "CompactionEventStyle",
    "ExtensionErrorEvent",
    "ForkResult",
    "InputResult",
    "InputSource",
    "ModelCycleResult",
    "NavigateTreeResult",
    "QueueUpdateEvent",
    "ScopedModel",
    "SessionHooks",
    "SessionInfoChangedEvent",
    "SessionSnapshot",
    "SessionStartReason",
    "ThinkingLevelChangedEvent",
    "TreePreparation",
    "UserBashResult",
]

InputSource: TypeAlias = Literal["interactive", "rpc", "extension"]
SessionStartReason: TypeAlias = Literal["startup", "new", "resume", "fork", "reload"]
CompactionEventStyle: TypeAlias = Literal["both", "seed", "pi"]
"""Which compaction events a session emits: seed 002's ``auto_compaction_start/end`` (automatic
compactions only), pi 0.73.1's ``compaction_start/end`` (manual ones too), or both (default;
``auto_compaction_start`` comes first and ``auto_compaction_end`` last)."""


# --------------------------------------------------------------------------- events


def _strings(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(items)


@wire
@attrs.frozen(kw_only=True)
class QueueUpdateEvent:
    """The queued steering / follow-up texts changed (pi 0.73.1)."""

    type: Literal["queue_update"] = attrs.field(default="queue_update", init=False)
    steering: tuple[str, ...] = attrs.field(converter=_strings)
    follow_up: tuple[str, ...] = attrs.field(converter=_strings)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingLevelChangedEvent:
    """The thinking level changed (pi 0.73.1)."""

    type: Literal["thinking_level_changed"] = attrs.field(
        default="thinking_level_changed", init=False
    )
    level: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionInfoChangedEvent:
    """The session's display name changed (pi 0.73.1)."""

    type: Literal["session_info_changed"] = attrs.field(default="session_info_changed", init=False)
    name: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ExtensionErrorEvent:
    """An extension's handler raised (pi 0.73.1's ``extension_error``); the session goes on."""

    type: Literal["extension_error"] = attrs.field(default="extension_error", init=False)
    extension_path: str
    event: str
    error: str
    extra: dict[str, Any] | None = extra_field()


AgentSessionEvent: TypeAlias = (
    AgentEvent
    | ExtensionErrorEvent
    | QueueUpdateEvent
    | ThinkingLevelChangedEvent
    | SessionInfoChangedEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoCompactionStartEvent
    | AutoCompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
)
"""What :class:`~pitrio.sessions.AgentSession` subscribers receive."""

AGENT_SESSION_EVENT_TYPES: tuple[type, ...] = (
    *AGENT_EVENT_TYPES,
    ExtensionErrorEvent,
    QueueUpdateEvent,
    ThinkingLevelChangedEvent,
    SessionInfoChangedEvent,
    CompactionStartEvent,
    CompactionEndEvent,
    AutoCompactionStartEvent,
    AutoCompactionEndEvent,
    AutoRetryStartEvent,
    AutoRetryEndEvent,
)


# --------------------------------------------------------------------------- results


@attrs.frozen(kw_only=True)
class ScopedModel:
    """A model to cycle through (pi's ``--models``), with the thinking level to switch to."""

    model: Model
    thinking_level: ModelThinkingLevel | None = None
    """``None`` keeps the session's current preference."""


@attrs.frozen(kw_only=True)
class ModelCycleResult:
    """What :meth:`~pitrio.sessions.AgentSession.cycle_model` switched to."""

    model: Model
    thinking_level: ModelThinkingLevel
    is_scoped: bool


@attrs.frozen(kw_only=True)
class ForkResult:
    """The outcome of :meth:`~pitrio.sessions.AgentSession.fork`."""

    cancelled: bool
    selected_text: str | None = None
    """The text of the user message forked before (to put back in the editor)."""


@attrs.frozen(kw_only=True)
class NavigateTreeResult:
    """The outcome of :meth:`~pitrio.sessions.AgentSession.navigate_tree`."""

    cancelled: bool
    aborted: bool = False
    editor_text: str | None = None
    """The text of the user (or custom) message navigated to, for the editor."""
    summary_entry: BranchSummaryEntry | None = None


# --------------------------------------------------------------------------- hooks


@attrs.frozen(kw_only=True)
class InputResult:
    """What the ``input`` hook decided: go on, rewrite the input, or swallow it."""

    action: Literal["continue", "transform", "handled"] = "continue"
    text: str | None = None
    images: tuple[ImageContent, ...] | None = None
    """For ``transform``: the new images (``None`` keeps the original ones)."""


@attrs.frozen(kw_only=True)
class BeforeAgentStartResult:
    """Messages to add to the prompt and the system prompt for this run (``None``: the base)."""

    messages: tuple[CustomMessage, ...] = ()
    system_prompt: str | None = None


@attrs.frozen(kw_only=True)
class BeforeCompactResult:
    """Cancel the compaction, or provide its result instead of the model's summary."""

    cancel: bool = False
    compaction: CompactionResult | None = None


@attrs.frozen(kw_only=True)
class BeforeForkResult:
    """Cancel the fork, or fork without restoring the conversation to the chosen entry
    (``skip_conversation_restore``: the new session keeps the conversation as it is now)."""

    cancel: bool = False
    skip_conversation_restore: bool = False


@attrs.frozen(kw_only=True)
class TreePreparation:
    """What a tree navigation is about to do (given to ``session_before_tree``)."""

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[SessionEntry]
    user_wants_summary: bool
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None


@attrs.frozen(kw_only=True)
class BeforeTreeResult:
    """Cancel the navigation, provide the summary, or change the instructions or label."""

    cancel: bool = False
    summary: str | None = None
    details: Any = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


@attrs.frozen(kw_only=True)
class UserBashResult:
    """What ``user_bash`` decided: run the command through other ``operations`` (a remote
    shell), or take ``result`` as the command's result without running anything."""

    operations: BashOperations | None = None
    result: BashResult | None = None


@attrs.frozen
class SessionSnapshot:
    """What a client whose resume cursor left the replay ring rebuilds from."""

    seq: int
    """The seq of the last event the snapshot includes; live events continue after it."""
    session_id: str
    session_file: str | None
    messages: tuple[AgentMessage, ...]
    model: Model | None
    thinking_level: ModelThinkingLevel
    is_streaming: bool
    steering: tuple[str, ...]
    follow_up: tuple[str, ...]


class SessionHooks:
    """Extension points of an :class:`~pitrio.sessions.AgentSession` (seeds 003, 004).

    Every method is awaited by the session at the named moment; the defaults do nothing.
    Returning ``None`` always means "no opinion".
    """

    def attach(self, session: Any) -> None:
        """Called once with the :class:`~pitrio.sessions.AgentSession` these hooks serve."""

    async def tool_call(self, context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        """Before a tool executes (the Agent's ``before_tool_call``): block it, or not.

        Contract: unlike the other hooks, an exception here is not swallowed: it becomes the
        call's error result, so a failing permission check never lets the call through.
        """
        return None

    async def tool_result(self, context: AfterToolCallContext) -> AfterToolCallResult | None:
        """After a tool executed (the Agent's ``after_tool_call``): change its result."""
        return None

    async def before_provider_request(self, payload: Any, model: Model) -> Any:
        """The provider's request body, before it is sent: a replacement (``None``: unchanged)."""
        return None

    async def after_provider_response(self, status: int, headers: dict[str, str]) -> None:
        """A provider request's response arrived (status and headers), before its body is
        read: once per agent request that got an HTTP answer (pi 0.73.1's
        ``after_provider_response``)."""

    async def user_bash(
        self, command: str, exclude_from_context: bool, cwd: str
    ) -> UserBashResult | None:
        """A user shell command (pi's ``!cmd``), before it runs."""
        return None

    async def on_agent_event(self, event: AgentEvent) -> None:
        """Every agent event, before the session's subscribers see it."""

    async def input(
        self, text: str, images: tuple[ImageContent, ...] | None, source: InputSource
    ) -> InputResult | None:
        """User input, before anything else happens to it."""
        return None

    async def before_agent_start(
        self, prompt: str, images: tuple[ImageContent, ...] | None, system_prompt: str
    ) -> BeforeAgentStartResult | None:
        """Once per prompt, after the user message is built, before the agent runs."""
        return None

    async def context_envelope(
        self, reason: ContextReason, envelope: ContextEnvelope
    ) -> list[ContextResult]:
        """Seed 001's ``context`` hook on the request's envelope: the patches to apply, in order
        (the extension runner chains handlers, applying each patch before the next handler).
        ``before_request`` and ``turn_end`` patches are persisted; ``ephemeral`` ones are for
        this request only. A result's ``messages`` (seed 004's message-list form) replaces
        the messages of a ``before_request`` request, for that request only. The default
        returns none."""
        return []

    async def message_end(self, message: AgentMessage) -> MessageEndResult | None:
        """A finished message before it is appended and persisted: ``None`` keeps it, a
        :class:`MessageEndResult` replaces it (or, with ``message=None``, drops it)."""
        return None

    async def session_start(
        self, reason: SessionStartReason, previous_session_file: str | None
    ) -> None:
        """The session started, or another one replaced it."""

    async def session_shutdown(self, reason: str) -> None:
        """The session is closing or being replaced."""

    async def session_before_switch(
        self, reason: Literal["new", "resume"], target_session_file: str | None
    ) -> bool:
        """Return True to cancel a new-session or resume."""
        return False

    async def session_before_fork(self, entry_id: str, position: str) -> bool | BeforeForkResult:
        """Return True (or a :class:`BeforeForkResult` with ``cancel``) to cancel a fork; a
        result with ``skip_conversation_restore`` forks without moving the conversation back to
        the chosen entry."""
        return False

    async def session_before_compact(
        self,
        preparation: CompactionPreparation,
        branch_entries: list[SessionEntry],
        custom_instructions: str | None,
    ) -> BeforeCompactResult | None:
        """Before a compaction: cancel it or provide its result."""
        return None

    async def session_compact(self, entry: CompactionEntry, from_extension: bool) -> None:
        """A compaction entry was saved."""

    async def session_before_tree(self, preparation: TreePreparation) -> BeforeTreeResult | None:
        """Before a tree navigation: cancel it or provide the branch summary."""
        return None

    async def session_tree(
        self,
        new_leaf_id: str | None,
        old_leaf_id: str | None,
        summary_entry: BranchSummaryEntry | None,
        from_extension: bool | None,
    ) -> None:
        """A tree navigation finished."""

    async def model_select(self, model: Model, previous_model: Model | None, source: str) -> None:
        """The model changed (``source``: ``"set"``, ``"cycle"`` or ``"restore"``)."""

    async def thinking_level_select(self, level: str, previous_level: str) -> None:
        """The thinking level changed."""
