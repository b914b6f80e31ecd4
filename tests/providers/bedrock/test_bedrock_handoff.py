"""A conversation moves onto Bedrock and off it again, thinking and tool calls surviving.

OpenAI Responses (reasoning, two calls whose ids hold ``|``) -> Bedrock Claude (signed
reasoning, two calls) -> Bedrock Claude again -> Anthropic. Each request is read back from its
loopback server: every tool call arrives with its result under an id the API accepts, another
model's thinking arrives as text, and Bedrock's own signed reasoning is replayed as
``reasoningContent`` with its signature to the same model only.
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
    ToolResultMessage,
    UserMessage,
    complete,
    default_catalogue,
)
from pitrio.providers._http import open_http_client

import fixtures_anthropic as anth
import fixtures_bedrock as bed
import fixtures_openai_responses as resp
from loopback import serve, sse_handler

TOOL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
TOOLS = [
    Tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {}, "additionalProperties": True},
    )
    for name in ("read", "bash", "get_weather")
]


@pytest.fixture(autouse=True)
def _bedrock_token(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_BEDROCK_SKIP_AUTH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key")


def model(provider: str, model_id: str) -> Model:
    found = default_catalogue.get(provider, model_id)
    assert found is not None, f"{provider}/{model_id} is not in the catalogue"
    return found


async def turn(
    target: Model, body: bytes, messages: list[Message], path: str = "", **handler: Any
) -> tuple[AssistantMessage, dict[str, Any]]:
    async with serve(sse_handler(body, chunk_size=97, **handler)) as server:
        moved = attrs.evolve(target, base_url=server.url(path))
        context = Context(system_prompt="You are helpful.", messages=messages, tools=TOOLS)
        message = await complete(moved, context, StreamOptions(api_key="test-key"))
    assert message.stop_reason in ("stop", "toolUse"), message.error_message
    return message, server.requests[0].json()


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


def bedrock_blocks(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [block[key] for m in body["messages"] for block in m["content"] if key in block]


async def test_conversation_moves_onto_bedrock_and_off_again() -> None:
    """Tool calls pair with their results and thinking survives across Responses, Bedrock, Anthropic."""
    gpt5 = model("openai", "gpt-5")
    claude_bedrock = model("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0")
    claude = model("anthropic", "claude-sonnet-4-5")
    history: list[Message] = [UserMessage(content="Weather in Paris and Tokyo?", timestamp=1)]
    bedrock_stream = {"headers": bed.HEADERS}

    async with open_http_client():
        # 1. OpenAI Responses: reasoning and two calls with "call|item" ids.
        first, _ = await turn(gpt5, resp.tool_calls_stream().sse(), history, "/v1")
        assert isinstance(first.content[0], ThinkingContent)
        assert all("|" in call.id for call in first.tool_calls())
        history += [
            *[first],
            *results_for(first, 2),
            UserMessage(content="Now read main.py.", timestamp=3),
        ]

        # 2. Bedrock: the foreign ids are rewritten and still pair; the reasoning goes as text.
        second, body2 = await turn(
            claude_bedrock,
            bed.to_eventstream(bed.tool_calls_stream(thinking=True)),
            history,
            **bedrock_stream,
        )
        uses = bedrock_blocks(body2, "toolUse")
        results = bedrock_blocks(body2, "toolResult")
        assert len(uses) == len(results) == 2
        assert [u["toolUseId"] for u in uses] == [r["toolUseId"] for r in results]
        assert all(TOOL_ID.fullmatch(u["toolUseId"]) for u in uses)
        assert not bedrock_blocks(body2, "reasoningContent")
        reasoning = first.content[0]
        assert isinstance(reasoning, ThinkingContent)
        texts = [b["text"] for m in body2["messages"] for b in m["content"] if "text" in b]
        assert reasoning.thinking in texts
        thinking = second.content[0]
        assert (
            isinstance(thinking, ThinkingContent) and thinking.thinking_signature == bed.SIGNATURE
        )
        assert [c.name for c in second.tool_calls()] == ["read", "bash"]
        history += [second, *results_for(second, 4), UserMessage(content="Summarise.", timestamp=5)]

        # 3. Bedrock again, same model: its own reasoning is replayed signed.
        third, body3 = await turn(
            claude_bedrock, bed.to_eventstream(bed.text_stream()), history, **bedrock_stream
        )
        assert third.text() == bed.TEXT
        replayed = bedrock_blocks(body3, "reasoningContent")
        assert replayed == [
            {"reasoningText": {"text": thinking.thinking, "signature": bed.SIGNATURE}}
        ]
        uses = bedrock_blocks(body3, "toolUse")
        results = bedrock_blocks(body3, "toolResult")
        assert len(uses) == len(results) == 4
        assert [u["toolUseId"] for u in uses] == [r["toolUseId"] for r in results]
        assert uses[2]["toolUseId"] == bed.TOOL_ID_1 and uses[2]["input"] == bed.TOOL_ARGS_1
        history += [third, UserMessage(content="Thanks.", timestamp=6)]

        # 4. Anthropic: Bedrock's thinking is another model's, so it arrives as text.
        fourth, body4 = await turn(claude, anth.to_sse(anth.text_stream()), history)
    assert fourth.text() == anth.TEXT
    blocks = [b for m in body4["messages"] for b in m["content"] if isinstance(b, dict)]
    uses4 = [b for b in blocks if b["type"] == "tool_use"]
    results4 = [b for b in blocks if b["type"] == "tool_result"]
    assert len(uses4) == len(results4) == 4
    assert [u["id"] for u in uses4] == [r["tool_use_id"] for r in results4]
    assert not [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    assert any(b["type"] == "text" and thinking.thinking in b["text"] for b in blocks)
