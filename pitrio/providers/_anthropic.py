"""The ``anthropic-messages`` provider: Anthropic's Messages API streamed over SSE.

Ports pi-ai 0.73.1's ``anthropic`` provider onto the shared HTTP layer (:mod:`._http`):

* **Request.** ``POST {baseUrl}/v1/messages`` with ``stream: true``. The conversation first goes
  through :func:`~pitrio.providers._transform.transform_messages` (tool-call ids from other
  providers are rewritten to Anthropic's ``^[a-zA-Z0-9_-]{1,64}$``), then becomes Anthropic
  message params: consecutive tool results share one user message, images are base64 ``image``
  blocks (in user messages and tool results), signed thinking is replayed as ``thinking``,
  redacted thinking as ``redacted_thinking``, unsigned thinking as plain text.
* **Prompt caching.** With cache retention ``short`` (the default) or ``long`` an ``ephemeral``
  ``cache_control`` breakpoint (``ttl: "1h"`` for ``long``) goes on the system prompt, the last
  tool and the last block of the final user message. ``PI_CACHE_RETENTION=long`` in the
  environment makes ``long`` the default, as in pi.
* **Thinking.** Models whose id names Opus 4.6/4.7 or Sonnet 4.6 use *adaptive* thinking with an
  ``effort``; older reasoning models use a token *budget*. :func:`stream_simple_anthropic`
  maps pi's thinking levels onto either (pi's ``simple-options``); :func:`stream_anthropic`
  takes them from ``StreamOptions.provider_options`` (see :class:`AnthropicOptions`).
* **Authentication.** An API key goes in ``x-api-key``. An OAuth token (it contains
  ``sk-ant-oat``, a Claude subscription) is sent as a bearer token with Claude Code's identity
  headers, system prompt and tool-name casing. GitHub Copilot uses a bearer token and its
  per-request headers; Cloudflare AI Gateway substitutes ``{VAR}`` placeholders of its base URL
  from the environment and authenticates with ``cf-aig-authorization``.
* **Events.** ``message_start`` and ``message_delta`` carry usage (input, output, cache read,
  cache write; cost from the model's prices). Each content block becomes pi's
  ``*_start``/``*_delta``/``*_end`` events; signatures are accumulated without events; a
  ``redacted_thinking`` block becomes a thinking block with ``redacted: true`` whose signature
  holds the opaque payload. An SSE ``error`` event ends the message with its data as the error
  text. Failures are data: the final message has ``stopReason: "error"`` and ``errorMessage``.

Deliberate differences from pi: no ``x-stainless-*`` or SDK ``user-agent`` headers are sent; the
SDK's two automatic retries are replaced by ``StreamOptions.max_retries`` (default 0, see
:mod:`._http`); connection failures are described by :func:`~._http.describe_failure`. A complete
answer ends with ``message_stop``: like pi, a body that ends after ``message_start`` without it
fails with pi's "Anthropic stream ended before message_stop"; unlike pi, so does a body with no
``message_start`` at all (pi reports an empty ``stop``).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pitrio.providers._http import (
    HTTPStatusError,
    InvalidStreamError,
    apply_on_payload,
    describe_failure,
    failure_diagnostics,
    new_message_builder,
    open_sse,
    response_callback,
)
from pitrio.providers._json_parse import parse_json_with_repair, parse_streaming_json
from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingBudgets,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._sse import SSEEvent
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages

API: Final = "anthropic-messages"
DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
MESSAGES_PATH: Final = "/v1/messages"
ANTHROPIC_VERSION: Final = "2023-06-01"
FINE_GRAINED_TOOL_STREAMING_BETA: Final = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA: Final = "interleaved-thinking-2025-05-14"
OAUTH_BETAS: Final = ("claude-code-20250219", "oauth-2025-04-20")
OAUTH_TOKEN_MARKER: Final = "sk-ant-oat"
CLAUDE_CODE_VERSION: Final = "2.1.75"
"""The Claude Code release whose identity OAuth requests carry (pi 0.73.1's value)."""
CLAUDE_CODE_SYSTEM_PROMPT: Final = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_CODE_TOOLS: Final = tuple(
    "Read Write Edit Bash Grep Glob AskUserQuestion EnterPlanMode ExitPlanMode KillShell "
    "NotebookEdit Skill Task TaskOutput TodoWrite WebFetch WebSearch".split()
)
"""Claude Code's tool names: OAuth requests send a tool with one of these names in this casing."""
REDACTED_THINKING_TEXT: Final = "[Reasoning redacted]"
IMAGE_ONLY_PLACEHOLDER: Final = "(see attached image)"
"""Text put before the images of a tool result that has no text (the API wants some text)."""
DEFAULT_THINKING_BUDGET: Final = 1024
"""``budget_tokens`` when thinking is enabled on a budget model without a budget."""
SIMPLE_MAX_TOKENS_CAP: Final = 32_000
"""``stream_simple``'s default ``max_tokens``: the model's limit, but at most this."""
MIN_OUTPUT_TOKENS: Final = 1024
"""Tokens kept for the answer when a thinking budget would fill ``max_tokens``."""
DEFAULT_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
NO_STOP_MESSAGE: Final = "Anthropic stream ended before message_stop"
NO_START_MESSAGE: Final = (
    "Anthropic stream ended before message_start: the response was terminated early"
)
UNKNOWN_ERROR_MESSAGE: Final = "An unknown error occurred"
NO_AUTH_MESSAGE: Final = (
    "Could not resolve authentication method. Expected either apiKey or authToken to be set. "
    'Or for one of the "X-Api-Key" or "Authorization" headers to be explicitly omitted'
)

AnthropicEffort: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
ThinkingDisplay: TypeAlias = Literal["summarized", "omitted"]
ToolChoice: TypeAlias = "Literal['auto', 'any', 'none'] | Mapping[str, Any]"

_MESSAGE_EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
_STOP_REASONS: Final[Mapping[str, StopReason]] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "pause_turn": "stop",  # the caller resubmits to let the model continue
    "stop_sequence": "stop",  # pi sends no stop sequences
    "sensitive": "error",  # flagged by safety filters
}
_ADAPTIVE_MODEL_MARKERS: Final = (
    "opus-4-6",
    "opus-4.6",
    "opus-4-7",
    "opus-4.7",
    "sonnet-4-6",
    "sonnet-4.6",
)
_CLAUDE_CODE_BY_LOWER: Final = {name.lower(): name for name in CLAUDE_CODE_TOOLS}
_TOOL_ID_INVALID: Final = re.compile(r"[^a-zA-Z0-9_-]")
_ENV_PLACEHOLDER: Final = re.compile(r"\{([A-Z_][A-Z0-9_]*)\}")
_OPTION_FIELDS: Final = (
    "thinking_enabled",
    "thinking_budget_tokens",
    "effort",
    "thinking_display",
    "interleaved_thinking",
    "tool_choice",
)
_OPTION_NAMES: Final = {
    **{name: name for name in _OPTION_FIELDS},
    **{re.sub(r"_(\w)", lambda m: m.group(1).upper(), name): name for name in _OPTION_FIELDS},
}


