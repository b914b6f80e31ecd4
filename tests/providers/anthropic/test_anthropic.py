"""The anthropic-messages provider over real loopback HTTP, checked against pi 0.73.1 and the SDK."""

from __future__ import annotations

import collections.abc
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import httpx2
import pydantic
import pytest
import trio
import trio.lowlevel
import typing_extensions
from anthropic.types import RawMessageStreamEvent
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from anthropic.types.shared.error_response import ErrorResponse

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    ASSISTANT_STREAM_BUFFER,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ThinkingBudgets,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolResultMessage,
    UserMessage,
    get_model,
)
from pitrio.providers._api import stream, stream_simple
from pitrio.providers._http import open_http_client
from pitrio.providers._overflow import is_context_overflow
from pitrio.providers._sse import SSEDecoder
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers.anthropic._provider import ANTHROPIC_PROVIDER, register_anthropic
from pitrio.providers.anthropic._request import (
    API,
    AnthropicOptions,
    adjust_max_tokens_for_thinking,
)

import fixtures_anthropic as fx
from loopback import (
    ConnectionDropped,
    LoopbackServer,
    Request,
    ResponseWriter,
    error_handler,
    sequence_handler,
    serve,
    sse_handler,
)
from pi_data import PI_DATA, canonical, normalise_now
from sdk_check import SdkCheckError, validate_strict

API_KEY = "sk-ant-api03-test"
CASES_DIR = PI_DATA / "providers"
TRANSPORT_HEADERS = {"accept-language", "sec-fetch-mode", "accept-encoding"}
"""Headers node's fetch adds on its own: not part of what pi asks for."""


# --------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PI_CACHE_RETENTION", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    register_anthropic(registry)
    return registry


def make_model(
    server: LoopbackServer, model_id: str = "claude-sonnet-4-5", **changes: Any
) -> Model:
    return attrs.evolve(get_model("anthropic", model_id), base_url=server.url(), **changes)


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=fx.T0)


HI = Context(system_prompt="Be brief.", messages=[user("Hi")])


async def collect(
    model: Model,
    context: Context,
    options: StreamOptions,
    registry: ProviderRegistry,
    *,
    simple: bool = True,
) -> tuple[list[Any], AssistantMessage]:
    opener = stream_simple if simple else stream
    async with opener(model, context, options, registry=registry) as events:
        seen = [event async for event in events]
        return seen, await events.result()


