"""The openai-responses provider over real loopback HTTP, checked against pi 0.73.1's provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import httpx2
import pytest
import trio
from openai.types.responses import ResponseStreamEvent

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolResultMessage,
    UserMessage,
    get_model,
    stream,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers._overflow import is_context_overflow
from pitrio.providers._sse import SSEDecoder
from pitrio.providers.openai_responses._provider import (
    OPENAI_RESPONSES_PROVIDER,
    register_openai_responses,
)
from pitrio.providers.openai_responses._request import short_hash

from fixtures_openai_responses import (
    ENCRYPTED,
    OVERFLOW_BODY,
    PARIS_CHUNKS,
    PI_INPUT,
    PI_OUTPUT,
    PNG_1PX,
    RATE_LIMIT_BODY,
    SERVER_ERROR_BODY,
    SUMMARY_PARTS,
    TEXT_DELTAS,
    TOKYO_CHUNKS,
    ResponsesStream,
    all_fixtures,
    big_stream,
    chunked,
    failed_stream,
    incomplete_stream,
    pi_input_text,
    text_stream,
    thinking_stream,
    tool_calls_stream,
    usage_stream,
)
from loopback import error_handler, sequence_handler, serve, sse_bytes, sse_handler
from pi_data import canonical, normalise_now
from sdk_check import validate_strict

KEY = "sk-test"


@pytest.fixture
def registry() -> Iterator[ProviderRegistry]:
    registry = ProviderRegistry()
    register_openai_responses(registry)
    yield registry


def _model(server: Any, model_id: str = "gpt-5", **changes: Any) -> Model:
    return attrs.evolve(get_model("openai", model_id), base_url=server.url("/v1"), **changes)


def _ask(text: str = "What is 2+2?", system: str | None = "Be brief.") -> Context:
    return Context(system_prompt=system, messages=[UserMessage(content=text, timestamp=1)])


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    registry: ProviderRegistry,
    *,
    simple: bool = False,
) -> tuple[list[Any], AssistantMessage]:
    """Run the provider and return (events as JSON, final message)."""
    open_stream = stream_simple if simple else stream
    async with open_stream(model, context, options, registry=registry) as events:
        seen = [event async for event in events]
        result = await events.result()
    return [to_wire(event) for event in seen], result


def _payloads(body: bytes) -> list[Any]:
    decoder = SSEDecoder()
    return [json.loads(event.data) for event in decoder.feed(body)]


# --------------------------------------------------------------------------- fixtures vs SDK


@pytest.mark.parametrize("name", sorted(all_fixtures()))
def test_every_fixture_is_a_valid_sdk_event(name: str) -> None:
    """Every event of every fixture validates as the SDK's ResponseStreamEvent, no extra keys."""
    events = all_fixtures()[name]
    for event in events:
        validate_strict(ResponseStreamEvent, event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


def test_big_stream_is_valid_sdk_events_of_the_requested_size() -> None:
    """The benchmark stream parses into valid SDK events and carries about the requested text."""
    body = big_stream(20_000)
    payloads = _payloads(body)
    for payload in payloads:
        validate_strict(ResponseStreamEvent, payload)
    text = sum(
        len(p["delta"])
        for p in payloads
        if p["type"].endswith(".delta") and p["type"] != "response.function_call_arguments.delta"
    )
    assert 17_000 <= text <= 19_000
    assert payloads[-1]["type"] == "response.completed"


# --------------------------------------------------------------------------- pi equality


def _pi_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(PI_INPUT.read_text(encoding="utf-8"))
    return cases


def test_pi_input_is_up_to_date() -> None:
    """The cases pi was run on are exactly the current fixtures (rerun the capture otherwise)."""
    assert PI_INPUT.read_text(encoding="utf-8") == pi_input_text()


def _options_from_pi(options: dict[str, Any]) -> StreamOptions:
    api_keys = ("reasoningEffort", "reasoningSummary", "serviceTier")
    provider_options = {k: v for k, v in options.items() if k in api_keys}
    return StreamOptions(
        api_key=options.get("apiKey"),
        session_id=options.get("sessionId"),
        cache_retention=options.get("cacheRetention"),
        temperature=options.get("temperature"),
        max_tokens=options.get("maxTokens"),
        max_retries=options.get("maxRetries"),
        headers=options.get("headers"),
        reasoning=options.get("reasoning"),
        provider_options=provider_options or None,
    )


def _without_partial_json(data: Any) -> Any:
    """pi's tool-call blocks carry a ``partialJson`` scratch buffer while streaming; drop it."""
    if isinstance(data, dict):
        return {k: _without_partial_json(v) for k, v in data.items() if k != "partialJson"}
    if isinstance(data, list):
        return [_without_partial_json(v) for v in data]
    return data


PI_HEADERS = {
    "authorization",
    "session_id",
    "x-client-request-id",
    "x-trace",
    "content-type",
    "x-initiator",
    "openai-intent",
    "copilot-vision-request",
    "cf-aig-authorization",
    "cf-aig-metadata",
}
"""The headers pi's provider sets itself (the rest are the OpenAI SDK's or the transport's)."""


@pytest.mark.parametrize("case", _pi_cases(), ids=lambda case: case["name"])
async def test_events_and_request_equal_pis(
    case: dict[str, Any], registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the same stream, the request body and every pushed event equal pi's."""
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    pi = json.loads(PI_OUTPUT.read_text(encoding="utf-8"))["cases"][case["name"]]
    async with (
        serve(sse_handler(case["sse"].encode(), chunk_size=97)) as server,
        open_http_client(),
    ):
        model = attrs.evolve(from_wire(Model, case["model"]), base_url=server.url("/v1"))
        context = from_wire(Context, case["context"])
        events, result = await _run(
            model,
            context,
            _options_from_pi(case["options"]),
            registry,
            simple=case["fn"] == "simple",
        )
    request = server.requests[0]
    assert (request.method, request.path) == (pi["request"]["method"], pi["request"]["path"])
    assert canonical(request.json()) == canonical(pi["request"]["body"])
    for name in PI_HEADERS | {name.lower() for name in model.headers or {}}:
        assert request.headers.get(name) == pi["request"]["headers"].get(name), name

    pi_events = _without_partial_json(pi["events"])
    events = normalise_now(pi_events, events)
    assert [e["type"] for e in events] == [e["type"] for e in pi_events]
    for index, (ours, theirs) in enumerate(zip(events, pi_events, strict=True)):
        assert canonical(ours) == canonical(theirs), f"event {index} ({theirs['type']}) differs"
    assert canonical(normalise_now(pi["result"], to_wire(result))) == canonical(pi["result"])


def test_short_hash_matches_pis_for_astral_text() -> None:
    """short_hash works on UTF-16 code units, so astral characters hash as their surrogate pair."""
    # Values computed with pi-ai 0.73.1's shortHash (dist/utils/hash.js) under node 20.
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("fc_codex-item.0123456789") == "16ytlg21ju0f0y"
    assert short_hash("héllo 🙈") == "1r9pcqe1rwk5iz"


# --------------------------------------------------------------------------- behaviour


async def test_streams_plain_text(registry: ProviderRegistry) -> None:
    """A text answer streams as text_start, one text_delta per delta, text_end, done."""
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        events, message = await _run(
            _model(server, "gpt-4.1"), _ask(), StreamOptions(api_key=KEY), registry
        )
    types = [e["type"] for e in events]
    assert types == ["start", "text_start", *["text_delta"] * len(TEXT_DELTAS), "text_end", "done"]
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == TEXT_DELTAS
    assert events[-2]["content"] == "".join(TEXT_DELTAS)
    assert message.stop_reason == "stop"
    assert message.response_id == text_stream().events[0]["response"]["id"]
    (block,) = message.content
    assert isinstance(block, TextContent) and block.text == "".join(TEXT_DELTAS)
    signature = json.loads(block.text_signature or "")
    assert signature == {"v": 1, "id": text_stream().output[0]["id"]}
    body = server.requests[0].json()
    assert body["store"] is False and body["stream"] is True
    assert body["input"][0] == {"role": "system", "content": "Be brief."}
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_thinking_keeps_the_reasoning_item_for_replay(registry: ProviderRegistry) -> None:
    """Reasoning summaries stream as thinking; the item, encrypted content included, is replayed."""
    fixture = thinking_stream()
    async with serve(sse_handler(fixture.sse(), chunk_size=13)) as server, open_http_client():
        model = _model(server, "gpt-5")
        options = StreamOptions(api_key=KEY, reasoning="medium")
        events, message = await _run(model, _ask(), options, registry, simple=True)
        thinking, text = message.content
        assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
        parts = ["".join(part) for part in SUMMARY_PARTS]
        # Streamed: each part followed by a blank line; final: the parts joined by one.
        streamed = "".join(e["delta"] for e in events if e["type"] == "thinking_delta")
        assert streamed == "".join(f"{p}\n\n" for p in parts)
        assert thinking.thinking == "\n\n".join(parts)
        assert (
            next(e for e in events if e["type"] == "thinking_end")["content"] == thinking.thinking
        )
        item = json.loads(thinking.thinking_signature or "")
        assert item == fixture.output[0] and item["encrypted_content"] == ENCRYPTED
        assert json.loads(text.text_signature or "")["phase"] == "final_answer"

        follow_up = Context(
            messages=[*_ask().messages, message, UserMessage(content="And 3+3?", timestamp=2)]
        )
        await _run(model, follow_up, options, registry, simple=True)
    first, second = (request.json() for request in server.requests)
    assert first["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert first["include"] == ["reasoning.encrypted_content"]
    replayed = second["input"][1:3]
    assert replayed[0] == fixture.output[0]
    assert replayed[1]["id"] == fixture.output[1]["id"]
    assert replayed[1]["phase"] == "final_answer"


async def test_parallel_tool_calls_stream_partial_arguments(registry: ProviderRegistry) -> None:
    """Two tool calls stream their arguments as partial JSON, split at every 7 bytes."""
    async with serve(sse_handler(chunked(tool_calls_stream(), 7))) as server, open_http_client():
        model = _model(server, "gpt-5")
        context = attrs.evolve(
            _ask("Weather in Paris and Tokyo?"),
            tools=[Tool(name="get_weather", description="d", parameters={"type": "object"})],
        )
        async with stream(model, context, StreamOptions(api_key=KEY), registry=registry) as events:
            partial_arguments = []
            async for event in events:
                if isinstance(event, ToolCallDeltaEvent):
                    block = event.partial.content[event.content_index]
                    assert isinstance(block, ToolCall)
                    partial_arguments.append((event.content_index, block.arguments))
            message = await events.result()
    paris = [args for index, args in partial_arguments if index == 1]
    tokyo = [args for index, args in partial_arguments if index == 2]
    assert len(paris) == len(PARIS_CHUNKS) and len(tokyo) == len(TOKYO_CHUNKS)
    assert paris[0] == {} and {"city": "Pa"} in paris and {"city": "Tok"} in tokyo
    assert paris[-1] == {"city": "Paris", "unit": "c"} and tokyo[-1] == {"city": "Tokyo"}
    assert {index for index, _ in partial_arguments} == {1, 2}
    calls = message.tool_calls()
    output = tool_calls_stream().output
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (
            f"call_Paris0123456789abcdef|{output[1]['id']}",
            "get_weather",
            {"city": "Paris", "unit": "c"},
        ),
        (f"call_Tokyo0123456789abcdef|{output[2]['id']}", "get_weather", {"city": "Tokyo"}),
    ]
    assert message.stop_reason == "toolUse"
    assert server.requests[0].json()["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]


async def test_images_in_user_messages_and_tool_results(registry: ProviderRegistry) -> None:
    """Images go as input_image data URLs; a text-only model gets placeholders instead."""
    image = ImageContent(data=PNG_1PX, mime_type="image/png")
    call = ToolCall(id="call_1|fc_1", name="shot", arguments={})
    turn = AssistantMessage(
        content=[call], api="openai-responses", provider="openai", model="gpt-4.1",
        stop_reason="toolUse", timestamp=2,
    )  # fmt: skip
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="Look:"), image], timestamp=1),
            turn,
            ToolResultMessage(
                tool_call_id=call.id, tool_name="shot", content=[image], is_error=False, timestamp=3
            ),
        ]
    )
    data_url = f"data:image/png;base64,{PNG_1PX}"
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        for model_id in ("gpt-4.1", "gpt-4"):  # gpt-4 does not take images
            await _run(_model(server, model_id), context, StreamOptions(api_key=KEY), registry)
    vision, text_only = (request.json()["input"] for request in server.requests)
    assert vision[0]["content"][1] == {
        "type": "input_image",
        "detail": "auto",
        "image_url": data_url,
    }
    assert vision[2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [{"type": "input_image", "detail": "auto", "image_url": data_url}],
    }
    assert text_only[0]["content"][1]["type"] == "input_text"
    assert "image omitted" in text_only[0]["content"][1]["text"]
    assert "image omitted" in text_only[2]["output"]


