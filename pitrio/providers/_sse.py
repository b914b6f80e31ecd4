"""An incremental Server-Sent Events decoder (the WHATWG ``text/event-stream`` format).

Every HTTP provider reads its response through :class:`SSEDecoder`: bytes go in as they
arrive, complete events come out. The decoder keeps only the unfinished last line of the
stream, so the cost is linear in the bytes received however the server chunks them. Lines may
end with ``\\n``, ``\\r\\n`` or a lone ``\\r``, also when a ``\\r\\n`` pair is split
across two reads.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from typing import Final, NamedTuple


class SSEEvent(NamedTuple):
    """One dispatched event (a named tuple: one allocation, as cheap as Python makes one).

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


_event: Final = tuple.__new__
"""Builds an :class:`SSEEvent` from its four fields without the named tuple's Python-level
``__new__`` (which only fills the defaults and calls this)."""


class SSEDecoder:
    """Turns a byte stream into :class:`SSEEvent` objects.

    One pass per chunk: the complete lines of a chunk (up to its last line break) are decoded
    from UTF-8 at once (a line break is never inside a UTF-8 sequence, so decoding whole lines
    together is decoding each) and split once, at the blank lines that end events; only the
    unfinished last line is kept for the next chunk. An event that is one ``data:`` line, or an
    ``event:`` line then one ``data:`` line (nearly every event of an LLM stream), becomes an
    :class:`SSEEvent` with two slices and no per-line work; any other event goes through the
    line-by-line rules.

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
        # Every piece but the last ends with a blank line; the last holds the complete lines
        # of an event not ended yet ("" or text ending in "\n").
        blocks = buffer[: end + 1].decode("utf-8", "replace").split("\n\n")
        tail = blocks.pop()
        events: list[SSEEvent] = []
        if blocks:
            last_id = self._last_id
            clean = not self._data and self._event is None and self._retry is None
            for block in blocks:
                if clean:
                    if block.startswith("data: "):
                        if "\n" not in block:
                            events.append(_event(SSEEvent, ("message", block[6:], last_id, None)))
                            continue
                    else:
                        head, data_field, data = block.partition("\ndata: ")
                        if (
                            data_field
                            and head.startswith("event: ")
                            and "\n" not in head
                            and "\n" not in data
                        ):
                            name = head[7:] or "message"
                            events.append(_event(SSEEvent, (name, data, last_id, None)))
                            continue
                self._lines(f"{block}\n".split("\n"), events)  # the last line: the blank one
                last_id = self._last_id
                clean = not self._data and self._event is None and self._retry is None
        if tail:
            self._lines(tail[:-1].split("\n"), events)
        return events

    def _lines(self, lines: list[str], events: list[SSEEvent]) -> None:
        """The line-by-line rules: fields into the pending event, a blank line dispatches it."""
        data = self._data
        for line in lines:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            elif line.startswith("event:"):
                self._event = line[7:] if line.startswith(" ", 6) else line[6:]
            elif line:
                self._field(line)
            elif data or self._event is not None:
                if data:  # an empty data buffer dispatches nothing
                    events.append(
                        _event(
                            SSEEvent,
                            (
                                self._event or "message",
                                data[0] if len(data) == 1 else "\n".join(data),
                                self._last_id,
                                self._retry,
                            ),
                        )
                    )
                    data.clear()
                self._event = None
                self._retry = None

    def close(self) -> list[SSEEvent]:
        """End of stream: an event the server did not terminate with a blank line is still
        dispatched, as pi's parser does (the format says to drop it, but servers that omit the
        last blank line exist and the event is complete)."""
        tail = self._buffer
        self._buffer = b""
        self._pending_cr = False
        return self.feed(tail + b"\n\n" if tail else b"\n")

    def _field(self, line: str) -> None:
        """A line other than ``data:`` and blank: ``event``, ``id``, ``retry``, or ignored."""
        name, colon, value = line.partition(":")
        if not colon:
            value = ""
        elif value.startswith(" "):
            value = value[1:]
        if name == "data":  # a bare "data" line: an empty data line
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
