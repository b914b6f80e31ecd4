"""The bedrock-converse-stream provider over real loopback HTTP and binary event-stream frames."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import unquote

import attrs
import pytest
import trio

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
    ToolResultMessage,
    UserMessage,
    default_registry,
    get_model,
    get_models,
)
from pitrio.providers._api import stream, stream_simple
from pitrio.providers._http import open_http_client
from pitrio.providers.bedrock import API, BEDROCK_PROVIDER, BedrockOptions, register_bedrock
from pitrio.providers.bedrock._request import build_command

import fixtures_bedrock as fx
from loopback import LoopbackServer, error_handler, sequence_handler, serve, sse_handler

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS_VARS = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_BEDROCK_SKIP_AUTH",
    "AWS_BEDROCK_FORCE_CACHE",
    "PI_CACHE_RETENTION",
)
T0 = 1_700_000_000_000
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image bytes").decode()


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key")


@pytest.fixture
def registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    register_bedrock(registry)
    return registry


def make_model(server: LoopbackServer, model_id: str = CLAUDE, **changes: Any) -> Model:
    return attrs.evolve(get_model("amazon-bedrock", model_id), base_url=server.url(), **changes)


def handler(events: list[fx.Event], **kwargs: Any) -> Any:
    return sse_handler(fx.to_eventstream(events), headers=fx.HEADERS, **kwargs)


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=T0)


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


# --------------------------------------------------------------------------- registration


def test_every_catalogue_bedrock_model_resolves_to_this_provider() -> None:
    """Each of the catalogue's bedrock-converse-stream models resolves to the Bedrock provider."""
    models = [m for m in get_models("amazon-bedrock") if m.api == API]
    assert len(models) == 93
    assert all(default_registry.resolve(m.api) is BEDROCK_PROVIDER for m in models)


# --------------------------------------------------------------------------- text


@pytest.mark.parametrize("chunk_size", [None, 1, 7, 64])
async def test_text_streams_in_pi_event_order(
    registry: ProviderRegistry, chunk_size: int | None
) -> None:
    """A text answer gives start, text_start, one delta per event, text_end and done, however the frames are cut."""
    async with serve(handler(fx.text_stream(), chunk_size=chunk_size)) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert types_of(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert message.text() == fx.TEXT
    assert message.stop_reason == "stop"
    assert message.api == API and message.provider == "amazon-bedrock" and message.model == CLAUDE
    request = server.requests[0]
    assert request.method == "POST"
    assert request.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request.headers["authorization"] == "Bearer bedrock-api-key"
    assert request.headers["content-type"] == "application/json"


async def test_request_has_pi_shape(registry: ProviderRegistry) -> None:
    """The body has pi's messages, system with a cache point, inferenceConfig and toolConfig."""
    tool = Tool(name="read", description="Read a file.", parameters={"type": "object"})
    context = Context(system_prompt="Be brief.", messages=[user("Hi")], tools=[tool])
    options = StreamOptions(max_tokens=500, temperature=0.2)
    async with serve(handler(fx.text_stream())) as server:
        await collect(make_model(server), context, options, registry, simple=False)
    body = server.requests[0].json()
    assert body == {
        "messages": [
            {"role": "user", "content": [{"text": "Hi"}, {"cachePoint": {"type": "default"}}]}
        ],
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "inferenceConfig": {"maxTokens": 500, "temperature": 0.2},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "read",
                        "description": "Read a file.",
                        "inputSchema": {"json": {"type": "object"}},
                    }
                }
            ]
        },
    }


