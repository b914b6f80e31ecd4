"""The google-generative-ai provider over real loopback HTTP, checked against pi 0.73.1.

``tests/data/pi/providers/google_capture.json`` holds what pi's provider sent and emitted for
each case of ``fixtures_google.CASES`` (see ``google_capture.mjs``); the parity tests replay the
same cases through pitrio.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx2
import orjson
import pytest
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    UserMessage,
    stream,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers._overflow import is_context_overflow
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers.google._provider import google_provider, register_google
from pitrio.providers.google._request import (
    API,
    GoogleOptions,
    GoogleThinking,
    build_request_body,
)

from fixtures_google import (
    API_KEY,
    CASES,
    OVERLOADED_BODY,
    PNG_1PX,
    SIG_A,
    SIG_B,
    SIG_C,
    Case,
    big_stream,
    error_payloads,
    google_model,
    hello_context,
    pi_cases,
    replay_context,
    response_payloads,
    sse,
    text_chunks,
)
from loopback import Handler, Request, ResponseWriter, sequence_handler, serve, sse_handler
from pi_data import PI_NOW, canonical, load_json, normalise_now
from sdk_check import SdkCheckError, validate_strict

CAPTURE = load_json("providers/google_capture.json")
GENERATED_ID = re.compile(r"^(?P<name>.*)_(?P<ms>\d{13})_(?P<n>\d+)$")
REGISTRY = ProviderRegistry()
register_google(REGISTRY)


# --------------------------------------------------------------------------- helpers


def body_handler(status: int, body: bytes, content_type: str, **sse_kwargs: Any) -> Handler:
    """Serve a fixture: an SSE stream for 200, a whole body with its content type otherwise."""
    if status == 200:
        return sse_handler(body, headers={"content-type": content_type}, **sse_kwargs)

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(status, body, {"content-type": content_type})

    return handle


async def run(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    simple: bool = True,
    on_event: Callable[[AssistantMessageEvent], Awaitable[None]] | None = None,
) -> list[AssistantMessageEvent]:
    opener = stream_simple if simple else stream
    async with opener(
        model, context, options or StreamOptions(api_key=API_KEY), registry=REGISTRY
    ) as events:
        collected = []
        async for event in events:
            collected.append(event)
            if on_event is not None:
                await on_event(event)
        return collected


async def run_case(
    case: Case, **sse_kwargs: Any
) -> tuple[list[AssistantMessageEvent], Request, Model]:
    async with (
        serve(body_handler(case.status, case.body, case.content_type, **sse_kwargs)) as server,
        open_http_client(),
    ):
        model = google_model(case.model_id, server.url("/v1beta"))
        events = await run(model, case.context, case.options, simple=case.simple)
    return events, server.requests[0], model


def final(events: list[AssistantMessageEvent]) -> Any:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


def types_of(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


def normalise_ids(pi: Any, ours: Any) -> Any:
    """Replace the tool-call ids both sides generated (name_<ms>_<n>) by pi's."""
    if isinstance(pi, dict) and isinstance(ours, dict):
        out = {}
        for key, value in ours.items():
            theirs = pi.get(key)
            if (
                key == "id"
                and isinstance(theirs, str)
                and isinstance(value, str)
                and (match := GENERATED_ID.match(theirs))
                and match["ms"] == str(PI_NOW)
                and (mine := GENERATED_ID.match(value))
                and mine["name"] == match["name"]
            ):
                out[key] = theirs
            else:
                out[key] = normalise_ids(theirs, value)
        return out
    if isinstance(pi, list) and isinstance(ours, list) and len(pi) == len(ours):
        return [normalise_ids(a, b) for a, b in zip(pi, ours, strict=True)]
    return ours


# --------------------------------------------------------------------------- fixtures vs SDK


