"""Mistral ``/v1/chat/completions`` streams (``CompletionChunk`` events ending in ``[DONE]``).

Every chunk is written as Mistral's API writes it (snake_case, ``finish_reason: null`` until
the last choice, ``usage`` on the last chunk); ``test_mistral.py`` validates every payload here
and every request body pitrio sends against the ``mistralai`` SDK's types.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pitrio.providers import Model, ModelNotFound, get_model

RESPONSE_ID = "cmpl-2f1c3b0e9a7d4c6b8e5f0a1b2c3d4e5f"
CREATED = 1735689600
API_KEY = "test-mistral-key"
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def mistral_model(model_id: str, base_url: str = "http://127.0.0.1:1") -> Model:
    found = get_model("mistral", model_id)
    if found is None:
        raise ModelNotFound(f"mistral/{model_id}")
    return attrs.evolve(found, base_url=base_url)


def chunk(
    delta: Mapping[str, Any] | None,
    *,
    finish: str | None = None,
    usage: Mapping[str, Any] | None = None,
    model: str = "mistral-large-latest",
) -> dict[str, Any]:
    """One ``CompletionChunk`` with a single choice (or none, for ``delta=None``)."""
    out: dict[str, Any] = {
        "id": RESPONSE_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = dict(usage)
    return out


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def sse(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> bytes:
    """Frame chunks as ``data:`` events, then ``data: [DONE]``."""
    out = b"".join(
        b"data: " + json.dumps(c, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"
        for c in chunks
    )
    return out + (b"data: [DONE]\n\n" if done else b"")


def text_chunks() -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hello"}),
        chunk({"content": " there, how can I help?"}),
        chunk({"content": ""}, finish="stop", usage=usage(12, 9)),
    ]


def thinking_chunks() -> list[dict[str, Any]]:
    """A Magistral answer: thinking chunks, then text chunks, both as content lists."""
    model = "magistral-medium-latest"
    return [
        chunk({"role": "assistant", "content": ""}, model=model),
        chunk(
            {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Two plus"}]}]},
            model=model,
        ),
        chunk(
            {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " two."}]}]},
            model=model,
        ),
        chunk({"content": [{"type": "text", "text": "It is "}]}, model=model),
        chunk({"content": "4."}, model=model),
        chunk({"content": ""}, finish="stop", usage=usage(20, 31), model=model),
    ]


def tool_call_chunks() -> list[dict[str, Any]]:
    """Text, then two calls; the first one's arguments arrive in three pieces."""
    return [
        chunk({"role": "assistant", "content": "Checking both."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "D681PevKs",
                        "type": "function",
                        "index": 0,
                        "function": {"name": "get_weather", "arguments": '{"city": "Pa'},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "D681PevKs",
                        "index": 0,
                        "function": {"name": "get_weather", "arguments": 'ris", "days": [1, 2'},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "D681PevKs",
                        "index": 0,
                        "function": {"name": "get_weather", "arguments": "]}"},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "null",
                        "index": 1,
                        "function": {"name": "get_weather", "arguments": '{"city": "Zürich"}'},
                    }
                ]
            },
        ),
        chunk({"content": ""}, finish="tool_calls", usage=usage(57, 40)),
    ]


def finish_chunks(reason: str) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": "Partial"}),
        chunk({"content": ""}, finish=reason, usage=usage(8, 5)),
    ]


RATE_LIMIT_BODY = {
    "object": "error",
    "message": "Requests rate limit exceeded",
    "type": "rate_limited",
    "param": None,
    "code": "1300",
}
STREAM_ERROR_EVENT = {
    "object": "error",
    "message": "Service unavailable",
    "type": "internal_server_error",
    "param": None,
    "code": "3000",
}


def response_payloads() -> list[dict[str, Any]]:
    return [
        *text_chunks(),
        *thinking_chunks(),
        *tool_call_chunks(),
        *(c for reason in ("length", "model_length", "error") for c in finish_chunks(reason)),
    ]
