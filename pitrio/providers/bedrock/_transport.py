"""The HTTP exchange of one ConverseStream request: signed, retried, read as raw bytes.

The shared :func:`~pitrio.providers._http.open_sse` decodes SSE; Bedrock answers with binary
event-stream frames and, when the request is signed, needs the body bytes before the headers.
:func:`open_event_stream` is its counterpart for this API, on the same pooled client
(:func:`~pitrio.providers._http.current_http_client`, else a client of its own for the request)
and with the same rules: ``StreamOptions.stall_timeout_ms`` bounds the server's silence
(:class:`~pitrio.providers._http.StreamStalledError`), ``max_retries`` retries a request that
failed before its body was read (408/409/429/5xx or a connection error; backoff doubling from
half a second, at most ``max_retry_delay_ms``), ``on_response`` sees the final response, and
leaving the block closes the response under a shield.

An error status becomes :class:`BedrockHTTPError`, worded as pi's SDK words it: the AWS error
type (``x-amzn-errortype`` or the body's ``__type``) with pi's readable prefix (``Throttling
error: ...``), then the body's ``message``.
"""

from __future__ import annotations

import contextlib
import datetime
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx2
import orjson
import trio

from pitrio.providers._http import (
    CONNECT_TIMEOUT_S,
    RETRY_BASE_DELAY_S,
    RETRY_MAX_BACKOFF_S,
    RETRYABLE_STATUS,
    HTTPStatusError,
    NotAnEventStreamError,
    StreamStalledError,
    current_http_client,
    make_http_client,
    stall_timeout_s,
)
from pitrio.providers._registry import ProviderError
from pitrio.providers.bedrock._auth import (
    Auth,
    AwsCredentials,
    BearerToken,
    sign_request,
)
from pitrio.providers.bedrock._eventstream import (
    PRELUDE_LENGTH,
    EventStreamDecoder,
    EventStreamError,
    EventStreamMessage,
    prelude_is_valid,
)

EVENT_STREAM_TYPE: Final = "application/vnd.amazon.eventstream"
ERROR_BODY_LIMIT: Final = 64 * 1024
HEAD_LIMIT: Final = 800
"""Bytes of a refused body kept for the error message."""
ERROR_PREFIXES: Final[Mapping[str, str]] = {
    "InternalServerException": "Internal server error",
    "ModelStreamErrorException": "Model stream error",
    "ValidationException": "Validation error",
    "ThrottlingException": "Throttling error",
    "ServiceUnavailableException": "Service unavailable",
}
"""pi's readable prefixes: the session's retry and overflow checks match on them."""


def error_text(error_type: str, message: str) -> str:
    """``"<prefix>: <message>"`` for an AWS error type, as pi's ``formatBedrockError``."""
    return f"{ERROR_PREFIXES.get(error_type, error_type)}: {message}"


class BedrockServiceError(ProviderError):
    """Bedrock reported an exception inside the stream (an ``exception`` message).

    Attributes:
        error_type: the exception's name (``ThrottlingException`` ...).
    """

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(error_text(error_type, message))
        self.error_type = error_type


class BedrockHTTPError(HTTPStatusError):
    """An error status with an AWS error type: its text is pi's, not ``"<status> <body>"``.

    Attributes:
        error_type: the AWS error type (``ValidationException`` ...).
    """

    def __init__(
        self, status: int, body: str, headers: Mapping[str, str], error_type: str, message: str
    ) -> None:
        super().__init__(status, body, headers)
        self.args = (error_text(error_type, message),)
        self.error_type = error_type


def http_error(status: int, body: str, headers: Mapping[str, str]) -> HTTPStatusError:
    """The error for an error status: :class:`BedrockHTTPError` when the AWS type is known."""
    error_type = headers.get("x-amzn-errortype", "")
    message: str | None = None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        error_type = error_type or str(data.get("__type", ""))
        found = data.get("message", data.get("Message"))
        message = found if isinstance(found, str) else None
    # "ValidationException:http://internal.amazon.com/..." and "aws.protocols#Foo" forms
    error_type = error_type.split(":", 1)[0].rsplit("#", 1)[-1]
    if not error_type:
        return HTTPStatusError(status, body, headers)
    return BedrockHTTPError(status, body, headers, error_type, message or body.strip())


