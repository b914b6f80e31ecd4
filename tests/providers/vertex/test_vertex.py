"""The google-vertex provider over real loopback HTTP: the Gemini codec on Vertex AI URLs.

Express mode (API key) and Application Default Credentials: a service-account file generated
here (a fresh RSA key) whose ``token_uri`` points at the loopback server, so google-auth signs
a real JWT and the bearer exchange runs for real.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson
import pytest
import trio
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    ProviderRegistry,
    StreamOptions,
    ToolCall,
    get_model,
    stream,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers.vertex import (
    REFRESH_MARGIN,
    AdcTokenSource,
    VertexAuthError,
    location_host,
    model_path,
    request_url,
    resolve_api_key,
    vertex_provider,
)
from pitrio.providers.vertex._auth import MISSING_GOOGLE_AUTH
from pitrio.providers.vertex._request import resolve_location, resolve_project

from fixtures_google import (
    PNG_1PX,
    RATE_LIMIT_BODY,
    SIG_A,
    Case,
    error_body,
    hello_context,
    max_tokens_chunks,
    replay_context,
    safety_chunks,
    sse,
    text_chunks,
    thinking_chunks,
    tool_call_chunks,
    weather_context,
)
from fixtures_vertex import CASES as VERTEX_CASES
from fixtures_vertex import pi_cases
from loopback import Handler, Request, ResponseWriter, error_handler, serve, sse_handler
from pi_data import PI_NOW, canonical, load_json, normalise_now

API_KEY = "test-vertex-key"
ACCESS_TOKEN = "ya29.loopback-access-token"
PROJECT = "my-project"
LOCATION = "europe-west4"
GENERATED_ID = re.compile(r"^(?P<name>.*)_(?P<ms>\d{13})_(?P<n>\d+)$")
STREAM_PATH = "/v1/publishers/google/models/{model}:streamGenerateContent"


def vertex_model(model_id: str, base_url: str) -> Model:
    found = get_model("google-vertex", model_id)
    assert found is not None
    return attrs.evolve(found, base_url=base_url)


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


async def run(
    registry: ProviderRegistry,
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    simple: bool = True,
) -> list[AssistantMessageEvent]:
    opener = stream_simple if simple else stream
    async with opener(model, context, options, registry=registry) as events:
        return [event async for event in events]


def registry_with(tokens: AdcTokenSource | None = None) -> ProviderRegistry:
    registry = ProviderRegistry()
    registry.register(vertex_provider(tokens or AdcTokenSource()))
    return registry


async def express(
    handler: Handler,
    model_id: str = "gemini-2.5-flash",
    context: Context | None = None,
    options: StreamOptions | None = None,
) -> tuple[list[AssistantMessageEvent], Request]:
    async with serve(handler) as server, open_http_client():
        model = vertex_model(model_id, server.url())
        events = await run(
            registry_with(),
            model,
            context or hello_context(),
            options or StreamOptions(api_key=API_KEY),
        )
    return events, server.requests[0]


# --------------------------------------------------------------------------- URLs and keys


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("global", "https://aiplatform.googleapis.com"),
        ("us", "https://aiplatform.us.rep.googleapis.com"),
        ("eu", "https://aiplatform.eu.rep.googleapis.com"),
        ("us-central1", "https://us-central1-aiplatform.googleapis.com"),
    ],
)
def test_location_hosts(location: str, host: str) -> None:
    assert location_host(location) == host


def test_adc_url_carries_project_and_location() -> None:
    model = vertex_model("gemini-2.5-pro", "https://{location}-aiplatform.googleapis.com")
    assert request_url(model, api_key=None, project=PROJECT, location=LOCATION) == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/"
        "europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert request_url(model, api_key=None, project=PROJECT, location="global") == (
        "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/"
        "publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )


def test_express_url_has_no_project() -> None:
    model = vertex_model("gemini-2.5-pro", "https://{location}-aiplatform.googleapis.com")
    assert request_url(model, api_key="k", project=None, location=None) == (
        "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-pro"
        ":streamGenerateContent?alt=sse"
    )


def test_custom_base_url_is_the_collection_root() -> None:
    model = vertex_model("gemini-2.5-pro", "https://proxy.example/vertex/")
    assert request_url(model, api_key=None, project=PROJECT, location=LOCATION) == (
        "https://proxy.example/vertex/v1/publishers/google/models/gemini-2.5-pro"
        ":streamGenerateContent?alt=sse"
    )
    versioned = attrs.evolve(model, base_url="https://proxy.example/v1beta1")
    assert request_url(versioned, api_key="k", project=None, location=None).startswith(
        "https://proxy.example/v1beta1/publishers/google/models/"
    )


@pytest.mark.parametrize(
    ("model_id", "path"),
    [
        ("gemini-2.5-pro", "publishers/google/models/gemini-2.5-pro"),
        ("anthropic/claude-x", "publishers/anthropic/models/claude-x"),
        ("projects/p/locations/l/endpoints/e", "projects/p/locations/l/endpoints/e"),
    ],
)
def test_model_paths(model_id: str, path: str) -> None:
    assert model_path(model_id) == path


@pytest.mark.parametrize(
    ("key", "env", "expected"),
    [
        ("k1", {}, "k1"),
        ("", {"GOOGLE_CLOUD_API_KEY": " k2 "}, "k2"),
        ("gcp-vertex-credentials", {"GOOGLE_CLOUD_API_KEY": "k3"}, None),
        ("<authenticated>", {}, None),
        (None, {}, None),
    ],
)
def test_api_key_or_adc(key: str | None, env: dict[str, str], expected: str | None) -> None:
    assert resolve_api_key(StreamOptions(api_key=key), env) == expected


# --------------------------------------------------------------------------- express mode


async def test_express_text_answer() -> None:
    events, request = await express(sse_handler(sse(text_chunks()), chunk_size=29))
    message = final(events)
    assert isinstance(events[-1], DoneEvent)
    assert message.api == "google-vertex" and message.provider == "google-vertex"
    assert message.text() == "Hello there, how can I help you today?"
    assert request.path == STREAM_PATH.format(model="gemini-2.5-flash")
    assert request.query == {"alt": ["sse"]}
    assert request.headers["x-goog-api-key"] == API_KEY
    assert "authorization" not in request.headers
    model = vertex_model("gemini-2.5-flash", "")
    assert message.usage.input == 8 and message.usage.cache_read == 4
    expected = (8 * model.cost.input + 9 * model.cost.output + 4 * model.cost.cache_read) / 1e6
    assert message.usage.cost.total == pytest.approx(expected)
    body = request.json()
    assert body["systemInstruction"] == {"role": "user", "parts": [{"text": "You are terse."}]}
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}


async def test_thinking_and_signatures() -> None:
    events, _ = await express(
        sse_handler(sse(thinking_chunks())),
        options=StreamOptions(api_key=API_KEY, reasoning="high"),
    )
    message = final(events)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking_signature  # type: ignore[union-attr]


async def test_tool_calls() -> None:
    events, request = await express(
        sse_handler(sse(tool_call_chunks()), chunk_size=50), "gemini-2.5-pro", weather_context()
    )
    message = final(events)
    assert message.stop_reason == "toolUse"
    calls = message.tool_calls()
    assert [c.arguments["city"] for c in calls] == ["Paris", "Zürich"]
    assert calls[0].thought_signature == SIG_A
    deltas = [e for e in events if e.type == "toolcall_delta"]
    assert json.loads(deltas[0].delta) == calls[0].arguments
    tools = request.json()["tools"][0]["functionDeclarations"]
    assert tools[0]["name"] == "get_weather"


async def test_images_and_replay_go_out_as_the_codec_writes_them() -> None:
    _, request = await express(
        sse_handler(sse(text_chunks())), "gemini-2.5-pro", replay_context("gemini-2.5-pro")
    )
    parts = [p for c in request.json()["contents"] for p in c["parts"]]
    assert {"inlineData": {"mimeType": "image/png", "data": PNG_1PX}} in parts
    assert any("functionCall" in p for p in parts) and any("functionResponse" in p for p in parts)


@pytest.mark.parametrize(
    ("chunks", "stop", "event"),
    [
        (text_chunks, "stop", DoneEvent),
        (max_tokens_chunks, "length", DoneEvent),
        (safety_chunks, "error", ErrorEvent),
    ],
)
async def test_stop_reasons(chunks: Any, stop: str, event: type) -> None:
    events, _ = await express(sse_handler(sse(chunks())))
    assert isinstance(events[-1], event)
    assert final(events).stop_reason == stop


async def test_http_error_body() -> None:
    events, _ = await express(error_handler(429, RATE_LIMIT_BODY))
    message = final(events)
    assert message.stop_reason == "error"
    assert json.loads(message.error_message or "") == RATE_LIMIT_BODY


async def test_error_event_in_the_stream() -> None:
    body = sse([text_chunks()[0], error_body(503, "overloaded", "UNAVAILABLE")])
    events, _ = await express(sse_handler(body))
    message = final(events)
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("got status: UNAVAILABLE.")
    assert message.text() == "Hello"


async def test_stream_cut_short() -> None:
    events, _ = await express(sse_handler(sse(text_chunks()[:2])))
    message = final(events)
    assert message.stop_reason == "error"
    assert "terminated early" in (message.error_message or "")


async def test_a_200_that_is_not_a_stream() -> None:
    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(200, json.dumps({"candidates": []}).encode())

    events, _ = await express(handle)
    assert (final(events).error_message or "").startswith("Not an event stream")


@pytest.mark.parametrize(
    ("model_id", "reasoning", "config"),
    [
        # pi's Vertex table: Flash-Lite shares Flash's budgets (128, not the Gemini API's 512).
        ("gemini-2.5-flash-lite", "minimal", {"includeThoughts": True, "thinkingBudget": 128}),
        ("gemini-2.5-pro", "high", {"includeThoughts": True, "thinkingBudget": 32768}),
        ("gemini-3-pro-preview", "medium", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", "low", {"includeThoughts": True, "thinkingLevel": "LOW"}),
        ("gemini-3-flash-preview", None, {"thinkingLevel": "MINIMAL"}),
    ],
)
async def test_thinking_config_as_pi_vertex_maps_it(
    model_id: str, reasoning: Any, config: dict[str, Any]
) -> None:
    _, request = await express(
        sse_handler(sse(text_chunks())),
        model_id,
        options=StreamOptions(api_key=API_KEY, reasoning=reasoning),
    )
    assert request.json()["generationConfig"]["thinkingConfig"] == config


# --------------------------------------------------------------------------- ADC


@attrs.define
class TokenEndpoint:
    """A loopback OAuth token endpoint that checks the service account's signed JWT."""

    public_key: rsa.RSAPublicKey
    client_email: str
    expires_in: int = 3600
    exchanges: list[dict[str, Any]] = attrs.field(factory=list)

    async def handle(self, request: Request, writer: ResponseWriter, token_uri: str) -> None:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
        header_b64, claims_b64, signature_b64 = form["assertion"].split(".")
        signature = _b64(signature_b64)
        self.public_key.verify(
            signature,
            f"{header_b64}.{claims_b64}".encode(),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )
        claims = json.loads(_b64(claims_b64))
        # google-auth signs for Google's token audience even when token_uri points elsewhere.
        assert claims["iss"] == self.client_email
        assert claims["aud"] == "https://oauth2.googleapis.com/token"
        assert request.path == urlsplit(token_uri).path
        self.exchanges.append(claims)
        body = {
            "access_token": f"{ACCESS_TOKEN}-{len(self.exchanges)}",
            "expires_in": self.expires_in,
            "token_type": "Bearer",
        }
        await writer.send_body(200, json.dumps(body).encode())


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def write_service_account(path: Path, token_uri: str) -> rsa.RSAPublicKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": f"pitrio-test@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    path.write_text(json.dumps(info))
    return key.public_key()


