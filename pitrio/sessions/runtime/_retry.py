"""Automatic retry of transient LLM errors with exponential backoff (seed 002 s.5.8).

When a run ends with an assistant message whose ``stopReason`` is ``"error"`` and whose
``errorMessage`` looks transient (overloaded, rate limited, 5xx, dropped connection ...), the
:class:`AgentSession` waits and continues the agent, at most ``maxRetries`` times. The wait is
the delay the server asked for, when the failed response carried one (``retry-after``,
``retry-after-ms``: the provider records it as a ``retry_after`` diagnostic on the message),
capped at ``retry.provider.maxRetryDelayMs`` (pi's legacy ``retry.maxDelayMs``); otherwise
``baseDelayMs * 2 ** (attempt - 1)`` milliseconds (:func:`retry_delay_ms`). pi 0.73.1 always
uses the exponential backoff here. :class:`Retry` holds the attempt counter, owns the wait and
emits pi's ``auto_retry_start`` / ``auto_retry_end`` events; the session decides when to call it.

The wait runs in the task that drives the prompt (there is no background timer), inside a
cancel scope that :meth:`Retry.cancel` cancels, which is how ``abort()`` ends a backoff.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import attrs
import trio

from pitrio.codec import extra_field, wire
from pitrio.providers import AssistantMessage, is_context_overflow
from pitrio.providers._http import RETRY_AFTER_DIAGNOSTIC
from pitrio.sessions.settings._settings import RetrySettings

__all__ = [
    "PI_RETRYABLE_ERROR_PATTERN",
    "RETRYABLE_ERROR_PATTERN",
    "RETRY_CANCELLED",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "Retry",
    "is_retryable_error",
    "requested_delay_ms",
    "retry_delay_ms",
]

RETRYABLE_ERROR_PATTERN: Final = re.compile(
    r"overloaded|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable"
    r"|server error|internal error|connection.?error|connection.?refused|other side closed"
    r"|fetch failed|upstream.?connect|reset before headers|terminated|retry delay",
    re.IGNORECASE,
)
"""The transient-error pattern of seed 002 s.5.8 (the default)."""

PI_RETRYABLE_ERROR_PATTERN: Final = re.compile(
    r"overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504"
    r"|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error"
    r"|connection.?refused|connection.?lost|websocket.?closed|websocket.?error"
    r"|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up"
    r"|ended without|http2 request did not get a response|timed? out|timeout|terminated"
    r"|retry delay",
    re.IGNORECASE,
)
"""pi 0.73.1's wider pattern (also network errors, websocket closes, timeouts), as an option."""

RETRY_CANCELLED: Final = "Retry cancelled"
"""``finalError`` of the ``auto_retry_end`` that an abort during the backoff produces."""
UNKNOWN_ERROR: Final = "Unknown error"


@wire
@attrs.frozen(kw_only=True)
class AutoRetryStartEvent:
    """A transient error will be retried after ``delay_ms``."""

    type: Literal["auto_retry_start"] = attrs.field(default="auto_retry_start", init=False)
    attempt: int
    """1 for the first retry."""
    max_attempts: int
    delay_ms: int
    error_message: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AutoRetryEndEvent:
    """Retrying ended: a response succeeded, the retries ran out, or the wait was aborted."""

    type: Literal["auto_retry_end"] = attrs.field(default="auto_retry_end", init=False)
    success: bool
    attempt: int
    final_error: str | None = None
    extra: dict[str, Any] | None = extra_field()


def is_retryable_error(
    message: AssistantMessage,
    context_window: int = 0,
    *,
    pattern: re.Pattern[str] = RETRYABLE_ERROR_PATTERN,
) -> bool:
    """Return whether ``message`` failed with a transient error worth retrying.

    It must have ``stopReason: "error"``, a non-empty ``errorMessage`` matching ``pattern``,
    and not be a context overflow (compaction handles those).
    """
    if message.stop_reason != "error" or not message.error_message:
        return False
    if is_context_overflow(message, context_window):
        return False
    return pattern.search(message.error_message) is not None


