"""pitrio's HTTP/1.1 exchange on one connection: the request written and the response head
parsed by h11, the body read by a decoder of pitrio's own.

Why not httpcore's: it hands every received piece of a body through h11's state machine (a
regex match per chunk header, an event object per piece) under an exception-mapping context
manager, and through four async generators, before the SSE decoder sees it. When a server
paces its stream, one read is one event, so that cost is paid per streamed delta. Here the
head is parsed once by h11 (the part with the rules worth not rewriting: header validation,
``1xx`` answers, ``Content-Length`` checks), and the body is read straight from the Trio
stream by :class:`ResponseBody`, which decodes the chunked framing of a whole read in one pass
and returns every payload byte that read completed at once.

**Framing.** ``Transfer-Encoding: chunked`` (chunk extensions ignored, trailers read and
dropped), ``Content-Length``, or, with neither, the body runs to the end of the connection.
``HEAD`` answers and ``1xx``/``204``/``304`` have no body.

**Keep-alive.** A connection is reused only when its last body was read to its exact end (the
terminating chunk and its trailers, or the last of ``Content-Length`` bytes), nothing more
arrived after it, and neither side asked to close (``Connection: close``, HTTP/1.0).
Otherwise closing the response closes the connection.

**Failures** are httpx's exceptions, with the texts h11 gives: a connection dropped before the
body's end is :class:`httpx2.RemoteProtocolError` ("peer closed connection without sending
complete message body ..."), malformed chunk framing is :class:`httpx2.RemoteProtocolError`
naming what was wrong, a reset connection :class:`httpx2.ReadError`. Reads have no timeout
unless the request's ``read`` timeout is set (a stream's silence is bounded by the caller's one
stall deadline); never a wait on anything but the socket.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterable, Mapping
from typing import Final, cast

import h11
import httpx2
import trio

READ_BYTES: Final = 64 * 1024
"""Bytes asked of the socket per read."""
MAX_HEAD_BYTES: Final = 100 * 1024
"""The largest response head (status line and headers) accepted, as httpcore's."""
MAX_CHUNK_LINE: Final = 4096
"""The longest chunk-size line (with its extensions) accepted."""
MAX_TRAILER_BYTES: Final = 64 * 1024
"""The largest trailer section accepted after the last chunk."""
WRITE_BATCH: Final = 64 * 1024
"""Request bytes gathered before a write (a JSON request body is usually written at once)."""

_HEX: Final = b"0123456789abcdefABCDEF"
_MAX_SIZE_DIGITS: Final = 20  # h11's bound

# Connection states.
_NEW: Final = 0
_ACTIVE: Final = 1
_IDLE: Final = 2
_CLOSED: Final = 3

# Body framings.
_CHUNKED: Final = 0
_LENGTH: Final = 1
_TO_CLOSE: Final = 2

# ResponseBody._remaining in chunked framing: > 0 data bytes left in the current chunk, or:
_SIZE_LINE: Final = 0
_DATA_END: Final = -1  # the CRLF after a chunk's data
_TRAILERS: Final = -2  # after the last chunk


