"""pi-ai: message types, models, the provider registry, streaming providers, faux.

This layer knows nothing about agents. It imports only :mod:`pitrio.codec` and
:mod:`pitrio.channels`; ``actors``, ``sessions`` and everything above import it.
"""

from pitrio._publish import publish as _publish
from pitrio.providers._api import complete as complete
from pitrio.providers._api import complete_simple as complete_simple
from pitrio.providers._api import start_stream as start_stream
from pitrio.providers._api import stream as stream
from pitrio.providers._api import stream_simple as stream_simple
from pitrio.providers._builtins import BUILTIN_PROVIDERS as BUILTIN_PROVIDERS
from pitrio.providers._builtins import register_builtin_providers as register_builtin_providers
from pitrio.providers._custom_models import CustomModels as CustomModels
from pitrio.providers._custom_models import ModelsJsonError as ModelsJsonError
from pitrio.providers._custom_models import RequestAuth as RequestAuth
from pitrio.providers._custom_models import RequestAuthError as RequestAuthError
from pitrio.providers._custom_models import load_models_json as load_models_json
from pitrio.providers._custom_models import parse_models_json as parse_models_json
from pitrio.providers._custom_models import resolve_config_value as resolve_config_value
from pitrio.providers._env_keys import ENV_API_KEY_VARS as ENV_API_KEY_VARS
from pitrio.providers._env_keys import find_env_keys as find_env_keys
from pitrio.providers._env_keys import get_env_api_key as get_env_api_key
from pitrio.providers._events import ASSISTANT_MESSAGE_EVENT_TYPES as ASSISTANT_MESSAGE_EVENT_TYPES
from pitrio.providers._events import DELTA_FACTORIES as DELTA_FACTORIES
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
from pitrio.providers._http import HTTPStatusError as HTTPStatusError
from pitrio.providers._http import InvalidStreamError as InvalidStreamError
from pitrio.providers._http import NotAnEventStreamError as NotAnEventStreamError
from pitrio.providers._http import StreamStalledError as StreamStalledError
from pitrio.providers._http import current_http_client as current_http_client
from pitrio.providers._http import make_http_client as make_http_client
from pitrio.providers._http import open_http_client as open_http_client
from pitrio.providers._json_parse import parse_streaming_json as parse_streaming_json
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
from pitrio.providers._messages import OnResponse as OnResponse
from pitrio.providers._messages import ProviderResponse as ProviderResponse
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
from pitrio.providers._overflow import OVERFLOW_PATTERNS as OVERFLOW_PATTERNS
from pitrio.providers._overflow import get_overflow_patterns as get_overflow_patterns
from pitrio.providers._overflow import is_context_overflow as is_context_overflow
from pitrio.providers._partial import AssistantMessageBuilder as AssistantMessageBuilder
from pitrio.providers._partial import PartialAssistantMessage as PartialAssistantMessage
from pitrio.providers._registry import ApiProvider as ApiProvider
from pitrio.providers._registry import ProviderError as ProviderError
from pitrio.providers._registry import ProviderNotFound as ProviderNotFound
from pitrio.providers._registry import ProviderRegistry as ProviderRegistry
from pitrio.providers._registry import default_registry as default_registry
from pitrio.providers._registry import get_api_provider as get_api_provider
from pitrio.providers._registry import register_api_provider as register_api_provider
from pitrio.providers._registry import unregister_api_providers as unregister_api_providers
from pitrio.providers._sse import SSEDecoder as SSEDecoder
from pitrio.providers._sse import SSEEvent as SSEEvent
from pitrio.providers._stream import ABORTED_MESSAGE as ABORTED_MESSAGE
from pitrio.providers._stream import ASSISTANT_STREAM_BUFFER as ASSISTANT_STREAM_BUFFER
from pitrio.providers._stream import AssistantMessageEventStream as AssistantMessageEventStream
from pitrio.providers._stream import ProviderStreamFn as ProviderStreamFn
from pitrio.providers._stream import now_ms as now_ms
from pitrio.providers._transform import NO_RESULT_PROVIDED as NO_RESULT_PROVIDED
from pitrio.providers._transform import NormalizeToolCallId as NormalizeToolCallId
from pitrio.providers._transform import transform_messages as transform_messages
from pitrio.providers.anthropic._provider import ANTHROPIC_PROVIDER as ANTHROPIC_PROVIDER
from pitrio.providers.anthropic._provider import register_anthropic as register_anthropic
from pitrio.providers.anthropic._provider import stream_anthropic as stream_anthropic
from pitrio.providers.anthropic._provider import stream_simple_anthropic as stream_simple_anthropic
from pitrio.providers.anthropic._request import AnthropicOptions as AnthropicOptions
from pitrio.providers.faux import DEFAULT_YIELD_EVERY as DEFAULT_YIELD_EVERY
from pitrio.providers.faux import FauxModelDefinition as FauxModelDefinition
from pitrio.providers.faux import FauxProvider as FauxProvider
from pitrio.providers.faux import FauxState as FauxState
from pitrio.providers.faux import faux_assistant_message as faux_assistant_message
from pitrio.providers.faux import faux_text as faux_text
from pitrio.providers.faux import faux_thinking as faux_thinking
from pitrio.providers.faux import faux_tool_call as faux_tool_call
from pitrio.providers.faux import register_faux_provider as register_faux_provider
from pitrio.providers.google._provider import register_google as register_google
from pitrio.providers.openai_completions._compat import (
    OPENAI_COMPATIBLE_PRESETS as OPENAI_COMPATIBLE_PRESETS,
)
from pitrio.providers.openai_completions._compat import CompletionsCompat as CompletionsCompat
from pitrio.providers.openai_completions._compat import (
    OpenAICompatiblePreset as OpenAICompatiblePreset,
)
from pitrio.providers.openai_completions._compat import UnknownPreset as UnknownPreset
from pitrio.providers.openai_completions._compat import detect_compat as detect_compat
from pitrio.providers.openai_completions._compat import get_compat as get_compat
from pitrio.providers.openai_completions._compat import get_preset as get_preset
from pitrio.providers.openai_completions._compat import (
    openai_compatible_model as openai_compatible_model,
)
from pitrio.providers.openai_completions._provider import (
    OPENAI_COMPLETIONS_PROVIDER as OPENAI_COMPLETIONS_PROVIDER,
)
from pitrio.providers.openai_completions._provider import (
    register_openai_completions as register_openai_completions,
)
from pitrio.providers.openai_completions._provider import (
    stream_openai_completions as stream_openai_completions,
)
from pitrio.providers.openai_completions._provider import (
    stream_simple_openai_completions as stream_simple_openai_completions,
)
from pitrio.providers.openai_responses._provider import (
    OPENAI_RESPONSES_PROVIDER as OPENAI_RESPONSES_PROVIDER,
)
from pitrio.providers.openai_responses._provider import (
    register_openai_responses as register_openai_responses,
)
from pitrio.providers.openai_responses._provider import (
    stream_openai_responses as stream_openai_responses,
)
from pitrio.providers.openai_responses._provider import (
    stream_simple_openai_responses as stream_simple_openai_responses,
)
from pitrio.providers.openai_responses._request import (
    OpenAIResponsesOptions as OpenAIResponsesOptions,
)

