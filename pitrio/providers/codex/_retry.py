"""pi's retry rules for the Codex backend, and the request that follows them.

pi-ai 0.73.1 retries a Codex request up to three times, waiting 1 s, 2 s, then 4 s, when the
connection fails or the answer is 429, 500, 502, 503 or 504, or its body reads like a passing
outage (rate limit, overloaded, service unavailable, upstream connect, connection refused).
Its last error is shown as pi shows it: a usage limit as "You have hit your ChatGPT usage
limit (<plan> plan). Try again in ~N min.", anything else as the body's error message.

Differences from pi, on purpose:

* A used-up quota (error ``usage_limit_reached`` or ``usage_not_included``) is not retried:
  it lasts for minutes or hours (pi retries it like a rate limit, and stops only for a
  non-retryable status whose message names the usage limit).
* A server that asks for a delay (``retry-after-ms``, else ``retry-after``) is waited for as
  asked instead of the fixed backoff; a delay over ``StreamOptions.max_retry_delay_ms`` is not
  waited for, and the error (with the delay in its ``retry_after`` diagnostic) is final.
* Other 4xx answers are not retried (pi's loop catches its own error and retries those too).
* ``StreamOptions.max_retries``, when set, replaces the three retries.
* Only the connection, headers and status are retried: once the stream has started, a failure
  ends the message, as everywhere else.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final

import httpx2
import orjson
import trio

from pitrio.providers._http import (
    HTTPStatusError,
    _retry_after_s,  # the header rules open_sse uses; see the report on making it public
    open_sse,
    response_callback,
)
from pitrio.providers._messages import Model, StreamOptions
from pitrio.providers._sse import SSEEvent

__all__ = [
    "BASE_DELAY_S",
    "MAX_RETRIES",
    "CodexHTTPError",
    "codex_error_message",
    "is_retryable",
    "is_terminal_quota",
    "open_codex_sse",
]

MAX_RETRIES: Final = 3
BASE_DELAY_S: Final = 1.0
RETRYABLE_STATUS: Final = frozenset({429, 500, 502, 503, 504})
_RETRYABLE_TEXT: Final = re.compile(
    r"rate.?limit|overloaded|service.?unavailable|upstream.?connect|connection.?refused", re.I
)
_QUOTA_CODE: Final = re.compile(r"usage_limit_reached|usage_not_included", re.I)
_LIMIT_CODE: Final = re.compile(r"usage_limit_reached|usage_not_included|rate_limit_exceeded", re.I)


class CodexHTTPError(HTTPStatusError):
    """An error status from the Codex backend, worded as pi words it (see the module docstring).

    ``status``, ``body`` and ``headers`` are the response's, as for any
    :class:`~pitrio.providers._http.HTTPStatusError`.
    """

    def __init__(
        self, status: int, body: str, headers: Mapping[str, str], *, now: float | None = None
    ) -> None:
        super().__init__(status, body, headers)
        self.args = (codex_error_message(status, body, now=now),)


def _error_object(body: str) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) and error else None


def _error_code(error: Mapping[str, Any]) -> str:
    code = error.get("code") or error.get("type") or ""
    return code if isinstance(code, str) else str(code)


def is_terminal_quota(body: str) -> bool:
    """Whether an error body reports a used-up quota (``usage_limit_reached`` ...)."""
    error = _error_object(body)
    return error is not None and _QUOTA_CODE.search(_error_code(error)) is not None


def is_retryable(status: int, body: str) -> bool:
    """Whether pi would retry this answer (see the module docstring), quotas excepted."""
    if is_terminal_quota(body):
        return False
    return status in RETRYABLE_STATUS or _RETRYABLE_TEXT.search(body) is not None


def codex_error_message(status: int, body: str, *, now: float | None = None) -> str:
    """pi's wording of an error answer (``now``: the wall clock in seconds, for the reset)."""
    error = _error_object(body)
    if error is None:
        return body or f"{status} {httpx2.codes.get_reason_phrase(status) or 'error'}"
    friendly = None
    if _LIMIT_CODE.search(_error_code(error)) or status == 429:
        plan_type = error.get("plan_type")
        plan = f" ({str(plan_type).lower()} plan)" if plan_type else ""
        when = ""
        resets_at = error.get("resets_at")
        if isinstance(resets_at, int | float) and not isinstance(resets_at, bool) and resets_at:
            clock = time.time() if now is None else now
            minutes = max(0, round((resets_at * 1000 - clock * 1000) / 60000))
            when = f" Try again in ~{minutes} min."
        friendly = f"You have hit your ChatGPT usage limit{plan}.{when}".strip()
    if friendly:
        return friendly
    message = error.get("message")
    return message if isinstance(message, str) and message else body


def _delay(attempt: int, error: HTTPStatusError | None, options: StreamOptions) -> float | None:
    """The wait before retry ``attempt`` (0-based), or ``None`` when it should not be waited."""
    requested = _retry_after_s(error.headers) if error is not None else None
    delay = BASE_DELAY_S * 2**attempt if requested is None else requested
    limit = options.max_retry_delay_ms
    if requested is not None and limit is not None and delay * 1000 > limit:
        return None
    return delay


@asynccontextmanager
async def open_codex_sse(
    url: str,
    headers: Mapping[str, str],
    body: Any,
    model: Model,
    options: StreamOptions,
) -> AsyncIterator[AsyncGenerator[Iterable[SSEEvent], None]]:
    """Send the request with pi's retries and yield the events of the accepted answer.

    ``options.on_response`` sees every answer, retried ones included (as in pi).

    Raises:
        CodexHTTPError: the last answer was an error status.
        httpx2.TransportError: the last attempt could not connect.
    """
    retries = MAX_RETRIES if options.max_retries is None else max(0, options.max_retries)
    on_response = response_callback(options, model)
    async with AsyncExitStack() as stack:
        attempt = 0
        while True:
            request = open_sse(
                url,
                headers=headers,
                body=body,
                timeout_ms=options.timeout_ms,
                max_retries=0,
                stall_timeout_ms=options.stall_timeout_ms,
                on_response=on_response,
            )
            try:
                events = await stack.enter_async_context(request)
            except HTTPStatusError as exc:
                error = CodexHTTPError(exc.status, exc.body, exc.headers)
                delay = _delay(attempt, exc, options)
                if attempt >= retries or delay is None or not is_retryable(exc.status, exc.body):
                    raise error from None
            except httpx2.TransportError:
                delay = _delay(attempt, None, options)
                if attempt >= retries or delay is None:
                    raise
            else:
                break
            await trio.sleep(delay)
            attempt += 1
        yield events
