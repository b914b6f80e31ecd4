"""Gemini ``streamGenerateContent?alt=sse`` responses and the requests that produce them.

Every chunk is a ``GenerateContentResponse`` as the Gemini API writes it (camelCase keys,
``usageMetadata`` on every chunk, ``finishReason`` on the last one, events separated by
``\\r\\n\\r\\n``). ``test_google.py`` validates every payload here against the
``google-genai`` SDK's types, so a fixture the API could not send fails the suite.

:data:`CASES` pairs a request (model, context, options) with a response; the same cases drive
pitrio's tests and ``tests/data/pi/providers/google_capture.mjs``, which records what pi 0.73.1
sends and emits for them (``python -m tests.providers.fixtures_google`` writes the cases file).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    Cost,
    ImageContent,
    Model,
    ModelNotFound,
    StreamOptions,
    TextContent,
    ThinkingBudgets,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    get_model,
)

MODEL_VERSION = "gemini-2.5-flash"
RESPONSE_ID = "bQ5AaLm4Ds2xz7IPn5bS8Q4"
T0 = 1735689600000
API_KEY = "test-gemini-key"
SIG_A = base64.b64encode(b"thought-signature-alpha").decode()
SIG_B = base64.b64encode(b"thought-signature-bravo!").decode()
SIG_C = base64.b64encode(b"signature for the text").decode()
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
CASES_FILE = Path(__file__).parents[1] / "data" / "pi" / "providers" / "google_cases.json"


# --------------------------------------------------------------------------- wire builders


def usage_metadata(
    prompt: int,
    candidates: int | None = None,
    *,
    thoughts: int | None = None,
    cached: int | None = None,
) -> dict[str, Any]:
    """``usageMetadata`` as Gemini reports it (totals include thoughts)."""
    meta: dict[str, Any] = {"promptTokenCount": prompt}
    if candidates is not None:
        meta["candidatesTokenCount"] = candidates
    meta["totalTokenCount"] = prompt + (candidates or 0) + (thoughts or 0)
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    meta["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    if cached is not None:
        meta["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    return meta


def chunk(
    parts: list[dict[str, Any]] | None,
    *,
    usage: dict[str, Any],
    finish: str | None = None,
    model_version: str = MODEL_VERSION,
    response_id: str = RESPONSE_ID,
) -> dict[str, Any]:
    """One streamed ``GenerateContentResponse`` with a single candidate."""
    candidate: dict[str, Any] = {}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model_version,
        "responseId": response_id,
    }


def sse(chunks: Iterable[Mapping[str, Any]]) -> bytes:
    """Frame chunks as the Gemini API does: ``data: <json>`` events ending in CRLF CRLF."""
    return b"".join(
        b"data: " + json.dumps(c, separators=(",", ":"), ensure_ascii=False).encode() + b"\r\n\r\n"
        for c in chunks
    )


def error_body(code: int, message: str, status: str) -> dict[str, Any]:
    """A Google API error body (``google.rpc.Status`` in JSON)."""
    return {"error": {"code": code, "message": message, "status": status}}


# --------------------------------------------------------------------------- response scripts


def text_chunks() -> list[dict[str, Any]]:
    """A plain answer in three chunks, usage on each, ``STOP`` on the last."""
    return [
        chunk([{"text": "Hello"}], usage=usage_metadata(12)),
        chunk([{"text": " there, how can"}], usage=usage_metadata(12)),
        chunk(
            [{"text": " I help you today?"}],
            usage=usage_metadata(12, 9, cached=4),
            finish="STOP",
        ),
    ]


def thinking_chunks() -> list[dict[str, Any]]:
    """Thought summaries (the first one signed), then text signed by an empty last part."""
    return [
        chunk(
            [
                {
                    "text": "**Weighing the question**\n\nThe user asks",
                    "thought": True,
                    "thoughtSignature": SIG_B,
                }
            ],
            usage=usage_metadata(20, thoughts=40),
        ),
        chunk(
            [{"text": " for a number between 1 and 10.", "thought": True}],
            usage=usage_metadata(20, thoughts=64),
        ),
        chunk([{"text": "Seven."}], usage=usage_metadata(20, 2, thoughts=64)),
        chunk(
            [{"text": "", "thoughtSignature": SIG_C}],
            usage=usage_metadata(20, 3, thoughts=64),
            finish="STOP",
        ),
    ]


def tool_call_chunks() -> list[dict[str, Any]]:
    """Thinking, a sentence, then a parallel pair of function calls (the first one signed)."""
    return [
        chunk(
            [{"text": "I need the weather for both cities.", "thought": True}],
            usage=usage_metadata(57, thoughts=31),
            model_version="gemini-2.5-pro",
        ),
        chunk(
            [{"text": "Let me check both cities."}],
            usage=usage_metadata(57, 6, thoughts=31),
            model_version="gemini-2.5-pro",
        ),
        chunk(
            [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris", "units": "celsius", "days": [1, 2, 3]},
                    },
                    "thoughtSignature": SIG_A,
                },
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Zürich", "units": "celsius", "note": "naïve — ok"},
                    }
                },
            ],
            usage=usage_metadata(57, 40, thoughts=31),
            finish="STOP",
            model_version="gemini-2.5-pro",
        ),
    ]


def tool_call_ids_chunks() -> list[dict[str, Any]]:
    """Function calls that carry ids; the second repeats the first id and must get a new one."""
    return [
        chunk(
            [
                {"functionCall": {"id": "call-1", "name": "ls", "args": {"path": "."}}},
                {"functionCall": {"id": "call-1", "name": "read", "args": {"path": "a.txt"}}},
                {"functionCall": {"name": "noop"}},
            ],
            usage=usage_metadata(30, 12),
            finish="STOP",
            model_version="gemini-3-pro-preview",
        )
    ]


def max_tokens_chunks() -> list[dict[str, Any]]:
    return [
        chunk([{"text": "The answer is a long"}], usage=usage_metadata(8)),
        chunk(
            [{"text": " story"}],
            usage=usage_metadata(8, 5),
            finish="MAX_TOKENS",
        ),
    ]


def safety_chunks() -> list[dict[str, Any]]:
    return [
        chunk([{"text": "I can explain"}], usage=usage_metadata(9)),
        chunk(None, usage=usage_metadata(9, 3), finish="SAFETY"),
    ]


def unknown_finish_chunks() -> list[dict[str, Any]]:
    """A finish reason the SDK knows but pi 0.73.1 does not map."""
    return [
        chunk([{"text": "Calling many tools"}], usage=usage_metadata(9)),
        chunk(None, usage=usage_metadata(9, 3), finish="TOO_MANY_TOOL_CALLS"),
    ]


RATE_LIMIT_BODY = error_body(
    429,
    "You exceeded your current quota, please check your plan and billing details.",
    "RESOURCE_EXHAUSTED",
)
SERVER_ERROR_BODY = error_body(
    500, "An internal error has occurred. Please retry or report.", "INTERNAL"
)
OVERLOADED_BODY = error_body(503, "The model is overloaded. Please try again later.", "UNAVAILABLE")
OVERFLOW_BODY = error_body(
    400,
    "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
    "INVALID_ARGUMENT",
)


def response_payloads() -> Iterator[dict[str, Any]]:
    """Every ``GenerateContentResponse`` the fixtures contain (for the SDK check)."""
    for script in (
        text_chunks,
        thinking_chunks,
        tool_call_chunks,
        tool_call_ids_chunks,
        max_tokens_chunks,
        safety_chunks,
        unknown_finish_chunks,
    ):
        yield from script()
    for case in CASES:
        if case.status == 200:
            for line in case.body.split(b"\r\n\r\n"):
                if line:
                    yield json.loads(line.removeprefix(b"data: "))


def error_payloads() -> list[dict[str, Any]]:
    """Every error body the fixtures contain."""
    return [RATE_LIMIT_BODY, SERVER_ERROR_BODY, OVERLOADED_BODY, OVERFLOW_BODY]


def big_stream(chars: int) -> bytes:
    """A long realistic answer of about ``chars`` characters, a sentence or two per chunk."""
    sentences = [
        "Trio's nurseries make every task's lifetime visible in the code. ",
        "A cancel scope turns an abort into an ordinary exception that unwinds cleanly. ",
        "Bounded memory channels push back on a fast producer; nothing grows without limit. ",
        "Gemini streams a GenerateContentResponse per event, usage included each time. ",
        "Unicode survives too: naïve café, Zürich, 東京, and 🚀 rockets. ",
    ]
    chunks = []
    produced = 0
    i = 0
    while produced < chars:
        text = sentences[i % len(sentences)]
        if i % 3 == 0:
            text += sentences[(i + 2) % len(sentences)]
        produced += len(text)
        i += 1
        chunks.append(chunk([{"text": text}], usage=usage_metadata(1200)))
    output_tokens = produced // 4
    chunks.append(
        chunk([{"text": ""}], usage=usage_metadata(1200, output_tokens, cached=800), finish="STOP")
    )
    return sse(chunks)


# --------------------------------------------------------------------------- requests


def google_model(model_id: str, base_url: str = "http://127.0.0.1:1/v1beta") -> Model:
    """A catalogue model of provider ``google`` pointed at ``base_url``.

    An id the catalogue lacks (a Claude model behind a Google endpoint) is built from
    ``gemini-2.5-flash`` without reasoning.
    """
    try:
        model = get_model("google", model_id)
    except ModelNotFound:
        model = attrs.evolve(
            get_model("google", "gemini-2.5-flash"), id=model_id, name=model_id, reasoning=False
        )
    return attrs.evolve(model, base_url=base_url)


WEATHER_TOOL = Tool(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)
SCREENSHOT_TOOL = Tool(
    name="screenshot",
    description="Take a screenshot.",
    parameters={"type": "object", "properties": {}},
)


def _usage() -> Usage:
    return Usage(input=10, output=5, total_tokens=15, cost=Cost())


def _assistant(
    content: list[Any], *, model: str, provider: str = "google", api: str = "google-generative-ai"
) -> AssistantMessage:
    return AssistantMessage(
        content=content,
        api=api,
        provider=provider,
        model=model,
        usage=_usage(),
        stop_reason="toolUse" if any(isinstance(b, ToolCall) for b in content) else "stop",
        timestamp=T0 + 1,
    )


def replay_context(model_id: str) -> Context:
    """A conversation to replay: signed thinking, tool calls, results with images, images."""
    return Context(
        system_prompt="You are a helpful assistant.",
        messages=[
            UserMessage(
                content=[
                    TextContent(text="What is in this picture, and the weather in Paris?"),
                    ImageContent(data=PNG_1PX, mime_type="image/png"),
                ],
                timestamp=T0,
            ),
            _assistant(
                [
                    ThinkingContent(thinking="Look at the image first.", thinking_signature=SIG_B),
                    ThinkingContent(thinking="   "),
                    TextContent(text="A red pixel. Checking the weather.", text_signature=SIG_C),
                    TextContent(text=""),
                    ToolCall(
                        id="call_1",
                        name="get_weather",
                        arguments={"city": "Paris"},
                        thought_signature=SIG_A,
                    ),
                    ToolCall(id="call_2", name="screenshot", arguments={}),
                ],
                model=model_id,
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="get_weather",
                content=[TextContent(text="18°C, sunny")],
                is_error=False,
                timestamp=T0 + 2,
            ),
            ToolResultMessage(
                tool_call_id="call_2",
                tool_name="screenshot",
                content=[ImageContent(data=PNG_1PX, mime_type="image/png")],
                is_error=False,
                timestamp=T0 + 3,
            ),
            _assistant(
                [
                    ThinkingContent(thinking="Signature is not base64.", thinking_signature="@@@"),
                    TextContent(text="It is 18°C and sunny in Paris."),
                ],
                model=model_id,
            ),
            UserMessage(content="Thanks! Now from another model's turn:", timestamp=T0 + 4),
            _assistant(
                [
                    ThinkingContent(thinking="Other model thinking.", thinking_signature="sig|x"),
                    TextContent(text="Other model text.", text_signature=SIG_C),
                    ToolCall(
                        id="toolu_01A|weird/id",
                        name="get_weather",
                        arguments={"city": "Oslo"},
                        thought_signature=SIG_A,
                    ),
                ],
                model="claude-sonnet-4-5",
                provider="anthropic",
                api="anthropic-messages",
            ),
            ToolResultMessage(
                tool_call_id="toolu_01A|weird/id",
                tool_name="get_weather",
                content=[TextContent(text="failed: no data"), TextContent(text="retry later")],
                is_error=True,
                timestamp=T0 + 5,
            ),
            UserMessage(content="Summarise.", timestamp=T0 + 6),
        ],
        tools=[WEATHER_TOOL, SCREENSHOT_TOOL],
    )


def hello_context() -> Context:
    return Context(
        system_prompt="You are terse.",
        messages=[UserMessage(content="Hello", timestamp=T0)],
    )


def weather_context() -> Context:
    return Context(
        system_prompt="Use tools when useful.",
        messages=[UserMessage(content="Weather in Paris and Zürich?", timestamp=T0)],
        tools=[WEATHER_TOOL],
    )


DEFAULT_OPTIONS = StreamOptions(api_key=API_KEY)


@attrs.frozen(kw_only=True)
class Case:
    """One request/response pair, run through pitrio and (by the capture script) through pi."""

    name: str
    model_id: str
    context: Context
    options: StreamOptions = DEFAULT_OPTIONS
    simple: bool = True
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    pi_events: bool = True
    """Whether pi's events are compared too (not only the request)."""


