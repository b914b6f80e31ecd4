"""The openai-codex-responses provider over real loopback HTTP.

The server checks pi's Codex request (``/codex/responses``, the Bearer token, the account id
read from the token's JWT claim, ``OpenAI-Beta``, the session headers, the system prompt as
``instructions``) and answers with Responses streams ending as the backend ends them. Retries
run on virtual time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from openai.types.responses import ResponseStreamEvent
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ProviderRegistry,
    ProviderResponse,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolResultMessage,
    UserMessage,
    default_catalogue,
    get_model,
    stream,
)
from pitrio.providers._builtins import register_builtin_providers
from pitrio.providers._http import open_http_client
from pitrio.providers.codex import codex_url, is_retryable, register_openai_codex_responses
from pitrio.providers.openai_responses._request import NO_FINAL_EVENT

from fixtures_codex import (
    ACCOUNT_ID,
    access_token,
    as_sdk_events,
    codex_sse,
    usage_limit_body,
    with_done,
)
from fixtures_openai_responses import (
    ENCRYPTED,
    PARIS_CHUNKS,
    PNG_1PX,
    RATE_LIMIT_BODY,
    SERVER_ERROR_BODY,
    SUMMARY_PARTS,
    TEXT_DELTAS,
    TOKYO_CHUNKS,
    ResponsesStream,
    error_event_stream,
    failed_stream,
    incomplete_stream,
    text_stream,
    thinking_stream,
    tool_calls_stream,
    usage_stream,
)
from loopback import (
    Handler,
    Request,
    ResponseWriter,
    error_handler,
    sequence_handler,
    serve,
    split_every,
    sse_bytes,
    sse_handler,
)
from sdk_check import validate_params, validate_strict
from stream_helpers import ask, run_types

TOKEN = access_token()


@pytest.fixture
def registry() -> Iterator[ProviderRegistry]:
    registry = ProviderRegistry()
    register_openai_codex_responses(registry)
    yield registry


@pytest.fixture
def net_clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the run has been idle for 20 ms of real time (the loopback
    server's sockets are real: a zero threshold could jump while a reply is on its way)."""
    return trio.testing.MockClock(autojump_threshold=0.02)


def _model(server: Any, model_id: str = "gpt-5.2", **changes: Any) -> Model:
    found = get_model("openai-codex", model_id)
    return attrs.evolve(found, base_url=server.url("/backend-api"), **changes)


def _timed(handler: Handler, times: list[float]) -> Handler:
    async def handle(request: Request, writer: ResponseWriter) -> None:
        times.append(trio.current_time())
        await handler(request, writer)

    return handle


def _sse(stream: ResponsesStream) -> Handler:
    return sse_handler(codex_sse(with_done(stream)))


# --------------------------------------------------------------------------- fixtures vs SDK


@pytest.mark.parametrize(
    "stream",
    [text_stream(), thinking_stream(), tool_calls_stream(), usage_stream(), incomplete_stream()],
    ids=["text", "thinking", "tool_calls", "usage", "incomplete"],
)
def test_codex_fixtures_are_valid_sdk_events(stream: ResponsesStream) -> None:
    """The streams as Codex ends them validate as the SDK's events once done reads completed."""
    for event in as_sdk_events(with_done(stream)):
        validate_strict(ResponseStreamEvent, event)


# --------------------------------------------------------------------------- request


