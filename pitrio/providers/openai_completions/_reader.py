"""Reading a Chat Completions stream: its chunks into pi's assistant-message events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

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
from pitrio.providers._http import open_sse as open_sse
from pitrio.providers._http import sse_json as sse_json
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import (
    Model,
    StopReason,
    ToolCall,
    Usage,
)
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.openai_completions._request import (
    REASONING_FIELDS,
)


class _ChunkReader:
    """Turns ``chat.completion.chunk`` objects into events on one builder."""

    def __init__(
        self, model: Model, builder: AssistantMessageBuilder, out: AssistantMessageEventStream
    ) -> None:
        self._model = model
        self._builder = builder
        self._out = out
        self._text: int | None = None
        self._thinking: int | None = None
        self._by_stream_index: dict[int, int] = {}
        self._by_id: dict[str, int] = {}
        self._stream_index_of: dict[int, int | None] = {}
        self._response_id_set = False
        self._response_model_set = False
        self.finished = False
        """Whether a choice carried a ``finish_reason``."""

    async def feed(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        builder = self._builder
        chunk_id = chunk.get("id")
        if chunk_id and not self._response_id_set:
            builder.update(response_id=chunk_id)
            self._response_id_set = True
        chunk_model = chunk.get("model")
        if (
            isinstance(chunk_model, str)
            and chunk_model
            and chunk_model != self._model.id
            and not self._response_model_set
        ):
            builder.update(response_model=chunk_model)
            self._response_model_set = True
        usage = chunk.get("usage")
        if usage:
            builder.update(usage=parse_chunk_usage(usage, self._model))
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return
        if not usage and choice.get("usage"):
            # Some servers (Moonshot) report usage on the choice.
            builder.update(usage=parse_chunk_usage(choice["usage"], self._model))
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            self.finished = True
            stop_reason, error_message = map_stop_reason(finish_reason)
            builder.update(stop_reason=stop_reason)
            if error_message:
                builder.update(error_message=error_message)
        delta = choice.get("delta")
        if not delta or not isinstance(delta, dict):
            return
        content = delta.get("content")
        if isinstance(content, str) and content:
            index = self._text
            if index is None:
                await self._text_delta(content)
            else:  # `_text_delta` inline: the per-token path
                builder.append(index, content)
                await self._out.emit(text_delta_event(index, content, builder.snapshot()))
            if len(delta) == 1:
                return  # nothing but the text
        for field in REASONING_FIELDS:
            value = delta.get(field)
            if isinstance(value, str) and value:
                await self._thinking_delta(value, field)
                break
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            for tool_call in tool_calls:
                await self._tool_call_delta(tool_call)
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            self._reasoning_details(details)

    async def _text_delta(self, text: str) -> None:
        builder = self._builder
        if self._text is None:
            self._text = builder.add_text()
            await self._out.emit(
                TextStartEvent(content_index=self._text, partial=builder.snapshot())
            )
        builder.append(self._text, text)
        await self._out.emit(text_delta_event(self._text, text, builder.snapshot()))

    async def _thinking_delta(self, text: str, field: str) -> None:
        builder = self._builder
        if self._thinking is None:
            self._thinking = builder.add_thinking(signature=field)
            await self._out.emit(
                ThinkingStartEvent(content_index=self._thinking, partial=builder.snapshot())
            )
        builder.append(self._thinking, text)
        await self._out.emit(thinking_delta_event(self._thinking, text, builder.snapshot()))

    async def _tool_call_delta(self, tool_call: Any) -> None:
        if not isinstance(tool_call, dict):
            return
        builder = self._builder
        raw_index = tool_call.get("index")
        stream_index: int | None = None
        if isinstance(raw_index, int | float) and not isinstance(raw_index, bool):
            stream_index = int(raw_index)
        call_id = tool_call.get("id") or ""
        function = tool_call.get("function")
        if not isinstance(function, dict):
            function = {}
        name = function.get("name") or ""
        index = self._by_stream_index.get(stream_index) if stream_index is not None else None
        if index is None and call_id:
            index = self._by_id.get(call_id)
        if index is None:
            index = builder.add_tool_call(id=call_id, name=name)
            self._stream_index_of[index] = stream_index
            if stream_index is not None:
                self._by_stream_index[stream_index] = index
            if call_id:
                self._by_id[call_id] = index
            await self._out.emit(
                ToolCallStartEvent(content_index=index, partial=builder.snapshot())
            )
        if stream_index is not None and self._stream_index_of.get(index) is None:
            self._stream_index_of[index] = stream_index
            self._by_stream_index[stream_index] = index
        if call_id:
            self._by_id[call_id] = index
        # The head only: reading the whole block would parse all the arguments so far, per
        # delta (quadratic in the length of the arguments).
        known_id, known_name = builder.tool_call_head(index)
        if not known_id and call_id:
            builder.set_tool_call(index, id=call_id)
        if not known_name and name:
            builder.set_tool_call(index, name=name)
        arguments = function.get("arguments")
        delta = ""
        if arguments:
            delta = arguments
            builder.append(index, arguments)
        await self._out.emit(tool_call_delta_event(index, delta, builder.snapshot()))

    def _reasoning_details(self, details: list[Any]) -> None:
        for detail in details:
            if (
                isinstance(detail, dict)
                and detail.get("type") == "reasoning.encrypted"
                and detail.get("id")
                and detail.get("data")
            ):
                index = self._find_tool_call(detail["id"])
                if index is not None:
                    self._builder.set_signature(index, orjson.dumps(detail).decode())

    def _find_tool_call(self, call_id: str) -> int | None:
        builder = self._builder
        for index in range(len(builder)):
            if builder.kind(index) == "toolCall" and builder.tool_call_head(index)[0] == call_id:
                return index
        return None

    async def finish_blocks(self) -> None:
        """Emit every block's end event, in block order (pi ends them all after the stream)."""
        builder = self._builder
        out = self._out
        for index in range(len(builder)):
            kind = builder.kind(index)
            if kind == "text":
                await out.emit(
                    TextEndEvent(
                        content_index=index,
                        content=builder.text_of(index),
                        partial=builder.snapshot(),
                    )
                )
            elif kind == "thinking":
                await out.emit(
                    ThinkingEndEvent(
                        content_index=index,
                        content=builder.text_of(index),
                        partial=builder.snapshot(),
                    )
                )
            else:
                builder.set_arguments(index, parse_streaming_json(builder.text_of(index)))
                block = builder.block(index)
                assert isinstance(block, ToolCall)
                await out.emit(
                    ToolCallEndEvent(
                        content_index=index, tool_call=block, partial=builder.snapshot()
                    )
                )


def parse_chunk_usage(raw: Mapping[str, Any], model: Model) -> Usage:
    """Usage in pi's terms: ``cacheRead`` excludes this request's cache writes, cost included."""
    prompt_tokens = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    reported_cached = details.get("cached_tokens")
    if reported_cached is None:
        reported_cached = raw.get("prompt_cache_hit_tokens")
    if reported_cached is None:
        reported_cached = 0
    cache_write = details.get("cache_write_tokens") or 0
    # Some servers (OpenRouter) count this request's cache writes in cached_tokens too.
    cache_read = max(0, reported_cached - cache_write) if cache_write > 0 else reported_cached
    input_tokens = max(0, prompt_tokens - cache_read - cache_write)
    output_tokens = raw.get("completion_tokens") or 0  # reasoning tokens included
    usage = Usage(
        input=input_tokens,
        output=output_tokens,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=input_tokens + output_tokens + cache_read + cache_write,
    )
    return with_cost(model, usage)


def map_stop_reason(reason: str) -> tuple[StopReason, str | None]:
    """Map ``finish_reason`` to pi's stop reason and, for failures, an error message."""
    if reason in ("stop", "end"):
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("function_call", "tool_calls"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {reason}"


# --------------------------------------------------------------------------- the request
