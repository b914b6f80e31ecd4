"""ConverseStream events to pi's assistant-message events, and the two stream functions.

Events (the ``:event-type`` of each ``event`` message, its payload JSON):

* ``messageStart`` must have role ``assistant``.
* ``contentBlockStart`` opens a tool call (``start.toolUse``: ``toolUseId``, ``name``); text and
  reasoning blocks have no start event and open with their first delta, as in pi.
* ``contentBlockDelta`` carries ``text``, ``toolUse.input`` (a piece of the arguments' JSON) or
  ``reasoningContent`` (``text``, or a piece of the ``signature``, accumulated without events).
* ``contentBlockStop`` ends the block (a tool call's arguments parsed leniently).
* ``messageStop`` gives the stop reason: ``end_turn``/``stop_sequence`` → ``stop``,
  ``max_tokens``/``model_context_window_exceeded`` → ``length``, ``tool_use`` → ``toolUse``,
  anything else (guardrails, content filter, malformed output) → ``error``, which ends the
  message with pi's "An unknown error occurred".
* ``metadata`` gives the usage (input, output, cache read and write, total) and so the cost.

An ``exception`` message (``:exception-type``) ends the message with pi's text for it
(``Throttling error: <message>`` ...); so does an ``error`` message (``:error-code``).

Deliberate differences from pi:

* A body that ends before ``messageStop`` fails ("Bedrock stream ended before messageStop");
  pi reports whatever came as a complete answer.
* An exception frame reads ``Throttling error: <message>``. pi means to write that (its
  ``formatBedrockError``) but the SDK hands it such an exception as a plain object, so pi's
  text is the object's JSON (``{"message": ...}``); the prefixed form is what the session's
  retry and overflow checks match.
* ``on_payload`` sees images as base64 strings (the JSON the request carries), where pi's
  command input holds bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

import attrs
import orjson

from pitrio.providers._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
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
    apply_on_payload,
    describe_failure,
    failure_diagnostics,
    new_message_builder,
    response_callback,
)
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import (
    Context,
    Model,
    StopReason,
    StreamOptions,
    ThinkingBudgets,
    ToolCall,
    Usage,
)
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ApiProvider, ProviderError
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.anthropic._request import (
    SIMPLE_MAX_TOKENS_CAP,
    adjust_max_tokens_for_thinking,
)
from pitrio.providers.bedrock._auth import configured_region, resolve_auth, resolve_endpoint
from pitrio.providers.bedrock._eventstream import EventStreamMessage
from pitrio.providers.bedrock._request import BedrockOptions, build_command, is_claude
from pitrio.providers.bedrock._request import (
    supports_adaptive_thinking as supports_adaptive_thinking,
)
from pitrio.providers.bedrock._transport import BedrockServiceError, open_event_stream

API: Final = "bedrock-converse-stream"
NO_STOP_MESSAGE: Final = "Bedrock stream ended before messageStop"
UNKNOWN_ERROR_MESSAGE: Final = "An unknown error occurred"
NOT_ASSISTANT_MESSAGE: Final = (
    "Unexpected assistant message start but got user message start instead"
)
STOP_REASONS: Final[Mapping[str, StopReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


class _Reader:
    """Turns the event-stream messages of one response into pi's events on ``out``."""

    __slots__ = ("_builder", "_model", "_open", "_out", "_signatures", "stopped")

    def __init__(
        self, model: Model, builder: AssistantMessageBuilder, out: AssistantMessageEventStream
    ) -> None:
        self._model = model
        self._builder = builder
        self._out = out
        self._open: dict[int, int] = {}  # Bedrock block index -> our content index
        self._signatures: dict[int, str] = {}
        self.stopped = False

    async def feed(self, message: EventStreamMessage) -> None:
        """Handle one message.

        Raises:
            BedrockServiceError: an ``exception`` message.
            ProviderError: an ``error`` message, or a user message start.
            InvalidStreamError: a message that cannot be read.
        """
        headers = message.headers
        kind = headers.get(":message-type")
        if kind == "exception":
            error_type = message.header(":exception-type") or "UnknownException"
            raise BedrockServiceError(error_type, _exception_message(message.payload))
        if kind == "error":
            code = message.header(":error-code") or "UnknownError"
            raise ProviderError(f"{code}: {message.header(':error-message') or ''}")
        event_type = headers.get(":event-type")
        if kind != "event" or not isinstance(event_type, str):
            raise InvalidStreamError(f"Unexpected event stream message headers {message.headers}")
        try:
            event = orjson.loads(message.payload)
        except orjson.JSONDecodeError as exc:
            raise InvalidStreamError(
                f"Could not parse Bedrock event {event_type}: {exc}; data={message.payload!r}"
            ) from exc
        try:
            if event_type == "contentBlockDelta":
                delta = event["delta"]
                text = delta.get("text")
                index = self._open.get(event["contentBlockIndex"])
                builder = self._builder
                if text is not None and index is not None and builder.kind(index) == "text":
                    # `_delta` inline: the per-token path
                    builder.append(index, text)
                    await self._out.emit(text_delta_event(index, text, builder.snapshot()))
                    return
            await self._dispatch(event_type, event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidStreamError(
                f"Malformed Bedrock event {event_type} ({type(exc).__name__}: {exc}): {event}"
            ) from exc

    async def _dispatch(self, event_type: str, event: dict[str, Any]) -> None:
        if event_type == "contentBlockDelta":
            await self._delta(event["contentBlockIndex"], event["delta"])
        elif event_type == "contentBlockStart":
            tool_use = (event.get("start") or {}).get("toolUse")
            if tool_use is not None:
                builder = self._builder
                index = builder.add_tool_call(
                    id=tool_use.get("toolUseId") or "", name=tool_use.get("name") or ""
                )
                self._open[event["contentBlockIndex"]] = index
                await self._out.emit(
                    ToolCallStartEvent(content_index=index, partial=builder.snapshot())
                )
        elif event_type == "contentBlockStop":
            await self._stop(event["contentBlockIndex"])
        elif event_type == "messageStart":
            if event.get("role") != "assistant":
                raise ProviderError(NOT_ASSISTANT_MESSAGE)
        elif event_type == "messageStop":
            self._builder.update(
                stop_reason=STOP_REASONS.get(str(event.get("stopReason")), "error")
            )
            self.stopped = True
        elif event_type == "metadata":
            usage = event.get("usage")
            if usage:
                self._set_usage(usage)
        # Event types this port does not know are skipped, as the SDK skips them.

    def _set_usage(self, usage: dict[str, Any]) -> None:
        input_tokens = usage.get("inputTokens") or 0
        output_tokens = usage.get("outputTokens") or 0
        total = Usage(
            input=input_tokens,
            output=output_tokens,
            cache_read=usage.get("cacheReadInputTokens") or 0,
            cache_write=usage.get("cacheWriteInputTokens") or 0,
            total_tokens=usage.get("totalTokens") or input_tokens + output_tokens,
        )
        self._builder.update(usage=with_cost(self._model, total))

    async def _delta(self, api_index: int, delta: dict[str, Any]) -> None:
        builder = self._builder
        out = self._out
        index = self._open.get(api_index)
        if "text" in delta:
            if index is None:
                index = self._open[api_index] = builder.add_text()
                await out.emit(TextStartEvent(content_index=index, partial=builder.snapshot()))
            if builder.kind(index) == "text":
                text = delta["text"]
                builder.append(index, text)
                await out.emit(text_delta_event(index, text, builder.snapshot()))
        elif "toolUse" in delta:
            if index is not None and builder.kind(index) == "toolCall":
                piece = delta["toolUse"].get("input") or ""
                builder.append(index, piece)
                await out.emit(tool_call_delta_event(index, piece, builder.snapshot()))
        elif "reasoningContent" in delta:
            reasoning = delta["reasoningContent"]
            if index is None:
                index = self._open[api_index] = builder.add_thinking(signature="")
                await out.emit(ThinkingStartEvent(content_index=index, partial=builder.snapshot()))
            if builder.kind(index) != "thinking":
                return
            text = reasoning.get("text")
            if text:
                builder.append(index, text)
                await out.emit(thinking_delta_event(index, text, builder.snapshot()))
            signature = reasoning.get("signature")
            if signature:
                signature = self._signatures.get(index, "") + signature
                self._signatures[index] = signature
                builder.set_signature(index, signature)
            # redactedContent is dropped, as pi drops it.

    async def _stop(self, api_index: int) -> None:
        index = self._open.pop(api_index, None)
        if index is None:
            return
        builder = self._builder
        kind = builder.kind(index)
        if kind == "text":
            content = builder.text_of(index)
            await self._out.emit(
                TextEndEvent(content_index=index, content=content, partial=builder.snapshot())
            )
        elif kind == "thinking":
            content = builder.text_of(index)
            await self._out.emit(
                ThinkingEndEvent(content_index=index, content=content, partial=builder.snapshot())
            )
        else:
            builder.set_arguments(index, parse_streaming_json(builder.text_of(index)))
            call = builder.block(index)
            assert isinstance(call, ToolCall)
            await self._out.emit(
                ToolCallEndEvent(content_index=index, tool_call=call, partial=builder.snapshot())
            )


def _exception_message(payload: bytes) -> str:
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return payload.decode("utf-8", "replace")
    if isinstance(data, dict):
        found = data.get("message", data.get("Message"))
        if isinstance(found, str):
            return found
    return orjson.dumps(data).decode()


def converse_stream_url(base_url: str, model_id: str) -> str:
    """``{base}/model/{modelId}/converse-stream`` with the id percent-encoded (ARNs too)."""
    return f"{base_url.rstrip('/')}/model/{quote(model_id, safe='')}/converse-stream"


async def _stream(
    model: Model,
    context: Context,
    options: StreamOptions,
    bedrock: BedrockOptions,
    out: AssistantMessageEventStream,
) -> None:
    builder = new_message_builder(model)
    out.attach(builder)
    environ = os.environ
    try:
        command = build_command(
            model, context, options, bedrock, configured_region(bedrock.region, environ)
        )
        command = await apply_on_payload(options, command, model)
        body = dict(command)
        model_id = str(body.pop("modelId", model.id))
        endpoint = await resolve_endpoint(
            model_id, model.base_url, region=bedrock.region, profile=bedrock.profile, env=environ
        )
        auth = await resolve_auth(
            bearer_token=bedrock.bearer_token, profile=bedrock.profile, env=environ
        )
        headers = {**(model.headers or {}), **(options.headers or {})}
        async with open_event_stream(
            converse_stream_url(endpoint.base_url, model_id),
            content=orjson.dumps(body),
            auth=auth,
            region=endpoint.region,
            headers=headers,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as response:
            await out.emit(StartEvent(partial=builder.snapshot()))
            reader = _Reader(model, builder, out)
            while (messages := await response.receive()) is not None:
                for message in messages:
                    await reader.feed(message)
        if not reader.stopped:
            raise ProviderError(NO_STOP_MESSAGE)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR_MESSAGE)
    except Exception as exc:  # failures are data: the message ends with stopReason "error"
        builder.update(
            stop_reason="error",
            error_message=describe_failure(exc),
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    reason = builder.stop_reason
    if reason == "length" or reason == "toolUse":
        await out.emit(DoneEvent(reason=reason, message=builder.build()))
    else:
        await out.emit(DoneEvent(reason="stop", message=builder.build()))


async def stream_bedrock(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with the API-specific options (pi-ai ``streamBedrock``).

    ``options.provider_options`` holds :class:`BedrockOptions` fields; ``options.reasoning``
    and ``options.thinking_budgets`` select Claude's thinking. ``options.api_key`` is not used:
    authentication comes from the AWS sources (see :mod:`._auth`), as in pi.
    """
    await _stream(
        model, context, options, BedrockOptions.from_mapping(options.provider_options), out
    )


async def stream_simple_bedrock(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with pi's unified options (pi-ai ``streamSimpleBedrock``).

    ``max_tokens`` defaults to the model's limit capped at 32000. On a budget-thinking Claude
    model the thinking budget is added to it (capped at the model's limit) as pi does.
    """
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    base = attrs.evolve(options, max_tokens=max_tokens)
    level = options.reasoning
    if level and is_claude(model) and not supports_adaptive_thinking(model):
        adjusted, budget = adjust_max_tokens_for_thinking(
            max_tokens or 0, model.max_tokens, level, options.thinking_budgets
        )
        key = "high" if level == "xhigh" else level
        budgets = attrs.evolve(options.thinking_budgets or ThinkingBudgets(), **{key: budget})
        base = attrs.evolve(base, max_tokens=adjusted, thinking_budgets=budgets)
    await _stream(model, context, base, BedrockOptions.from_mapping(options.provider_options), out)


BEDROCK_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_bedrock, stream_simple=stream_simple_bedrock
)
"""The ``bedrock-converse-stream`` provider."""