class EventStreamBody:
    """The messages of one response, read chunk by chunk (see :meth:`receive`).

    A body labelled ``application/vnd.amazon.eventstream`` is decoded as it comes. A body under
    any other content type must begin with a valid prelude (its CRC checked) or it is refused
    at once, so a proxy's HTML page or a non-streaming JSON answer fails clearly.
    """

    __slots__ = ("_chunks", "_decoder", "_head", "_response", "_seen", "_stall", "_unchecked")

    def __init__(self, response: httpx2.Response, stall: _Stall) -> None:
        self._response = response
        self._stall = stall
        content_type = response.headers.get("content-type", "")
        labelled = content_type.split(";", 1)[0].strip().lower() == EVENT_STREAM_TYPE
        self._unchecked: bytes | None = None if labelled else b""
        self._decoder = EventStreamDecoder()
        self._head = b""
        self._seen = False
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        chunks = response.aiter_raw() if encoding == "identity" else response.aiter_bytes()
        self._chunks = chunks.__aiter__()

    async def receive(self) -> list[EventStreamMessage] | None:
        """The messages the next chunk of the body completes; ``None`` at the end.

        Raises:
            NotAnEventStreamError: the body is not an event stream (or is empty).
            EventStreamError: a frame is corrupt, or the body ends inside one.
            httpx2.TransportError: the connection dropped.
        """
        self._stall.arm()
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            if self._unchecked is not None or not (self._seen or self._decoder.pending):
                raise self._refused() from None
            if self._decoder.pending:
                raise EventStreamError(
                    "Bedrock stream terminated in the middle of an event stream message "
                    f"({self._decoder.pending} bytes of it received)"
                ) from None
            return None
        if len(self._head) < HEAD_LIMIT:
            self._head += chunk[: HEAD_LIMIT - len(self._head)]
        if self._unchecked is not None:
            held = self._unchecked + chunk
            if len(held) < PRELUDE_LENGTH:
                self._unchecked = held
                return []
            if not prelude_is_valid(held[:PRELUDE_LENGTH]):
                raise self._refused()
            self._unchecked = None
            chunk = held
        messages = self._decoder.feed(chunk)
        if messages:
            self._seen = True
        return messages

    def _refused(self) -> NotAnEventStreamError:
        response = self._response
        content_type = response.headers.get("content-type", "")
        return NotAnEventStreamError(response.status_code, content_type, self._head)

    async def aclose(self) -> None:
        """Finish the generators beneath an unfinished read (see ``_finish``)."""
        await _finish(self._chunks)