async def test_text_request_headers_and_body(registry: ProviderRegistry) -> None:
    """pi's Codex request: the headers it sets and the body with the prompt as instructions."""
    async with serve(_sse(text_stream())) as server, open_http_client():
        options = StreamOptions(
            api_key=TOKEN,
            session_id="sess-42",
            headers={"x-extra": "1", "originator": "someone-else", "Authorization": "Bearer x"},
        )
        types, message = await run_types(_model(server), ask(), options, registry)
    assert types == ["start", "text_start", *["text_delta"] * len(TEXT_DELTAS), "text_end", "done"]
    assert (message.api, message.provider, message.text()) == (
        "openai-codex-responses",
        "openai-codex",
        "".join(TEXT_DELTAS),
    )
    request = server.requests[0]
    assert request.path == "/backend-api/codex/responses"
    headers = request.headers
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["chatgpt-account-id"] == ACCOUNT_ID
    assert headers["openai-beta"] == "responses=experimental"
    assert headers["originator"] == "pi"
    assert headers["session_id"] == headers["x-client-request-id"] == "sess-42"
    assert headers["accept"] == "text/event-stream"
    assert headers["x-extra"] == "1"
    assert headers["user-agent"].startswith("pitrio/")
    body = request.json()
    assert body == {
        "model": "gpt-5.2",
        "store": False,
        "stream": True,
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?"}]}],
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "sess-42",
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }
    validate_params(ResponseCreateParamsStreaming, body)


async def test_default_instructions_and_no_session_headers(registry: ProviderRegistry) -> None:
    """Without a system prompt pi's default instructions go; without a session, no session
    headers and no cache key; text verbosity is an option."""
    async with serve(_sse(text_stream())) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, provider_options={"textVerbosity": "high"})
        await run_types(_model(server), ask(system=None), options, registry)
    request = server.requests[0]
    assert "session_id" not in request.headers and "x-client-request-id" not in request.headers
    body = request.json()
    assert body["instructions"] == "You are a helpful assistant."
    assert body["text"] == {"verbosity": "high"}
    assert "prompt_cache_key" not in body


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        (None, "https://chatgpt.com/backend-api/codex/responses"),
        ("  ", "https://chatgpt.com/backend-api/codex/responses"),
        ("https://h/api/", "https://h/api/codex/responses"),
        ("https://h/api/codex", "https://h/api/codex/responses"),
        ("https://h/api/codex/responses/", "https://h/api/codex/responses"),
    ],
)
def test_codex_url(base: str | None, expected: str) -> None:
    """The endpoint is {base}/codex/responses, completed but never doubled."""
    assert codex_url(base) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("not-a-jwt", "Failed to extract accountId from token"),
        (access_token(None), "Failed to extract accountId from token"),
        ("", "No API key for provider: openai-codex"),
    ],
)
async def test_a_token_without_an_account_is_an_error(
    token: str, expected: str, registry: ProviderRegistry
) -> None:
    """The account id must be in the token; nothing is sent otherwise."""
    async with serve(_sse(text_stream())) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=token), registry
        )
    assert types == ["error"]
    assert message.error_message == expected
    assert server.requests == []


# --------------------------------------------------------------------------- streams


async def test_thinking_streams_and_is_replayed(registry: ProviderRegistry) -> None:
    """Summaries stream as thinking; the model's level map applies; the item is replayed."""
    fixture = thinking_stream()
    async with serve(_sse(fixture)) as server, open_http_client():
        model = _model(server, "gpt-5.2")  # maps "minimal" to "low"
        options = StreamOptions(api_key=TOKEN, reasoning="minimal")
        types, message = await run_types(model, ask(), options, registry, simple=True)
        thinking, text = message.content
        assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
        assert thinking.thinking == "\n\n".join("".join(part) for part in SUMMARY_PARTS)
        assert types.count("thinking_delta") == sum(len(p) + 1 for p in SUMMARY_PARTS)
        follow_up = Context(
            system_prompt="Be brief.",
            messages=[*ask().messages, message, UserMessage(content="And 3+3?", timestamp=2)],
        )
        await run_types(model, follow_up, options, registry, simple=True)
    first, second = (request.json() for request in server.requests)
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert "max_output_tokens" not in first
    assert second["input"][1] == fixture.output[0]
    assert second["input"][1]["encrypted_content"] == ENCRYPTED
    assert [item.get("role") for item in second["input"]] == ["user", None, "assistant", "user"]


