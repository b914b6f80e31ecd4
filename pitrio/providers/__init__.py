"""pi-ai: message types, models, the provider registry, streaming providers, faux.

This layer knows nothing about agents. It imports only :mod:`pitrio.codec` and
:mod:`pitrio.channels`; ``actors``, ``sessions`` and everything above import it.
"""

from pitrio._publish import publish as _publish
from pitrio.providers._events import ASSISTANT_MESSAGE_EVENT_TYPES as ASSISTANT_MESSAGE_EVENT_TYPES
from pitrio.providers._events import AssistantMessageEvent as AssistantMessageEvent
from pitrio.providers._events import DoneEvent as DoneEvent
from pitrio.providers._events import ErrorEvent as ErrorEvent
from pitrio.providers._events import StartEvent as StartEvent
from pitrio.providers._events import TextDeltaEvent as TextDeltaEvent
from pitrio.providers._events import TextEndEvent as TextEndEvent
from pitrio.providers._events import TextStartEvent as TextStartEvent
from pitrio.providers._events import ThinkingDeltaEvent as ThinkingDeltaEvent
from pitrio.providers._events import ThinkingEndEvent as ThinkingEndEvent
from pitrio.providers._events import ThinkingStartEvent as ThinkingStartEvent
from pitrio.providers._events import ToolCallDeltaEvent as ToolCallDeltaEvent
from pitrio.providers._events import ToolCallEndEvent as ToolCallEndEvent
from pitrio.providers._events import ToolCallStartEvent as ToolCallStartEvent
from pitrio.providers._events import final_message as final_message
from pitrio.providers._events import is_terminal as is_terminal
from pitrio.providers._faux import FauxModelDefinition as FauxModelDefinition
from pitrio.providers._faux import FauxProvider as FauxProvider
from pitrio.providers._faux import FauxState as FauxState
from pitrio.providers._faux import faux_assistant_message as faux_assistant_message
from pitrio.providers._faux import faux_text as faux_text
from pitrio.providers._faux import faux_thinking as faux_thinking
from pitrio.providers._faux import faux_tool_call as faux_tool_call
from pitrio.providers._faux import register_faux_provider as register_faux_provider
from pitrio.providers._messages import EMPTY_USAGE as EMPTY_USAGE
from pitrio.providers._messages import Api as Api
from pitrio.providers._messages import AssistantContentBlock as AssistantContentBlock
from pitrio.providers._messages import AssistantMessage as AssistantMessage
from pitrio.providers._messages import CacheRetention as CacheRetention
from pitrio.providers._messages import ContentBlock as ContentBlock
from pitrio.providers._messages import Context as Context
from pitrio.providers._messages import Cost as Cost
from pitrio.providers._messages import ImageContent as ImageContent
from pitrio.providers._messages import InputKind as InputKind
from pitrio.providers._messages import Message as Message
from pitrio.providers._messages import Model as Model
from pitrio.providers._messages import ModelCost as ModelCost
from pitrio.providers._messages import ModelThinkingLevel as ModelThinkingLevel
from pitrio.providers._messages import OnPayload as OnPayload
from pitrio.providers._messages import StopReason as StopReason
from pitrio.providers._messages import StreamOptions as StreamOptions
from pitrio.providers._messages import TextContent as TextContent
from pitrio.providers._messages import ThinkingBudgets as ThinkingBudgets
from pitrio.providers._messages import ThinkingContent as ThinkingContent
from pitrio.providers._messages import ThinkingLevel as ThinkingLevel
from pitrio.providers._messages import Tool as Tool
from pitrio.providers._messages import ToolCall as ToolCall
from pitrio.providers._messages import ToolResultMessage as ToolResultMessage
from pitrio.providers._messages import Transport as Transport
from pitrio.providers._messages import Usage as Usage
from pitrio.providers._messages import UserContentBlock as UserContentBlock
from pitrio.providers._messages import UserMessage as UserMessage
from pitrio.providers._models import ModelCatalogue as ModelCatalogue
from pitrio.providers._models import ModelNotFound as ModelNotFound
from pitrio.providers._models import calculate_cost as calculate_cost
from pitrio.providers._models import clamp_thinking_level as clamp_thinking_level
from pitrio.providers._models import default_catalogue as default_catalogue
from pitrio.providers._models import get_model as get_model
from pitrio.providers._models import get_models as get_models
from pitrio.providers._models import get_providers as get_providers
from pitrio.providers._models import models_are_equal as models_are_equal
from pitrio.providers._models import supported_thinking_levels as supported_thinking_levels
from pitrio.providers._models import with_cost as with_cost
from pitrio.providers._partial import AssistantMessageBuilder as AssistantMessageBuilder
from pitrio.providers._partial import PartialAssistantMessage as PartialAssistantMessage
from pitrio.providers._registry import ApiProvider as ApiProvider
from pitrio.providers._registry import ProviderError as ProviderError
from pitrio.providers._registry import ProviderNotFound as ProviderNotFound
from pitrio.providers._registry import ProviderRegistry as ProviderRegistry
from pitrio.providers._registry import ProviderStreamFn as ProviderStreamFn
from pitrio.providers._registry import default_registry as default_registry
from pitrio.providers._registry import get_api_provider as get_api_provider
from pitrio.providers._registry import register_api_provider as register_api_provider
from pitrio.providers._registry import unregister_api_providers as unregister_api_providers
from pitrio.providers._stream import ASSISTANT_STREAM_BUFFER as ASSISTANT_STREAM_BUFFER
from pitrio.providers._stream import AssistantMessageEventStream as AssistantMessageEventStream
from pitrio.providers._stream import complete as complete
from pitrio.providers._stream import complete_simple as complete_simple
from pitrio.providers._stream import now_ms as now_ms
from pitrio.providers._stream import start_stream as start_stream
from pitrio.providers._stream import stream as stream
from pitrio.providers._stream import stream_simple as stream_simple

__all__ = [
    "ASSISTANT_MESSAGE_EVENT_TYPES",
    "ASSISTANT_STREAM_BUFFER",
    "EMPTY_USAGE",
    "Api",
    "ApiProvider",
    "AssistantContentBlock",
    "AssistantMessage",
    "AssistantMessageBuilder",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "CacheRetention",
    "ContentBlock",
    "Context",
    "Cost",
    "DoneEvent",
    "ErrorEvent",
    "FauxModelDefinition",
    "FauxProvider",
    "FauxState",
    "ImageContent",
    "InputKind",
    "Message",
    "Model",
    "ModelCatalogue",
    "ModelCost",
    "ModelNotFound",
    "ModelThinkingLevel",
    "OnPayload",
    "PartialAssistantMessage",
    "ProviderError",
    "ProviderNotFound",
    "ProviderRegistry",
    "ProviderStreamFn",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingBudgets",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "Transport",
    "Usage",
    "UserContentBlock",
    "UserMessage",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "default_catalogue",
    "default_registry",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "final_message",
    "get_api_provider",
    "get_model",
    "get_models",
    "get_providers",
    "is_terminal",
    "models_are_equal",
    "now_ms",
    "register_api_provider",
    "register_faux_provider",
    "start_stream",
    "stream",
    "stream_simple",
    "supported_thinking_levels",
    "unregister_api_providers",
    "with_cost",
]

_publish(globals(), __all__)
