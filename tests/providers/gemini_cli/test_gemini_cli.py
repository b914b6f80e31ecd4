"""The google-gemini-cli provider over real loopback HTTP: Cloud Code Assist's envelope around
the Gemini codec, with credentials the user supplies (no login, no imitation headers).

The catalogue has no model for this API; :func:`cli_model` is what a ``models.json`` entry
gives (checked by :func:`test_a_models_json_entry_resolves_to_the_provider`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from google.genai import types as genai_types

from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    ProviderRegistry,
    StreamOptions,
    default_registry,
    stream,
    stream_simple,
)
from pitrio.providers._custom_models import parse_models_json
from pitrio.providers._http import open_http_client
from pitrio.providers.credentials import CredentialStore
from pitrio.providers.gemini_cli import API, DEFAULT_BASE_URL, register_gemini_cli

from fixtures_google import (
    PNG_1PX,
    RATE_LIMIT_BODY,
    SIG_A,
    error_body,
    hello_context,
    max_tokens_chunks,
    replay_context,
    safety_chunks,
    text_chunks,
    thinking_chunks,
    tool_call_chunks,
    weather_context,
)
from loopback import Handler, Request, ResponseWriter, error_handler, serve, sse_handler
from sdk_check import validate_strict

TOKEN = "ya29.user-supplied"
PROJECT = "cloud-code-project-123"
REGISTRY = ProviderRegistry()
register_gemini_cli(REGISTRY)
MODELS_JSON = {
    "providers": {
        "google-gemini-cli": {
            "baseUrl": DEFAULT_BASE_URL,
            "api": API,
            "apiKey": "GOOGLE_GEMINI_CLI_TOKEN",
            "models": [
                {
                    "id": "gemini-2.5-pro",
                    "name": "Gemini 2.5 Pro (Cloud Code Assist)",
                    "reasoning": True,
                    "input": ["text", "image"],
                    "contextWindow": 1048576,
                    "maxTokens": 65535,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                }
            ],
        }
    }
}


def cli_model(base_url: str, model_id: str = "gemini-2.5-pro") -> Model:
    found = parse_models_json(MODELS_JSON).catalogue.get("google-gemini-cli", "gemini-2.5-pro")
    assert found is not None
    return attrs.evolve(found, id=model_id, base_url=base_url)


def wrapped(chunks: list[dict[str, Any]]) -> bytes:
    """Cloud Code Assist framing: every event is ``{"response": ..., "traceId": ...}``."""
    return b"".join(
        b"data: "
        + json.dumps({"response": c, "traceId": "0a1b2c3d"}, ensure_ascii=False).encode()
        + b"\r\n\r\n"
        for c in chunks
    )


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


async def serve_run(
    handler: Handler,
    context: Context | None = None,
    options: StreamOptions | None = None,
    *,
    model_id: str = "gemini-2.5-pro",
    simple: bool = True,
) -> tuple[list[AssistantMessageEvent], Request]:
    opener = stream_simple if simple else stream
    if options is None:
        options = StreamOptions(api_key=TOKEN, provider_options={"project": PROJECT})
    async with serve(handler) as server, open_http_client():
        model = cli_model(server.url(), model_id)
        async with opener(model, context or hello_context(), options, registry=REGISTRY) as events:
            collected = [event async for event in events]
    return collected, server.requests[0]


def test_a_models_json_entry_resolves_to_the_provider() -> None:
    model = cli_model(DEFAULT_BASE_URL)
    assert model.api == API
    assert default_registry.resolve(model.api).api == API


def test_wrapped_fixtures_hold_sdk_responses() -> None:
    for chunks in (text_chunks(), thinking_chunks(), tool_call_chunks()):
        for line in wrapped(chunks).split(b"\r\n\r\n"):
            if line:
                event = json.loads(line[len(b"data: ") :])
                assert set(event) == {"response", "traceId"}
                validate_strict(genai_types.GenerateContentResponse, event["response"])


async def test_envelope_url_and_auth() -> None:
    events, request = await serve_run(sse_handler(wrapped(text_chunks()), chunk_size=37))
    message = final(events)
    assert isinstance(events[-1], DoneEvent)
    assert message.api == API and message.text() == "Hello there, how can I help you today?"
    assert message.usage.input == 8 and message.usage.output == 9
    assert request.path == "/v1internal:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    # No header that would pass pitrio off as Google's own client.
    assert "x-goog-api-client" not in request.headers
    assert "gemini" not in request.headers.get("user-agent", "").lower()
    assert "x-goog-api-key" not in request.headers
    body = request.json()
    assert set(body) == {"project", "model", "request"}
    assert body["project"] == PROJECT and body["model"] == "gemini-2.5-pro"
    inner = body["request"]
    assert inner["contents"] == [{"role": "user", "parts": [{"text": "Hello"}]}]
    assert inner["systemInstruction"] == {"role": "user", "parts": [{"text": "You are terse."}]}
    assert inner["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}


async def test_thinking_with_signature() -> None:
    options = StreamOptions(api_key=TOKEN, reasoning="high", provider_options={"project": PROJECT})
    events, request = await serve_run(sse_handler(wrapped(thinking_chunks())), options=options)
    message = final(events)
    assert [b.type for b in message.content] == ["thinking", "text"]
    config = request.json()["request"]["generationConfig"]["thinkingConfig"]
    assert config == {"includeThoughts": True, "thinkingBudget": 32768}


async def test_tool_calls() -> None:
    events, request = await serve_run(
        sse_handler(wrapped(tool_call_chunks()), chunk_size=64), weather_context()
    )
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert [c.arguments["city"] for c in message.tool_calls()] == ["Paris", "Zürich"]
    assert message.tool_calls()[0].thought_signature == SIG_A
    assert [e.type for e in events].count("toolcall_delta") == 2
    declarations = request.json()["request"]["tools"][0]["functionDeclarations"]
    assert declarations[0]["name"] == "get_weather"


async def test_images_in_the_request() -> None:
    _, request = await serve_run(
        sse_handler(wrapped(text_chunks())), replay_context("gemini-2.5-pro")
    )
    parts = [p for c in request.json()["request"]["contents"] for p in c["parts"]]
    assert {"inlineData": {"mimeType": "image/png", "data": PNG_1PX}} in parts


@pytest.mark.parametrize(
    ("chunks", "stop", "event"),
    [(max_tokens_chunks, "length", DoneEvent), (safety_chunks, "error", ErrorEvent)],
)
async def test_stop_reasons(chunks: Any, stop: str, event: type) -> None:
    events, _ = await serve_run(sse_handler(wrapped(chunks())))
    assert isinstance(events[-1], event)
    assert final(events).stop_reason == stop


async def test_http_error() -> None:
    events, _ = await serve_run(error_handler(429, RATE_LIMIT_BODY))
    assert json.loads(final(events).error_message or "") == RATE_LIMIT_BODY


async def test_error_object_in_the_stream() -> None:
    body = wrapped(text_chunks()[:1]) + (
        b"data: " + json.dumps(error_body(500, "internal", "INTERNAL")).encode() + b"\r\n\r\n"
    )
    events, _ = await serve_run(sse_handler(body))
    message = final(events)
    assert (message.error_message or "").startswith("got status: INTERNAL.")
    assert message.text() == "Hello"


async def test_stream_cut_short() -> None:
    events, _ = await serve_run(sse_handler(wrapped(text_chunks()[:2])))
    message = final(events)
    assert message.stop_reason == "error"
    assert "terminated early" in (message.error_message or "")


async def test_a_200_that_is_not_a_stream() -> None:
    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(200, json.dumps({"response": {}}).encode())

    events, _ = await serve_run(handle)
    assert (final(events).error_message or "").startswith("Not an event stream")


async def test_credentials_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_CLI_TOKEN", "env-token")
    monkeypatch.setenv("GOOGLE_GEMINI_CLI_PROJECT", "env-project")
    _, request = await serve_run(sse_handler(wrapped(text_chunks())), options=StreamOptions())
    assert request.headers["authorization"] == "Bearer env-token"
    assert request.json()["project"] == "env-project"


async def test_pi_json_key_carries_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GEMINI_CLI_PROJECT", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    key = json.dumps({"token": "json-token", "projectId": "json-project"})
    _, request = await serve_run(
        sse_handler(wrapped(text_chunks())), options=StreamOptions(api_key=key)
    )
    assert request.headers["authorization"] == "Bearer json-token"
    assert request.json()["project"] == "json-project"


async def test_missing_credentials_fail_without_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GEMINI_CLI_TOKEN", raising=False)
    async with serve(sse_handler(wrapped(text_chunks()))) as server:
        model = cli_model(server.url())
        async with stream(model, hello_context(), StreamOptions(), registry=REGISTRY) as events:
            collected = [event async for event in events]
    message = final(collected)
    assert message.stop_reason == "error"
    assert "no login" in (message.error_message or "")
    assert server.requests == []


async def test_missing_project_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_GEMINI_CLI_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    async with serve(sse_handler(wrapped(text_chunks()))) as server:
        model = cli_model(server.url())
        async with stream(
            model, hello_context(), StreamOptions(api_key=TOKEN), registry=REGISTRY
        ) as ev:
            collected = [event async for event in ev]
    assert "requires a Cloud project" in (final(collected).error_message or "")
    assert server.requests == []


async def test_an_auth_json_oauth_entry_supplies_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``oauth`` entry the user stored for google-gemini-cli (no refresher: used while it
    lasts) gives the Bearer token; the project comes from the environment."""
    monkeypatch.delenv("GOOGLE_GEMINI_CLI_TOKEN", raising=False)
    monkeypatch.setenv("GOOGLE_GEMINI_CLI_PROJECT", "auth-json-project")
    auth = tmp_path / "auth.json"
    entry = {
        "type": "oauth",
        "access": "ya29.from-auth-json",
        "refresh": "1//r",
        "expires": 4_000_000_000_000,
    }
    auth.write_text(json.dumps({"google-gemini-cli": entry}))
    store = CredentialStore.load([str(auth)])
    key = await store.api_key("google-gemini-cli")
    _, request = await serve_run(
        sse_handler(wrapped(text_chunks())), options=StreamOptions(api_key=key)
    )
    assert request.headers["authorization"] == "Bearer ya29.from-auth-json"
    assert request.json()["project"] == "auth-json-project"
