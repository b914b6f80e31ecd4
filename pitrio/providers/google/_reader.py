"""Reading a Gemini stream: its chunks into pi's assistant-message events."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx2
import orjson

from pitrio.providers._events import (
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    tool_call_delta_event,
)
from pitrio.providers._http import (
    HTTPStatusError,
    InvalidStreamError,
    SSEBatches,
    describe_failure,
    sse_json,
)
from pitrio.providers._messages import (
    Model,
    StopReason,
    ToolCall,
    Usage,
)
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ProviderError,
)
from pitrio.providers._stream import AssistantMessageEventStream, now_ms
from pitrio.providers.google._request import (
    _ERROR_FINISH_REASONS,
    NO_FINISH_MESSAGE,
    _tool_call_counter,
)


def map_finish_reason(reason: str) -> StopReason:
    """Map Gemini's ``finishReason`` to pi's stop reason.

    Raises:
        ProviderError: a reason pi does not know (``Unhandled stop reason: ...``).
    """
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _ERROR_FINISH_REASONS:
        return "error"
    raise ProviderError(f"Unhandled stop reason: {reason}")


def usage_from_metadata(model: Model, metadata: Mapping[str, Any]) -> Usage:
    """Turn ``usageMetadata`` into pi's usage: thoughts count as output, cached as cache read."""
    cached = metadata.get("cachedContentTokenCount") or 0
    usage = Usage(
        input=(metadata.get("promptTokenCount") or 0) - cached,
        output=(metadata.get("candidatesTokenCount") or 0)
        + (metadata.get("thoughtsTokenCount") or 0),
        cache_read=cached,
        cache_write=0,
        total_tokens=metadata.get("totalTokenCount") or 0,
    )
    return with_cost(model, usage)


def _compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _error_message(exc: BaseException) -> str:
    """The ``errorMessage`` for a failed request, in the Google SDK's words for HTTP errors."""
    if isinstance(exc, HTTPStatusError):
        if "application/json" in exc.headers.get("content-type", ""):
            try:
                return _compact_json(orjson.loads(exc.body))
            except orjson.JSONDecodeError:
                pass
        reason = httpx2.codes.get_reason_phrase(exc.status)
        return _compact_json({"error": {"message": exc.body, "code": exc.status, "status": reason}})
    return describe_failure(exc)


