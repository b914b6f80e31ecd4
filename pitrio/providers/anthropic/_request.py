"""The ``anthropic-messages`` provider: Anthropic's Messages API streamed over SSE.

Kept in one module: one body builder: messages, tools, thinking and auth headers
read the same model flags.

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
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs

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
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._registry import (
    ProviderError,
)
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
