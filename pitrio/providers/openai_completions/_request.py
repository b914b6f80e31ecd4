"""The ``openai-completions`` provider: OpenAI Chat Completions streaming, as pi-ai 0.73.1 does it.

One ``POST {baseUrl}/chat/completions`` with ``stream: true``; the answer is a
``text/event-stream`` of ``chat.completion.chunk`` objects ending with ``data: [DONE]``. The
provider turns the chunks into pi's event protocol the way pi's ``openai-completions`` provider
does:

* one text block and one thinking block at most, each opened by its first non-empty delta;
  reasoning is read from the first non-empty of ``reasoning_content``, ``reasoning`` and
  ``reasoning_text``, and that field's name becomes the block's ``thinkingSignature`` so the
  reasoning goes back in the same field when the conversation is replayed;
* tool calls keyed by their stream ``index`` (or id), every ``tool_calls`` entry giving a
  ``toolcall_delta`` (its ``delta`` may be empty), arguments shown parsed as they stream;
* OpenRouter's encrypted ``reasoning_details`` kept as the matching tool call's
  ``thoughtSignature`` and sent back as ``reasoning_details``;
* every block's ``*_end`` event only once the stream is over, in block order;
* usage from ``usage`` (or ``choices[0].usage``), cache reads and writes separated, cost from
  the model's prices; ``finish_reason`` mapped to pi's stop reasons.

The request body honours the compatibility flags of
:mod:`pitrio.providers.openai_completions._compat`
(system prompt role, max-tokens field, reasoning parameters, tool-result names, ``store``,
``stream_options``, Anthropic-style cache markers ...).

Failures are data: an HTTP error status gives ``"<status> <error.message>"`` as the OpenAI SDK
words it, a dropped connection or invalid event its own message, all ending the stream with
``stopReason: "error"``; nothing is raised. Cancellation (abort) propagates and the stream
driver ends the message with ``"aborted"``.

A complete answer carries a choice with a ``finish_reason`` (the real API always sends one,
then the usage chunk, then ``[DONE]``). A body that ends with neither a ``finish_reason`` nor
``[DONE]`` is an error, "Stream ended without finish_reason ...: the response was terminated
early"; pi 0.73.1, like the OpenAI SDK, takes it for a normal ``stop``. Either marker alone is
accepted, since compatible servers exist that omit ``[DONE]`` or never set a finish reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import orjson

from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.providers._http import (
    HTTPStatusError,
    describe_failure,
)
from pitrio.providers._http import open_sse as open_sse
from pitrio.providers._http import sse_json as sse_json
from pitrio.providers._messages import (
    AssistantMessage,
    CacheRetention,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._registry import (
    ProviderError,
)
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages
from pitrio.providers.openai_completions._compat import (
    NO_KEY_NEEDED,
    CompletionsCompat,
    get_compat,
    mistral_tool_call_id_normalizer,
)

REASONING_FIELDS: Final = ("reasoning_content", "reasoning", "reasoning_text")
"""Delta fields servers put reasoning in; the first non-empty one is used (pi's order)."""
SIMPLE_MAX_TOKENS_CAP: Final = 32_000
"""``stream_simple`` asks for ``min(model.max_tokens, 32000)`` unless told otherwise (pi)."""
TOOL_RESULT_IMAGE_PLACEHOLDER: Final = "(see attached image)"
TOOL_RESULT_IMAGES_INTRO: Final = "Attached image(s) from tool result:"
BRIDGING_ASSISTANT_TEXT: Final = "I have processed the tool results."
OPENAI_TOOL_CALL_ID_LIMIT: Final = 40
NO_FINISH_MESSAGE: Final = (
    "Stream ended without finish_reason or [DONE]: the response was terminated early"
)
"""The ``errorMessage`` of a body that ends before the answer did ("terminated" makes the
session's retry treat it as the dropped connection it usually is)."""

_NOT_ID_CHAR: Final = re.compile(r"[^a-zA-Z0-9_-]")


class MissingApiKey(ProviderError):
    """No API key was given or found in the environment."""


class StreamErrorChunk(ProviderError):
    """The server sent an ``{"error": ...}`` object inside the event stream."""


class FinishReasonError(ProviderError):
    """The response finished with a reason pi treats as an error (``content_filter`` ...)."""


class TruncatedStreamError(ProviderError):
    """The body ended with neither a ``finish_reason`` nor ``[DONE]``."""


# --------------------------------------------------------------------------- entry points


def _done_reason(message: AssistantMessage) -> Literal["stop", "length", "toolUse"]:
    reason = message.stop_reason
    assert reason in ("stop", "length", "toolUse"), reason
    return reason


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, HTTPStatusError):
        try:
            parsed = orjson.loads(exc.body) if exc.body else None
        except orjson.JSONDecodeError:
            return _api_error_text(exc.status, None, exc.body or None)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        return _api_error_text(exc.status, error, None)
    return describe_failure(exc)


