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

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from pitrio.channels import open_body_nursery
from pitrio.providers._events import DoneEvent, ErrorEvent, final_message
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
    fn = provider.simple() if simple else provider.stream
    events = AssistantMessageEventStream(model, max_buffer=max_buffer, abortable=abortable)
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
