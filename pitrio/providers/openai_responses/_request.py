"""The ``openai-responses`` provider: OpenAI's Responses API streamed over SSE.

Ports pi-ai 0.73.1's ``openai-responses`` provider and the shared Responses helpers it is built
on. A request is ``POST {baseUrl}/responses`` with ``stream: true`` and ``store: false``; the
answer is a stream of typed events (``response.created``, ``response.output_item.added``,
``response.output_text.delta`` ...) that become pi's assistant-message events.

Replay without server-side state: because nothing is stored at OpenAI, every turn sends the
whole conversation back, and the model's own items must survive the round trip.

* A reasoning item is kept whole, serialised as JSON, in the thinking block's
  ``thinking_signature`` (its ``encrypted_content`` included, requested with
  ``include: ["reasoning.encrypted_content"]``) and sent back verbatim.
* A message item's id and ``phase`` go into the text block's ``text_signature`` as
  ``{"v":1,"id":...,"phase":...}``.
* A function call's id is ``"{call_id}|{item_id}"``: the call id pairs the call with its tool
  result, the item id pairs it with the reasoning item that produced it.

``session_id`` becomes the ``prompt_cache_key`` (and the ``session_id`` /
``x-client-request-id`` headers) unless ``cache_retention`` is ``"none"``; ``"long"`` asks for
24-hour retention.

API-specific options (``StreamOptions.provider_options`` for :func:`stream_openai_responses`):
``reasoning_effort`` (``"minimal"`` ... ``"xhigh"``), ``reasoning_summary`` (``"auto"``,
``"detailed"``, ``"concise"``) and ``service_tier`` (``"auto"``, ``"default"``, ``"flex"``,
``"priority"`` ...; flex and priority change the cost as they change the price). pi's camelCase
spellings (``reasoningEffort`` ...) are accepted too.

Differences from pi 0.73.1, on purpose:

* ``response.incomplete`` (the event OpenAI sends when ``max_output_tokens`` cuts an answer)
  is read like ``response.completed``, so the message gets its usage and ``stopReason:
  "length"``; pi's openai-responses provider ignores the event (its Codex provider does not).
* A body that ends cleanly without any final event is an error ("Stream ended before
  response.completed: the response was terminated early", retryable), not a silent ``stop``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.providers._registry import (
    ProviderError,
)
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages

API: Final = "openai-responses"
OPENAI_TOOL_CALL_PROVIDERS: Final = frozenset({"openai", "openai-codex", "opencode"})
"""Providers whose ``call_id|item_id`` tool-call ids are kept in two parts on replay."""
SIMPLE_MAX_TOKENS_CAP: Final = 32_000
"""``stream_simple`` asks for at most this many output tokens unless told otherwise (as pi)."""
MAX_ID_LENGTH: Final = 64
"""OpenAI rejects item and call ids longer than this."""
UNKNOWN_ERROR: Final = "An unknown error occurred"
NO_FINAL_EVENT: Final = "Stream ended before response.completed: the response was terminated early"
"""("terminated" makes the session's retry treat it as the dropped connection it usually is.)"""

_COPILOT: Final = "github-copilot"
_CLOUDFLARE_GATEWAY: Final = "cloudflare-ai-gateway"
_CLOUDFLARE_PROVIDERS: Final = frozenset({"cloudflare-workers-ai", _CLOUDFLARE_GATEWAY})
_CLOUDFLARE_PLACEHOLDER: Final = re.compile(r"\{([A-Z_][A-Z0-9_]*)\}")
_NOT_ID_CHAR: Final = re.compile(r"[^a-zA-Z0-9_-]")
_MASK32: Final = 0xFFFFFFFF


# --------------------------------------------------------------------------- options


@attrs.frozen(kw_only=True)
class OpenAIResponsesOptions:
    """The options only the Responses API has (pi's ``OpenAIResponsesOptions``).

    They are read from ``StreamOptions.provider_options``.
    """

    reasoning_effort: str | None = None
    """``"minimal"``, ``"low"``, ``"medium"``, ``"high"`` or ``"xhigh"``; mapped through the
    model's ``thinking_level_map``."""
    reasoning_summary: str | None = None
    """``"auto"`` (the default once reasoning is on), ``"detailed"`` or ``"concise"``."""
    service_tier: str | None = None
    """Sent as ``service_tier``; ``"flex"`` halves the cost, ``"priority"`` doubles it."""

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> OpenAIResponsesOptions:
        """Read the options from a mapping with snake_case or pi's camelCase keys."""
        if not options:
            return cls()

        def get(snake: str, camel: str) -> Any:
            return options[snake] if snake in options else options.get(camel)

        return cls(
            reasoning_effort=get("reasoning_effort", "reasoningEffort"),
            reasoning_summary=get("reasoning_summary", "reasoningSummary"),
            service_tier=get("service_tier", "serviceTier"),
        )


@attrs.frozen(kw_only=True)
class ResponsesStreamOptions:
    """How :func:`process_responses_stream` prices a response (pi's stream options)."""

    service_tier: str | None = None
    """The tier the request asked for; the response's own ``service_tier`` wins."""
    resolve_service_tier: Callable[[str | None, str | None], str | None] | None = None
    """``(response tier, request tier) -> tier`` to price with, when the default rule won't do."""
    apply_service_tier_pricing: Callable[[Usage, str | None], Usage] | None = None
    """Returns the usage with its cost adjusted for the tier."""


# --------------------------------------------------------------------------- small helpers


def short_hash(text: str) -> str:
    """Return pi's ``shortHash`` of ``text``: a short, stable base-36 digest used to shorten ids.

    Two 32-bit multiplicative hashes over the UTF-16 code units, as JavaScript computes them,
    so an id shortened here equals the one pi would send.
    """
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    for unit in _utf16_units(text):
        h1 = ((h1 ^ unit) * 2654435761) & _MASK32
        h2 = ((h2 ^ unit) * 1597334677) & _MASK32
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & _MASK32) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & _MASK32)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & _MASK32) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & _MASK32)
    return _base36(h2) + _base36(h1)