async def test_long_retention_and_non_claude_models(registry: ProviderRegistry) -> None:
    """Long retention asks for a one-hour cache; a Nova model gets no cache points at all."""
    async with serve(handler(fx.text_stream())) as server:
        await collect(make_model(server), HI, StreamOptions(cache_retention="long"), registry)
        await collect(make_model(server, "amazon.nova-pro-v1:0"), HI, StreamOptions(), registry)
    long_body, nova_body = (r.json() for r in server.requests)
    assert long_body["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert nova_body["system"] == [{"text": "Be brief."}]
    assert nova_body["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]


# --------------------------------------------------------------------------- thinking


async def test_thinking_streams_with_its_signature(registry: ProviderRegistry) -> None:
    """Reasoning deltas become a thinking block whose signature is the concatenated pieces."""
    async with serve(handler(fx.thinking_stream(), chunk_size=13)) as server:
        events, message = await collect(
            make_model(server), HI, StreamOptions(reasoning="medium"), registry
        )
    assert types_of(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
    assert thinking.thinking == fx.THINKING
    assert thinking.thinking_signature == fx.SIGNATURE
    assert text.text == "12231"


async def test_budget_thinking_request_fields(registry: ProviderRegistry) -> None:
    """A budget Claude model gets enabled thinking, its budget added to maxTokens, and the interleaved beta."""
    async with serve(handler(fx.thinking_stream())) as server:
        await collect(make_model(server), HI, StreamOptions(reasoning="medium"), registry)
    body = server.requests[0].json()
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }
    assert body["inferenceConfig"] == {"maxTokens": 32000 + 8192}


async def test_adaptive_thinking_request_fields(registry: ProviderRegistry) -> None:
    """Opus 4.7 thinks adaptively with its native xhigh effort and no beta."""
    async with serve(handler(fx.thinking_stream())) as server:
        await collect(
            make_model(server, "anthropic.claude-opus-4-7"),
            HI,
            StreamOptions(reasoning="xhigh"),
            registry,
        )
    body = server.requests[0].json()
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "xhigh"},
    }
    assert body["inferenceConfig"] == {"maxTokens": 32000}


async def test_no_thinking_fields_without_reasoning(registry: ProviderRegistry) -> None:
    """Without a reasoning level no additionalModelRequestFields are sent."""
    async with serve(handler(fx.text_stream())) as server:
        await collect(make_model(server), HI, StreamOptions(), registry)
    assert "additionalModelRequestFields" not in server.requests[0].json()


# --------------------------------------------------------------------------- tool calls


async def test_tool_calls_stream_their_arguments(registry: ProviderRegistry) -> None:
    """toolUse starts and input pieces become toolcall events; the arguments parse at the end."""
    async with serve(handler(fx.tool_calls_stream(), chunk_size=29)) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "toolUse"
    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (fx.TOOL_ID_1, "read", fx.TOOL_ARGS_1),
        (fx.TOOL_ID_2, "bash", fx.TOOL_ARGS_2),
    ]
    deltas = [e for e in events if e.type == "toolcall_delta" and e.content_index == 1]
    assert "".join(e.delta for e in deltas) == fx.TOOL_JSON_1
    assert len(deltas) == len(fx.TOOL_JSON_1) // 9 + 1
    # Partial arguments are parsed as they grow.
    assert deltas[1].partial.content[1].arguments == {"path": "src/main."}
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.tool_call.arguments for e in ends] == [fx.TOOL_ARGS_1, fx.TOOL_ARGS_2]
    assert types_of(events)[-1] == "done" and events[-1].reason == "toolUse"