def check_response(payload: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the SDK only warns about an unknown enum value
        validate_strict(genai_types.GenerateContentResponse, payload)


def check_error_body(payload: dict[str, Any]) -> None:
    """Read an error body as the SDK's APIError does, and allow nothing it does not read."""
    assert set(payload) == {"error"}
    assert set(payload["error"]) <= {"code", "message", "status", "details"}
    error = genai_errors.APIError(0, payload)
    assert (error.code, error.status, error.message) == (
        payload["error"]["code"],
        payload["error"]["status"],
        payload["error"]["message"],
    )


def test_fixture_payloads_are_valid_sdk_responses() -> None:
    """Every streamed chunk of the fixtures is a GenerateContentResponse the SDK reads exactly."""
    payloads = list(response_payloads())
    payloads += [orjson.loads(line[6:]) for line in big_stream(20_000).split(b"\r\n\r\n") if line]
    assert len(payloads) > 30
    for payload in payloads:
        check_response(payload)
    for body in [*error_payloads(), OVERLOADED_BODY]:
        check_error_body(body)


@pytest.mark.parametrize(
    "bad",
    [
        {"candidates": [{"finish_reason": "STOP"}]},  # snake_case is not the wire format
        {"candidates": [{"finishReason": "DONE"}]},  # not a FinishReason
        {"candidates": [{"content": {"parts": [{"text": "x", "thinking": True}]}}]},  # extra key
        {"candidates": [{"content": {"parts": [{"thoughtSignature": "not base64!"}]}}]},
        {"usageMetadata": {"promptTokenCount": "12"}},  # coerced type
    ],
)
def test_sdk_check_rejects_what_the_api_cannot_send(bad: dict[str, Any]) -> None:
    """The fixture check fails for keys, values or types the API would not produce."""
    with pytest.raises((SdkCheckError, UserWarning)):
        check_response(bad)


# --------------------------------------------------------------------------- parity with pi


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_request_and_events_match_pi(case: Case) -> None:
    """pitrio sends the request pi sends and, where compared, emits pi's events exactly."""
    captured = CAPTURE["cases"][case.name]
    events, request, _ = await run_case(case)
    theirs = captured["request"]
    assert request.method == theirs["method"]
    assert request.target == theirs["path"]
    assert request.json() == theirs["body"]
    for header in ("content-type", "x-goog-api-key", "x-custom"):
        assert request.headers.get(header) == theirs["headers"].get(header), header
    if not case.pi_events:
        assert types_of(events)[-1] == "done"
        return
    pi_events = captured["events"]
    ours = normalise_ids(pi_events, normalise_now(pi_events, [to_wire(e) for e in events]))
    assert [e["type"] for e in ours] == [e["type"] for e in pi_events]
    for index, (mine, theirs_event) in enumerate(zip(ours, pi_events, strict=True)):
        assert canonical(mine) == canonical(theirs_event), f"event {index} differs"


def test_capture_covers_every_case() -> None:
    """The pi capture was made from the current fixtures (regenerate it when they change)."""
    assert sorted(CAPTURE["cases"]) == sorted(case.name for case in CASES)
    assert CAPTURE["piAi"] == "0.73.1"
    assert load_json("providers/google_cases.json") == orjson.loads(orjson.dumps(pi_cases()))


# --------------------------------------------------------------------------- behaviour


def case_named(name: str) -> Case:
    return next(case for case in CASES if case.name == name)


async def test_plain_text_streams_one_block_with_usage_and_cost() -> None:
    """Text parts grow one text block; usage counts cached tokens as cache reads and has cost."""
    events, request, model = await run_case(case_named("text"), chunk_size=5)
    assert types_of(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if isinstance(e, TextDeltaEvent)] == [
        "Hello",
        " there, how can",
        " I help you today?",
    ]
    message = final(events)
    assert message.text() == "Hello there, how can I help you today?"
    assert message.stop_reason == "stop"
    assert message.response_id == "bQ5AaLm4Ds2xz7IPn5bS8Q4"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (8, 9, 4, 0)
    assert usage.total_tokens == 21
    assert usage.cost.input == pytest.approx(8 * model.cost.input / 1e6)
    assert usage.cost.output == pytest.approx(9 * model.cost.output / 1e6)
    assert usage.cost.cache_read == pytest.approx(4 * model.cost.cache_read / 1e6)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.output + usage.cost.cache_read
    )
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}
    assert request.headers["x-goog-api-key"] == API_KEY


