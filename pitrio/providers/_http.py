"""The HTTP layer every wire-API provider shares: one pooled client, SSE requests, failures.

**One client per Trio run.** ``async with open_http_client():`` installs an
:class:`httpx.AsyncClient` (connection pooling, HTTP/2 when a TLS server offers it) that every
provider request made inside the block uses; hosts, the CLI and load tests open it once. A
request made with no client open gets a client of its own for that request, which is correct
but cannot reuse connections. The client lives in a :class:`trio.lowlevel.RunVar` because its
pooled connections belong to one Trio run.

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
which has none. It is measured on Trio's clock, so a ``MockClock`` drives it in tests.

**Cancellation releases the connection.** Leaving :func:`open_sse` early (abort, an enclosing
cancel scope) closes the response under a shield, so the pool gets its slot back at once.

**Retries.** ``StreamOptions.max_retries`` (default 0) retries a request that failed before any
byte of the response was read, on status 408/409/429/5xx or a connection error, honouring
``retry-after`` and refusing to wait longer than ``max_retry_delay_ms``. pi leaves this to each
SDK (2 retries); pitrio defaults to none so that the session's Retry actor, which reports its
attempts as events, sees every failure.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx
import orjson
import trio

from pitrio._awaitable import maybe_await
from pitrio.providers._events import ErrorEvent
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import Model, ProviderResponse, StreamOptions
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderError
from pitrio.providers._sse import SSEDecoder, SSEEvent
from pitrio.providers._stream import AssistantMessageEventStream, now_ms

DEFAULT_TIMEOUT_S: Final = 600.0
"""Whole-request timeout when ``StreamOptions.timeout_ms`` is unset (the OpenAI SDK's default)."""
CONNECT_TIMEOUT_S: Final = 30.0
MAX_CONNECTIONS: Final = 256
MAX_KEEPALIVE: Final = 64
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

_client_var: trio.lowlevel.RunVar[httpx.AsyncClient | None] = trio.lowlevel.RunVar(
    "pitrio_http_client", default=None
)


def make_http_client(**kwargs: Any) -> httpx.AsyncClient:
    """Build a client with pitrio's defaults; keyword arguments override them."""
    options: dict[str, Any] = {
        "http2": True,
        "timeout": httpx.Timeout(DEFAULT_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
        "limits": httpx.Limits(
            max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE
        ),
        "follow_redirects": False,
    }
    options.update(kwargs)
    return httpx.AsyncClient(**options)


@asynccontextmanager
async def open_http_client(
    client: httpx.AsyncClient | None = None, **kwargs: Any
) -> AsyncIterator[httpx.AsyncClient]:
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


def current_http_client() -> httpx.AsyncClient | None:
    """The client installed by :func:`open_http_client` in this run, if any."""
    return _client_var.get()


@asynccontextmanager
async def _request_client() -> AsyncIterator[httpx.AsyncClient]:
    shared = _client_var.get()
    if shared is not None:
        yield shared
        return
    async with make_http_client() as client:
        yield client


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
        reason = body.strip() or httpx.codes.get_reason_phrase(status) or "error"
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
    if isinstance(exc, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting",
            httpx.ReadTimeout: "waiting for data",
            httpx.WriteTimeout: "sending the request",
            httpx.PoolTimeout: "waiting for a free connection",
        }.get(type(exc))
        return f"Request timed out{f' while {kind}' if kind else ''}"
    if isinstance(exc, httpx.RemoteProtocolError):
        # pi reads this case as undici's "terminated"; both retry patterns know that word.
        return f"Connection lost: stream terminated ({exc or 'the server closed the connection'})"
    if isinstance(exc, httpx.ConnectError):
        return f"Connection error: {exc or 'could not connect'}"
    if isinstance(exc, httpx.TransportError):
        return f"Network error: {exc or type(exc).__name__}"
    text = str(exc)
    return text if text else type(exc).__name__


def _timeout(timeout_ms: int | None) -> httpx.Timeout | None:
    if timeout_ms is None:
        return None
    seconds = timeout_ms / 1000
    return httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT_S))


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


