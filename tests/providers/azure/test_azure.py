"""The azure-openai-responses provider over real loopback HTTP.

The server checks what pi's ``AzureOpenAI`` client would send (path, ``api-version`` query,
``api-key`` header, deployment as ``model``); the streams are the Responses fixtures, which
are validated against the openai SDK's event types in test_openai_responses.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import httpx2
import pytest
import trio
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

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
    default_catalogue,
    get_model,
    stream,
)
from pitrio.providers._builtins import register_builtin_providers
from pitrio.providers._http import open_http_client
from pitrio.providers.azure import (
    AzureOptions,
    azure_url,
    normalize_azure_base_url,
    parse_deployment_name_map,
    register_azure_openai_responses,
)
from pitrio.providers.openai_responses._request import NO_FINAL_EVENT

from fixtures_openai_responses import (
    ENCRYPTED,
    OVERFLOW_BODY,
    PARIS_CHUNKS,
    PNG_1PX,
    SUMMARY_PARTS,
    TEXT_DELTAS,
    TOKYO_CHUNKS,
    ResponsesStream,
    chunked,
    error_event_stream,
    failed_stream,
    incomplete_stream,
    text_stream,
    thinking_stream,
    tool_calls_stream,
    usage_stream,
)
from loopback import error_handler, sequence_handler, serve, sse_bytes, sse_handler
from sdk_check import validate_params
from stream_helpers import ask, run_types

KEY = "azure-key-0123"
AZURE_ENV = (
    "AZURE_OPENAI_BASE_URL",
    "AZURE_OPENAI_RESOURCE_NAME",
    "AZURE_OPENAI_API_VERSION",
    "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
    "AZURE_OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def registry() -> Iterator[ProviderRegistry]:
    registry = ProviderRegistry()
    register_azure_openai_responses(registry)
    yield registry


def _model(server: Any, model_id: str = "gpt-5", **changes: Any) -> Model:
    """A catalogue Azure model pointed at the server (the catalogue has no base URL)."""
    found = get_model("azure-openai-responses", model_id)
    return attrs.evolve(found, base_url=server.url("/openai/v1"), **changes)


# --------------------------------------------------------------------------- request


async def test_text_request_url_headers_and_body(registry: ProviderRegistry) -> None:
    """pi's Azure request: /responses?api-version=v1, api-key, the body without store."""
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        options = StreamOptions(api_key=KEY, session_id="sess-1", headers={"x-extra": "1"})
        types, message = await run_types(_model(server, "gpt-4.1"), ask(), options, registry)
    assert types == ["start", "text_start", *["text_delta"] * len(TEXT_DELTAS), "text_end", "done"]
    assert message.text() == "".join(TEXT_DELTAS)
    assert (message.api, message.provider, message.model) == (
        "azure-openai-responses",
        "azure-openai-responses",
        "gpt-4.1",
    )
    request = server.requests[0]
    assert request.path == "/openai/v1/responses"
    assert request.query == {"api-version": ["v1"]}
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers
    assert "session_id" not in request.headers
    assert request.headers["x-extra"] == "1"
    body = request.json()
    assert body == {
        "model": "gpt-4.1",
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?"}]},
        ],
        "stream": True,
        "prompt_cache_key": "sess-1",
    }
    validate_params(ResponseCreateParamsStreaming, body)