def _api_error_text(status: int | None, error: Any, message: str | None) -> str:
    """Word an API error as the OpenAI SDK does (``APIError.makeMessage``), plus OpenRouter's
    ``metadata.raw`` detail as pi appends it."""
    text: str | None
    if isinstance(error, dict) and error.get("message"):
        inner = error["message"]
        text = inner if isinstance(inner, str) else orjson.dumps(inner).decode()
    elif error:
        text = orjson.dumps(error).decode()
    else:
        text = message
    if status and text:
        result = f"{status} {text}"
    elif status:
        result = f"{status} status code (no body)"
    else:
        result = text or "(no status code or body)"
    if isinstance(error, dict):
        metadata = error.get("metadata")
        raw = metadata.get("raw") if isinstance(metadata, dict) else None
        if raw:
            result += f"\n{raw if isinstance(raw, str) else orjson.dumps(raw).decode()}"
    return result


def chat_completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, joined as the OpenAI SDK joins paths."""
    return (
        base_url[:-1] + "/chat/completions"
        if base_url.endswith("/")
        else (base_url + "/chat/completions")
    )


def resolve_cache_retention(retention: CacheRetention | None) -> CacheRetention:
    """The option, else ``"long"`` when ``PI_CACHE_RETENTION=long``, else ``"short"`` (pi)."""
    if retention:
        return retention
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"


def build_headers(
    model: Model,
    api_key: str,
    option_headers: Mapping[str, str] | None,
    session_id: str | None,
    compat: CompletionsCompat,
) -> dict[str, str]:
    """Request headers: auth, the model's headers, session affinity, then the option headers."""
    headers: dict[str, str] = {}
    if api_key != NO_KEY_NEEDED:
        headers["Authorization"] = f"Bearer {api_key}"
    headers.update(model.headers or {})
    if session_id and compat.send_session_affinity_headers:
        headers["session_id"] = session_id
        headers["x-client-request-id"] = session_id
        headers["x-session-affinity"] = session_id
    headers.update(option_headers or {})
    return headers


# --------------------------------------------------------------------------- the response