@pytest.fixture
def adc_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("GOOGLE_CLOUD_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", LOCATION)
    sa_file = tmp_path / "service-account.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(sa_file))
    return sa_file


async def test_adc_service_account_exchanges_a_signed_jwt_and_caches_the_token(
    adc_env: Path,
) -> None:
    endpoint: TokenEndpoint | None = None
    anchor = time.time()  # only an origin for the fake clock; margins are minutes wide
    now = [anchor]
    tokens = AdcTokenSource(clock=lambda: now[0])
    registry = registry_with(tokens)

    async with open_http_client():
        body = sse(text_chunks())
        streamer = sse_handler(body)

        async def handle(request: Request, writer: ResponseWriter) -> None:
            assert endpoint is not None
            if request.path == "/token":
                await endpoint.handle(request, writer, token_uri)
            else:
                await streamer(request, writer)

        async with serve(handle) as server:
            token_uri = server.url("/token")
            public_key = write_service_account(adc_env, token_uri)
            endpoint = TokenEndpoint(public_key, f"pitrio-test@{PROJECT}.iam.gserviceaccount.com")
            model = vertex_model("gemini-2.5-flash", server.url())
            first = await run(registry, model, hello_context(), StreamOptions())
            now[0] = anchor + 3000  # still well before expiry - margin: cached
            second = await run(registry, model, hello_context(), StreamOptions())
            now[0] = anchor + 3600 - REFRESH_MARGIN + 100  # inside the margin: renewed
            third = await run(registry, model, hello_context(), StreamOptions())

    assert all(isinstance(events[-1], DoneEvent) for events in (first, second, third))
    streams = [r for r in server.requests if r.path != "/token"]
    assert [r.headers["authorization"] for r in streams] == [
        f"Bearer {ACCESS_TOKEN}-1",
        f"Bearer {ACCESS_TOKEN}-1",
        f"Bearer {ACCESS_TOKEN}-2",
    ]
    assert all("x-goog-api-key" not in r.headers for r in streams)
    assert len(endpoint.exchanges) == 2 and tokens.refreshes == 2
    assert "https://www.googleapis.com/auth/cloud-platform" in endpoint.exchanges[0]["scope"]


