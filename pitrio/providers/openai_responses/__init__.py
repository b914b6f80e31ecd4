"""The ``openai-responses`` wire API (pi-ai's ``openai-responses.ts``), shared by the Azure
and Codex Responses providers.

Request building (:mod:`._request`: input items, tools, reasoning, headers) lives apart from
stream reading (:mod:`._reader`: the Responses events into pi's assistant-message events);
the provider (:mod:`._provider`) drives one call.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers.openai_responses._provider import (
    OPENAI_RESPONSES_PROVIDER as OPENAI_RESPONSES_PROVIDER,
)
from pitrio.providers.openai_responses._provider import (
    register_openai_responses as register_openai_responses,
)
from pitrio.providers.openai_responses._provider import (
    stream_openai_responses as stream_openai_responses,
)
from pitrio.providers.openai_responses._provider import (
    stream_simple_openai_responses as stream_simple_openai_responses,
)
from pitrio.providers.openai_responses._request import (
    OpenAIResponsesOptions as OpenAIResponsesOptions,
)

__all__ = [
    "OPENAI_RESPONSES_PROVIDER",
    "OpenAIResponsesOptions",
    "register_openai_responses",
    "stream_openai_responses",
    "stream_simple_openai_responses",
]

_publish(globals(), __all__)
