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
    from pitrio.sessions._agent_session_types import (
        AgentSessionEvent,
        CompactionEventStyle,
        SessionStartReason,
    )
    from pitrio.sessions._manager import SessionManager
    from pitrio.sessions._settings import SettingsManager

__all__ = ["SessionCore"]


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

    def drop_trailing_assistant(self, *, only_errors: bool = False) -> None:
        """Take the last assistant message out of the agent's context (it stays in the file)."""
        ...

    async def replace_session(self, reason: SessionStartReason, previous: str | None) -> None:
        """After the manager moved to another session: reload the agent's state from it."""
        ...

    def exclusive(self) -> AbstractAsyncContextManager[None]:
        """Abort the run in progress and hold the session for the block."""
        ...