class HTTP11Connection:
    """One HTTP/1.1 connection on a Trio stream, one request at a time.

    The pool asks it the questions httpcore's connections answer (`is_idle`, `has_expired`
    ...). `request` sends a request and returns once the response head has arrived; the
    response's :class:`ResponseBody` gives the connection back (idle, or closed) when it is
    closed.

    Resource handling: owns ``stream``; `aclose` closes it.
    """

    __slots__ = ("_expire_at", "_keepalive_expiry", "_socket", "_state", "_stream")

    def __init__(
        self,
        stream: trio.abc.Stream,
        socket: trio.socket.SocketType | None,
        keepalive_expiry: float | None,
    ) -> None:
        self._stream = stream
        self._socket = socket
        self._keepalive_expiry = keepalive_expiry
        self._state = _NEW
        self._expire_at: float | None = None

    # ----------------------------------------------------------------- the pool's questions

    def is_available(self) -> bool:
        return self._state == _IDLE

    def is_ready(self) -> bool:
        """Whether it can take a request now (new, or idle)."""
        return self._state == _IDLE or self._state == _NEW

    def is_idle(self) -> bool:
        return self._state == _IDLE

    def is_closed(self) -> bool:
        return self._state == _CLOSED

    def has_expired(self) -> bool:
        """Idle past its keep-alive expiry, or the server hung up (an idle connection that
        is readable can only be about to read the end of the stream)."""
        if self._state != _IDLE:
            return self._state == _CLOSED
        expire_at = self._expire_at
        if expire_at is not None and time.monotonic() > expire_at:
            return True
        return self._socket is not None and self._socket.is_readable()

    async def aclose(self) -> None:
        self._state = _CLOSED
        await trio.aclose_forcefully(self._stream)

    # ----------------------------------------------------------------- one exchange

    async def request(
        self,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        content: AsyncIterable[bytes],
        timeouts: Mapping[str, float | None],
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], ResponseBody]:
        """Send a request, wait for the response head; return the status, reason phrase,
        headers (as received) and the body to read.

        Raises:
            httpx2.TransportError: the request could not be sent or the head not read; the
                connection is closed then.
        """
        if self._state not in (_NEW, _IDLE):
            raise RuntimeError("HTTP11Connection.request while a response is open")
        self._state = _ACTIVE
        self._expire_at = None
        try:
            h11_connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
            # A server may answer (an error status) and close before reading the whole
            # request: a failed write still reads what it said, as httpcore does.
            with contextlib.suppress(httpx2.WriteError):
                await self._send(h11_connection, method, target, headers, content, timeouts)
            read_timeout = timeouts.get("read")
            response = await self._receive_head(h11_connection, read_timeout)
            trailing, _ = h11_connection.trailing_data
            keep_alive = response.http_version == b"1.1"
            framing = _TO_CLOSE
            length = 0
            for name, value in response.headers:
                if name == b"transfer-encoding":
                    framing = _CHUNKED  # h11 refuses any other transfer coding
                elif name == b"content-length" and framing == _TO_CLOSE:
                    framing = _LENGTH
                    length = int(value)
                elif name == b"connection" and b"close" in value.lower():
                    keep_alive = False
            if method == b"HEAD" or response.status_code in (204, 304):
                framing, length = _LENGTH, 0
            body = ResponseBody(
                self, self._stream, framing, length, trailing, read_timeout, keep_alive
            )
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.aclose()
            raise
        return response.status_code, response.reason, response.headers.raw_items(), body

    async def _send(
        self,
        h11_connection: h11.Connection,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        content: AsyncIterable[bytes],
        timeouts: Mapping[str, float | None],
    ) -> None:
        timeout = timeouts.get("write")
        try:
            head = h11_connection.send(h11.Request(method=method, target=target, headers=headers))
            pending = [head] if head else []
            size = len(head or b"")
            async for part in content:
                data = h11_connection.send(h11.Data(data=part))
                if data:
                    pending.append(data)
                    size += len(data)
                    if size >= WRITE_BATCH:
                        await self._write(b"".join(pending), timeout)
                        pending.clear()
                        size = 0
            tail = h11_connection.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:
            raise httpx2.LocalProtocolError(str(exc)) from exc
        if tail:
            pending.append(tail)
        await self._write(b"".join(pending), timeout)

    async def _write(self, data: bytes, timeout: float | None) -> None:  # noqa: ASYNC109
        if not data:
            return
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self._stream.send_all(data)
        except trio.TooSlowError as exc:
            raise httpx2.WriteTimeout("timed out sending the request") from exc
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpx2.WriteError(str(exc)) from exc

    async def _receive_head(
        self,
        h11_connection: h11.Connection,
        timeout: float | None,  # noqa: ASYNC109 (the request's read timeout)
    ) -> h11.Response:
        while True:
            try:
                event = h11_connection.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx2.RemoteProtocolError(str(exc)) from exc
            if event is h11.NEED_DATA:
                data = await read(self._stream, timeout)
                if not data and h11_connection.their_state is h11.SEND_RESPONSE:
                    raise httpx2.RemoteProtocolError(
                        "Server disconnected without sending a response."
                    )
                h11_connection.receive_data(data)
            elif isinstance(event, h11.Response):
                return event
            elif not isinstance(event, h11.InformationalResponse):
                raise httpx2.RemoteProtocolError(f"unexpected {type(event).__name__} event")

    async def _response_closed(self, reusable: bool) -> None:
        """The response's body was closed: keep the connection when ``reusable``."""
        if reusable and self._state == _ACTIVE:
            self._state = _IDLE
            if self._keepalive_expiry is not None:
                self._expire_at = time.monotonic() + self._keepalive_expiry
            return
        await self.aclose()