async def test_base_url_version_and_deployment_from_the_environment(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AZURE_OPENAI_BASE_URL beats the model's URL; the version and deployment map apply."""
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        monkeypatch.setenv("AZURE_OPENAI_BASE_URL", server.url("/custom/base/") + "  ")
        monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
        monkeypatch.setenv(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP", " gpt-4o = prod-4o , gpt-5=prod-5=x,broken, =y"
        )
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        model = attrs.evolve(get_model("azure-openai-responses", "gpt-4o"), base_url="http://x")
        _, message = await run_types(model, ask(), StreamOptions(), registry)
    assert message.stop_reason == "stop", message.error_message
    request = server.requests[0]
    assert request.path == "/custom/base/responses"
    assert request.query == {"api-version": ["2025-04-01-preview"]}
    assert request.headers["api-key"] == KEY
    assert request.json()["model"] == "prod-4o"


async def test_options_beat_the_environment(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """azureBaseUrl, azureApiVersion and azureDeploymentName (pi's camelCase) win; a caller's
    api-key header replaces the key, as the SDK's default headers do."""
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "http://127.0.0.1:9/unused")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-5=from-map")
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        options = StreamOptions(
            api_key=KEY,
            headers={"API-Key": "caller-key"},
            provider_options={
                "azureBaseUrl": server.url("/deploy"),
                "azureApiVersion": "preview",
                "azureDeploymentName": "my-deployment",
            },
        )
        _, message = await run_types(_model(server), ask(), options, registry, simple=True)
    assert message.stop_reason == "stop", message.error_message
    request = server.requests[0]
    assert (request.path, request.query) == ("/deploy/responses", {"api-version": ["preview"]})
    assert request.headers["api-key"] == "caller-key"
    assert request.json()["model"] == "my-deployment"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://res.openai.azure.com", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai/", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com?x=1", "https://res.openai.azure.com/openai/v1"),
        ("https://res.cognitiveservices.azure.com", "https://res.cognitiveservices.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai/v1/", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/other", "https://res.openai.azure.com/other"),
        ("https://proxy.example.com", "https://proxy.example.com"),
        ("https://proxy.example.com/openai", "https://proxy.example.com/openai"),
        ("  http://127.0.0.1:8080/v1//  ", "http://127.0.0.1:8080/v1"),
    ],
)  # fmt: skip
def test_azure_hosts_get_the_openai_v1_path(given: str, expected: str) -> None:
    """Azure hosts with an empty or /openai path get /openai/v1; other URLs are kept."""
    assert normalize_azure_base_url(given) == expected


def test_resource_name_builds_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resource name (option or env) gives https://{name}.openai.azure.com/openai/v1."""
    model = get_model("azure-openai-responses", "gpt-5")
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "from-env")
    assert azure_url(model, AzureOptions()) == (
        "https://from-env.openai.azure.com/openai/v1/responses?api-version=v1"
    )
    options = AzureOptions.from_mapping({"azure_resource_name": "mine", "azure_api_version": "x"})
    assert azure_url(model, options) == (
        "https://mine.openai.azure.com/openai/v1/responses?api-version=x"
    )
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "https://b.openai.azure.com/openai")
    assert azure_url(model, options).startswith("https://b.openai.azure.com/openai/v1/responses")


def test_deployment_map_is_parsed_as_pi_parses_it() -> None:
    """Entries trimmed, incomplete ones skipped, text after a second '=' dropped, last wins."""
    assert parse_deployment_name_map(" a = b ,, c=, =d, e, f=g=h, a=z ") == {"a": "z", "f": "g"}
    assert parse_deployment_name_map(None) == {}


async def test_missing_base_url_and_key_are_errors(registry: ProviderRegistry) -> None:
    """Without a key, then without any base URL, the stream ends with pi's messages."""
    model = get_model("azure-openai-responses", "gpt-5")
    _, no_key = await run_types(model, ask(), StreamOptions(), registry)
    assert no_key.stop_reason == "error"
    assert no_key.error_message is not None
    assert no_key.error_message.startswith("Azure OpenAI API key is required")
    _, no_url = await run_types(model, ask(), StreamOptions(api_key=KEY), registry)
    assert no_url.error_message is not None
    assert no_url.error_message.startswith("Azure OpenAI base URL is required")
    _, simple = await run_types(model, ask(), StreamOptions(), registry, simple=True)
    assert simple.error_message == "No API key for provider: azure-openai-responses"


# --------------------------------------------------------------------------- streams


async def test_thinking_streams_and_the_reasoning_item_is_replayed(
    registry: ProviderRegistry,
) -> None:
    """Reasoning summaries stream as thinking; the next turn sends the item back verbatim."""
    fixture = thinking_stream()
    async with serve(sse_handler(fixture.sse(), chunk_size=11)) as server, open_http_client():
        model = _model(server, "gpt-5.2")
        options = StreamOptions(api_key=KEY, reasoning="xhigh")
        types, message = await run_types(model, ask(), options, registry, simple=True)
        thinking, text = message.content
        assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
        assert thinking.thinking == "\n\n".join("".join(part) for part in SUMMARY_PARTS)
        assert types.count("thinking_delta") == sum(len(p) + 1 for p in SUMMARY_PARTS)
        follow_up = Context(
            messages=[*ask().messages, message, UserMessage(content="And 3+3?", timestamp=2)]
        )
        await run_types(model, follow_up, options, registry, simple=True)
    first, second = (request.json() for request in server.requests)
    assert first["reasoning"] == {"effort": "xhigh", "summary": "auto"}
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["max_output_tokens"] == 32_000
    assert first["input"][0]["role"] == "developer"
    assert second["input"][1] == fixture.output[0]
    assert second["input"][1]["encrypted_content"] == ENCRYPTED
    validate_params(ResponseCreateParamsStreaming, second)