def _json_body(value: Any) -> bytes:
    return json.dumps(value, indent=2).encode()


CASES: tuple[Case, ...] = (
    Case(
        name="text", model_id="gemini-2.5-flash", context=hello_context(), body=sse(text_chunks())
    ),
    Case(
        name="thinking",
        model_id="gemini-2.5-flash",
        context=hello_context(),
        options=StreamOptions(api_key=API_KEY, reasoning="medium"),
        body=sse(thinking_chunks()),
    ),
    Case(
        name="tool_calls",
        model_id="gemini-2.5-pro",
        context=weather_context(),
        options=StreamOptions(api_key=API_KEY, reasoning="high", temperature=0.5),
        body=sse(tool_call_chunks()),
    ),
    Case(
        name="tool_call_ids",
        model_id="gemini-3-pro-preview",
        context=weather_context(),
        options=StreamOptions(api_key=API_KEY, reasoning="medium"),
        body=sse(tool_call_ids_chunks()),
    ),
    Case(
        name="max_tokens",
        model_id="gemini-2.0-flash",
        context=hello_context(),
        options=StreamOptions(api_key=API_KEY, max_tokens=5),
        body=sse(max_tokens_chunks()),
    ),
    Case(
        name="safety",
        model_id="gemini-2.0-flash",
        context=hello_context(),
        body=sse(safety_chunks()),
    ),
    Case(
        name="unknown_finish",
        model_id="gemini-2.0-flash",
        context=hello_context(),
        body=sse(unknown_finish_chunks()),
    ),
    Case(
        name="http_429",
        model_id="gemini-2.5-flash",
        context=hello_context(),
        status=429,
        body=_json_body(RATE_LIMIT_BODY),
        content_type="application/json; charset=UTF-8",
    ),
    Case(
        name="http_500",
        model_id="gemini-2.5-flash",
        context=hello_context(),
        status=500,
        body=_json_body(SERVER_ERROR_BODY),
        content_type="application/json; charset=UTF-8",
    ),
    Case(
        name="http_502_text",
        model_id="gemini-2.5-flash",
        context=hello_context(),
        status=502,
        body=b"<html><body>Bad Gateway</body></html>",
        content_type="text/html",
    ),
    Case(
        name="overflow",
        model_id="gemini-2.5-flash",
        context=hello_context(),
        status=400,
        body=_json_body(OVERFLOW_BODY),
        content_type="application/json; charset=UTF-8",
    ),
    # Request-body cases: what pi sends for representative contexts and options.
    Case(
        name="replay_gemini25",
        model_id="gemini-2.5-pro",
        context=replay_context("gemini-2.5-pro"),
        options=StreamOptions(
            api_key=API_KEY,
            reasoning="low",
            thinking_budgets=ThinkingBudgets(low=1000),
            temperature=0.2,
            max_tokens=4096,
            headers={"X-Custom": "yes"},
        ),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="replay_gemini3",
        model_id="gemini-3-pro-preview",
        context=replay_context("gemini-3-pro-preview"),
        options=StreamOptions(api_key=API_KEY),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="replay_other_model",
        model_id="gemini-2.5-flash",
        context=replay_context("gemini-2.5-pro"),
        options=StreamOptions(api_key=API_KEY, reasoning="xhigh"),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="replay_claude_ids",
        model_id="claude-sonnet-4-5",
        context=replay_context("claude-sonnet-4-5"),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="stream_tool_choice",
        model_id="gemini-2.5-flash",
        context=weather_context(),
        options=StreamOptions(
            api_key=API_KEY,
            max_tokens=100,
            provider_options={
                "toolChoice": "any",
                "thinking": {"enabled": True, "budgetTokens": 512},
            },
        ),
        simple=False,
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="stream_level",
        model_id="gemini-3-flash-preview",
        context=hello_context(),
        options=StreamOptions(
            api_key=API_KEY, provider_options={"thinking": {"enabled": True, "level": "LOW"}}
        ),
        simple=False,
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="stream_plain",
        model_id="gemini-2.5-flash",
        context=weather_context(),
        options=StreamOptions(api_key=API_KEY, provider_options={"toolChoice": "none"}),
        simple=False,
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="simple_off_gemini3_flash",
        model_id="gemini-3-flash-preview",
        context=hello_context(),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="simple_off_gemini3_pro",
        model_id="gemini-3.1-pro-preview",
        context=hello_context(),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="simple_gemma4_low",
        model_id="gemma-4-31b-it",
        context=hello_context(),
        options=StreamOptions(api_key=API_KEY, reasoning="low"),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="simple_flash_lite_minimal",
        model_id="gemini-2.5-flash-lite",
        context=replay_context("gemini-2.5-flash-lite"),
        options=StreamOptions(api_key=API_KEY, reasoning="minimal"),
        body=sse(text_chunks()),
        pi_events=False,
    ),
    Case(
        name="simple_dynamic_budget",
        model_id="gemini-flash-latest",
        context=hello_context(),
        options=StreamOptions(api_key=API_KEY, reasoning="high"),
        body=sse(text_chunks()),
        pi_events=False,
    ),
)
CASES_BY_NAME = {case.name: case for case in CASES}


