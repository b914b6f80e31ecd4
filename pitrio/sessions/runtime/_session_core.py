"""``SessionCore``: the narrow interface the session's tree and compaction operations receive.

The operations in ``_agent_session_tree`` (restore, new, resume, fork, navigate) and
``_agent_session_compaction`` (manual, threshold and overflow compaction) are functions of the
session's state, run by the session actor. They see the actor through this protocol, not as the
whole object, so neither module imports the actor (no import circle) and what they may touch is
written down here.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from pitrio.actors import Agent
    from pitrio.providers import (
        AssistantMessage,
        Context,
        Model,
        ModelThinkingLevel,
        StreamOptions,
    )
    from pitrio.sessions.runtime._agent_session_types import (
        AgentSessionEvent,
        CompactionEventStyle,
        SessionStartReason,
    )
    from pitrio.sessions.settings._settings import SettingsManager
    from pitrio.sessions.storage._manager import SessionManager

__all__ = ["SessionCore", "SessionSlots"]


class SessionSlots:
    """The slots of the session actor's attributes, the one base of its mixins.

    Slotted: an instance ``__dict__`` of these 31 attributes was the largest single allocation
    of an idle session (~1.6 KB). The mixins (model, prompting and user-bash commands) and
    :class:`~pitrio.sessions.runtime._session_actor.SessionActor` add no slots of their own (two
    bases with slots would not combine), and annotate the attributes they use.
    """

    __slots__ = (
        "_agent_event_hook",
        "_base_system_prompt",
        "_closed",
        "_compactor",
        "_complete_fn",
        "_follow_up_texts",
        "_has_auth",
        "_idle",
        "_inbox",
        "_job",
        "_last_assistant",
        "_models",
        "_nursery",
        "_pending_entries",
        "_pending_next_turn",
        "_registry",
        "_retry",
        "_retry_pattern",
        "_scoped_models",
        "_steering_texts",
        "_user_bash",
        "agent",
        "branch_summary_scope",
        "busy_policy",
        "compaction_events",
        "context",
        "hooks",
        "log",
        "model_fallback_message",
        "session_manager",
        "settings",
    )


class SessionCore(Protocol):
    """What a session operation may use of the session actor."""

    session_manager: SessionManager
    settings: SettingsManager
    agent: Agent
    compaction_events: CompactionEventStyle
    model_fallback_message: str | None
    branch_summary_scope: trio.CancelScope | None

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ModelThinkingLevel: ...

    @property
    def available_models(self) -> list[Model]: ...

    def find_model(self, provider: str, model_id: str) -> Model | None:
        """A model from the session's list or the catalogue."""
        ...

    async def emit(self, event: AgentSessionEvent) -> None:
        """Publish a session event (numbered, kept for replay, delivered in order)."""
        ...

    async def hook(self, name: str, *args: Any) -> Any:
        """Await the named :class:`SessionHooks` method; an exception is logged as ``None``."""
        ...

    async def complete(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessage:
        """Run one summarising request with the session's key lookup."""
        ...

    async def drop_trailing_assistant(self, *, only_errors: bool = False) -> None:
        """Take the last assistant message out of the agent's context (it stays in the file)."""
        ...

    async def replace_session(self, reason: SessionStartReason, previous: str | None) -> None:
        """After the manager moved to another session: reload the agent's state from it."""
        ...

    def exclusive(self) -> AbstractAsyncContextManager[None]:
        """Abort the run in progress and hold the session for the block."""
        ...