def types_of(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def strip_scratch(data: Any) -> Any:
    """Drop pi's streaming scratch keys (``index``, ``partialJson``) from content blocks.

    pi keeps them on the blocks of its partial message while a block is open, so they show in
    events serialised at push time; they are never part of a finished message.
    """
    if isinstance(data, dict):
        return {
            key: strip_scratch(value)
            for key, value in data.items()
            if not (key in ("index", "partialJson") and "type" in data and key != "type")
        }
    if isinstance(data, list):
        return [strip_scratch(item) for item in data]
    return data


ROOT_PARAMS_NOT_IN_PY_SDK = {"temperature": float}
"""Request fields pi sends that the Python SDK (2.x) no longer types: the TypeScript SDK that pi
uses (0.91.1) still declares ``temperature?: number`` on ``MessageCreateParamsBase``."""


def check_request_params(body: Any) -> None:
    """Check a request body against ``MessageCreateParamsStreaming``, rejecting unknown keys."""
    body = dict(body)
    for key, kind in ROOT_PARAMS_NOT_IN_PY_SDK.items():
        if key in body:
            _check_typed(body.pop(key), kind, f"body.{key}")
    _check_typed(body, MessageCreateParamsStreaming, "body")


_REQUIRED: Any = typing.Required
_WRAPPERS: tuple[Any, ...] = (typing.Annotated, typing.Required, typing.NotRequired)


def _check_typed(value: Any, tp: Any, path: str) -> None:
    # The SDK's request types are TypedDicts with Iterable fields, which pydantic validates
    # lazily and cannot round-trip; this walker checks them directly.
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return
    if origin in _WRAPPERS:
        _check_typed(value, args[0], path)
    elif origin in (typing.Union, types.UnionType):
        failures = []
        for arg in args:
            try:
                _check_typed(value, arg, path)
                return
            except SdkCheckError as exc:
                failures.append(str(exc))
        raise SdkCheckError(f"{path}: {value!r} matches no member of {tp}:\n" + "\n".join(failures))
    elif origin is typing.Literal:
        if not any(value == arg and type(value) is type(arg) for arg in args):
            raise SdkCheckError(f"{path}: {value!r} is not one of {args}")
    elif tp is type(None):
        if value is not None:
            raise SdkCheckError(f"{path}: {value!r} is not null")
    elif typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            raise SdkCheckError(f"{path}: {value!r} is not an object ({tp.__name__})")
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        unknown = set(value) - set(hints)
        if unknown:
            raise SdkCheckError(f"{path}: {tp.__name__} has no keys {sorted(unknown)}")
        required = {k for k, h in hints.items() if typing.get_origin(h) is _REQUIRED}
        missing = required - set(value)
        if missing:
            raise SdkCheckError(f"{path}: {tp.__name__} lacks {sorted(missing)}")
        for key, item in value.items():
            _check_typed(item, hints[key], f"{path}.{key}")
    elif origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        if not isinstance(value, list):
            raise SdkCheckError(f"{path}: {value!r} is not a list")
        for i, item in enumerate(value):
            _check_typed(item, args[0], f"{path}[{i}]")
    elif origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            raise SdkCheckError(f"{path}: {value!r} is not an object")
    elif tp in (str, int, float, bool):
        ok = isinstance(value, tp) and not (tp is not bool and isinstance(value, bool))
        if not ok and not (tp is float and isinstance(value, int) and not isinstance(value, bool)):
            raise SdkCheckError(f"{path}: {value!r} is not a {tp.__name__}")
    elif inspect.isclass(tp) and issubclass(tp, pydantic.BaseModel):
        validate_strict(tp, value)
    else:
        raise SdkCheckError(f"{path}: cannot check type {tp!r}")


def check_stream_event(payload: dict[str, Any]) -> None:
    """Validate one SSE payload as the SDK's event, error or ping type (no unknown keys)."""
    if payload["type"] == "ping":
        assert payload == {"type": "ping"}  # the SDK has no type for it; this is its whole shape
    elif payload["type"] == "error":
        validate_strict(ErrorResponse, payload)
    else:
        validate_strict(RawMessageStreamEvent, payload)


# --------------------------------------------------------------------------- fixtures vs SDK


@pytest.mark.parametrize("name", sorted(fx.STREAMS))
def test_fixture_streams_are_valid_sdk_events(name: str) -> None:
    """Every payload of every fixture stream validates as the SDK's own type, with no extra keys."""
    events = fx.STREAMS[name]()
    for payload in events:
        check_stream_event(payload)
    decoded = SSEDecoder().feed(fx.to_sse(events))
    assert [(e.event, json.loads(e.data)) for e in decoded] == [(p["type"], p) for p in events]


def test_error_bodies_and_big_stream_are_valid_sdk_payloads() -> None:
    """HTTP error bodies validate as ErrorResponse; the benchmark stream's events all validate."""
    for _status, body in fx.ERROR_BODIES.values():
        validate_strict(ErrorResponse, body)
    decoded = SSEDecoder().feed(fx.big_stream(5000))
    text = ""
    for event in decoded:
        payload = json.loads(event.data)
        assert event.event == payload["type"]
        check_stream_event(payload)
        if payload["type"] == "content_block_delta":
            text += payload["delta"]["text"]
    assert len(text) >= 5000


def test_sdk_checks_reject_what_the_api_cannot_send() -> None:
    """The checks fail on an unknown key, a wrong discriminator and an unknown request field."""
    bad_delta = fx.text_delta(0, "x")
    bad_delta["delta"]["extra"] = 1
    with pytest.raises(SdkCheckError):
        check_stream_event(bad_delta)
    with pytest.raises(SdkCheckError):
        check_stream_event({"type": "content_block_delta", "index": 0, "delta": {"type": "nope"}})
    body = {"model": "m", "messages": [], "max_tokens": 1, "stream": True}
    check_request_params(body)
    with pytest.raises(SdkCheckError):
        check_request_params({**body, "temperatur": 1})
    with pytest.raises(SdkCheckError):
        check_request_params({**body, "messages": [{"role": "user", "content": [{"type": "txt"}]}]})


def test_capture_cases_file_matches_the_fixtures() -> None:
    """anthropic_cases.json (pi's input) is what fixtures_anthropic builds today."""
    on_disk = json.loads((CASES_DIR / "anthropic_cases.json").read_text())
    assert on_disk == json.loads(json.dumps(fx.capture_cases()))


# --------------------------------------------------------------------------- equality with pi


def _case_options(case: dict[str, Any]) -> StreamOptions:
    options = dict(case["options"])
    budgets = options.pop("thinkingBudgets", None)
    common = {
        "reasoning": options.pop("reasoning", None),
        "max_tokens": options.pop("maxTokens", None),
        "temperature": options.pop("temperature", None),
        "cache_retention": options.pop("cacheRetention", None),
        "metadata": options.pop("metadata", None),
        "headers": options.pop("headers", None),
    }
    return StreamOptions(
        api_key=API_KEY,
        thinking_budgets=ThinkingBudgets(**budgets) if budgets else None,
        provider_options=options or None,
        **common,
    )


def _case_handler(case: dict[str, Any]) -> Callable[[Request, ResponseWriter], Any]:
    if "sse" in case:
        return sse_handler(case["sse"].encode(), chunk_size=97)
    return error_handler(case["status"], case["body"])


CASES = sorted(json.loads((CASES_DIR / "anthropic_cases.json").read_text()))


@pytest.mark.parametrize("name", CASES)
async def test_events_and_request_equal_pis(name: str, registry: ProviderRegistry) -> None:
    """For each captured case, the request pi sent and the events pi pushed are what we produce."""
    case = json.loads((CASES_DIR / "anthropic_cases.json").read_text())[name]
    pi = json.loads((CASES_DIR / f"anthropic_{name}.json").read_text())
    context = from_wire(Context, case["context"])
    async with serve(_case_handler(case)) as server, open_http_client():
        model = make_model(server, case["model"])
        events, result = await collect(
            model, context, _case_options(case), registry, simple=case["simple"]
        )
    request = server.requests[0]
    assert (request.method, request.path) == (pi["request"]["method"], pi["request"]["path"])
    assert request.json() == pi["request"]["body"]
    check_request_params(request.json())
    pi_headers = {k: v for k, v in pi["request"]["headers"].items() if k not in TRANSPORT_HEADERS}
    assert {k: request.headers.get(k) for k in pi_headers} == pi_headers
    assert "anthropic-beta" in request.headers or "anthropic-beta" not in pi_headers

    pi_events = strip_scratch(pi["events"])
    ours = normalise_now(pi_events, [to_wire(event) for event in events])
    assert [e["type"] for e in ours] == [e["type"] for e in pi_events]
    for index, (mine, theirs) in enumerate(zip(ours, pi_events, strict=True)):
        assert canonical(mine) == canonical(theirs), f"event {index} ({theirs['type']}) differs"
    assert canonical(normalise_now(pi["result"], to_wire(result))) == canonical(pi["result"])


# --------------------------------------------------------------------------- behaviour


async def test_plain_text_streams_start_text_events_and_done(registry: ProviderRegistry) -> None:
    """A text answer gives start, text_start, one text_delta per API delta, text_end and done."""
    async with (
        serve(sse_handler(fx.to_sse(fx.text_stream()), chunk_size=1)) as server,
        open_http_client(),
    ):
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry
        )
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
        "Hello!",
        " How can I help",
        " you today?",
    ]
    assert result.content == (TextContent(text=fx.TEXT),)
    assert (result.stop_reason, result.response_id) == ("stop", fx.MESSAGE_ID)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.json()["stream"] is True