__all__ = [
    "ABORTED_MESSAGE",
    "ANTHROPIC_PROVIDER",
    "ASSISTANT_MESSAGE_EVENT_TYPES",
    "ASSISTANT_STREAM_BUFFER",
    "BUILTIN_PROVIDERS",
    "DEFAULT_YIELD_EVERY",
    "DELTA_FACTORIES",
    "EMPTY_USAGE",
    "ENV_API_KEY_VARS",
    "NO_RESULT_PROVIDED",
    "OPENAI_COMPATIBLE_PRESETS",
    "OPENAI_COMPLETIONS_PROVIDER",
    "OPENAI_RESPONSES_PROVIDER",
    "OVERFLOW_PATTERNS",
    "AnthropicOptions",
    "Api",
    "ApiProvider",
    "AssistantContentBlock",
    "AssistantMessage",
    "AssistantMessageBuilder",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "CacheRetention",
    "CompletionsCompat",
    "ContentBlock",
    "Context",
    "Cost",
    "CustomModels",
    "DoneEvent",
    "ErrorEvent",
    "FauxModelDefinition",
    "FauxProvider",
    "FauxState",
    "HTTPStatusError",
    "ImageContent",
    "InputKind",
    "InvalidStreamError",
    "Message",
    "Model",
    "ModelCatalogue",
    "ModelCost",
    "ModelNotFound",
    "ModelThinkingLevel",
    "ModelsJsonError",
    "NormalizeToolCallId",
    "NotAnEventStreamError",
    "OnPayload",
    "OnResponse",
    "OpenAICompatiblePreset",
    "OpenAIResponsesOptions",
    "PartialAssistantMessage",
    "ProviderError",
    "ProviderNotFound",
    "ProviderRegistry",
    "ProviderResponse",
    "ProviderStreamFn",
    "RequestAuth",
    "RequestAuthError",
    "SSEDecoder",
    "SSEEvent",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "StreamStalledError",
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
    "UnknownPreset",
    "Usage",
    "UserContentBlock",
    "UserMessage",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "current_http_client",
    "default_catalogue",
    "default_registry",
    "detect_compat",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "final_message",
    "find_env_keys",
    "get_api_provider",
    "get_compat",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_overflow_patterns",
    "get_preset",
    "get_providers",
    "is_context_overflow",
    "is_terminal",
    "load_models_json",
    "make_http_client",
    "models_are_equal",
    "now_ms",
    "open_http_client",
    "openai_compatible_model",
    "parse_models_json",
    "parse_streaming_json",
    "register_anthropic",
    "register_api_provider",
    "register_builtin_providers",
    "register_faux_provider",
    "register_google",
    "register_openai_completions",
    "register_openai_responses",
    "resolve_config_value",
    "start_stream",
    "stream",
    "stream_anthropic",
    "stream_openai_completions",
    "stream_openai_responses",
    "stream_simple",
    "stream_simple_anthropic",
    "stream_simple_openai_completions",
    "stream_simple_openai_responses",
    "supported_thinking_levels",
    "transform_messages",
    "unregister_api_providers",
    "with_cost",
]

_publish(globals(), __all__)
register_builtin_providers(default_registry)
