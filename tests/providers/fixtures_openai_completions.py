"""Chat Completions streams and error bodies in the real wire format, for the loopback server.

Chunks are built the way OpenAI (and the OpenAI-compatible servers named in each builder)
send them: ``chat.completion.chunk`` objects with ``id``, ``created``, ``model``,
``system_fingerprint``, one choice whose ``delta`` carries the new content, ``usage: null``
on every chunk while ``stream_options.include_usage`` is on, then a usage-only chunk with
``choices: []`` and ``data: [DONE]``. ``tests/providers/openai_completions/test_openai_completions.py`` checks every
chunk against the openai SDK's ``ChatCompletionChunk`` and rejects keys it does not declare,
except the vendor fields listed in :data:`VENDOR_CHUNK_FIELDS`.

Run as a script to write the input of pi's capture (``tests/data/pi/providers/``)::

    .venv/bin/python tests/providers/fixtures_openai_completions.py write-pi-input
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import attrs

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Message,
    Model,
    ModelCost,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    stream,
    stream_simple,
)
from pitrio.providers.openai_completions._compat import openai_compatible_model

from loopback import Request, error_handler, serve, sse_bytes, sse_handler

CREATED: Final = 1735689600
FINGERPRINT: Final = "fp_8b5ed4a1c0"
MODEL: Final = "gpt-4o-mini-2024-07-18"

VENDOR_CHUNK_FIELDS: Final = frozenset(
    {
        # Reasoning text: DeepSeek, llama.cpp, vLLM ("reasoning_content"); OpenRouter, Groq,
        # Ollama ("reasoning"); some gateways ("reasoning_text").
        "choices.delta.reasoning_content",
        "choices.delta.reasoning",
        "choices.delta.reasoning_text",
        # OpenRouter's structured reasoning (encrypted blocks accompany tool calls).
        "choices.delta.reasoning_details",
        # DeepSeek's cache counters.
        "usage.prompt_cache_hit_tokens",
        "usage.prompt_cache_miss_tokens",
        # OpenRouter: cache writes and cost.
        "usage.prompt_tokens_details.cache_write_tokens",
        "usage.cost",
    }
)
"""Chunk keys that are real wire fields of OpenAI-compatible servers but not in the SDK."""


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    id: str = "chatcmpl-AZ1",
    model: str = MODEL,
    usage: Any = None,
    include_usage: bool = True,
    choices: bool = True,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice (or none, for the usage chunk)."""
    data: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "choices": [],
    }
    if choices:
        data["choices"] = [
            {
                "index": 0,
                "delta": delta if delta is not None else {},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
    if include_usage:
        data["usage"] = usage
    if extra:
        data.update(extra)
    return data


def usage(
    prompt: int,
    completion: int,
    *,
    cached: int = 0,
    reasoning: int = 0,
    extra: dict[str, Any] | None = None,
    details_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An OpenAI ``usage`` object."""
    data: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    if details_extra:
        data["prompt_tokens_details"].update(details_extra)
    if extra:
        data.update(extra)
    return data


def frame(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    """SSE bytes: one ``data:`` event per chunk, then ``data: [DONE]``."""
    events: list[tuple[str | None, Any]] = [(None, c) for c in chunks]
    if done:
        events.append((None, "[DONE]"))
    return sse_bytes(events)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# --------------------------------------------------------------------------- streams


def text_chunks(
    text: str = "Hello from the loopback server!",
    *,
    piece: int = 6,
    finish_reason: str = "stop",
    with_usage: Any = None,
    model: str = MODEL,
) -> list[dict[str, Any]]:
    """A plain answer: role delta, content deltas, finish, usage chunk."""
    the_usage = with_usage if with_usage is not None else usage(21, 9)
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None}, model=model)]
    chunks += [chunk({"content": part}, model=model) for part in _pieces(text, piece)]
    chunks.append(chunk({}, finish_reason=finish_reason, model=model))
    chunks.append(chunk(choices=False, usage=the_usage, model=model))
    return chunks


def text_stream(text: str = "Hello from the loopback server!", **kwargs: Any) -> bytes:
    return frame(text_chunks(text, **kwargs))


def thinking_chunks(
    field: str = "reasoning_content",
    reasoning: str = "The user greets me. I should greet back briefly.",
    text: str = "Hi there!",
    *,
    model: str = "deepseek-reasoner",
    with_usage: Any = None,
) -> list[dict[str, Any]]:
    """Reasoning first, then the answer (DeepSeek/llama.cpp: ``reasoning_content``; OpenRouter,
    Groq and Ollama: ``reasoning``). The reasoning field is ``null`` on answer chunks, as
    DeepSeek sends it."""
    the_usage = with_usage if with_usage is not None else usage(30, 40, reasoning=25)
    chunks = [chunk({"role": "assistant", "content": None, field: ""}, model=model)]
    chunks += [chunk({"content": None, field: p}, model=model) for p in _pieces(reasoning, 9)]
    chunks += [chunk({"content": p, field: None}, model=model) for p in _pieces(text, 4)]
    chunks.append(chunk({"content": "", field: None}, finish_reason="stop", model=model))
    chunks.append(chunk(choices=False, usage=the_usage, model=model))
    return chunks


def thinking_stream(field: str = "reasoning_content", **kwargs: Any) -> bytes:
    return frame(thinking_chunks(field, **kwargs))


WEATHER_ARGS: Final = '{"city": "Paris", "unit": "celsius", "days": 3}'
TIME_ARGS: Final = '{"timezone": "Europe/Paris", "format": "24h"}'


def parallel_tool_call_chunks(piece: int = 5) -> list[dict[str, Any]]:
    """Two tool calls in one answer, arguments cut into ``piece``-character deltas (OpenAI's
    shape: the first delta of a call carries id, type and name with empty arguments; later
    ones only ``index`` and an argument fragment)."""
    chunks = [chunk({"role": "assistant", "content": None, "refusal": None})]
    chunks.append(chunk({"content": "Let me check."}))
    for index, (call_id, name, args) in enumerate(
        (
            ("call_weather_01", "get_weather", WEATHER_ARGS),
            ("call_time_02", "get_time", TIME_ARGS),
        )
    ):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _pieces(args, piece)
        ]
    chunks.append(chunk({}, finish_reason="tool_calls"))
    chunks.append(chunk(choices=False, usage=usage(120, 48, cached=64)))
    return chunks


def parallel_tool_call_stream(piece: int = 5) -> bytes:
    return frame(parallel_tool_call_chunks(piece))


def openrouter_reasoning_tool_chunks() -> list[dict[str, Any]]:
    """OpenRouter relaying a Gemini model: ``reasoning`` text with ``reasoning_details``, then a
    tool call whose encrypted reasoning arrives in ``reasoning_details`` keyed by the call id."""
    model = "google/gemini-2.5-pro"
    gen = "gen-1735689600-abcdef"
    detail_text = {
        "type": "reasoning.text",
        "text": "Need the weather.",
        "format": "google-gemini-v1",
        "index": 0,
    }
    encrypted = {
        "type": "reasoning.encrypted",
        "data": "CiQBjz1rX2VuY3J5cHRlZA==",
        "id": "tool_get_weather_abc",
        "format": "google-gemini-v1",
        "index": 0,
    }

    def c(delta: dict[str, Any], **kw: Any) -> dict[str, Any]:
        return chunk(delta, id=gen, model=model, **kw)

    return [
        c(
            {
                "role": "assistant",
                "content": "",
                "reasoning": "Need the weather.",
                "reasoning_details": [detail_text],
            }
        ),
        c(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "tool_get_weather_abc",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
                "reasoning_details": [encrypted],
            }
        ),
        c({"role": "assistant", "content": ""}, finish_reason="tool_calls"),
        chunk(
            choices=False,
            id=gen,
            model=model,
            usage=usage(
                200,
                30,
                cached=150,
                details_extra={"cache_write_tokens": 40},
                extra={"cost": 0.0012},
            ),
        ),
    ]


def openrouter_reasoning_tool_stream() -> bytes:
    return frame(openrouter_reasoning_tool_chunks())


def deepseek_cache_usage_chunks() -> list[dict[str, Any]]:
    """DeepSeek reports cache hits in ``prompt_cache_hit_tokens`` (and no prompt details)."""
    return text_chunks(
        "Cached answer.",
        model="deepseek-chat",
        with_usage={
            "prompt_tokens": 1000,
            "completion_tokens": 12,
            "total_tokens": 1012,
            "prompt_cache_hit_tokens": 900,
            "prompt_cache_miss_tokens": 100,
        },
    )


def content_filter_stream() -> bytes:
    """Azure/OpenAI stopping an answer for its content filter."""
    return frame(text_chunks("I can", finish_reason="content_filter"))


def length_stream() -> bytes:
    return frame(text_chunks("This answer is cut", finish_reason="length"))


def openrouter_mid_stream_error() -> bytes:
    """A server reporting an upstream failure inside the stream (the HTTP status stays 200):
    an event holding only an error object, which the OpenAI SDK raises; OpenRouter adds the
    upstream provider's raw message under ``metadata``."""
    return frame(
        [
            chunk({"role": "assistant", "content": "Partial"}, id="gen-1735689600-error"),
            {
                "error": {
                    "message": "Provider returned error",
                    "type": "server_error",
                    "param": None,
                    "code": "502",
                    "metadata": {"raw": "upstream connect error", "provider_name": "Foo"},
                }
            },
        ],
        done=False,
    )


ERROR_EVENT_VENDOR_FIELDS: Final = frozenset({"metadata"})
"""Keys of an in-stream error object that OpenRouter adds to OpenAI's ErrorObject."""


def big_stream(chars: int) -> bytes:
    """A long plain-text answer of about ``chars`` characters, one ~4-character token per chunk
    (the lead's ``bench/sse_parse.py`` parses it)."""
    words = (
        "the quick brown fox jumps over a lazy dog while streaming tokens arrive "
        "one by one from a patient language model that never stops talking "
    ).split()
    parts: list[str] = []
    total = 0
    i = 0
    while total < chars:
        word = words[i % len(words)] + " "
        parts.append(word)
        total += len(word)
        i += 1
    text = "".join(parts)[:chars]
    return frame(text_chunks(text, piece=4, with_usage=usage(1000, max(1, chars // 4))))


# --------------------------------------------------------------------------- error bodies


def openai_error(message: str, type: str, *, code: str | None = None, param: str | None = None):
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


RATE_LIMIT_BODY: Final = openai_error(
    "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): "
    "Limit 200000, Used 199000, Requested 2000. Please try again in 300ms.",
    "tokens",
    code="rate_limit_exceeded",
)
SERVER_ERROR_BODY: Final = openai_error(
    "The server had an error while processing your request. Sorry about that!", "server_error"
)
CONTEXT_OVERFLOW_BODY: Final = openai_error(
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "131072 tokens. Please reduce the length of the messages.",
    "invalid_request_error",
    code="context_length_exceeded",
    param="messages",
)
LLAMA_CPP_OVERFLOW_BODY: Final = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9000,
        "n_ctx": 8192,
    }
}
"""llama.cpp server's answer to an oversized prompt (not an OpenAI error object)."""

OPENAI_ERROR_BODIES: Final = {
    "rate_limit": RATE_LIMIT_BODY,
    "server_error": SERVER_ERROR_BODY,
    "context_overflow": CONTEXT_OVERFLOW_BODY,
}


def all_streams() -> dict[str, bytes]:
    """Every SSE fixture by name (the validation test walks them all)."""
    return {
        "text": text_stream(),
        "thinking_reasoning_content": thinking_stream("reasoning_content"),
        "thinking_reasoning": thinking_stream("reasoning", model="openai/gpt-oss-120b"),
        "thinking_reasoning_text": thinking_stream("reasoning_text"),
        "parallel_tool_calls": parallel_tool_call_stream(),
        "openrouter_reasoning_tool": openrouter_reasoning_tool_stream(),
        "deepseek_cache_usage": frame(deepseek_cache_usage_chunks()),
        "content_filter": content_filter_stream(),
        "length": length_stream(),
        "openrouter_mid_stream_error": openrouter_mid_stream_error(),
        "big": big_stream(20_000),
    }


def sse_payloads(body: bytes) -> Iterator[Any]:
    """The JSON payloads of a fixture's events (``[DONE]`` left out)."""
    for block in body.decode().split("\n\n"):
        lines = [line[len("data: ") :] for line in block.split("\n") if line.startswith("data: ")]
        if not lines:
            continue
        data = "\n".join(lines)
        if data == "[DONE]":
            continue
        yield json.loads(data)


# --------------------------------------------------------------------------- pi capture input

PI_DATA_DIR: Final = Path(__file__).resolve().parents[1] / "data" / "pi" / "providers"
PI_INPUT: Final = PI_DATA_DIR / "openai_completions.input.json"
PI_OUTPUT: Final = PI_DATA_DIR / "openai_completions.output.json"
SERVER: Final = "{server}"
"""Placeholder for the loopback server's origin in the cases' base URLs."""
T0: Final = 1735689600000
API_KEY: Final = "test-key"

WEATHER_TOOL: Final = Tool(
    name="get_weather",
    description="Get the weather forecast for a city",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1},
        },
        "required": ["city"],
    },
)
TIME_TOOL: Final = Tool(
    name="get_time",
    description="Current time in a timezone",
    parameters={
        "type": "object",
        "properties": {"timezone": {"type": "string"}, "format": {"type": "string"}},
        "required": ["timezone"],
    },
)
PNG: Final = ImageContent(
    data="iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPgPAAEDAQAIicLsAAAAAElFTkSuQmCC",
    mime_type="image/png",
)
SYSTEM_PROMPT: Final = "You are a helpful assistant. Answer briefly."


def _assistant(model: Model, content: list[Any], **kwargs: Any) -> AssistantMessage:
    defaults: dict[str, Any] = {
        "api": model.api,
        "provider": model.provider,
        "model": model.id,
        "stop_reason": "toolUse",
        "timestamp": T0 + 2,
        "usage": Usage(input=10, output=5, total_tokens=15),
    }
    defaults.update(kwargs)
    return AssistantMessage(content=content, **defaults)


def history(model: Model, *, images: bool = False, foreign: bool = False) -> list[Message]:
    """A conversation with a same-model turn (reasoning, text, tool call), its tool result, an
    errored turn (dropped on replay) and, with ``foreign``, turns from other providers."""
    result_content: list[Any] = [TextContent(text="Sunny, 21 degrees")]
    if images:
        result_content.append(PNG)
    first_user: list[Any] = [TextContent(text="What is the weather in Paris?")]
    if images:
        first_user.append(PNG)
    messages: list[Message] = [
        UserMessage(content=first_user, timestamp=T0 + 1),
        _assistant(
            model,
            [
                ThinkingContent(
                    thinking="The user wants the weather.", thinking_signature="reasoning_content"
                ),
                TextContent(text="Checking the forecast."),
                ToolCall(id="call_same_1", name="get_weather", arguments={"city": "Paris"}),
            ],
        ),
        ToolResultMessage(
            tool_call_id="call_same_1",
            tool_name="get_weather",
            content=result_content,
            is_error=False,
            timestamp=T0 + 3,
        ),
        UserMessage(content="Thanks. Anything else?", timestamp=T0 + 4),
        _assistant(
            model,
            [TextContent(text="")],
            stop_reason="error",
            error_message="500 boom",
            timestamp=T0 + 5,
        ),
    ]
    if foreign:
        messages += [
            UserMessage(content="And the time?", timestamp=T0 + 6),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="Time lookup.", thinking_signature="EqoBCkgIBxAB"),
                    ToolCall(
                        id="toolu_01A09q90qw90lq917835lq9",
                        name="get_time",
                        arguments={"timezone": "Europe/Paris"},
                    ),
                ],
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                stop_reason="toolUse",
                timestamp=T0 + 7,
            ),
            ToolResultMessage(
                tool_call_id="toolu_01A09q90qw90lq917835lq9",
                tool_name="get_time",
                content=[TextContent(text="14:05")],
                is_error=False,
                timestamp=T0 + 8,
            ),
            AssistantMessage(
                content=[
                    ToolCall(
                        id="call_abc123|fc_0123456789abcdef0123456789abcdef+/=",
                        name="get_weather",
                        arguments={"city": "Lyon", "days": 2},
                    )
                ],
                api="openai-responses",
                provider="openai",
                model="gpt-5",
                stop_reason="toolUse",
                timestamp=T0 + 9,
            ),
            ToolResultMessage(
                tool_call_id="call_abc123|fc_0123456789abcdef0123456789abcdef+/=",
                tool_name="get_weather",
                content=[TextContent(text="Rain")],
                is_error=False,
                timestamp=T0 + 10,
            ),
        ]
    messages.append(UserMessage(content="Summarise, please.", timestamp=T0 + 11))
    return messages


