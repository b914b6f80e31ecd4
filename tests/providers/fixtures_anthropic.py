"""Anthropic Messages API streams, built as the real API sends them.

Every builder returns the JSON payload of one SSE event (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``, ``ping``, ``error``) with the fields and nesting of the
live API; ``test_anthropic.py`` validates all of them against the ``anthropic`` SDK's own types.
:func:`to_sse` frames a list of payloads as the API frames them (``event: <type>`` then
``data: <json>``). :data:`STREAMS` names the complete streams the tests and the pi capture use.

Run ``python tests/providers/fixtures_anthropic.py`` to rewrite
``tests/data/pi/providers/anthropic_cases.json``, the input of ``anthropic_capture.mjs``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

MODEL_ID = "claude-sonnet-4-5-20250929"
"""The model id a response reports (the request's catalogue model may be an alias)."""
MESSAGE_ID = "msg_01XFDUDYJgAACzvnptvVoYEL"
SIGNATURE = (
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7KwKVQ1KNYQsNnUjmSJ4bqxNNLw0Gf3MxAeIQ"
    "AHfq0a1V6NuyFbvsyvt8L9ZvQx1VZYIQf6OQuZvmzaBmEGz0Yvhg3JZwZeTlxCsFSdMsGXUBgXUlhE41UdJqFk"
)
REDACTED_DATA = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5"
    "URj2pSmN6kuNd6nlNJ3Eb"
)
TOOL_ID_1 = "toolu_01A09q90qw90lq917835lq9"
TOOL_ID_2 = "toolu_01BkBUGNVjL5k2o3b4KrQZWa"


# --------------------------------------------------------------------------- event payloads


def message_start(
    *,
    input_tokens: int = 25,
    output_tokens: int = 1,
    cache_read: int = 0,
    cache_write: int = 0,
    message_id: str = MESSAGE_ID,
    model: str = MODEL_ID,
) -> dict[str, Any]:
    """The first event: an empty assistant message with the prompt's usage."""
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": cache_write,
                "cache_read_input_tokens": cache_read,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": cache_write,
                    "ephemeral_1h_input_tokens": 0,
                },
                "output_tokens": output_tokens,
                "service_tier": "standard",
            },
        },
    }


def text_start(index: int) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }


def thinking_start(index: int) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }


def redacted_thinking_start(index: int, data: str = REDACTED_DATA) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "redacted_thinking", "data": data},
    }


def tool_use_start(index: int, tool_id: str, name: str) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
    }


def server_tool_use_start(index: int) -> dict[str, Any]:
    """A server-side tool block (web search): pi's messages have no place for it."""
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {
            "type": "server_tool_use",
            "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
            "name": "web_search",
            "input": {},
        },
    }


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": text},
    }


def thinking_delta(index: int, thinking: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "thinking_delta", "thinking": thinking},
    }


def signature_delta(index: int, signature: str = SIGNATURE) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "signature_delta", "signature": signature},
    }


def input_json_delta(index: int, partial_json: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "input_json_delta", "partial_json": partial_json},
    }


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(
    stop_reason: str,
    *,
    output_tokens: int,
    input_tokens: int | None = None,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> dict[str, Any]:
    """The closing usage and stop reason; the usage fields given replace message_start's."""
    usage: dict[str, Any] = {}
    if input_tokens is not None:
        usage["input_tokens"] = input_tokens
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    usage["output_tokens"] = output_tokens
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage,
    }


def message_stop() -> dict[str, Any]:
    return {"type": "message_stop"}


def ping() -> dict[str, Any]:
    return {"type": "ping"}