async def test_thinking_keeps_signature_for_replay(registry: ProviderRegistry) -> None:
    """Thinking deltas stream as thinking events; the signature deltas are joined on the block."""
    async with (
        serve(sse_handler(fx.to_sse(fx.thinking_stream()))) as server,
        open_http_client(),
    ):
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY, reasoning="high"), registry
        )
    kinds = types_of(events)
    assert kinds[:2] == ["start", "thinking_start"]
    assert kinds.count("thinking_delta") == len(fx.chunks(fx.THINKING, 11))
    thinking_end = next(e for e in events if e.type == "thinking_end")
    assert thinking_end.content == fx.THINKING
    assert result.content[0] == ThinkingContent(
        thinking=fx.THINKING, thinking_signature=fx.SIGNATURE
    )
    assert result.text() == "27 * 453 = 12231"


async def test_redacted_thinking_is_kept_and_replayed(registry: ProviderRegistry) -> None:
    """A redacted block is a thinking block with the opaque data as signature; replay sends it back."""
    async with (
        serve(sse_handler(fx.to_sse(fx.redacted_thinking_stream()))) as server,
        open_http_client(),
    ):
        model = make_model(server)
        _, result = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
        follow_up = Context(messages=[user("Hi"), result, user("Go on")])
        await collect(model, follow_up, StreamOptions(api_key=API_KEY), registry)
    assert result.content[0] == ThinkingContent(
        thinking="[Reasoning redacted]", thinking_signature=fx.REDACTED_DATA, redacted=True
    )
    replayed = server.requests[1].json()["messages"][1]["content"]
    assert replayed == [
        {"type": "redacted_thinking", "data": fx.REDACTED_DATA},
        {"type": "thinking", "thinking": "Let me answer.", "signature": fx.SIGNATURE},
        {"type": "text", "text": "Done."},
    ]
    check_request_params(server.requests[1].json())


async def test_parallel_tool_calls_stream_partial_arguments(registry: ProviderRegistry) -> None:
    """Two tool calls: partial arguments are visible mid-stream, final arguments are parsed."""
    partials: list[dict[str, Any]] = []
    async with (
        serve(sse_handler(fx.to_sse(fx.tool_calls_stream()), chunk_size=13)) as server,
        open_http_client(),
    ):
        model = make_model(server)
        async with stream(model, HI, StreamOptions(api_key=API_KEY), registry=registry) as ev:
            async for event in ev:
                if isinstance(event, ToolCallDeltaEvent) and event.content_index == 1:
                    call = event.partial.content[1]
                    assert isinstance(call, ToolCall)
                    partials.append(call.arguments)
            result = await ev.result()
    assert {"path": "src/main.py"} in partials  # the path arrived before offset and limit
    assert partials[-1] == fx.TOOL_ARGS_1
    assert result.stop_reason == "toolUse"
    assert result.tool_calls() == [
        ToolCall(id=fx.TOOL_ID_1, name="read", arguments=fx.TOOL_ARGS_1),
        ToolCall(id=fx.TOOL_ID_2, name="bash", arguments=fx.TOOL_ARGS_2),
    ]


