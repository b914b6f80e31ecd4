"""Mistral ``/v1/chat/completions`` streams (``CompletionChunk`` events ending in ``[DONE]``).

Every chunk is written as Mistral's API writes it (snake_case, ``finish_reason: null`` until
the last choice, ``usage`` on the last chunk); ``test_mistral.py`` validates every payload here
and every request body pitrio sends against the ``mistralai`` SDK's types.

:data:`CASES` pair a request with a response; the same cases drive pitrio's parity tests and
``tests/data/pi/providers/mistral_capture.mjs``, which records what pi 0.73.1 sends and emits
for them (``python -m tests.providers.fixtures_mistral`` writes the cases file).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelNotFound,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    get_model,
)

RESPONSE_ID = "cmpl-2f1c3b0e9a7d4c6b8e5f0a1b2c3d4e5f"
CREATED = 1735689600
API_KEY = "test-mistral-key"
T0 = 1735689600000
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


# --------------------------------------------------------------------------- cases run by pi too


WEATHER_TOOL = Tool(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "array"}},
        "required": ["city"],
    },
)


def _foreign_history() -> Context:
    """Another provider's turn (reasoning, text, calls with long ids), results with images."""
    calls = [
        ToolCall(id="call_abc123|fc_0123456789abcdef", name="get_weather", arguments={"city": "A"}),
        ToolCall(id="toolu_01XyZ", name="get_weather", arguments={}),
        ToolCall(id="D681PevKs", name="get_weather", arguments={"city": "B", "days": [1]}),
    ]
    assistant = AssistantMessage(
        content=[ThinkingContent(thinking="Think first."), TextContent(text="Calling."), *calls],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        usage=Usage(),
        stop_reason="toolUse",
        timestamp=T0 + 1,
    )
    results = [
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text=f"r{i}")]
            + ([ImageContent(data=PNG_1PX, mime_type="image/png")] if i == 0 else []),
            is_error=i == 1,
            timestamp=T0 + 2,
        )
        for i, call in enumerate(calls)
    ]
    return Context(
        system_prompt="Use tools.",
        messages=[
            UserMessage(
                content=[
                    TextContent(text="Look:"),
                    ImageContent(data=PNG_1PX, mime_type="image/png"),
                ],
                timestamp=T0,
            ),
            assistant,
            *results,
        ],
        tools=[WEATHER_TOOL],
    )


def _own_history(model_id: str) -> Context:
    model = mistral_model(model_id)
    earlier = AssistantMessage(
        content=[ThinkingContent(thinking="Hmm."), TextContent(text="4.")],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason="stop",
        timestamp=T0 + 1,
    )
    return Context(
        messages=[
            UserMessage(content="2+2?", timestamp=T0),
            earlier,
            UserMessage(content="And 3+3?", timestamp=T0 + 2),
        ]
    )


def _hello() -> Context:
    return Context(
        system_prompt="You are terse.",
        messages=[UserMessage(content="Hi", timestamp=T0)],
        tools=[WEATHER_TOOL],
    )


DEFAULT_OPTIONS = StreamOptions(api_key=API_KEY)


@attrs.frozen(kw_only=True)
class Case:
    """One request/response pair, run through pitrio and (by the capture script) through pi."""

    name: str
    model_id: str
    context: Context
    options: StreamOptions = DEFAULT_OPTIONS
    simple: bool = True
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"


CASES = [
    Case(name="text", model_id="mistral-large-latest", context=_hello(), body=sse(text_chunks())),
    Case(
        name="thinking",
        model_id="magistral-medium-latest",
        context=_own_history("magistral-medium-latest"),
        options=StreamOptions(api_key=API_KEY, reasoning="high", session_id="sess-1"),
        body=sse(thinking_chunks()),
    ),
    Case(
        name="tool_calls",
        model_id="mistral-large-latest",
        context=_foreign_history(),
        options=StreamOptions(api_key=API_KEY, temperature=0.2, max_tokens=500),
        body=sse(tool_call_chunks()),
    ),
    Case(
        name="text_only_model",
        model_id="codestral-latest",
        context=_foreign_history(),
        body=sse(finish_chunks("length")),
    ),
    Case(
        name="reasoning_effort",
        model_id="mistral-small-latest",
        context=_hello(),
        options=StreamOptions(
            api_key=API_KEY,
            reasoning="low",
            session_id="sess-2",
            headers={"x-affinity": "mine"},
        ),
        body=sse(finish_chunks("model_length")),
    ),
    Case(
        name="tool_choice",
        model_id="mistral-medium-latest",
        context=_hello(),
        options=StreamOptions(
            api_key=API_KEY, provider_options={"toolChoice": "any", "promptMode": "reasoning"}
        ),
        simple=False,
        body=sse(finish_chunks("stop")),
    ),
    Case(
        name="error_finish",
        model_id="mistral-large-latest",
        context=_hello(),
        body=sse(finish_chunks("error")),
    ),
    Case(
        name="rate_limit",
        model_id="mistral-large-latest",
        context=_hello(),
        status=429,
        body=json.dumps(RATE_LIMIT_BODY).encode(),
        content_type="application/json",
    ),
]
CASES_FILE = Path(__file__).parents[1] / "data" / "pi" / "providers" / "mistral_cases.json"


def pi_options(case: Case) -> dict[str, Any]:
    """The case's options as pi's ``MistralOptions`` JSON."""
    options = case.options
    out: dict[str, Any] = {"apiKey": options.api_key}
    for name, key in (
        ("temperature", "temperature"),
        ("max_tokens", "maxTokens"),
        ("reasoning", "reasoning"),
        ("session_id", "sessionId"),
    ):
        value = getattr(options, name)
        if value is not None:
            out[key] = value
    if options.headers is not None:
        out["headers"] = dict(options.headers)
    out.update(options.provider_options or {})
    return out


def pi_cases() -> dict[str, Any]:
    """The cases as ``mistral_capture.mjs`` reads them."""
    return {
        "cases": [
            {
                "name": case.name,
                "mode": "simple" if case.simple else "stream",
                "model": to_wire(mistral_model(case.model_id)),
                "context": to_wire(case.context),
                "options": pi_options(case),
                "response": {
                    "status": case.status,
                    "contentType": case.content_type,
                    "body": case.body.decode(),
                },
            }
            for case in CASES
        ]
    }


def main() -> None:
    """Write the cases file for ``mistral_capture.mjs``."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else CASES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pi_cases(), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
