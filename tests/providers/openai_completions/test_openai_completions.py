"""The openai-completions provider streams Chat Completions over real HTTP as pi's provider does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai.types.shared
import pytest
import trio
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    ModelCost,
    ProviderRegistry,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    UserMessage,
    stream,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers._overflow import is_context_overflow
from pitrio.providers.openai_completions._provider import (
    OPENAI_COMPLETIONS_PROVIDER,
    register_openai_completions,
)

from fixtures_openai_completions import (
    CONTEXT_OVERFLOW_BODY,
    ERROR_EVENT_VENDOR_FIELDS,
    LLAMA_CPP_OVERFLOW_BODY,
    OPENAI_ERROR_BODIES,
    PNG,
    RATE_LIMIT_BODY,
    SERVER_ERROR_BODY,
    TIME_ARGS,
    VENDOR_CHUNK_FIELDS,
    WEATHER_ARGS,
    WEATHER_TOOL,
    all_streams,
    big_stream,
    build_pi_cases,
    chunk,
    content_filter_stream,
    deepseek_cache_usage_chunks,
    frame,
    load_pi_cases,
    load_pi_output,
    openrouter_mid_stream_error,
    openrouter_reasoning_tool_stream,
    parallel_tool_call_stream,
    run_pi_case,
    sse_payloads,
    strip_pi_scratch,
    text_stream,
    thinking_stream,
    usage,
)
from loopback import error_handler, serve, sse_bytes, sse_handler
from pi_data import canonical, normalise_now
from sdk_check import SdkCheckError, validate_params, validate_strict

REQUEST_EXTRAS = frozenset(
    {
        # Vendor request fields pi sends that the openai SDK's request types do not declare.
        "messages.reasoning_content",
        "messages.reasoning",
        "messages.reasoning_details",
        "messages.name",
        "messages.content.cache_control",
        "tools.cache_control",
        "reasoning",
        "thinking",
        "enable_thinking",
        "chat_template_kwargs",
        "provider",
        "providerOptions",
        "tool_stream",
    }
)


@pytest.fixture
def registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    register_openai_completions(registry)
    return registry


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GROQ_API_KEY", "PI_CACHE_RETENTION"):
        monkeypatch.delenv(name, raising=False)


def make_model(base_url: str, **kwargs: Any) -> Model:
    defaults: dict[str, Any] = {
        "id": "gpt-4o-mini",
        "name": "GPT-4o mini",
        "api": "openai-completions",
        "provider": "openai",
        "base_url": base_url,
        "input": ("text", "image"),
        "cost": ModelCost(input=0.15, output=0.6, cache_read=0.075, cache_write=0.3),
        "context_window": 128_000,
        "max_tokens": 16_384,
    }
    defaults.update(kwargs)
    return Model(**defaults)


def hello() -> Context:
    return Context(messages=[UserMessage(content="Hello", timestamp=1)])


OPTIONS = StreamOptions(api_key="test-key")


async def collect(
    model: Model,
    context: Context,
    registry: ProviderRegistry,
    options: StreamOptions = OPTIONS,
    *,
    simple: bool = True,
) -> list[AssistantMessageEvent]:
    open_stream = stream_simple if simple else stream
    async with open_stream(model, context, options, registry=registry) as events:
        return [event async for event in events]


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with open_http_client() as client:
        yield client


# --------------------------------------------------------------------------- fixtures vs SDK


@pytest.mark.parametrize("name", sorted(all_streams()))
def test_fixture_chunks_are_valid_chat_completion_chunks(name: str) -> None:
    """Every chunk of every fixture validates as the SDK's ChatCompletionChunk, no extra keys."""
    payloads = list(sse_payloads(all_streams()[name]))
    assert payloads
    for payload in payloads:
        if "error" in payload:
            # An in-stream error event: the SDK raises its `error` object.
            assert list(payload) == ["error"]
            validate_strict(
                openai.types.shared.ErrorObject, payload["error"], allow=ERROR_EVENT_VENDOR_FIELDS
            )
        else:
            validate_strict(ChatCompletionChunk, payload, allow=VENDOR_CHUNK_FIELDS)