def _model(**kwargs: Any) -> Model:
    defaults: dict[str, Any] = {
        "name": kwargs.get("id", "model"),
        "api": "openai-completions",
        "context_window": 128000,
        "max_tokens": 16384,
        "cost": ModelCost(input=0.15, output=0.6, cache_read=0.075, cache_write=0.3),
    }
    defaults.update(kwargs)
    return Model(**defaults)


def _preset_model(preset: str, model_id: str, **kwargs: Any) -> Model:
    return openai_compatible_model(preset, model_id, base_url=f"{SERVER}/v1", **kwargs)


def _case(
    name: str,
    model: Model,
    context: Context,
    response: dict[str, Any],
    *,
    api: str = "simple",
    **options: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "api": api,
        "model": to_wire(model),
        "context": to_wire(context),
        "options": {"apiKey": API_KEY, "maxRetries": 0, **options},
        "response": response,
    }


def _sse(body: bytes) -> dict[str, Any]:
    return {"status": 200, "sse": body.decode()}


def _error(status: int, body: Any) -> dict[str, Any]:
    return {"status": status, "json": body}


def build_pi_cases() -> list[dict[str, Any]]:
    """Requests and responses replayed through pi and through pitrio, compared in the tests."""
    openai_chat = _model(
        id="gpt-4o-mini",
        provider="openai",
        base_url=f"{SERVER}/api.openai.com/v1",
        input=("text", "image"),
    )
    o4 = _model(
        id="o4-mini",
        provider="openai",
        base_url=f"{SERVER}/api.openai.com/v1",
        reasoning=True,
        input=("text", "image"),
    )
    deepseek = _preset_model("deepseek", "deepseek-v4-pro")
    groq = _preset_model("groq", "openai/gpt-oss-120b")
    openrouter_gemini = _preset_model("openrouter", "google/gemini-2.5-pro")
    openrouter_claude = _preset_model("openrouter", "anthropic/claude-sonnet-4")
    ollama = _preset_model("ollama", "gpt-oss:20b", reasoning=True, input=("text", "image"))
    llama_cpp = _preset_model("llama.cpp", "qwen3-8b", reasoning=True)
    vllm = _preset_model("vllm", "Qwen/Qwen2.5-Coder-32B-Instruct", input=("text", "image"))
    lmstudio = _preset_model("lmstudio", "openai/gpt-oss-20b", reasoning=True)
    xai = _preset_model("xai", "grok-4")
    cerebras = _preset_model("cerebras", "gpt-oss-120b")
    mistral = _preset_model("mistral", "mistral-medium-latest")
    tools = (WEATHER_TOOL, TIME_TOOL)

    def ctx(model: Model, **kwargs: Any) -> Context:
        return Context(system_prompt=SYSTEM_PROMPT, messages=history(model, **kwargs), tools=tools)

    simple_ctx = Context(
        system_prompt=SYSTEM_PROMPT,
        messages=[UserMessage(content="Say hello.", timestamp=T0)],
        tools=(WEATHER_TOOL,),
    )
    return [
        _case(
            "openai_text",
            openai_chat,
            simple_ctx,
            _sse(text_stream()),
            sessionId="session-1",
            temperature=0.2,
            maxTokens=1024,
        ),
        _case(
            "openai_stream_api_tools",
            o4,
            ctx(o4, images=True, foreign=True),
            _sse(parallel_tool_call_stream()),
            api="stream",
            reasoningEffort="high",
            toolChoice="required",
            maxTokens=2000,
            sessionId="session-2",
            cacheRetention="none",
        ),
        _case(
            "openai_no_tools_with_history",
            openai_chat,
            Context(messages=history(openai_chat)),
            _sse(text_stream("OK.")),
            reasoning="low",
        ),
        _case(
            "deepseek_thinking",
            deepseek,
            ctx(deepseek, foreign=True),
            _sse(thinking_stream("reasoning_content", model="deepseek-v4-pro")),
            reasoning="xhigh",
        ),
        _case(
            "deepseek_thinking_off",
            deepseek,
            ctx(deepseek),
            _sse(frame(deepseek_cache_usage_chunks())),
        ),
        _case(
            "groq_parallel_tools",
            groq,
            ctx(groq),
            _sse(parallel_tool_call_stream(3)),
            reasoning="medium",
        ),
        _case(
            "openrouter_reasoning_details",
            openrouter_gemini,
            ctx(openrouter_gemini),
            _sse(openrouter_reasoning_tool_stream()),
            reasoning="medium",
        ),
        _case(
            "openrouter_anthropic_cache",
            openrouter_claude,
            ctx(openrouter_claude),
            _sse(text_stream()),
            cacheRetention="long",
            sessionId="session-3",
        ),
        _case(
            "ollama_vision_reasoning",
            ollama,
            ctx(ollama, images=True),
            _sse(thinking_stream("reasoning", model="gpt-oss:20b")),
            reasoning="high",
        ),
        _case(
            "llama_cpp_reasoning",
            llama_cpp,
            ctx(llama_cpp),
            _sse(thinking_stream("reasoning_content", model="qwen3-8b")),
            reasoning="low",
            maxTokens=512,
        ),
        _case(
            "vllm_images_in_tool_results",
            vllm,
            ctx(vllm, images=True),
            _sse(text_stream(model="Qwen/Qwen2.5-Coder-32B-Instruct")),
        ),
        _case(
            "lmstudio_reasoning",
            lmstudio,
            ctx(lmstudio),
            _sse(thinking_stream("reasoning", model="openai/gpt-oss-20b")),
            reasoning="minimal",
        ),
        _case(
            "xai_reasoning_model",
            xai,
            ctx(xai),
            _sse(text_stream(model="grok-4")),
            reasoning="high",
        ),
        _case("cerebras_text", cerebras, ctx(cerebras), _sse(length_stream()), reasoning="low"),
        _case(
            "mistral_tool_names_and_thinking_as_text",
            mistral,
            ctx(mistral),
            _sse(text_stream(model="mistral-medium-2508")),
            reasoning="medium",
        ),
        _case("error_rate_limit", openai_chat, simple_ctx, _error(429, RATE_LIMIT_BODY)),
        _case("error_server", openai_chat, simple_ctx, _error(500, SERVER_ERROR_BODY)),
        _case(
            "error_context_overflow", openai_chat, simple_ctx, _error(400, CONTEXT_OVERFLOW_BODY)
        ),
        _case(
            "error_llama_cpp_overflow", llama_cpp, simple_ctx, _error(400, LLAMA_CPP_OVERFLOW_BODY)
        ),
        _case(
            "error_mid_stream", openrouter_gemini, simple_ctx, _sse(openrouter_mid_stream_error())
        ),
        _case("error_content_filter", openai_chat, simple_ctx, _sse(content_filter_stream())),
        *_flag_cases(tools),
        *_detection_cases(tools),
    ]


