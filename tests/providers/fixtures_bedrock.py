"""Bedrock ConverseStream responses, framed as the service frames them.

Every builder returns one ``(event type, payload)`` pair with the members of the service's
``ConverseStreamOutput`` shapes (``test_bedrock.py`` checks them against botocore's service
model); live payloads also carry a ``p`` member, random padding that hides the length of the
content, which clients ignore, and so do these. :func:`frame` encodes one message of the
``application/vnd.amazon.eventstream`` format with its own encoder (written from the format's
description, not from the decoder under test), :func:`to_eventstream` a whole stream.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

EVENT_STREAM = "application/vnd.amazon.eventstream"
HEADERS = {"content-type": EVENT_STREAM, "x-amzn-requestid": "6b3e5a4c-0000-4000-8000-0000000b3d0c"}
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
SIGNATURE = (
    "EqoBCkgIBxABGAIiQFv0J2Uu8E0mQhRyZ6uK0nP+6bq6bWm4pR8d9t6m0Q+fOQ2W7sYl8e3m0yO1kX9k2d8jZ1q"
    "Y5x0a1c2e3g4i5k6m7o8q9s0u1w2y3A4C5E6G7I8K9M0O1Q2S3"
)
TOOL_ID_1 = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"
TOOL_ID_2 = "tooluse_8hG2pXWmQ6KfL1V0n3cJ4A"

Event = tuple[str, dict[str, Any]]


# --------------------------------------------------------------------------- framing


def _string_header(name: str, value: str) -> bytes:
    raw_name = name.encode()
    raw_value = value.encode()
    return (
        struct.pack(">B", len(raw_name))
        + raw_name
        + struct.pack(">BH", 7, len(raw_value))
        + raw_value
    )


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message with string headers, both CRCs set."""
    head = b"".join(_string_header(name, value) for name, value in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_frame(event_type: str, payload: Mapping[str, Any], *, pad: bool = True) -> bytes:
    data = dict(payload)
    if pad:
        data["p"] = PADDING[: 7 + len(event_type) % 20]
    return frame(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(data, separators=(",", ":")).encode(),
    )


def exception_frame(exception_type: str, message: str) -> bytes:
    return frame(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode(),
    )


def to_eventstream(events: Iterable[Event]) -> bytes:
    return b"".join(event_frame(name, payload) for name, payload in events)


# --------------------------------------------------------------------------- events


def message_start() -> Event:
    return ("messageStart", {"role": "assistant"})


def text_delta(index: int, text: str) -> Event:
    return ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}})


def reasoning_delta(index: int, text: str) -> Event:
    return (
        "contentBlockDelta",
        {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": text}}},
    )


def signature_delta(index: int, signature: str = SIGNATURE) -> Event:
    return (
        "contentBlockDelta",
        {"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": signature}}},
    )


def tool_start(index: int, tool_id: str, name: str) -> Event:
    return (
        "contentBlockStart",
        {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": tool_id, "name": name}}},
    )


def tool_delta(index: int, piece: str) -> Event:
    return (
        "contentBlockDelta",
        {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}},
    )


def block_stop(index: int) -> Event:
    return ("contentBlockStop", {"contentBlockIndex": index})


def message_stop(reason: str = "end_turn") -> Event:
    return ("messageStop", {"stopReason": reason})


def metadata(
    input_tokens: int = 25,
    output_tokens: int = 12,
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> Event:
    usage: dict[str, Any] = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens + (cache_read or 0) + (cache_write or 0),
    }
    if cache_read is not None:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write is not None:
        usage["cacheWriteInputTokens"] = cache_write
    return ("metadata", {"usage": usage, "metrics": {"latencyMs": 412}})


# --------------------------------------------------------------------------- streams

TEXT = "Hello! How can I help you today?"