def test_big_stream_is_long_and_valid() -> None:
    """big_stream returns about the requested number of characters of valid chunks."""
    body = big_stream(5_000)
    text = ""
    for payload in sse_payloads(body):
        validate_strict(ChatCompletionChunk, payload)
        for choice in payload["choices"]:
            text += choice["delta"].get("content") or ""
    assert len(text) == 5_000


@pytest.mark.parametrize("name", sorted(OPENAI_ERROR_BODIES))
def test_error_bodies_are_openai_error_objects(name: str) -> None:
    """The OpenAI error bodies validate as the SDK's ErrorObject."""
    body = OPENAI_ERROR_BODIES[name]
    assert list(body) == ["error"]
    validate_strict(openai.types.shared.ErrorObject, body["error"])


def test_sdk_check_rejects_an_invented_field() -> None:
    """A chunk carrying a key the SDK does not declare fails the check."""
    bad = chunk({"content": "x", "made_up": 1})
    with pytest.raises(SdkCheckError, match="made_up"):
        validate_strict(ChatCompletionChunk, bad, allow=VENDOR_CHUNK_FIELDS)
    with pytest.raises(SdkCheckError):
        validate_strict(ChatCompletionChunk, {**chunk({}), "object": "chat.completion"})


# --------------------------------------------------------------------------- pi equivalence


def test_capture_input_is_up_to_date() -> None:
    """The committed capture input is what the fixture builders produce now."""
    assert canonical(load_pi_cases()) == canonical(build_pi_cases())


CASES = {case["name"]: case for case in load_pi_cases()}


@pytest.mark.parametrize("name", list(CASES))
async def test_request_and_events_equal_pis(
    name: str, registry: ProviderRegistry, client: httpx2.AsyncClient
) -> None:
    """pitrio sends pi's request body and emits pi's events, event for event."""
    case = CASES[name]
    pi = load_pi_output()[name]
    request, events = await run_pi_case(case, registry)
    body = request.json()
    assert canonical(body) == canonical(pi["request"]["body"])
    assert request.path == pi["request"]["path"]
    assert request.headers.get("authorization") == pi["request"]["authorization"]
    for header, value in pi["request"]["affinity"].items():
        assert request.headers.get(header) == value
    validate_params(CompletionCreateParamsStreaming, body, allow=REQUEST_EXTRAS)
    ours = [to_wire(event) for event in events]
    theirs = strip_pi_scratch(pi["events"])
    assert [e["type"] for e in ours] == [e["type"] for e in theirs]
    for mine, pis in zip(ours, theirs, strict=True):
        assert canonical(normalise_now(pis, mine)) == canonical(pis)


# --------------------------------------------------------------------------- streaming


async def test_plain_text_streams_text_events(registry: ProviderRegistry, client: Any) -> None:
    """A plain answer gives start, text_start, one text_delta per chunk, text_end, done."""
    async with serve(sse_handler(text_stream("Hello there, world!"), chunk_size=7)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    types = [event.type for event in events]
    assert types[:2] == ["start", "text_start"]
    assert types[-2:] == ["text_end", "done"]
    deltas = [e.delta for e in events if isinstance(e, TextDeltaEvent)]
    assert "".join(deltas) == "Hello there, world!"
    assert len(deltas) == 4
    message = final(events)
    assert message.content == (TextContent(text="Hello there, world!"),)
    assert message.stop_reason == "stop"
    assert message.response_id == "chatcmpl-AZ1"
    assert message.response_model == "gpt-4o-mini-2024-07-18"
    assert message.api == "openai-completions"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "reasoning_text"])