async def read(stream: trio.abc.ReceiveStream, timeout: float | None) -> bytes:  # noqa: ASYNC109
    """One read of at most :data:`READ_BYTES`, its failures as httpx's exceptions."""
    try:
        if timeout is None:
            # SocketStream and SSLStream return bytes (the interface allows a bytearray).
            return cast(bytes, await stream.receive_some(READ_BYTES))
        with trio.fail_after(timeout):
            return cast(bytes, await stream.receive_some(READ_BYTES))
    except trio.TooSlowError as exc:
        raise httpx2.ReadTimeout("timed out waiting for data") from exc
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise httpx2.ReadError(str(exc)) from exc


class ResponseBody:
    """The body of one HTTP/1.1 response, read from the connection's stream.

    `receive` returns the next payload bytes (all that one read of the socket completed: with
    chunked framing, the data of every chunk in it, joined), ``b""`` at the body's end. `aclose`
    gives the connection back (see the module docstring for when it is kept).

    Resource handling: owned by the task that reads the response; close it once.
    """

    __slots__ = (
        "_buffer",
        "_connection",
        "_framing",
        "_keep_alive",
        "_length",
        "_ready",
        "_remaining",
        "_stream",
        "_timeout",
        "done",
        "spoiled",
    )

    def __init__(
        self,
        connection: HTTP11Connection | None,
        stream: trio.abc.ReceiveStream,
        framing: int,
        length: int,
        initial: bytes,
        timeout: float | None,
        keep_alive: bool,
    ) -> None:
        self._connection = connection
        self._stream = stream
        self._framing = framing
        self._length = length
        self._remaining = length if framing == _LENGTH else _SIZE_LINE
        self._timeout = timeout
        self._keep_alive = keep_alive
        self._buffer = b""  # the undecoded end of the last read (part of a chunk-size line)
        self.done = framing == _LENGTH and length == 0
        """Whether the body was read to its end."""
        self.spoiled = False
        """Whether bytes came after the body's end (the connection cannot be reused)."""
        self._ready = self._decode(initial) if initial else b""

    async def receive(self) -> bytes:
        """The next payload bytes, ``b""`` once the body has ended.

        Raises:
            httpx2.RemoteProtocolError: the connection ended before the body did, or the
                chunked framing is malformed.
            httpx2.ReadError: the connection failed.
            httpx2.ReadTimeout: the request's read timeout passed with nothing read.
        """
        ready = self._ready
        if ready:
            self._ready = b""
            return ready
        decode = self._decode
        stream = self._stream
        timeout = self._timeout
        while not self.done:
            if timeout is None:  # `read` inline: a stream's reads have no timeout of their own
                try:
                    data = cast(bytes, await stream.receive_some(READ_BYTES))
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    raise httpx2.ReadError(str(exc)) from exc
            else:
                data = await read(stream, timeout)
            if not data:
                if self._framing == _TO_CLOSE:
                    self.done = True
                    self._keep_alive = False
                    break
                raise httpx2.RemoteProtocolError(self._incomplete())
            if self._buffer:
                data = self._buffer + data
                self._buffer = b""
            payload = decode(data)
            if payload:
                return payload
        return b""

    async def aclose(self) -> None:
        """Give the connection back: kept if the body was read to its exact end."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection._response_closed(self.done and self._keep_alive and not self.spoiled)

    def _incomplete(self) -> str:
        if self._framing == _CHUNKED:
            return (
                "peer closed connection without sending complete message body "
                "(incomplete chunked read)"
            )
        return (
            "peer closed connection without sending complete message body "
            f"(received {self._length - self._remaining} bytes, expected {self._length})"
        )

    def _decode(self, data: bytes) -> bytes:
        """The payload in ``data`` (which follows what was decoded so far); what cannot be
        decoded yet (part of a chunk-size line, of a chunk's CRLF, of the trailers) is kept."""
        if self._framing != _CHUNKED:
            if self._framing == _TO_CLOSE:
                return data
            remaining = self._remaining
            if len(data) < remaining:
                self._remaining = remaining - len(data)
                return data
            self._remaining = 0
            self.done = True
            if len(data) > remaining:
                self.spoiled = True
                return data[:remaining]
            return data
        # Chunked: one pass over the read, every complete piece of data taken.
        parts: list[bytes] = []
        pos = 0
        end = len(data)
        remaining = self._remaining
        while pos < end:
            if remaining > 0:  # inside a chunk's data
                stop = pos + remaining
                if stop >= end:
                    parts.append(data[pos:] if pos else data)
                    remaining = stop - end if stop > end else _DATA_END
                    pos = end
                    break
                parts.append(data[pos:stop])
                pos = stop
                remaining = _DATA_END
            if remaining == _DATA_END:
                if end - pos < 2:
                    if data[pos] != 13:  # b"\r"
                        raise _malformed(f"expected CRLF after a chunk's data, got {data[pos:]!r}")
                    break
                if data[pos] != 13 or data[pos + 1] != 10:
                    raise _malformed(
                        f"expected CRLF after a chunk's data, got {data[pos : pos + 2]!r}"
                    )
                pos += 2
                remaining = _SIZE_LINE
                continue
            if remaining == _TRAILERS:
                if data.startswith(b"\r\n", pos):
                    pos += 2
                else:
                    close = data.find(b"\r\n\r\n", pos)
                    if close < 0:
                        if end - pos > MAX_TRAILER_BYTES:
                            raise _malformed("trailer section too long")
                        break
                    pos = close + 4
                self.done = True
                if pos < end:
                    self.spoiled = True
                pos = end
                break
            # A chunk-size line.
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                if end - pos > MAX_CHUNK_LINE:
                    raise _malformed("chunk-size line too long")
                break
            remaining = _chunk_size(data[pos:eol])
            pos = eol + 2
            if remaining == 0:
                remaining = _TRAILERS
        self._remaining = remaining
        if pos < end:
            self._buffer = data[pos:]
        if not parts:
            return b""
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _chunk_size(line: bytes) -> int:
    """The size on a chunk-size line (without its CRLF): hex digits, then optionally
    extensions (``;...``, ignored) and trailing blanks, as h11 accepts."""
    semicolon = line.find(b";")
    size = line if semicolon < 0 else line[:semicolon]
    size = size.rstrip(b" \t")
    if not size or len(size) > _MAX_SIZE_DIGITS or size.strip(_HEX):
        raise _malformed(f"illegal chunk-size line {line[:64]!r}")
    return int(size, 16)


def _malformed(what: str) -> httpx2.RemoteProtocolError:
    return httpx2.RemoteProtocolError(f"malformed chunked encoding: {what}")
