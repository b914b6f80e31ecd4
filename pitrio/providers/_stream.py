"""``AssistantMessageEventStream``: the events of one LLM response, and the type of the provider
coroutines that fill one (``ProviderStreamFn``).

:meth:`AssistantMessageEventStream.abort` cancels only the provider: it ends the message with
``stopReason: "aborted"`` and the consumer still receives that terminal ``error`` event, which is
how an agent can abort and still emit ``turn_end``. The functions that run a provider and read
its events (``stream``, ``stream_simple``, ``start_stream``, ``complete``) are in ``_api``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias

import trio

from pitrio._exceptions import UsageError
from pitrio.channels import DELIVERED, EventStream
from pitrio.providers._events import (
    AssistantMessageEvent,
    ErrorEvent,
    final_message,
    is_terminal,
)
from pitrio.providers._messages import AssistantMessage, Context, Model, StreamOptions
from pitrio.providers._partial import AssistantMessageBuilder

ASSISTANT_STREAM_BUFFER: Final = 128
"""Events a provider may run ahead of its consumer. Enough that a fast producer and consumer
hand over in batches instead of switching tasks per token; a slow consumer holds back at most
this many events, and then the provider (and its HTTP read) waits."""

ABORTED_MESSAGE: Final = "Request was aborted"
NOT_ABORTABLE: Final = (
    "this stream has no abort of its own: cancel the scope that started it (abort the agent)"
)
ENDED_WITHOUT_TERMINAL: Final = "Provider ended the stream without a done or error event"
DEFAULT_OPTIONS: Final = StreamOptions()


def now_ms() -> int:
    """Milliseconds since the epoch, as pi's ``Date.now()`` (message timestamps, not timing)."""
    return time.time_ns() // 1_000_000


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The events of one LLM response, ending with exactly one ``done`` or ``error`` event.

    Resource handling: the provider task is the only producer; one consumer iterates it.
    ``result()`` may be awaited by anyone. :meth:`abort` may be called from any task.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_buffer: int = ASSISTANT_STREAM_BUFFER,
        abortable: bool = True,
    ) -> None:
        super().__init__(is_terminal, final_message, max_buffer=max_buffer)
        self.model = model
        self._builder: AssistantMessageBuilder | None = None
        self._scope: trio.CancelScope | None = None
        self._abort_requested = False
        self._abortable = abortable

    def attach(self, builder: AssistantMessageBuilder) -> None:
        """Tell the stream which builder holds the message, so an abort can finish it."""
        self._builder = builder

    @property
    def terminated(self) -> bool:
        """Whether the terminal event has been pushed (the base stream is done)."""
        return self._done

    def emit(self, event: AssistantMessageEvent) -> Awaitable[None]:
        """Push ``event``; the caller awaits what this returns (``await out.emit(event)``),
        which waits only while the consumer is a full buffer behind.

        An event that fits in the buffer is pushed during the call and the awaitable returned
        is `DELIVERED` (awaiting it is no checkpoint): a provider's per-delta push makes no
        coroutine. Otherwise it is `push`'s coroutine, which waits for room.
        """
        try:
            self.push_nowait(event)
        except trio.WouldBlock:
            return self.push(event)
        return DELIVERED

    def abort(self) -> None:
        """Cancel the provider; the stream then ends with an ``aborted`` error event.

        Raises:
            UsageError: the stream was started with ``abortable=False`` (it is cancelled with
                the scope of whoever started it, as an agent's run cancels its LLM calls).
        """
        if not self._abortable:
            raise UsageError(NOT_ABORTABLE)
        self._abort_requested = True
        if self._scope is not None:  # the provider's task
            self._scope.cancel()

    def finish_aborted(self) -> AssistantMessage:
        """The message as it stands, ended ``aborted`` (for a consumer cancelled mid-stream).

        An agent whose run was cancelled calls this instead of waiting for the provider task's
        terminal event: the provider was cancelled with the run, so that event never comes.
        """
        return self._finish_message("aborted", ABORTED_MESSAGE)

    def _finish_message(self, stop_reason: str, error_message: str) -> AssistantMessage:
        builder = self._builder
        if builder is None:
            builder = AssistantMessageBuilder(
                api=self.model.api,
                provider=self.model.provider,
                model=self.model.id,
                timestamp=now_ms(),
            )
        builder.update(stop_reason=stop_reason, error_message=error_message, timestamp=now_ms())
        return builder.build()

    async def _run(
        self, fn: ProviderStreamFn, model: Model, context: Context, options: StreamOptions
    ) -> None:
        aborted = False
        if self._abortable:
            with trio.CancelScope() as scope:
                self._scope = scope
                if self._abort_requested:
                    scope.cancel()
                await self._produce(fn, model, context, options)
            self._scope = None
            aborted = scope.cancelled_caught
        else:
            # Cancelled only with the scope of whoever started it: no scope of its own (a
            # cancel scope is ~5 us and a dozen GC-tracked objects per LLM call).
            await self._produce(fn, model, context, options)
        if not self._done:
            if aborted:
                message = self._finish_message("aborted", ABORTED_MESSAGE)
                await self.emit(ErrorEvent(reason="aborted", error=message))
            else:
                message = self._finish_message("error", ENDED_WITHOUT_TERMINAL)
                await self.emit(ErrorEvent(reason="error", error=message))
        self.end()

    async def _produce(
        self, fn: ProviderStreamFn, model: Model, context: Context, options: StreamOptions
    ) -> None:
        try:
            await fn(model, context, options, self)
        except Exception as exc:
            if not self._done:
                message = self._finish_message("error", _error_text(exc))
                await self.emit(ErrorEvent(reason="error", error=message))


ProviderStreamFn: TypeAlias = Callable[
    [Model, Context, StreamOptions, AssistantMessageEventStream], Awaitable[None]
]
"""A provider's streaming coroutine.

Contract: push ``start``, the block events and exactly one terminal ``done``/``error`` event to
the stream, attaching its :class:`~pitrio.providers.AssistantMessageBuilder` with
``stream.attach(builder)`` first so an abort can end the message. Failures that the provider
recognises (HTTP errors, bad SSE) are pushed as an ``error`` event; an exception that escapes is
turned into one by the driver. Cancellation must be allowed to propagate.
"""


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
