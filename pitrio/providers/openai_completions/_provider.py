"""Driving one Chat Completions call: the request sent, its stream read, failures as data."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from pitrio.providers._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
)
from pitrio.providers._http import (
    apply_on_payload,
    failure_diagnostics,
    new_message_builder,
    response_callback,
)
from pitrio.providers._http import open_sse as open_sse
from pitrio.providers._http import sse_json as sse_json
from pitrio.providers._messages import (
    Context,
    Model,
    StreamOptions,
)
from pitrio.providers._models import clamp_thinking_level
from pitrio.providers._registry import (
    ApiProvider,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.openai_completions._compat import (
    COMPLETIONS_API,
    get_compat,
    resolve_api_key,
)
from pitrio.providers.openai_completions._reader import (
    _ChunkReader,
)
from pitrio.providers.openai_completions._request import (
    NO_FINISH_MESSAGE,
    SIMPLE_MAX_TOKENS_CAP,
    FinishReasonError,
    MissingApiKey,
    StreamErrorChunk,
    TruncatedStreamError,
    _api_error_text,
    _done_reason,
    _failure_text,
    build_headers,
    build_params,
    chat_completions_url,
    resolve_cache_retention,
)


async def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with API-specific options (pi's ``streamOpenAICompletions``).

    ``options.provider_options`` may hold ``reasoning_effort`` (``"minimal"`` ... ``"xhigh"``)
    and ``tool_choice`` (``"auto"``, ``"none"``, ``"required"`` or
    ``{"type": "function", "function": {"name": ...}}``); pi's camelCase spellings
    (``reasoningEffort``, ``toolChoice``) are accepted too.
    """
    extra = options.provider_options or {}
    api_key = resolve_api_key(model, options.api_key)
    if api_key is None:
        # The OpenAI SDK's own fallback, which pi relies on.
        api_key = os.environ.get("OPENAI_API_KEY") or None
    await _run(
        model,
        context,
        options,
        out,
        api_key=api_key,
        missing_key_message=(
            "OpenAI API key is required. Set OPENAI_API_KEY environment variable or pass it "
            "as an argument."
        ),
        reasoning_effort=_option(extra, "reasoning_effort", "reasoningEffort"),
        tool_choice=_option(extra, "tool_choice", "toolChoice"),
        max_tokens=options.max_tokens,
    )


async def stream_simple_openai_completions(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream one response with the unified options (pi's ``streamSimpleOpenAICompletions``).

    ``options.reasoning`` is clamped to the levels the model supports; the output cap defaults
    to ``min(model.max_tokens, 32000)``. ``provider_options["tool_choice"]`` is passed on.
    """
    extra = options.provider_options or {}
    api_key = resolve_api_key(model, options.api_key)
    effort: str | None = None
    if options.reasoning:
        clamped = clamp_thinking_level(model, options.reasoning)
        effort = None if clamped == "off" else clamped
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    await _run(
        model,
        context,
        options,
        out,
        api_key=api_key,
        missing_key_message=f"No API key for provider: {model.provider}",
        reasoning_effort=effort,
        tool_choice=_option(extra, "tool_choice", "toolChoice"),
        max_tokens=max_tokens,
    )


def _option(options: Mapping[str, Any], snake: str, camel: str) -> Any:
    value = options.get(snake)
    return options.get(camel) if value is None else value


# --------------------------------------------------------------------------- the run


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
    *,
    api_key: str | None,
    missing_key_message: str,
    reasoning_effort: str | None,
    tool_choice: Any,
    max_tokens: int | None,
) -> None:
    builder = new_message_builder(model)
    out.attach(builder)
    try:
        if api_key is None:
            raise MissingApiKey(missing_key_message)
        compat = get_compat(model)
        retention = resolve_cache_retention(options.cache_retention)
        session_id = None if retention == "none" else options.session_id
        headers = build_headers(model, api_key, options.headers, session_id, compat)
        body: Any = build_params(
            model,
            context,
            compat=compat,
            cache_retention=retention,
            session_id=options.session_id,
            max_tokens=max_tokens,
            temperature=options.temperature,
            reasoning_effort=reasoning_effort,
            tool_choice=tool_choice,
        )
        body = await apply_on_payload(options, body, model)
        reader = _ChunkReader(model, builder, out)
        async with open_sse(
            chat_completions_url(model.base_url),
            headers=headers,
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            finished = False
            async for batch in events:
                for event in batch:
                    if finished:
                        continue  # the SDK reads on to the end of the body, ignoring the rest
                    if event.data.startswith("[DONE]"):
                        finished = True
                        continue
                    chunk = sse_json(event)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise StreamErrorChunk(_api_error_text(None, chunk["error"], None))
                    await reader.feed(chunk)
        if not finished and not reader.finished:
            raise TruncatedStreamError(NO_FINISH_MESSAGE)
        await reader.finish_blocks()
        if builder.stop_reason == "error":
            raise FinishReasonError(
                builder.header.error_message or "Provider returned an error stop reason"
            )
    except Exception as exc:
        builder.update(
            stop_reason="error",
            error_message=_failure_text(exc),
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    message = builder.build()
    await out.emit(DoneEvent(reason=_done_reason(message), message=message))


OPENAI_COMPLETIONS_PROVIDER: Final = ApiProvider(
    api=COMPLETIONS_API,
    stream=stream_openai_completions,
    stream_simple=stream_simple_openai_completions,
)
"""The ``openai-completions`` provider (OpenAI and every OpenAI-compatible server)."""


def register_openai_completions(
    registry: ProviderRegistry = default_registry, source_id: str | None = None
) -> None:
    """Register the ``openai-completions`` provider in ``registry``."""
    registry.register(OPENAI_COMPLETIONS_PROVIDER, source_id)