async def test_usage_and_cost_with_cache_and_service_tier(registry: ProviderRegistry) -> None:
    """Cached tokens are reported apart from input, and the flex tier halves the cost."""
    async with serve(sse_handler(usage_stream().sse())) as server, open_http_client():
        model = _model(server, "gpt-5")
        options = StreamOptions(api_key=KEY, provider_options={"service_tier": "flex"})
        _, message = await _run(model, _ask(), options, registry)
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.output, usage.cache_write) == (
        20_000,
        100_000,
        2_000,
        0,
    )
    assert usage.total_tokens == 122_000
    price = model.cost
    assert usage.cost.input == pytest.approx(20_000 * price.input / 1e6 / 2)
    assert usage.cost.cache_read == pytest.approx(100_000 * price.cache_read / 1e6 / 2)
    assert usage.cost.output == pytest.approx(2_000 * price.output / 1e6 / 2)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.cache_read + usage.cost.output
    )
    assert server.requests[0].json()["service_tier"] == "flex"


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, RATE_LIMIT_BODY, "Rate limit reached for gpt-5"),
        (500, SERVER_ERROR_BODY, "The server had an error"),
    ],
)
async def test_http_errors_end_with_status_and_body(
    status: int, body: Any, expected: str, registry: ProviderRegistry
) -> None:
    """An error status ends the stream with one error event naming the status and the body."""
    async with serve(error_handler(status, body)) as server, open_http_client():
        events, message = await _run(_model(server), _ask(), StreamOptions(api_key=KEY), registry)
    assert [e["type"] for e in events] == ["error"]
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith(f"{status} ")
    assert expected in message.error_message
    assert not is_context_overflow(message)