FLAG_CASES: Final[dict[str, dict[str, Any]]] = {
    "supportsStore_false": {"supportsStore": False},
    "supportsDeveloperRole_false": {"supportsDeveloperRole": False},
    "supportsReasoningEffort_false": {"supportsReasoningEffort": False},
    "supportsUsageInStreaming_false": {"supportsUsageInStreaming": False},
    "maxTokensField_max_tokens": {"maxTokensField": "max_tokens"},
    "requiresToolResultName": {"requiresToolResultName": True},
    "requiresAssistantAfterToolResult": {"requiresAssistantAfterToolResult": True},
    "requiresThinkingAsText": {"requiresThinkingAsText": True},
    "requiresReasoningContentOnAssistantMessages": {
        "requiresReasoningContentOnAssistantMessages": True
    },
    "thinkingFormat_openrouter": {"thinkingFormat": "openrouter"},
    "thinkingFormat_deepseek": {"thinkingFormat": "deepseek"},
    "thinkingFormat_zai": {"thinkingFormat": "zai"},
    "thinkingFormat_qwen": {"thinkingFormat": "qwen"},
    "thinkingFormat_qwen_chat_template": {"thinkingFormat": "qwen-chat-template"},
    "zaiToolStream": {"zaiToolStream": True},
    "supportsStrictMode_false": {"supportsStrictMode": False},
    "cacheControlFormat_anthropic": {"cacheControlFormat": "anthropic"},
    "sendSessionAffinityHeaders": {"sendSessionAffinityHeaders": True},
    "supportsLongCacheRetention_false": {"supportsLongCacheRetention": False},
}
"""One case per compat flag: a generic server model with just that flag set."""


