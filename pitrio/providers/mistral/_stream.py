"""Reading Mistral's streamed ``CompletionChunk``s into pi's events (pi's ``consumeChatStream``).

* ``delta.content`` is a string or a list of chunks: strings and ``text`` chunks grow a text
  block, ``thinking`` chunks (their text parts joined) a thinking block; switching kind ends the
  open block (its ``*_end`` event) and opens a new one.
* ``delta.tool_calls`` entries are keyed by id and stream index; the first opens the block,
  every entry is a ``toolcall_delta`` of its argument text (an object is sent as its JSON). A
  call without an id (or the string ``"null"``) gets the 9-character id pi derives from
  ``toolcall:<index>``. Tool calls end after the stream, their arguments parsed then.
* ``usage`` gives input and output tokens (no cache counts), and the cost.
* ``finish_reason``: ``stop`` -> stop, ``length``/``model_length`` -> length, ``tool_calls`` ->
  toolUse, ``error`` -> error, anything else -> stop.

The body must end with ``[DONE]`` or have carried a ``finish_reason``; otherwise the answer was
cut short and the stream fails with :data:`NO_FINISH_MESSAGE` (pi reports what arrived as a
``stop``). An error object in the stream fails it with the object's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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
from pitrio.providers._http import InvalidStreamError, SSEBatches, sse_json
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import Model, StopReason, ToolCall, Usage
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderError
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers.mistral._request import derive_tool_call_id

NO_FINISH_MESSAGE: Final = (
    "Stream ended without finish_reason or [DONE]: the response was terminated early"
)


class MistralStreamError(ProviderError):
    """The stream carried an error object instead of a chunk."""


def map_stop_reason(reason: str | None) -> StopReason:
    """Map Mistral's ``finish_reason`` to pi's stop reason (unknown ones are ``stop``)."""
    if reason in ("length", "model_length"):
        return "length"
    if reason == "tool_calls":
        return "toolUse"
    if reason == "error":
        return "error"
    return "stop"


def usage_from_chunk(model: Model, raw: Mapping[str, Any]) -> Usage:
    """``usage`` in pi's terms (Mistral reports no cache counts), cost from the model's prices."""
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    usage = Usage(
        input=prompt,
        output=completion,
        cache_read=0,
        cache_write=0,
        total_tokens=raw.get("total_tokens") or prompt + completion,
    )
    return with_cost(model, usage)


def fallback_tool_call_id(stream_index: int) -> str:
    """The id pi gives a streamed call that came without one."""
    return derive_tool_call_id(f"toolcall:{stream_index}")


class ChunkReader:
    """Turns one response's chunks into events (one instance per response)."""

    def __init__(
        self, model: Model, builder: AssistantMessageBuilder, out: AssistantMessageEventStream
    ) -> None:
        self._model = model
        self._builder = builder
        self._out = out
        self._current: int | None = None  # the open text or thinking block
        self._tool_blocks: dict[str, int] = {}  # "<id>:<index>" -> block index
        self.finished = False
        """Whether a choice carried a ``finish_reason``."""

    async def _end_current(self) -> None:
        index = self._current
        if index is None:
            return
        self._current = None
        builder = self._builder
        content = builder.text_of(index)
        if builder.kind(index) == "text":
            event: Any = TextEndEvent(
                content_index=index, content=content, partial=builder.snapshot()
            )
        else:
            event = ThinkingEndEvent(
                content_index=index, content=content, partial=builder.snapshot()
            )
        await self._out.emit(event)

    async def feed(self, chunk: Mapping[str, Any]) -> None:
        """Apply one ``CompletionChunk``."""
        builder = self._builder
        chunk_id = chunk.get("id")
        if chunk_id and not builder.header.response_id:
            builder.update(response_id=chunk_id)
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            builder.update(usage=usage_from_chunk(self._model, usage))
        choices = chunk.get("choices") or ()
        if not choices:
            return
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish is not None:
            self.finished = True
            builder.update(stop_reason=map_stop_reason(finish))
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if content is not None:
            for item in [content] if isinstance(content, str) else content:
                await self._content_item(item)
        for tool_call in delta.get("tool_calls") or ():
            await self._tool_call(tool_call)

    async def _content_item(self, item: Any) -> None:
        if isinstance(item, str):
            await self._grow("text", sanitize_surrogates(item))
            return
        kind = item.get("type")
        if kind == "thinking":
            text = "".join(
                part.get("text") or "" for part in item.get("thinking") or () if "text" in part
            )
            if text:
                await self._grow("thinking", sanitize_surrogates(text))
        elif kind == "text":
            await self._grow("text", sanitize_surrogates(item.get("text") or ""))

    async def _grow(self, kind: str, text: str) -> None:
        if not text:
            return
        builder = self._builder
        out = self._out
        index = self._current
        if index is None or builder.kind(index) != kind:
            await self._end_current()
            index = builder.add_text() if kind == "text" else builder.add_thinking()
            self._current = index
            start = TextStartEvent if kind == "text" else ThinkingStartEvent
            await out.emit(start(content_index=index, partial=builder.snapshot()))
        builder.append(index, text)
        delta = TextDeltaEvent if kind == "text" else ThinkingDeltaEvent
        await out.emit(delta(content_index=index, delta=text, partial=builder.snapshot()))

    async def _tool_call(self, tool_call: Mapping[str, Any]) -> None:
        await self._end_current()
        builder = self._builder
        stream_index = tool_call.get("index") or 0
        raw_id = tool_call.get("id")
        call_id = raw_id if raw_id and raw_id != "null" else fallback_tool_call_id(stream_index)
        key = f"{call_id}:{stream_index}"
        function = tool_call.get("function") or {}
        index = self._tool_blocks.get(key)
        if index is None:
            index = builder.add_tool_call(id=call_id, name=function.get("name") or "")
            self._tool_blocks[key] = index
            await self._out.emit(
                ToolCallStartEvent(content_index=index, partial=builder.snapshot())
            )
        arguments = function.get("arguments")
        delta = arguments if isinstance(arguments, str) else _json(arguments or {})
        builder.append(index, delta)
        await self._out.emit(tool_call_delta_event(index, delta, builder.snapshot()))

    async def finish(self) -> None:
        """End the open block, then every tool call (arguments parsed), as pi does."""
        await self._end_current()
        builder = self._builder
        for index in self._tool_blocks.values():
            builder.set_arguments(index, parse_streaming_json(builder.text_of(index)))
            block = builder.block(index)
            assert isinstance(block, ToolCall)
            await self._out.emit(
                ToolCallEndEvent(content_index=index, tool_call=block, partial=builder.snapshot())
            )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def read_stream(reader: ChunkReader, events: SSEBatches) -> None:
    """Feed every event to ``reader`` until ``[DONE]``, then end its blocks.

    Raises:
        MistralStreamError: an error object arrived in the stream.
        InvalidStreamError: an event is not a chunk.
        ProviderError: the body ended before the answer did (:data:`NO_FINISH_MESSAGE`).
    """
    done = False
    async for batch in events:
        for event in batch:
            if done:
                continue  # the SDK stops at [DONE]; anything after it is ignored
            if event.data.startswith("[DONE]"):
                done = True
                continue
            chunk = sse_json(event)
            if not isinstance(chunk, Mapping):
                raise InvalidStreamError(f"Invalid stream chunk (not an object): {event.data!r}")
            if "choices" not in chunk and (chunk.get("object") == "error" or "error" in chunk):
                raise MistralStreamError(f"Mistral API error: {_json(chunk)}")
            try:
                await reader.feed(chunk)
            except (AttributeError, TypeError, ValueError) as exc:  # a chunk of the wrong shape
                snippet = event.data if len(event.data) <= 200 else event.data[:200] + "..."
                raise InvalidStreamError(f"Invalid stream chunk ({exc}): {snippet}") from exc
    if not done and not reader.finished:
        raise ProviderError(NO_FINISH_MESSAGE)
    await reader.finish()