def pi_options(case: Case) -> dict[str, Any]:
    """The case's options as pi's ``StreamOptions`` / ``GoogleOptions`` JSON."""
    options = case.options
    out: dict[str, Any] = {}
    if options.api_key is not None:
        out["apiKey"] = options.api_key
    if options.temperature is not None:
        out["temperature"] = options.temperature
    if options.max_tokens is not None:
        out["maxTokens"] = options.max_tokens
    if options.headers is not None:
        out["headers"] = dict(options.headers)
    if options.reasoning is not None:
        out["reasoning"] = options.reasoning
    if options.thinking_budgets is not None:
        budgets = attrs.asdict(options.thinking_budgets)
        out["thinkingBudgets"] = {k: v for k, v in budgets.items() if v is not None}
    out.update(options.provider_options or {})
    return out


def pi_cases() -> dict[str, Any]:
    """The cases as the capture script reads them."""
    return {
        "cases": [
            {
                "name": case.name,
                "mode": "simple" if case.simple else "stream",
                "model": to_wire(google_model(case.model_id)),
                "context": to_wire(case.context),
                "options": pi_options(case),
                "response": {
                    "status": case.status,
                    "contentType": case.content_type,
                    "body": case.body.decode(),
                },
            }
            for case in CASES
        ]
    }


def main() -> None:
    """Write the cases file for ``google_capture.mjs``."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else CASES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pi_cases(), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
