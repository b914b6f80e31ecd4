"""A real HTTP/1.1 server on 127.0.0.1 for provider tests.

Providers are tested over real sockets: httpx connects, sends its request, and reads a chunked
``text/event-stream`` answer written by a handler. Handlers can pace the stream, cut it into
arbitrary pieces, answer with an error status, or drop the connection mid-body. The server
records every request and counts connections, so a test can tell whether a cancelled stream
gave its connection back.

Usage::

    async with serve(sse_handler(fixture_bytes)) as server:
        model = attrs.evolve(model, base_url=server.url("/v1"))
        ...
        assert server.requests[0].json()["stream"] is True
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import trio
import trio.lowlevel

MAX_HEADER_BYTES = 64 * 1024


@attrs.define
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def json(self) -> Any:
        return json.loads(self.body)


class ConnectionDropped(Exception):
    """Raised inside a handler to close the socket without finishing the response."""


class ResponseWriter:
    """Writes one response on a connection (chunked when streaming)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self.started = False
        self.finished = False

    async def start(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}"]
        merged = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}
        merged.update(headers or {})
        lines += [f"{k}: {v}" for k, v in merged.items()]
        await self._stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.started = True

    async def write(self, data: bytes) -> None:
        if data:
            await self._stream.send_all(b"%x\r\n%s\r\n" % (len(data), data))

    async def end(self) -> None:
        await self._stream.send_all(b"0\r\n\r\n")
        self.finished = True

    async def wait_closed(self) -> None:
        """Wait until the client closes the connection (reads and drops what it sends)."""
        try:
            while await self._stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        raise ConnectionDropped

    async def send_body(
        self, status: int, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        """A whole non-streaming response (error statuses, JSON)."""
        merged = {"content-type": "application/json", "content-length": str(len(body))}
        merged.update(headers or {})
        lines = [f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}"]
        lines += [f"{k}: {v}" for k, v in merged.items()]
        await self._stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        self.started = self.finished = True


Handler = Callable[[Request, ResponseWriter], Awaitable[None]]


@attrs.define
class LoopbackServer:
    port: int
    requests: list[Request] = attrs.field(factory=list)
    connections_opened: int = 0
    connections_open: int = 0
    connection_closed: trio.Event = attrs.field(factory=trio.Event)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


async def _read_request(stream: trio.SocketStream, buffer: bytearray) -> Request | None:
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
        if len(buffer) > MAX_HEADER_BYTES:
            raise ValueError("request head too large")
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < length:
        data = await stream.receive_some(65536)
        if not data:
            return None
        body += data
    buffer[:] = body[length:]
    return Request(method, target, headers, bytes(body[:length]))


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[LoopbackServer]:
    """Serve ``handler`` on an ephemeral loopback port for the duration of the block."""
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(
                trio.serve_tcp,
                lambda stream: _connection(server, handler, stream),
                0,
                host="127.0.0.1",
            )
        )
        server = LoopbackServer(port=listeners[0].socket.getsockname()[1])
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


async def _connection(server: LoopbackServer, handler: Handler, stream: trio.SocketStream) -> None:
    server.connections_opened += 1
    server.connections_open += 1
    buffer = bytearray()
    try:
        async with stream:
            while True:
                request = await _read_request(stream, buffer)
                if request is None:
                    return
                server.requests.append(request)
                writer = ResponseWriter(stream)
                try:
                    await handler(request, writer)
                except ConnectionDropped:
                    return
                if not writer.finished:
                    await writer.end()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        server.connections_open -= 1
        server.connection_closed.set()
        server.connection_closed = trio.Event()


# --------------------------------------------------------------------------- handlers


def sse_bytes(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """Frame ``(event name or None, data)`` pairs as SSE; dict/list data is JSON-encoded."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        frame = f"event: {name}\n" if name else ""
        frame += "".join(f"data: {line}\n" for line in text.split("\n"))
        out.append(frame + "\n")
    return "".join(out).encode()


def split_every(data: bytes, size: int) -> list[bytes]:
    """Cut ``data`` into pieces of ``size`` bytes (the last may be shorter)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def sse_handler(
    body: bytes | Sequence[bytes],
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    chunk_size: int | None = None,
    drop_after: int | None = None,
    hang_after: int | None = None,
) -> Handler:
    """Answer every request by streaming ``body``.

    Args:
        body: the SSE bytes, or pre-cut pieces written one write per piece.
        chunk_size: cut ``body`` into pieces of this many bytes.
        drop_after: close the connection after this many bytes, without ending the body.
        hang_after: after this many bytes, send nothing more until the client goes away.
    """

    async def handle(request: Request, writer: ResponseWriter) -> None:
        pieces: list[bytes]
        if isinstance(body, bytes):
            pieces = split_every(body, chunk_size) if chunk_size else [body]
        else:
            pieces = list(body)
        await writer.start(status, headers)
        sent = 0
        for piece in pieces:
            for limit, action in ((drop_after, "drop"), (hang_after, "hang")):
                if limit is not None and sent + len(piece) > limit:
                    await writer.write(piece[: limit - sent])
                    if action == "drop":
                        raise ConnectionDropped
                    await writer.wait_closed()
            await writer.write(piece)
            sent += len(piece)
            await trio.lowlevel.checkpoint()

    return handle


def error_handler(status: int, body: Any, headers: dict[str, str] | None = None) -> Handler:
    """Answer every request with ``status`` and a JSON (or text) body."""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(status, raw, headers)

    return handle


def sequence_handler(*handlers: Handler) -> Handler:
    """Use the handlers in turn, one per request; the last one repeats."""
    queue = list(handlers)

    async def handle(request: Request, writer: ResponseWriter) -> None:
        current = queue.pop(0) if len(queue) > 1 else queue[0]
        await current(request, writer)

    return handle