async def test_thinking_keeps_signatures_and_counts_thoughts_as_output() -> None:
    """Thought parts form a thinking block whose signature survives later unsigned parts."""
    events, request, _ = await run_case(case_named("thinking"))
    assert request.json()["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingBudget": 8192,
    }
    assert types_of(events)[:5] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
    ]
    message = final(events)
    thinking, text = message.content
    assert thinking.thinking.endswith("between 1 and 10.")
    assert thinking.thinking_signature == SIG_B
    assert text.text == "Seven."
    assert text.text_signature == SIG_C
    assert message.usage.output == 3 + 64


async def test_parallel_tool_calls_arrive_whole_with_generated_ids() -> None:
    """Each function call gives start, one delta with all arguments, end; ids are generated."""
    seen_mid_stream: list[dict[str, Any]] = []

    async def watch(event: AssistantMessageEvent) -> None:
        if isinstance(event, ToolCallStartEvent):
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            seen_mid_stream.append(block.arguments)

    case = case_named("tool_calls")
    async with serve(sse_handler(case.body, chunk_size=7)) as server, open_http_client():
        model = google_model(case.model_id, server.url("/v1beta"))
        events = await run(model, case.context, case.options, on_event=watch)
    calls_events = [
        e
        for e in events
        if isinstance(e, ToolCallStartEvent | ToolCallDeltaEvent | ToolCallEndEvent)
    ]
    assert [(e.type, e.content_index) for e in calls_events] == [
        ("toolcall_start", 2),
        ("toolcall_delta", 2),
        ("toolcall_end", 2),
        ("toolcall_start", 3),
        ("toolcall_delta", 3),
        ("toolcall_end", 3),
    ]
    paris = {"city": "Paris", "units": "celsius", "days": [1, 2, 3]}
    zurich = {"city": "Zürich", "units": "celsius", "note": "naïve — ok"}
    assert seen_mid_stream == [paris, zurich]  # a partial shows the call's arguments at once
    deltas = [e.delta for e in calls_events if isinstance(e, ToolCallDeltaEvent)]
    assert [orjson.loads(d) for d in deltas] == [paris, zurich]
    message = final(events)
    assert message.stop_reason == "toolUse"
    first, second = message.tool_calls()
    assert (first.arguments, second.arguments) == (paris, zurich)
    assert first.thought_signature == SIG_A and second.thought_signature is None
    ids = [GENERATED_ID.match(call.id) for call in (first, second)]
    assert all(match and match["name"] == "get_weather" for match in ids)
    assert first.id != second.id
    assert message.usage.output == 40 + 31


async def test_given_tool_call_ids_are_kept_unless_repeated() -> None:
    """A call's own id is used; a repeated id or a missing one is replaced by a generated id."""
    events, _, _ = await run_case(case_named("tool_call_ids"))
    ls_call, read_call, noop_call = final(events).tool_calls()
    assert ls_call.id == "call-1"
    assert (match := GENERATED_ID.match(read_call.id)) and match["name"] == "read"
    assert (noop_call.name, noop_call.arguments) == ("noop", {})
    assert GENERATED_ID.match(noop_call.id)


async def test_images_go_as_inline_data_and_in_function_responses() -> None:
    """User images are inlineData; Gemini 3 nests tool-result images, Gemini 2 adds a user turn."""
    for model_id, nested in (("gemini-3-pro-preview", True), ("gemini-2.5-pro", False)):
        model = google_model(model_id)
        body = build_request_body(model, replay_context(model_id), StreamOptions(), GoogleOptions())
        contents = body["contents"]
        image = {"inlineData": {"mimeType": "image/png", "data": PNG_1PX}}
        assert contents[0]["parts"][1] == image
        responses = contents[2]["parts"]
        assert [p["functionResponse"]["name"] for p in responses] == ["get_weather", "screenshot"]
        screenshot = responses[1]["functionResponse"]
        assert screenshot["response"] == {"output": "(see attached image)"}
        if nested:
            assert screenshot["parts"] == [image]
            assert contents[3]["role"] == "model"
        else:
            assert "parts" not in screenshot
            assert contents[3] == {
                "role": "user",
                "parts": [{"text": "Tool result image:"}, image],
            }


