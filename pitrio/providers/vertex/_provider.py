"""The ``google-vertex`` provider: the Gemini codec on Vertex AI (pi's ``streamGoogleVertex``)."""

from __future__ import annotations

from typing import Final

import attrs

from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import ApiProvider, ProviderRegistry, default_registry
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.google._provider import run_google_stream
from pitrio.providers.google._request import (
    EndpointResolver,
    GoogleEndpoint,
    GoogleOptions,
    request_headers,
    simple_max_tokens,
    simple_thinking,
)
from pitrio.providers.vertex._auth import AdcTokenSource, default_token_source
from pitrio.providers.vertex._request import (
    API,
    request_url,
    resolve_api_key,
    resolve_location,
    resolve_project,
    thinking_budget,
    uses_thinking_level,
)


def _endpoint_resolver(tokens: AdcTokenSource) -> EndpointResolver:
    async def endpoint(model: Model, options: StreamOptions) -> GoogleEndpoint:
        api_key = resolve_api_key(options)
        if api_key is not None:
            url = request_url(model, api_key=api_key, project=None, location=None)
            return GoogleEndpoint(
                url=url, headers=request_headers(model, options, {"x-goog-api-key": api_key})
            )
        project = resolve_project(options)
        location = resolve_location(options)
        url = request_url(model, api_key=None, project=project, location=location)
        token = await tokens.token()
        auth = {"Authorization": f"Bearer {token}"}
        return GoogleEndpoint(url=url, headers=request_headers(model, options, auth))

    return endpoint


def vertex_provider(tokens: AdcTokenSource = default_token_source) -> ApiProvider:
    """A ``google-vertex`` provider whose ADC tokens come from ``tokens``.

    ``stream`` takes the Gemini provider's options (``toolChoice``, ``thinking``) plus
    ``project`` and ``location`` in ``provider_options``; ``stream_simple`` maps
    ``options.reasoning`` as pi's Vertex provider does (``thinkingLevel`` for Gemini 3, its
    budget table otherwise; none turns visible thinking off). Neither needs an API key: without
    one the request uses Application Default Credentials.
    """
    endpoint = _endpoint_resolver(tokens)

    async def stream(
        model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
    ) -> None:
        google = GoogleOptions.from_provider_options(options.provider_options)
        await run_google_stream(API, model, context, options, google, out, endpoint)

    async def stream_simple(
        model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
    ) -> None:
        base = attrs.evolve(options, max_tokens=simple_max_tokens(model, options))
        google = GoogleOptions.from_provider_options(options.provider_options)
        thinking = simple_thinking(
            model, options, levels_for=uses_thinking_level, budget_for=thinking_budget
        )
        google = attrs.evolve(google, thinking=thinking)
        await run_google_stream(API, model, context, base, google, out, endpoint)

    return ApiProvider(api=API, stream=stream, stream_simple=stream_simple)


VERTEX_PROVIDER: Final = vertex_provider()
"""The ``google-vertex`` provider with the process's ADC token cache, ready to register."""


def register_vertex(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``google-vertex`` provider in ``registry``."""
    registry.register(VERTEX_PROVIDER)
