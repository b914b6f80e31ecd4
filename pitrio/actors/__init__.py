"""pi-agent-core as Trio actors: the Agent facade, its LoopController, ProviderStream and
ToolRunner, the steering and follow-up mailboxes, and the agent event types.

Layering: imports ``tools``, ``providers``, ``channels`` and ``codec``; knows nothing about
files, sessions or extensions (those layers import this one).
"""

from pitrio._publish import publish as _publish

# Built at import, once: the layer's sealed codec (see pitrio.codec).
from pitrio.actors import _codec as _codec
from pitrio.actors._agent import ABORT_EPILOGUE_GRACE as ABORT_EPILOGUE_GRACE
from pitrio.actors._agent import AGENT_INBOX as AGENT_INBOX
from pitrio.actors._agent import CLOSE_GRACE as CLOSE_GRACE
from pitrio.actors._agent import FOLLOW_UP_BUFFER as FOLLOW_UP_BUFFER
from pitrio.actors._agent import STEERING_BUFFER as STEERING_BUFFER
from pitrio.actors._agent import Agent as Agent
from pitrio.actors._agent import open_agent as open_agent
from pitrio.actors._agent_state import AgentStateView as AgentStateView
from pitrio.actors._agent_state import BusyPolicy as BusyPolicy
from pitrio.actors._coalesce import merge_agent_events as merge_agent_events
from pitrio.actors._events import AGENT_EVENT_TYPES as AGENT_EVENT_TYPES
from pitrio.actors._events import AgentEndEvent as AgentEndEvent
from pitrio.actors._events import AgentEvent as AgentEvent
from pitrio.actors._events import AgentStartEvent as AgentStartEvent
from pitrio.actors._events import MessageEndEvent as MessageEndEvent
from pitrio.actors._events import MessageStartEvent as MessageStartEvent
from pitrio.actors._events import MessageUpdateEvent as MessageUpdateEvent
from pitrio.actors._events import ToolExecutionEndEvent as ToolExecutionEndEvent
from pitrio.actors._events import ToolExecutionStartEvent as ToolExecutionStartEvent
from pitrio.actors._events import ToolExecutionUpdateEvent as ToolExecutionUpdateEvent
from pitrio.actors._events import TurnEndEvent as TurnEndEvent
from pitrio.actors._events import TurnStartEvent as TurnStartEvent
from pitrio.actors._loop import LoopConfig as LoopConfig
from pitrio.actors._loop import LoopController as LoopController
from pitrio.actors._loop import OnMessageEnd as OnMessageEnd
from pitrio.actors._loop import PrepareRequest as PrepareRequest
from pitrio.actors._loop import RequestDraft as RequestDraft
from pitrio.actors._loop import RequestRejected as RequestRejected
from pitrio.actors._loop import ShouldStopAfterTurnContext as ShouldStopAfterTurnContext
from pitrio.actors._loop import StreamFn as StreamFn
from pitrio.actors._messages import AgentMessage as AgentMessage
from pitrio.actors._messages import ExtensionMessage as ExtensionMessage
from pitrio.actors._messages import OpaqueMessage as OpaqueMessage
from pitrio.actors._messages import StreamingMessage as StreamingMessage
from pitrio.actors._messages import default_convert_to_llm as default_convert_to_llm
from pitrio.actors._messages import register_agent_message as register_agent_message
from pitrio.actors._tool_runner import ABORTED_TOOL_MESSAGE as ABORTED_TOOL_MESSAGE
from pitrio.actors._tool_runner import SKIPPED_MESSAGE as SKIPPED_MESSAGE
from pitrio.actors._tool_runner import AfterToolCallContext as AfterToolCallContext
from pitrio.actors._tool_runner import AfterToolCallResult as AfterToolCallResult
from pitrio.actors._tool_runner import BeforeToolCallContext as BeforeToolCallContext
from pitrio.actors._tool_runner import BeforeToolCallResult as BeforeToolCallResult
from pitrio.actors._tool_runner import ToolRunner as ToolRunner

__all__ = [
    "ABORTED_TOOL_MESSAGE",
    "ABORT_EPILOGUE_GRACE",
    "AGENT_EVENT_TYPES",
    "AGENT_INBOX",
    "CLOSE_GRACE",
    "FOLLOW_UP_BUFFER",
    "SKIPPED_MESSAGE",
    "STEERING_BUFFER",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentEndEvent",
    "AgentEvent",
    "AgentMessage",
    "AgentStartEvent",
    "AgentStateView",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "BusyPolicy",
    "ExtensionMessage",
    "LoopConfig",
    "LoopController",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "OnMessageEnd",
    "OpaqueMessage",
    "PrepareRequest",
    "RequestDraft",
    "RequestRejected",
    "ShouldStopAfterTurnContext",
    "StreamFn",
    "StreamingMessage",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolRunner",
    "TurnEndEvent",
    "TurnStartEvent",
    "default_convert_to_llm",
    "merge_agent_events",
    "open_agent",
    "register_agent_message",
]

_publish(globals(), __all__)
