"""The HTTP layer every wire-API provider shares: one pooled client, SSE requests, failures.

Kept in one module: the pool, the Trio network layer and SSE requests share the
stall deadline and the failure mapping.

**One client per Trio run.** ``async with open_http_client():`` installs an
:class:`httpx2.AsyncClient` (httpx as it is maintained today) that every provider request made
inside the block uses; hosts, the CLI and load tests open it once. Its transport is
`PooledTransport`: no limit on connections unless one is set (every concurrent stream has its
own, and the next request reuses a finished one's keep-alive connection), each step of the pool
O(1), HTTP/2 where a TLS server offers it, one TLS context per process, and reads with no
cancel scope of their own. HTTP/1.1 is pitrio's own exchange (:mod:`._http11`: h11 parses the
response head once, a reader of pitrio's decodes the body straight from the Trio stream), and
:func:`open_sse` reads that body directly, with no generator between the socket and the SSE
decoder. A request made with no client open gets a client of its own for
that request, which is correct but cannot reuse connections. The client lives in a
:class:`trio.lowlevel.RunVar` because its pooled connections belong to one Trio run.

**Failures are data.** :func:`describe_failure` turns what can go wrong on the way (an HTTP
error status with its body, a refused or dropped connection, a timeout, an invalid event) into
the ``errorMessage`` text that ends the assistant message; providers do not raise. The texts
are chosen to match pi's retryable-error pattern where pi retries (``429``, ``timed out``,
``connection lost`` ...).

**What counts as an event stream.** A 200 answer is read as SSE when its ``content-type`` is
``text/event-stream``. Under any other content type (OpenAI-compatible servers exist that send
SSE as ``text/plain``, ``application/json`` or nothing at all) the body is sniffed: its first
non-blank line must be an SSE line, a comment (``:``) or a ``data``, ``event``, ``id`` or
``retry`` field, else the answer is refused at once with :class:`NotAnEventStreamError` (a
proxy's ``text/html`` page, a non-streaming JSON document, binary garbage). Whatever the content
type, a body that ends without dispatching a single event is refused the same way. The error
names the status, the content type and the first :data:`BODY_HEAD_LIMIT` characters of the
body. Whether a stream that did carry events was *complete* (its terminal event, its finish
reason) is each wire API's own check.

**Stalls.** ``StreamOptions.stall_timeout_ms`` bounds the silence of a server: no byte for that
long, while waiting for the response headers or between two reads of the body, ends the stream
with :class:`StreamStalledError` ("Stream stalled: no data for 300 s ..."), worded so that the
session's retry treats it as transient. ``None`` means :data:`DEFAULT_STALL_TIMEOUT_S`, or the
request's ``timeout_ms`` when that is longer; ``0`` (or less) turns the check off, as in pi,
which has none. It is measured on Trio's clock, so a ``MockClock`` drives it in tests. One
deadline per request, moved forward as data comes, bounds it (see `_Stall`).

**Cancellation releases the connection.** Leaving :func:`open_sse` early (abort, an enclosing
cancel scope) closes the response under a shield, so the pool gets its slot back at once.

**Retries.** ``StreamOptions.max_retries`` (default 0) retries a request that failed before any
byte of the response was read, on status 408/409/429/5xx or a connection error, honouring
``retry-after`` and refusing to wait longer than ``max_retry_delay_ms``. pi leaves this to each
SDK (2 retries); pitrio defaults to none so that the session's Retry actor, which reports its
attempts as events, sees every failure.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import email.utils
import functools
import math
import os
import re
import ssl
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import asynccontextmanager
from typing import Any, Final, TypeAlias, cast

import httpcore2
import httpx2
import orjson
import trio

from pitrio._awaitable import maybe_await
from pitrio.providers._events import ErrorEvent
from pitrio.providers._http11 import HTTP11Connection, ResponseBody
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import Model, ProviderResponse, StreamOptions
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderError
from pitrio.providers._sse import SSEDecoder, SSEEvent
from pitrio.providers._stream import AssistantMessageEventStream, now_ms

DEFAULT_TIMEOUT_S: Final = 600.0
"""Timeout of connecting, sending and (when ``StreamOptions.timeout_ms`` is set) of each read,
when that option is unset. Reading the body is otherwise bounded by the stall timeout alone."""
CONNECT_TIMEOUT_S: Final = 30.0
CONNECT_RETRY_BACKOFF_S: Final = 0.5
"""The first wait before a connect retry (``retries``), doubled for each next one, as httpcore."""
KEEPALIVE_EXPIRY_S: Final = 5.0
"""How long an idle pooled connection is kept (httpx's default; servers keep theirs longer)."""
ERROR_BODY_LIMIT: Final = 8192
"""Bytes of an error response's body kept in the message (bodies are short JSON in practice)."""
DEFAULT_STALL_TIMEOUT_S: Final = 300.0
"""Silence (no byte from the server) after which a stream is given up when
``StreamOptions.stall_timeout_ms`` is unset. Generous on purpose: a local model working through
a long prompt on a CPU, or a reasoning model that streams nothing while it thinks, can be
silent for minutes before its first token; a server quiet for five minutes has hung."""
BODY_HEAD_LIMIT: Final = 200
"""Characters of a body that is not an event stream quoted in the error message."""
SNIFF_BYTES: Final = len(b"retry:")
"""Bytes of the first line that decide whether a body not labelled SSE is SSE."""
RETRY_BASE_DELAY_S: Final = 0.5
RETRY_MAX_BACKOFF_S: Final = 8.0
RETRYABLE_STATUS: Final = frozenset({408, 409, 429, 500, 502, 503, 504})

_client_var: trio.lowlevel.RunVar[httpx2.AsyncClient | None] = trio.lowlevel.RunVar(
    "pitrio_http_client", default=None
)

_TRANSPORT_OPTIONS: Final = frozenset(
    {"verify", "cert", "trust_env", "http1", "http2", "limits", "retries", "local_address", "uds"}
)
_PROXY_ENV: Final = ("http_proxy", "https_proxy", "all_proxy")


def make_http_client(**kwargs: Any) -> httpx2.AsyncClient:
    """Build a client with pitrio's defaults; keyword arguments override them.

    The defaults: HTTP/2 where a TLS server offers it, no limit on connections or on idle
    connections kept alive (every concurrent stream has its own connection, and a finished one
    is reused by the next request), connect and write timeouts, no read timeout (a stream's
    silence is bounded by the stall timeout of :func:`open_sse`), no redirects. Requests go
    through pitrio's own Trio network layer (see `PooledTransport`), except through a proxy
    (``proxy=``, ``mounts=``, or the ``*_PROXY`` environment variables), which httpx's own
    transports serve.
    """
    options: dict[str, Any] = {
        "http2": True,
        "timeout": httpx2.Timeout(DEFAULT_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, read=None),
        "limits": httpx2.Limits(
            max_connections=None,
            max_keepalive_connections=None,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        ),
        "follow_redirects": False,
    }
    options.update(kwargs)
    if "transport" not in options and not _uses_proxy(options):
        transport_options = {k: v for k, v in options.items() if k in _TRANSPORT_OPTIONS}
        options["transport"] = PooledTransport(**transport_options)
    return httpx2.AsyncClient(**options)


def _uses_proxy(options: Mapping[str, Any]) -> bool:
    if options.get("proxy") is not None or options.get("mounts"):
        return True
    if not options.get("trust_env", True):
        return False
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_ENV)