def error_payload(error_type: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    """An error body: the data of an SSE ``error`` event, or an HTTP error response."""
    payload: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    if request_id is not None:
        payload["request_id"] = request_id
    return payload


def to_sse(events: Iterable[dict[str, Any]]) -> bytes:
    """Frame payloads as the API does: ``event: <type>``, ``data: <compact json>``, blank line."""
    frames = []
    for event in events:
        data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        frames.append(f"event: {event['type']}\ndata: {data}\n\n")
    return "".join(frames).encode()


def chunks(text: str, size: int) -> list[str]:
    """Cut ``text`` into pieces of ``size`` characters (the last may be shorter)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


# --------------------------------------------------------------------------- whole streams


TEXT = "Hello! How can I help you today?"


def text_stream() -> list[dict[str, Any]]:
    """A plain answer in three deltas, with a ping as the live API sends one."""
    return [
        message_start(input_tokens=21, output_tokens=1),
        text_start(0),
        ping(),
        text_delta(0, "Hello!"),
        text_delta(0, " How can I help"),
        text_delta(0, " you today?"),
        block_stop(0),
        message_delta("end_turn", output_tokens=12),
        message_stop(),
    ]


THINKING = "The user wants 27 * 453. 27 * 453 = 12231."


def thinking_stream() -> list[dict[str, Any]]:
    """Extended thinking (signature in two deltas), then the answer."""
    half = len(SIGNATURE) // 2
    return [
        message_start(input_tokens=52, output_tokens=4),
        thinking_start(0),
        *(thinking_delta(0, piece) for piece in chunks(THINKING, 11)),
        signature_delta(0, SIGNATURE[:half]),
        signature_delta(0, SIGNATURE[half:]),
        block_stop(0),
        text_start(1),
        text_delta(1, "27 * 453 = "),
        text_delta(1, "12231"),
        block_stop(1),
        message_delta("end_turn", output_tokens=87),
        message_stop(),
    ]


def redacted_thinking_stream() -> list[dict[str, Any]]:
    """A redacted thinking block next to a normal one."""
    return [
        message_start(input_tokens=60, output_tokens=3),
        redacted_thinking_start(0),
        block_stop(0),
        thinking_start(1),
        thinking_delta(1, "Let me answer."),
        signature_delta(1),
        block_stop(1),
        text_start(2),
        text_delta(2, "Done."),
        block_stop(2),
        message_delta("end_turn", output_tokens=40),
        message_stop(),
    ]


TOOL_ARGS_1 = {"path": "src/main.py", "offset": 10, "limit": 200}
TOOL_ARGS_2 = {"command": "ls -la \"my dir\" | grep '.py'", "timeout": 30}
TOOL_JSON_1 = json.dumps(TOOL_ARGS_1, separators=(",", ":"))
TOOL_JSON_2 = json.dumps(TOOL_ARGS_2, separators=(",", ":"))


def tool_calls_stream() -> list[dict[str, Any]]:
    """Text, then two tool calls whose argument JSON arrives in many small pieces.

    The first delta of each call is empty, as the live API sends it.
    """
    return [
        message_start(input_tokens=410, output_tokens=8),
        text_start(0),
        text_delta(0, "I'll look at both."),
        block_stop(0),
        tool_use_start(1, TOOL_ID_1, "read"),
        input_json_delta(1, ""),
        *(input_json_delta(1, piece) for piece in chunks(TOOL_JSON_1, 5)),
        block_stop(1),
        tool_use_start(2, TOOL_ID_2, "bash"),
        input_json_delta(2, ""),
        *(input_json_delta(2, piece) for piece in chunks(TOOL_JSON_2, 7)),
        block_stop(2),
        message_delta("tool_use", output_tokens=96),
        message_stop(),
    ]


def cache_usage_stream() -> list[dict[str, Any]]:
    """A cached prompt: message_start reports cache reads and writes; message_delta the totals."""
    return [
        message_start(input_tokens=12, output_tokens=1, cache_read=18000, cache_write=2400),
        text_start(0),
        text_delta(0, "Cached."),
        block_stop(0),
        message_delta(
            "end_turn", output_tokens=150, input_tokens=12, cache_read=18000, cache_write=2400
        ),
        message_stop(),
    ]


def max_tokens_stream() -> list[dict[str, Any]]:
    """The answer is cut at ``max_tokens``."""
    return [
        message_start(input_tokens=30, output_tokens=1),
        text_start(0),
        text_delta(0, "Once upon a time"),
        block_stop(0),
        message_delta("max_tokens", output_tokens=5),
        message_stop(),
    ]


def refusal_stream() -> list[dict[str, Any]]:
    """The safety classifier stops the answer."""
    return [
        message_start(input_tokens=30, output_tokens=1),
        text_start(0),
        text_delta(0, "I"),
        block_stop(0),
        message_delta("refusal", output_tokens=2),
        message_stop(),
    ]


def server_tool_stream() -> list[dict[str, Any]]:
    """A server tool block between two text blocks: its events are skipped."""
    return [
        message_start(input_tokens=30, output_tokens=1),
        text_start(0),
        text_delta(0, "Searching."),
        block_stop(0),
        server_tool_use_start(1),
        input_json_delta(1, '{"query":"trio"}'),
        block_stop(1),
        text_start(2),
        text_delta(2, "Found it."),
        block_stop(2),
        message_delta("end_turn", output_tokens=20),
        message_stop(),
    ]


OVERLOADED = error_payload("overloaded_error", "Overloaded")


def overloaded_stream() -> list[dict[str, Any]]:
    """The API gives up mid-answer with an ``error`` event (HTTP status was already 200)."""
    return [
        message_start(input_tokens=30, output_tokens=1),
        text_start(0),
        text_delta(0, "Partial"),
        OVERLOADED,
    ]


def truncated_stream() -> list[dict[str, Any]]:
    """The body ends cleanly but before ``message_stop``."""
    return [
        message_start(input_tokens=30, output_tokens=1),
        text_start(0),
        text_delta(0, "Cut"),
        block_stop(0),
    ]


STREAMS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "text": text_stream,
    "thinking": thinking_stream,
    "redacted_thinking": redacted_thinking_stream,
    "tool_calls": tool_calls_stream,
    "cache_usage": cache_usage_stream,
    "max_tokens": max_tokens_stream,
    "refusal": refusal_stream,
    "server_tool": server_tool_stream,
    "overloaded": overloaded_stream,
    "truncated": truncated_stream,
}
"""Every complete stream, by name."""

ERROR_BODIES: dict[str, tuple[int, dict[str, Any]]] = {
    "rate_limit": (
        429,
        error_payload(
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per minute.",
            "req_011CSHoEeqs5C35K2UUqR7Fy",
        ),
    ),
    "server_error": (500, error_payload("api_error", "Internal server error")),
    "overloaded": (529, error_payload("overloaded_error", "Overloaded")),
    "overflow": (
        400,
        error_payload(
            "invalid_request_error", "prompt is too long: 213462 tokens > 200000 maximum"
        ),
    ),
}
"""HTTP error answers: ``(status, body)``, with the bodies the API really sends."""


def big_stream(chars: int) -> bytes:
    """A long realistic text answer of about ``chars`` characters of text, for benchmarks.

    Deltas are a few words each, as the live API streams them, with a ping near the start.
    """
    words = (
        "The quick brown fox jumps over the lazy dog while the streaming parser keeps up "
        "with every delta, one small JSON object at a time."
    ).split()
    events = [message_start(input_tokens=1200, output_tokens=1), text_start(0), ping()]
    produced = 0
    piece = 0
    while produced < chars:
        text = " " + " ".join(words[piece % 24 : piece % 24 + 3])
        events.append(text_delta(0, text))
        produced += len(text)
        piece += 3
    events += [
        block_stop(0),
        message_delta("end_turn", output_tokens=max(1, produced // 4)),
        message_stop(),
    ]
    return to_sse(events)


# --------------------------------------------------------------------------- pi capture cases

CASES_FILE = (
    Path(__file__).resolve().parent.parent / "data" / "pi" / "providers" / "anthropic_cases.json"
)
T0 = 1735689600000


def _user(text: str, offset: int = 0) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": T0 + offset}


def _assistant(content: list[dict[str, Any]], offset: int, **fields: Any) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 10,
            "output": 5,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 15,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": T0 + offset,
    }
    message.update(fields)
    return message


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

TOOLS = [
    {
        "name": "read",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path"},
                "offset": {"type": "number"},
                "limit": {"type": "number"},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "bash",
        "description": "Run a command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
            "required": ["command"],
        },
    },
]


def _history_context() -> dict[str, Any]:
    """System prompt, tools, signed and redacted thinking, two tool results (one with an
    image), a foreign tool call whose id must be normalised, and an image in a user message."""
    return {
        "systemPrompt": "You are a helpful coding assistant.",
        "messages": [
            _user("Look at the repo.", 0),
            _assistant(
                [
                    {
                        "type": "thinking",
                        "thinking": "I should read it.",
                        "thinkingSignature": SIGNATURE,
                    },
                    {
                        "type": "thinking",
                        "thinking": "[Reasoning redacted]",
                        "thinkingSignature": REDACTED_DATA,
                        "redacted": True,
                    },
                    {"type": "thinking", "thinking": "unsigned musing"},
                    {"type": "text", "text": "Reading now."},
                    {"type": "toolCall", "id": TOOL_ID_1, "name": "read", "arguments": TOOL_ARGS_1},
                    {"type": "toolCall", "id": TOOL_ID_2, "name": "bash", "arguments": TOOL_ARGS_2},
                ],
                1,
                stopReason="toolUse",
            ),
            {
                "role": "toolResult",
                "toolCallId": TOOL_ID_1,
                "toolName": "read",
                "content": [
                    {"type": "text", "text": "print('hi')"},
                    {"type": "text", "text": "# end"},
                ],
                "isError": False,
                "timestamp": T0 + 2,
            },
            {
                "role": "toolResult",
                "toolCallId": TOOL_ID_2,
                "toolName": "bash",
                "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}],
                "isError": True,
                "timestamp": T0 + 3,
            },
            _assistant(
                [
                    {"type": "text", "text": "Checking with another tool."},
                    {
                        "type": "toolCall",
                        "id": "call_abc|fc_123+x/y=",
                        "name": "read",
                        "arguments": {"path": "a"},
                    },
                ],
                4,
                api="openai-responses",
                provider="openai",
                model="gpt-5",
                stopReason="toolUse",
            ),
            {
                "role": "toolResult",
                "toolCallId": "call_abc|fc_123+x/y=",
                "toolName": "read",
                "content": [{"type": "text", "text": "contents of a"}],
                "isError": False,
                "timestamp": T0 + 5,
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                ],
                "timestamp": T0 + 6,
            },
        ],
        "tools": TOOLS,
    }


def capture_cases() -> dict[str, Any]:
    """The runs ``anthropic_capture.mjs`` records with pi and ``test_anthropic.py`` replays.

    Each case: the catalogue model, the context (pi's JSON), whether ``streamSimple`` is used,
    the options (pi's names; the capture adds ``apiKey`` and ``maxRetries: 0``), and the
    response (SSE text, or an HTTP error status and body).
    """
    simple_context = {"systemPrompt": "Be brief.", "messages": [_user("Hi")]}
    cases: dict[str, Any] = {}

    def add(name: str, stream: str | None, **case: Any) -> None:
        case.setdefault("model", "claude-sonnet-4-5")
        case.setdefault("context", simple_context)
        case.setdefault("simple", True)
        case.setdefault("options", {})
        if stream is not None:
            case["sse"] = to_sse(STREAMS[stream]()).decode()
        cases[name] = case

    add("text", "text")
    add("thinking_budget", "thinking", options={"reasoning": "medium", "maxTokens": 4000})
    add(
        "thinking_adaptive",
        "thinking",
        model="claude-opus-4-6",
        options={"reasoning": "xhigh", "temperature": 0.5},
    )
    add("redacted_thinking", "redacted_thinking", options={"reasoning": "low"})
    add("tool_calls", "tool_calls", context=_history_context())
    add(
        "history_long_cache",
        "text",
        context=_history_context(),
        options={
            "cacheRetention": "long",
            "temperature": 0.2,
            "metadata": {"user_id": "user-42", "other": 1},
            "headers": {"X-Custom": "yes"},
        },
    )
    add(
        "stream_options",
        "cache_usage",
        simple=False,
        context=_history_context(),
        options={
            "cacheRetention": "none",
            "thinkingEnabled": True,
            "thinkingBudgetTokens": 3000,
            "thinkingDisplay": "omitted",
            "toolChoice": {"type": "tool", "name": "read"},
            "interleavedThinking": False,
        },
    )
    add("max_tokens", "max_tokens", model="claude-3-5-haiku-20241022", options={"temperature": 0})
    add("refusal", "refusal")
    add("server_tool", "server_tool")
    add("overloaded", "overloaded")
    add("truncated", "truncated")
    for name in ("rate_limit", "overflow"):
        status, body = ERROR_BODIES[name]
        add(f"http_{name}", None, status=status, body=json.dumps(body, separators=(",", ":")))
    return cases


def write_cases() -> None:
    """Rewrite :data:`CASES_FILE` from :func:`capture_cases`."""
    CASES_FILE.parent.mkdir(parents=True, exist_ok=True)
    CASES_FILE.write_text(json.dumps(capture_cases(), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write_cases()