def text_stream(stop: str = "end_turn") -> list[Event]:
    return [
        message_start(),
        text_delta(0, "Hello!"),
        text_delta(0, " How can I help"),
        text_delta(0, " you today?"),
        block_stop(0),
        message_stop(stop),
        metadata(),
    ]


THINKING = "The user wants 27 * 453. 27 * 453 = 12231."


def thinking_stream() -> list[Event]:
    return [
        message_start(),
        reasoning_delta(0, "The user wants 27 * 453."),
        reasoning_delta(0, " 27 * 453 = 12231."),
        signature_delta(0, SIGNATURE[:60]),
        signature_delta(0, SIGNATURE[60:]),
        block_stop(0),
        text_delta(1, "12231"),
        block_stop(1),
        message_stop(),
        metadata(40, 90),
    ]


TOOL_ARGS_1 = {"path": "src/main.py", "offset": 10, "limit": 200}
TOOL_ARGS_2 = {"command": "ls -la \"my dir\" | grep '.py'", "timeout": 30}
TOOL_JSON_1 = json.dumps(TOOL_ARGS_1, separators=(",", ":"))
TOOL_JSON_2 = json.dumps(TOOL_ARGS_2, separators=(",", ":"))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def tool_calls_stream(*, thinking: bool = False) -> list[Event]:
    events = [message_start()]
    index = 0
    if thinking:
        events += [
            reasoning_delta(0, "I should read the file, then list the directory."),
            signature_delta(0),
            block_stop(0),
        ]
        index = 1
    events += [
        text_delta(index, "Let me look."),
        block_stop(index),
        tool_start(index + 1, TOOL_ID_1, "read"),
        *(tool_delta(index + 1, piece) for piece in _pieces(TOOL_JSON_1, 9)),
        block_stop(index + 1),
        tool_start(index + 2, TOOL_ID_2, "bash"),
        *(tool_delta(index + 2, piece) for piece in _pieces(TOOL_JSON_2, 11)),
        block_stop(index + 2),
        message_stop("tool_use"),
        metadata(120, 80),
    ]
    return events


def cache_usage_stream() -> list[Event]:
    return [
        message_start(),
        text_delta(0, "Cached."),
        block_stop(0),
        message_stop(),
        metadata(12, 5, cache_read=3000, cache_write=1500),
    ]


STREAMS: dict[str, list[Event]] = {
    "text": text_stream(),
    "thinking": thinking_stream(),
    "tool_calls": tool_calls_stream(),
    "tool_calls_thinking": tool_calls_stream(thinking=True),
    "cache_usage": cache_usage_stream(),
}
"""Every complete stream of this module, for the shape check."""


# --------------------------------------------------------------------------- pi capture cases

CASES_FILE = Path(__file__).parents[1] / "data" / "pi" / "providers" / "bedrock_cases.json"
PI_TIMESTAMP = 1735689600000
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image bytes").decode()


def _history(model_id: str) -> list[dict[str, Any]]:
    """A conversation ending in tool results, its assistant turn made by ``model_id``."""
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Look first.", "thinkingSignature": SIGNATURE},
            {"type": "thinking", "thinking": "Unsigned musing."},
            {"type": "text", "text": "Reading."},
            {"type": "text", "text": "   "},
            {"type": "toolCall", "id": TOOL_ID_1, "name": "read", "arguments": TOOL_ARGS_1},
            {"type": "toolCall", "id": TOOL_ID_2, "name": "bash", "arguments": TOOL_ARGS_2},
        ],
        "api": "bedrock-converse-stream",
        "provider": "amazon-bedrock",
        "model": model_id,
        "usage": {
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "toolUse",
        "timestamp": PI_TIMESTAMP,
    }
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture and main.py?"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ],
            "timestamp": PI_TIMESTAMP,
        },
        assistant,
        {
            "role": "toolResult",
            "toolCallId": TOOL_ID_1,
            "toolName": "read",
            "content": [
                {"type": "text", "text": "print(1)"},
                {"type": "image", "data": PNG, "mimeType": "image/webp"},
            ],
            "isError": False,
            "timestamp": PI_TIMESTAMP,
        },
        {
            "role": "toolResult",
            "toolCallId": TOOL_ID_2,
            "toolName": "bash",
            "content": [{"type": "text", "text": "not found"}],
            "isError": True,
            "timestamp": PI_TIMESTAMP,
        },
    ]