# --------------------------------------------------------------------------- options


@attrs.frozen(kw_only=True)
class AnthropicOptions:
    """The options only this API has (pi's ``AnthropicOptions`` minus the common ones).

    :func:`stream_anthropic` reads them from ``StreamOptions.provider_options``, a mapping whose
    keys may be written in snake_case or in pi's camelCase; other keys are ignored, so one
    ``provider_options`` can serve several providers.
    """

    thinking_enabled: bool | None = None
    """``True``: adaptive or budget thinking; ``False``: ``thinking: disabled`` on reasoning
    models; ``None``: no ``thinking`` field at all."""
    thinking_budget_tokens: int | None = None
    """Budget for non-adaptive models (default :data:`DEFAULT_THINKING_BUDGET`)."""
    effort: AnthropicEffort | None = None
    """Effort of adaptive thinking (``output_config.effort``)."""
    thinking_display: ThinkingDisplay | None = None
    """How thinking is returned; pi asks for ``summarized`` unless told otherwise."""
    interleaved_thinking: bool = True
    """Send the interleaved-thinking beta header (never for adaptive models)."""
    tool_choice: ToolChoice | None = None
    """``"auto"``, ``"any"``, ``"none"`` or a ``{"type": "tool", "name": ...}`` mapping."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> AnthropicOptions:
        """Read the options from a ``provider_options`` mapping (unknown keys ignored)."""
        if not data:
            return cls()
        values = {_OPTION_NAMES[key]: value for key, value in data.items() if key in _OPTION_NAMES}
        if values.get("interleaved_thinking") is None:
            values.pop("interleaved_thinking", None)
        return cls(**values)


def supports_adaptive_thinking(model_id: str) -> bool:
    """Whether the model thinks adaptively (Opus 4.6/4.7, Sonnet 4.6) rather than by budget."""
    return any(marker in model_id for marker in _ADAPTIVE_MODEL_MARKERS)


def map_thinking_level_to_effort(model: Model, level: ThinkingLevel | None) -> str:
    """The adaptive-thinking effort for a pi thinking level (the model's own map wins)."""
    mapped = model.thinking_level_map.get(level) if model.thinking_level_map and level else None
    if isinstance(mapped, str):
        return mapped
    if level in ("minimal", "low"):
        return "low"
    if level == "medium":
        return "medium"
    return "high"


def adjust_max_tokens_for_thinking(
    base_max_tokens: int,
    model_max_tokens: int,
    level: ThinkingLevel,
    budgets: ThinkingBudgets | None = None,
) -> tuple[int, int]:
    """Return ``(max_tokens, thinking_budget)`` for budget thinking at ``level``.

    The budget comes on top of the answer's tokens, capped at the model's limit; when the cap
    leaves no room, the budget shrinks to keep :data:`MIN_OUTPUT_TOKENS` for the answer.
    ``xhigh`` counts as ``high``.
    """
    key = "high" if level == "xhigh" else level
    custom = getattr(budgets, key) if budgets is not None else None
    budget = custom if custom is not None else DEFAULT_THINKING_BUDGETS[key]
    max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_OUTPUT_TOKENS)
    return max_tokens, budget