async def test_images_go_as_base64_blocks_in_user_messages_and_tool_results(
    registry: ProviderRegistry,
) -> None:
    """Images become base64 image blocks; an image-only tool result gets a text placeholder."""
    image = ImageContent(data=fx.PNG, mime_type="image/png")
    call = ToolCall(id="toolu_1", name="shot", arguments={})
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="Look"), image], timestamp=fx.T0),
            AssistantMessage(
                content=[call],
                api=API,
                provider="anthropic",
                model="claude-sonnet-4-5",
                stop_reason="toolUse",
                timestamp=fx.T0,
            ),
            ToolResultMessage(
                tool_call_id="toolu_1",
                tool_name="shot",
                content=[image],
                is_error=False,
                timestamp=fx.T0,
            ),
        ]
    )
    async with (
        serve(sse_handler(fx.to_sse(fx.text_stream()))) as server,
        open_http_client(),
    ):
        await collect(make_model(server), context, StreamOptions(api_key=API_KEY), registry)
    body = server.requests[0].json()
    source = {"type": "base64", "media_type": "image/png", "data": fx.PNG}
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Look"},
        {"type": "image", "source": source},
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                {"type": "text", "text": "(see attached image)"},
                {"type": "image", "source": source},
            ],
            "is_error": False,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    check_request_params(body)


async def test_usage_counts_cache_tokens_and_costs_them(registry: ProviderRegistry) -> None:
    """Usage comes from message_start and message_delta; the cost uses the model's prices."""
    async with (
        serve(sse_handler(fx.to_sse(fx.cache_usage_stream()))) as server,
        open_http_client(),
    ):
        model = make_model(server)
        events, result = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
    usage = result.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (
        12,
        150,
        18000,
        2400,
    )
    assert usage.total_tokens == 12 + 150 + 18000 + 2400
    price = model.cost
    assert usage.cost.input == pytest.approx(12 * price.input / 1e6)
    assert usage.cost.cache_read == pytest.approx(18000 * price.cache_read / 1e6)
    assert usage.cost.cache_write == pytest.approx(2400 * price.cache_write / 1e6)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write
    )
    assert events[0].partial.usage.input == 0  # start is pushed before message_start is read
    assert events[1].partial.usage.output == 1  # message_start's usage, before message_delta


async def test_message_delta_without_input_tokens_keeps_message_start_counts(
    registry: ProviderRegistry,
) -> None:
    """Fields a proxy leaves out of message_delta keep the values message_start gave."""
    async with (
        serve(sse_handler(fx.to_sse(fx.text_stream()))) as server,
        open_http_client(),
    ):
        _, result = await collect(make_model(server), HI, StreamOptions(api_key=API_KEY), registry)
    assert (result.usage.input, result.usage.output) == (21, 12)


@pytest.mark.parametrize("name", ["rate_limit", "server_error", "overloaded"])
async def test_http_errors_carry_status_and_body(name: str, registry: ProviderRegistry) -> None:
    """An HTTP error ends the message with "<status> <body JSON>", as the SDK words it."""
    status, body = fx.ERROR_BODIES[name]
    async with serve(error_handler(status, body)) as server, open_http_client():
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry
        )
    assert types_of(events) == ["error"]
    assert result.stop_reason == "error"
    assert result.error_message == f"{status} {json.dumps(body, separators=(',', ':'))}"
    assert body["error"]["message"] in result.error_message


async def test_http_error_with_text_or_empty_body(registry: ProviderRegistry) -> None:
    """A non-JSON error body is quoted as is; an empty one says so."""
    async with (
        serve(
            sequence_handler(error_handler(502, "<html>Bad gateway</html>"), error_handler(503, ""))
        ) as server,
        open_http_client(),
    ):
        model = make_model(server)
        _, first = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
        _, second = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
    assert first.error_message == "502 <html>Bad gateway</html>"
    assert second.error_message == "503 status code (no body)"


async def test_context_overflow_error_is_detected(registry: ProviderRegistry) -> None:
    """Anthropic's "prompt is too long" 400 ends in an error that is_context_overflow recognises."""
    status, body = fx.ERROR_BODIES["overflow"]
    async with serve(error_handler(status, body)) as server, open_http_client():
        model = make_model(server)
        _, result = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
    assert result.stop_reason == "error"
    assert result.error_message is not None and result.error_message.startswith("400 ")
    assert is_context_overflow(result, model.context_window)


