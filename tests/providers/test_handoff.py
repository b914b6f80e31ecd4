"""Conversations across the wire APIs, each over its own loopback server.

Turn by turn the conversation moves Anthropic -> OpenAI Responses -> OpenAI Completions ->
Google -> Anthropic. Each turn's request is read back from the server it went to and checked
for what cross-provider handoff must guarantee: every earlier tool call arrives with its result,
tool-call ids are in the form the receiving API accepts (and calls still pair with their
results), and thinking from another model is never replayed as that API's signed reasoning.
A second conversation runs the same checks through the Azure and Codex Responses APIs, and a
third runs Gemini -> Mistral -> Vertex -> Cloud Code Assist -> Anthropic.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest

from pitrio.providers import (
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
    default_catalogue,
)
from pitrio.providers._http import open_http_client

import fixtures_anthropic as anth
import fixtures_codex
import fixtures_google as goog
import fixtures_mistral as mist
import fixtures_openai_completions as comp
import fixtures_openai_responses as resp
from loopback import serve, sse_handler

TOOLS = [
    Tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {}, "additionalProperties": True},
    )
    for name in ("read", "bash", "get_weather")
]


def model(provider: str, model_id: str, base_url: str) -> Model:
    found = default_catalogue.get(provider, model_id)
    assert found is not None, f"{provider}/{model_id} is not in the catalogue"
    return attrs.evolve(found, base_url=base_url)


def results_for(message: AssistantMessage, at: int) -> list[ToolResultMessage]:
    return [
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text=f"result of {call.name} {json.dumps(call.arguments)}")],
            is_error=False,
            timestamp=at,
        )
        for call in message.tool_calls()
    ]


async def turn(
    model: Model, body: bytes, messages: list[Message]
) -> tuple[AssistantMessage, dict[str, Any]]:
    async with serve(sse_handler(body, chunk_size=97)) as server:
        target = attrs.evolve(model, base_url=server.url(model.base_url))
        context = Context(system_prompt="You are helpful.", messages=messages, tools=TOOLS)
        message = await complete(target, context, StreamOptions(api_key="test-key"))
    assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return message, server.requests[0].json()


def user(text: str, at: int) -> UserMessage:
    return UserMessage(content=text, timestamp=at)


async def test_one_conversation_runs_across_all_four_apis() -> None:
    claude = model("anthropic", "claude-sonnet-4-5", "")
    gpt5 = model("openai", "gpt-5", "/v1")
    gpt4o = attrs.evolve(model("openai", "gpt-4o-mini", "/v1"), api="openai-completions")
    gemini = model("google", "gemini-2.5-flash", "/v1beta")
    history: list[Message] = [user("Look at main.py and list the files.", 1)]

    async with open_http_client():
        # 1. Anthropic: text and two tool calls.
        first, _ = await turn(claude, anth.to_sse(anth.tool_calls_stream()), history)
        assert [c.name for c in first.tool_calls()] == ["read", "bash"]
        history += [first, *results_for(first, 2), user("Now the weather in Paris and Tokyo.", 3)]

        # 2. OpenAI Responses: reasoning, then two calls of its own.
        second, body2 = await turn(gpt5, resp.tool_calls_stream().sse(), history)
        assert isinstance(second.content[0], ThinkingContent)
        assert len(second.tool_calls()) == 2
        calls = [i for i in body2["input"] if i.get("type") == "function_call"]
        outputs = [i for i in body2["input"] if i.get("type") == "function_call_output"]
        assert [c["name"] for c in calls] == ["read", "bash"]
        assert {c["call_id"] for c in calls} == {o["call_id"] for o in outputs}
        # Anthropic's text arrives as an assistant message; no reasoning item is invented.
        assert not [i for i in body2["input"] if i.get("type") == "reasoning"]
        history += [second, *results_for(second, 4), user("Thanks. Anything else?", 5)]

        # 3. OpenAI Completions: two more calls, streamed in small pieces.
        third, body3 = await turn(gpt4o, comp.parallel_tool_call_stream(), history)
        assert len(third.tool_calls()) == 2
        sent_calls = [
            call
            for m in body3["messages"]
            if m["role"] == "assistant"
            for call in m.get("tool_calls") or []
        ]
        tool_messages = [m for m in body3["messages"] if m["role"] == "tool"]
        assert len(sent_calls) == 4
        assert [c["id"] for c in sent_calls] == [m["tool_call_id"] for m in tool_messages]
        # The Responses reasoning (another model's) is not replayed as reasoning fields.
        assert all("reasoning_content" not in m for m in body3["messages"])
        history += [third, *results_for(third, 6), user("Summarise everything.", 7)]

        # 4. Google: a plain answer; every earlier call goes as functionCall/functionResponse.
        fourth, body4 = await turn(gemini, goog.sse(goog.text_chunks()), history)
        assert fourth.text() == "Hello there, how can I help you today?"
        parts = [p for c in body4["contents"] for p in c["parts"]]
        function_calls = [p["functionCall"] for p in parts if "functionCall" in p]
        function_responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        assert len(function_calls) == len(function_responses) == 6
        # Signatures from other providers are never sent as Gemini thought signatures.
        assert not [p for p in parts if p.get("thought")]
        history += [fourth, user("One last check.", 8)]

        # 5. Back to Anthropic: ids must match its pattern and still pair with their results.
        fifth, body5 = await turn(claude, anth.to_sse(anth.text_stream()), history)
        assert fifth.text() == anth.TEXT
    blocks = [b for m in body5["messages"] for b in m["content"] if isinstance(b, dict)]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert len(uses) == len(results) == 6
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", u["id"]) for u in uses)
    # Only Anthropic's own (signed) thinking could be replayed as thinking; none was produced.
    assert not [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    # The Responses reasoning survives the trip as plain text, not lost and not signed.
    reasoning_text = second.content[0]
    assert isinstance(reasoning_text, ThinkingContent)
    assert any(b["type"] == "text" and reasoning_text.thinking in b["text"] for b in blocks)
    assert all(isinstance(m, UserMessage | AssistantMessage | ToolResultMessage) for m in history)
    assert isinstance(first.content[1], ToolCall)


def _codex_tool_stream() -> resp.ResponsesStream:
    """Codex's own turn: reasoning, then one call of the read tool (ends with response.done)."""
    stream = resp.ResponsesStream(
        response_id="resp_codex_0001", reasoning={"effort": "low", "summary": "auto"}
    )
    stream.reasoning([["Read the file the user named."]])
    stream.function_call("read", "call_codexRead000000000001", ['{"pa', 'th": "ma', 'in.py"}'])
    return stream.completed(input_tokens=500, output_tokens=40, reasoning_tokens=12)


