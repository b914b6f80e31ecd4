"""Driving one Gemini call (and a Vertex or Cloud Code Assist one): request, stream, failures."""

from __future__ import annotations

from typing import Any, Final

import attrs

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
)
from pitrio.providers._http import (
    apply_on_payload,
    failure_diagnostics,
    new_message_builder,
    open_sse,
    response_callback,
)
from pitrio.providers._messages import (
    Context,
    Model,
    StreamOptions,
)
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.google._reader import (
    _error_message,
    _read_events,
    _Stream,
)
from pitrio.providers.google._request import (
    API,
    UNKNOWN_ERROR,
    EndpointResolver,
    GoogleEndpoint,
    GoogleOptions,
    _request_headers,
    build_request_body,
    request_url,
    simple_max_tokens,
    simple_thinking,
)


async def _gemini_endpoint(model: Model, options: StreamOptions) -> GoogleEndpoint:
    api_key = options.api_key or get_env_api_key(model.provider) or ""
    return GoogleEndpoint(url=request_url(model), headers=_request_headers(model, options, api_key))


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    google: GoogleOptions,
    out: AssistantMessageEventStream,
) -> None:
    await run_google_stream(API, model, context, options, google, out, _gemini_endpoint)


async def run_google_stream(
    api: str,
    model: Model,
    context: Context,
    options: StreamOptions,
    google: GoogleOptions,
    out: AssistantMessageEventStream,
    endpoint: EndpointResolver,
) -> None:
    """Stream one ``streamGenerateContent`` response of the Gemini codec into ``out``.

    The message is labelled ``api``; ``endpoint`` gives the URL, headers and wrapping. Every
    failure (resolving the endpoint included) ends the stream with an error event.
    """
    builder = new_message_builder(model)
    builder.update(api=api)
    out.attach(builder)
    try:
        target = await endpoint(model, options)
        body: Any = build_request_body(model, context, options, google)
        if target.wrap_body is not None:
            body = target.wrap_body(body)
        body = await apply_on_payload(options, body, model)
        async with open_sse(
            target.url,
            headers=dict(target.headers),
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            await _read_events(_Stream(model, builder, out), events, target.unwrap_chunk)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR)
    except Exception as exc:  # failures are data: the stream ends with an error event
        builder.update(
            stop_reason="error",
            error_message=_error_message(exc),
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    stop_reason = builder.stop_reason
    assert stop_reason in ("stop", "length", "toolUse")
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_google(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream a Gemini response with API-specific options (pi's ``streamGoogle``).

    ``options.provider_options`` holds :class:`GoogleOptions` (``toolChoice``, ``thinking``).
    Thinking is only configured when ``thinking`` is given.
    """
    google = GoogleOptions.from_provider_options(options.provider_options)
    await _run(model, context, options, google, out)


async def stream_simple_google(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream a Gemini response from the unified options (pi's ``streamSimpleGoogle``).

    ``options.reasoning`` picks ``thinkingLevel`` (Gemini 3, Gemma 4) or ``thinkingBudget``
    (others, ``options.thinking_budgets`` overriding pi's table); no reasoning turns visible
    thinking off. ``max_tokens`` defaults to ``min(model.max_tokens, 32000)``.

    Raises:
        ProviderError: no API key in the options or the environment (as pi, before any event).
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        raise ProviderError(f"No API key for provider: {model.provider}")
    base = attrs.evolve(options, api_key=api_key, max_tokens=simple_max_tokens(model, options))
    google = GoogleOptions.from_provider_options(options.provider_options)
    thinking = simple_thinking(model, options)
    await _run(model, context, base, attrs.evolve(google, thinking=thinking), out)


google_provider: Final = ApiProvider(
    api=API, stream=stream_google, stream_simple=stream_simple_google
)
"""The ``google-generative-ai`` provider, ready to register."""


def register_google(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``google-generative-ai`` provider in ``registry``."""
    registry.register(google_provider)