# --------------------------------------------------------------------------- request body


def normalize_tool_call_id(tool_call_id: str, model: Model, source: AssistantMessage) -> str:
    """Rewrite a foreign tool-call id to Anthropic's pattern ``^[a-zA-Z0-9_-]{1,64}$``."""
    return _TOOL_ID_INVALID.sub("_", tool_call_id)[:64]


def _compat(model: Model, key: str) -> bool:
    value = (model.compat or {}).get(key)
    return True if value is None else bool(value)


def _cache_control(model: Model, retention: str | None) -> dict[str, str] | None:
    if not retention:
        retention = "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "none":
        return None
    if retention == "long" and _compat(model, "supportsLongCacheRetention"):
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _to_claude_code_name(name: str) -> str:
    return _CLAUDE_CODE_BY_LOWER.get(name.lower(), name)


def _from_claude_code_name(name: str, tools: Sequence[Tool] | None) -> str:
    lower = name.lower()
    for tool in tools or ():
        if tool.name.lower() == lower:
            return tool.name
    return name


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    }


def _tool_result_content(content: Sequence[TextContent | ImageContent]) -> Any:
    if not any(isinstance(block, ImageContent) for block in content):
        return sanitize_surrogates(
            "\n".join(block.text for block in content if isinstance(block, TextContent))
        )
    blocks = [
        {"type": "text", "text": sanitize_surrogates(block.text)}
        if isinstance(block, TextContent)
        else _image_block(block)
        for block in content
    ]
    if not any(block["type"] == "text" for block in blocks):
        blocks.insert(0, {"type": "text", "text": IMAGE_ONLY_PLACEHOLDER})
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": _tool_result_content(message.content),
        "is_error": message.is_error,
    }


