"""The ``mistral-conversations`` provider (pi's ``streamMistral`` / ``streamSimpleMistral``)."""

from __future__ import annotations

from typing import Any, Final

import attrs
import httpx2

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import DoneEvent, ErrorEvent, StartEvent
from pitrio.providers._http import (
    HTTPStatusError,
    apply_on_payload,
    describe_failure,
    failure_diagnostics,
    new_message_builder,
    open_sse,
    response_callback,
)
from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._models import clamp_thinking_level
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.mistral._request import (
    API,
    MistralOptions,
    build_request_body,
    chat_url,
    request_headers,
    simple_reasoning,
)
from pitrio.providers.mistral._stream import ChunkReader, read_stream

SIMPLE_MAX_TOKENS_CAP: Final = 32_000
MAX_ERROR_BODY_CHARS: Final = 4000
UNKNOWN_ERROR: Final = "An unknown error occurred"


def error_message(exc: BaseException) -> str:
    """pi's wording: ``Mistral API error (<status>): <body>`` (long bodies truncated)."""
    if isinstance(exc, HTTPStatusError):
        body = exc.body.strip()
        if not body:
            return f"Mistral API error ({exc.status}): {httpx2.codes.get_reason_phrase(exc.status)}"
        if len(body) > MAX_ERROR_BODY_CHARS:
            rest = len(body) - MAX_ERROR_BODY_CHARS
            body = f"{body[:MAX_ERROR_BODY_CHARS]}... [truncated {rest} chars]"
        return f"Mistral API error ({exc.status}): {body}"
    return describe_failure(exc)


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    mistral: MistralOptions,
    out: AssistantMessageEventStream,
) -> None:
    builder = new_message_builder(model)
    builder.update(api=API)
    out.attach(builder)
    try:
        api_key = options.api_key or get_env_api_key(model.provider)
        if not api_key:
            raise ProviderError(f"No API key for provider: {model.provider}")
        body: Any = build_request_body(model, context, options, mistral)
        body = await apply_on_payload(options, body, model)
        async with open_sse(
            chat_url(model),
            headers=request_headers(model, options, api_key),
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            await read_stream(ChunkReader(model, builder, out), events)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR)
    except Exception as exc:  # failures are data: the stream ends with an error event
        builder.update(
            stop_reason="error",
            error_message=error_message(exc),
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    stop_reason = builder.stop_reason
    assert stop_reason in ("stop", "length", "toolUse")
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_mistral(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream a Mistral chat response with API-specific options (:class:`MistralOptions` in
    ``provider_options``). A missing key ends the stream with an error event."""
    await _run(
        model, context, options, MistralOptions.from_provider_options(options.provider_options), out
    )


async def stream_simple_mistral(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream from the unified options: ``options.reasoning`` becomes ``prompt_mode`` or
    ``reasoning_effort`` as pi maps it; ``max_tokens`` defaults to ``min(model.max_tokens,
    32000)``.

    Raises:
        ProviderError: no API key in the options or the environment (as pi, before any event).
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        raise ProviderError(f"No API key for provider: {model.provider}")
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    base = attrs.evolve(options, api_key=api_key, max_tokens=max_tokens)
    clamped = clamp_thinking_level(model, options.reasoning) if options.reasoning else None
    reasoning = simple_reasoning(model, None if clamped == "off" else clamped)
    mistral = MistralOptions.from_provider_options(options.provider_options)
    mistral = attrs.evolve(
        mistral, prompt_mode=reasoning.prompt_mode, reasoning_effort=reasoning.reasoning_effort
    )
    await _run(model, context, base, mistral, out)


MISTRAL_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_mistral, stream_simple=stream_simple_mistral
)
"""The ``mistral-conversations`` provider, ready to register."""


def register_mistral(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``mistral-conversations`` provider in ``registry``."""
    registry.register(MISTRAL_PROVIDER)