def requested_delay_ms(message: AssistantMessage) -> int | None:
    """Return the delay the server asked for when ``message`` failed, or ``None``.

    Read from the last ``retry_after`` diagnostic a provider attached (its
    ``details.retryAfterMs``); a malformed diagnostic counts as none.
    """
    for diagnostic in reversed(message.diagnostics or ()):
        if not isinstance(diagnostic, dict) or diagnostic.get("type") != RETRY_AFTER_DIAGNOSTIC:
            continue
        details = diagnostic.get("details")
        value = details.get("retryAfterMs") if isinstance(details, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return int(value)
        return None
    return None


def retry_delay_ms(settings: RetrySettings, attempt: int, requested_ms: int | None = None) -> int:
    """Return how long retry ``attempt`` (1 for the first) waits, in milliseconds.

    Args:
        settings: the retry settings.
        attempt: the attempt about to be made, from 1.
        requested_ms: the delay the server asked for (:func:`requested_delay_ms`), if any.

    Returns:
        ``requested_ms`` capped at ``settings.max_delay_ms`` (``0``: no cap) when the server
        asked for a delay, else ``base_delay_ms * 2 ** (attempt - 1)``.
    """
    if requested_ms is not None:
        cap = settings.max_delay_ms
        return requested_ms if cap <= 0 else min(requested_ms, cap)
    return settings.base_delay_ms * (1 << (attempt - 1))  # base * 2^(n-1)


RetryEvent = AutoRetryStartEvent | AutoRetryEndEvent


class Retry:
    """The retry state of one session: the attempt counter and the cancellable backoff.

    Args:
        settings: returns the current :class:`RetrySettings` (read at every attempt, so a
            settings change applies to the next one).
        emit: publishes an event to the session's subscribers.
        pattern: what counts as a transient error (default :data:`RETRYABLE_ERROR_PATTERN`).

    Cancellation:
        :meth:`cancel` (from any task) ends a wait in progress, or the next one if called
        between :meth:`schedule` and :meth:`wait`; the wait then emits ``auto_retry_end`` with
        ``success: false`` and ``finalError: "Retry cancelled"`` and returns ``False``. If the
        task itself is cancelled the wait raises as usual and the counter is reset.
    """

    def __init__(
        self,
        settings: Callable[[], RetrySettings],
        emit: Callable[[RetryEvent], Awaitable[None]],
        *,
        pattern: re.Pattern[str] = RETRYABLE_ERROR_PATTERN,
    ) -> None:
        self._settings = settings
        self._emit = emit
        self.pattern = pattern
        self._attempt = 0
        self._scope: trio.CancelScope | None = None

    @property
    def attempt(self) -> int:
        """The current attempt (0 when not retrying)."""
        return self._attempt

    @property
    def is_waiting(self) -> bool:
        """Whether a backoff is scheduled or in progress."""
        return self._scope is not None

    def is_retryable(self, message: AssistantMessage, context_window: int = 0) -> bool:
        """Return whether ``message`` is a transient error (see :func:`is_retryable_error`)."""
        return is_retryable_error(message, context_window, pattern=self.pattern)

    def enabled(self) -> bool:
        """Whether auto-retry is on in the current settings."""
        return self._settings().enabled

    async def succeeded(self) -> None:
        """A response arrived without error: end a retry sequence in progress, if any."""
        if self._attempt > 0:
            attempt, self._attempt = self._attempt, 0
            await self._emit(AutoRetryEndEvent(success=True, attempt=attempt))

    async def schedule(self, message: AssistantMessage) -> float | None:
        """Count an attempt for the failed ``message`` and announce its backoff.

        Returns:
            The delay in seconds to pass to :meth:`wait`, or ``None`` when retrying is off or
            the retries ran out (then ``auto_retry_end`` with ``success: false`` and the error
            was emitted and the counter reset).
        """
        settings = self._settings()
        if not settings.enabled:
            return None
        self._attempt += 1
        if self._attempt > settings.max_retries:
            attempt, self._attempt = self._attempt - 1, 0
            await self._emit(
                AutoRetryEndEvent(success=False, attempt=attempt, final_error=message.error_message)
            )
            return None
        delay_ms = retry_delay_ms(settings, self._attempt, requested_delay_ms(message))
        self._scope = trio.CancelScope()
        await self._emit(
            AutoRetryStartEvent(
                attempt=self._attempt,
                max_attempts=settings.max_retries,
                delay_ms=delay_ms,
                error_message=message.error_message or UNKNOWN_ERROR,
            )
        )
        return delay_ms / 1000

    async def wait(self, delay: float) -> bool:
        """Sleep ``delay`` seconds unless cancelled; return whether to retry now."""
        scope = self._scope
        if scope is None:
            scope = self._scope = trio.CancelScope()
        try:
            with scope:
                await trio.sleep(delay)
        except BaseException:
            self._attempt = 0
            raise
        finally:
            self._scope = None
        if scope.cancel_called:
            attempt, self._attempt = self._attempt, 0
            await self._emit(
                AutoRetryEndEvent(success=False, attempt=attempt, final_error=RETRY_CANCELLED)
            )
            return False
        return True

    def cancel(self) -> None:
        """End the scheduled or running backoff (pi's ``abortRetry``); no-op otherwise."""
        if self._scope is not None:
            self._scope.cancel()

    def reset(self) -> None:
        """Forget the attempt counter (a new session)."""
        self._attempt = 0

    def abandon(self) -> None:
        """Give up a backoff that was scheduled and will not be waited for (its job was
        cancelled in between): no backoff is pending, and the counter is reset."""
        self._scope = None
        self._attempt = 0
