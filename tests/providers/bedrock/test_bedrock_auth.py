"""Bedrock authentication: SigV4 against known vectors and botocore, pi's credential order, regions."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from pitrio.providers import Context, Model, ProviderRegistry, StreamOptions, UserMessage, get_model
from pitrio.providers._api import stream_simple
from pitrio.providers.bedrock import _auth, register_bedrock
from pitrio.providers.bedrock._auth import (
    AwsCredentials,
    BearerToken,
    NoAuth,
    resolve_auth,
    resolve_endpoint,
    sign_request,
)

import fixtures_bedrock as fx
from loopback import LoopbackServer, Request, serve, sse_handler

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
CLEARED = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_BEDROCK_SKIP_AUTH",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)
HI = Context(messages=[UserMessage(content="Hi", timestamp=1)])


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    # botocore must find nothing of the machine's: no files, no instance metadata calls.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(_auth, "_sessions", {})


@pytest.fixture
def registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    register_bedrock(registry)
    return registry


def make_model(server: LoopbackServer, model_id: str = CLAUDE) -> Model:
    return attrs.evolve(get_model("amazon-bedrock", model_id), base_url=server.url())


async def one_request(
    registry: ProviderRegistry, model_id: str = CLAUDE, **options: Any
) -> tuple[Request, Any]:
    body = fx.to_eventstream(fx.text_stream())
    async with (
        serve(sse_handler(body, headers=fx.HEADERS)) as server,
        stream_simple(
            make_model(server, model_id), HI, StreamOptions(**options), registry=registry
        ) as events,
    ):
        message = await events.result()
    assert server.requests, message.error_message
    return server.requests[0], message


def botocore_authorization(
    request: Request, region: str, access: str, secret: str, token: str | None = None
) -> str:
    """The Authorization botocore's own signer computes for what the server received."""
    url = f"http://{request.headers['host']}{request.target}"
    aws = AWSRequest(
        method=request.method,
        url=url,
        data=request.body,
        headers={"content-type": request.headers["content-type"]},
    )
    stamp = request.headers["x-amz-date"]
    aws.context["timestamp"] = stamp
    aws.headers["X-Amz-Date"] = stamp
    if token:
        aws.headers["X-Amz-Security-Token"] = token
    signer = SigV4Auth(Credentials(access, secret, token), "bedrock", region)
    canonical = signer.canonical_request(aws)
    signature = signer.signature(signer.string_to_sign(aws, canonical), aws)
    signed = signer.signed_headers(signer.headers_to_sign(aws))
    scope = f"{access}/{stamp[:8]}/{region}/bedrock/aws4_request"
    return f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders={signed}, Signature={signature}"


# --------------------------------------------------------------------------- SigV4


def test_sigv4_matches_the_aws_test_suite_get_vanilla() -> None:
    """The AWS SigV4 test suite's get-vanilla case gives its published signature."""
    headers = sign_request(
        method="GET",
        url="https://example.amazonaws.com/",
        headers={},
        body=b"",
        credentials=AwsCredentials(ACCESS_KEY, SECRET_KEY),
        region="us-east-1",
        now=datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC),
        service="service",
    )
    assert headers["x-amz-date"] == "20150830T123600Z"
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )


@pytest.mark.parametrize("token", [None, "FQoGZXIvYXdzEJr//////////wEaDOsession"])
def test_sigv4_matches_botocore_for_an_arn_path(token: str | None) -> None:
    """A POST to an encoded ARN path signs as botocore signs it, session token included."""
    url = (
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/"
        "arn%3Aaws%3Abedrock%3Aeu-west-1%3A123456789012%3Ainference-profile%2Feu.anthropic.claude"
        "-sonnet-4-5-20250929-v1%3A0/converse-stream"
    )
    body = b'{"messages":[{"role":"user","content":[{"text":"Hi \\u00e9"}]}]}'
    now = datetime.datetime(2026, 11, 28, 19, 5, 7, tzinfo=datetime.UTC)
    headers = sign_request(
        method="POST",
        url=url,
        headers={"content-type": "application/json", "accept": fx.EVENT_STREAM},
        body=body,
        credentials=AwsCredentials(ACCESS_KEY, SECRET_KEY, token),
        region="eu-west-1",
        now=now,
    )
    received = Request(
        "POST",
        url.removeprefix("https://bedrock-runtime.eu-west-1.amazonaws.com"),
        {
            "host": "bedrock-runtime.eu-west-1.amazonaws.com",
            "content-type": "application/json",
            "x-amz-date": headers["x-amz-date"],
        },
        body,
    )
    expected = botocore_authorization(received, "eu-west-1", ACCESS_KEY, SECRET_KEY, token)
    assert headers["authorization"] == expected
    assert headers.get("x-amz-security-token") == token
    assert headers["accept"] == fx.EVENT_STREAM  # unsigned headers are kept