def test_replay_sends_signatures_only_for_the_same_model_and_valid_base64() -> None:
    """Signatures return with their parts for the same model; other models' turns become text."""
    model = google_model("gemini-2.5-pro")
    body = build_request_body(
        model, replay_context("gemini-2.5-pro"), StreamOptions(), GoogleOptions()
    )
    first_turn = body["contents"][1]["parts"]
    assert first_turn[0] == {
        "thought": True,
        "text": "Look at the image first.",
        "thoughtSignature": SIG_B,
    }
    assert first_turn[1] == {
        "text": "A red pixel. Checking the weather.",
        "thoughtSignature": SIG_C,
    }
    assert first_turn[2] == {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": SIG_A,
    }
    assert len(first_turn) == 4  # blank thinking and empty text are skipped
    bad_signature_turn = body["contents"][4]["parts"]  # after the tool-result image turn
    assert bad_signature_turn[0] == {"thought": True, "text": "Signature is not base64."}
    other = next(
        c for c in body["contents"] if any("Other model" in p.get("text", "") for p in c["parts"])
    )
    assert other["parts"][:2] == [
        {"text": "Other model thinking."},
        {"text": "Other model text."},
    ]
    assert other["parts"][2] == {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}


async def test_http_errors_carry_status_and_body() -> None:
    """429 and 500 end the stream with no start event and the error body as the message."""
    for name, code, status in (
        ("http_429", 429, "RESOURCE_EXHAUSTED"),
        ("http_500", 500, "INTERNAL"),
    ):
        events, _, _ = await run_case(case_named(name))
        assert types_of(events) == ["error"]
        message = final(events)
        assert message.stop_reason == "error"
        error = orjson.loads(message.error_message)
        assert (error["error"]["code"], error["error"]["status"]) == (code, status)
        assert str(code) in message.error_message
        assert not is_context_overflow(message, 1_000_000)


async def test_non_json_error_body_is_wrapped_like_the_sdk_does() -> None:
    """A text error body becomes {"error": {message, code, status}} with the reason phrase."""
    events, _, _ = await run_case(case_named("http_502_text"))
    assert orjson.loads(final(events).error_message) == {
        "error": {
            "message": "<html><body>Bad Gateway</body></html>",
            "code": 502,
            "status": "Bad Gateway",
        }
    }


async def test_context_overflow_is_detected() -> None:
    """Gemini's 'input token count exceeds the maximum' error is a context overflow."""
    events, _, model = await run_case(case_named("overflow"))
    message = final(events)
    assert message.stop_reason == "error"
    assert "exceeds the maximum number of tokens allowed" in message.error_message
    assert is_context_overflow(message, model.context_window)


async def test_dropped_connection_keeps_what_arrived() -> None:
    """A connection cut mid-stream ends with an error and the text received so far."""
    body = sse(text_chunks())
    cut = body.index(b"data:", body.index(b"data:") + 1) + 20  # inside the second event
    async with serve(sse_handler(body, drop_after=cut)) as server, open_http_client():
        model = google_model("gemini-2.5-flash", server.url("/v1beta"))
        events = await run(model, hello_context())
    message = final(events)
    assert isinstance(events[-1], ErrorEvent) and events[-1].reason == "error"
    assert message.stop_reason == "error"
    assert "connection" in message.error_message.lower()
    assert message.text() == "Hello"