async def test_tool_history_and_images_in_the_request(registry: ProviderRegistry) -> None:
    """Tool calls replay as toolUse, consecutive results share one user message, images go as base64 blocks."""
    call_1 = ToolCall(id=fx.TOOL_ID_1, name="read", arguments=fx.TOOL_ARGS_1)
    call_2 = ToolCall(id=fx.TOOL_ID_2, name="bash", arguments=fx.TOOL_ARGS_2)
    async with serve(handler(fx.text_stream())) as server:
        model = make_model(server)
        assistant = AssistantMessage(
            content=[TextContent(text="Let me look."), call_1, call_2],
            api=API,
            provider=model.provider,
            model=model.id,
            stop_reason="toolUse",
            timestamp=T0,
        )
        context = Context(
            messages=[
                UserMessage(
                    content=[
                        TextContent(text="What is this?"),
                        ImageContent(data=PNG, mime_type="image/png"),
                    ],
                    timestamp=T0,
                ),
                assistant,
                ToolResultMessage(
                    tool_call_id=fx.TOOL_ID_1,
                    tool_name="read",
                    content=[
                        TextContent(text="print(1)"),
                        ImageContent(data=PNG, mime_type="image/jpeg"),
                    ],
                    is_error=False,
                    timestamp=T0,
                ),
                ToolResultMessage(
                    tool_call_id=fx.TOOL_ID_2,
                    tool_name="bash",
                    content=[TextContent(text="not found")],
                    is_error=True,
                    timestamp=T0,
                ),
            ]
        )
        await collect(model, context, StreamOptions(cache_retention="none"), registry)
    messages = server.requests[0].json()["messages"]
    assert messages == [
        {
            "role": "user",
            "content": [
                {"text": "What is this?"},
                {"image": {"format": "png", "source": {"bytes": PNG}}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": fx.TOOL_ID_1, "name": "read", "input": fx.TOOL_ARGS_1}},
                {"toolUse": {"toolUseId": fx.TOOL_ID_2, "name": "bash", "input": fx.TOOL_ARGS_2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": fx.TOOL_ID_1,
                        "content": [
                            {"text": "print(1)"},
                            {"image": {"format": "jpeg", "source": {"bytes": PNG}}},
                        ],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": fx.TOOL_ID_2,
                        "content": [{"text": "not found"}],
                        "status": "error",
                    }
                },
            ],
        },
    ]


async def test_unknown_image_type_is_an_error(registry: ProviderRegistry) -> None:
    """An image type Bedrock does not know ends the message before any request."""
    context = Context(
        messages=[
            UserMessage(content=[ImageContent(data=PNG, mime_type="image/bmp")], timestamp=T0)
        ]
    )
    async with serve(handler(fx.text_stream())) as server:
        _, message = await collect(make_model(server), context, StreamOptions(), registry)
    assert message.stop_reason == "error"
    assert message.error_message == "Unknown image type: image/bmp"
    assert server.requests == []


# --------------------------------------------------------------------------- usage


async def test_usage_and_cost_come_from_metadata(registry: ProviderRegistry) -> None:
    """metadata's usage, cache read and write included, sets the usage and its cost at the model's prices."""
    async with serve(handler(fx.cache_usage_stream())) as server:
        model = make_model(server)
        _, message = await collect(model, HI, StreamOptions(), registry)
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (12, 5, 3000, 1500)
    assert usage.total_tokens == 12 + 5 + 3000 + 1500
    price = model.cost
    assert usage.cost.input == pytest.approx(12 * price.input / 1e6)
    assert usage.cost.output == pytest.approx(5 * price.output / 1e6)
    assert usage.cost.cache_read == pytest.approx(3000 * price.cache_read / 1e6)
    assert usage.cost.cache_write == pytest.approx(1500 * price.cache_write / 1e6)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write
    )
    assert usage.cost.total > 0


# --------------------------------------------------------------------------- stop reasons and failures


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "toolUse"),
        ("guardrail_intervened", "error"),
        ("content_filtered", "error"),
        ("malformed_model_output", "error"),
        ("malformed_tool_use", "error"),
    ],
)
async def test_every_stop_reason_maps_as_pi(
    registry: ProviderRegistry, reason: str, expected: str
) -> None:
    """Each ConverseStream stop reason maps to pi's; the ones pi calls errors end with its message."""
    async with serve(handler(fx.text_stream(reason))) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == expected
    if expected == "error":
        assert events[-1].type == "error"
        assert message.error_message == "An unknown error occurred"
        assert message.text() == fx.TEXT  # what came is kept
    else:
        assert events[-1].type == "done" and events[-1].reason == expected


async def test_exception_frame_ends_with_its_message(registry: ProviderRegistry) -> None:
    """An exception message in the stream ends the message with pi's prefix and the exception's text."""
    body = fx.to_eventstream([fx.message_start(), fx.text_delta(0, "Partial")])
    body += fx.exception_frame(
        "ThrottlingException", "Too many tokens, please wait before trying again."
    )
    async with serve(sse_handler(body, headers=fx.HEADERS)) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert events[-1].type == "error"
    assert message.stop_reason == "error"
    assert (
        message.error_message
        == "Throttling error: Too many tokens, please wait before trying again."
    )
    assert message.text() == "Partial"