def test_signature_covers_the_body() -> None:
    """Two bodies differing in one byte sign differently."""
    common: dict[str, Any] = {
        "method": "POST",
        "url": "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
        "headers": {"content-type": "application/json"},
        "credentials": AwsCredentials(ACCESS_KEY, SECRET_KEY),
        "region": "us-east-1",
        "now": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    }
    first = sign_request(body=b'{"a":1}', **common)["authorization"]
    second = sign_request(body=b'{"a":2}', **common)["authorization"]
    assert first != second


# --------------------------------------------------------------------------- credentials on the wire


async def test_env_keys_sign_the_exact_body_sent(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_ACCESS_KEY_ID/SECRET/SESSION_TOKEN sign the request; botocore agrees on what arrived."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    request, message = await one_request(registry)
    assert message.stop_reason == "stop"
    assert request.headers["x-amz-security-token"] == "session-token"
    assert request.headers["authorization"] == botocore_authorization(
        request, "eu-central-1", ACCESS_KEY, SECRET_KEY, "session-token"
    )


async def test_bearer_token_comes_before_keys(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_BEARER_TOKEN_BEDROCK wins over access keys, and the bearerToken option over both."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "env-token")
    request, _ = await one_request(registry)
    assert request.headers["authorization"] == "Bearer env-token"
    assert "x-amz-date" not in request.headers
    request, _ = await one_request(registry, provider_options={"bearerToken": "option-token"})
    assert request.headers["authorization"] == "Bearer option-token"


async def test_skip_auth_sends_no_authorization(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_BEDROCK_SKIP_AUTH=1 sends neither a bearer token nor a signature."""
    monkeypatch.setenv("AWS_BEDROCK_SKIP_AUTH", "1")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "env-token")
    request, message = await one_request(registry)
    assert message.stop_reason == "stop"
    assert "authorization" not in request.headers
    assert "x-amz-date" not in request.headers


async def test_profile_credentials_and_region_through_botocore(
    registry: ProviderRegistry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """AWS_PROFILE's keys (shared credentials file) sign with the profile's region."""
    (tmp_path / "credentials").write_text(
        "[work]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profile-secret\n"
    )
    (tmp_path / "config").write_text("[profile work]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_PROFILE", "work")
    # Environment keys are skipped when a profile is named, as in the JS SDK's chain.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    request, message = await one_request(registry)
    assert message.stop_reason == "stop"
    assert "/eu-west-3/bedrock/" in request.headers["authorization"]
    assert request.headers["authorization"] == botocore_authorization(
        request, "eu-west-3", "AKIAPROFILE", "profile-secret"
    )


async def test_no_credentials_anywhere(registry: ProviderRegistry) -> None:
    """With nothing configured the message ends with an error naming the sources, and nothing is sent."""
    body = fx.to_eventstream(fx.text_stream())
    async with (
        serve(sse_handler(body, headers=fx.HEADERS)) as server,
        stream_simple(make_model(server), HI, StreamOptions(), registry=registry) as events,
    ):
        message = await events.result()
    assert message.stop_reason == "error"
    assert message.error_message == _auth.NO_CREDENTIALS_MESSAGE
    assert server.requests == []


async def test_missing_botocore_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without botocore, a profile asks for the pitrio[aws] extra."""
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(_auth.ProviderError, match=r"pitrio\[aws\]"):
        await resolve_auth(bearer_token=None, profile="work", env={})


async def test_credential_order_without_http() -> None:
    """skip-auth, then bearer, then environment keys (with the session token)."""
    keys = {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T"}
    both = {**keys, "AWS_BEARER_TOKEN_BEDROCK": "B"}
    assert (
        await resolve_auth(
            bearer_token=None, profile=None, env={**both, "AWS_BEDROCK_SKIP_AUTH": "1"}
        )
        == NoAuth()
    )
    assert await resolve_auth(bearer_token=None, profile=None, env=both) == BearerToken("B")
    assert await resolve_auth(bearer_token=None, profile=None, env=keys) == AwsCredentials(
        "A", "S", "T"
    )


# --------------------------------------------------------------------------- regions


CATALOGUE_URL = "https://bedrock-runtime.us-east-1.amazonaws.com"


@pytest.mark.parametrize(
    ("model_id", "base_url", "region", "env", "expected"),
    [
        # The catalogue's standard host is used when nothing else is configured.
        (CLAUDE, CATALOGUE_URL, None, {}, (CATALOGUE_URL, "us-east-1")),
        # AWS_REGION / AWS_DEFAULT_REGION / the option move a standard host to their region.
        (
            CLAUDE,
            CATALOGUE_URL,
            None,
            {"AWS_REGION": "eu-west-1"},
            ("https://bedrock-runtime.eu-west-1.amazonaws.com", "eu-west-1"),
        ),
        (
            CLAUDE,
            CATALOGUE_URL,
            None,
            {"AWS_DEFAULT_REGION": "ap-south-1"},
            ("https://bedrock-runtime.ap-south-1.amazonaws.com", "ap-south-1"),
        ),
        (
            CLAUDE,
            CATALOGUE_URL,
            "us-west-2",
            {"AWS_REGION": "eu-west-1"},
            ("https://bedrock-runtime.us-west-2.amazonaws.com", "us-west-2"),
        ),
        # An inference-profile ARN carries its region.
        (
            "arn:aws:bedrock:eu-north-1:123456789012:application-inference-profile/abc123",
            CATALOGUE_URL,
            None,
            {},
            ("https://bedrock-runtime.eu-north-1.amazonaws.com", "eu-north-1"),
        ),
        # A custom endpoint (VPC, proxy) is kept; it signs with the configured region.
        (
            CLAUDE,
            "https://vpce-1.bedrock-runtime.example.com/",
            None,
            {"AWS_REGION": "eu-west-2"},
            ("https://vpce-1.bedrock-runtime.example.com", "eu-west-2"),
        ),
        (CLAUDE, "http://127.0.0.1:8080", None, {}, ("http://127.0.0.1:8080", "us-east-1")),
        # A standard FIPS host is kept as it is when nothing overrides it.
        (
            CLAUDE,
            "https://bedrock-runtime-fips.us-west-2.amazonaws.com",
            None,
            {},
            ("https://bedrock-runtime-fips.us-west-2.amazonaws.com", "us-west-2"),
        ),
        # China regions use their own domain.
        (
            CLAUDE,
            CATALOGUE_URL,
            "cn-north-1",
            {},
            ("https://bedrock-runtime.cn-north-1.amazonaws.com.cn", "cn-north-1"),
        ),
    ],
)
async def test_region_rules(
    model_id: str, base_url: str, region: str | None, env: dict[str, str], expected: tuple[str, str]
) -> None:
    """The endpoint and signing region follow pi's rules, plus the ARN's region."""
    endpoint = await resolve_endpoint(model_id, base_url, region=region, profile=None, env=env)
    assert (endpoint.base_url, endpoint.region) == expected


async def test_profile_region_moves_a_standard_host(tmp_path: Path) -> None:
    """With AWS_PROFILE and no region, the profile's region picks the standard host."""
    (tmp_path / "config").write_text("[profile eu]\nregion = eu-south-2\n")
    endpoint = await resolve_endpoint(
        CLAUDE, CATALOGUE_URL, region=None, profile=None, env={"AWS_PROFILE": "eu"}
    )
    assert endpoint.base_url == "https://bedrock-runtime.eu-south-2.amazonaws.com"
    assert endpoint.region == "eu-south-2"