def _paired(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    calls = [i for i in body["input"] if i.get("type") == "function_call"]
    outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls] == [o["call_id"] for o in outputs]
    return calls, outputs


async def test_a_conversation_moves_through_azure_and_codex() -> None:
    """Anthropic -> Azure -> Codex -> Codex -> Azure -> Anthropic, thinking and calls intact.

    Each API replays its own reasoning items verbatim and receives every other model's
    reasoning as plain text; every tool call reaches every API paired with its result.
    """
    claude = model("anthropic", "claude-sonnet-4-5", "")
    azure = model("azure-openai-responses", "gpt-5", "/openai/v1")
    codex = model("openai-codex", "gpt-5.2", "/backend-api")
    codex_key = fixtures_codex.access_token()
    history: list[Message] = [user("Look at main.py and list the files.", 1)]

    async def codex_turn(body: bytes) -> tuple[AssistantMessage, dict[str, Any]]:
        async with serve(sse_handler(body, chunk_size=97)) as server:
            target = attrs.evolve(codex, base_url=server.url(codex.base_url))
            context = Context(system_prompt="You are helpful.", messages=history, tools=TOOLS)
            message = await complete(target, context, StreamOptions(api_key=codex_key))
        assert message.stop_reason in ("stop", "toolUse"), message.error_message
        request = server.requests[0]
        assert request.headers["chatgpt-account-id"] == fixtures_codex.ACCOUNT_ID
        return message, request.json()

    async with open_http_client():
        first, _ = await turn(claude, anth.to_sse(anth.tool_calls_stream()), history)
        history += [first, *results_for(first, 2), user("Weather in Paris and Tokyo?", 3)]

        # Azure: Anthropic's calls arrive paired; no reasoning item is invented.
        second, body2 = await turn(azure, resp.tool_calls_stream().sse(), history)
        assert isinstance(second.content[0], ThinkingContent)
        calls, _ = _paired(body2)
        assert [c["name"] for c in calls] == ["read", "bash"]
        assert not [i for i in body2["input"] if i.get("type") == "reasoning"]
        assert body2["model"] == "gpt-5"
        history += [second, *results_for(second, 4), user("Read main.py again.", 5)]

        # Codex: the system prompt is the instructions; Azure's reasoning arrives as text.
        codex_stream = _codex_tool_stream()
        third, body3 = await codex_turn(
            fixtures_codex.codex_sse(fixtures_codex.with_done(codex_stream))
        )
        assert isinstance(third.content[0], ThinkingContent)
        assert [c.name for c in third.tool_calls()] == ["read"]
        assert body3["instructions"] == "You are helpful."
        assert not [i for i in body3["input"] if i.get("role") in ("system", "developer")]
        calls, _ = _paired(body3)
        assert len(calls) == 4
        assert not [i for i in body3["input"] if i.get("type") == "reasoning"]
        texts = [
            part["text"]
            for i in body3["input"]
            if i.get("type") == "message"
            for part in i["content"]
        ]
        assert second.content[0].thinking in texts
        history += [third, *results_for(third, 6), user("Thanks.", 7)]

        # Codex again: its own reasoning item goes back verbatim, its call keeps its item id.
        fourth, body4 = await codex_turn(
            fixtures_codex.codex_sse(fixtures_codex.with_done(resp.text_stream()))
        )
        reasoning = [i for i in body4["input"] if i.get("type") == "reasoning"]
        assert reasoning == [codex_stream.output[0]]
        assert reasoning[0]["encrypted_content"] == resp.ENCRYPTED
        calls, _ = _paired(body4)
        assert calls[-1]["id"] == codex_stream.output[1]["id"]
        history += [fourth, user("And on Azure?", 8)]

        # Azure again: only its own reasoning is replayed as reasoning; Codex's is text.
        fifth, body5 = await turn(azure, resp.text_stream().sse(), history)
        reasoning = [i for i in body5["input"] if i.get("type") == "reasoning"]
        assert reasoning == [resp.tool_calls_stream().output[0]]
        assert len(_paired(body5)[0]) == 5
        history += [fifth, user("One last check.", 9)]

        sixth, body6 = await turn(claude, anth.to_sse(anth.text_stream()), history)
        assert sixth.text() == anth.TEXT
    blocks = [b for m in body6["messages"] for b in m["content"] if isinstance(b, dict)]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert len(uses) == len(results) == 5
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", u["id"]) for u in uses)
    assert not [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    for reasoning_turn in (second, third):
        thinking = reasoning_turn.content[0]
        assert isinstance(thinking, ThinkingContent)
        assert any(thinking.thinking in text for text in texts)


async def test_conversation_moves_through_mistral_vertex_and_gemini_cli(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemini -> Mistral -> Vertex -> Cloud Code Assist -> Anthropic: every tool call keeps its
    result, ids take each API's form, and reasoning crosses over as plain text, never as that
    API's signed reasoning (nor with another provider's thought signatures)."""
    monkeypatch.setenv("GOOGLE_GEMINI_CLI_PROJECT", "handoff-project")
    gemini = model("google", "gemini-2.5-pro", "/v1beta")
    mistral = model("mistral", "magistral-medium-latest", "")
    vertex = model("google-vertex", "gemini-2.5-pro", "")
    cli = attrs.evolve(vertex, api="google-gemini-cli", provider="google-gemini-cli")
    claude = model("anthropic", "claude-sonnet-4-5", "")
    history: list[Message] = [user("Weather in Paris and Zürich?", 1)]

    async with open_http_client():
        # 1. Gemini: thinking, text and two signed/unsigned calls.
        first, _ = await turn(gemini, goog.sse(goog.tool_call_chunks()), history)
        assert isinstance(first.content[0], ThinkingContent) and len(first.tool_calls()) == 2
        history += [first, *results_for(first, 2), user("And the forecast?", 3)]

        # 2. Mistral: Gemini's calls go out with 9-character ids paired with their results;
        #    Gemini's reasoning is plain text, not a thinking chunk.
        second, body2 = await turn(mistral, mist.sse(mist.tool_call_chunks()), history)
        assert len(second.tool_calls()) == 2
        sent = [c for m in body2["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
        tool_ids = [m["tool_call_id"] for m in body2["messages"] if m["role"] == "tool"]
        assert [c["id"] for c in sent] == tool_ids
        assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in tool_ids)
        assistant_parts = [
            p for m in body2["messages"] if m["role"] == "assistant" for p in m["content"]
        ]
        assert {"type": "text", "text": "I need the weather for both cities."} in assistant_parts
        assert not [p for p in assistant_parts if p["type"] == "thinking"]
        history += [second, *results_for(second, 4), user("Think it over.", 5)]

        # 3. Vertex: four calls and four responses; Gemini-API signatures are not replayed to
        #    another provider.
        third, body3 = await turn(vertex, goog.sse(goog.thinking_chunks()), history)
        assert isinstance(third.content[0], ThinkingContent)
        assert third.api == "google-vertex"
        parts3 = [p for c in body3["contents"] for p in c["parts"]]
        assert len([p for p in parts3 if "functionCall" in p]) == 4
        assert len([p for p in parts3 if "functionResponse" in p]) == 4
        assert not [p for p in parts3 if p.get("thought") or "thoughtSignature" in p]
        history += [third, user("Summarise.", 6)]

        # 4. Cloud Code Assist: the same, inside its envelope; Vertex's thinking is text.
        fourth, body4 = await turn(cli, cli_sse(goog.text_chunks()), history)
        assert fourth.text() == "Hello there, how can I help you today?"
        assert body4["project"] == "handoff-project"
        parts4 = [p for c in body4["request"]["contents"] for p in c["parts"]]
        assert len([p for p in parts4 if "functionCall" in p]) == 4
        assert not [p for p in parts4 if p.get("thought") or "thoughtSignature" in p]
        vertex_thinking = third.content[0]
        assert {"text": vertex_thinking.thinking} in parts4
        history += [fourth, user("Back to you.", 7)]

        # 5. Anthropic: ids match its pattern and pair with their results.
        fifth, body5 = await turn(claude, anth.to_sse(anth.text_stream()), history)
        assert fifth.text() == anth.TEXT
    blocks = [b for m in body5["messages"] for b in m["content"] if isinstance(b, dict)]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert len(uses) == len(results) == 4
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", u["id"]) for u in uses)
    assert not [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    # Mistral's streamed arguments survived every hop.
    assert [u["input"] for u in uses][2:] == [{"city": "Paris", "days": [1, 2]}, {"city": "Zürich"}]


def cli_sse(chunks: list[dict[str, Any]]) -> bytes:
    """Cloud Code Assist framing of Gemini chunks."""
    return b"".join(b"data: " + json.dumps({"response": c}).encode() + b"\r\n\r\n" for c in chunks)