async def test_reasoning_fields_become_a_thinking_block(
    field: str, registry: ProviderRegistry, client: Any
) -> None:
    """Reasoning in any of pi's three fields becomes thinking, signed with the field name."""
    reasoning = "The user greets me. I should greet back briefly."
    async with serve(sse_handler(thinking_stream(field, reasoning=reasoning))) as server:
        events = await collect(make_model(server.url("/v1"), reasoning=True), hello(), registry)
    message = final(events)
    assert message.content == (
        ThinkingContent(thinking=reasoning, thinking_signature=field),
        TextContent(text="Hi there!"),
    )
    types = [event.type for event in events]
    assert types.index("thinking_start") < types.index("text_start")
    # pi ends every block only after the stream: both end events come last, in block order.
    assert types[-3:] == ["thinking_end", "text_end", "done"]
    assert isinstance(events[-3], ThinkingEndEvent) and events[-3].content == reasoning


async def test_duplicate_reasoning_fields_are_read_once(
    registry: ProviderRegistry, client: Any
) -> None:
    """When a server sends reasoning in two fields at once, only the first non-empty one counts."""
    body = frame(
        [
            chunk({"role": "assistant", "reasoning_content": "", "reasoning": "Think."}),
            chunk({"reasoning_content": "Think", "reasoning": "Think"}),
            chunk({"content": "Done"}, finish_reason="stop"),
        ]
    )
    async with serve(sse_handler(body)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    deltas = [(e.delta) for e in events if isinstance(e, ThinkingDeltaEvent)]
    assert deltas == ["Think.", "Think"]
    start = next(e for e in events if isinstance(e, ThinkingStartEvent))
    assert start.content_index == 0
    thinking = final(events).content[0]
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking_signature == "reasoning"


async def test_parallel_tool_calls_stream_partial_arguments(
    registry: ProviderRegistry, client: Any
) -> None:
    """Two tool calls stream their arguments in pieces; partials parse as they grow."""
    body = parallel_tool_call_stream(piece=4)
    async with serve(sse_handler(body, chunk_size=11)) as server:
        model = make_model(server.url("/v1"))
        context = Context(messages=hello().messages, tools=[WEATHER_TOOL])
        events = await collect(model, context, registry)
    starts = [e.content_index for e in events if isinstance(e, ToolCallStartEvent)]
    assert starts == [1, 2]
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    weather = [e for e in deltas if e.content_index == 1]
    assert weather[0].delta == ""  # the delta carrying id and name has no argument text
    assert "".join(e.delta for e in weather) == WEATHER_ARGS
    partials = [e.partial.content[1] for e in weather]
    assert all(isinstance(p, ToolCall) for p in partials)
    seen = [p.arguments for p in partials if isinstance(p, ToolCall)]
    assert {"city": "Pa"} in seen  # a string still being streamed shows as far as it goes
    assert {"city": "Paris", "unit": "celsius"} in seen
    assert seen[-1] == {"city": "Paris", "unit": "celsius", "days": 3}
    ends = [e for e in events if isinstance(e, ToolCallEndEvent)]
    assert [e.content_index for e in ends] == [1, 2]
    assert ends[0].tool_call == ToolCall(
        id="call_weather_01",
        name="get_weather",
        arguments={"city": "Paris", "unit": "celsius", "days": 3},
    )
    assert ends[1].tool_call.arguments == {"timezone": "Europe/Paris", "format": "24h"}
    assert "".join(e.delta for e in deltas if e.content_index == 2) == TIME_ARGS
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert [c.type for c in message.content] == ["text", "toolCall", "toolCall"]


async def test_encrypted_reasoning_details_sign_the_tool_call(
    registry: ProviderRegistry, client: Any
) -> None:
    """OpenRouter's encrypted reasoning detail becomes the tool call's thought signature and is
    sent back as reasoning_details on replay."""
    async with serve(sse_handler(openrouter_reasoning_tool_stream())) as server:
        model = make_model(
            server.url("/v1"), id="google/gemini-2.5-pro", provider="openrouter", reasoning=True
        )
        events = await collect(model, hello(), registry)
        message = final(events)
        call = message.tool_calls()[0]
        assert call.thought_signature is not None
        detail = {
            "type": "reasoning.encrypted",
            "data": "CiQBjz1rX2VuY3J5cHRlZA==",
            "id": "tool_get_weather_abc",
            "format": "google-gemini-v1",
            "index": 0,
        }
        assert canonical(json.loads(call.thought_signature)) == canonical(detail)
        result = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text="Sunny")],
            is_error=False,
            timestamp=3,
        )
        replay = Context(messages=[*hello().messages, message, result])
        await collect(model, replay, registry)
    sent = server.requests[1].json()["messages"][1]
    assert sent["reasoning_details"] == [detail]
    assert sent["reasoning"] == "Need the weather."