def _utf16_units(text: str) -> Iterable[int]:
    if text.isascii():
        return text.encode("ascii")
    data = text.encode("utf-16-le", "surrogatepass")
    return (data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2))


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _encode_text_signature(item_id: str, phase: str | None) -> str:
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return _json_text(payload)


def _parse_text_signature(signature: str | None) -> tuple[str, str | None] | None:
    """Return ``(message id, phase)`` from a text signature (v1 JSON or a bare legacy id)."""
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            parsed = orjson.loads(signature)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


# --------------------------------------------------------------------------- request: messages


def _normalize_id_part(part: str) -> str:
    return _NOT_ID_CHAR.sub("_", part)[:MAX_ID_LENGTH].rstrip("_")


def _tool_call_id_normalizer(
    model: Model, allowed_providers: frozenset[str] | set[str]
) -> Callable[[str, Model, AssistantMessage], str]:
    def normalize(tool_call_id: str, _target: Model, source: AssistantMessage) -> str:
        if model.provider not in allowed_providers or "|" not in tool_call_id:
            return _normalize_id_part(tool_call_id)
        call_id, item_id = tool_call_id.split("|")[:2]
        foreign = source.provider != model.provider or source.api != model.api
        if foreign:
            # A foreign item id means nothing to OpenAI; hash it so it stays stable and short.
            item = f"fc_{short_hash(item_id)}"[:MAX_ID_LENGTH]
        else:
            item = _normalize_id_part(item_id)
        if not item.startswith("fc_"):
            item = _normalize_id_part(f"fc_{item}")
        return f"{_normalize_id_part(call_id)}|{item}"

    return normalize


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{image.mime_type};base64,{image.data}",
    }