async def test_concurrent_requests_refresh_once(adc_env: Path) -> None:
    tokens = AdcTokenSource()
    endpoint: TokenEndpoint | None = None

    async def handle(request: Request, writer: ResponseWriter) -> None:
        assert endpoint is not None
        await endpoint.handle(request, writer, token_uri)

    async with serve(handle) as server:
        token_uri = server.url("/token")
        endpoint = TokenEndpoint(
            write_service_account(adc_env, token_uri),
            f"pitrio-test@{PROJECT}.iam.gserviceaccount.com",
        )
        got: list[str] = []

        async def fetch() -> None:
            got.append(await tokens.token())

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(fetch)
    assert got == [f"{ACCESS_TOKEN}-1"] * 4
    assert len(endpoint.exchanges) == 1


async def test_adc_failure_is_an_error_event(adc_env: Path) -> None:
    async with serve(error_handler(400, {"error": "invalid_grant"})) as server:
        write_service_account(adc_env, server.url("/token"))
        model = vertex_model("gemini-2.5-flash", server.url())
        events = await run(registry_with(), model, hello_context(), StreamOptions())
    message = final(events)
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("Vertex AI credentials:")
    assert "invalid_grant" in (message.error_message or "")
    assert [r.path for r in server.requests] == ["/token"]


