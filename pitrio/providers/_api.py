"""``stream`` / ``stream_simple``: run a provider and read its events (seed 002 s.5.2-5.4).

pi's ``stream()`` returns at once and a detached promise feeds the stream. In Trio the producer
needs a nursery, so::

    async with stream(model, context, options) as events:
        async for event in events:
            ...
        message = await events.result()

runs the provider as a child task of the ``async with``. Callers that own a nursery (actors)
use :func:`start_stream` instead.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from types import TracebackType

import trio

from pitrio.channels import raise_lone
from pitrio.providers._events import final_message, is_terminal
from pitrio.providers._messages import AssistantMessage, Context, Model, StreamOptions
from pitrio.providers._registry import ProviderRegistry, default_registry
from pitrio.providers._stream import (
    ASSISTANT_STREAM_BUFFER,
    DEFAULT_OPTIONS,
    AssistantMessageEventStream,
)


def start_stream(
    nursery: trio.Nursery,
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    simple: bool = True,
    registry: ProviderRegistry | None = None,
    max_buffer: int = ASSISTANT_STREAM_BUFFER,
    abortable: bool = True,
) -> AssistantMessageEventStream:
    """Start the provider for ``model.api`` in ``nursery`` and return its event stream.

    Args:
        simple: use the provider's ``stream_simple`` (unified ``reasoning`` option) rather than
            ``stream`` (API-specific ``provider_options``).
        abortable: whether the stream's own ``abort()`` may cancel the provider. With False
            the provider is cancelled only with ``nursery``'s scope (or an enclosing one) and
            costs one cancel scope less; an agent's LLM calls are started so (its run's scope
            aborts them).

    Raises:
        ProviderNotFound: no provider is registered for ``model.api``.
    """
    provider = (registry or default_registry).resolve(model.api)
    events = AssistantMessageEventStream(model, max_buffer=max_buffer, abortable=abortable)
    options = options or DEFAULT_OPTIONS
    fn = provider.simple() if simple else provider.stream
    nursery.start_soon(events._run, fn, model, context, options)
    return events


def stream(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AbstractAsyncContextManager[AssistantMessageEventStream]:
    """Stream one response with the API-specific options (pi-ai ``stream``).

    Leaving the block before the terminal event cancels the provider. An exception the block
    raises comes out as itself (not wrapped in an exception group).
    """
    return _Streaming(model, context, options, simple=False, registry=registry)


def stream_simple(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    registry: ProviderRegistry | None = None,
) -> AbstractAsyncContextManager[AssistantMessageEventStream]:
    """Stream one response with the unified options, ``reasoning`` too (pi-ai ``streamSimple``)."""
    return _Streaming(model, context, options, simple=True, registry=registry)


class _Streaming(AbstractAsyncContextManager[AssistantMessageEventStream]):
    """The ``async with`` of `stream` and `stream_simple`: the provider runs as a task of a
    nursery that holds the caller's block. One object per call, where generator-based context
    managers made three layers (each a generator, its frames and a few calls per call)."""

    __slots__ = (
        "_context",
        "_events",
        "_manager",
        "_model",
        "_nursery",
        "_options",
        "_registry",
        "_simple",
    )

    def __init__(
        self,
        model: Model,
        context: Context,
        options: StreamOptions | None,
        *,
        simple: bool,
        registry: ProviderRegistry | None,
    ) -> None:
        self._model = model
        self._context = context
        self._options = options
        self._simple = simple
        self._registry = registry
        self._manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._nursery: trio.Nursery | None = None
        self._events: AssistantMessageEventStream | None = None

    async def __aenter__(self) -> AssistantMessageEventStream:
        model, context = self._model, self._context
        options = self._options or DEFAULT_OPTIONS
        provider = (self._registry or default_registry).resolve(model.api)
        events = self._events = AssistantMessageEventStream(model)
        fn = provider.simple() if self._simple else provider.stream
        self._manager = trio.open_nursery()
        nursery = self._nursery = await self._manager.__aenter__()
        nursery.start_soon(events._run, fn, model, context, options)
        return events

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        events = self._events
        assert events is not None and self._nursery is not None
        if not events.terminated:
            self._nursery.cancel_scope.cancel()
        # No checkpoint here: in a cancelled nursery it would raise Cancelled and replace an
        # exception the block raised (which the nursery would then swallow with it).
        events.close()
        return await self._leave(exc_type, exc, tb)

    async def _leave(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # Trio wraps what a nursery raises in an exception group; a lone exception (the
        # block's own, say a ValueError) is raised as it was, as open_body_nursery does.
        assert self._manager is not None
        try:
            return bool(await self._manager.__aexit__(exc_type, exc, tb))
        except BaseExceptionGroup as group:
            raise_lone(group)


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
        if is_terminal(event):
            return final_message(event)
    return await events.result()