def _flag_cases(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    cases = []
    for name, compat in FLAG_CASES.items():
        model = _model(
            id="custom-model",
            provider="custom",
            base_url=f"{SERVER}/v1",
            reasoning=True,
            input=("text", "image"),
            compat=compat,
        )
        context = Context(
            system_prompt=SYSTEM_PROMPT, messages=history(model, images=True), tools=tools
        )
        cases.append(
            _case(
                f"flag_{name}",
                model,
                context,
                _sse(text_stream()),
                reasoning="medium",
                sessionId="session-flags",
                cacheRetention="long",
            )
        )
    # Reasoning off: each thinking format says so in its own way.
    for fmt in ("openai", "openrouter", "deepseek", "zai", "qwen-chat-template"):
        model = _model(
            id="custom-model",
            provider="custom",
            base_url=f"{SERVER}/v1",
            reasoning=True,
            compat={"thinkingFormat": fmt},
            thinking_level_map={"off": "none"} if fmt == "openai" else None,
        )
        cases.append(
            _case(
                f"thinking_off_{fmt}", model, Context(messages=history(model)), _sse(text_stream())
            )
        )
    routed = [
        (
            "openRouterRouting",
            "openrouter.ai/api/v1",
            {"openRouterRouting": {"order": ["anthropic", "google"], "allow_fallbacks": False}},
        ),
        (
            "vercelGatewayRouting",
            "ai-gateway.vercel.sh/v1",
            {"vercelGatewayRouting": {"only": ["anthropic"], "order": ["anthropic", "bedrock"]}},
        ),
    ]
    for name, path, compat in routed:
        model = _model(
            id="anthropic/claude-sonnet-4",
            provider="custom",
            base_url=f"{SERVER}/{path}",
            compat=compat,
        )
        cases.append(
            _case(f"flag_{name}", model, Context(messages=history(model)), _sse(text_stream()))
        )
    return cases


def _detection_cases(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """pi's detection from the base URL (the host name appears in the loopback URL's path)."""
    cases = []
    for name, path in (
        ("zai", "api.z.ai/api/paas/v4"),
        ("moonshot", "api.moonshot.ai/v1"),
        ("chutes", "llm.chutes.ai/v1"),
        ("cerebras", "api.cerebras.ai/v1"),
        ("cloudflare_workers", "api.cloudflare.com/client/v4/accounts/abc/ai/v1"),
        ("openrouter", "openrouter.ai/api/v1"),
        ("deepseek", "api.deepseek.com"),
        ("x_ai", "api.x.ai/v1"),
    ):
        model = _model(
            id="some-model",
            provider="custom",
            base_url=f"{SERVER}/{path}",
            reasoning=True,
        )
        context = Context(system_prompt=SYSTEM_PROMPT, messages=history(model), tools=tools)
        cases.append(
            _case(
                f"detect_{name}",
                model,
                context,
                _sse(text_stream()),
                reasoning="high",
                sessionId="session-detect",
                cacheRetention="long",
            )
        )
    return cases


def _write_pi_input() -> None:
    PI_DATA_DIR.mkdir(parents=True, exist_ok=True)
    PI_INPUT.write_text(json.dumps(build_pi_cases(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {PI_INPUT}")


if __name__ == "__main__":
    if sys.argv[1:] == ["write-pi-input"]:
        _write_pi_input()
    else:
        sys.exit(__doc__)


# --------------------------------------------------------------------------- replaying a case


def load_pi_cases() -> list[dict[str, Any]]:
    """The committed capture input (the tests check it still equals :func:`build_pi_cases`)."""
    return json.loads(PI_INPUT.read_text())


def load_pi_output() -> dict[str, Any]:
    """pi's recorded requests and events, by case name."""
    return json.loads(PI_OUTPUT.read_text())


def case_options(options: dict[str, Any]) -> StreamOptions:
    """pi's option object of a case as pitrio :class:`StreamOptions`."""
    provider_options = {
        key: options[key] for key in ("toolChoice", "reasoningEffort") if key in options
    }
    return StreamOptions(
        api_key=options.get("apiKey"),
        max_retries=options.get("maxRetries"),
        session_id=options.get("sessionId"),
        temperature=options.get("temperature"),
        max_tokens=options.get("maxTokens"),
        reasoning=options.get("reasoning"),
        cache_retention=options.get("cacheRetention"),
        provider_options=provider_options or None,
    )


def case_handler(response: dict[str, Any]) -> Any:
    """The loopback handler answering as the case's response says."""
    if "sse" in response:
        return sse_handler(response["sse"].encode(), status=response["status"])
    return error_handler(response["status"], response["json"])


async def run_pi_case(
    case: dict[str, Any], registry: ProviderRegistry
) -> tuple[Request, list[AssistantMessageEvent]]:
    """Run a capture case through pitrio against a loopback server; return request and events."""
    async with serve(case_handler(case["response"])) as server:
        model = from_wire(Model, case["model"])
        model = attrs.evolve(model, base_url=model.base_url.replace(SERVER, server.url()))
        context = from_wire(Context, case["context"])
        options = case_options(case["options"])
        open_stream = stream if case["api"] == "stream" else stream_simple
        events: list[AssistantMessageEvent] = []
        async with open_stream(model, context, options, registry=registry) as received:
            async for event in received:
                events.append(event)
        assert len(server.requests) == 1, server.requests
        return server.requests[0], events


def strip_pi_scratch(data: Any) -> Any:
    """pi's events with the scratch keys its provider keeps on streaming tool calls removed
    (``partialArgs``, ``streamIndex``: parser state, deleted before a call is final)."""
    if isinstance(data, dict):
        return {
            key: strip_pi_scratch(value)
            for key, value in data.items()
            if key not in ("partialArgs", "streamIndex")
        }
    if isinstance(data, list):
        return [strip_pi_scratch(item) for item in data]
    return data
