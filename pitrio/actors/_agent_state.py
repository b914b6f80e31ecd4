"""The Agent's read-only state view, its busy policy and the messages its refusals carry."""

from __future__ import annotations

from typing import Final, Literal, Protocol

import attrs

from pitrio.actors._messages import AgentMessage, StreamingMessage

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