def _user_param(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        if not message.content.strip():
            return None
        return {"role": "user", "content": sanitize_surrogates(message.content)}
    blocks = [
        _image_block(item)
        if isinstance(item, ImageContent)
        else {"type": "text", "text": sanitize_surrogates(item.text)}
        for item in message.content
        if isinstance(item, ImageContent) or item.text.strip()
    ]
    return {"role": "user", "content": blocks} if blocks else None


def _assistant_param(message: AssistantMessage, is_oauth: bool) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": sanitize_surrogates(block.text)})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif not block.thinking.strip():
                continue
            elif not block.thinking_signature or not block.thinking_signature.strip():
                # Unsigned reasoning (an aborted stream) cannot be replayed as thinking; plain
                # text without <thinking> tags keeps the model from imitating the tags.
                blocks.append({"type": "text", "text": sanitize_surrogates(block.thinking)})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": sanitize_surrogates(block.thinking),
                        "signature": block.thinking_signature,
                    }
                )
        else:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": _to_claude_code_name(block.name) if is_oauth else block.name,
                    "input": block.arguments,
                }
            )
    return {"role": "assistant", "content": blocks} if blocks else None


def convert_messages(
    messages: Sequence[Message],
    model: Model,
    *,
    is_oauth: bool = False,
    cache_control: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Turn a pi conversation into Anthropic ``messages`` params.

    Args:
        messages: the conversation (transformed for ``model`` here).
        model: the target model.
        is_oauth: send tool names in Claude Code's casing.
        cache_control: the breakpoint to put on the last block of a final user message.
    """
    transformed = transform_messages(messages, model, normalize_tool_call_id)
    params: list[dict[str, Any]] = []
    i = 0
    while i < len(transformed):
        message = transformed[i]
        i += 1
        param: dict[str, Any] | None
        if isinstance(message, UserMessage):
            param = _user_param(message)
        elif isinstance(message, AssistantMessage):
            param = _assistant_param(message, is_oauth)
        else:
            # Consecutive tool results travel in one user message (z.ai's endpoint needs it).
            results = [_tool_result(message)]
            while i < len(transformed) and isinstance(transformed[i], ToolResultMessage):
                results.append(_tool_result(transformed[i]))  # type: ignore[arg-type]
                i += 1
            param = {"role": "user", "content": results}
        if param is not None:
            params.append(param)
    if cache_control and params and params[-1]["role"] == "user":
        last = params[-1]
        if isinstance(last["content"], str):
            last["content"] = [
                {"type": "text", "text": last["content"], "cache_control": dict(cache_control)}
            ]
        elif last["content"] and last["content"][-1]["type"] in ("text", "image", "tool_result"):
            last["content"][-1]["cache_control"] = dict(cache_control)
    return params


def convert_tools(
    tools: Sequence[Tool],
    model: Model,
    *,
    is_oauth: bool = False,
    cache_control: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Turn pi tools into Anthropic ``tools`` params (breakpoint on the last one)."""
    eager = _compat(model, "supportsEagerToolInputStreaming")
    params = []
    for index, tool in enumerate(tools):
        schema = tool.parameters
        param: dict[str, Any] = {
            "name": _to_claude_code_name(tool.name) if is_oauth else tool.name,
            "description": tool.description,
        }
        if eager:
            param["eager_input_streaming"] = True
        param["input_schema"] = {
            "type": "object",
            "properties": schema.get("properties") or {},
            "required": schema.get("required") or [],
        }
        if cache_control and index == len(tools) - 1:
            param["cache_control"] = dict(cache_control)
        params.append(param)
    return params


def build_params(
    model: Model,
    context: Context,
    options: StreamOptions,
    anthropic: AnthropicOptions,
    *,
    is_oauth: bool = False,
) -> dict[str, Any]:
    """Build the request body pi sends for this context and these options."""
    cache_control = _cache_control(model, options.cache_retention)
    params: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(
            context.messages, model, is_oauth=is_oauth, cache_control=cache_control
        ),
        "max_tokens": options.max_tokens or model.max_tokens // 3,
        "stream": True,
    }
    system: list[dict[str, Any]] = []
    if is_oauth:
        system.append({"type": "text", "text": CLAUDE_CODE_SYSTEM_PROMPT})
    if context.system_prompt:
        system.append({"type": "text", "text": sanitize_surrogates(context.system_prompt)})
    if system:
        if cache_control:
            for block in system:
                block["cache_control"] = dict(cache_control)
        params["system"] = system
    # Temperature cannot be combined with extended thinking of either kind.
    if options.temperature is not None and not anthropic.thinking_enabled:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = convert_tools(
            context.tools, model, is_oauth=is_oauth, cache_control=cache_control
        )
    if model.reasoning:
        if anthropic.thinking_enabled:
            display = anthropic.thinking_display or "summarized"
            if supports_adaptive_thinking(model.id):
                params["thinking"] = {"type": "adaptive", "display": display}
                if anthropic.effort:
                    params["output_config"] = {"effort": anthropic.effort}
            else:
                params["thinking"] = {
                    "type": "enabled",
                    "budget_tokens": anthropic.thinking_budget_tokens or DEFAULT_THINKING_BUDGET,
                    "display": display,
                }
        elif anthropic.thinking_enabled is False:
            params["thinking"] = {"type": "disabled"}
    if options.metadata:
        user_id = options.metadata.get("user_id")
        if isinstance(user_id, str):
            params["metadata"] = {"user_id": user_id}
    choice = anthropic.tool_choice
    if choice:
        params["tool_choice"] = {"type": choice} if isinstance(choice, str) else dict(choice)
    return params