async def test_unknown_exception_type_keeps_its_name(registry: ProviderRegistry) -> None:
    """An exception pi has no prefix for is named as it came."""
    body = fx.exception_frame("AccessDeniedException", "You do not have access.")
    async with serve(sse_handler(body, headers=fx.HEADERS)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.error_message == "AccessDeniedException: You do not have access."


async def test_stream_cut_mid_frame_is_an_error(registry: ProviderRegistry) -> None:
    """A connection dropped inside a frame ends the message with stopReason error."""
    body = fx.to_eventstream(fx.text_stream())
    async with serve(sse_handler(body, headers=fx.HEADERS, drop_after=len(body) // 2)) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert events[-1].type == "error"
    assert message.stop_reason == "error"
    assert message.error_message and "terminated" in message.error_message


async def test_body_ending_inside_a_frame_is_an_error(registry: ProviderRegistry) -> None:
    """A body that ends cleanly but inside a frame is reported as cut short."""
    body = fx.to_eventstream(fx.text_stream())[:-10]
    async with serve(sse_handler(body, headers=fx.HEADERS)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith(
        "Bedrock stream terminated in the middle of an event stream message"
    )


async def test_stream_without_message_stop_is_an_error(registry: ProviderRegistry) -> None:
    """Whole frames that never reach messageStop make an error, not a complete answer."""
    events = fx.text_stream()[:5]
    async with serve(handler(events)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "error"
    assert message.error_message == "Bedrock stream ended before messageStop"
    assert message.text() == fx.TEXT


async def test_a_200_that_is_not_a_stream_is_refused(registry: ProviderRegistry) -> None:
    """A successful JSON answer (a non-streaming Converse response) is refused as not an event stream."""
    document = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hi"}]}},
        "stopReason": "end_turn",
    }
    async with serve(error_handler(200, document)) as server:
        events, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert events[-1].type == "error"
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Not an event stream: the server answered 200")
    assert "application/json" in message.error_message


async def test_an_unlabelled_event_stream_is_accepted(registry: ProviderRegistry) -> None:
    """Frames served under another content type are read when the first prelude is valid."""
    body = fx.to_eventstream(fx.text_stream())
    async with serve(
        sse_handler(body, headers={"content-type": "application/octet-stream"}, chunk_size=5)
    ) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "stop" and message.text() == fx.TEXT


@pytest.mark.parametrize("where", ["payload", "prelude"])
async def test_crc_mismatch_is_an_error(registry: ProviderRegistry, where: str) -> None:
    """A corrupted byte in a frame's payload or prelude fails that CRC check."""
    first = fx.event_frame(*fx.message_start())
    second = bytearray(fx.event_frame(*fx.text_delta(0, "Hello")))
    if where == "payload":
        second[-8] ^= 0x01
    else:
        second[5] ^= 0x01
    async with serve(sse_handler(first + bytes(second), headers=fx.HEADERS)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "error"
    expected = "message CRC mismatch" if where == "payload" else "prelude CRC mismatch"
    assert message.error_message == f"Event stream {expected}"


async def test_error_status_is_worded_as_pi(registry: ProviderRegistry) -> None:
    """A 400 with an AWS error type reads "Validation error: <message>", which the overflow check knows."""
    headers = {
        "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
    }
    answer = {"message": "Input is too long for requested model."}
    async with serve(error_handler(400, answer, headers)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "error"
    assert message.error_message == "Validation error: Input is too long for requested model."


async def test_error_status_without_a_type(registry: ProviderRegistry) -> None:
    """An error status without an AWS error type keeps the status and body, as the other providers."""
    async with serve(error_handler(502, "<html>Bad gateway</html>")) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.error_message == "502 <html>Bad gateway</html>"


async def test_retries_a_503_then_streams(
    registry: ProviderRegistry, autojump_clock: trio.abc.Clock
) -> None:
    """With max_retries a 503 is retried (signed anew) and the next answer is streamed."""
    unavailable = error_handler(
        503, {"message": "busy"}, {"x-amzn-errortype": "ServiceUnavailableException"}
    )
    async with serve(sequence_handler(unavailable, handler(fx.text_stream()))) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(max_retries=1), registry)
    assert message.stop_reason == "stop"
    assert len(server.requests) == 2


async def test_a_silent_server_stalls(
    registry: ProviderRegistry, autojump_clock: trio.abc.Clock
) -> None:
    """A server that stops sending for the stall timeout ends the message with the stall error."""
    body = fx.to_eventstream(fx.text_stream())
    async with serve(sse_handler(body, headers=fx.HEADERS, hang_after=len(body) // 2)) as server:
        _, message = await collect(
            make_model(server), HI, StreamOptions(stall_timeout_ms=5000), registry
        )
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Stream stalled: no data for 5 s")


async def test_abort_releases_the_connection(registry: ProviderRegistry) -> None:
    """Leaving the stream early cancels the request and the server sees the connection close."""
    body = fx.to_eventstream(fx.text_stream())
    handle = sse_handler(body, headers=fx.HEADERS, hang_after=len(body) // 2)
    async with serve(handle) as server, open_http_client():
        async with stream_simple(
            make_model(server), HI, StreamOptions(), registry=registry
        ) as events:
            async for event in events:
                if event.type == "text_delta":
                    break
        assert server.connections_opened == 1
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
    assert server.connections_open == 0


async def test_on_payload_replaces_the_command(registry: ProviderRegistry) -> None:
    """on_payload sees pi's command input (modelId included) and its result is what is sent."""
    seen: list[dict[str, Any]] = []

    def on_payload(body: Any, model: Model) -> Any:
        seen.append(body)
        return {
            **body,
            "modelId": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "inferenceConfig": {"maxTokens": 7},
        }

    async with serve(handler(fx.text_stream())) as server:
        await collect(make_model(server), HI, StreamOptions(on_payload=on_payload), registry)
    assert seen[0]["modelId"] == CLAUDE
    request = server.requests[0]
    assert (
        unquote(request.path)
        == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream"
    )
    assert json.loads(request.body)["inferenceConfig"] == {"maxTokens": 7}
    assert "modelId" not in request.json()


# --------------------------------------------------------------------------- request rules


def command_for(model: Model, options: StreamOptions, **bedrock: Any) -> dict[str, Any]:
    tool = Tool(name="read", description="Read.", parameters={"type": "object"})
    context = Context(system_prompt="S", messages=[user("Hi")], tools=[tool])
    return build_command(model, context, options, BedrockOptions(**bedrock), None)


def test_gov_cloud_leaves_out_the_thinking_display() -> None:
    """A us-gov model id gets thinking without display, as pi (GovCloud rejects the field)."""
    model = attrs.evolve(get_model("amazon-bedrock", CLAUDE), id="us-gov." + CLAUDE)
    fields = command_for(model, StreamOptions(reasoning="low"))["additionalModelRequestFields"]
    assert fields["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_application_profile_is_recognised_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An application inference profile ARN named after Claude Opus 4.6 thinks adaptively and caches."""
    model = attrs.evolve(
        get_model("amazon-bedrock", CLAUDE),
        id="arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
        name="My Claude Opus 4.6 profile",
    )
    command = command_for(model, StreamOptions(reasoning="high"))
    assert command["additionalModelRequestFields"]["thinking"]["type"] == "adaptive"
    assert command["system"][-1] == {"cachePoint": {"type": "default"}}


def test_force_cache_for_unnamed_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile whose id and name say nothing of Claude gets cache points only with AWS_BEDROCK_FORCE_CACHE=1."""
    model = attrs.evolve(
        get_model("amazon-bedrock", CLAUDE),
        id="arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
        name="prod profile",
    )
    assert len(command_for(model, StreamOptions())["system"]) == 1
    monkeypatch.setenv("AWS_BEDROCK_FORCE_CACHE", "1")
    assert len(command_for(model, StreamOptions())["system"]) == 2


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"auto": {}}),
        ("any", {"any": {}}),
        ({"type": "tool", "name": "read"}, {"tool": {"name": "read"}}),
    ],
)
def test_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    """toolChoice maps to Bedrock's union; "none" sends no toolConfig at all."""
    model = get_model("amazon-bedrock", CLAUDE)
    assert (
        command_for(model, StreamOptions(), tool_choice=choice)["toolConfig"]["toolChoice"]
        == expected
    )
    assert "toolConfig" not in command_for(model, StreamOptions(), tool_choice="none")


def test_request_metadata_and_interleaved_opt_out() -> None:
    """requestMetadata is passed through; interleavedThinking false drops the beta."""
    model = get_model("amazon-bedrock", CLAUDE)
    options = BedrockOptions.from_mapping(
        {"requestMetadata": {"team": "infra"}, "interleavedThinking": False}
    )
    context = Context(messages=[user("Hi")])
    command = build_command(model, context, StreamOptions(reasoning="high"), options, None)
    assert command["requestMetadata"] == {"team": "infra"}
    assert "anthropic_beta" not in command["additionalModelRequestFields"]


async def test_an_empty_event_stream_is_refused(registry: ProviderRegistry) -> None:
    """A 200 labelled as an event stream but with no bytes at all is not a stream."""
    async with serve(sse_handler(b"", headers=fx.HEADERS)) as server:
        _, message = await collect(make_model(server), HI, StreamOptions(), registry)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "an empty body" in message.error_message
