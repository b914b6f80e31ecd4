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
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs
import orjson

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import (
    DoneEvent,
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
    InvalidStreamError,
    apply_on_payload,
    emit_failure,
    new_message_builder,
    open_sse,
    response_callback,
    sse_json,
)
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import (
    AssistantContentBlock,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.providers._models import calculate_cost, clamp_thinking_level
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

__all__ = [
    "API",
    "OPENAI_RESPONSES_PROVIDER",
    "OpenAIResponsesOptions",
    "ResponsesEventReader",
    "ResponsesStreamOptions",
    "build_params",
    "convert_responses_messages",
    "convert_responses_tools",
    "process_responses_stream",
    "read_responses_sse",
    "register_openai_responses",
    "short_hash",
    "simple_responses_options",
    "stream_openai_responses",
    "stream_simple_openai_responses",
    "tier_pricing",
]

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


def _map_stop_reason(status: Any) -> StopReason:
    if not status:
        return "stop"
    if status in ("completed", "in_progress", "queued"):
        return "stop"
    if status == "incomplete":
        return "length"
    if status in ("failed", "cancelled"):
        return "error"
    raise ProviderError(f"Unhandled stop reason: {status}")


def _js_str(data: Mapping[str, Any], key: str) -> str:
    """``String(data[key])`` as JavaScript writes it in a template (for pi's error texts)."""
    if key not in data:
        return "undefined"
    value = data[key]
    return "null" if value is None else str(value)


def _usage_from(raw: Mapping[str, Any]) -> Usage:
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    # input_tokens counts the cached tokens too; pi reports them apart.
    return Usage(
        input=(raw.get("input_tokens") or 0) - cached,
        output=raw.get("output_tokens") or 0,
        cache_read=cached,
        cache_write=0,
        total_tokens=raw.get("total_tokens") or 0,
    )


class ResponsesEventReader:
    """pi's ``processResponsesStream`` as an object that is fed one decoded event at a time.

    It turns the Responses events into pi's block events on ``out`` and sets the usage, stop
    reason and response id on ``builder``. ``start`` and the terminal event are the caller's.
    Providers that receive the events some other way (a websocket) can drive it directly.

    Args:
        builder: the message being built.
        out: where the block events go.
        model: prices the usage.
        options: service-tier pricing.
    """

    def __init__(
        self,
        builder: AssistantMessageBuilder,
        out: AssistantMessageEventStream,
        model: Model,
        options: ResponsesStreamOptions | None = None,
    ) -> None:
        self.builder = builder
        self.out = out
        self.model = model
        self.options = options or ResponsesStreamOptions()
        self.finished = False
        """Whether ``response.completed`` (or ``response.incomplete``) has arrived."""
        # What pi's loop calls currentItem / currentBlock.
        self._item_type: str | None = None
        self._block: int | None = None
        self._has_summary_part = False
        self._last_part: str | None = None

    def _open(self, kind: str) -> int | None:
        """The index of the open block if it is a ``kind`` block, else ``None``."""
        block = self._block
        if block is None or self.builder.kind(block) != kind:
            return None
        return block

    async def handle(self, event: Mapping[str, Any]) -> None:
        """Process one event.

        Raises:
            ProviderError: an ``error`` or ``response.failed`` event, or an unknown status.
            InvalidStreamError: an event that lacks the fields its type requires.
        """
        try:
            await self._handle(event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidStreamError(
                f"Malformed {event.get('type')} event ({type(exc).__name__}: {exc})"
            ) from exc

    async def _handle(self, event: Mapping[str, Any]) -> None:
        builder = self.builder
        kind = event.get("type")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            # A delta counts only when the open content part is of its kind.
            part = "output_text" if kind == "response.output_text.delta" else "refusal"
            block = self._open("text")
            if self._item_type == "message" and block is not None and self._last_part == part:
                delta = event["delta"]
                builder.append(block, delta)
                await self.out.emit(
                    TextDeltaEvent(
                        content_index=len(builder) - 1, delta=delta, partial=builder.snapshot()
                    )
                )
        elif kind == "response.function_call_arguments.delta":
            block = self._open("toolCall")
            if self._item_type == "function_call" and block is not None:
                delta = event["delta"]
                builder.append(block, delta)
                await self.out.emit(
                    ToolCallDeltaEvent(
                        content_index=len(builder) - 1, delta=delta, partial=builder.snapshot()
                    )
                )
        elif kind in (
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_part.done",
            "response.reasoning_text.delta",
        ):
            block = self._open("thinking")
            if (
                self._item_type == "reasoning"
                and block is not None
                and (kind == "response.reasoning_text.delta" or self._has_summary_part)
            ):
                # A finished summary part is followed by a blank line, as pi streams it.
                delta = "\n\n" if kind == "response.reasoning_summary_part.done" else event["delta"]
                builder.append(block, delta)
                await self.out.emit(
                    ThinkingDeltaEvent(
                        content_index=len(builder) - 1, delta=delta, partial=builder.snapshot()
                    )
                )
        elif kind == "response.created":
            builder.update(response_id=event["response"]["id"])
        elif kind == "response.output_item.added":
            await self._item_added(event["item"])
        elif kind == "response.reasoning_summary_part.added":
            if self._item_type == "reasoning":
                self._has_summary_part = True
        elif kind == "response.content_part.added":
            part_type = event["part"].get("type")
            if self._item_type == "message" and part_type in ("output_text", "refusal"):
                self._last_part = part_type
        elif kind == "response.function_call_arguments.done":
            block = self._open("toolCall")
            if self._item_type == "function_call" and block is not None:
                await self._arguments_done(block, event["arguments"])
        elif kind == "response.output_item.done":
            await self._item_done(event["item"])
        elif kind == "response.completed" or kind == "response.incomplete":
            self._complete(event.get("response") or {})
        elif kind == "error":
            raise ProviderError(f"Error Code {_js_str(event, 'code')}: {_js_str(event, 'message')}")
        elif kind == "response.failed":
            raise ProviderError(_failure_text(event.get("response") or {}))

    async def _item_added(self, item: Mapping[str, Any]) -> None:
        builder = self.builder
        item_type = item.get("type")
        if item_type == "reasoning":
            self._item_type = item_type
            self._has_summary_part = bool(item.get("summary"))
            self._block = builder.add_thinking()
            await self.out.emit(
                ThinkingStartEvent(content_index=self._block, partial=builder.snapshot())
            )
        elif item_type == "message":
            self._item_type = item_type
            parts = item.get("content") or []
            self._last_part = parts[-1].get("type") if parts else None
            self._block = builder.add_text()
            await self.out.emit(
                TextStartEvent(content_index=self._block, partial=builder.snapshot())
            )
        elif item_type == "function_call":
            self._item_type = item_type
            self._block = builder.add_tool_call(
                id=f"{item['call_id']}|{item['id']}", name=item["name"]
            )
            if item.get("arguments"):
                builder.append(self._block, item["arguments"])
            await self.out.emit(
                ToolCallStartEvent(content_index=self._block, partial=builder.snapshot())
            )
        # Other items (web search, file search ...) leave the current item as it was, as in pi.

    async def _arguments_done(self, block: int, arguments: str) -> None:
        builder = self.builder
        previous = builder.text_of(block)
        if not arguments.startswith(previous):
            builder.set_text(block, arguments)
            return
        rest = arguments[len(previous) :]
        if rest:
            builder.append(block, rest)
            await self.out.emit(
                ToolCallDeltaEvent(
                    content_index=len(builder) - 1, delta=rest, partial=builder.snapshot()
                )
            )

    async def _item_done(self, item: Mapping[str, Any]) -> None:
        builder = self.builder
        item_type = item.get("type")
        if item_type == "reasoning" and (block := self._open("thinking")) is not None:
            summary = "\n\n".join(part["text"] for part in item.get("summary") or [])
            content = "\n\n".join(part["text"] for part in item.get("content") or [])
            thinking = summary or content or builder.text_of(block)
            builder.set_text(block, thinking)
            # The whole item, encrypted content included, is what goes back on replay.
            builder.set_signature(block, _json_text(item))
            self._block = None
            await self.out.emit(
                ThinkingEndEvent(
                    content_index=len(builder) - 1, content=thinking, partial=builder.snapshot()
                )
            )
        elif item_type == "message" and (block := self._open("text")) is not None:
            text = "".join(
                part["text"] if part.get("type") == "output_text" else part.get("refusal", "")
                for part in item.get("content") or []
            )
            builder.set_text(block, text)
            builder.set_signature(block, _encode_text_signature(item["id"], item.get("phase")))
            self._block = None
            await self.out.emit(
                TextEndEvent(
                    content_index=len(builder) - 1, content=text, partial=builder.snapshot()
                )
            )
        elif item_type == "function_call":
            block = self._open("toolCall")
            if block is not None and builder.text_of(block):
                arguments = parse_streaming_json(builder.text_of(block))
            else:
                arguments = parse_streaming_json(item.get("arguments") or "{}")
            tool_call: AssistantContentBlock
            if block is not None:
                builder.set_arguments(block, arguments)
                tool_call = builder.block(block)
            else:
                # pi reports a call it never saw start without adding it to the message.
                tool_call = ToolCall(
                    id=f"{item['call_id']}|{item['id']}", name=item["name"], arguments=arguments
                )
            assert isinstance(tool_call, ToolCall)
            self._block = None
            await self.out.emit(
                ToolCallEndEvent(
                    content_index=len(builder) - 1, tool_call=tool_call, partial=builder.snapshot()
                )
            )

    def _complete(self, response: Mapping[str, Any]) -> None:
        builder = self.builder
        options = self.options
        changes: dict[str, Any] = {}
        if response.get("id"):
            changes["response_id"] = response["id"]
        usage = builder.usage
        if response.get("usage"):
            usage = _usage_from(response["usage"])
        usage = attrs.evolve(usage, cost=calculate_cost(self.model, usage))
        if options.apply_service_tier_pricing is not None:
            requested = options.service_tier
            if options.resolve_service_tier is not None:
                tier = options.resolve_service_tier(response.get("service_tier"), requested)
            else:
                tier = response.get("service_tier") or requested
            usage = options.apply_service_tier_pricing(usage, tier)
        stop_reason = _map_stop_reason(response.get("status"))
        if stop_reason == "stop" and any(
            builder.kind(i) == "toolCall" for i in range(len(builder))
        ):
            stop_reason = "toolUse"
        builder.update(usage=usage, stop_reason=stop_reason, **changes)
        self.finished = True


def _failure_text(response: Mapping[str, Any]) -> str:
    error = response.get("error")
    details = response.get("incomplete_details")
    if error:
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    if details and details.get("reason"):
        return f"incomplete: {details['reason']}"
    return "Unknown error (no error details in response)"


async def process_responses_stream(
    events: AsyncIterator[SSEEvent],
    builder: AssistantMessageBuilder,
    out: AssistantMessageEventStream,
    model: Model,
    options: ResponsesStreamOptions | None = None,
) -> bool:
    """Read a Responses SSE stream into pi's events (pi's ``processResponsesStream``).

    Events are decoded as the OpenAI SDK decodes them: everything after a ``[DONE]`` line is
    ignored, and a payload with a top-level ``error`` fails the stream.

    Returns:
        Whether a final ``response.completed`` (or ``response.incomplete``) event arrived.

    Raises:
        ProviderError: the stream reported a failure or could not be read.
    """
    reader = ResponsesEventReader(builder, out, model, options)
    ignore_rest = False
    async for event in events:
        if ignore_rest:
            continue  # the SDK reads on to the end after [DONE]; so do we
        if event.data.startswith("[DONE]"):
            ignore_rest = True
            continue
        if event.event.startswith("thread."):
            continue  # Assistants API events, never part of a Responses stream
        payload = sse_json(event)
        if isinstance(payload, dict):
            if payload.get("error"):
                raise ProviderError(_api_error_text(payload["error"]))
            await reader.handle(payload)
    return reader.finished


def _service_tier_multiplier(model: Model, tier: str | None) -> float:
    if tier == "flex":
        return 0.5
    if tier == "priority":
        return 2.5 if model.id == "gpt-5.5" else 2.0
    return 1.0


def tier_pricing(model: Model) -> Callable[[Usage, str | None], Usage]:
    """``(usage, tier) -> usage`` with the cost scaled for the tier (flex halves, priority
    doubles; 2.5x for gpt-5.5), as pi prices the OpenAI and Codex Responses APIs."""

    def apply(usage: Usage, tier: str | None) -> Usage:
        factor = _service_tier_multiplier(model, tier)
        if factor == 1.0:
            return usage
        cost = usage.cost
        adjusted = attrs.evolve(
            cost,
            input=cost.input * factor,
            output=cost.output * factor,
            cache_read=cost.cache_read * factor,
            cache_write=cost.cache_write * factor,
        )
        total = adjusted.input + adjusted.output + adjusted.cache_read + adjusted.cache_write
        return attrs.evolve(usage, cost=attrs.evolve(adjusted, total=total))

    return apply


def _api_error_text(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    if message:
        return message if isinstance(message, str) else _json_text(message)
    return _json_text(error)


# --------------------------------------------------------------------------- the provider


async def read_responses_sse(
    url: str,
    headers: Mapping[str, str],
    params: Any,
    model: Model,
    options: StreamOptions,
    builder: AssistantMessageBuilder,
    out: AssistantMessageEventStream,
    stream_options: ResponsesStreamOptions | None = None,
) -> Literal["stop", "length", "toolUse"]:
    """POST ``params`` to ``url`` and read the Responses stream into ``builder`` and ``out``.

    Emits ``start`` once the response is accepted, then the block events; the terminal event
    is the caller's. Retries, timeouts and ``on_response`` follow ``options`` (see
    :func:`~pitrio.providers._http.open_sse`).

    Returns:
        The stop reason the final event set (never ``"error"`` or ``"aborted"``).

    Raises:
        ProviderError: an error status, a failure event, or a stream that ended without a final
            event (:data:`NO_FINAL_EVENT`).
        httpx2.TransportError: the connection failed or dropped.
    """
    async with open_sse(
        url,
        headers=headers,
        body=params,
        timeout_ms=options.timeout_ms,
        max_retries=options.max_retries,
        max_retry_delay_ms=options.max_retry_delay_ms,
        stall_timeout_ms=options.stall_timeout_ms,
        on_response=response_callback(options, model),
    ) as events:
        await out.emit(StartEvent(partial=builder.snapshot()))
        finished = await process_responses_stream(events, builder, out, model, stream_options)
    if not finished:
        raise ProviderError(NO_FINAL_EVENT)
    stop_reason = builder.stop_reason
    if stop_reason == "error" or stop_reason == "aborted":
        raise ProviderError(UNKNOWN_ERROR)
    return stop_reason


async def stream_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream one response from the Responses API (pi's ``streamOpenAIResponses``).

    ``options.provider_options`` holds the :class:`OpenAIResponsesOptions`. Failures (HTTP
    errors, a dropped connection, an ``error`` event) end the stream with ``stopReason:
    "error"``; cancellation propagates, and the driver reports ``"aborted"``.
    """
    builder = new_message_builder(model)
    out.attach(builder)
    api_options = OpenAIResponsesOptions.from_mapping(options.provider_options)
    try:
        api_key = options.api_key or get_env_api_key(model.provider) or ""
        if not api_key:
            raise ProviderError(
                "OpenAI API key is required. Set OPENAI_API_KEY environment variable or pass it "
                "as an argument."
            )
        retention = _cache_retention(options)
        session_id = None if retention == "none" else options.session_id
        headers = _build_headers(model, context, api_key, options, session_id)
        url = _base_url(model).rstrip("/") + "/responses"
        params: Any = build_params(model, context, options, api_options)
        params = await apply_on_payload(options, params, model)
        stream_options = ResponsesStreamOptions(
            service_tier=api_options.service_tier,
            apply_service_tier_pricing=tier_pricing(model),
        )
        stop_reason = await read_responses_sse(
            url, headers, params, model, options, builder, out, stream_options
        )
    except Exception as exc:  # every failure becomes the final message, as in pi
        await emit_failure(out, builder, exc)
        return
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_simple_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream with the unified options (pi's ``streamSimpleOpenAIResponses``).

    ``options.reasoning`` is clamped to what the model supports and sent as the reasoning
    effort; ``max_tokens`` defaults to the model's limit capped at 32000. Other
    :class:`OpenAIResponsesOptions` in ``provider_options`` (summary, service tier) pass through.
    """
    simple = await simple_responses_options(model, options, out)
    if simple is not None:
        await stream_openai_responses(model, context, simple, out)


async def simple_responses_options(
    model: Model, options: StreamOptions, out: AssistantMessageEventStream
) -> StreamOptions | None:
    """Map the unified options onto a Responses provider's own (pi's ``streamSimple*``).

    The reasoning level is clamped and passed as ``reasoning_effort`` in ``provider_options``;
    ``max_tokens`` defaults to the model's limit capped at :data:`SIMPLE_MAX_TOKENS_CAP`.
    Without an API key (``options.api_key`` or the environment) the stream ends with an error
    and ``None`` is returned.
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        builder = new_message_builder(model)
        out.attach(builder)
        await emit_failure(
            out, builder, ProviderError(f"No API key for provider: {model.provider}")
        )
        return None
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    effort: ThinkingLevel | None = None
    if options.reasoning:
        clamped = clamp_thinking_level(model, options.reasoning)
        effort = None if clamped == "off" else clamped
    api_options = attrs.evolve(
        OpenAIResponsesOptions.from_mapping(options.provider_options), reasoning_effort=effort
    )
    return attrs.evolve(
        options,
        api_key=api_key,
        max_tokens=max_tokens,
        reasoning=None,
        provider_options={**(options.provider_options or {}), **attrs.asdict(api_options)},
    )


OPENAI_RESPONSES_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_openai_responses, stream_simple=stream_simple_openai_responses
)
"""The ``openai-responses`` provider, ready to register."""


def register_openai_responses(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``openai-responses`` provider in ``registry``."""
    registry.register(OPENAI_RESPONSES_PROVIDER, "builtin:openai-responses")
