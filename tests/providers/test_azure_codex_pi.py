"""azure-openai-responses and openai-codex-responses against pi 0.73.1's own providers.

The same cases (fixtures_codex.pi_cases) ran through pi's providers with
tests/data/pi/providers/openai_family_capture.mjs; here they run through pitrio's over a
loopback server, and the request (path and query, the headers pi sets itself, the JSON body),
every event and the final message must equal pi's.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    Context,
    Model,
    ProviderRegistry,
    StreamOptions,
    stream,
    stream_simple,
)
from pitrio.providers._builtins import register_builtin_providers
from pitrio.providers._http import open_http_client

from fixtures_codex import PI_INPUT, PI_OUTPUT, pi_input_text
from loopback import serve, sse_handler
from pi_data import canonical, normalise_now

BASE_PATHS = {"azure": "/openai/v1", "codex": "/backend-api"}
PI_HEADERS = {
    "azure": {"api-key", "authorization", "x-extra", "content-type", "session_id"},
    "codex": {
        "authorization",
        "chatgpt-account-id",
        "originator",
        "openai-beta",
        "session_id",
        "x-client-request-id",
        "accept",
        "content-type",
        "x-extra",
    },
}
"""The headers pi's providers set themselves (the rest are the SDK's, the transport's, or the
User-Agent, which names pitrio)."""
PROVIDER_OPTIONS = ("reasoningEffort", "reasoningSummary", "serviceTier", "textVerbosity")


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(PI_INPUT.read_text(encoding="utf-8"))
    return cases


def _options(options: dict[str, Any]) -> StreamOptions:
    provider_options = {k: v for k, v in options.items() if k in PROVIDER_OPTIONS}
    return StreamOptions(
        api_key=options.get("apiKey"),
        session_id=options.get("sessionId"),
        headers=options.get("headers"),
        reasoning=options.get("reasoning"),
        transport=options.get("transport"),
        provider_options=provider_options or None,
    )


def _without_partial_json(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_partial_json(v) for k, v in data.items() if k != "partialJson"}
    if isinstance(data, list):
        return [_without_partial_json(v) for v in data]
    return data


def test_pi_input_is_up_to_date() -> None:
    """The cases pi was run on are exactly the current fixtures (rerun the capture otherwise)."""
    assert PI_INPUT.read_text(encoding="utf-8") == pi_input_text()


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["name"])
async def test_request_events_and_result_equal_pis(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the same stream, the request and every pushed event equal pi's."""
    for name in (
        "AZURE_OPENAI_BASE_URL",
        "AZURE_OPENAI_RESOURCE_NAME",
        "AZURE_OPENAI_API_VERSION",
        "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
        "PI_CACHE_RETENTION",
    ):
        monkeypatch.delenv(name, raising=False)
    pi = json.loads(PI_OUTPUT.read_text(encoding="utf-8"))["cases"][case["name"]]
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    async with (
        serve(sse_handler(case["sse"].encode(), chunk_size=89)) as server,
        open_http_client(),
    ):
        model = from_wire(Model, case["model"])
        model = attrs.evolve(model, base_url=server.url(BASE_PATHS[case["api"]]))
        open_stream = stream_simple if case["fn"] == "simple" else stream
        context = from_wire(Context, case["context"])
        async with open_stream(
            model, context, _options(case["options"]), registry=registry
        ) as events:
            seen = [to_wire(event) async for event in events]
            result = await events.result()
    request = server.requests[0]
    assert (request.method, request.target) == (pi["request"]["method"], pi["request"]["path"])
    assert canonical(request.json()) == canonical(pi["request"]["body"])
    for name in PI_HEADERS[case["api"]]:
        assert request.headers.get(name) == pi["request"]["headers"].get(name), name

    pi_events = _without_partial_json(pi["events"])
    seen = normalise_now(pi_events, seen)
    assert [e["type"] for e in seen] == [e["type"] for e in pi_events]
    for index, (ours, theirs) in enumerate(zip(seen, pi_events, strict=True)):
        assert canonical(ours) == canonical(theirs), f"event {index} ({theirs['type']}) differs"
    assert canonical(normalise_now(pi["result"], to_wire(result))) == canonical(pi["result"])