async def test_reasoning_off_is_not_sent_when_the_map_says_null(
    registry: ProviderRegistry,
) -> None:
    """gpt-5 maps "off" to null: no reasoning field; o3 (no map) says effort "none"."""
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        await run_types(_model(server, "gpt-5"), ask(), StreamOptions(api_key=KEY), registry)
        await run_types(_model(server, "o3"), ask(), StreamOptions(api_key=KEY), registry)
    gpt5, o3 = (request.json() for request in server.requests)
    assert "reasoning" not in gpt5
    assert o3["reasoning"] == {"effort": "none"}


async def test_tool_calls_stream_partial_arguments(registry: ProviderRegistry) -> None:
    """Two calls stream their arguments in 7-byte pieces; ids are call_id|item_id."""
    async with serve(sse_handler(chunked(tool_calls_stream(), 7))) as server, open_http_client():
        tool = Tool(name="get_weather", description="d", parameters={"type": "object"})
        context = attrs.evolve(ask("Weather?"), tools=[tool])
        async with stream(
            _model(server), context, StreamOptions(api_key=KEY), registry=registry
        ) as events:
            partial = [
                (event.content_index, event.partial.content[event.content_index])
                async for event in events
                if isinstance(event, ToolCallDeltaEvent)
            ]
            message = await events.result()
    assert len(partial) == len(PARIS_CHUNKS) + len(TOKYO_CHUNKS)
    paris = [block for index, block in partial if index == 1]
    assert isinstance(paris[2], ToolCall) and paris[2].arguments == {"city": "Pa"}
    output = tool_calls_stream().output
    assert [(c.id, c.arguments) for c in message.tool_calls()] == [
        (f"call_Paris0123456789abcdef|{output[1]['id']}", {"city": "Paris", "unit": "c"}),
        (f"call_Tokyo0123456789abcdef|{output[2]['id']}", {"city": "Tokyo"}),
    ]
    assert message.stop_reason == "toolUse"
    body = server.requests[0].json()
    assert body["tools"][0]["strict"] is False
    validate_params(ResponseCreateParamsStreaming, body)


async def test_images_go_as_data_urls(registry: ProviderRegistry) -> None:
    """Images in a user message and a tool result are input_image data URLs."""
    image = ImageContent(data=PNG_1PX, mime_type="image/png")
    call = ToolCall(id="call_1|fc_1", name="shot", arguments={})
    turn = AssistantMessage(
        content=[call], api="azure-openai-responses", provider="azure-openai-responses",
        model="gpt-4.1", stop_reason="toolUse", timestamp=2,
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
    async with serve(sse_handler(text_stream().sse())) as server, open_http_client():
        await run_types(_model(server, "gpt-4.1"), context, StreamOptions(api_key=KEY), registry)
    sent = server.requests[0].json()["input"]
    assert sent[0]["content"][1] == {"type": "input_image", "detail": "auto", "image_url": url}
    # The provider's own call keeps both halves of its id (Azure is in pi's provider list).
    assert sent[1] == {
        "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shot",
        "arguments": "{}",
    }  # fmt: skip
    assert sent[2]["output"] == [{"type": "input_image", "detail": "auto", "image_url": url}]


async def test_usage_and_cost_without_tier_pricing(registry: ProviderRegistry) -> None:
    """Cached tokens are apart; Azure prices at the list price whatever tier the answer names."""
    async with serve(sse_handler(usage_stream().sse())) as server, open_http_client():
        model = _model(server, "gpt-5")
        options = StreamOptions(api_key=KEY, provider_options={"service_tier": "flex"})
        _, message = await run_types(model, ask(), options, registry)
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.output) == (20_000, 100_000, 2_000)
    assert usage.cost.input == pytest.approx(20_000 * model.cost.input / 1e6)
    assert usage.cost.cache_read == pytest.approx(100_000 * model.cost.cache_read / 1e6)
    assert usage.cost.output == pytest.approx(2_000 * model.cost.output / 1e6)
    assert "service_tier" not in server.requests[0].json()


