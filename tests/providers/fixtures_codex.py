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
from typing import Any, Final

from fixtures_openai_responses import ResponsesStream
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
