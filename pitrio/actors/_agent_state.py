"""The Agent's read-only state view, its busy policy, the messages its refusals carry, and
what an idle agent shares or keeps small (its default ``stream_fn``, its empty set of tool
calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import attrs

from pitrio.actors._messages import AgentMessage, StreamingMessage
from pitrio.providers import start_stream

if TYPE_CHECKING:
    import trio

    from pitrio.providers import Model, ProviderRegistry

ALREADY_PROCESSING: Final = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
ALREADY_PROCESSING_CONTINUE: Final = (
    "Agent is already processing. Wait for completion before continuing."
)
NO_MODEL: Final = "No model configured"
NO_MESSAGES_TO_CONTINUE: Final = "No messages to continue from"
FROM_ASSISTANT: Final = "Cannot continue from message role: assistant"


BusyPolicy = Literal["reject", "steer", "follow_up", "interrupt"]
"""What a prompt does when it arrives while a run is in progress: ``"reject"`` raises pi's
"already processing" error (the default), ``"steer"`` / ``"follow_up"`` queue it, and
``"interrupt"`` aborts the run and then starts the new prompt."""


class _AgentState(Protocol):
    """What the view reads (an :class:`~pitrio.actors.Agent`)."""

    @property
    def messages(self) -> tuple[AgentMessage, ...]: ...
    @property
    def is_streaming(self) -> bool: ...
    @property
    def stream_message(self) -> StreamingMessage | None: ...
    @property
    def pending_tool_calls(self) -> frozenset[str]: ...
    @property
    def error(self) -> str | None: ...


@attrs.frozen
class AgentStateView:
    """pi's ``agent.state``: a read-only view of an Agent's state."""

    _agent: _AgentState

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        return self._agent.messages

    @property
    def is_streaming(self) -> bool:
        return self._agent.is_streaming

    @property
    def stream_message(self) -> StreamingMessage | None:
        return self._agent.stream_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return self._agent.pending_tool_calls

    @property
    def error(self) -> str | None:
        return self._agent.error


NO_TOOL_CALLS: Final[frozenset[str]] = frozenset()
"""Shared by every agent with no tool call in flight (``frozenset()`` makes a new 200-byte set
each time since Python 3.10)."""


class RegistryStream:
    """The default ``stream_fn``: ``start_stream`` on the agent's registry (one small object
    per agent, not a closure, its cell and closure tuple). Its streams are not abortable on
    their own: the run's cancel scope aborts them."""

    __slots__ = ("registry",)

    def __init__(self, registry: ProviderRegistry | None) -> None:
        self.registry = registry

    def __call__(self, nursery: trio.Nursery, model: Model, context: Any, options: Any) -> Any:
        return start_stream(
            nursery, model, context, options, registry=self.registry, abortable=False
        )