async def test_tool_calls_stream_partial_arguments(registry: ProviderRegistry) -> None:
    """Two calls stream their arguments in 5-byte pieces; tools go with strict null."""
    body = split_every(codex_sse(with_done(tool_calls_stream())), 5)
    async with serve(sse_handler(body)) as server, open_http_client():
        tool = Tool(name="get_weather", description="d", parameters={"type": "object"})
        context = attrs.evolve(ask("Weather?"), tools=[tool])
        async with stream(
            _model(server), context, StreamOptions(api_key=TOKEN), registry=registry
        ) as events:
            partial = [
                (event.content_index, event.partial.content[event.content_index])
                async for event in events
                if isinstance(event, ToolCallDeltaEvent)
            ]
            message = await events.result()
    assert len(partial) == len(PARIS_CHUNKS) + len(TOKYO_CHUNKS)
    tokyo = [block for index, block in partial if index == 2]
    assert isinstance(tokyo[3], ToolCall) and tokyo[3].arguments == {"city": "Tok"}
    assert [c.arguments for c in message.tool_calls()] == [
        {"city": "Paris", "unit": "c"},
        {"city": "Tokyo"},
    ]
    assert message.stop_reason == "toolUse"
    sent = server.requests[0].json()
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": None,
        }
    ]
    validate_params(ResponseCreateParamsStreaming, sent)


async def test_images_go_as_data_urls(registry: ProviderRegistry) -> None:
    """Images in a user message and a tool result are input_image data URLs."""
    image = ImageContent(data=PNG_1PX, mime_type="image/png")
    call = ToolCall(id="call_1|fc_1", name="shot", arguments={})
    turn = AssistantMessage(
        content=[call], api="openai-codex-responses", provider="openai-codex",
        model="gpt-5.2", stop_reason="toolUse", timestamp=2,
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
    url = f"data:image/png;base64,{PNG_1PX}"
    async with serve(_sse(text_stream())) as server, open_http_client():
        await run_types(_model(server), context, StreamOptions(api_key=TOKEN), registry)
    sent = server.requests[0].json()["input"]
    assert sent[0]["content"][1] == {"type": "input_image", "detail": "auto", "image_url": url}
    assert sent[1]["id"] == "fc_1" and sent[1]["call_id"] == "call_1"
    assert sent[2]["output"] == [{"type": "input_image", "detail": "auto", "image_url": url}]


async def test_usage_and_cost_priced_at_the_requested_tier(registry: ProviderRegistry) -> None:
    """A flex request answered as "default" is priced as flex (pi's Codex rule)."""
    fixture = ResponsesStream(service_tier="default")
    fixture.message(["Cached."])
    fixture.completed(input_tokens=120_000, cached_tokens=100_000, output_tokens=2_000)
    async with serve(_sse(fixture)) as server, open_http_client():
        model = _model(server, "gpt-5.2")
        options = StreamOptions(api_key=TOKEN, provider_options={"serviceTier": "flex"})
        _, message = await run_types(model, ask(), options, registry)
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (
        20_000,
        100_000,
        2_000,
        122_000,
    )
    assert usage.cost.input == pytest.approx(20_000 * model.cost.input / 1e6 / 2)
    assert usage.cost.cache_read == pytest.approx(100_000 * model.cost.cache_read / 1e6 / 2)
    assert usage.cost.output == pytest.approx(2_000 * model.cost.output / 1e6 / 2)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.cache_read + usage.cost.output
    )
    assert server.requests[0].json()["service_tier"] == "flex"


def _with_status(stream: ResponsesStream, status: str) -> list[dict[str, Any]]:
    events = with_done(stream)
    events[-1] = {**events[-1], "response": {**events[-1]["response"], "status": status}}
    return events


def _no_message_error() -> list[dict[str, Any]]:
    return [{"type": "error", "code": "rate_limited", "sequence_number": 0}]