async def test_adc_needs_a_project(adc_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    monkeypatch.delenv("GCLOUD_PROJECT", raising=False)
    model = vertex_model("gemini-2.5-flash", "")
    events = await run(registry_with(), model, hello_context(), StreamOptions())
    assert final(events).error_message == (
        "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass "
        "project in options."
    )


async def test_missing_google_auth_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)
    with pytest.raises(VertexAuthError, match=r"pitrio\[google\]") as caught:
        await AdcTokenSource().token()
    assert str(caught.value) == MISSING_GOOGLE_AUTH


def test_tool_call_type_is_shared() -> None:
    # The Vertex provider reads responses with the Gemini codec: the same ToolCall type.
    assert ToolCall.__module__ == "pitrio.providers"


# --------------------------------------------------------------------------- parity with pi

CAPTURE = load_json("providers/vertex_capture.json")


def _normalise_ids(pi: Any, ours: Any) -> Any:
    """Replace the tool-call ids both sides generated (``name_<ms>_<n>``) by pi's."""
    if isinstance(pi, dict) and isinstance(ours, dict):
        out = {}
        for key, value in ours.items():
            theirs = pi.get(key)
            if (
                key == "id"
                and isinstance(theirs, str)
                and isinstance(value, str)
                and (match := GENERATED_ID.match(theirs))
                and match["ms"] == str(PI_NOW)
                and (mine := GENERATED_ID.match(value))
                and mine["name"] == match["name"]
            ):
                out[key] = theirs
            else:
                out[key] = _normalise_ids(theirs, value)
        return out
    if isinstance(pi, list) and isinstance(ours, list) and len(pi) == len(ours):
        return [_normalise_ids(a, b) for a, b in zip(pi, ours, strict=True)]
    return ours