# --------------------------------------------------------------------------- endpoint


@attrs.frozen
class _Endpoint:
    url: str
    headers: dict[str, str]
    is_oauth: bool
    auth_ok: bool


def _merge_headers(
    target: dict[str, str], nulled: set[str], *sources: Mapping[str, str | None] | None
) -> None:
    """Merge header sources into ``target`` case-insensitively; a ``None`` value removes one."""
    for source in sources:
        for name, value in (source or {}).items():
            key = name.lower()
            if value is None:
                target.pop(key, None)
                nulled.add(key)
            else:
                target[key] = value
                nulled.discard(key)


def _resolve_base_url(model: Model) -> str:
    url = model.base_url or DEFAULT_BASE_URL
    if model.provider != "cloudflare-ai-gateway" or "{" not in url:
        return url

    def substitute(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if not value:
            raise ProviderError(
                f"{match.group(1)} is required for provider {model.provider} but is not set."
            )
        return value

    return _ENV_PLACEHOLDER.sub(substitute, url)


def _copilot_headers(messages: Sequence[Message]) -> dict[str, str]:
    headers = {
        "X-Initiator": "agent" if messages and messages[-1].role != "user" else "user",
        "Openai-Intent": "conversation-edits",
    }
    has_images = any(
        not isinstance(m.content, str) and any(isinstance(b, ImageContent) for b in m.content)
        for m in messages
        if isinstance(m, UserMessage | ToolResultMessage)
    )
    if has_images:
        headers["Copilot-Vision-Request"] = "true"
    return headers


def _endpoint(
    model: Model, context: Context, options: StreamOptions, api_key: str, interleaved: bool
) -> _Endpoint:
    betas = []
    if context.tools and not _compat(model, "supportsEagerToolInputStreaming"):
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if interleaved and not supports_adaptive_thinking(model.id):
        betas.append(INTERLEAVED_THINKING_BETA)
    beta = {"anthropic-beta": ",".join(betas)} if betas else {}
    base_url = _resolve_base_url(model)
    headers: dict[str, str] = {}
    nulled: set[str] = set()
    _merge_headers(
        headers,
        nulled,
        {
            "accept": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            "anthropic-dangerous-direct-browser-access": "true",
        },
    )
    is_oauth = False
    defaults: dict[str, str | None]
    if model.provider == "cloudflare-ai-gateway":
        defaults = {
            "cf-aig-authorization": f"Bearer {api_key}",
            "x-api-key": None,
            "authorization": None,
            **beta,
        }
        _merge_headers(headers, nulled, defaults, model.headers, options.headers)
    elif model.provider == "github-copilot":
        _merge_headers(headers, nulled, {"authorization": f"Bearer {api_key}"})
        _merge_headers(
            headers,
            nulled,
            beta,
            model.headers,
            _copilot_headers(context.messages),
            options.headers,
        )
    elif OAUTH_TOKEN_MARKER in api_key:
        is_oauth = True
        _merge_headers(headers, nulled, {"authorization": f"Bearer {api_key}"})
        defaults = {
            "anthropic-beta": ",".join([*OAUTH_BETAS, *betas]),
            "user-agent": f"claude-cli/{CLAUDE_CODE_VERSION}",
            "x-app": "cli",
        }
        _merge_headers(headers, nulled, defaults, model.headers, options.headers)
    else:
        _merge_headers(
            headers, nulled, {"x-api-key": api_key}, beta, model.headers, options.headers
        )
    auth_ok = bool(
        headers.get("x-api-key")
        or headers.get("authorization")
        or "x-api-key" in nulled
        or "authorization" in nulled
    )
    path = MESSAGES_PATH[1:] if base_url.endswith("/") else MESSAGES_PATH
    return _Endpoint(url=base_url + path, headers=headers, is_oauth=is_oauth, auth_ok=auth_ok)


def sdk_error_message(status: int, body: str) -> str:
    """The text the Anthropic SDK gives an HTTP error: ``"<status> <message or JSON body>"``."""
    message: str | None = None
    try:
        error = orjson.loads(body)
    except orjson.JSONDecodeError:
        error = None
        message = body
    if isinstance(error, dict) and error.get("message"):
        inner = error["message"]
        text = inner if isinstance(inner, str) else orjson.dumps(inner).decode()
    elif error:
        text = orjson.dumps(error).decode()
    else:
        text = message or ""
    return f"{status} {text}" if text else f"{status} status code (no body)"


# --------------------------------------------------------------------------- response stream


class _ResponseReader:
    """Turns the Anthropic events of one response into pi's events on ``out``."""

    __slots__ = (
        "_builder",
        "_is_oauth",
        "_model",
        "_open",
        "_out",
        "_signatures",
        "_tools",
        "saw_start",
    )

    def __init__(
        self,
        model: Model,
        builder: AssistantMessageBuilder,
        out: AssistantMessageEventStream,
        tools: Sequence[Tool] | None,
        is_oauth: bool,
    ) -> None:
        self._model = model
        self._builder = builder
        self._out = out
        self._tools = tools
        self._is_oauth = is_oauth
        self._open: dict[int, int] = {}  # Anthropic block index -> our content index
        self._signatures: dict[int, str] = {}  # content index -> thinking signature so far
        self.saw_start = False

    async def feed(self, sse: SSEEvent) -> bool:
        """Handle one SSE event; return True for ``message_stop``.

        Raises:
            ProviderError: the server sent an ``error`` event, an unknown stop reason, or an
                event that cannot be read.
        """
        if sse.event == "error":
            raise ProviderError(sse.data)
        if sse.event not in _MESSAGE_EVENTS:
            return False  # ping, and event types this port does not know
        try:
            event = parse_json_with_repair(sse.data)
        except ValueError as exc:
            raise InvalidStreamError(
                f"Could not parse Anthropic SSE event {sse.event}: {exc}; data={sse.data}"
            ) from exc
        try:
            if event["type"] == "content_block_delta":
                delta = event["delta"]
                index = self._open.get(event["index"])
                if (
                    index is not None
                    and delta["type"] == "text_delta"
                    and self._builder.kind(index) == "text"
                ):  # `_delta` inline: the per-token path
                    builder = self._builder
                    text = delta["text"]
                    builder.append(index, text)
                    await self._out.emit(
                        TextDeltaEvent(content_index=index, delta=text, partial=builder.snapshot())
                    )
                    return False
            return await self._dispatch(event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidStreamError(
                f"Malformed Anthropic SSE event {sse.event} ({type(exc).__name__}: {exc}): "
                f"{sse.data}"
            ) from exc

    async def _dispatch(self, event: dict[str, Any]) -> bool:
        kind = event["type"]
        if kind == "content_block_delta":
            await self._delta(event["index"], event["delta"])
        elif kind == "content_block_start":
            await self._block_start(event["index"], event["content_block"])
        elif kind == "content_block_stop":
            await self._block_stop(event["index"])
        elif kind == "message_start":
            self.saw_start = True
            message = event["message"]
            self._builder.update(response_id=message["id"])
            usage = message["usage"]
            self._set_usage(
                input=usage.get("input_tokens") or 0,
                output=usage.get("output_tokens") or 0,
                cache_read=usage.get("cache_read_input_tokens") or 0,
                cache_write=usage.get("cache_creation_input_tokens") or 0,
            )
        elif kind == "message_delta":
            reason = event["delta"].get("stop_reason")
            if reason:
                mapped = _STOP_REASONS.get(reason)
                if mapped is None:
                    raise ProviderError(f"Unhandled stop reason: {reason}")
                self._builder.update(stop_reason=mapped)
            usage = event["usage"]
            # Only fields present in the delta change: proxies often leave input_tokens out.
            current = self._builder.usage
            self._set_usage(
                input=_pick(usage.get("input_tokens"), current.input),
                output=_pick(usage.get("output_tokens"), current.output),
                cache_read=_pick(usage.get("cache_read_input_tokens"), current.cache_read),
                cache_write=_pick(usage.get("cache_creation_input_tokens"), current.cache_write),
            )
        elif kind == "message_stop":
            return True
        return False

    def _set_usage(self, *, input: int, output: int, cache_read: int, cache_write: int) -> None:
        usage = Usage(
            input=input,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=input + output + cache_read + cache_write,
        )
        self._builder.update(usage=with_cost(self._model, usage))

    async def _block_start(self, api_index: int, block: dict[str, Any]) -> None:
        builder = self._builder
        kind = block["type"]
        if kind == "text":
            index = builder.add_text()
            self._open[api_index] = index
            await self._out.emit(TextStartEvent(content_index=index, partial=builder.snapshot()))
        elif kind in ("thinking", "redacted_thinking"):
            if kind == "thinking":
                index = builder.add_thinking(signature="")
            else:
                index = builder.add_thinking(
                    REDACTED_THINKING_TEXT, signature=block["data"], redacted=True
                )
            self._open[api_index] = index
            await self._out.emit(
                ThinkingStartEvent(content_index=index, partial=builder.snapshot())
            )
        elif kind == "tool_use":
            name = block["name"]
            if self._is_oauth:
                name = _from_claude_code_name(name, self._tools)
            index = builder.add_tool_call(id=block["id"], name=name)
            self._open[api_index] = index
            await self._out.emit(
                ToolCallStartEvent(content_index=index, partial=builder.snapshot())
            )
        # Server tool blocks (web search, code execution ...) are not part of pi's messages.

    async def _delta(self, api_index: int, delta: dict[str, Any]) -> None:
        index = self._open.get(api_index)
        if index is None:
            return
        builder = self._builder
        kind = builder.kind(index)
        delta_type = delta["type"]
        if delta_type == "text_delta":
            if kind == "text":
                text = delta["text"]
                builder.append(index, text)
                await self._out.emit(
                    TextDeltaEvent(content_index=index, delta=text, partial=builder.snapshot())
                )
        elif delta_type == "thinking_delta":
            if kind == "thinking":
                text = delta["thinking"]
                builder.append(index, text)
                await self._out.emit(
                    ThinkingDeltaEvent(content_index=index, delta=text, partial=builder.snapshot())
                )
        elif delta_type == "input_json_delta":
            if kind == "toolCall":
                text = delta["partial_json"]
                builder.append(index, text)
                await self._out.emit(
                    ToolCallDeltaEvent(content_index=index, delta=text, partial=builder.snapshot())
                )
        elif delta_type == "signature_delta" and kind == "thinking":
            signature = self._signatures.get(index, "") + delta["signature"]
            self._signatures[index] = signature
            builder.set_signature(index, signature)

    async def _block_stop(self, api_index: int) -> None:
        index = self._open.pop(api_index, None)
        if index is None:
            return
        builder = self._builder
        kind = builder.kind(index)
        if kind == "text":
            await self._out.emit(
                TextEndEvent(
                    content_index=index, content=builder.text_of(index), partial=builder.snapshot()
                )
            )
        elif kind == "thinking":
            await self._out.emit(
                ThinkingEndEvent(
                    content_index=index, content=builder.text_of(index), partial=builder.snapshot()
                )
            )
        else:
            builder.set_arguments(index, parse_streaming_json(builder.text_of(index)))
            call = builder.block(index)
            assert isinstance(call, ToolCall)
            await self._out.emit(
                ToolCallEndEvent(content_index=index, tool_call=call, partial=builder.snapshot())
            )


def _pick(value: int | None, current: int) -> int:
    return current if value is None else value


# --------------------------------------------------------------------------- providers


async def _read(
    reader: _ResponseReader, events: AsyncIterator[SSEEvent]
) -> tuple[bool, Exception | None]:
    """Feed every event to ``reader``; return whether ``message_stop`` came, and the failure.

    A failure stops the reading at once; :func:`open_sse` finishes the response's generators.
    """
    stopped = False
    async for sse in events:
        try:
            if await reader.feed(sse):
                stopped = True
        except Exception as exc:  # the message ends with this error
            return stopped, exc
    return stopped, None


async def _stream(
    model: Model,
    context: Context,
    options: StreamOptions,
    anthropic: AnthropicOptions,
    api_key: str,
    out: AssistantMessageEventStream,
) -> None:
    builder = new_message_builder(model)
    out.attach(builder)
    try:
        endpoint = _endpoint(model, context, options, api_key, anthropic.interleaved_thinking)
        body: Any = build_params(model, context, options, anthropic, is_oauth=endpoint.is_oauth)
        body = await apply_on_payload(options, body, model)
        if not endpoint.auth_ok:
            raise ProviderError(NO_AUTH_MESSAGE)
        async with open_sse(
            endpoint.url,
            headers=endpoint.headers,
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            reader = _ResponseReader(model, builder, out, context.tools, endpoint.is_oauth)
            stopped, failure = await _read(reader, events)
        if failure is not None:
            raise failure
        if not stopped:
            raise ProviderError(NO_STOP_MESSAGE if reader.saw_start else NO_START_MESSAGE)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR_MESSAGE)
    except Exception as exc:  # failures are data: the message ends with stopReason "error"
        if isinstance(exc, HTTPStatusError):
            text = sdk_error_message(exc.status, exc.body)
        else:
            text = describe_failure(exc)
        builder.update(
            stop_reason="error",
            error_message=text,
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    reason = builder.stop_reason
    if reason == "length" or reason == "toolUse":
        await out.emit(DoneEvent(reason=reason, message=builder.build()))
    else:
        await out.emit(DoneEvent(reason="stop", message=builder.build()))


async def stream_anthropic(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with the API-specific options (pi-ai ``streamAnthropic``).

    ``options.provider_options`` holds :class:`AnthropicOptions` fields. The key is
    ``options.api_key``, else the provider's environment variable; ``max_tokens`` defaults to a
    third of the model's limit.
    """
    api_key = options.api_key
    if api_key is None:
        api_key = get_env_api_key(model.provider) or ""
    anthropic = AnthropicOptions.from_mapping(options.provider_options)
    await _stream(model, context, options, anthropic, api_key, out)


async def stream_simple_anthropic(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with pi's unified options (pi-ai ``streamSimpleAnthropic``).

    ``options.reasoning`` selects adaptive thinking with an effort, or a thinking budget taken
    from ``options.thinking_budgets`` (pi's defaults otherwise) and added to ``max_tokens``.

    Raises:
        ProviderError: no API key in the options or the environment (the stream driver turns
            it into the ``error`` event).
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        raise ProviderError(f"No API key for provider: {model.provider}")
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    base = attrs.evolve(options, api_key=api_key, max_tokens=max_tokens)
    level = options.reasoning
    if not level:
        anthropic = AnthropicOptions(thinking_enabled=False)
    elif supports_adaptive_thinking(model.id):
        effort: Any = map_thinking_level_to_effort(model, level)
        anthropic = AnthropicOptions(thinking_enabled=True, effort=effort)
    else:
        adjusted, budget = adjust_max_tokens_for_thinking(
            max_tokens or 0, model.max_tokens, level, options.thinking_budgets
        )
        base = attrs.evolve(base, max_tokens=adjusted)
        anthropic = AnthropicOptions(thinking_enabled=True, thinking_budget_tokens=budget)
    await _stream(model, context, base, anthropic, api_key, out)


ANTHROPIC_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_anthropic, stream_simple=stream_simple_anthropic
)
"""The ``anthropic-messages`` provider."""


def register_anthropic(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``anthropic-messages`` provider in ``registry``."""
    registry.register(ANTHROPIC_PROVIDER)
