"""The plain-HTTP side of ``pitrio serve``: one request head read with h11, answered or handed on.

The host listens on one port for both HTTP and websockets. trio-websocket's server only does
the upgrade, so each TCP connection starts here: :func:`read_request_head` reads the request
head with h11 (bounded in size and time), keeping every byte it read. A plain ``GET`` is
answered here (:func:`send_response`) and the connection closed; an upgrade request is handed
to trio-websocket on a :class:`ReplayStream` that gives back the bytes already read, so
wsproto parses the same handshake from the start.
"""

from __future__ import annotations

import hmac
import mimetypes
import os
from collections.abc import Iterable
from typing import Final
from urllib.parse import parse_qs, urlsplit

import attrs
import h11
import trio

__all__ = [
    "HEAD_TIMEOUT",
    "MAX_HEAD_BYTES",
    "STATIC_DIR",
    "HttpRequest",
    "ReplayStream",
    "content_type",
    "read_request_head",
    "read_static",
    "send_response",
    "token_matches",
]

MAX_HEAD_BYTES: Final = 16384
"""The longest request head accepted (h11's own default): a longer one is answered 431."""
HEAD_TIMEOUT: Final = 10.0
"""Seconds a client has to send its request head, so idle sockets cannot pile up."""
READ_CHUNK: Final = 4096
STATIC_DIR: Final = os.path.join(os.path.dirname(__file__), "static")
"""The browser page's files (``index.html``, scripts, styles), served at ``/<name>``."""

_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    426: "Upgrade Required",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}

_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
}


@attrs.frozen
class HttpRequest:
    """A parsed request head.

    Attributes:
        method: ``GET``, ``HEAD`` ...
        target: the request target as sent (path and query).
        path: the target's path.
        query: the query's parameters (first value of each).
        headers: lower-case names to values (the last of repeated headers wins).
    """

    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]

    @property
    def is_upgrade(self) -> bool:
        """Whether this is a websocket upgrade request."""
        connection = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        return "upgrade" in connection and self.headers.get("upgrade", "").lower() == "websocket"

    @property
    def token(self) -> str | None:
        """The bearer token: the ``Authorization: Bearer`` header, else ``?token=``."""
        auth = self.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return self.query.get("token") or None

    @property
    def origin(self) -> str | None:
        """The ``Origin`` header (browsers send it; other clients usually do not)."""
        return self.headers.get("origin")


def token_matches(given: str | None, expected: Iterable[str]) -> str | None:
    """The expected token ``given`` equals (compared in constant time), else ``None``."""
    if not given:
        return None
    found = None
    for candidate in expected:
        if hmac.compare_digest(given.encode(), candidate.encode()):
            found = candidate
    return found


class HeadError(Exception):
    """The request head could not be read; ``status`` is the answer to send (0: none)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def read_request_head(stream: trio.abc.ReceiveStream) -> tuple[HttpRequest, bytes]:
    """Read one request head; return it and every byte read (the head and what followed).

    Raises:
        HeadError: the peer closed first (status 0), sent a malformed head (400), a head over
            :data:`MAX_HEAD_BYTES` (431), or took longer than :data:`HEAD_TIMEOUT` (408).
    """
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    raw = bytearray()
    with trio.move_on_after(HEAD_TIMEOUT):
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as exc:
                raise HeadError(exc.error_status_hint) from None
            if isinstance(event, h11.Request):
                return _request(event), bytes(raw)
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive_some(READ_CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    raise HeadError(0) from None
                if not data:
                    raise HeadError(0)
                raw += data
                parser.receive_data(bytes(data))
                continue
            raise HeadError(0 if isinstance(event, h11.ConnectionClosed) else 400)
    raise HeadError(408)


def _request(event: h11.Request) -> HttpRequest:
    target = event.target.decode("latin-1")
    split = urlsplit(target)
    query = {k: v[0] for k, v in parse_qs(split.query).items() if v}
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in event.headers}
    return HttpRequest(
        method=event.method.decode("latin-1"),
        target=target,
        path=split.path or "/",
        query=query,
        headers=headers,
    )


async def send_response(
    stream: trio.abc.SendStream,
    status: int,
    body: bytes = b"",
    *,
    content_type: str = "text/plain; charset=utf-8",
    head_only: bool = False,
    extra_headers: Iterable[tuple[str, str]] = (),
) -> None:
    """Send one response with ``Connection: close`` (the caller then closes the stream)."""
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
        "Cache-Control: no-store",
        "X-Content-Type-Options: nosniff",
        "Referrer-Policy: no-referrer",
        *(f"{name}: {value}" for name, value in extra_headers),
    ]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    await stream.send_all(head if head_only else head + body)


def content_type(name: str) -> str:
    """The ``Content-Type`` of a static file, by its extension."""
    ext = os.path.splitext(name)[1].lower()
    known = _TYPES.get(ext)
    if known is not None:
        return known
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def read_static(path: str, root: str = STATIC_DIR) -> bytes | None:
    """The bytes of the static file a URL path names (``/`` is ``index.html``), or ``None``.

    Only regular files inside ``root`` are served: no ``..``, no hidden files, no folders.
    Blocking: call it in a worker thread.
    """
    name = "index.html" if path in ("", "/") else path.lstrip("/")
    parts = name.split("/")
    if any(not part or part.startswith(".") for part in parts):
        return None
    full = os.path.realpath(os.path.join(root, *parts))
    if not full.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(full):
        return None
    try:
        with open(full, "rb") as f:
            return f.read()
    except OSError:
        return None


class ReplayStream(trio.abc.Stream):
    """A stream that first gives back ``prefix`` (bytes already read), then reads ``stream``.

    Args:
        stream: the TCP stream.
        prefix: what was read from it before (the request head, and anything after it).
    """

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self.stream = stream
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else max_bytes
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            await trio.lowlevel.checkpoint()
            return data
        try:
            return bytes(await self.stream.receive_some(max_bytes))
        except trio.ClosedResourceError as exc:
            # A socket closed under its reader fails with EBADF inside trio, which says "closed"
            # but keeps that OSError as context; on CPython 3.13 its traceback and a
            # contextlib frame refer to each other, which keeps this connection alive until
            # the next cycle collection. Dropping the traceback breaks the cycle.
            if exc.__context__ is not None:
                exc.__context__.__traceback__ = None
            raise

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        self._prefix = b""
        await self.stream.aclose()
