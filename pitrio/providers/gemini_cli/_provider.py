"""The ``google-gemini-cli`` provider: the Gemini codec over Cloud Code Assist."""

from __future__ import annotations

import functools
from typing import Final

import attrs

from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import ApiProvider, ProviderRegistry, default_registry
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.gemini_cli._request import (
    API,
    request_url,
    resolve_credentials,
    unwrap_response,
    wrap_request,
)
from pitrio.providers.google._provider import run_google_stream
from pitrio.providers.google._request import (
    GoogleEndpoint,
    GoogleOptions,
    request_headers,
    simple_max_tokens,
    simple_thinking,
)


async def _endpoint(model: Model, options: StreamOptions) -> GoogleEndpoint:
    credentials = resolve_credentials(options)
    auth = {"Authorization": f"Bearer {credentials.token}"}
    return GoogleEndpoint(
        url=request_url(model),
        headers=request_headers(model, options, auth),
        wrap_body=functools.partial(wrap_request, model, credentials.project),
        unwrap_chunk=unwrap_response,
    )


async def stream_gemini_cli(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream through Cloud Code Assist with the Gemini provider's options (``toolChoice``,
    ``thinking``) and ``project`` in ``provider_options``. Missing credentials end the stream
    with an error event."""
    google = GoogleOptions.from_provider_options(options.provider_options)
    await run_google_stream(API, model, context, options, google, out, _endpoint)


async def stream_simple_gemini_cli(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream from the unified options; ``options.reasoning`` maps as for the Gemini API."""
    base = attrs.evolve(options, max_tokens=simple_max_tokens(model, options))
    google = GoogleOptions.from_provider_options(options.provider_options)
    google = attrs.evolve(google, thinking=simple_thinking(model, options))
    await run_google_stream(API, model, context, base, google, out, _endpoint)


GEMINI_CLI_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_gemini_cli, stream_simple=stream_simple_gemini_cli
)
"""The ``google-gemini-cli`` provider, ready to register."""


def register_gemini_cli(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``google-gemini-cli`` provider in ``registry``."""
    registry.register(GEMINI_CLI_PROVIDER)
