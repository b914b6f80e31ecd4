"""The ``azure-openai-responses`` provider: the Responses API on Azure OpenAI.

The request is built by :mod:`._request`; the answer is the Responses event stream, read by the
``openai-responses`` provider's reader (:func:`~pitrio.providers._openai_responses.
read_responses_sse`), so a stream ending without a final event is an error here too.

Differences from pi 0.73.1, on purpose (those of the ``openai-responses`` reader): a
``response.incomplete`` event gives ``stopReason: "length"`` with its usage (pi's Azure
provider ignores the event), and a stream without a final event is an error, not a ``stop``.
"""

from __future__ import annotations

import os
from typing import Any, Final

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import DoneEvent
from pitrio.providers._http import apply_on_payload, emit_failure, new_message_builder
from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.azure._request import (
    AzureOptions,
    azure_headers,
    azure_url,
    build_azure_params,
    resolve_deployment_name,
)
from pitrio.providers.openai_responses._provider import read_responses_sse, simple_responses_options

__all__ = [
    "API",
    "AZURE_OPENAI_RESPONSES_PROVIDER",
    "register_azure_openai_responses",
    "stream_azure_openai_responses",
    "stream_simple_azure_openai_responses",
]

API: Final = "azure-openai-responses"


async def stream_azure_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream one response from Azure OpenAI (pi's ``streamAzureOpenAIResponses``).

    ``options.provider_options`` holds the :class:`~pitrio.providers.azure.AzureOptions`
    (reasoning effort and summary, ``azure_api_version``, ``azure_resource_name``,
    ``azure_base_url``, ``azure_deployment_name``). The key is ``options.api_key``, else the
    provider's environment key, else ``AZURE_OPENAI_API_KEY``. Failures end the stream with
    ``stopReason: "error"``; cancellation propagates.
    """
    builder = new_message_builder(model)
    out.attach(builder)
    azure = AzureOptions.from_mapping(options.provider_options)
    try:
        deployment = resolve_deployment_name(model, azure)
        api_key = (
            options.api_key
            or get_env_api_key(model.provider)
            or os.environ.get("AZURE_OPENAI_API_KEY")
        )
        if not api_key:
            raise ProviderError(
                "Azure OpenAI API key is required. Set AZURE_OPENAI_API_KEY environment "
                "variable or pass it as an argument."
            )
        headers = azure_headers(model, api_key, options)
        url = azure_url(model, azure)
        params: Any = build_azure_params(model, context, options, azure, deployment)
        params = await apply_on_payload(options, params, model)
        stop_reason = await read_responses_sse(url, headers, params, model, options, builder, out)
    except Exception as exc:  # every failure becomes the final message, as in pi
        await emit_failure(out, builder, exc)
        return
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_simple_azure_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions,
    out: AssistantMessageEventStream,
) -> None:
    """Stream with the unified options (pi's ``streamSimpleAzureOpenAIResponses``).

    As :func:`~pitrio.providers.openai_responses._provider.simple_responses_options` maps them; the
    Azure options in ``provider_options`` pass through.
    """
    simple = await simple_responses_options(model, options, out)
    if simple is not None:
        await stream_azure_openai_responses(model, context, simple, out)


AZURE_OPENAI_RESPONSES_PROVIDER: Final = ApiProvider(
    api=API,
    stream=stream_azure_openai_responses,
    stream_simple=stream_simple_azure_openai_responses,
)
"""The ``azure-openai-responses`` provider, ready to register."""


def register_azure_openai_responses(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``azure-openai-responses`` provider in ``registry``."""
    registry.register(AZURE_OPENAI_RESPONSES_PROVIDER, "builtin:azure-openai-responses")