class _Stall:
    """The stall deadline of one exchange: a cancel scope whose deadline each read moves."""

    __slots__ = ("scope", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.scope = trio.CancelScope()

    def arm(self) -> None:
        if self.seconds != math.inf:
            self.scope.deadline = trio.current_time() + self.seconds

    def lift(self) -> None:
        self.scope.deadline = math.inf


@asynccontextmanager
async def open_event_stream(
    url: str,
    *,
    content: bytes,
    auth: Auth,
    region: str,
    headers: Mapping[str, str] | None = None,
    timeout_ms: int | None = None,
    max_retries: int | None = None,
    max_retry_delay_ms: int | None = None,
    stall_timeout_ms: int | None = None,
    on_response: Callable[[int, dict[str, str]], Awaitable[None]] | None = None,
    now: Callable[[], datetime.datetime] | None = None,
) -> AsyncIterator[EventStreamBody]:
    """POST ``content`` to ``url`` with ``auth`` and yield the response's event-stream body.

    Each attempt is signed anew (SigV4 dates expire). ``now`` gives the signing time
    (wall-clock UTC by default).

    Raises:
        HTTPStatusError: an error status (:class:`BedrockHTTPError` with an AWS error type).
        httpx2.TransportError: the connection failed.
        StreamStalledError: the server was silent for the stall timeout.
    """
    stall = _Stall(stall_timeout_s(stall_timeout_ms, timeout_ms))
    clock = now or (lambda: datetime.datetime.now(datetime.UTC))
    # No accept header of our own: the AWS SDKs send none for ConverseStream either.
    base_headers = {"content-type": "application/json"}
    base_headers.update(headers or {})
    attempts = 1 + max(0, max_retries or 0)
    with stall.scope:
        async with _client() as client:
            timeout = (
                httpx2.Timeout(timeout_ms / 1000, connect=min(timeout_ms / 1000, CONNECT_TIMEOUT_S))
                if timeout_ms is not None
                else client.timeout
            )
            for attempt in range(1, attempts + 1):
                request_headers = _authorize(url, base_headers, content, auth, region, clock())
                request = client.build_request(
                    "POST", url, headers=request_headers, content=content, timeout=timeout
                )
                stall.arm()
                try:
                    response = await client.send(request, stream=True)
                except httpx2.TransportError:
                    if attempt == attempts:
                        raise
                    stall.lift()
                    await _backoff(attempt, max_retry_delay_ms)
                    continue
                try:
                    status = response.status_code
                    final = status < 400 or attempt == attempts or status not in RETRYABLE_STATUS
                    if final and on_response is not None:
                        stall.lift()
                        await on_response(status, dict(response.headers))
                    if status >= 400:
                        error = http_error(status, await _error_body(response), response.headers)
                        if final:
                            raise error
                        stall.lift()
                        await _backoff(attempt, max_retry_delay_ms)
                        continue
                    body = EventStreamBody(response, stall)
                    try:
                        yield body
                    finally:
                        await body.aclose()
                    return
                finally:
                    with trio.CancelScope(shield=True):
                        await response.aclose()
    if stall.scope.cancelled_caught:
        raise StreamStalledError(stall.seconds)


def _authorize(
    url: str,
    headers: Mapping[str, str],
    content: bytes,
    auth: Auth,
    region: str,
    now: datetime.datetime,
) -> dict[str, str]:
    if isinstance(auth, BearerToken):
        return {**headers, "authorization": f"Bearer {auth.token}"}
    if isinstance(auth, AwsCredentials):
        return sign_request(
            method="POST",
            url=url,
            headers=headers,
            body=content,
            credentials=auth,
            region=region,
            now=now,
        )
    return dict(headers)


@asynccontextmanager
async def _client() -> AsyncIterator[httpx2.AsyncClient]:
    shared = current_http_client()
    if shared is not None:
        yield shared
        return
    async with make_http_client() as client:
        yield client


async def _error_body(response: httpx2.Response) -> str:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_LIMIT:
            break
    return b"".join(chunks)[:ERROR_BODY_LIMIT].decode("utf-8", "replace")


async def _backoff(attempt: int, max_delay_ms: int | None) -> None:
    delay = min(RETRY_BASE_DELAY_S * 2 ** (attempt - 1), RETRY_MAX_BACKOFF_S)
    if max_delay_ms is not None and delay * 1000 > max_delay_ms:
        raise ProviderError(
            f"Retry delay of {delay:.1f}s is more than the allowed {max_delay_ms / 1000:.1f}s"
        )
    await trio.sleep(delay)


async def _finish(chunks: AsyncIterator[Any]) -> None:
    # As _http._finish_generators: a read under a cancelled, shielded scope makes Cancelled
    # travel through httpx's suspended generators, which finishes them all.
    with trio.CancelScope(shield=True) as scope:
        scope.cancel()
        with contextlib.suppress(StopAsyncIteration):
            while True:
                await chunks.__anext__()
