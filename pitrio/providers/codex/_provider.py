"""The ``openai-codex-responses`` provider: the Responses API of ChatGPT's Codex backend.

The request is built by :mod:`._request` and sent with pi's retries (:mod:`._retry`); the
stream is read by :mod:`._stream`. Only the SSE transport is built: pi 0.73.1 prefers a
websocket (``transport: "auto"``) and falls back to SSE; pitrio always uses SSE, whatever
``StreamOptions.transport`` says.

The access token is ``options.api_key`` (the session resolves it, renewing an expiring ChatGPT
sign-in through :class:`~pitrio.providers.credentials.CredentialStore`), else the provider's
environment key.

Differences from pi 0.73.1, on purpose: a stream that ends without a final event is an error
(:data:`~pitrio.providers.openai_responses._request.NO_FINAL_EVENT`), as for the other Responses
providers; see :mod:`._retry` for the retries.
"""

from __future__ import annotations

from typing import Any, Final

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import DoneEvent, StartEvent
from pitrio.providers._http import apply_on_payload, emit_failure, new_message_builder
from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.codex._request import (
    CodexOptions,
    build_codex_body,
    codex_account_id,
    codex_headers,
    codex_url,
)
from pitrio.providers.codex._retry import open_codex_sse
from pitrio.providers.codex._stream import process_codex_stream
from pitrio.providers.openai_responses._provider import simple_responses_options
from pitrio.providers.openai_responses._reader import tier_pricing
from pitrio.providers.openai_responses._request import (
    NO_FINAL_EVENT,
    UNKNOWN_ERROR,
    ResponsesStreamOptions,
)

__all__ = [
    "API",
    "OPENAI_CODEX_RESPONSES_PROVIDER",
    "register_openai_codex_responses",
    "resolve_codex_service_tier",
    "stream_openai_codex_responses",
    "stream_simple_openai_codex_responses",
]

API: Final = "openai-codex-responses"


def resolve_codex_service_tier(response_tier: str | None, request_tier: str | None) -> str | None:
    """The tier to price with: the one asked for when the backend answers ``"default"`` to a
    flex or priority request (as pi), else the response's, else the request's."""
    if response_tier == "default" and request_tier in ("flex", "priority"):
        return request_tier
    return response_tier or request_tier


async def stream_openai_codex_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream one response from the Codex backend (pi's ``streamOpenAICodexResponses``).

    ``options.provider_options`` holds the :class:`~pitrio.providers.codex.CodexOptions`.
    Failures end the stream with ``stopReason: "error"``; cancellation propagates.
    """
    builder = new_message_builder(model)
    out.attach(builder)
    codex = CodexOptions.from_mapping(options.provider_options)
    try:
        token = options.api_key or get_env_api_key(model.provider) or ""
        if not token:
            raise ProviderError(f"No API key for provider: {model.provider}")
        account_id = codex_account_id(token)
        body: Any = build_codex_body(model, context, options, codex)
        body = await apply_on_payload(options, body, model)
        headers = codex_headers(model, options, token, account_id)
        stream_options = ResponsesStreamOptions(
            service_tier=codex.responses.service_tier,
            resolve_service_tier=resolve_codex_service_tier,
            apply_service_tier_pricing=tier_pricing(model),
        )
        url = codex_url(model.base_url)
        async with open_codex_sse(url, headers, body, model, options) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            finished = await process_codex_stream(events, builder, out, model, stream_options)
        if not finished:
            raise ProviderError(NO_FINAL_EVENT)
        stop_reason = builder.stop_reason
        if stop_reason == "error" or stop_reason == "aborted":
            raise ProviderError(UNKNOWN_ERROR)
    except Exception as exc:  # every failure becomes the final message, as in pi
        await emit_failure(out, builder, exc)
        return
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_simple_openai_codex_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream with the unified options (pi's ``streamSimpleOpenAICodexResponses``).

    As :func:`~pitrio.providers.openai_responses._provider.simple_responses_options` maps them
    (pi sends no ``max_output_tokens`` to Codex, so the capped default only shows in
    ``on_payload``'s view of the options, never on the wire).
    """
    simple = await simple_responses_options(model, options, out)
    if simple is not None:
        await stream_openai_codex_responses(model, context, simple, out)


OPENAI_CODEX_RESPONSES_PROVIDER: Final = ApiProvider(
    api=API,
    stream=stream_openai_codex_responses,
    stream_simple=stream_simple_openai_codex_responses,
)
"""The ``openai-codex-responses`` provider, ready to register."""


def register_openai_codex_responses(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``openai-codex-responses`` provider in ``registry``."""
    registry.register(OPENAI_CODEX_RESPONSES_PROVIDER, "builtin:openai-codex-responses")
