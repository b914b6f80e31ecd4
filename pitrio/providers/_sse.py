"""An incremental Server-Sent Events decoder (the WHATWG ``text/event-stream`` format).

Every HTTP provider reads its response through :class:`SSEDecoder`: bytes go in as they
arrive, complete events come out. The decoder keeps only the unfinished tail of the stream, so
the cost is linear in the bytes received however the server chunks them. Lines may end with
``\\n``, ``\\r\\n`` or a lone ``\\r``, also when a ``\\r\\n`` pair is split across two reads.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable

import attrs


@attrs.frozen(slots=True)
class SSEEvent:
    """One dispatched event.

    Attributes:
        event: the ``event:`` field, ``"message"`` when the server sent none.
        data: the ``data:`` lines joined with ``\\n``.
        id: the last ``id:`` seen on the stream so far, if any.
        retry: the ``retry:`` reconnection time in ms, when this event carried one.
    """

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns a byte stream into :class:`SSEEvent` objects.

    Resource handling: plain state, owned by the task that reads the response.
    """

    __slots__ = ("_buffer", "_data", "_event", "_last_id", "_pending_cr", "_retry")

    def __init__(self) -> None:
        self._buffer = b""
        self._pending_cr = False
        self._event: str | None = None
        self._data: list[str] = []
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk`` and return the events it completed (often none or one)."""
        if not chunk:
            return []
        if self._pending_cr:
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._pending_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer + chunk if self._buffer else chunk
        end = buffer.rfind(b"\n")
        if end < 0:
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 1 :]
        events: list[SSEEvent] = []
        for raw in buffer[:end].split(b"\n"):
            self._line(raw, events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: an event the server did not terminate with a blank line is still
        dispatched, as pi's parser does (the format says to drop it, but servers that omit the
        last blank line exist and the event is complete)."""
        events: list[SSEEvent] = []
        if self._buffer:
            self._line(self._buffer, events)
            self._buffer = b""
        self._line(b"", events)
        return events

    def _line(self, raw: bytes, events: list[SSEEvent]) -> None:
        if not raw:
            if self._data or self._event is not None:
                data = "\n".join(self._data)
                if data:  # an empty data buffer dispatches nothing
                    events.append(
                        SSEEvent(self._event or "message", data, self._last_id, self._retry)
                    )
                self._event = None
                self._data = []
                self._retry = None
            return
        line = raw.decode("utf-8", "replace")
        name, colon, value = line.partition(":")
        if not colon:
            value = ""
        elif value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        # Anything else, a comment (empty name) included, is ignored.


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncGenerator[SSEEvent, None]:
    """Decode an async stream of byte chunks into events.

    Closing this generator closes ``chunks`` too when it is an async generator, so a reader
    that stops early leaves nothing suspended.
    """
    decoder = SSEDecoder()
    try:
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                yield event
        for event in decoder.close():
            yield event
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