async def test_sse_error_event_mid_stream_keeps_partial_content(registry: ProviderRegistry) -> None:
    """An overloaded_error event after some text ends the message with the event's data as error."""
    async with (
        serve(sse_handler(fx.to_sse(fx.overloaded_stream()))) as server,
        open_http_client(),
    ):
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry
        )
    assert types_of(events) == ["start", "text_start", "text_delta", "error"]
    assert result.stop_reason == "error"
    assert result.error_message == json.dumps(fx.OVERLOADED, separators=(",", ":"))
    assert result.content == (TextContent(text="Partial"),)


async def test_dropped_connection_mid_stream_is_an_error(registry: ProviderRegistry) -> None:
    """A connection closed mid-body ends the message with an error and keeps what arrived."""
    body = fx.to_sse(fx.tool_calls_stream())
    cut = body.index(b"fset")  # inside the delta after '\","of'
    async with serve(sse_handler(body, drop_after=cut)) as server, open_http_client():
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry
        )
    assert events[-1].type == "error"
    assert result.stop_reason == "error"
    assert result.error_message and "connection" in result.error_message.lower()
    assert result.text() == "I'll look at both."
    assert result.tool_calls()[0].arguments == {"path": "src/main.py"}


async def test_stream_ending_before_message_stop_is_an_error(registry: ProviderRegistry) -> None:
    """A body that ends cleanly without message_stop is reported as truncated."""
    async with (
        serve(sse_handler(fx.to_sse(fx.truncated_stream()))) as server,
        open_http_client(),
    ):
        _, result = await collect(make_model(server), HI, StreamOptions(api_key=API_KEY), registry)
    assert (result.stop_reason, result.error_message) == (
        "error",
        "Anthropic stream ended before message_stop",
    )


async def test_unreadable_event_and_unknown_stop_reason_are_errors(
    registry: ProviderRegistry,
) -> None:
    """Invalid JSON in an event, and a stop reason pi does not know, end the message with an error."""
    bad_json = b"event: message_start\ndata: {not json\n\n"
    unknown_stop = fx.to_sse(
        [fx.message_start(), fx.message_delta("model_context_window_exceeded", output_tokens=1)]
    )
    missing_field = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0}\n\n'
    )
    async with (
        serve(
            sequence_handler(
                sse_handler(bad_json), sse_handler(unknown_stop), sse_handler(missing_field)
            )
        ) as server,
        open_http_client(),
    ):
        model = make_model(server)
        results = [
            (await collect(model, HI, StreamOptions(api_key=API_KEY), registry))[1]
            for _ in range(3)
        ]
    assert results[0].error_message is not None
    assert results[0].error_message.startswith("Could not parse Anthropic SSE event message_start")
    assert results[1].error_message == "Unhandled stop reason: model_context_window_exceeded"
    assert is_context_overflow(results[1], model.context_window)
    assert results[2].error_message is not None
    assert "content_block" in results[2].error_message
    assert all(r.stop_reason == "error" for r in results)


async def test_cancellation_mid_stream_releases_the_connection(registry: ProviderRegistry) -> None:
    """Aborting while the server hangs ends with "aborted", and the pooled connection is freed."""
    body = fx.to_sse(fx.text_stream())
    hang = sse_handler(body, hang_after=body.index(b"How can"))
    async with (
        serve(sequence_handler(hang, sse_handler(body))) as server,
        open_http_client(limits=httpx2.Limits(max_connections=1)),
    ):
        model = make_model(server)
        async with stream(model, HI, StreamOptions(api_key=API_KEY), registry=registry) as events:
            async for event in events:
                if event.type == "text_delta":
                    events.abort()
            aborted = await events.result()
        with trio.fail_after(5):
            _, second = await collect(model, HI, StreamOptions(api_key=API_KEY), registry)
            while server.connections_open > 1:
                await server.connection_closed.wait()
    assert (aborted.stop_reason, aborted.error_message) == ("aborted", "Request was aborted")
    assert aborted.content == (TextContent(text="Hello!"),)
    assert second.stop_reason == "stop"
    assert server.connections_opened == 2
    assert server.connections_open <= 1


# --------------------------------------------------------------------------- request building