async def _read_error_body(response: httpx.Response) -> str:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_LIMIT:
            break
    return b"".join(chunks)[:ERROR_BODY_LIMIT].decode("utf-8", "replace")


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
) -> AsyncIterator[AsyncGenerator[SSEEvent, None]]:
    """Send a JSON request and yield the events of its ``text/event-stream`` response.

    ``on_response(status, headers)`` is awaited once, for the response that ends the retries
    (a success, or the error status that is raised), before its body is read; responses that
    are retried are not shown (as pi-ai, whose SDKs retry out of sight).

    Raises:
        HTTPStatusError: the server answered with status >= 400 (after any retries).
        httpx.TransportError: the connection failed or dropped.
        StreamStalledError: the server was silent for the stall timeout (also while reading).
        NotAnEventStreamError: the answer is not an event stream (raised while reading).
    """
    stall_s = stall_timeout_s(stall_timeout_ms, timeout_ms)
    content = orjson.dumps(body)
    request_headers = {"content-type": "application/json", "accept": "text/event-stream"}
    request_headers.update(headers)
    attempts = 1 + max(0, max_retries or 0)
    async with _request_client() as client:
        for attempt in range(1, attempts + 1):
            request = client.build_request(
                method,
                url,
                headers=request_headers,
                content=content,
                timeout=_timeout(timeout_ms) or client.timeout,
            )
            try:
                response = await _send(client, request, stall_s)
            except httpx.TransportError:
                if attempt == attempts:
                    raise
                await _backoff(attempt, None, max_retry_delay_ms)
                continue
            try:
                final = (
                    response.status_code < 400
                    or attempt == attempts
                    or response.status_code not in RETRYABLE_STATUS
                )
                if final and on_response is not None:
                    await on_response(response.status_code, dict(response.headers))
                if response.status_code >= 400:
                    text = await _read_error_body(response)
                    error = HTTPStatusError(response.status_code, text, response.headers)
                    if final:
                        raise error
                    await _backoff(attempt, _retry_after_s(response.headers), max_retry_delay_ms)
                    continue
                events = _response_events(response, stall_s)
                try:
                    yield events
                finally:
                    await _finish_generators(events)
                return
            finally:
                with trio.CancelScope(shield=True):
                    await response.aclose()


async def _send(
    client: httpx.AsyncClient, request: httpx.Request, stall_s: float
) -> httpx.Response:
    with trio.move_on_after(stall_s):
        return await client.send(request, stream=True)
    raise StreamStalledError(stall_s)


async def _next_chunk(chunks: AsyncIterator[bytes], stall_s: float) -> bytes | None:
    """The next piece of the body, ``None`` at its end."""
    with trio.move_on_after(stall_s):
        try:
            return await chunks.__anext__()
        except StopAsyncIteration:
            return None
    raise StreamStalledError(stall_s)


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


async def _response_events(
    response: httpx.Response, stall_s: float
) -> AsyncGenerator[SSEEvent, None]:
    """Decode the body into events, checking that it is an event stream and never stalls.

    Closing this generator early leaves httpx's generators suspended; :func:`open_sse`
    finishes them (and this generator finishes them itself when it raises).
    """
    content_type = response.headers.get("content-type", "")
    sniffing = content_type.split(";", 1)[0].strip().lower() != "text/event-stream"
    pending = b""  # the start of a body being sniffed, blank lines and BOM removed
    head = b""  # the first bytes, quoted if the body is refused
    dispatched = False
    decoder = SSEDecoder()
    chunks = response.aiter_bytes()
    try:
        while (chunk := await _next_chunk(chunks, stall_s)) is not None:
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
            for event in decoder.feed(chunk):
                dispatched = True
                yield event
        if sniffing:
            if not _sniff(pending, at_end=True):
                raise NotAnEventStreamError(response.status_code, content_type, head)
            tail = decoder.feed(pending) + decoder.close()
        else:
            tail = decoder.close()
        for event in tail:
            dispatched = True
            yield event
        if not dispatched:
            raise NotAnEventStreamError(response.status_code, content_type, head)
    finally:
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
