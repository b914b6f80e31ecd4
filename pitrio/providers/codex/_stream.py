"""Reading an ``openai-codex-responses`` stream: the Responses events with Codex's variations.

As pi-ai 0.73.1's ``mapCodexEvents`` before its shared Responses reader:

* an ``error`` event fails the stream with ``"Codex error: <message, else code, else the
  event's JSON>"``; ``response.failed`` with the response's error message (else "Codex response
  failed");
* ``response.done``, ``response.completed`` and ``response.incomplete`` all end the response:
  each is read as ``response.completed`` with its status kept only when it is one of the API's
  statuses (an unknown status reads as a normal stop), and nothing after it is read;
* events without a ``type`` and ``[DONE]`` lines are skipped.

The events themselves go through :class:`~pitrio.providers._openai_responses.
ResponsesEventReader`, as for the OpenAI and Azure providers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from pitrio.providers._http import SSEBatches, sse_json
from pitrio.providers._messages import Model
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import ProviderError
from pitrio.providers._stream import AssistantMessageEventStream
from pitrio.providers.openai_responses._reader import ResponsesEventReader
from pitrio.providers.openai_responses._request import ResponsesStreamOptions

__all__ = ["CODEX_RESPONSE_STATUSES", "CodexApiError", "process_codex_stream"]

CODEX_RESPONSE_STATUSES: Final = frozenset(
    {"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"}
)
_FINAL_EVENTS: Final = frozenset({"response.done", "response.completed", "response.incomplete"})


class CodexApiError(ProviderError):
    """The Codex backend reported a failure inside the stream.

    Attributes:
        code: the error code it gave, if any.
        payload: the event that carried it.
    """

    def __init__(self, message: str, code: str | None, payload: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.code = code
        self.payload = payload


def _final(event: Mapping[str, Any]) -> dict[str, Any]:
    mapped = {**event, "type": "response.completed"}
    response = event.get("response")
    if isinstance(response, Mapping):
        status = response.get("status")
        mapped["response"] = {
            **response,
            "status": status if status in CODEX_RESPONSE_STATUSES else None,
        }
    return mapped


async def process_codex_stream(
    events: SSEBatches,
    builder: AssistantMessageBuilder,
    out: AssistantMessageEventStream,
    model: Model,
    options: ResponsesStreamOptions | None = None,
) -> bool:
    """Read a Codex SSE stream into pi's events (see the module docstring).

    Returns:
        Whether a final event arrived.

    Raises:
        CodexApiError: an ``error`` or ``response.failed`` event.
        ProviderError: data that is not JSON, or an event without its required fields.
    """
    reader = ResponsesEventReader(builder, out, model, options)
    async for batch in events:
        for sse in batch:
            data = sse.data.strip()
            if not data or data == "[DONE]":
                continue
            event = sse_json(sse)
            kind = event.get("type") if isinstance(event, dict) else None
            if not isinstance(kind, str) or not kind:
                continue
            if kind == "error":
                code = event.get("code") or ""
                message = event.get("message") or ""
                text = message or code or orjson.dumps(event).decode()
                raise CodexApiError(f"Codex error: {text}", code or None, event)
            if kind == "response.failed":
                response = event.get("response")
                error = response.get("error") if isinstance(response, dict) else None
                error = error if isinstance(error, dict) else {}
                raise CodexApiError(
                    error.get("message") or "Codex response failed", error.get("code"), event
                )
            if kind in _FINAL_EVENTS:
                await reader.handle(_final(event))
                return True
            await reader.handle(event)
    return False
