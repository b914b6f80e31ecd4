"""Reading a Responses stream: its events into pi's assistant-message events."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pitrio.providers._events import (
    TextEndEvent,
    TextStartEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    text_delta_event,
    thinking_delta_event,
    tool_call_delta_event,
)
from pitrio.providers._http import (
    InvalidStreamError,
    SSEBatches,
    sse_json,
)
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import (
    AssistantContentBlock,
    Model,
    StopReason,
    ToolCall,
    Usage,
)
from pitrio.providers._models import calculate_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ProviderError,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.openai_responses._request import (
    ResponsesStreamOptions,
    _encode_text_signature,
    _json_text,
)


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
                await self.out.emit(text_delta_event(len(builder) - 1, delta, builder.snapshot()))
        elif kind == "response.function_call_arguments.delta":
            block = self._open("toolCall")
            if self._item_type == "function_call" and block is not None:
                delta = event["delta"]
                builder.append(block, delta)
                await self.out.emit(
                    tool_call_delta_event(len(builder) - 1, delta, builder.snapshot())
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
                    thinking_delta_event(len(builder) - 1, delta, builder.snapshot())
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
            await self.out.emit(tool_call_delta_event(len(builder) - 1, rest, builder.snapshot()))

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
    events: SSEBatches,
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
    async for batch in events:
        for event in batch:
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