def build_params(
    model: Model,
    context: Context,
    *,
    compat: CompletionsCompat | None = None,
    cache_retention: CacheRetention = "short",
    session_id: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    reasoning_effort: str | None = None,
    tool_choice: Any = None,
) -> dict[str, Any]:
    """Build the request body pi sends for ``context`` (before ``on_payload``)."""
    compat = compat or get_compat(model)
    messages = convert_messages(model, context, compat)
    cache_control = _cache_control(compat, cache_retention)
    long_retention = cache_retention == "long" and compat.supports_long_cache_retention
    params: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if (
        ("api.openai.com" in model.base_url and cache_retention != "none") or long_retention
    ) and session_id is not None:
        params["prompt_cache_key"] = session_id
    if long_retention:
        params["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming:
        params["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        params["store"] = False
    if max_tokens:
        params[compat.max_tokens_field] = max_tokens
    if temperature is not None:
        params["temperature"] = temperature
    if context.tools:
        params["tools"] = convert_tools(context.tools, compat)
        if compat.zai_tool_stream:
            params["tool_stream"] = True
    elif _has_tool_history(context.messages):
        # Proxies in front of Anthropic require `tools` whenever the history has tool calls.
        params["tools"] = []
    if cache_control is not None:
        _apply_cache_control(messages, params.get("tools"), cache_control)
    if tool_choice:
        params["tool_choice"] = tool_choice
    _apply_thinking(params, model, compat, reasoning_effort)
    explicit = model.compat or {}
    routing = explicit.get("openRouterRouting")
    if "openrouter.ai" in model.base_url and routing is not None:
        params["provider"] = routing
    gateway = explicit.get("vercelGatewayRouting")
    if "ai-gateway.vercel.sh" in model.base_url and gateway is not None:
        selected = {key: gateway[key] for key in ("only", "order") if gateway.get(key)}
        if selected:
            params["providerOptions"] = {"gateway": selected}
    return params


def _apply_thinking(
    params: dict[str, Any], model: Model, compat: CompletionsCompat, effort: str | None
) -> None:
    level_map = model.thinking_level_map or {}

    def mapped(level: str) -> Any:
        value = level_map.get(level)
        return level if value is None else value

    fmt = compat.thinking_format
    if not model.reasoning:
        return
    if fmt in ("zai", "qwen"):
        params["enable_thinking"] = bool(effort)
    elif fmt == "qwen-chat-template":
        params["chat_template_kwargs"] = {
            "enable_thinking": bool(effort),
            "preserve_thinking": True,
        }
    elif fmt == "deepseek":
        params["thinking"] = {"type": "enabled" if effort else "disabled"}
        if effort:
            params["reasoning_effort"] = mapped(effort)
    elif fmt == "openrouter":
        if effort:
            params["reasoning"] = {"effort": mapped(effort)}
        elif model.thinking_level_map is None or "off" not in level_map:
            params["reasoning"] = {"effort": "none"}
        elif level_map["off"] is not None:
            params["reasoning"] = {"effort": level_map["off"]}
    elif compat.supports_reasoning_effort:
        if effort:
            params["reasoning_effort"] = mapped(effort)
        elif isinstance(level_map.get("off"), str):
            params["reasoning_effort"] = level_map["off"]


def _has_tool_history(messages: Sequence[Message]) -> bool:
    for message in messages:
        if isinstance(message, ToolResultMessage):
            return True
        if isinstance(message, AssistantMessage) and message.tool_calls():
            return True
    return False


def convert_tools(tools: Sequence[Tool], compat: CompletionsCompat) -> list[dict[str, Any]]:
    """Tool definitions as ``{"type": "function", "function": {...}}``."""
    converted = []
    for tool in tools:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        }
        if compat.supports_strict_mode:
            function["strict"] = False
        converted.append({"type": "function", "function": function})
    return converted


def _cache_control(compat: CompletionsCompat, retention: CacheRetention) -> dict[str, str] | None:
    if compat.cache_control_format != "anthropic" or retention == "none":
        return None
    control = {"type": "ephemeral"}
    if retention == "long" and compat.supports_long_cache_retention:
        control["ttl"] = "1h"
    return control


def _apply_cache_control(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, control: dict[str, str]
) -> None:
    """Anthropic-style markers: system prompt, last tool, last user/assistant text."""
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, control)
            break
    if tools:
        tools[-1]["cache_control"] = control
    for message in reversed(messages):
        if message["role"] in ("user", "assistant") and _mark_text(message, control):
            break