async def test_cancellation_releases_the_connection() -> None:
    """Aborting mid-stream ends with 'aborted' and gives the pooled connection back."""
    body = sse(text_chunks())
    hang = body.index(b"\r\n\r\n") + 4  # after the first event
    async with (
        serve(sequence_handler(sse_handler(body, hang_after=hang), sse_handler(body))) as server,
        open_http_client(limits=httpx2.Limits(max_connections=1)),
    ):
        model = google_model("gemini-2.5-flash", server.url("/v1beta"))
        async with stream_simple(
            model, hello_context(), StreamOptions(api_key=API_KEY), registry=REGISTRY
        ) as events:
            seen = []
            async for event in events:
                seen.append(event)
                if isinstance(event, TextDeltaEvent):
                    events.abort()
        assert isinstance(seen[-1], ErrorEvent) and seen[-1].reason == "aborted"
        assert seen[-1].error.stop_reason == "aborted"
        assert seen[-1].error.text() == "Hello"
        while server.connections_open:
            await server.connection_closed.wait()
        # The single pooled slot is free again: a second request goes through.
        second = await run(model, hello_context())
        assert final(second).text() == "Hello there, how can I help you today?"
    assert server.connections_opened == 2  # the aborted connection was closed, not reused


async def test_error_finish_reasons() -> None:
    """SAFETY ends as an error after closing blocks; an unknown reason fails at once."""
    events, _, _ = await run_case(case_named("safety"))
    assert types_of(events)[-2:] == ["text_end", "error"]
    assert final(events).error_message == "An unknown error occurred"
    events, _, _ = await run_case(case_named("unknown_finish"))
    assert types_of(events)[-2:] == ["text_delta", "error"]
    assert final(events).error_message == "Unhandled stop reason: TOO_MANY_TOOL_CALLS"


async def test_max_tokens_maps_to_length() -> None:
    """MAX_TOKENS stops with 'length' and the maxOutputTokens asked for."""
    events, request, _ = await run_case(case_named("max_tokens"))
    assert final(events).stop_reason == "length"
    assert request.json()["generationConfig"] == {"maxOutputTokens": 5}


async def test_error_object_in_the_stream_fails_the_response() -> None:
    """An error payload inside the stream ends it with the SDK's 'got status' message."""
    check_error_body(OVERLOADED_BODY)
    body = sse([text_chunks()[0], OVERLOADED_BODY])
    async with serve(sse_handler(body)) as server, open_http_client():
        model = google_model("gemini-2.5-flash", server.url("/v1beta"))
        events = await run(model, hello_context())
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message.startswith("got status: UNAVAILABLE. ")
    assert "overloaded" in message.error_message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "Invalid SSE data"),
        (b"[1, 2]", "Invalid stream chunk (not an object)"),
        (b'{"candidates": [{"content": {"parts": [{"text": 5}]}}]}', "Invalid stream chunk"),
        (b'{"candidates": "none"}', "Invalid stream chunk"),
    ],
)
async def test_unreadable_chunk_is_an_error(data: bytes, message: str) -> None:
    """A data line that is not a GenerateContentResponse ends the stream with a clear error."""
    body = sse(text_chunks()[:1]) + b"data: " + data + b"\r\n\r\n" + sse(text_chunks()[1:])
    async with serve(sse_handler(body)) as server, open_http_client():
        model = google_model("gemini-2.5-flash", server.url("/v1beta"))
        events = await run(model, hello_context())
    final_message = final(events)
    assert final_message.stop_reason == "error"
    assert final_message.error_message.startswith(message)
    assert final_message.text() == "Hello"  # what came before is kept, nothing after is read


async def test_on_payload_can_replace_the_body() -> None:
    """on_payload sees the request body; a returned value (awaitable too) is sent instead."""
    seen: list[Any] = []

    async def replace(body: Any, model: Model) -> Any:
        seen.append((body, model.id))
        return {**body, "generationConfig": {"temperature": 0.1}}

    async with serve(sse_handler(sse(text_chunks()))) as server, open_http_client():
        model = google_model("gemini-2.0-flash", server.url("/v1beta"))
        await run(model, hello_context(), StreamOptions(api_key=API_KEY, on_payload=replace))
        await run(
            model,
            hello_context(),
            StreamOptions(api_key=API_KEY, on_payload=lambda body, model: seen.append(body)),
        )
    assert seen[0][1] == "gemini-2.0-flash"
    assert seen[0][0]["generationConfig"] == {"maxOutputTokens": 8192}
    assert server.requests[0].json()["generationConfig"] == {"temperature": 0.1}
    assert server.requests[1].json()["generationConfig"] == {"maxOutputTokens": 8192}