@asynccontextmanager
async def open_http_client(
    client: httpx2.AsyncClient | None = None, **kwargs: Any
) -> AsyncIterator[httpx2.AsyncClient]:
    """Install a shared client for provider requests made inside the block, then close it.

    Args:
        client: use this client (it is closed on exit too); otherwise one is built with
            :func:`make_http_client` and ``kwargs``.
    """
    own = client if client is not None else make_http_client(**kwargs)
    token = _client_var.set(own)
    try:
        async with own:
            yield own
    finally:
        _client_var.reset(token)


def current_http_client() -> httpx2.AsyncClient | None:
    """The client installed by :func:`open_http_client` in this run, if any."""
    return _client_var.get()


@asynccontextmanager
async def _request_client() -> AsyncIterator[httpx2.AsyncClient]:
    shared = _client_var.get()
    if shared is not None:
        yield shared
        return
    async with make_http_client() as client:
        yield client


# ---------------------------------------------------------------------------- transport


@functools.cache
def _default_ssl_context(trust_env: bool) -> ssl.SSLContext:
    """The verifying TLS context, built once per process (loading the trust store is the
    expensive part of building a client; a context is safe to share between clients)."""
    return httpcore2.default_ssl_context(_trust_env=trust_env)


_CORE_ERRORS: Final[tuple[tuple[type[Exception], type[httpx2.TransportError]], ...]] = (
    # Most specific first: the first match is the translation.
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.ProxyError, httpx2.ProxyError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
)


def _translate(exc: Exception) -> Exception:
    """httpx's exception for an httpcore one (as httpx's own transport maps them)."""
    for core, mapped in _CORE_ERRORS:
        if isinstance(exc, core):
            error = mapped(str(exc))
            error.__cause__ = exc
            return error
    return exc


class _TrioNetworkStream(httpcore2.AsyncNetworkStream):
    """A TCP (or TLS) connection as httpcore2 reads and writes it, on Trio.

    httpcore2's own Trio stream enters a cancel scope (an infinite one when no timeout is set)
    and an exception-mapping context manager around every read; this one reads with neither
    when there is no read timeout, which is the case of every stream pitrio reads (its stall
    deadline bounds the silence, one deadline per stream).
    """

    __slots__ = ("_stream",)

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream

    # The timeout parameters are httpcore2's interface (ASYNC109).
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        try:
            # SocketStream and SSLStream return bytes (the interface allows a bytearray).
            if timeout is None:
                return cast(bytes, await self._stream.receive_some(max_bytes))
            with trio.fail_after(timeout):
                return cast(bytes, await self._stream.receive_some(max_bytes))
        except trio.TooSlowError as exc:
            raise httpcore2.ReadTimeout(exc) from exc
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpcore2.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self._stream.send_all(buffer)
        except trio.TooSlowError as exc:
            raise httpcore2.WriteTimeout(exc) from exc
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpcore2.WriteError(exc) from exc

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        tls = trio.SSLStream(
            self._stream,
            ssl_context=ssl_context,
            server_hostname=server_hostname,
            https_compatible=True,
        )
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await tls.do_handshake()
        except BaseException as exc:
            await trio.aclose_forcefully(self._stream)
            if isinstance(exc, trio.TooSlowError):
                raise httpcore2.ConnectTimeout(exc) from exc
            if isinstance(exc, trio.BrokenResourceError):
                raise httpcore2.ConnectError(exc) from exc
            raise
        return _TrioNetworkStream(tls)

    @property
    def trio_stream(self) -> trio.abc.Stream:
        """The Trio stream read and written (a ``SocketStream``, or an ``SSLStream`` on one)."""
        return self._stream

    def socket(self) -> trio.socket.SocketType | None:
        """The socket under the stream, when it is a TCP or Unix socket."""
        stream = self._socket_stream()
        return None if stream is None else stream.socket

    def _socket_stream(self) -> trio.SocketStream | None:
        stream = self._stream
        while isinstance(stream, trio.SSLStream):
            stream = stream.transport_stream
        return stream if isinstance(stream, trio.SocketStream) else None

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            # httpcore asks for the negotiated ALPN protocol; an SSLStream forwards
            # selected_alpn_protocol(), version(), cipher() ... to its SSLObject.
            return self._stream if isinstance(self._stream, trio.SSLStream) else None
        stream = self._socket_stream()
        if stream is None:
            return None
        if info == "socket":
            return stream.socket
        if info == "client_addr":
            return stream.socket.getsockname()
        if info == "server_addr":
            return stream.socket.getpeername()
        if info == "is_readable":
            return stream.socket.is_readable()
        return None


