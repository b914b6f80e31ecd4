"""The Agent's read-only state view, the commands that change its state, its busy policy, the
messages its refusals carry, and what an idle agent shares or keeps small (its default
``stream_fn``, its empty set of tool calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import attrs

from pitrio.actors._messages import AgentMessage, StreamingMessage
from pitrio.channels import MailboxMode, Reply
from pitrio.providers import Model, ModelThinkingLevel, start_stream
from pitrio.tools import AgentTool

if TYPE_CHECKING:
    import trio

    from pitrio.providers import ProviderRegistry

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
    def model(self) -> Model | None: ...
    @property
    def system_prompt(self) -> str: ...
    @property
    def thinking_level(self) -> ModelThinkingLevel: ...
    @property
    def tools(self) -> tuple[AgentTool, ...]: ...
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
    @property
    def steering_mode(self) -> MailboxMode: ...
    @property
    def follow_up_mode(self) -> MailboxMode: ...


@attrs.frozen
class AgentStateView:
    """pi's ``agent.state``: a read-only view of an Agent's state.

    It reads the agent's state when asked (it is a view, not a snapshot) and has no method
    that changes it: :attr:`AgentSession.agent <pitrio.sessions.AgentSession.agent>` hands
    this out, so that a session's agent is driven only through the session's commands.
    """

    _agent: _AgentState

    @property
    def model(self) -> Model | None:
        return self._agent.model

    @property
    def system_prompt(self) -> str:
        return self._agent.system_prompt

    @property
    def thinking_level(self) -> ModelThinkingLevel:
        return self._agent.thinking_level

    @property
    def tools(self) -> tuple[AgentTool, ...]:
        return self._agent.tools

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

    @property
    def steering_mode(self) -> MailboxMode:
        return self._agent.steering_mode

    @property
    def follow_up_mode(self) -> MailboxMode:
        return self._agent.follow_up_mode


# --------------------------------------------------------------------------- state commands
# What Agent.set_model, set_tools, replace_messages ... send to the agent's inbox. The agent's
# task applies each in arrival order with the run commands (prompt, continue), so a change
# sent after a prompt takes effect after that prompt's run started (its run keeps the
# configuration it started with), and one sent before it, before.


def _reply() -> Any:
    return Reply()


@attrs.define(eq=False)
class SetModel:
    """Use ``model`` from the next run on."""

    model: Model
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class SetSystemPrompt:
    """Use ``prompt`` as the system prompt from the next run on."""

    prompt: str
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class SetSessionId:
    """Pass ``session_id`` to the provider from the next run on (its prompt cache key)."""

    session_id: str | None
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class SetThinkingLevel:
    """Use ``level`` from the next run on."""

    level: ModelThinkingLevel
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class SetTools:
    """Offer ``tools`` to the model from the next run on."""

    tools: tuple[AgentTool, ...]
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class ReplaceMessages:
    """Replace the transcript (in place: a run in progress reads that very list)."""

    messages: list[AgentMessage]
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class AppendMessage:
    """Append ``message`` to the transcript."""

    message: AgentMessage
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class ClearMessages:
    """Empty the transcript."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class Reset:
    """Clear the transcript, the runtime state and both queues."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(eq=False)
class SetQueueMode:
    """Deliver the ``steering`` (or ``follow_up``) queue ``mode``: one at a time, or all."""

    queue: Literal["steering", "follow_up"]
    mode: MailboxMode
    reply: Reply[None] = attrs.field(factory=_reply)


StateChange: TypeAlias = (
    SetModel
    | SetSystemPrompt
    | SetSessionId
    | SetThinkingLevel
    | SetTools
    | ReplaceMessages
    | AppendMessage
    | ClearMessages
    | Reset
    | SetQueueMode
)
"""Every state change the agent's task applies from its inbox."""


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