def convert_responses_messages(
    model: Model,
    context: Context,
    allowed_tool_call_providers: frozenset[str] | set[str] = OPENAI_TOOL_CALL_PROVIDERS,
    *,
    include_system_prompt: bool = True,
) -> list[dict[str, Any]]:
    """Build the Responses ``input`` list for ``context`` (pi's ``convertResponsesMessages``).

    Runs :func:`~pitrio.providers._transform.transform_messages` first, so messages from other
    providers are made replayable.

    Raises:
        ValueError: a thinking block's signature is not the JSON of a reasoning item.
    """
    messages = transform_messages(
        context.messages, model, _tool_call_id_normalizer(model, allowed_tool_call_providers)
    )
    items: list[dict[str, Any]] = []
    if include_system_prompt and context.system_prompt:
        role = "developer" if model.reasoning else "system"
        items.append({"role": role, "content": sanitize_surrogates(context.system_prompt)})
    images_ok = "image" in model.input
    index = 0  # position among the messages that produced input, for fallback message ids
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                content = [{"type": "input_text", "text": sanitize_surrogates(message.content)}]
            else:
                content = [
                    {"type": "input_text", "text": sanitize_surrogates(block.text)}
                    if isinstance(block, TextContent)
                    else _image_part(block)
                    for block in message.content
                ]
                if not content:
                    continue
            items.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            output = _assistant_items(message, model, index)
            if not output:
                continue
            items.extend(output)
        elif isinstance(message, ToolResultMessage):
            items.append(_tool_result_item(message, images_ok))
        index += 1
    return items


def _assistant_items(message: AssistantMessage, model: Model, index: int) -> list[dict[str, Any]]:
    other_model = (
        message.model != model.id
        and message.provider == model.provider
        and message.api == model.api
    )
    output: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.thinking_signature:
                try:
                    output.append(orjson.loads(block.thinking_signature))
                except orjson.JSONDecodeError as exc:
                    raise ValueError(
                        f"Thinking signature is not a JSON reasoning item: {exc}"
                    ) from exc
        elif isinstance(block, TextContent):
            parsed = _parse_text_signature(block.text_signature)
            msg_id, phase = parsed if parsed else (None, None)
            if not msg_id:
                msg_id = f"msg_{index}"
            elif len(msg_id) > MAX_ID_LENGTH:
                msg_id = f"msg_{short_hash(msg_id)}"
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": sanitize_surrogates(block.text),
                        "annotations": [],
                    }
                ],
                "status": "completed",
                "id": msg_id,
            }
            if phase:
                item["phase"] = phase
            output.append(item)
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            item_id = item_id.split("|")[0]
            # A call from another model of the same API keeps its call id but not its item id:
            # OpenAI checks that an fc_ item follows the reasoning item it was paired with.
            if other_model and item_id.startswith("fc_"):
                item_id = ""
            call: dict[str, Any] = {"type": "function_call"}
            if item_id:
                call["id"] = item_id
            call["call_id"] = call_id
            call["name"] = block.name
            call["arguments"] = _json_text(block.arguments)
            output.append(call)
    return output


def _tool_result_item(message: ToolResultMessage, images_ok: bool) -> dict[str, Any]:
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    has_images = any(isinstance(block, ImageContent) for block in message.content)
    output: str | list[dict[str, Any]]
    if has_images and images_ok:
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "input_text", "text": sanitize_surrogates(text)})
        parts.extend(_image_part(b) for b in message.content if isinstance(b, ImageContent))
        output = parts
    else:
        output = sanitize_surrogates(text if text else "(see attached image)")
    return {
        "type": "function_call_output",
        "call_id": message.tool_call_id.split("|")[0],
        "output": output,
    }


