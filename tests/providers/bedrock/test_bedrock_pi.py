"""Parity with pi 0.73.1: the same cases through pi's provider and pitrio's, compared.

``tests/data/pi/providers/bedrock_capture.json`` holds, for each case of
``fixtures_bedrock.pi_cases()``, the request the AWS SDK sent for pi and the events pi pushed
while reading the same event-stream bytes (see ``bedrock_capture.mjs``). Here pitrio runs each
case against a loopback server serving those bytes; its request body, path, event sequence and
final message must be pi's.

One deliberate difference: pi reports an exception frame of the stream as its JSON text
(``{"message": ...}``: the SDK hands it a plain object, not an Error, so pi's prefixing is
skipped); pitrio gives the prefixed form pi produces for the same exception raised by the SDK
(``Throttling error: ...``), which the session's retry and overflow checks expect.
"""

from __future__ import annotations

import base64
from typing import Any

import attrs
import pytest

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    ProviderRegistry,
    StreamOptions,
)
from pitrio.providers._api import stream, stream_simple
from pitrio.providers.bedrock import register_bedrock

import fixtures_bedrock as fx
from loopback import serve, sse_handler
from pi_data import canonical, load_json, normalise_now

CAPTURE = load_json("providers/bedrock_capture.json")
CASES = {case["name"]: case for case in fx.pi_cases()}
COMMON_OPTIONS = {
    "reasoning": "reasoning",
    "maxTokens": "max_tokens",
    "temperature": "temperature",
    "cacheRetention": "cache_retention",
}
PREFIXED = {"throttled": "Throttling error: Too many tokens, please wait before trying again."}


@pytest.fixture(autouse=True)
def _skip_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "PI_CACHE_RETENTION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEDROCK_SKIP_AUTH", "1")


def options_of(pi: dict[str, Any]) -> StreamOptions:
    common = {COMMON_OPTIONS[k]: v for k, v in pi.items() if k in COMMON_OPTIONS}
    rest = {k: v for k, v in pi.items() if k not in COMMON_OPTIONS}
    return StreamOptions(**common, provider_options=rest or None)


def test_cases_file_is_current() -> None:
    """The cases pi was run on are the ones the fixtures build today."""
    assert load_json("providers/bedrock_cases.json") == {"cases": fx.pi_cases()}
    assert set(CAPTURE["cases"]) == set(CASES)
    assert CAPTURE["piAi"] == "0.73.1"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_matches_pi(name: str) -> None:
    """pitrio sends pi's request and emits pi's events and final message for the same bytes."""
    case = CASES[name]
    pi = CAPTURE["cases"][name]
    registry = ProviderRegistry()
    register_bedrock(registry)
    body = base64.b64decode(case["response"]["body"])
    async with serve(sse_handler(body, headers=fx.HEADERS, chunk_size=41)) as server:
        model = attrs.evolve(from_wire(Model, case["model"]), base_url=server.url())
        context = from_wire(Context, case["context"])
        opener = stream_simple if case["mode"] == "simple" else stream
        async with opener(model, context, options_of(case["options"]), registry=registry) as out:
            events = [event async for event in out]
    request = server.requests[0]
    assert request.path == pi["request"]["path"]
    assert canonical(request.json()) == canonical(pi["request"]["body"])
    assert [e.type for e in events] == [e["type"] for e in pi["events"]]
    last = events[-1]
    ours: AssistantMessage = last.message if last.type == "done" else last.error
    theirs = pi["events"][-1].get("message") or pi["events"][-1]["error"]
    wire = normalise_now(theirs, to_wire(ours))
    if name in PREFIXED:
        assert theirs["errorMessage"].startswith('{"message"')
        assert PREFIXED[name].split(": ", 1)[1] in theirs["errorMessage"]
        assert wire["errorMessage"] == PREFIXED[name]
        wire["errorMessage"] = theirs["errorMessage"]
    assert canonical(wire) == canonical(theirs)
    # Each content event carries the same partial message as pi's at that point.
    for ours_event, pi_event in zip(events, pi["events"], strict=True):
        if "delta" in pi_event:
            assert ours_event.delta == pi_event["delta"]  # type: ignore[union-attr]
