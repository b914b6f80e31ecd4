"""Driving one Responses call: the request sent, its stream read, failures as data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import (
    DoneEvent,
    StartEvent,
)
from pitrio.providers._http import (
    apply_on_payload,
    emit_failure,
    new_message_builder,
    open_sse,
    response_callback,
)
from pitrio.providers._messages import (
    Context,
    Model,
    StreamOptions,
    ThinkingLevel,
)
from pitrio.providers._models import clamp_thinking_level
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.openai_responses._reader import (
    process_responses_stream,
    tier_pricing,
)
from pitrio.providers.openai_responses._request import (
    API,
    NO_FINAL_EVENT,
    SIMPLE_MAX_TOKENS_CAP,
    UNKNOWN_ERROR,
    OpenAIResponsesOptions,
    ResponsesStreamOptions,
    _base_url,
    _build_headers,
    _cache_retention,
    build_params,
)


async def read_responses_sse(
    url: str,
    headers: Mapping[str, str],
    params: Any,
    model: Model,
    options: StreamOptions,
    builder: AssistantMessageBuilder,
    out: AssistantMessageEventStream,
    stream_options: ResponsesStreamOptions | None = None,
) -> Literal["stop", "length", "toolUse"]:
    """POST ``params`` to ``url`` and read the Responses stream into ``builder`` and ``out``.

    Emits ``start`` once the response is accepted, then the block events; the terminal event
    is the caller's. Retries, timeouts and ``on_response`` follow ``options`` (see
    :func:`~pitrio.providers._http.open_sse`).

    Returns:
        The stop reason the final event set (never ``"error"`` or ``"aborted"``).

    Raises:
        ProviderError: an error status, a failure event, or a stream that ended without a final
            event (:data:`NO_FINAL_EVENT`).
        httpx2.TransportError: the connection failed or dropped.
    """
    async with open_sse(
        url,
        headers=headers,
        body=params,
        timeout_ms=options.timeout_ms,
        max_retries=options.max_retries,
        max_retry_delay_ms=options.max_retry_delay_ms,
        stall_timeout_ms=options.stall_timeout_ms,
        on_response=response_callback(options, model),
    ) as events:
        await out.emit(StartEvent(partial=builder.snapshot()))
        finished = await process_responses_stream(events, builder, out, model, stream_options)
    if not finished:
        raise ProviderError(NO_FINAL_EVENT)
    stop_reason = builder.stop_reason
    if stop_reason == "error" or stop_reason == "aborted":
        raise ProviderError(UNKNOWN_ERROR)
    return stop_reason


async def stream_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream one response from the Responses API (pi's ``streamOpenAIResponses``).

    ``options.provider_options`` holds the :class:`OpenAIResponsesOptions`. Failures (HTTP
    errors, a dropped connection, an ``error`` event) end the stream with ``stopReason:
    "error"``; cancellation propagates, and the driver reports ``"aborted"``.
    """
    builder = new_message_builder(model)
    out.attach(builder)
    api_options = OpenAIResponsesOptions.from_mapping(options.provider_options)
    try:
        api_key = options.api_key or get_env_api_key(model.provider) or ""
        if not api_key:
            raise ProviderError(
                "OpenAI API key is required. Set OPENAI_API_KEY environment variable or pass it "
                "as an argument."
            )
        retention = _cache_retention(options)
        session_id = None if retention == "none" else options.session_id
        headers = _build_headers(model, context, api_key, options, session_id)
        url = _base_url(model).rstrip("/") + "/responses"
        params: Any = build_params(model, context, options, api_options)
        params = await apply_on_payload(options, params, model)
        stream_options = ResponsesStreamOptions(
            service_tier=api_options.service_tier,
            apply_service_tier_pricing=tier_pricing(model),
        )
        stop_reason = await read_responses_sse(
            url, headers, params, model, options, builder, out, stream_options
        )
    except Exception as exc:  # every failure becomes the final message, as in pi
        await emit_failure(out, builder, exc)
        return
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_simple_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream with the unified options (pi's ``streamSimpleOpenAIResponses``).

    ``options.reasoning`` is clamped to what the model supports and sent as the reasoning
    effort; ``max_tokens`` defaults to the model's limit capped at 32000. Other
    :class:`OpenAIResponsesOptions` in ``provider_options`` (summary, service tier) pass through.
    """
    simple = await simple_responses_options(model, options, out)
    if simple is not None:
        await stream_openai_responses(model, context, simple, out)


async def simple_responses_options(
    model: Model, options: StreamOptions, out: AssistantMessageEventStream
) -> StreamOptions | None:
    """Map the unified options onto a Responses provider's own (pi's ``streamSimple*``).

    The reasoning level is clamped and passed as ``reasoning_effort`` in ``provider_options``;
    ``max_tokens`` defaults to the model's limit capped at :data:`SIMPLE_MAX_TOKENS_CAP`.
    Without an API key (``options.api_key`` or the environment) the stream ends with an error
    and ``None`` is returned.
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        builder = new_message_builder(model)
        out.attach(builder)
        await emit_failure(
            out, builder, ProviderError(f"No API key for provider: {model.provider}")
        )
        return None
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    effort: ThinkingLevel | None = None
    if options.reasoning:
        clamped = clamp_thinking_level(model, options.reasoning)
        effort = None if clamped == "off" else clamped
    api_options = attrs.evolve(
        OpenAIResponsesOptions.from_mapping(options.provider_options), reasoning_effort=effort
    )
    return attrs.evolve(
        options,
        api_key=api_key,
        max_tokens=max_tokens,
        reasoning=None,
        provider_options={**(options.provider_options or {}), **attrs.asdict(api_options)},
    )


OPENAI_RESPONSES_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_openai_responses, stream_simple=stream_simple_openai_responses
)
"""The ``openai-responses`` provider, ready to register."""


def register_openai_responses(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``openai-responses`` provider in ``registry``."""
    registry.register(OPENAI_RESPONSES_PROVIDER, "builtin:openai-responses")