def convert_responses_tools(
    tools: Sequence[Tool], *, strict: bool | None = False
) -> list[dict[str, Any]]:
    """Build the Responses ``tools`` list (function tools, ``strict`` off as in pi)."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": strict,
        }
        for tool in tools
    ]


# --------------------------------------------------------------------------- request: params


def _cache_retention(options: StreamOptions) -> str:
    if options.cache_retention:
        return options.cache_retention
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"


def _compat(model: Model, key: str) -> bool:
    value = (model.compat or {}).get(key)
    return True if value is None else bool(value)


def build_params(
    model: Model, context: Context, options: StreamOptions, api_options: OpenAIResponsesOptions
) -> dict[str, Any]:
    """Build the request body pi sends for ``model`` and ``context``."""
    retention = _cache_retention(options)
    params: dict[str, Any] = {
        "model": model.id,
        "input": convert_responses_messages(model, context, OPENAI_TOOL_CALL_PROVIDERS),
        "stream": True,
    }
    if retention != "none" and options.session_id is not None:
        params["prompt_cache_key"] = options.session_id
    if retention == "long" and _compat(model, "supportsLongCacheRetention"):
        params["prompt_cache_retention"] = "24h"
    params["store"] = False
    if options.max_tokens:
        params["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if api_options.service_tier is not None:
        params["service_tier"] = api_options.service_tier
    if context.tools:
        params["tools"] = convert_responses_tools(context.tools)
    if model.reasoning:
        level_map = model.thinking_level_map or {}
        effort_option = api_options.reasoning_effort
        if effort_option or api_options.reasoning_summary:
            effort = (level_map.get(effort_option) or effort_option) if effort_option else "medium"
            params["reasoning"] = {
                "effort": effort,
                "summary": api_options.reasoning_summary or "auto",
            }
            params["include"] = ["reasoning.encrypted_content"]
        elif model.provider != _COPILOT and not ("off" in level_map and level_map["off"] is None):
            # Reasoning models think by default; say so explicitly when thinking is off.
            params["reasoning"] = {"effort": level_map.get("off") or "none"}
    return params


def _base_url(model: Model) -> str:
    url = model.base_url
    if model.provider not in _CLOUDFLARE_PROVIDERS or "{" not in url:
        return url

    def substitute(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if not value:
            raise ProviderError(
                f"{match.group(1)} is required for provider {model.provider} but is not set."
            )
        return value

    return _CLOUDFLARE_PLACEHOLDER.sub(substitute, url)


def _has_images(messages: Iterable[Any]) -> bool:
    return any(
        isinstance(message, UserMessage | ToolResultMessage)
        and not isinstance(message.content, str)
        and any(isinstance(block, ImageContent) for block in message.content)
        for message in messages
    )


def _build_headers(
    model: Model, context: Context, api_key: str, options: StreamOptions, session_id: str | None
) -> dict[str, str]:
    """The request headers: auth, the model's headers, session headers, then the caller's."""
    merged: dict[str, tuple[str, str | None]] = {}  # lower-cased name -> (name, value)

    def put(values: Mapping[str, str | None]) -> None:
        for name, value in values.items():
            merged[name.lower()] = (name, value)

    put({"Authorization": f"Bearer {api_key}"})
    defaults: dict[str, str | None] = dict(model.headers or {})
    if model.provider == _COPILOT:
        last = context.messages[-1] if context.messages else None
        defaults["X-Initiator"] = "agent" if last is not None and last.role != "user" else "user"
        defaults["Openai-Intent"] = "conversation-edits"
        if _has_images(context.messages):
            defaults["Copilot-Vision-Request"] = "true"
    if session_id:
        if _compat(model, "sendSessionIdHeader"):
            defaults["session_id"] = session_id
        defaults["x-client-request-id"] = session_id
    defaults.update(options.headers or {})
    if model.provider == _CLOUDFLARE_GATEWAY:
        # The gateway takes the key in its own header; a caller's Authorization still passes.
        defaults.setdefault("Authorization", None)
        defaults["cf-aig-authorization"] = f"Bearer {api_key}"
    put(defaults)
    return {name: value for name, value in merged.values() if value is not None}


# --------------------------------------------------------------------------- stream processing
