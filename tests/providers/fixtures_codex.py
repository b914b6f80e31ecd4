"""Codex backend streams and tokens for the openai-codex-responses tests.

The Codex backend speaks the Responses event stream (see fixtures_openai_responses.py), and may
end it with ``response.done`` instead of ``response.completed``. :func:`codex_sse` writes a
:class:`ResponsesStream` that way; :func:`as_sdk_events` maps ``response.done`` back so every
event can be checked against the openai SDK's types (which have no ``response.done``).

:func:`access_token` builds a JWT shaped like a ChatGPT sign-in token (header, payload with the
``https://api.openai.com/auth`` claim, a dummy signature), unsigned: the provider reads the claim
and never checks the signature.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final

from fixtures_openai_responses import (
    WEATHER_TOOL_PI,
    ResponsesStream,
    catalogue_models,
    error_event_stream,
    failed_stream,
    incomplete_stream,
    text_stream,
    thinking_stream,
    tool_calls_stream,
)
from loopback import sse_bytes

ACCOUNT_ID: Final = "acc-7f3e2a19-4b6c-4d8e-9f01-23456789abcd"
USAGE_LIMIT_BODY: Final = {
    "error": {
        "type": "usage_limit_reached",
        "message": "The usage limit has been reached",
        "plan_type": "plus",
        "resets_at": None,  # filled in by usage_limit_body()
    }
}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_token(account_id: str | None = ACCOUNT_ID, *, exp: int = 2_000_000_000) -> str:
    """An access token whose JWT claim carries ``account_id`` (none when ``None``)."""
    header = {"alg": "RS256", "typ": "JWT"}
    payload: dict[str, Any] = {"exp": exp, "iss": "https://auth.openai.com"}
    if account_id is not None:
        payload["https://api.openai.com/auth"] = {"chatgpt_account_id": account_id}
    parts = [_b64url(json.dumps(part).encode()) for part in (header, payload)]
    return ".".join([*parts, _b64url(b"signature")])


def usage_limit_body(resets_at: float, plan: str = "plus") -> dict[str, Any]:
    """The 429 body of a used-up ChatGPT quota resetting at ``resets_at`` (epoch seconds)."""
    return {"error": {**USAGE_LIMIT_BODY["error"], "plan_type": plan, "resets_at": resets_at}}


def with_done(stream: ResponsesStream) -> list[dict[str, Any]]:
    """The stream's events with its final ``response.completed`` renamed ``response.done``."""
    events = [dict(event) for event in stream.events]
    if events and events[-1]["type"] == "response.completed":
        events[-1]["type"] = "response.done"
    return events


def codex_sse(events: list[dict[str, Any]]) -> bytes:
    """The events as the backend sends them (``event:`` lines named after each type)."""
    return sse_bytes((event["type"], event) for event in events)


def as_sdk_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with ``response.done`` read as ``response.completed`` (as the provider does)."""
    return [
        {**event, "type": "response.completed"} if event["type"] == "response.done" else event
        for event in events
    ]


# --------------------------------------------------------------------------- pi captures

PI_DATA_DIR: Final = Path(__file__).parent.parent / "data" / "pi" / "providers"
PI_INPUT: Final = PI_DATA_DIR / "openai_family.input.json"
PI_OUTPUT: Final = PI_DATA_DIR / "openai_family.pi.json"
T0: Final = 1735689600000


def pi_cases(catalogue: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The Azure and Codex requests run through pi's providers and ours (see
    openai_family_capture.mjs), with the streams the server answers.

    Each case names the API (``azure`` or ``codex``), the function (``stream`` or ``simple``),
    the model, context and options as pi's JSON, and the SSE body served. Codex cases ask pi
    for its SSE transport (pitrio has no other).
    """
    ask = {
        "systemPrompt": "Be brief.",
        "messages": [{"role": "user", "content": "What is 2+2?", "timestamp": T0}],
    }
    tools = {**ask, "tools": [WEATHER_TOOL_PI]}
    azure = catalogue["azure-openai-responses"]
    codex = catalogue["openai-codex"]
    az_key = {"apiKey": "azure-key", "sessionId": "sess-1", "headers": {"x-extra": "1"}}
    cx_key = {"apiKey": access_token(), "sessionId": "sess-1", "transport": "sse"}
    tier = ResponsesStream(service_tier="default")
    tier.message(["Cached."])
    tier.completed(input_tokens=120_000, cached_tokens=100_000, output_tokens=2_000)

    def case(
        name: str, api: str, fn: str, model: Any, context: Any, options: Any, sse: bytes
    ) -> dict[str, Any]:
        return {
            "name": name,
            "api": api,
            "fn": fn,
            "model": model,
            "context": context,
            "options": options,
            "sse": sse.decode(),
        }

    def done(stream: ResponsesStream) -> bytes:
        return codex_sse(with_done(stream))

    return [
        case("azure_text", "azure", "stream", azure["gpt-4.1"], ask, az_key, text_stream().sse()),
        case(
            "azure_thinking",
            "azure",
            "simple",
            azure["gpt-5.2"],
            ask,
            {**az_key, "reasoning": "high"},
            thinking_stream().sse(),
        ),
        case(
            "azure_tool_calls",
            "azure",
            "stream",
            azure["gpt-5"],
            tools,
            az_key,
            tool_calls_stream().sse(),
        ),
        case("azure_failed", "azure", "stream", azure["gpt-5"], ask, az_key, failed_stream().sse()),
        case(
            "azure_error_event",
            "azure",
            "stream",
            azure["gpt-5"],
            ask,
            az_key,
            error_event_stream().sse(),
        ),
        case("codex_text", "codex", "stream", codex["gpt-5.2"], ask, cx_key, done(text_stream())),
        case(
            "codex_thinking",
            "codex",
            "simple",
            codex["gpt-5.2"],
            ask,
            {**cx_key, "reasoning": "minimal"},
            done(thinking_stream()),
        ),
        case(
            "codex_tool_calls",
            "codex",
            "stream",
            codex["gpt-5.4"],
            tools,
            {**cx_key, "textVerbosity": "medium"},
            done(tool_calls_stream()),
        ),
        case(
            "codex_incomplete",
            "codex",
            "stream",
            codex["gpt-5.2"],
            ask,
            cx_key,
            incomplete_stream().sse(),
        ),
        case(
            "codex_service_tier",
            "codex",
            "stream",
            codex["gpt-5.5"],
            ask,
            {**cx_key, "serviceTier": "flex"},
            done(tier),
        ),
        case(
            "codex_failed", "codex", "stream", codex["gpt-5.2"], ask, cx_key, failed_stream().sse()
        ),
        case(
            "codex_error_event",
            "codex",
            "stream",
            codex["gpt-5.2"],
            ask,
            cx_key,
            error_event_stream().sse(),
        ),
    ]


def pi_input_text() -> str:
    """The content of :data:`PI_INPUT` for the current fixtures."""
    return json.dumps(pi_cases(catalogue_models()), indent=1, ensure_ascii=False) + "\n"


def write_pi_input() -> None:
    """Write :data:`PI_INPUT` (then run openai_family_capture.mjs to refresh the pi output)."""
    PI_DATA_DIR.mkdir(parents=True, exist_ok=True)
    PI_INPUT.write_text(pi_input_text(), encoding="utf-8")