class _TrioBackend(httpcore2.AsyncNetworkBackend):
    """Opens `_TrioNetworkStream` connections."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                stream = await trio.open_tcp_stream(host, port, local_address=local_address)
        except trio.TooSlowError as exc:
            raise httpcore2.ConnectTimeout(exc) from exc
        except (OSError, trio.BrokenResourceError) as exc:
            raise httpcore2.ConnectError(exc) from exc
        for option in socket_options or ():
            stream.setsockopt(*option)
        return _TrioNetworkStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                stream = await trio.open_unix_socket(path)
        except trio.TooSlowError as exc:
            raise httpcore2.ConnectTimeout(exc) from exc
        except (OSError, trio.BrokenResourceError) as exc:
            raise httpcore2.ConnectError(exc) from exc
        for option in socket_options or ():
            stream.setsockopt(*option)
        return _TrioNetworkStream(stream)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


_OriginKey: TypeAlias = tuple[bytes, bytes, int]


class PooledTransport(httpx2.AsyncBaseTransport):
    """httpx's transport interface over a connection pool whose every step is O(1).

    httpcore's pools (1.0.9's, and httpcore2's too) re-examine every connection on each
    request and each response close, probing each idle one's socket: at a thousand concurrent
    streams that is most of the CPU. This pool keeps, per origin, a stack of idle HTTP/1.1
    connections (the most recently used is taken first, its expiry checked then) and a list of
    HTTP/2 connections that can take more streams; a request takes one or opens one, and the
    response's close puts it back. Connections are `_Connection`: pitrio's HTTP/1.1 exchange,
    or httpcore2's HTTP/2 connection when TLS negotiates ``h2``, on pitrio's Trio network
    layer (`_TrioBackend`), with one TLS context per process when the
    default verification is used.

    ``limits``: ``max_connections`` bounds the open connections (a request waits for one, up
    to the pool timeout), ``max_keepalive_connections`` the idle ones kept, ``keepalive_expiry``
    how long an idle one is kept; ``None`` means no bound. The other options are those of
    ``httpx2.AsyncHTTPTransport``.

    Resource handling: belongs to one Trio run; closing it closes every connection.
    """

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx2.Limits | None = None,
        retries: int = 0,
        local_address: str | None = None,
        uds: str | None = None,
    ) -> None:
        if verify is True and cert is None:
            self._ssl_context = _default_ssl_context(trust_env)
        else:
            self._ssl_context = httpx2.create_ssl_context(
                verify=verify, cert=cert, trust_env=trust_env
            )
        limits = limits if limits is not None else httpx2.Limits()
        self._max_connections = (
            math.inf if limits.max_connections is None else limits.max_connections
        )
        self._max_idle = (
            math.inf
            if limits.max_keepalive_connections is None
            else limits.max_keepalive_connections
        )
        self._keepalive_expiry = limits.keepalive_expiry
        self._http1 = http1
        self._http2 = http2
        self._retries = retries
        self._local_address = local_address
        self._uds = uds
        self._backend = _TrioBackend()
        self._open: set[_Connection] = set()
        self._idle: dict[_OriginKey, collections.deque[_Connection]] = {}
        self._idle_count = 0
        self._shared: dict[_OriginKey, list[_Connection]] = {}
        self._waiters: collections.deque[trio.Event] = collections.deque()
        self._closed = False

    @property
    def connections(self) -> list[_Connection]:
        """The open connections (busy and idle)."""
        return list(self._open)

    # ----------------------------------------------------------------- taking a connection

    def _take_idle(self, key: _OriginKey, expired: list[_Connection]) -> _Connection | None:
        """The most recently used idle connection to ``key`` that is still good, if any;
        the expired ones met on the way go to ``expired``, for closing."""
        shared = self._shared.get(key)
        if shared:
            for connection in shared:
                if connection.is_available():
                    return connection
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if not connection.has_expired():
                return connection
            expired.append(connection)
        return None

    async def _acquire(
        self,
        key: _OriginKey,
        timeout: float | None,  # noqa: ASYNC109 (the request's pool timeout, an extension)
    ) -> _Connection:
        expired: list[_Connection] = []
        try:
            connection = self._take_idle(key, expired)
            if connection is not None:
                return connection
            if len(self._open) >= self._max_connections:
                connection = await self._wait_for_room(key, timeout, expired)
                if connection is not None:
                    return connection
            connection = _Connection(self, key)
            self._open.add(connection)
            if connection.is_available():
                # It may become HTTP/2 (TLS, h2 offered): requests to the origin meanwhile
                # wait for its handshake and share it, as httpcore's pool does; if it turns
                # out HTTP/1.1 they are refused (`_unavailable`) and look again.
                self._shared.setdefault(key, []).append(connection)
            return connection
        finally:
            for stale in expired:
                await self._discard(stale)

    async def _wait_for_room(
        self,
        key: _OriginKey,
        timeout: float | None,  # noqa: ASYNC109
        expired: list[_Connection],
    ) -> _Connection | None:
        """Wait until a connection to ``key`` is idle (returned) or one may be opened (None)."""
        with trio.move_on_after(math.inf if timeout is None else timeout) as scope:
            while True:
                if len(self._open) < self._max_connections:
                    return None
                if self._idle_count:
                    connection = self._take_idle(key, expired)
                    if connection is not None:
                        return connection
                    # An idle connection to another origin gives its place.
                    for other in self._idle.values():
                        if other:
                            self._idle_count -= 1
                            expired.append(other.popleft())
                            break
                    if len(self._open) - len(expired) < self._max_connections:
                        return None
                event = trio.Event()
                self._waiters.append(event)
                await event.wait()
        assert scope.cancelled_caught
        raise httpcore2.PoolTimeout("no connection became free in time")

    def _wake_one(self) -> None:
        while self._waiters:
            event = self._waiters.popleft()
            if not event.is_set():
                event.set()
                return

    # ----------------------------------------------------------------- giving it back

    async def _discard(self, connection: _Connection) -> None:
        self._open.discard(connection)
        for shared in self._shared.values():
            if connection in shared:
                shared.remove(connection)
        self._wake_one()
        with trio.CancelScope(shield=True):
            await connection.aclose()

    async def _release(self, key: _OriginKey, connection: _Connection) -> None:
        """A response on ``connection`` ended: keep the connection for the next request to
        its origin, or close it."""
        if connection.is_closed() or not connection.is_connected():
            await self._discard(connection)
            return
        # A request that waited on a shared connection whose first request was cancelled
        # while connecting connects it itself: the pool owns it again from now on.
        self._open.add(connection)
        if connection.can_multiplex():
            shared = self._shared.setdefault(key, [])
            if connection not in shared:
                shared.append(connection)
            self._wake_one()
            return
        self._unshare(key, connection)
        if not connection.is_idle():
            return  # still busy (cannot happen for HTTP/1.1 once the response closed)
        if self._closed or self._idle_count >= self._max_idle:
            await self._discard(connection)
            return
        idle = self._idle.setdefault(key, collections.deque())
        # Sweep one connection of the idle stack's far end (the least recently used), so
        # that idle connections nobody takes again do not stay open for ever.
        if idle and idle[0].has_expired():
            self._idle_count -= 1
            await self._discard(idle.popleft())
        idle.append(connection)
        self._idle_count += 1
        self._wake_one()

    async def _unavailable(self, key: _OriginKey, connection: _Connection) -> None:
        """``connection`` refused a request: it closed, or it is an HTTP/1.1 connection busy
        with another request (one that was shared while it might have become HTTP/2)."""
        if connection.is_closed():
            await self._discard(connection)
        elif not connection.can_multiplex():
            self._unshare(key, connection)

    def _unshare(self, key: _OriginKey, connection: _Connection) -> None:
        shared = self._shared.get(key)
        if shared and connection in shared:
            shared.remove(connection)

    # ----------------------------------------------------------------- requests

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx2.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{url.scheme}://'."
                if scheme
                else "Request URL is missing an 'http://' or 'https://' protocol."
            )
        port = url.port or (443 if scheme == b"https" else 80)
        key = (scheme, url.raw_host, port)
        timeout = request.extensions.get("timeout", {}).get("pool")
        try:
            while True:
                connection = await self._acquire(key, timeout)
                try:
                    return await connection.send(request, key)
                except httpcore2.ConnectionNotAvailable:
                    await self._unavailable(key, connection)
                    continue
                except BaseException:
                    await self._release(key, connection)
                    raise
        except Exception as exc:
            translated = _translate(exc)
            if translated is exc:
                raise
            raise translated from exc

    async def aclose(self) -> None:
        self._closed = True
        for connection in list(self._open):
            await self._discard(connection)
        self._idle.clear()
        self._shared.clear()
        self._idle_count = 0


class _BodyStream(httpx2.AsyncByteStream):
    """A response body: its failures translated to httpx's exceptions, and its close giving
    the connection back to the pool."""

    __slots__ = ("_connection", "_core", "_key", "_pool")

    def __init__(
        self,
        core: AsyncIterable[bytes],
        pool: PooledTransport,
        key: _OriginKey,
        connection: _Connection,
    ) -> None:
        self._core = core
        self._pool: PooledTransport | None = pool
        self._key = key
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._core:
                yield part
        except Exception as exc:
            translated = _translate(exc)
            if translated is exc:
                raise
            raise translated from exc

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        with trio.CancelScope(shield=True):
            aclose = getattr(self._core, "aclose", None)
            if aclose is not None:
                await aclose()
            await pool._release(self._key, self._connection)


class _H1Body(httpx2.AsyncByteStream):
    """An HTTP/1.1 response body read by pitrio's reader (`ResponseBody`, also in the
    response's :data:`BODY_EXTENSION` for readers that take it past httpx's generators), and
    its close giving the connection back to the pool."""

    __slots__ = ("_body", "_connection", "_key", "_pool")

    def __init__(
        self, body: ResponseBody, pool: PooledTransport, key: _OriginKey, connection: _Connection
    ) -> None:
        self._body = body
        self._pool: PooledTransport | None = pool
        self._key = key
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        receive = self._body.receive
        while part := await receive():
            yield part

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        with trio.CancelScope(shield=True):
            await self._body.aclose()
            await pool._release(self._key, self._connection)


BODY_EXTENSION: Final = "pitrio.body"
"""The response extension holding an HTTP/1.1 response's :class:`ResponseBody`, whose
``receive()`` reads the body with no generator between the socket and the caller (closing the
httpx response still closes it)."""


class _Connection:
    """One pooled connection to an origin, connected by its first request: HTTP/2 when TLS
    negotiates it by ALPN (httpcore2's connection), else pitrio's HTTP/1.1 exchange
    (`HTTP11Connection`, whose body reader takes every response's body past h11).

    Until it is connected, a connection that may become HTTP/2 (TLS with HTTP/2 enabled) is
    offered to concurrent requests to its origin, as httpcore's pool does: they wait for the
    handshake, and an HTTP/1.1 outcome sends them away (``ConnectionNotAvailable``).

    Resource handling: owned by its `PooledTransport`, which closes it.
    """

    __slots__ = ("_connect_failed", "_connection", "_key", "_lock", "_pool")

    def __init__(self, pool: PooledTransport, key: _OriginKey) -> None:
        self._pool = pool
        self._key = key
        self._connection: HTTP11Connection | httpcore2.AsyncHTTP2Connection | None = None
        self._connect_failed = False
        self._lock = trio.Lock()

    # ----------------------------------------------------------------- the pool's questions

    def is_available(self) -> bool:
        connection = self._connection
        if connection is None:
            pool = self._pool
            return (
                pool._http2
                and (self._key[0] == b"https" or not pool._http1)
                and not self._connect_failed
            )
        return connection.is_available()

    def has_expired(self) -> bool:
        connection = self._connection
        return self._connect_failed if connection is None else connection.has_expired()

    def is_idle(self) -> bool:
        connection = self._connection
        return self._connect_failed if connection is None else connection.is_idle()

    def is_closed(self) -> bool:
        connection = self._connection
        return self._connect_failed if connection is None else connection.is_closed()

    def is_connected(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    def can_multiplex(self) -> bool:
        connection = self._connection
        return isinstance(connection, httpcore2.AsyncHTTP2Connection) and (
            connection.can_multiplex()
        )

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()

    # ----------------------------------------------------------------- requests

    async def send(self, request: httpx2.Request, key: _OriginKey) -> httpx2.Response:
        """Send ``request`` on this connection (connecting it first if it is new).

        Raises:
            httpcore2.ConnectionNotAvailable: an HTTP/1.1 connection busy with another request.
        """
        if self._connection is None:
            async with self._lock:
                if self._connection is None:
                    try:
                        self._connection = await self._connect(request)
                    except BaseException:
                        self._connect_failed = True
                        raise
        connection = self._connection
        timeouts = request.extensions.get("timeout", {})
        if isinstance(connection, HTTP11Connection):
            if not connection.is_ready():
                raise httpcore2.ConnectionNotAvailable()
            url = request.url
            status, reason, headers, body = await connection.request(
                request.method.encode("ascii"),
                url.raw_path,
                request.headers.raw,
                cast(AsyncIterable[bytes], request.stream),
                timeouts,
            )
            return httpx2.Response(
                status_code=status,
                headers=headers,
                stream=_H1Body(body, self._pool, key, self),
                extensions={
                    "http_version": b"HTTP/1.1",
                    "reason_phrase": reason,
                    BODY_EXTENSION: body,
                },
            )
        url = request.url
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=cast(AsyncIterable[bytes], request.stream),
            extensions=request.extensions,
        )
        response = await connection.handle_async_request(core_request)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_BodyStream(cast(AsyncIterable[bytes], response.stream), self._pool, key, self),
            extensions=response.extensions,
        )

    async def _connect(
        self, request: httpx2.Request
    ) -> HTTP11Connection | httpcore2.AsyncHTTP2Connection:
        """Open the TCP (or Unix socket) connection, then TLS for ``https`` with ALPN; the
        connect errors are httpcore2's (the pool translates them)."""
        pool = self._pool
        scheme, host, port = self._key
        timeouts = request.extensions.get("timeout", {})
        timeout = timeouts.get("connect")
        retries_left = pool._retries
        delay = 0.0
        while True:
            try:
                if pool._uds is None:
                    stream = await pool._backend.connect_tcp(
                        host.decode("ascii"),
                        port,
                        timeout=timeout,
                        local_address=pool._local_address,
                    )
                else:
                    stream = await pool._backend.connect_unix_socket(pool._uds, timeout=timeout)
                if scheme == b"https":
                    context = pool._ssl_context
                    if pool._http2:
                        context.set_alpn_protocols(["h2", "http/1.1"] if pool._http1 else ["h2"])
                    else:
                        context.set_alpn_protocols(["http/1.1"])
                    sni = request.extensions.get("sni_hostname")
                    stream = await stream.start_tls(
                        context, server_hostname=sni or host.decode("ascii"), timeout=timeout
                    )
                break
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout):
                if retries_left <= 0:
                    raise
                retries_left -= 1
                await trio.sleep(delay)
                delay = CONNECT_RETRY_BACKOFF_S if delay == 0 else delay * 2
        assert isinstance(stream, _TrioNetworkStream)
        ssl_object = stream.get_extra_info("ssl_object")
        negotiated_h2 = ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2"
        if negotiated_h2 or (pool._http2 and not pool._http1):
            return httpcore2.AsyncHTTP2Connection(
                origin=httpcore2.Origin(scheme, host, port),
                stream=stream,
                keepalive_expiry=pool._keepalive_expiry,
            )
        return HTTP11Connection(
            stream.trio_stream, stream.socket(), keepalive_expiry=pool._keepalive_expiry
        )


class HTTPStatusError(ProviderError):
    """The server answered with an error status.

    The message is ``"<status> <body>"`` like the provider SDKs write it, so the body's own
    explanation (rate limit, context length ...) reaches the user and the overflow patterns.

    Attributes:
        status: the HTTP status code.
        body: the response body as text, cut at :data:`ERROR_BODY_LIMIT` bytes.
        headers: the response headers.
    """

    def __init__(self, status: int, body: str, headers: Mapping[str, str]) -> None:
        reason = body.strip() or httpx2.codes.get_reason_phrase(status) or "error"
        super().__init__(f"{status} {reason}")
        self.status = status
        self.body = body
        self.headers = dict(headers)


class InvalidStreamError(ProviderError):
    """The server sent an event the provider cannot read."""


class NotAnEventStreamError(InvalidStreamError):
    """A successful answer whose body is not an event stream (see the module docstring).

    Attributes:
        status: the HTTP status code (a 2xx).
        content_type: the ``content-type`` header, ``""`` when there was none.
        head: the first bytes of the body (at most about :data:`BODY_HEAD_LIMIT` of them).
    """

    def __init__(self, status: int, content_type: str, head: bytes) -> None:
        text = head.decode("utf-8", "replace")
        shown = text[:BODY_HEAD_LIMIT] + ("..." if len(text) > BODY_HEAD_LIMIT else "")
        body = f"a body beginning {shown!r}" if head else "an empty body"
        super().__init__(
            f"Not an event stream: the server answered {status} with content-type "
            f"{content_type or '(none)'!r} and {body}"
        )
        self.status = status
        self.content_type = content_type
        self.head = head


class StreamStalledError(ProviderError):
    """The server sent nothing for ``StreamOptions.stall_timeout_ms``.

    Attributes:
        seconds: the silence that was allowed, in seconds.
    """

    def __init__(self, seconds: float) -> None:
        # "terminated" is in both the seed's and pi's retryable patterns, "timed out" in pi's.
        super().__init__(
            f"Stream stalled: no data for {seconds:g} s, so the request was terminated (timed out)"
        )
        self.seconds = seconds


def stall_timeout_s(stall_timeout_ms: int | None, timeout_ms: int | None = None) -> float:
    """The stall timeout in seconds for these options (``math.inf`` when it is off)."""
    if stall_timeout_ms is None:
        if timeout_ms is None:
            return DEFAULT_STALL_TIMEOUT_S
        return max(DEFAULT_STALL_TIMEOUT_S, timeout_ms / 1000)
    return math.inf if stall_timeout_ms <= 0 else stall_timeout_ms / 1000


def sse_json(event: SSEEvent) -> Any:
    """Parse an event's data as JSON.

    Raises:
        InvalidStreamError: the data is not JSON.
    """
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError as exc:
        snippet = event.data if len(event.data) <= 200 else event.data[:200] + "..."
        raise InvalidStreamError(f"Invalid SSE data ({exc}): {snippet!r}") from exc


def describe_failure(exc: BaseException) -> str:
    """The ``errorMessage`` for a failed request."""
    if isinstance(exc, ProviderError):
        return str(exc)
    if isinstance(exc, httpx2.TimeoutException):
        kind = {
            httpx2.ConnectTimeout: "connecting",
            httpx2.ReadTimeout: "waiting for data",
            httpx2.WriteTimeout: "sending the request",
            httpx2.PoolTimeout: "waiting for a free connection",
        }.get(type(exc))
        return f"Request timed out{f' while {kind}' if kind else ''}"
    if isinstance(exc, httpx2.RemoteProtocolError):
        # pi reads this case as undici's "terminated"; both retry patterns know that word.
        return f"Connection lost: stream terminated ({exc or 'the server closed the connection'})"
    if isinstance(exc, httpx2.ConnectError):
        return f"Connection error: {exc or 'could not connect'}"
    if isinstance(exc, httpx2.TransportError):
        return f"Network error: {exc or type(exc).__name__}"
    text = str(exc)
    return text if text else type(exc).__name__


def _timeout(timeout_ms: int | None) -> httpx2.Timeout | None:
    if timeout_ms is None:
        return None
    seconds = timeout_ms / 1000
    return httpx2.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT_S))


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    # A header that is neither a number nor an HTTP date (or is nan, inf, negative) is ignored.
    value = headers.get("retry-after-ms")
    if value:
        try:
            milliseconds = float(value)
        except ValueError:
            pass
        else:
            if math.isfinite(milliseconds) and milliseconds >= 0:
                return milliseconds / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000": UTC by RFC 5322
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, when.timestamp() - time.time())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