async def _request_body(
    registry: ProviderRegistry,
    context: Context,
    options: StreamOptions,
    *,
    model_id: str = "claude-sonnet-4-5",
    simple: bool = True,
    model_changes: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    async with serve(sse_handler(fx.to_sse(fx.text_stream()))) as server, open_http_client():
        model = make_model(server, model_id, **(model_changes or {}))
        _, result = await collect(model, context, options, registry, simple=simple)
    assert result.stop_reason == "stop", result.error_message
    request = server.requests[0]
    check_request_params(request.json())
    return request.json(), request.headers


@pytest.mark.parametrize(
    ("model_id", "level", "expected_thinking", "effort", "max_tokens"),
    [
        ("claude-sonnet-4-5", "minimal", {"type": "enabled", "budget_tokens": 1024}, None, 33024),
        ("claude-sonnet-4-5", "xhigh", {"type": "enabled", "budget_tokens": 16384}, None, 48384),
        ("claude-sonnet-4-6", "minimal", {"type": "adaptive"}, "low", 32000),
        ("claude-opus-4-6", "xhigh", {"type": "adaptive"}, "max", 32000),
        ("claude-opus-4-7", "medium", {"type": "adaptive"}, "medium", 32000),
    ],
)
async def test_stream_simple_maps_thinking_levels(
    registry: ProviderRegistry,
    model_id: str,
    level: Any,
    expected_thinking: dict[str, Any],
    effort: str | None,
    max_tokens: int,
) -> None:
    """Budget models get budget_tokens on top of max_tokens; adaptive models get an effort."""
    body, headers = await _request_body(
        registry,
        HI,
        StreamOptions(api_key=API_KEY, reasoning=level, temperature=0.3),
        model_id=model_id,
    )
    assert body["thinking"] == {**expected_thinking, "display": "summarized"}
    assert body.get("output_config") == ({"effort": effort} if effort else None)
    assert body["max_tokens"] == max_tokens
    assert "temperature" not in body  # incompatible with thinking
    adaptive = expected_thinking["type"] == "adaptive"
    assert ("anthropic-beta" in headers) is not adaptive


def test_thinking_budget_shrinks_to_leave_room_for_the_answer() -> None:
    """When the model's limit caps max_tokens, the budget leaves 1024 tokens for the answer."""
    assert adjust_max_tokens_for_thinking(8000, 64000, "high") == (24384, 16384)
    assert adjust_max_tokens_for_thinking(8000, 10000, "high") == (10000, 8976)
    assert adjust_max_tokens_for_thinking(100, 64000, "low", ThinkingBudgets(low=500)) == (600, 500)


async def test_stream_simple_without_reasoning_disables_thinking(
    registry: ProviderRegistry,
) -> None:
    """Reasoning models get thinking: disabled and keep temperature when no level is asked."""
    body, _ = await _request_body(registry, HI, StreamOptions(api_key=API_KEY, temperature=0.7))
    assert body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 32000


async def test_stream_options_and_on_payload(registry: ProviderRegistry) -> None:
    """provider_options set thinking and tool choice; on_payload may replace the body."""
    seen: list[Any] = []

    async def on_payload(body: Any, model: Model) -> Any:
        seen.append((dict(body), model.id))
        return {**body, "max_tokens": 77}

    tool = Tool(name="read", description="Read", parameters={"type": "object", "properties": {}})
    options = StreamOptions(
        api_key=API_KEY,
        on_payload=on_payload,
        provider_options={"thinking_enabled": True, "effort": "low", "tool_choice": "any"},
    )
    body, _ = await _request_body(
        registry,
        Context(messages=[user("Hi")], tools=[tool]),
        options,
        model_id="claude-opus-4-6",
        simple=False,
    )
    assert seen[0][1] == "claude-opus-4-6"
    assert seen[0][0]["max_tokens"] == 128000 // 3
    assert body["max_tokens"] == 77
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "low"}
    assert body["tool_choice"] == {"type": "any"}


def test_options_accept_snake_and_camel_case() -> None:
    """provider_options keys may use pi's camelCase or snake_case; unknown keys are ignored."""
    assert AnthropicOptions.from_mapping(
        {"thinkingEnabled": True, "thinking_budget_tokens": 5, "interleavedThinking": None, "x": 1}
    ) == AnthropicOptions(thinking_enabled=True, thinking_budget_tokens=5)