async def test_headers_and_environment_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key comes from GEMINI_API_KEY when not given; option headers override model headers."""
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    async with serve(sse_handler(sse(text_chunks()))) as server, open_http_client():
        model = attrs.evolve(
            google_model("gemini-2.0-flash", server.url("/v1beta/")),
            headers={"x-model": "m", "x-both": "model"},
        )
        await run(model, hello_context(), StreamOptions(headers={"x-both": "options"}))
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    assert request.headers["x-goog-api-key"] == "env-key"
    assert (request.headers["x-model"], request.headers["x-both"]) == ("m", "options")


async def test_simple_stream_without_a_key_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """stream_simple refuses to start without an API key, like pi."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    events = await run(google_model("gemini-2.0-flash"), hello_context(), StreamOptions())
    assert types_of(events) == ["error"]
    assert final(events).error_message == "No API key for provider: google"
    # stream() goes ahead without a key header, as pi's SDK client does.
    async with serve(sse_handler(sse(text_chunks()))) as server, open_http_client():
        model = google_model("gemini-2.0-flash", server.url("/v1beta"))
        events = await run(model, hello_context(), StreamOptions(), simple=False)
    assert types_of(events)[-1] == "done"
    assert "x-goog-api-key" not in server.requests[0].headers


def test_thinking_options_map_to_thinking_config() -> None:
    """Explicit thinking options become thinkingConfig; disabled thinking uses the model's off."""
    model = google_model("gemini-2.5-flash")
    context = hello_context()

    def config(thinking: GoogleThinking | None, m: Model = model) -> Any:
        body = build_request_body(m, context, StreamOptions(), GoogleOptions(thinking=thinking))
        return body["generationConfig"].get("thinkingConfig")

    assert config(None) is None
    assert config(GoogleThinking(enabled=True)) == {"includeThoughts": True}
    assert config(GoogleThinking(enabled=True, budget_tokens=100, level="HIGH")) == {
        "includeThoughts": True,
        "thinkingLevel": "HIGH",
    }
    assert config(GoogleThinking(enabled=False)) == {"thinkingBudget": 0}
    non_reasoning = google_model("gemini-2.0-flash")
    assert config(GoogleThinking(enabled=True, budget_tokens=5), non_reasoning) is None
    assert GoogleOptions.from_provider_options(
        {"tool_choice": "auto", "thinking": {"enabled": True, "budget_tokens": 7}}
    ) == GoogleOptions(tool_choice="auto", thinking=GoogleThinking(enabled=True, budget_tokens=7))


def test_lone_surrogates_are_removed() -> None:
    """Unpaired surrogates are dropped from text sent to the API; real characters stay."""
    assert sanitize_surrogates("a\ud83db") == "ab"
    assert sanitize_surrogates("x\ud83d\ude48y") == "x🙈y"
    assert sanitize_surrogates("naïve 🙈") == "naïve 🙈"
    context = Context(messages=[UserMessage(content="hi\udc00", timestamp=0)])
    body = build_request_body(
        google_model("gemini-2.0-flash"), context, StreamOptions(), GoogleOptions()
    )
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


async def test_big_stream_is_read_whole() -> None:
    """A long answer of many chunks arrives as one text block with every character."""
    body = big_stream(50_000)
    expected = "".join(
        part["text"]
        for line in body.split(b"\r\n\r\n")
        if line
        for part in orjson.loads(line[6:])["candidates"][0]["content"]["parts"]
    )
    async with serve(sse_handler(body, chunk_size=1000)) as server, open_http_client():
        model = google_model("gemini-2.5-flash", server.url("/v1beta"))
        events = await run(model, hello_context())
    message = final(events)
    assert message.text() == expected and len(expected) >= 50_000
    assert message.usage.cache_read == 800


def test_registration() -> None:
    """register_google registers the provider under its API id."""
    registry = ProviderRegistry()
    register_google(registry)
    assert registry.resolve(API) is google_provider
    assert API == "google-generative-ai"
    assert google_model("gemini-2.5-flash").api == API
