"""Reading an Anthropic Messages stream: its SSE events into pi's assistant-message events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
import trio

from pitrio.providers._events import (
    TextDeltaEvent,
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
)
from pitrio.providers._json_parse import parse_json_with_repair, parse_streaming_json
from pitrio.providers._messages import (
    Model,
    Tool,
    ToolCall,
    Usage,
)
from pitrio.providers._models import with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ProviderError,
)
from pitrio.providers._sse import SSEEvent
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.anthropic._request import (
    _MESSAGE_EVENTS,
    _STOP_REASONS,
    REDACTED_THINKING_TEXT,
    _from_claude_code_name,
)


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
        "_texts",
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
        # Open text blocks: Anthropic block index -> (our content index, its chunk appender).
        self._texts: dict[int, tuple[int, Callable[[str], None]]] = {}
        self.saw_start = False

    def feed(self, sse: SSEEvent) -> Awaitable[bool] | None:
        """Handle one SSE event: None when it was handled at once (a text delta of an open
        text block whose output had room: the per-token path, with no checkpoint), otherwise
        the rest of its handling to await, whose result says whether it was ``message_stop``.

        Raises (here or from the awaitable):
            ProviderError: the server sent an ``error`` event, an unknown stop reason, or an
                event that cannot be read.
        """
        name = sse.event
        if name == "content_block_delta":
            try:
                event = orjson.loads(sse.data)
            except orjson.JSONDecodeError:
                return self._dispatch_checked(sse, self._parse(sse))
            try:
                if event["type"] == "content_block_delta":
                    delta = event["delta"]
                    text_block = self._texts.get(event["index"])
                    if text_block is not None and delta["type"] == "text_delta":
                        # `_delta` inline: the per-token path.
                        index, append = text_block
                        text = delta["text"]
                        append(text)
                        out_event = text_delta_event(index, text, self._builder.snapshot())
                        try:  # `out.emit` inline
                            self._out.push_nowait(out_event)
                        except trio.WouldBlock:
                            return self._push(out_event)
                        return None
            except (KeyError, TypeError, AttributeError) as exc:
                raise self._malformed(sse, exc) from exc
            return self._dispatch_checked(sse, event)
        if name == "error":
            raise ProviderError(sse.data)
        if name not in _MESSAGE_EVENTS:
            return None  # ping, and event types this port does not know
        return self._dispatch_checked(sse, self._parse(sse))

    async def _push(self, event: TextDeltaEvent) -> bool:
        await self._out.push(event)
        return False

    async def _dispatch_checked(self, sse: SSEEvent, event: Any) -> bool:
        try:
            return await self._dispatch(event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise self._malformed(sse, exc) from exc

    @staticmethod
    def _parse(sse: SSEEvent) -> Any:
        try:
            return parse_json_with_repair(sse.data)
        except ValueError as exc:
            raise InvalidStreamError(
                f"Could not parse Anthropic SSE event {sse.event}: {exc}; data={sse.data}"
            ) from exc

    @staticmethod
    def _malformed(sse: SSEEvent, exc: Exception) -> InvalidStreamError:
        return InvalidStreamError(
            f"Malformed Anthropic SSE event {sse.event} ({type(exc).__name__}: {exc}): {sse.data}"
        )

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
            self._texts[api_index] = (index, builder.chunk_appender(index))
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
                await self._out.emit(text_delta_event(index, text, builder.snapshot()))
        elif delta_type == "thinking_delta":
            if kind == "thinking":
                text = delta["thinking"]
                builder.append(index, text)
                await self._out.emit(thinking_delta_event(index, text, builder.snapshot()))
        elif delta_type == "input_json_delta":
            if kind == "toolCall":
                text = delta["partial_json"]
                builder.append(index, text)
                await self._out.emit(tool_call_delta_event(index, text, builder.snapshot()))
        elif delta_type == "signature_delta" and kind == "thinking":
            signature = self._signatures.get(index, "") + delta["signature"]
            self._signatures[index] = signature
            builder.set_signature(index, signature)

    async def _block_stop(self, api_index: int) -> None:
        index = self._open.pop(api_index, None)
        self._texts.pop(api_index, None)
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
