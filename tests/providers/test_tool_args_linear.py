"""Streamed tool-call arguments cost linear time on every wire API.

A tool call whose JSON arguments stream in thousands of deltas (a ``write`` of a large file)
must not re-parse the accumulated text per delta. These tests count the characters given to
the partial-JSON parser while a long call streams over loopback HTTP and nobody reads the
partial arguments: at most the finished text's length a couple of times (the final parse),
where a per-delta re-parse gives the square of it. They pin an optimisation's internals (which
function parses), not a timing, hence the marker.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from pitrio.providers import (
    Context,
    ProviderRegistry,
    StreamOptions,
    ToolCall,
    UserMessage,
    _http,
    get_model,
    register_builtin_providers,
)
from pitrio.providers._api import stream_simple
from pitrio.providers._http import open_http_client

import fixtures_anthropic as fx_anthropic
import fixtures_google as fx_google
import fixtures_openai_completions as fx_completions
import fixtures_openai_responses as fx_responses
from loopback import serve, sse_handler

pytestmark = pytest.mark.pins_internals

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(400))
ARGUMENTS = json.dumps({"path": "big.txt", "content": TEXT}, separators=(",", ":"))
PIECE = 7  # characters per streamed delta, as the APIs send them (a few tokens)
CONTEXT = Context(messages=[UserMessage(content="write it", timestamp=1)])
OPTIONS = StreamOptions(api_key="test-key")


SHORT_TEXT = TEXT[:2000]


def _pieces(arguments: str = ARGUMENTS) -> list[str]:
    return [arguments[i : i + PIECE] for i in range(0, len(arguments), PIECE)]


def _completions(arguments: str = ARGUMENTS) -> bytes:
    head = {"index": 0, "id": "call_1", "type": "function"}
    chunks = [
        fx_completions.chunk(
            {"role": "assistant", "tool_calls": [{**head, "function": {"name": "write"}}]}
        )
    ]
    chunks += [
        fx_completions.chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        for piece in _pieces(arguments)
    ]
    chunks.append(fx_completions.chunk({}, finish_reason="tool_calls"))
    return fx_completions.frame(chunks)


def _anthropic_stream() -> bytes:
    events = [fx_anthropic.message_start(), fx_anthropic.tool_use_start(0, "toolu_1", "write")]
    events += [fx_anthropic.input_json_delta(0, piece) for piece in _pieces()]
    events += [
        fx_anthropic.block_stop(0),
        fx_anthropic.message_delta("tool_use", output_tokens=5),
        fx_anthropic.message_stop(),
    ]
    return fx_anthropic.to_sse(events)


def _responses() -> bytes:
    stream = fx_responses.ResponsesStream()
    stream.function_call("write", "call_1", _pieces())
    return stream.completed(input_tokens=10, output_tokens=5).sse()


def _google_stream() -> bytes:
    call = {"functionCall": {"name": "write", "args": json.loads(ARGUMENTS)}}
    usage = fx_google.usage_metadata(10, 5)
    return fx_google.sse([fx_google.chunk([call], usage=usage, finish="STOP")])


CASES = {
    "openai-completions": (_completions, "groq", "llama-3.3-70b-versatile", "/v1"),
    "openai-responses": (_responses, "openai", "gpt-5", "/v1"),
    "anthropic-messages": (_anthropic_stream, "anthropic", "claude-sonnet-4-5", ""),
    "google-generative-ai": (_google_stream, "google", "gemini-2.5-flash", "/v1beta"),
}


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The length of every text given to the streaming-JSON parser, wherever it is called."""
    lengths: list[int] = []
    original = _http.parse_streaming_json

    def counting(text: str | None) -> dict[str, Any]:
        lengths.append(len(text or ""))
        return original(text)

    # Every providers module that calls the parser (each wire API reads it into its namespace).
    for name, module in list(sys.modules.items()):
        if name.startswith("pitrio.providers") and hasattr(module, "parse_streaming_json"):
            monkeypatch.setattr(module, "parse_streaming_json", counting)
    yield lengths


@pytest.mark.parametrize("api", sorted(CASES))
async def test_a_long_streamed_tool_call_is_parsed_a_bounded_number_of_times(
    api: str, parsed: list[int]
) -> None:
    """Thousands of argument deltas; the parser sees at most twice the finished arguments."""
    make_body, provider, model_id, prefix = CASES[api]
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    async with serve(sse_handler(make_body(), chunk_size=4096)) as server, open_http_client():
        model = attrs.evolve(get_model(provider, model_id), base_url=server.url(prefix))
        assert model.api == api
        async with stream_simple(model, CONTEXT, OPTIONS, registry=registry) as events:
            kinds = [event.type async for event in events]
            message = await events.result()
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    assert [call.arguments for call in calls] == [json.loads(ARGUMENTS)]
    if api != "google-generative-ai":  # Gemini sends a call whole, in one part
        assert kinds.count("toolcall_delta") >= len(ARGUMENTS) // PIECE
    assert sum(parsed) <= 2 * len(ARGUMENTS), f"{len(parsed)} parses, {sum(parsed)} characters"


async def test_reading_the_partial_arguments_on_every_delta_shows_them_growing(
    parsed: list[int],
) -> None:
    """What an observer reading every delta sees is still pi's partial parse of the text so
    far (the parse is only deferred to that read, not dropped)."""
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    shown: list[str] = []
    arguments = json.dumps({"path": "big.txt", "content": SHORT_TEXT})
    async with (
        serve(sse_handler(_completions(arguments), chunk_size=4096)) as server,
        open_http_client(),
    ):
        model = attrs.evolve(
            get_model("groq", "llama-3.3-70b-versatile"), base_url=server.url("/v1")
        )
        async with stream_simple(model, CONTEXT, OPTIONS, registry=registry) as events:
            async for event in events:
                if event.type == "toolcall_delta":
                    block = event.partial.content[event.content_index]
                    assert isinstance(block, ToolCall)
                    shown.append(block.arguments.get("content", ""))
    assert shown[-1] == SHORT_TEXT
    assert all(SHORT_TEXT.startswith(text) for text in shown)
    assert len(set(shown)) > len(shown) // 2  # it grows delta by delta