async def test_long_cache_retention_from_environment(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PI_CACHE_RETENTION=long gives 1h breakpoints unless the model's compat forbids it."""
    monkeypatch.setenv("PI_CACHE_RETENTION", "long")
    body, _ = await _request_body(registry, HI, StreamOptions(api_key=API_KEY))
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {
        "type": "ephemeral",
        "ttl": "1h",
    }
    body, _ = await _request_body(
        registry,
        HI,
        StreamOptions(api_key=API_KEY),
        model_changes={"compat": {"supportsLongCacheRetention": False}},
    )
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_fine_grained_tool_streaming_beta_without_eager_streaming(
    registry: ProviderRegistry,
) -> None:
    """A model without eager tool input streaming gets the fine-grained beta, no eager flag."""
    tool = Tool(name="read", description="Read", parameters={"type": "object", "properties": {}})
    body, headers = await _request_body(
        registry,
        Context(messages=[user("Hi")], tools=[tool]),
        StreamOptions(api_key=API_KEY),
        model_changes={"compat": {"supportsEagerToolInputStreaming": False}},
    )
    assert "eager_input_streaming" not in body["tools"][0]
    assert headers["anthropic-beta"] == (
        "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"
    )


async def test_headers_merge_model_and_option_headers(registry: ProviderRegistry) -> None:
    """Model headers, then option headers, override the defaults case-insensitively."""
    _, headers = await _request_body(
        registry,
        HI,
        StreamOptions(api_key=API_KEY, headers={"X-Trace": "1", "Anthropic-Version": "2099-01-01"}),
        model_changes={"headers": {"X-Trace": "0", "X-Model": "m"}},
    )
    assert (headers["x-trace"], headers["x-model"]) == ("1", "m")
    assert headers["anthropic-version"] == "2099-01-01"


async def test_oauth_token_is_a_plain_bearer_token_by_default(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the opt-in, an sk-ant-oat token is sent as a bearer token and nothing imitates
    Claude Code (no identity headers or betas, no system line, tool names as given)."""
    monkeypatch.delenv("PITRIO_ANTHROPIC_CLAUDE_CODE_IMITATION", raising=False)
    token = "sk-ant-oat01-abc"
    tool = Tool(name="read", description="Read", parameters={"type": "object", "properties": {}})
    async with serve(sse_handler(fx.to_sse(fx.text_stream()))) as server, open_http_client():
        context = Context(system_prompt="Sys", messages=[user("Hi")], tools=[tool])
        await collect(make_model(server), context, StreamOptions(api_key=token), registry)
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in request.headers
    assert "claude-code" not in request.headers.get("anthropic-beta", "")
    assert "oauth" not in request.headers.get("anthropic-beta", "")
    assert not request.headers.get("user-agent", "").startswith("claude-cli")
    assert "x-app" not in request.headers
    body = request.json()
    assert [b["text"] for b in body["system"]] == ["Sys"]
    assert body["tools"][0]["name"] == "read"


async def test_oauth_token_uses_claude_code_identity_when_opted_in(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PITRIO_ANTHROPIC_CLAUDE_CODE_IMITATION=1, an sk-ant-oat token is a bearer token
    with Claude Code's headers, prompt and tool names (pi's behaviour)."""
    monkeypatch.setenv("PITRIO_ANTHROPIC_CLAUDE_CODE_IMITATION", "1")
    token = "sk-ant-oat01-abc"
    tool = Tool(name="read", description="Read", parameters={"type": "object", "properties": {}})
    body_bytes = fx.to_sse(
        [
            fx.message_start(),
            fx.tool_use_start(0, fx.TOOL_ID_1, "Read"),
            fx.input_json_delta(0, '{"path":"a"}'),
            fx.block_stop(0),
            fx.message_delta("tool_use", output_tokens=3),
            fx.message_stop(),
        ]
    )
    async with serve(sse_handler(body_bytes)) as server, open_http_client():
        context = Context(system_prompt="Sys", messages=[user("Hi")], tools=[tool])
        _, result = await collect(
            make_model(server), context, StreamOptions(api_key=token), registry
        )
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in request.headers
    assert request.headers["anthropic-beta"] == (
        "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14"
    )
    assert request.headers["user-agent"] == "claude-cli/2.1.75"
    assert request.headers["x-app"] == "cli"
    body = request.json()
    assert [b["text"] for b in body["system"]] == [
        "You are Claude Code, Anthropic's official CLI for Claude.",
        "Sys",
    ]
    assert body["tools"][0]["name"] == "Read"
    assert result.tool_calls() == [ToolCall(id=fx.TOOL_ID_1, name="read", arguments={"path": "a"})]


async def test_copilot_and_cloudflare_authentication(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot sends a bearer token and its initiator headers; Cloudflare fills its base URL."""
    async with serve(sse_handler(fx.to_sse(fx.text_stream()))) as server, open_http_client():
        copilot = attrs.evolve(make_model(server), provider="github-copilot")
        await collect(copilot, HI, StreamOptions(api_key="ghu_x"), registry)
        monkeypatch.setenv("CF_TEST_PORT", str(server.port))
        cloudflare = attrs.evolve(
            make_model(server),
            provider="cloudflare-ai-gateway",
            base_url="http://127.0.0.1:{CF_TEST_PORT}/gw",
        )
        await collect(cloudflare, HI, StreamOptions(api_key="cf-key"), registry)
        monkeypatch.delenv("CF_TEST_PORT")
        _, missing = await collect(cloudflare, HI, StreamOptions(api_key="cf-key"), registry)
    copilot_headers = server.requests[0].headers
    assert copilot_headers["authorization"] == "Bearer ghu_x"
    assert (copilot_headers["x-initiator"], copilot_headers["openai-intent"]) == (
        "user",
        "conversation-edits",
    )
    assert "x-api-key" not in copilot_headers
    cf = server.requests[1]
    assert cf.path == "/gw/v1/messages"
    assert cf.headers["cf-aig-authorization"] == "Bearer cf-key"
    assert "x-api-key" not in cf.headers and "authorization" not in cf.headers
    assert missing.error_message == (
        "CF_TEST_PORT is required for provider cloudflare-ai-gateway but is not set."
    )


async def test_missing_api_key(registry: ProviderRegistry) -> None:
    """stream_simple refuses to start without a key; stream fails like the SDK without one."""
    async with serve(sse_handler(fx.to_sse(fx.text_stream()))) as server, open_http_client():
        model = make_model(server)
        simple_events, simple = await collect(model, HI, StreamOptions(), registry)
        _, plain = await collect(model, HI, StreamOptions(), registry, simple=False)
    assert types_of(simple_events) == ["error"]
    assert simple.error_message == "No API key for provider: anthropic"
    assert plain.error_message is not None
    assert plain.error_message.startswith("Could not resolve authentication method")
    assert server.requests == []


async def test_environment_api_key_is_used(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an explicit key the provider's environment variable is read."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    _, headers = await _request_body(registry, HI, StreamOptions())
    assert headers["x-api-key"] == "sk-ant-env"


async def test_user_text_is_sanitised_and_empty_turns_skipped(registry: ProviderRegistry) -> None:
    """Lone surrogates are dropped; blank user messages and blank blocks are left out."""
    context = Context(
        messages=[
            user("   "),
            UserMessage(content=[TextContent(text=" "), TextContent(text="a\ud83db")], timestamp=0),
        ]
    )
    body, _ = await _request_body(
        registry, context, StreamOptions(api_key=API_KEY, cache_retention="none")
    )
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "ab"}]}]
    assert sanitize_surrogates("x\ud83d\ude00y") == "x\U0001f600y"


def test_provider_registration() -> None:
    """register_anthropic registers both stream functions under anthropic-messages."""
    registry = ProviderRegistry()
    register_anthropic(registry)
    assert registry.resolve("anthropic-messages") is ANTHROPIC_PROVIDER
    assert ANTHROPIC_PROVIDER.stream_simple is not None


async def test_long_text_deltas_cut_at_every_byte(registry: ProviderRegistry) -> None:
    """The benchmark stream read one byte at a time gives back exactly its text."""
    body = fx.big_stream(3000)
    expected = "".join(
        json.loads(e.data)["delta"]["text"]
        for e in SSEDecoder().feed(body)
        if e.event == "content_block_delta"
    )
    async with serve(sse_handler(body, chunk_size=1)) as server, open_http_client():
        _, result = await collect(make_model(server), HI, StreamOptions(api_key=API_KEY), registry)
    assert result.text() == expected
    assert result.stop_reason == "stop"


async def test_dropped_connection_handler_is_real(registry: ProviderRegistry) -> None:
    """A server that closes before any byte of the response gives a connection error, no start."""

    async def close_at_once(request: Request, writer: ResponseWriter) -> None:
        raise ConnectionDropped

    async with serve(close_at_once) as server, open_http_client():
        events, result = await collect(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry
        )
    assert types_of(events) == ["error"]
    assert result.stop_reason == "error"
    assert result.error_message


async def test_a_read_of_more_deltas_than_the_output_holds_waits_for_the_consumer(
    registry: ProviderRegistry,
) -> None:
    """A read brings more text deltas than the event stream's buffer holds and the consumer
    is slow: the reader waits for room (it does not drop or reorder), and every delta comes
    out once, in order."""
    body = fx.big_stream(ASSISTANT_STREAM_BUFFER * 80)
    expected = [
        json.loads(e.data)["delta"]["text"]
        for e in SSEDecoder().feed(body)
        if e.event == "content_block_delta"
    ]
    assert len(expected) > 3 * ASSISTANT_STREAM_BUFFER
    async with (
        serve(sse_handler(body)) as server,
        open_http_client(),
        stream_simple(
            make_model(server), HI, StreamOptions(api_key=API_KEY), registry=registry
        ) as events,
    ):
        deltas = []
        async for event in events:
            await trio.lowlevel.checkpoint()  # the producer runs on while this consumer is away
            if isinstance(event, TextDeltaEvent):
                deltas.append(event.delta)
        result = await events.result()
    assert deltas == expected
    assert result.text() == "".join(expected)
    assert result.stop_reason == "stop"


async def test_text_deltas_that_are_repaired_or_malformed(registry: ProviderRegistry) -> None:
    """A text delta with a raw control character in its text is repaired as pi does; a text
    delta without its text ends the message with an error that names the event."""
    start = fx.to_sse([fx.message_start(), fx.text_start(0)])
    raw_tab = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"a\tb"}}\n\n'
    )
    no_text = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta"}}\n\n'
    )
    end = fx.to_sse(
        [fx.block_stop(0), fx.message_delta("end_turn", output_tokens=3), fx.message_stop()]
    )
    async with (
        serve(
            sequence_handler(sse_handler(start + raw_tab + end), sse_handler(start + no_text))
        ) as server,
        open_http_client(),
    ):
        model = make_model(server)
        repaired = (await collect(model, HI, StreamOptions(api_key=API_KEY), registry))[1]
        malformed = (await collect(model, HI, StreamOptions(api_key=API_KEY), registry))[1]
    assert (repaired.stop_reason, repaired.text()) == ("stop", "a\tb")
    assert malformed.stop_reason == "error"
    assert malformed.error_message is not None
    assert malformed.error_message.startswith(
        "Malformed Anthropic SSE event content_block_delta (KeyError: 'text')"
    )
