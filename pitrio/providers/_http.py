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
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx
import orjson
import trio

from pitrio._awaitable import maybe_await
from pitrio.providers._events import ErrorEvent
from pitrio.providers._json_parse import parse_streaming_json
from pitrio.providers._messages import Model, StreamOptions
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderError
from pitrio.providers._sse import SSEEvent, aiter_sse
from pitrio.providers._stream import AssistantMessageEventStream, now_ms

DEFAULT_TIMEOUT_S: Final = 600.0
"""Whole-request timeout when ``StreamOptions.timeout_ms`` is unset (the OpenAI SDK's default)."""
CONNECT_TIMEOUT_S: Final = 30.0
MAX_CONNECTIONS: Final = 256
MAX_KEEPALIVE: Final = 64
ERROR_BODY_LIMIT: Final = 8192
"""Bytes of an error response's body kept in the message (bodies are short JSON in practice)."""
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
        return f"Connection lost: {exc or 'the server closed the connection'}"
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
) -> AsyncIterator[AsyncGenerator[SSEEvent, None]]:
    """Send a JSON request and yield the events of its ``text/event-stream`` response.

    Raises:
        HTTPStatusError: the server answered with status >= 400 (after any retries).
        httpx.TransportError: the connection failed or dropped.
    """
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
                response = await client.send(request, stream=True)
            except httpx.TransportError:
                if attempt == attempts:
                    raise
                await _backoff(attempt, None, max_retry_delay_ms)
                continue
            try:
                if response.status_code >= 400:
                    text = await _read_error_body(response)
                    error = HTTPStatusError(response.status_code, text, response.headers)
                    if attempt == attempts or response.status_code not in RETRYABLE_STATUS:
                        raise error
                    await _backoff(attempt, _retry_after_s(response.headers), max_retry_delay_ms)
                    continue
                events = aiter_sse(response.aiter_bytes())
                try:
                    yield events
                finally:
                    await _finish_generators(events)
                return
            finally:
                with trio.CancelScope(shield=True):
                    await response.aclose()


async def _finish_generators(events: AsyncGenerator[SSEEvent, None]) -> None:
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