@pytest.mark.parametrize(
    ("events", "reason", "error"),
    [
        (with_done(text_stream()), "stop", None),
        (text_stream().events, "stop", None),  # response.completed
        (with_done(tool_calls_stream()), "toolUse", None),
        (incomplete_stream().events, "length", None),  # response.incomplete
        (_with_status(text_stream(), "incomplete"), "length", None),  # response.done
        (_with_status(text_stream(), "brand_new_status"), "stop", None),
        (failed_stream().events, "error", "The model failed to generate a response."),
        (
            error_event_stream().events,
            "error",
            "Codex error: The server had an error processing your request.",
        ),
        (_no_message_error(), "error", "Codex error: rate_limited"),
        (ResponsesStream().events, "error", NO_FINAL_EVENT),
    ],
    ids=[
        "done",
        "completed",
        "toolUse",
        "incomplete_event",
        "done_incomplete",
        "unknown_status",
        "response_failed",
        "error_event",
        "error_code_only",
        "no_final_event",
    ],
)
async def test_every_stop_reason(
    events: list[dict[str, Any]], reason: str, error: str | None, registry: ProviderRegistry
) -> None:
    """Each ending gives its stop reason; failures carry pi's Codex error texts."""
    async with serve(sse_handler(codex_sse(events))) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=TOKEN), registry
        )
    assert (message.stop_reason, message.error_message) == (reason, error)
    assert types[0] == "start" and types[-1] == ("error" if error else "done")


async def test_nothing_after_the_final_event_is_read(registry: ProviderRegistry) -> None:
    """pi stops at response.done: a later error event (or [DONE]) changes nothing."""
    events = [*with_done(text_stream()), {"type": "error", "message": "late"}]
    body = codex_sse(events) + sse_bytes([(None, "[DONE]")])
    async with serve(sse_handler(body)) as server, open_http_client():
        _, message = await run_types(_model(server), ask(), StreamOptions(api_key=TOKEN), registry)
    assert message.stop_reason == "stop"
    assert message.text() == "".join(TEXT_DELTAS)


async def test_a_stream_cut_short_is_an_error(registry: ProviderRegistry) -> None:
    """A dropped connection ends with stopReason error and keeps the text so far."""
    body = codex_sse(with_done(text_stream()))
    cut = body.index(b'" you today?"')
    async with serve(sse_handler(body, drop_after=cut)) as server, open_http_client():
        _, message = await run_types(_model(server), ask(), StreamOptions(api_key=TOKEN), registry)
    assert message.stop_reason == "error"
    assert message.error_message and "Connection lost" in message.error_message
    assert message.text() == "".join(TEXT_DELTAS[:-1])


async def test_a_200_that_is_not_a_stream_is_an_error(registry: ProviderRegistry) -> None:
    """A JSON body with status 200 is refused, and not retried."""
    async with serve(error_handler(200, {"detail": "ok?"})) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=TOKEN), registry
        )
    assert types == ["start", "error"]
    assert message.error_message and message.error_message.startswith("Not an event stream")
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- retries


async def test_429_is_retried_after_retry_after_ms(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """A 429 asking for 2500 ms is retried after exactly that (not pi's 1 s backoff)."""
    times: list[float] = []
    seen: list[int] = []

    def on_response(response: ProviderResponse, model: Model) -> None:
        seen.append(response.status)

    handler = sequence_handler(
        error_handler(429, RATE_LIMIT_BODY, {"retry-after-ms": "2500"}), _sse(text_stream())
    )
    async with serve(_timed(handler, times)) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0, on_response=on_response)
        _, message = await run_types(_model(server), ask(), options, registry)
    assert message.stop_reason == "stop", message.error_message
    assert len(times) == 2
    assert 2.5 <= times[1] - times[0] < 2.6
    assert seen == [429, 200]  # pi shows every answer, retried ones too


async def test_server_errors_back_off_1_then_2_seconds(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """Without a requested delay pi's backoff applies: 1 s, then 2 s."""
    times: list[float] = []
    handler = sequence_handler(
        error_handler(503, SERVER_ERROR_BODY),
        error_handler(502, "bad gateway"),
        _sse(text_stream()),
    )
    async with serve(_timed(handler, times)) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0)
        _, message = await run_types(_model(server), ask(), options, registry)
    assert message.stop_reason == "stop", message.error_message
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert [round(gap, 1) for gap in gaps] == [1.0, 2.0]