async def test_context_overflow_is_detected(registry: ProviderRegistry) -> None:
    """OpenAI's 400 for a prompt over the context window is recognised as an overflow."""
    async with serve(error_handler(400, OVERFLOW_BODY)) as server, open_http_client():
        _, message = await _run(_model(server), _ask(), StreamOptions(api_key=KEY), registry)
    assert message.stop_reason == "error"
    assert is_context_overflow(message, 400_000)


async def test_connection_dropped_mid_stream(registry: ProviderRegistry) -> None:
    """A connection dropped mid-stream ends with an error and keeps the text received so far."""
    body = text_stream().sse()
    cut = body.index(b'" you today?"')
    async with serve(sse_handler(body, drop_after=cut)) as server, open_http_client():
        events, message = await _run(_model(server), _ask(), StreamOptions(api_key=KEY), registry)
    assert events[-1]["type"] == "error"
    assert message.stop_reason == "error"
    assert message.error_message and "Connection lost" in message.error_message
    assert message.text() == "".join(TEXT_DELTAS[:-1])


async def test_cancellation_releases_the_connection(registry: ProviderRegistry) -> None:
    """Aborting a hanging stream ends it as aborted and gives the pooled connection back."""
    body = text_stream().sse()
    second_delta = body.index(b"event: response.output_text.delta", body.index(b'"Hello"'))
    hang = sse_handler(body, hang_after=second_delta)
    handler = sequence_handler(hang, sse_handler(body))
    limits = httpx2.Limits(max_connections=1)
    async with serve(handler) as server, open_http_client(limits=limits):
        model = _model(server)
        async with stream(model, _ask(), StreamOptions(api_key=KEY), registry=registry) as events:
            async for event in events:
                if event.type == "text_delta":
                    events.abort()
            message = await events.result()
        assert message.stop_reason == "aborted"
        assert message.text() == TEXT_DELTAS[0]
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
            _, second = await _run(model, _ask(), StreamOptions(api_key=KEY), registry)
    assert second.stop_reason == "stop"
    assert server.connections_opened == 2