TOOLS_JSON = [
    {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {"name": "bash", "description": "Run a command.", "parameters": {"type": "object"}},
]


def _case(
    name: str,
    model_id: str,
    events: bytes,
    *,
    mode: str = "simple",
    messages: list[dict[str, Any]] | None = None,
    options: dict[str, Any] | None = None,
    tools: bool = True,
) -> dict[str, Any]:
    from pitrio.codec import to_wire
    from pitrio.providers import get_model

    context: dict[str, Any] = {
        "systemPrompt": "You are helpful.",
        "messages": messages or [{"role": "user", "content": "Hello", "timestamp": PI_TIMESTAMP}],
    }
    if tools:
        context["tools"] = TOOLS_JSON
    return {
        "name": name,
        "mode": mode,
        "model": to_wire(get_model("amazon-bedrock", model_id)),
        "context": context,
        "options": options or {},
        "response": {
            "status": 200,
            "contentType": EVENT_STREAM,
            "body": base64.b64encode(events).decode(),
        },
    }


CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
OPUS_46 = "anthropic.claude-opus-4-6-v1"
NOVA = "amazon.nova-pro-v1:0"
DEEPSEEK = "deepseek.r1-v1:0"


def pi_cases() -> list[dict[str, Any]]:
    """The cases ``bedrock_capture.mjs`` runs through pi and ``test_bedrock_pi.py`` through pitrio."""
    throttled = to_eventstream([message_start(), text_delta(0, "Partial")]) + exception_frame(
        "ThrottlingException", "Too many tokens, please wait before trying again."
    )
    return [
        _case("text", CLAUDE, to_eventstream(text_stream())),
        _case("text_nova", NOVA, to_eventstream(text_stream()), tools=False),
        _case(
            "thinking_budget",
            CLAUDE,
            to_eventstream(thinking_stream()),
            options={"reasoning": "medium"},
        ),
        _case(
            "thinking_adaptive_xhigh",
            OPUS_46,
            to_eventstream(thinking_stream()),
            options={"reasoning": "xhigh", "maxTokens": 4000},
        ),
        _case(
            "thinking_deepseek",
            DEEPSEEK,
            to_eventstream(thinking_stream()),
            options={"reasoning": "high"},
            tools=False,
        ),
        _case("tool_calls", CLAUDE, to_eventstream(tool_calls_stream(thinking=True))),
        _case("cache_usage", CLAUDE, to_eventstream(cache_usage_stream())),
        _case("max_tokens", CLAUDE, to_eventstream(text_stream("max_tokens"))),
        _case("guardrail", CLAUDE, to_eventstream(text_stream("guardrail_intervened"))),
        _case("throttled", CLAUDE, throttled),
        _case(
            "history_claude_long",
            CLAUDE,
            to_eventstream(text_stream()),
            mode="stream",
            messages=_history(CLAUDE),
            options={"cacheRetention": "long", "maxTokens": 1000, "temperature": 0.3},
        ),
        _case(
            "history_nova",
            NOVA,
            to_eventstream(text_stream()),
            messages=_history(NOVA),
            options={"toolChoice": "any"},
            mode="stream",
        ),
        _case(
            "history_foreign",
            CLAUDE,
            to_eventstream(text_stream()),
            messages=_history("gpt-5"),
            options={"cacheRetention": "none"},
        ),
    ]


def write_cases() -> None:
    """Write the cases file for ``bedrock_capture.mjs``."""
    CASES_FILE.write_text(json.dumps({"cases": pi_cases()}, indent=1) + "\n")


if __name__ == "__main__":
    write_cases()