async def test_usage_and_cost_come_from_the_usage_chunk(
    registry: ProviderRegistry, client: Any
) -> None:
    """Cached prompt tokens count as cache reads; cost uses the model's prices."""
    body = text_stream("Hi", with_usage=usage(1000, 200, cached=600))
    async with serve(sse_handler(body)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    used = final(events).usage
    assert (used.input, used.output, used.cache_read, used.cache_write) == (400, 200, 600, 0)
    assert used.total_tokens == 1200
    assert used.cost.input == pytest.approx(400 * 0.15 / 1e6)
    assert used.cost.output == pytest.approx(200 * 0.6 / 1e6)
    assert used.cost.cache_read == pytest.approx(600 * 0.075 / 1e6)
    assert used.cost.total == pytest.approx(
        used.cost.input + used.cost.output + used.cost.cache_read
    )


async def test_cache_writes_are_not_counted_as_reads(
    registry: ProviderRegistry, client: Any
) -> None:
    """OpenRouter counts this request's cache writes in cached_tokens; pi takes them out."""
    async with serve(sse_handler(openrouter_reasoning_tool_stream())) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    used = final(events).usage
    assert (used.input, used.cache_read, used.cache_write, used.output) == (50, 110, 40, 30)


async def test_deepseek_cache_hits_are_cache_reads(registry: ProviderRegistry, client: Any) -> None:
    """DeepSeek's prompt_cache_hit_tokens count as cache reads."""
    async with serve(sse_handler(frame(deepseek_cache_usage_chunks()))) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    used = final(events).usage
    assert (used.input, used.cache_read, used.output, used.total_tokens) == (100, 900, 12, 1012)


# --------------------------------------------------------------------------- request body


async def test_images_in_user_messages_and_tool_results(
    registry: ProviderRegistry, client: Any
) -> None:
    """User images become image_url parts; tool-result images follow the results as a user
    message; a model without image input gets pi's placeholders instead."""
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="Look"), PNG], timestamp=1),
            AssistantMessage(
                content=[ToolCall(id="call_1", name="screenshot", arguments={})],
                api="openai-completions",
                provider="openai",
                model="gpt-4o-mini",
                stop_reason="toolUse",
                timestamp=2,
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="screenshot",
                content=[PNG],
                is_error=False,
                timestamp=3,
            ),
        ]
    )
    url = f"data:image/png;base64,{PNG.data}"
    async with serve(sse_handler(text_stream())) as server:
        await collect(make_model(server.url("/v1")), context, registry)
        await collect(make_model(server.url("/v1"), input=("text",)), context, registry)
    vision, blind = (request.json()["messages"] for request in server.requests)
    assert vision[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    assert vision[2] == {
        "role": "tool",
        "content": "(see attached image)",
        "tool_call_id": "call_1",
    }
    assert vision[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    assert blind[0]["content"][1] == {
        "type": "text",
        "text": "(image omitted: model does not support images)",
    }
    assert blind[2]["content"] == "(tool image omitted: model does not support images)"
    assert len(blind) == 3
    for body in (server.requests[0].json(), server.requests[1].json()):
        validate_params(CompletionCreateParamsStreaming, body, allow=REQUEST_EXTRAS)


async def test_on_payload_replaces_the_body(registry: ProviderRegistry, client: Any) -> None:
    """on_payload sees pi's body and the model; a returned value (awaited if async) is sent."""
    seen: list[Any] = []

    async def on_payload(body: Any, model: Model) -> Any:
        seen.append((body["model"], model.id))
        return {**body, "seed": 42}

    async with serve(sse_handler(text_stream())) as server:
        options = StreamOptions(api_key="k", on_payload=on_payload)
        await collect(make_model(server.url("/v1")), hello(), registry, options)
        options = StreamOptions(api_key="k", on_payload=lambda body, model: None)
        await collect(make_model(server.url("/v1")), hello(), registry, options)
    assert seen == [("gpt-4o-mini", "gpt-4o-mini")]
    assert server.requests[0].json()["seed"] == 42
    assert "seed" not in server.requests[1].json()


async def test_headers_merge_model_then_options(registry: ProviderRegistry, client: Any) -> None:
    """Model headers are sent, option headers override them, the key goes in Authorization."""
    async with serve(sse_handler(text_stream())) as server:
        model = make_model(server.url("/v1"), headers={"X-Team": "a", "X-Trace": "model"})
        options = StreamOptions(api_key="sk-1", headers={"X-Trace": "options"})
        await collect(model, hello(), registry, options)
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-1"
    assert headers["x-team"] == "a"
    assert headers["x-trace"] == "options"
    assert server.requests[0].path == "/v1/chat/completions"


async def test_stream_api_options(registry: ProviderRegistry, client: Any) -> None:
    """stream() takes reasoning_effort and tool_choice from provider_options, snake or camel."""
    async with serve(sse_handler(text_stream())) as server:
        model = make_model(server.url("/v1"), reasoning=True)
        for provider_options in (
            {"reasoning_effort": "low", "tool_choice": "none"},
            {"reasoningEffort": "low", "toolChoice": "none"},
        ):
            options = StreamOptions(api_key="k", provider_options=provider_options)
            await collect(model, hello(), registry, options, simple=False)
    for request in server.requests:
        body = request.json()
        assert (body["reasoning_effort"], body["tool_choice"]) == ("low", "none")
        assert "max_completion_tokens" not in body  # stream() sends no default cap


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, RATE_LIMIT_BODY, f"429 {RATE_LIMIT_BODY['error']['message']}"),
        (500, SERVER_ERROR_BODY, f"500 {SERVER_ERROR_BODY['error']['message']}"),
        (502, "Bad gateway from the proxy", "502 Bad gateway from the proxy"),
        (503, {"detail": "no error key"}, "503 status code (no body)"),
    ],
)
async def test_http_errors_end_with_status_and_body_text(
    status: int, body: Any, expected: str, registry: ProviderRegistry, client: Any
) -> None:
    """An error status ends the stream with one error event carrying status and body text."""
    async with serve(error_handler(status, body)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    assert [event.type for event in events] == ["error"]
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == expected
    assert message.content == ()


@pytest.mark.parametrize(
    "body", [CONTEXT_OVERFLOW_BODY, LLAMA_CPP_OVERFLOW_BODY], ids=["openai", "llama.cpp"]
)
async def test_context_overflow_is_detected(
    body: Any, registry: ProviderRegistry, client: Any
) -> None:
    """The server's real context-length error is an error message is_context_overflow knows."""
    async with serve(error_handler(400, body)) as server:
        model = make_model(server.url("/v1"))
        events = await collect(model, hello(), registry)
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == f"400 {body['error']['message']}"
    assert is_context_overflow(message, model.context_window)


async def test_dropped_connection_keeps_the_partial_text(
    registry: ProviderRegistry, client: Any
) -> None:
    """A connection lost mid-stream ends with an error and keeps what had arrived."""
    body = text_stream("One two three four five six seven", piece=4)
    cut = body.index(b'"content":"thre')
    async with serve(sse_handler(body, drop_after=cut)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Connection lost")
    assert message.content == (TextContent(text="One two "),)
    assert events[0].type == "start"


async def test_invalid_sse_data_is_an_error(registry: ProviderRegistry, client: Any) -> None:
    """An event whose data is not JSON ends the stream with an error naming it."""
    body = sse_bytes([(None, chunk({"content": "ok"})), (None, "{not json")])
    async with serve(sse_handler(body)) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "{not json" in message.error_message
    assert message.content == (TextContent(text="ok"),)


async def test_error_inside_the_stream(registry: ProviderRegistry, client: Any) -> None:
    """An error object inside the stream ends it with the error's message and raw detail."""
    async with serve(sse_handler(openrouter_mid_stream_error())) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    message = final(events)
    assert message.error_message == "Provider returned error\nupstream connect error"
    assert message.content == (TextContent(text="Partial"),)


async def test_content_filter_finish_is_an_error(registry: ProviderRegistry, client: Any) -> None:
    """finish_reason content_filter closes the blocks, then ends with an error."""
    async with serve(sse_handler(content_filter_stream())) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    assert [e.type for e in events][-2:] == ["text_end", "error"]
    assert final(events).error_message == "Provider finish_reason: content_filter"


async def test_timeout_is_an_error(
    registry: ProviderRegistry, client: Any, autojump_clock: trio.testing.MockClock
) -> None:
    """A server that stops sending trips timeout_ms and the message says it timed out."""
    body = text_stream("One two three four")
    async with serve(sse_handler(body, hang_after=len(body) // 2)) as server:
        options = StreamOptions(api_key="k", timeout_ms=5_000)
        events = await collect(make_model(server.url("/v1")), hello(), registry, options)
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "timed out" in message.error_message


async def test_missing_api_key(registry: ProviderRegistry, client: Any) -> None:
    """Without a key stream_simple fails naming the provider; stream names OPENAI_API_KEY."""
    model = make_model("http://127.0.0.1:9/v1", provider="groq")
    events = await collect(model, hello(), registry, StreamOptions())
    assert final(events).error_message == "No API key for provider: groq"
    events = await collect(model, hello(), registry, StreamOptions(), simple=False)
    message = final(events)
    assert message.error_message is not None
    assert "OPENAI_API_KEY" in message.error_message


async def test_cancellation_releases_the_connection(registry: ProviderRegistry) -> None:
    """Aborting mid-stream ends with "aborted" and gives the pooled connection back."""
    body = text_stream("One two three four five six", piece=3)
    async with (
        open_http_client(limits=httpx2.Limits(max_connections=1)),
        serve(sse_handler(body, hang_after=len(body) // 2)) as server,
    ):
        model = make_model(server.url("/v1"))
        async with stream_simple(model, hello(), OPTIONS, registry=registry) as events:
            seen = []
            async for event in events:
                seen.append(event)
                if isinstance(event, TextDeltaEvent) and len(seen) > 3:
                    events.abort()
        message = final(seen)
        assert message.stop_reason == "aborted"
        assert isinstance(seen[-1], ErrorEvent) and seen[-1].reason == "aborted"
        assert message.content and isinstance(message.content[0], TextContent)
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
        # The one pooled connection is free again: a second request goes through.
        server_two_body = text_stream("Again")
        async with serve(sse_handler(server_two_body)) as second:
            events_two = await collect(make_model(second.url("/v1")), hello(), registry)
        assert final(events_two).text() == "Again"
    assert server.connections_opened == 1


def test_provider_registration() -> None:
    """register_openai_completions registers stream and stream_simple under the API id."""
    registry = ProviderRegistry()
    register_openai_completions(registry)
    provider = registry.resolve("openai-completions")
    assert provider is OPENAI_COMPLETIONS_PROVIDER
    assert provider.stream_simple is not None


async def test_start_event_precedes_content(registry: ProviderRegistry, client: Any) -> None:
    """The start event comes first, with an empty partial message."""
    async with serve(sse_handler(text_stream())) as server:
        events = await collect(make_model(server.url("/v1")), hello(), registry)
    assert isinstance(events[0], StartEvent)
    assert events[0].partial.content == ()
    assert sum(isinstance(e, TextEndEvent) for e in events) == 1