@pytest.mark.parametrize("case", VERTEX_CASES, ids=[case.name for case in VERTEX_CASES])
async def test_request_and_events_match_pi(case: Case) -> None:
    """pitrio sends pi's Vertex request (URL, key header, body) and emits pi's events."""
    captured = CAPTURE["cases"][case.name]

    async def whole(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(case.status, case.body, {"content-type": case.content_type})

    handler = (
        sse_handler(case.body, headers={"content-type": case.content_type})
        if case.status == 200
        else whole
    )
    async with serve(handler) as server, open_http_client():
        model = vertex_model(case.model_id, server.url())
        events = await run(registry_with(), model, case.context, case.options, simple=case.simple)
    request = server.requests[0]
    theirs = captured["request"]
    assert request.method == theirs["method"]
    assert request.target == theirs["path"]
    assert request.json() == theirs["body"]
    for header in ("content-type", "x-goog-api-key", "authorization", "x-custom"):
        assert request.headers.get(header) == theirs["headers"].get(header), header
    if not case.pi_events:
        assert events[-1].type == "done"
        return
    pi_events = captured["events"]
    ours = _normalise_ids(pi_events, normalise_now(pi_events, [to_wire(e) for e in events]))
    assert [e["type"] for e in ours] == [e["type"] for e in pi_events]
    for index, (mine, theirs_event) in enumerate(zip(ours, pi_events, strict=True)):
        assert canonical(mine) == canonical(theirs_event), f"event {index} differs"


def test_vertex_capture_covers_every_case() -> None:
    assert sorted(CAPTURE["cases"]) == sorted(case.name for case in VERTEX_CASES)
    assert CAPTURE["piAi"] == "0.73.1"
    assert load_json("providers/vertex_cases.json") == orjson.loads(orjson.dumps(pi_cases()))


# --------------------------------------------------------------------------- other ADC sources


def _no_adc_files(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.delenv("CLOUDSDK_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(home))


async def test_gcloud_user_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``gcloud auth application-default login``'s file is found under ``$HOME`` and refreshed
    with a refresh-token grant. google-auth always sends that grant to Google's token endpoint,
    so the test points google-auth's constant for it at the loopback server."""
    import google.oauth2.credentials

    _no_adc_files(monkeypatch, tmp_path)
    grants: list[dict[str, str]] = []

    async def handle(request: Request, writer: ResponseWriter) -> None:
        grants.append({k: v[0] for k, v in parse_qs(request.body.decode()).items()})
        body = {"access_token": "ya29.user", "expires_in": 3599, "token_type": "Bearer"}
        await writer.send_body(200, json.dumps(body).encode())

    async with serve(handle) as server:
        monkeypatch.setattr(
            google.oauth2.credentials, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT", server.url("/token")
        )
        gcloud = tmp_path / ".config" / "gcloud"
        gcloud.mkdir(parents=True)
        (gcloud / "application_default_credentials.json").write_text(
            json.dumps(
                {
                    "type": "authorized_user",
                    "client_id": "cid.apps.googleusercontent.com",
                    "client_secret": "csecret",
                    "refresh_token": "1//refresh",
                }
            )
        )
        token = await AdcTokenSource().token()
    assert token == "ya29.user"
    assert grants[0]["grant_type"] == "refresh_token"
    assert grants[0]["refresh_token"] == "1//refresh"


async def test_metadata_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credential file: google-auth asks the metadata server (here on loopback)."""
    _no_adc_files(monkeypatch, tmp_path)
    paths: list[str] = []

    async def handle(request: Request, writer: ResponseWriter) -> None:
        paths.append(request.path)
        assert request.headers.get("metadata-flavor") == "Google"
        flavor = {"metadata-flavor": "Google"}
        if request.path.endswith("/token"):
            body: Any = {"access_token": "ya29.gce", "expires_in": 3599, "token_type": "Bearer"}
        elif request.path.endswith("/default/"):
            body = {
                "email": "sa@p.iam.gserviceaccount.com",
                "scopes": ["x"],
                "aliases": ["default"],
            }
        elif request.path.endswith("/project/project-id"):
            await writer.send_body(200, b"my-project", {**flavor, "content-type": "text/plain"})
            return
        else:
            await writer.send_body(200, b"", {**flavor, "content-type": "text/plain"})
            return
        await writer.send_body(200, json.dumps(body).encode(), flavor)

    async with serve(handle) as server:
        host = f"127.0.0.1:{server.port}"
        monkeypatch.setenv("GCE_METADATA_HOST", host)
        monkeypatch.setenv("GCE_METADATA_IP", host)
        token = await AdcTokenSource().token()
    assert token == "ya29.gce"
    assert any(p.endswith("/service-accounts/default/token") for p in paths)


def test_project_and_location_from_provider_options() -> None:
    options = StreamOptions(provider_options={"project": "p1", "location": "us"})
    assert resolve_project(options, {}) == "p1"
    assert resolve_location(options, {}) == "us"
    assert resolve_project(StreamOptions(), {"GCLOUD_PROJECT": "p2"}) == "p2"