RETRY_AFTER_DIAGNOSTIC: Final = "retry_after"
"""``type`` of the diagnostic that carries a server-requested delay to the session's retry."""


def failure_diagnostics(
    exc: BaseException, diagnostics: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    """Return ``diagnostics`` plus one for an HTTP error whose server asked for a delay.

    The delay (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date, converted
    when the response arrived) travels in pi's diagnostic shape, ``{"type": "retry_after",
    "timestamp", "error": {"name", "message", "code"}, "details": {"status",
    "retryAfterMs"}}``, so the session's retry can wait as long as the server asked.
    """
    if not isinstance(exc, HTTPStatusError):
        return diagnostics
    retry_after = _retry_after_s(exc.headers)
    if retry_after is None:
        return diagnostics
    diagnostic = {
        "type": RETRY_AFTER_DIAGNOSTIC,
        "timestamp": now_ms(),
        "error": {"name": type(exc).__name__, "message": str(exc), "code": exc.status},
        "details": {"status": exc.status, "retryAfterMs": round(retry_after * 1000)},
    }
    return [*(diagnostics or ()), diagnostic]


async def _read_error_body(response: httpx2.Response) -> str:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_LIMIT:
            break
    return b"".join(chunks)[:ERROR_BODY_LIMIT].decode("utf-8", "replace")


STALL_SLACK: Final = 1 / 64
"""How far behind the stall deadline may fall before a read moves it (a fraction of the stall
timeout): a stream is given up after a silence between ``(1 - STALL_SLACK)`` times the stall
timeout and the stall timeout itself."""


class _Stall:
    """The stall deadline of one request: a single cancel scope around the whole exchange.

    Each wait for the server (the response headers, each read of the body) moves its deadline
    to ``now + seconds``, but only when it has fallen more than :data:`STALL_SLACK` behind: a
    stream that flows costs a clock reading and a comparison per read, and one store per
    ``seconds * STALL_SLACK`` of streaming, instead of a cancel scope per read. The time the
    reader spends between two reads counts as silence too; a retry's backoff and the
    ``on_response`` callback do not (`lift`).

    Must be built inside a Trio run (it reads the run's clock).
    """

    __slots__ = ("now", "refresh_at", "scope", "seconds", "slack")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.slack = seconds * STALL_SLACK
        self.scope = trio.CancelScope()
        self.now = trio.lowlevel.current_clock().current_time
        """The run's clock (``trio.current_time`` without its two calls)."""
        self.refresh_at = -math.inf if seconds != math.inf else math.inf
        """`arm` moves the deadline once the clock has passed this."""

    def arm(self) -> None:
        now = self.now()
        if now > self.refresh_at:
            self.scope.deadline = now + self.seconds
            self.refresh_at = now + self.slack

    def lift(self) -> None:
        self.scope.deadline = math.inf
        if self.seconds != math.inf:
            self.refresh_at = -math.inf


SSEBatches: TypeAlias = AsyncIterable[Iterable[SSEEvent]]
"""A response's events, one batch per network read (what :func:`open_sse` yields, and what
the providers' stream readers take)."""


@asynccontextmanager
async def open_sse(
    url: str,
    *,
    headers: Mapping[str, str],
    body: Any,
    method: str = "POST",
    timeout_ms: int | None = None,
    max_retries: int | None = None,
    max_retry_delay_ms: int | None = None,
    stall_timeout_ms: int | None = None,
    on_response: Callable[[int, dict[str, str]], Awaitable[None]] | None = None,
) -> AsyncIterator[AsyncGenerator[Iterable[SSEEvent], None]]:
    """Send a JSON request and yield the events of its ``text/event-stream`` response, in
    batches: one per network read (``async for batch in events: for event in batch: ...``).

    A reader handles a batch's events without a checkpoint between them where it can (a text
    delta whose output has room): one checkpoint per read, not per event. A batch is only
    iterated once.

    ``body`` is encoded once (retries send the same bytes). ``on_response(status, headers)`` is
    awaited once, for the response that ends the retries (a success, or the error status that
    is raised), before its body is read; responses that are retried are not shown (as pi-ai,
    whose SDKs retry out of sight).

    The block runs inside this request's stall scope (see `_Stall`): a server silent for the
    stall timeout (counted from the last read that returned data) cancels the block, which
    ends with :class:`StreamStalledError`.

    Raises:
        HTTPStatusError: the server answered with status >= 400 (after any retries).
        httpx2.TransportError: the connection failed or dropped.
        StreamStalledError: the server was silent for the stall timeout (also while reading).
        NotAnEventStreamError: the answer is not an event stream (raised while reading).
    """
    stall = _Stall(stall_timeout_s(stall_timeout_ms, timeout_ms))
    content = orjson.dumps(body)
    request_headers = {"content-type": "application/json", "accept": "text/event-stream"}
    request_headers.update(headers)
    attempts = 1 + max(0, max_retries or 0)
    with stall.scope:
        async with _request_client() as client:
            timeout = _timeout(timeout_ms) or client.timeout
            for attempt in range(1, attempts + 1):
                request = client.build_request(
                    method,
                    _parsed_url(url),
                    headers=request_headers,
                    content=content,
                    timeout=timeout,
                )
                stall.arm()
                try:
                    response = await client.send(request, stream=True)
                except httpx2.TransportError:
                    if attempt == attempts:
                        raise
                    stall.lift()
                    await _backoff(attempt, None, max_retry_delay_ms)
                    continue
                try:
                    final = (
                        response.status_code < 400
                        or attempt == attempts
                        or response.status_code not in RETRYABLE_STATUS
                    )
                    if final and on_response is not None:
                        stall.lift()
                        await on_response(response.status_code, dict(response.headers))
                    if response.status_code >= 400:
                        text = await _read_error_body(response)
                        error = HTTPStatusError(response.status_code, text, response.headers)
                        if final:
                            raise error
                        stall.lift()
                        await _backoff(
                            attempt, _retry_after_s(response.headers), max_retry_delay_ms
                        )
                        continue
                    events = _response_events(response, stall)
                    try:
                        yield events
                    finally:
                        await _finish_generators(events)
                    return
                finally:
                    with trio.CancelScope(shield=True):
                        await response.aclose()
    if stall.scope.cancelled_caught:
        raise StreamStalledError(stall.seconds)


@functools.lru_cache(maxsize=256)
def _parsed_url(url: str) -> httpx2.URL:
    """``url`` parsed once: a provider calls the same few endpoints again and again, and
    httpx parses (and validates the host of) a URL given as text on every request. A parsed
    URL is immutable, so requests share it."""
    return httpx2.URL(url)


_SSE_FIRST_LINE: Final = re.compile(rb"(?::|(?:data|event|id|retry)(?::|\r|\n|$))")
_UTF8_BOM: Final = b"\xef\xbb\xbf"


def _sniff(pending: bytes, *, at_end: bool) -> bool | None:
    """Whether a body not labelled SSE starts like SSE; ``None`` while too little has come.

    ``pending`` has had its leading blank lines and byte order mark removed.
    """
    if not pending:
        return False if at_end else None
    if len(pending) < SNIFF_BYTES and not at_end and not any(c in pending for c in b"\r\n"):
        return None
    return _SSE_FIRST_LINE.match(pending) is not None


def _paced(events: list[SSEEvent], stall: _Stall) -> Iterator[SSEEvent]:
    """The events of one read, moving the stall deadline between them as a read does: the
    reader's time on a batch counts as it did when each event came in a read of its own."""
    now = stall.now
    yield events[0]
    for i in range(1, len(events)):
        if now() > stall.refresh_at:
            stall.arm()
        yield events[i]


async def _response_events(
    response: httpx2.Response, stall: _Stall
) -> AsyncGenerator[Iterable[SSEEvent], None]:
    """Decode the body into batches of events (one per read), checking that it is an event
    stream.

    Each read moves ``stall``'s deadline forward, and so does each event of a batch after the
    first (`_paced`). Closing this generator early leaves httpx's
    generators suspended; :func:`open_sse` finishes them (and this generator finishes them
    itself when it raises).
    """
    content_type = response.headers.get("content-type", "")
    sniffing = content_type.split(";", 1)[0].strip().lower() != "text/event-stream"
    pending = b""  # the start of a body being sniffed, blank lines and BOM removed
    head = b""  # the first bytes, quoted if the body is refused
    dispatched = False
    decoder = SSEDecoder()
    feed = decoder.feed
    # Without a content-encoding the raw body is the body: one generator less per read.
    identity = response.headers.get("content-encoding", "identity").strip().lower() == "identity"
    body: ResponseBody | None = response.extensions.get(BODY_EXTENSION) if identity else None
    chunks: AsyncGenerator[bytes, None] | None = None
    if body is not None:
        # pitrio's own HTTP/1.1 body reader: read straight from it (httpx's generators and
        # its byte counting are skipped; closing the response still closes the body).
        receive = body.receive
    else:
        chunks = response.aiter_raw() if identity else response.aiter_bytes()
        receive = functools.partial(anext, chunks, b"")
    arm = stall.arm
    try:
        while True:
            arm()
            chunk = await receive()
            if not chunk:
                break
            if len(head) < BODY_HEAD_LIMIT * 4:  # enough bytes for BODY_HEAD_LIMIT characters
                head += chunk[: BODY_HEAD_LIMIT * 4 - len(head)]
            if sniffing:
                pending = (pending + chunk).lstrip(b"\r\n")
                if pending.startswith(_UTF8_BOM):
                    pending = pending[len(_UTF8_BOM) :].lstrip(b"\r\n")
                verdict = _sniff(pending, at_end=False)
                if verdict is None:
                    continue
                if not verdict:
                    raise NotAnEventStreamError(response.status_code, content_type, head)
                sniffing = False
                chunk, pending = pending, b""
            events = feed(chunk)
            if events:
                dispatched = True
                yield events if len(events) == 1 else _paced(events, stall)
        if sniffing:
            if not _sniff(pending, at_end=True):
                raise NotAnEventStreamError(response.status_code, content_type, head)
            tail = decoder.feed(pending) + decoder.close()
        else:
            tail = decoder.close()
        if tail:
            dispatched = True
            yield tail
        if not dispatched:
            raise NotAnEventStreamError(response.status_code, content_type, head)
    finally:
        if chunks is not None:
            await _finish_generators(chunks)


async def _finish_generators(events: AsyncIterator[Any]) -> None:
    """Finish the chain of async generators under ``events`` when the reader stopped early.

    A consumer that leaves the ``async for`` (an error it raised, an abort) leaves the SSE
    decoder's generator and httpx's and httpcore's generators beneath it suspended; closing
    the outermost one does not reach the inner ones, and Trio warns when they are collected
    unfinished. One more read under an already-cancelled, shielded scope makes a
    ``Cancelled`` travel up through every frame, which finishes them all; the scope absorbs
    its own cancellation and nothing else.
    """
    with trio.CancelScope(shield=True) as scope:
        scope.cancel()
        with contextlib.suppress(StopAsyncIteration):
            while True:
                await events.__anext__()


async def _backoff(attempt: int, retry_after: float | None, max_delay_ms: int | None) -> None:
    delay = (
        retry_after
        if retry_after is not None
        else min(RETRY_BASE_DELAY_S * 2 ** (attempt - 1), RETRY_MAX_BACKOFF_S)
    )
    if max_delay_ms is not None and delay * 1000 > max_delay_ms:
        raise ProviderError(
            f"Server requested a retry delay of {delay:.1f}s, more than the allowed "
            f"{max_delay_ms / 1000:.1f}s"
        )
    await trio.sleep(delay)


async def apply_on_payload(options: StreamOptions, body: Any, model: Model) -> Any:
    """Show ``body`` to ``options.on_payload``; its non-None result replaces the body."""
    if options.on_payload is None:
        return body
    replaced = await maybe_await(options.on_payload(body, model))
    return body if replaced is None else replaced


def response_callback(
    options: StreamOptions, model: Model
) -> Callable[[int, dict[str, str]], Awaitable[None]] | None:
    """``options.on_response`` as :func:`open_sse` calls it (``None`` without one)."""
    on_response = options.on_response
    if on_response is None:
        return None

    async def call(status: int, headers: dict[str, str]) -> None:
        await maybe_await(on_response(ProviderResponse(status=status, headers=headers), model))

    return call


def new_message_builder(model: Model) -> AssistantMessageBuilder:
    """The builder an HTTP provider fills: partial tool-call arguments parsed leniently."""
    return AssistantMessageBuilder(
        api=model.api,
        provider=model.provider,
        model=model.id,
        timestamp=now_ms(),
        parse_partial_arguments=parse_streaming_json,
    )


async def emit_failure(
    out: AssistantMessageEventStream, builder: AssistantMessageBuilder, exc: BaseException
) -> None:
    """End the message with ``stopReason: "error"`` and push the terminal ``error`` event."""
    builder.update(
        stop_reason="error",
        error_message=describe_failure(exc),
        diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
    )
    await out.emit(ErrorEvent(reason="error", error=builder.build()))
