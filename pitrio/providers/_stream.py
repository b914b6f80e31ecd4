"""``stream`` / ``stream_simple``: run a provider and read its events (seed 002 s.5.2-5.4).

pi's ``stream()`` returns at once and a detached promise feeds the stream. In Trio the producer
needs a nursery, so::

    async with stream(model, context, options) as events:
        async for event in events:
            ...
        message = await events.result()

runs the provider as a child task of the ``async with``. Callers that own a nursery (actors)
use :func:`start_stream` instead. :meth:`AssistantMessageEventStream.abort` cancels only the
provider: it ends the message with ``stopReason: "aborted"`` and the consumer still receives
that terminal ``error`` event, which is how an agent can abort and still emit ``turn_end``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import trio

from pitrio.channels import EventStream, open_body_nursery
from pitrio.providers._events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    final_message,
    is_terminal,
)
from pitrio.providers._messages import AssistantMessage, Context, Model, StreamOptions
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderRegistry, ProviderStreamFn, default_registry

ASSISTANT_STREAM_BUFFER: Final = 128
"""Events a provider may run ahead of its consumer. Enough that a fast producer and consumer
hand over in batches instead of switching tasks per token; a slow consumer holds back at most
this many events, and then the provider (and its HTTP read) waits."""

ABORTED_MESSAGE: Final = "Request was aborted"
DEFAULT_OPTIONS: Final = StreamOptions()


def now_ms() -> int:
    """Milliseconds since the epoch, as pi's ``Date.now()`` (message timestamps, not timing)."""
    return time.time_ns() // 1_000_000


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The events of one LLM response, ending with exactly one ``done`` or ``error`` event.

    Resource handling: the provider task is the only producer; one consumer iterates it.
    ``result()`` may be awaited by anyone. :meth:`abort` may be called from any task.
    """

    def __init__(self, model: Model, *, max_buffer: int = ASSISTANT_STREAM_BUFFER) -> None:
        super().__init__(is_terminal, final_message, max_buffer=max_buffer)
        self.model = model
        self._builder: AssistantMessageBuilder | None = None
        self._scope: trio.CancelScope | None = None
        self._abort_requested = False

    def attach(self, builder: AssistantMessageBuilder) -> None:
        """Tell the stream which builder holds the message, so an abort can finish it."""
        self._builder = builder

    @property
    def terminated(self) -> bool:
        """Whether the terminal event has been pushed (the base stream is done)."""
        return self._done

    async def emit(self, event: AssistantMessageEvent) -> None:
        """Push ``event``, waiting while the consumer is a full buffer behind."""
        try:
            self.push_nowait(event)
        except trio.WouldBlock:
            await self.push(event)

    def abort(self) -> None:
        """Cancel the provider; the stream then ends with an ``aborted`` error event."""
        self._abort_requested = True
        if self._scope is not None:
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
        with trio.CancelScope() as scope:
            self._scope = scope
            if self._abort_requested:
                scope.cancel()
            try:
                await fn(model, context, options, self)
            except Exception as exc:
                if not self._done:
                    message = self._finish_message("error", _error_text(exc))
                    await self.emit(ErrorEvent(reason="error", error=message))
        self._scope = None
        if not self._done:
            if scope.cancelled_caught:
                message = self._finish_message("aborted", ABORTED_MESSAGE)
                await self.emit(ErrorEvent(reason="aborted", error=message))
            else:
                message = self._finish_message(
                    "error", "Provider ended the stream without a done or error event"
                )
                await self.emit(ErrorEvent(reason="error", error=message))
        self.end()


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__


def start_stream(
    nursery: trio.Nursery,
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    simple: bool = True,
    registry: ProviderRegistry | None = None,
    max_buffer: int = ASSISTANT_STREAM_BUFFER,
) -> AssistantMessageEventStream:
    """Start the provider for ``model.api`` in ``nursery`` and return its event stream.

    Args:
        simple: use the provider's ``stream_simple`` (unified ``reasoning`` option) rather than
            ``stream`` (API-specific ``provider_options``).

    Raises:
        ProviderNotFound: no provider is registered for ``model.api``.
    """
    provider = (registry or default_registry).resolve(model.api)
    fn = provider.simple() if simple else provider.stream
    events = AssistantMessageEventStream(model, max_buffer=max_buffer)
    nursery.start_soon(events._run, fn, model, context, options or DEFAULT_OPTIONS)
    return events


@asynccontextmanager
async def stream(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AsyncIterator[AssistantMessageEventStream]:
    """Stream one response with the API-specific options (pi-ai ``stream``).

    Leaving the block before the terminal event cancels the provider.
    """
    async with _streaming(model, context, options, simple=False, registry=registry) as events:
        yield events


@asynccontextmanager
async def stream_simple(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AsyncIterator[AssistantMessageEventStream]:
    """Stream one response with the unified options, ``reasoning`` too (pi-ai ``streamSimple``)."""
    async with _streaming(model, context, options, simple=True, registry=registry) as events:
        yield events


@asynccontextmanager
async def _streaming(
    model: Model,
    context: Context,
    options: StreamOptions | None,
    *,
    simple: bool,
    registry: ProviderRegistry | None,
) -> AsyncIterator[AssistantMessageEventStream]:
    async with open_body_nursery() as nursery:
        events = start_stream(nursery, model, context, options, simple=simple, registry=registry)
        try:
            yield events
        finally:
            if not events.terminated:
                nursery.cancel_scope.cancel()
            await events.aclose()


async def complete(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AssistantMessage:
    """Run one request to the end and return the final message (pi-ai ``complete``)."""
    async with stream(model, context, options, registry=registry) as events:
        return await _drain(events)


async def complete_simple(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AssistantMessage:
    """Run one request with the unified options and return the final message."""
    async with stream_simple(model, context, options, registry=registry) as events:
        return await _drain(events)


async def _drain(events: AssistantMessageEventStream) -> AssistantMessage:
    async for event in events:
        if isinstance(event, DoneEvent | ErrorEvent):
            return final_message(event)
    return await events.result()