def _mark_text(message: dict[str, Any], control: dict[str, str]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": control}]
        return True
    if not isinstance(content, list):
        return False
    for part in reversed(content):
        if isinstance(part, dict) and part.get("type") == "text":
            part["cache_control"] = control
            return True
    return False


def _tool_call_id_normalizer(model: Model, compat: CompletionsCompat) -> Callable[..., str]:
    mistral = mistral_tool_call_id_normalizer() if compat.requires_mistral_tool_ids else None

    def normalize(tool_call_id: str, target: Model, source: AssistantMessage) -> str:
        if mistral is not None:
            return mistral(tool_call_id)
        if "|" in tool_call_id:
            # OpenAI Responses ids are "<call_id>|<item id>"; only the call id fits here.
            call_id = tool_call_id.split("|", 1)[0]
            return _NOT_ID_CHAR.sub("_", call_id)[:OPENAI_TOOL_CALL_ID_LIMIT]
        if model.provider == "openai":
            return tool_call_id[:OPENAI_TOOL_CALL_ID_LIMIT]
        return tool_call_id

    return normalize


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def convert_messages(
    model: Model, context: Context, compat: CompletionsCompat | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array pi sends for ``context`` (pi's ``convertMessages``)."""
    compat = compat or get_compat(model)
    history = transform_messages(context.messages, model, _tool_call_id_normalizer(model, compat))
    params: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        params.append({"role": role, "content": sanitize_surrogates(context.system_prompt)})
    last_role: str | None = None
    i = 0
    while i < len(history):
        message = history[i]
        i += 1
        if (
            compat.requires_assistant_after_tool_result
            and last_role == "toolResult"
            and isinstance(message, UserMessage)
        ):
            params.append({"role": "assistant", "content": BRIDGING_ASSISTANT_TEXT})
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                params.append({"role": "user", "content": sanitize_surrogates(message.content)})
            else:
                parts = [
                    {"type": "text", "text": sanitize_surrogates(block.text)}
                    if isinstance(block, TextContent)
                    else _image_part(block)
                    for block in message.content
                ]
                if not parts:
                    continue
                params.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            converted = _convert_assistant(message, model, compat)
            if converted is None:
                continue
            params.append(converted)
        elif isinstance(message, ToolResultMessage):
            i -= 1
            image_parts: list[dict[str, Any]] = []
            while i < len(history) and isinstance(history[i], ToolResultMessage):
                result = history[i]
                assert isinstance(result, ToolResultMessage)
                i += 1
                text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
                has_images = any(isinstance(b, ImageContent) for b in result.content)
                tool_message: dict[str, Any] = {
                    "role": "tool",
                    "content": sanitize_surrogates(text or TOOL_RESULT_IMAGE_PLACEHOLDER),
                    "tool_call_id": result.tool_call_id,
                }
                if compat.requires_tool_result_name and result.tool_name:
                    tool_message["name"] = result.tool_name
                params.append(tool_message)
                if has_images and "image" in model.input:
                    image_parts.extend(
                        _image_part(b) for b in result.content if isinstance(b, ImageContent)
                    )
            if image_parts:
                if compat.requires_assistant_after_tool_result:
                    params.append({"role": "assistant", "content": BRIDGING_ASSISTANT_TEXT})
                params.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": TOOL_RESULT_IMAGES_INTRO},
                            *image_parts,
                        ],
                    }
                )
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        last_role = message.role
    return params


def _convert_assistant(
    message: AssistantMessage, model: Model, compat: CompletionsCompat
) -> dict[str, Any] | None:
    converted: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requires_assistant_after_tool_result else None,
    }
    text_parts = [
        {"type": "text", "text": sanitize_surrogates(block.text)}
        for block in message.content
        if isinstance(block, TextContent) and block.text.strip()
    ]
    text = "".join(part["text"] for part in text_parts)
    thinking = [
        block
        for block in message.content
        if isinstance(block, ThinkingContent) and block.thinking.strip()
    ]
    if thinking and compat.requires_thinking_as_text:
        # Plain text, no tags: tagged reasoning tends to be imitated by the model.
        joined = "\n\n".join(sanitize_surrogates(block.thinking) for block in thinking)
        converted["content"] = [{"type": "text", "text": joined}, *text_parts]
    else:
        # A plain string: some servers echo a list of parts back literally.
        if text:
            converted["content"] = text
        signature = thinking[0].thinking_signature if thinking else None
        if signature:
            # The reasoning goes back in the field it came in (reasoning_content ...).
            converted[signature] = "\n".join(block.thinking for block in thinking)
    calls = message.tool_calls()
    if calls:
        converted["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": PROVIDERS_CODEC.dumps(call.arguments).decode(),
                },
            }
            for call in calls
        ]
        details = [
            detail
            for detail in (_parse_signature(call.thought_signature) for call in calls)
            if detail
        ]
        if details:
            converted["reasoning_details"] = details
    if (
        compat.requires_reasoning_content_on_assistant_messages
        and model.reasoning
        and "reasoning_content" not in converted
    ):
        converted["reasoning_content"] = ""
    content = converted["content"]
    if not content and "tool_calls" not in converted:
        return None  # servers reject an assistant message with neither content nor tool calls
    return converted


def _parse_signature(signature: str | None) -> Any:
    if not signature:
        return None
    try:
        return orjson.loads(signature)
    except orjson.JSONDecodeError:
        return None


# --------------------------------------------------------------------------- registration