@pytest.mark.parametrize(
    ("body", "reason", "error"),
    [
        (text_stream().sse(), "stop", None),
        (tool_calls_stream().sse(), "toolUse", None),
        (incomplete_stream().sse(), "length", None),
        (failed_stream().sse(), "error", "server_error: The model failed to generate a response."),
        (
            error_event_stream().sse(),
            "error",
            "Error Code server_error: The server had an error processing your request.",
        ),
        (
            sse_bytes([("response.created", ResponsesStream().events[0])]),
            "error",
            NO_FINAL_EVENT,
        ),
    ],
    ids=["stop", "toolUse", "length", "response_failed", "error_event", "no_final_event"],
)
async def test_every_stop_reason(
    body: bytes, reason: str, error: str | None, registry: ProviderRegistry
) -> None:
    """Each ending gives its stop reason; failures carry pi's error text."""
    async with serve(sse_handler(body)) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=KEY), registry
        )
    assert message.stop_reason == reason
    assert message.error_message == error
    assert types[-1] == ("error" if error else "done")


async def test_a_stream_cut_short_is_an_error(registry: ProviderRegistry) -> None:
    """A connection dropped mid-stream ends with stopReason error and keeps the text so far."""
    body = text_stream().sse()
    cut = body.index(b'" you today?"')
    async with serve(sse_handler(body, drop_after=cut)) as server, open_http_client():
        _, message = await run_types(_model(server), ask(), StreamOptions(api_key=KEY), registry)
    assert message.stop_reason == "error"
    assert message.error_message and "Connection lost" in message.error_message
    assert message.text() == "".join(TEXT_DELTAS[:-1])


async def test_a_200_that_is_not_a_stream_is_an_error(registry: ProviderRegistry) -> None:
    """A JSON body with status 200 is refused as not an event stream."""
    handler = error_handler(200, {"id": "resp_1", "object": "response", "output": []})
    async with serve(handler) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=KEY), registry
        )
    assert types == ["start", "error"]
    assert message.error_message and message.error_message.startswith("Not an event stream")


async def test_an_error_status_carries_the_body(registry: ProviderRegistry) -> None:
    """A 400 ends with one error event naming the status and the body's message."""
    async with serve(error_handler(400, OVERFLOW_BODY)) as server, open_http_client():
        types, message = await run_types(
            _model(server), ask(), StreamOptions(api_key=KEY), registry
        )
    assert types == ["error"]
    assert message.error_message and message.error_message.startswith("400 ")
    assert "exceeds the context window" in message.error_message


async def test_abort_ends_with_aborted(registry: ProviderRegistry) -> None:
    """Aborting mid-stream gives stopReason aborted with the text so far."""
    body = text_stream().sse()
    second = body.index(b"event: response.output_text.delta", body.index(b'"Hello"'))
    handler = sequence_handler(sse_handler(body, hang_after=second))
    limits = httpx2.Limits(max_connections=1)
    async with serve(handler) as server, open_http_client(limits=limits):
        model = _model(server)
        async with stream(model, ask(), StreamOptions(api_key=KEY), registry=registry) as events:
            async for event in events:
                if event.type == "text_delta":
                    events.abort()
            message = await events.result()
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
    assert message.stop_reason == "aborted"
    assert message.text() == TEXT_DELTAS[0]


def test_every_catalogue_model_resolves() -> None:
    """All 42 Azure models of the catalogue resolve to a registered provider."""
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    models = [
        m
        for provider in default_catalogue.providers()
        for m in default_catalogue.models(provider)
        if m.api == "azure-openai-responses"
    ]
    assert len(models) == 42
    assert all(registry.resolve(m.api).api == "azure-openai-responses" for m in models)
    assert json.dumps(sorted({m.provider for m in models})) == '["azure-openai-responses"]'
