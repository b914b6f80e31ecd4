"""The mistral-conversations provider over real loopback HTTP (pi 0.73.1's ``mistral.js``).

Fixtures and request bodies are checked against the ``mistralai`` SDK's own types.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mistralai.client import models as mistral_types

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    stream,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers.mistral import NO_FINISH_MESSAGE, register_mistral

from fixtures_mistral import (
    API_KEY,
    CASES,
    PNG_1PX,
    RATE_LIMIT_BODY,
    STREAM_ERROR_EVENT,
    Case,
    chunk,
    finish_chunks,
    mistral_model,
    response_payloads,
    sse,
    text_chunks,
    thinking_chunks,
    tool_call_chunks,
)
from loopback import Request, ResponseWriter, error_handler, serve, sse_handler
from pi_data import load_json
from sdk_check import SdkCheckError, validate_strict

CAPTURE = load_json("providers/mistral_capture.json")
REGISTRY = ProviderRegistry()
register_mistral(REGISTRY)
MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
WEATHER = Tool(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def hello() -> Context:
    return Context(
        system_prompt="You are terse.",
        messages=[UserMessage(content="Hi", timestamp=1)],
        tools=[WEATHER],
    )


async def run(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    simple: bool = True,
) -> list[AssistantMessageEvent]:
    opener = stream_simple if simple else stream
    async with opener(
        model, context, options or StreamOptions(api_key=API_KEY), registry=REGISTRY
    ) as events:
        return [event async for event in events]


async def serve_run(
    handler: Any,
    model_id: str = "mistral-large-latest",
    context: Context | None = None,
    options: StreamOptions | None = None,
    *,
    simple: bool = True,
) -> tuple[list[AssistantMessageEvent], Request]:
    async with serve(handler) as server, open_http_client():
        model = mistral_model(model_id, server.url())
        events = await run(model, context or hello(), options, simple=simple)
    return events, server.requests[0]


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


def check_request(body: dict[str, Any]) -> None:
    validate_strict(mistral_types.ChatCompletionStreamRequest, body)


# --------------------------------------------------------------------------- fixtures vs SDK


def test_fixture_payloads_are_valid_sdk_chunks() -> None:
    payloads = response_payloads()
    assert len(payloads) > 15
    for payload in payloads:
        validate_strict(mistral_types.CompletionChunk, payload)


@pytest.mark.parametrize(
    "bad",
    [
        chunk({"content": "x"}) | {"choices": [{"index": 0, "delta": {}, "finishReason": None}]},
        chunk({"content": [{"type": "thinking", "text": "no list"}]}),
        chunk({"content": "x"}) | {"created": "1735689600"},  # coerced type
    ],
)
def test_sdk_check_rejects_what_mistral_would_not_send(bad: dict[str, Any]) -> None:
    with pytest.raises(SdkCheckError):
        validate_strict(mistral_types.CompletionChunk, bad)


# --------------------------------------------------------------------------- answers


async def test_text_answer_usage_cost_and_request() -> None:
    events, request = await serve_run(sse_handler(sse(text_chunks()), chunk_size=23))
    message = final(events)
    assert isinstance(events[-1], DoneEvent)
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.text() == "Hello there, how can I help?"
    assert message.api == "mistral-conversations"
    assert message.response_id == "cmpl-2f1c3b0e9a7d4c6b8e5f0a1b2c3d4e5f"
    model = mistral_model("mistral-large-latest")
    assert message.usage.input == 12 and message.usage.output == 9
    assert message.usage.total_tokens == 21 and message.usage.cache_read == 0
    expected = (12 * model.cost.input + 9 * model.cost.output) / 1_000_000
    assert message.usage.cost.total == pytest.approx(expected)
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    check_request(body)
    assert body["model"] == "mistral-large-latest" and body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["messages"][1] == {"role": "user", "content": "Hi"}
    assert body["max_tokens"] == min(model.max_tokens, 32000)
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": WEATHER.parameters,
            "strict": False,
        },
    }
    assert "prompt_mode" not in body and "reasoning_effort" not in body


async def test_thinking_chunks_become_a_thinking_block_then_text() -> None:
    events, _ = await serve_run(
        sse_handler(sse(thinking_chunks()), chunk_size=31),
        "magistral-medium-latest",
        options=StreamOptions(api_key=API_KEY, reasoning="high"),
    )
    message = final(events)
    assert [type(b) for b in message.content] == [ThinkingContent, TextContent]
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Two plus two."
    assert isinstance(text, TextContent) and text.text == "It is 4."
    kinds = [e.type for e in events]
    # The thinking block ends before the text block starts (pi ends a block on a switch).
    assert kinds.index("thinking_end") < kinds.index("text_start")
    assert message.usage.output == 31


async def test_tool_calls_stream_their_arguments() -> None:
    events, _ = await serve_run(sse_handler(sse(tool_call_chunks()), chunk_size=41))
    message = final(events)
    assert message.stop_reason == "toolUse"
    calls = message.tool_calls()
    assert [c.arguments for c in calls] == [
        {"city": "Paris", "days": [1, 2]},
        {"city": "Zürich"},
    ]
    assert calls[0].id == "D681PevKs"
    # A call sent with the id "null" gets pi's derived id: "toolcall:1" stripped to 9 chars.
    assert calls[1].id == "toolcall1" and MISTRAL_ID.match(calls[1].id)
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]
    assert deltas == ['{"city": "Pa', 'ris", "days": [1, 2', "]}", '{"city": "Zürich"}']
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.tool_call.id for e in ends] == ["D681PevKs", "toolcall1"]
    assert events[-1].type == "done"


@pytest.mark.parametrize(
    ("reason", "stop"), [("stop", "stop"), ("length", "length"), ("model_length", "length")]
)
async def test_stop_reasons(reason: str, stop: str) -> None:
    events, _ = await serve_run(sse_handler(sse(finish_chunks(reason))))
    assert isinstance(events[-1], DoneEvent)
    assert final(events).stop_reason == stop


async def test_error_finish_reason_is_an_error() -> None:
    events, _ = await serve_run(sse_handler(sse(finish_chunks("error"))))
    assert isinstance(events[-1], ErrorEvent)
    assert final(events).error_message == "An unknown error occurred"
    assert final(events).text() == "Partial"


async def test_http_error_reads_as_pi_words_it() -> None:
    events, _ = await serve_run(error_handler(429, RATE_LIMIT_BODY))
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == f"Mistral API error (429): {json.dumps(RATE_LIMIT_BODY)}"


async def test_error_event_in_the_stream() -> None:
    body = sse([text_chunks()[1], STREAM_ERROR_EVENT], done=False)
    events, _ = await serve_run(sse_handler(body))
    message = final(events)
    assert isinstance(events[-1], ErrorEvent)
    assert message.error_message is not None
    assert message.error_message.startswith("Mistral API error: ")
    assert "Service unavailable" in message.error_message
    assert message.text() == "Hello"


async def test_stream_cut_short_is_an_error() -> None:
    body = sse(text_chunks()[:3], done=False)
    events, _ = await serve_run(sse_handler(body))
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == NO_FINISH_MESSAGE
    assert message.text() == "Hello there, how can I help?"


async def test_dropped_connection_is_an_error() -> None:
    body = sse(text_chunks())
    events, _ = await serve_run(sse_handler(body, drop_after=body.index(b"Hello") + 10))
    message = final(events)
    assert message.stop_reason == "error"
    assert "terminated" in (message.error_message or "")


async def test_a_200_that_is_not_a_stream() -> None:
    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(200, b'{"id": "x", "choices": []}')

    events, _ = await serve_run(handle)
    message = final(events)
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("Not an event stream")


async def test_missing_key_fails_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    model = mistral_model("mistral-large-latest")
    events = await run(model, hello(), StreamOptions(), simple=False)
    assert final(events).error_message == "No API key for provider: mistral"


# --------------------------------------------------------------------------- requests


def history_with_foreign_ids() -> Context:
    calls = [
        ToolCall(id="call_abc123|fc_0123456789abcdef", name="get_weather", arguments={"city": "A"}),
        ToolCall(id="toolu_01XyZ", name="get_weather", arguments={}),
        ToolCall(id="D681PevKs", name="get_weather", arguments={"city": "B"}),
    ]
    assistant = AssistantMessage(
        content=[ThinkingContent(thinking="Think first."), TextContent(text="Calling."), *calls],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        usage=Usage(),
        stop_reason="toolUse",
        timestamp=2,
    )
    results = [
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text=f"r{i}")]
            + ([ImageContent(data=PNG_1PX, mime_type="image/png")] if i == 0 else []),
            is_error=i == 1,
            timestamp=3,
        )
        for i, call in enumerate(calls)
    ]
    return Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="Look:"),
                    ImageContent(data=PNG_1PX, mime_type="image/png"),
                ],
                timestamp=1,
            ),
            assistant,
            *results,
        ],
        tools=[WEATHER],
    )


async def test_replayed_ids_are_nine_alphanumerics_and_pair_with_results() -> None:
    events, request = await serve_run(
        sse_handler(sse(text_chunks())), "mistral-large-latest", history_with_foreign_ids()
    )
    assert isinstance(events[-1], DoneEvent)
    body = request.json()
    check_request(body)
    messages = body["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert all(MISTRAL_ID.match(i) for i in ids) and len(set(ids)) == 3
    assert ids[2] == "D681PevKs"  # already in Mistral's form: kept
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ids
    assert assistant["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city":"A"}',
    }
    # Another model's reasoning arrives as plain text (the cross-provider transform).
    assert assistant["content"][0] == {"type": "text", "text": "Think first."}
    tools = [m for m in messages if m["role"] == "tool"]
    assert tools[0]["content"][1] == {
        "type": "image_url",
        "image_url": f"data:image/png;base64,{PNG_1PX}",
    }
    assert tools[1]["content"] == [{"type": "text", "text": "[tool error] r1"}]
    user = messages[0]
    assert user["content"][1]["type"] == "image_url"


async def test_images_are_dropped_for_a_text_only_model() -> None:
    context = Context(
        messages=[
            UserMessage(content=[ImageContent(data=PNG_1PX, mime_type="image/png")], timestamp=1)
        ]
    )
    _, request = await serve_run(sse_handler(sse(text_chunks())), "codestral-latest", context)
    body = request.json()
    check_request(body)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "(image omitted: model does not support images)"}],
        }
    ]


async def test_own_reasoning_is_replayed_as_a_thinking_chunk() -> None:
    model = mistral_model("magistral-medium-latest")
    earlier = AssistantMessage(
        content=[ThinkingContent(thinking="Hmm."), TextContent(text="4.")],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason="stop",
        timestamp=2,
    )
    context = Context(
        messages=[
            UserMessage(content="2+2?", timestamp=1),
            earlier,
            UserMessage(content="And 3+3?", timestamp=3),
        ]
    )
    _, request = await serve_run(sse_handler(sse(text_chunks())), model.id, context)
    body = request.json()
    check_request(body)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm."}]},
            {"type": "text", "text": "4."},
        ],
        "prefix": False,
    }


async def test_affinity_header_from_the_session_unless_given() -> None:
    handler = sse_handler(sse(text_chunks()))
    _, request = await serve_run(
        handler, options=StreamOptions(api_key=API_KEY, session_id="sess-42")
    )
    assert request.headers["x-affinity"] == "sess-42"
    _, request = await serve_run(
        handler,
        options=StreamOptions(
            api_key=API_KEY, session_id="sess-42", headers={"x-affinity": "mine"}
        ),
    )
    assert request.headers["x-affinity"] == "mine"
    _, request = await serve_run(handler)
    assert "x-affinity" not in request.headers


@pytest.mark.parametrize(
    ("model_id", "reasoning", "expected"),
    [
        ("magistral-medium-latest", "medium", {"prompt_mode": "reasoning"}),
        ("magistral-small", None, {}),
        ("mistral-small-latest", "low", {"reasoning_effort": "high"}),
        ("mistral-medium-3.5", "high", {"reasoning_effort": "high"}),
        ("mistral-medium-latest", "high", {"prompt_mode": "reasoning"}),
        ("mistral-large-latest", "high", {}),
    ],
)
async def test_reasoning_options_as_pi_maps_them(
    model_id: str, reasoning: Any, expected: dict[str, str]
) -> None:
    _, request = await serve_run(
        sse_handler(sse(text_chunks())),
        model_id,
        options=StreamOptions(api_key=API_KEY, reasoning=reasoning),
    )
    body = request.json()
    check_request(body)
    got = {k: body[k] for k in ("prompt_mode", "reasoning_effort") if k in body}
    assert got == expected


async def test_provider_options_tool_choice_and_effort() -> None:
    options = StreamOptions(
        api_key=API_KEY,
        provider_options={
            "toolChoice": {"type": "function", "function": {"name": "get_weather"}},
            "reasoningEffort": "none",
        },
        temperature=0.3,
    )
    _, request = await serve_run(
        sse_handler(sse(text_chunks())), "mistral-small-latest", options=options, simple=False
    )
    body = request.json()
    check_request(body)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["reasoning_effort"] == "none" and body["temperature"] == 0.3
    assert "max_tokens" not in body


# --------------------------------------------------------------------------- parity with pi


def _nonempty_deltas(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["delta"]) for e in events if e["type"].endswith("_delta") and e["delta"]]


def _without_empty_text(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # pi opens a text block for Mistral's `content: ""` pieces; pitrio skips empty pieces.
    return [b for b in content if not (b["type"] == "text" and b["text"] == "")]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_request_and_answer_match_pi(case: Case) -> None:
    captured = CAPTURE["cases"][case.name]

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(case.status, case.body, {"content-type": case.content_type})

    handler = sse_handler(case.body) if case.status == 200 else handle
    events, request = await serve_run(
        handler, case.model_id, case.context, case.options, simple=case.simple
    )
    pi_request = captured["request"]
    assert request.path == pi_request["path"]
    assert request.json() == pi_request["body"]
    for header in ("authorization", "x-affinity"):
        assert request.headers.get(header) == pi_request["headers"].get(header)
    ours = to_wire(final(events))
    pi_events = captured["events"]
    pi_last = pi_events[-1]
    theirs = pi_last.get("message") or pi_last["error"]
    assert events[-1].type == pi_last["type"]
    for key in ("stopReason", "errorMessage", "usage", "responseId", "api", "provider", "model"):
        assert ours.get(key) == theirs.get(key), key
    assert ours["content"] == _without_empty_text(theirs["content"])
    ours_events = [to_wire(e) for e in events]
    assert _nonempty_deltas(ours_events) == _nonempty_deltas(pi_events)


def test_capture_is_current() -> None:
    assert CAPTURE["piAi"] == "0.73.1"
    assert sorted(CAPTURE["cases"]) == sorted(case.name for case in CASES)