async def test_retries_end_with_the_bodys_message(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """After three retries the last error is final, worded as pi words it."""
    async with serve(error_handler(500, SERVER_ERROR_BODY)) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0)
        types, message = await run_types(_model(server), ask(), options, registry)
    assert types == ["error"]
    assert len(server.requests) == 4
    assert message.error_message == SERVER_ERROR_BODY["error"]["message"]


async def test_a_used_up_quota_is_not_retried(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """usage_limit_reached is final at once, with pi's friendly message and the reset time."""
    resets_at = time.time() + 600
    handler = error_handler(429, usage_limit_body(resets_at), {"retry-after-ms": "10"})
    async with serve(handler) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0)
        _, message = await run_types(_model(server), ask(), options, registry)
    assert len(server.requests) == 1
    assert message.error_message == (
        "You have hit your ChatGPT usage limit (plus plan). Try again in ~10 min."
    )
    # The status and the requested delay still reach the session's retry.
    assert message.diagnostics and message.diagnostics[0]["details"]["status"] == 429


async def test_a_client_error_is_not_retried(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """A 400 is final at once (its message is the body's)."""
    body = {"error": {"message": "Unsupported parameter: temperature", "type": "invalid"}}
    async with serve(error_handler(400, body)) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0, temperature=0.2)
        _, message = await run_types(_model(server), ask(), options, registry)
    assert len(server.requests) == 1
    assert message.error_message == "Unsupported parameter: temperature"


async def test_a_delay_over_the_limit_is_not_waited(
    net_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """A requested delay over max_retry_delay_ms makes the error final (with the delay)."""
    handler = error_handler(503, SERVER_ERROR_BODY, {"retry-after": "120"})
    async with serve(handler) as server, open_http_client():
        options = StreamOptions(api_key=TOKEN, stall_timeout_ms=0, max_retry_delay_ms=60_000)
        _, message = await run_types(_model(server), ask(), options, registry)
    assert len(server.requests) == 1
    assert message.diagnostics and message.diagnostics[0]["details"]["retryAfterMs"] == 120_000


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, "{}", True),
        (504, "", True),
        (400, "upstream connect error or disconnect", True),
        (403, "Service Unavailable", True),
        (400, "bad request", False),
        (401, '{"error": {"message": "expired"}}', False),
        (429, '{"error": {"code": "usage_not_included"}}', False),
        (429, '{"error": {"type": "rate_limit_exceeded", "message": "slow"}}', True),
    ],
)
def test_retry_rules(status: int, body: str, expected: bool) -> None:
    """pi's statuses and outage texts are retried; a used-up quota is not."""
    assert is_retryable(status, body) is expected


def test_every_catalogue_model_resolves() -> None:
    """All 10 Codex models of the catalogue resolve to a registered provider."""
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    models = [
        m
        for provider in default_catalogue.providers()
        for m in default_catalogue.models(provider)
        if m.api == "openai-codex-responses"
    ]
    assert len(models) == 10
    assert all(registry.resolve(m.api).api == "openai-codex-responses" for m in models)


async def test_abort_ends_with_aborted(registry: ProviderRegistry) -> None:
    """Aborting mid-stream gives stopReason aborted with the text so far, and no retry."""
    body = codex_sse(with_done(text_stream()))
    second = body.index(b"event: response.output_text.delta", body.index(b'"Hello"'))
    async with serve(sse_handler(body, hang_after=second)) as server, open_http_client():
        async with stream(
            _model(server), ask(), StreamOptions(api_key=TOKEN), registry=registry
        ) as events:
            async for event in events:
                if event.type == "text_delta":
                    events.abort()
            message = await events.result()
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
    assert message.stop_reason == "aborted"
    assert message.text() == TEXT_DELTAS[0]
    assert len(server.requests) == 1
