"""Driving one Anthropic Messages call: the request sent, its stream read, failures as data."""

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
    HTTPStatusError,
    SSEBatches,
    apply_on_payload,
    describe_failure,
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
from pitrio.providers.anthropic._reader import (
    _ResponseReader,
    sdk_error_message,
)
from pitrio.providers.anthropic._request import (
    API,
    NO_AUTH_MESSAGE,
    NO_START_MESSAGE,
    NO_STOP_MESSAGE,
    SIMPLE_MAX_TOKENS_CAP,
    UNKNOWN_ERROR_MESSAGE,
    AnthropicOptions,
    _endpoint,
    adjust_max_tokens_for_thinking,
    build_params,
    map_thinking_level_to_effort,
    supports_adaptive_thinking,
)


async def _read(reader: _ResponseReader, events: SSEBatches) -> tuple[bool, Exception | None]:
    """Feed every event to ``reader``; return whether ``message_stop`` came, and the failure.

    A failure stops the reading at once; :func:`open_sse` finishes the response's generators.
    """
    stopped = False
    feed = reader.feed
    async for batch in events:
        for sse in batch:
            try:
                pending = feed(sse)
                if pending is not None and await pending:
                    stopped = True
            except Exception as exc:  # the message ends with this error
                return stopped, exc
    return stopped, None


async def _stream(
    model: Model,
    context: Context,
    options: StreamOptions,
    anthropic: AnthropicOptions,
    api_key: str,
    out: AssistantMessageEventStream,
) -> None:
    builder = new_message_builder(model)
    out.attach(builder)
    try:
        endpoint = _endpoint(model, context, options, api_key, anthropic.interleaved_thinking)
        body: Any = build_params(model, context, options, anthropic, is_oauth=endpoint.is_oauth)
        body = await apply_on_payload(options, body, model)
        if not endpoint.auth_ok:
            raise ProviderError(NO_AUTH_MESSAGE)
        async with open_sse(
            endpoint.url,
            headers=endpoint.headers,
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            reader = _ResponseReader(model, builder, out, context.tools, endpoint.is_oauth)
            stopped, failure = await _read(reader, events)
        if failure is not None:
            raise failure
        if not stopped:
            raise ProviderError(NO_STOP_MESSAGE if reader.saw_start else NO_START_MESSAGE)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR_MESSAGE)
    except Exception as exc:  # failures are data: the message ends with stopReason "error"
        if isinstance(exc, HTTPStatusError):
            text = sdk_error_message(exc.status, exc.body)
        else:
            text = describe_failure(exc)
        builder.update(
            stop_reason="error",
            error_message=text,
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    reason = builder.stop_reason
    if reason == "length" or reason == "toolUse":
        await out.emit(DoneEvent(reason=reason, message=builder.build()))
    else:
        await out.emit(DoneEvent(reason="stop", message=builder.build()))


async def stream_anthropic(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with the API-specific options (pi-ai ``streamAnthropic``).

    ``options.provider_options`` holds :class:`AnthropicOptions` fields. The key is
    ``options.api_key``, else the provider's environment variable; ``max_tokens`` defaults to a
    third of the model's limit.
    """
    api_key = options.api_key
    if api_key is None:
        api_key = get_env_api_key(model.provider) or ""
    anthropic = AnthropicOptions.from_mapping(options.provider_options)
    await _stream(model, context, options, anthropic, api_key, out)


async def stream_simple_anthropic(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with pi's unified options (pi-ai ``streamSimpleAnthropic``).

    ``options.reasoning`` selects adaptive thinking with an effort, or a thinking budget taken
    from ``options.thinking_budgets`` (pi's defaults otherwise) and added to ``max_tokens``.

    Raises:
        ProviderError: no API key in the options or the environment (the stream driver turns
            it into the ``error`` event).
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        raise ProviderError(f"No API key for provider: {model.provider}")
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    base = attrs.evolve(options, api_key=api_key, max_tokens=max_tokens)
    level = options.reasoning
    if not level:
        anthropic = AnthropicOptions(thinking_enabled=False)
    elif supports_adaptive_thinking(model.id):
        effort: Any = map_thinking_level_to_effort(model, level)
        anthropic = AnthropicOptions(thinking_enabled=True, effort=effort)
    else:
        adjusted, budget = adjust_max_tokens_for_thinking(
            max_tokens or 0, model.max_tokens, level, options.thinking_budgets
        )
        base = attrs.evolve(base, max_tokens=adjusted)
        anthropic = AnthropicOptions(thinking_enabled=True, thinking_budget_tokens=budget)
    await _stream(model, context, base, anthropic, api_key, out)


ANTHROPIC_PROVIDER: Final = ApiProvider(
    api=API, stream=stream_anthropic, stream_simple=stream_simple_anthropic
)
"""The ``anthropic-messages`` provider."""


def register_anthropic(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``anthropic-messages`` provider in ``registry``."""
    registry.register(ANTHROPIC_PROVIDER)