async def test_incomplete_response_stops_with_length_and_usage(registry: ProviderRegistry) -> None:
    """``response.incomplete`` (max_output_tokens reached) gives stopReason length with usage."""
    async with serve(sse_handler(incomplete_stream().sse())) as server, open_http_client():
        events, message = await _run(
            _model(server), _ask(), StreamOptions(api_key=KEY, max_tokens=16), registry
        )
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "length"
    assert (message.usage.input, message.usage.output) == (30, 16)
    assert server.requests[0].json()["max_output_tokens"] == 16


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (failed_stream().sse(), "server_error: The model failed to generate a response."),
        (
            sse_bytes([("response.created", ResponsesStream().events[0])]),
            "Stream ended before response.completed",
        ),
        (b"event: response.created\ndata: {not json\n\n", "Invalid SSE data"),
        (
            sse_bytes([(None, {"error": {"message": "Upstream overloaded", "type": "x"}})]),
            "Upstream overloaded",
        ),
    ],
    ids=["response_failed", "no_final_event", "invalid_json", "error_payload"],
)
async def test_stream_failures_are_error_messages(
    body: bytes, expected: str, registry: ProviderRegistry
) -> None:
    """A failed response, a truncated stream or unreadable data end with an error message."""
    async with serve(sse_handler(body)) as server, open_http_client():
        events, message = await _run(_model(server), _ask(), StreamOptions(api_key=KEY), registry)
    assert [e["type"] for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_message is not None and expected in message.error_message


async def test_done_marker_ends_the_events(registry: ProviderRegistry) -> None:
    """Events after a ``[DONE]`` data line are ignored, as the OpenAI SDK ignores them."""
    fixture = text_stream()
    body = fixture.sse() + sse_bytes(
        [(None, "[DONE]"), ("error", {"type": "error", "message": "x"})]
    )
    async with serve(sse_handler(body)) as server, open_http_client():
        _, message = await _run(_model(server), _ask(), StreamOptions(api_key=KEY), registry)
    assert message.stop_reason == "stop"


async def test_request_options_headers_and_payload_hook(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headers merge model, session and caller headers; on_payload may replace the body."""
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    seen: list[Any] = []

    def on_payload(payload: Any, model: Model) -> Any:
        seen.append((payload, model.id))
        return {**payload, "metadata": {"run": "42"}}

    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        model = _model(server, "gpt-4.1", headers={"X-Model": "m", "X-Both": "model"})
        options = StreamOptions(
            api_key=KEY,
            session_id="s-1",
            headers={"X-Both": "caller"},
            temperature=0.2,
            on_payload=on_payload,
        )
        await _run(model, _ask(), options, registry)
        no_cache = attrs.evolve(options, cache_retention="none", on_payload=None)
        await _run(model, _ask(), no_cache, registry)
    first, second = server.requests
    assert seen[0][1] == "gpt-4.1" and "metadata" not in seen[0][0]
    assert first.json()["metadata"] == {"run": "42"}
    assert first.json()["prompt_cache_key"] == "s-1"
    assert first.json()["temperature"] == 0.2
    assert "reasoning" not in first.json()  # gpt-4.1 is not a reasoning model
    assert first.headers["x-model"] == "m" and first.headers["x-both"] == "caller"
    assert first.headers["session_id"] == first.headers["x-client-request-id"] == "s-1"
    assert "prompt_cache_key" not in second.json()
    assert "session_id" not in second.headers


async def test_missing_api_key_is_an_error(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a key (option or OPENAI_API_KEY) the stream ends with an error, no request made."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        model = _model(server)
        _, plain = await _run(model, _ask(), StreamOptions(), registry)
        _, simple = await _run(model, _ask(), StreamOptions(), registry, simple=True)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        _, from_env = await _run(model, _ask(), StreamOptions(), registry)
    assert plain.error_message and plain.error_message.startswith("OpenAI API key is required")
    assert simple.error_message == "No API key for provider: openai"
    assert from_env.stop_reason == "stop"
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-env"]


def test_provider_is_registered_under_its_api() -> None:
    """register_openai_responses puts the provider in the registry under ``openai-responses``."""
    registry = ProviderRegistry()
    register_openai_responses(registry)
    assert registry.resolve("openai-responses") is OPENAI_RESPONSES_PROVIDER


async def test_cloudflare_gateway_url_and_key(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's base URL takes its ids from the environment; the key goes in cf-aig-authorization."""
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct1")
    monkeypatch.delenv("CLOUDFLARE_GATEWAY_ID", raising=False)
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        base = server.url("/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/openai")
        model = attrs.evolve(get_model("cloudflare-ai-gateway", "gpt-5.1"), base_url=base)
        _, missing = await _run(model, _ask(), StreamOptions(api_key=KEY), registry)
        monkeypatch.setenv("CLOUDFLARE_GATEWAY_ID", "gw2")
        _, message = await _run(model, _ask(), StreamOptions(api_key=KEY), registry)
    assert missing.error_message == (
        "CLOUDFLARE_GATEWAY_ID is required for provider cloudflare-ai-gateway but is not set."
    )
    assert message.stop_reason == "stop"
    (request,) = server.requests
    assert request.path == "/v1/acct1/gw2/openai/responses"
    assert request.headers["cf-aig-authorization"] == f"Bearer {KEY}"
    assert "authorization" not in request.headers