class _Stream:
    """Turns the response's chunks into pi's events (one instance per response)."""

    def __init__(
        self, model: Model, builder: AssistantMessageBuilder, out: AssistantMessageEventStream
    ) -> None:
        self.model = model
        self.builder = builder
        self.out = out
        self.current: int | None = None  # index of the open text or thinking block
        self.tool_call_ids: set[str] = set()
        self.finished = False  # a candidate carried a finishReason
        self.block_reason: str | None = None  # promptFeedback.blockReason, if any

    async def close_block(self) -> None:
        index = self.current
        if index is None:
            return
        self.current = None
        builder = self.builder
        partial = builder.snapshot()
        content = builder.text_of(index)
        if builder.kind(index) == "text":
            await self.out.emit(TextEndEvent(content_index=index, content=content, partial=partial))
        else:
            await self.out.emit(
                ThinkingEndEvent(content_index=index, content=content, partial=partial)
            )

    async def chunk(self, chunk: Mapping[str, Any]) -> None:
        builder = self.builder
        if "error" in chunk and not chunk.get("candidates"):
            # The SDK's wording for an error object in the stream. (pi reads an SSE-framed error
            # as an empty chunk and ends with "stop"; pitrio reports it.)
            error = chunk["error"] if isinstance(chunk["error"], Mapping) else {}
            raise ProviderError(f"got status: {error.get('status')}. {_compact_json(chunk)}")
        response_id = chunk.get("responseId")
        if response_id and not builder.header.response_id:
            builder.update(response_id=response_id)
        candidates = chunk.get("candidates") or ()
        candidate: Mapping[str, Any] = candidates[0] if candidates else {}
        content = candidate.get("content") or {}
        for part in content.get("parts") or ():
            text = part.get("text")
            if text is not None:
                await self.text_part(
                    text, part.get("thought") is True, part.get("thoughtSignature")
                )
            call = part.get("functionCall")
            if call is not None:  # pi tests the object, so an empty call still counts
                await self.function_call(call, part.get("thoughtSignature"))
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            self.block_reason = str(feedback["blockReason"])
        finish = candidate.get("finishReason")
        if finish:
            self.finished = True
            stop_reason = map_finish_reason(finish)
            if self.tool_call_ids:
                stop_reason = "toolUse"
            builder.update(stop_reason=stop_reason)
        metadata = chunk.get("usageMetadata")
        if metadata is not None:
            builder.update(usage=usage_from_metadata(self.model, metadata))

    async def text_part(self, text: str, thinking: bool, signature: str | None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"part text is not a string: {text!r}")
        builder = self.builder
        out = self.out
        kind = "thinking" if thinking else "text"
        index = self.current
        if index is None or builder.kind(index) != kind:
            await self.close_block()
            index = builder.add_thinking() if thinking else builder.add_text()
            self.current = index
            start = ThinkingStartEvent if thinking else TextStartEvent
            await out.emit(start(content_index=index, partial=builder.snapshot()))
        builder.append(index, text)
        if signature:  # keep the last non-empty signature of the block
            builder.set_signature(index, signature)
        delta = ThinkingDeltaEvent if thinking else TextDeltaEvent
        await out.emit(delta(content_index=index, delta=text, partial=builder.snapshot()))

    async def function_call(self, call: Mapping[str, Any], signature: str | None) -> None:
        await self.close_block()
        builder = self.builder
        out = self.out
        name = call.get("name")
        provided = call.get("id")
        if provided and provided not in self.tool_call_ids:
            call_id = provided
        else:
            # pi writes `${name}_${Date.now()}_${++counter}`: a missing name reads "undefined".
            call_id = (
                f"{name if name is not None else 'undefined'}_{now_ms()}_{next(_tool_call_counter)}"
            )
        self.tool_call_ids.add(call_id)
        args = call.get("args")
        arguments: dict[str, Any] = dict(args) if isinstance(args, Mapping) else {}
        index = builder.add_tool_call(
            id=call_id,
            name=name or "",
            arguments=arguments,
            thought_signature=signature or None,
        )
        await out.emit(ToolCallStartEvent(content_index=index, partial=builder.snapshot()))
        delta = _compact_json(arguments)
        builder.append(index, delta)
        await out.emit(tool_call_delta_event(index, delta, builder.snapshot()))
        tool_call = builder.block(index)
        assert isinstance(tool_call, ToolCall)
        await out.emit(
            ToolCallEndEvent(content_index=index, tool_call=tool_call, partial=builder.snapshot())
        )


# --------------------------------------------------------------------------- providers


async def _read_events(
    state: _Stream,
    events: SSEBatches,
    unwrap: Callable[[Mapping[str, Any]], Any] | None = None,
) -> None:
    """Feed every event to ``state``; stop reading at the first bad one and raise its error
    (:func:`open_sse` finishes the response's generators)."""
    async for batch in events:
        for event in batch:
            try:
                chunk = sse_json(event)
                if unwrap is not None and isinstance(chunk, Mapping):
                    chunk = unwrap(chunk)
                if not isinstance(chunk, Mapping):
                    raise InvalidStreamError(
                        f"Invalid stream chunk (not an object): {event.data!r}"
                    )
                await state.chunk(chunk)
            except ProviderError:
                raise
            except (AttributeError, TypeError, ValueError) as exc:  # a chunk of the wrong shape
                snippet = event.data if len(event.data) <= 200 else event.data[:200] + "..."
                raise InvalidStreamError(f"Invalid stream chunk ({exc}): {snippet}") from exc
    if not state.finished:
        if state.block_reason is not None:
            raise ProviderError(f"Prompt blocked: {state.block_reason}")
        raise ProviderError(NO_FINISH_MESSAGE)
    await state.close_block()
