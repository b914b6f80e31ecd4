"""Bedrock authentication and region: pi's order, SigV4 signing, the optional AWS chain.

**Credentials**, in pi 0.73.1's order (``amazon-bedrock.js``, which leaves the last steps to the
AWS SDK's default chain):

1. ``AWS_BEDROCK_SKIP_AUTH=1``: no authentication at all (a proxy that adds its own). pi signs
   with dummy keys in this case; pitrio sends no ``Authorization`` header, which such proxies
   accept just as well and which leaks nothing that looks like a key.
2. A Bedrock API key: the ``bearer_token`` option or ``AWS_BEARER_TOKEN_BEDROCK``, sent as
   ``Authorization: Bearer <token>``.
3. ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (with ``AWS_SESSION_TOKEN`` when set),
   unless a profile is named (the JS SDK's chain skips them then): the request is signed with
   SigV4 here, with no dependency.
4. Everything else the AWS SDKs know (``AWS_PROFILE`` and the shared config and credentials
   files, SSO, web identity, ECS and EC2 instance metadata): botocore's credential resolver, an
   optional dependency (``pip install 'pitrio[aws]'``), run in a worker thread because it reads
   files and may make HTTP calls. Without botocore this step fails with a message that says so.

**Region**: the ``region`` option, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``; else the
region of an inference-profile or model ARN used as the model id (``arn:aws:bedrock:<region>:``);
else the region of a standard ``bedrock-runtime.<region>.amazonaws.com`` base URL; else the
profile's region when ``AWS_PROFILE`` is set (through botocore); else ``us-east-1``. pi takes no
region from an ARN (the SDK sends it to the configured region, which Bedrock refuses for an ARN
of another region); pitrio does, so an ARN works without setting the region.

**SigV4** (:func:`sign_request`) signs ``host``, ``content-type``, ``x-amz-date`` and
``x-amz-security-token`` with the SHA-256 of the exact body bytes sent, for service
``bedrock``; the canonical URI is the request path encoded once more, as for every AWS service
but S3.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import importlib
import os
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, urlsplit

import attrs
import trio

from pitrio.providers._registry import ProviderError

SERVICE: Final = "bedrock"
DEFAULT_REGION: Final = "us-east-1"
ALGORITHM: Final = "AWS4-HMAC-SHA256"
SIGNED_HEADERS_ORDER: Final = ("content-type", "host", "x-amz-date", "x-amz-security-token")
NO_BOTOCORE_MESSAGE: Final = (
    "No AWS credentials for Amazon Bedrock: set AWS_BEARER_TOKEN_BEDROCK, or "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; profiles, SSO and instance credentials need "
    "the optional AWS support: pip install 'pitrio[aws]' (botocore)"
)
NO_CREDENTIALS_MESSAGE: Final = (
    "No AWS credentials for Amazon Bedrock: set AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or configure another source of the AWS chain"
)

_STANDARD_HOST: Final = re.compile(
    r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$"
)
_ARN_REGION: Final = re.compile(r"^arn:aws[a-z-]*:bedrock:([a-z0-9-]+):")


@attrs.frozen
class AwsCredentials:
    """An access key pair, with the session token of temporary credentials."""

    access_key: str
    secret_key: str = attrs.field(repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class BearerToken:
    """A Bedrock API key, sent as ``Authorization: Bearer``."""

    token: str = attrs.field(repr=False)


@attrs.frozen
class NoAuth:
    """``AWS_BEDROCK_SKIP_AUTH=1``: the request goes out unauthenticated."""


Auth = AwsCredentials | BearerToken | NoAuth


# --------------------------------------------------------------------------- region


def standard_endpoint_region(base_url: str | None) -> str | None:
    """The region of a standard ``bedrock-runtime.<region>.amazonaws.com`` URL, else ``None``."""
    if not base_url:
        return None
    host = (urlsplit(base_url).hostname or "").lower()
    match = _STANDARD_HOST.match(host)
    return match.group(1) if match else None


def arn_region(model_id: str) -> str | None:
    """The region an ARN model id (inference profile, provisioned model) names, else ``None``."""
    match = _ARN_REGION.match(model_id)
    return match.group(1) if match else None


def configured_region(option: str | None, env: Mapping[str, str]) -> str | None:
    """The explicitly configured region: the option, ``AWS_REGION``, ``AWS_DEFAULT_REGION``."""
    return option or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None


@attrs.frozen
class Endpoint:
    """Where a request goes and which region signs it."""

    base_url: str
    region: str


async def resolve_endpoint(
    model_id: str,
    base_url: str | None,
    *,
    region: str | None,
    profile: str | None,
    env: Mapping[str, str] | None = None,
) -> Endpoint:
    """Pick the base URL and signing region of a request (see the module docstring).

    A base URL that is not a standard Bedrock host (a VPC endpoint, a proxy, a test server) is
    always used as it is. A standard one is used when no region is configured; otherwise the
    configured region's standard host is, as pi does (a catalogue default such as
    ``us-east-1`` must not override ``AWS_REGION``).
    """
    env = os.environ if env is None else env
    explicit = configured_region(region, env) or arn_region(model_id)
    endpoint_region = standard_endpoint_region(base_url)
    if base_url and endpoint_region is None:
        resolved = explicit or await _profile_region(profile, env) or DEFAULT_REGION
        return Endpoint(base_url.rstrip("/"), resolved)
    profile_name = profile or env.get("AWS_PROFILE")
    if base_url and endpoint_region is not None and explicit is None and not profile_name:
        return Endpoint(base_url.rstrip("/"), endpoint_region)  # as given: FIPS hosts stay FIPS
    resolved = (
        explicit
        or (await _profile_region(profile, env) if profile_name else None)
        or endpoint_region
        or DEFAULT_REGION
    )
    suffix = ".amazonaws.com.cn" if resolved.startswith("cn-") else ".amazonaws.com"
    return Endpoint(f"https://bedrock-runtime.{resolved}{suffix}", resolved)


async def _profile_region(profile: str | None, env: Mapping[str, str]) -> str | None:
    if not (profile or env.get("AWS_PROFILE")):
        return None
    try:
        session = _botocore_session(profile or env.get("AWS_PROFILE"))
    except ProviderError:
        return None
    region: Any = await trio.to_thread.run_sync(
        session.get_config_variable, "region", abandon_on_cancel=True
    )
    return region if isinstance(region, str) and region else None


# --------------------------------------------------------------------------- credentials


async def resolve_auth(
    *,
    bearer_token: str | None,
    profile: str | None,
    env: Mapping[str, str] | None = None,
) -> Auth:
    """Find the request's authentication in pi's order (see the module docstring).

    Raises:
        ProviderError: nothing in the chain has credentials, or only the AWS chain could have
            them and botocore is not installed.
    """
    env = os.environ if env is None else env
    if env.get("AWS_BEDROCK_SKIP_AUTH") == "1":
        return NoAuth()
    token = bearer_token or env.get("AWS_BEARER_TOKEN_BEDROCK")
    if token:
        return BearerToken(token)
    access_key = env.get("AWS_ACCESS_KEY_ID")
    secret_key = env.get("AWS_SECRET_ACCESS_KEY")
    # The JS SDK's default chain skips the environment keys when a profile is named.
    if access_key and secret_key and not (profile or env.get("AWS_PROFILE")):
        return AwsCredentials(access_key, secret_key, env.get("AWS_SESSION_TOKEN") or None)
    session = _botocore_session(profile or env.get("AWS_PROFILE") or None)
    # Abandoned on cancellation: an abort must not wait out instance-metadata timeouts, and
    # the thread only reads credentials (botocore's objects are thread-safe).
    credentials = await trio.to_thread.run_sync(
        _frozen_credentials, session, abandon_on_cancel=True
    )
    if credentials is None:
        raise ProviderError(NO_CREDENTIALS_MESSAGE)
    return credentials


_sessions: dict[str | None, Any] = {}
"""botocore sessions by profile: their credential objects refresh themselves, so they are kept
for the process rather than resolved anew (SSO and IMDS calls) for every request."""


def _botocore_session(profile: str | None) -> Any:
    session = _sessions.get(profile)
    if session is not None:
        return session
    try:  # an optional dependency, imported when first needed
        botocore_session = importlib.import_module("botocore.session")
    except ImportError as exc:
        raise ProviderError(NO_BOTOCORE_MESSAGE) from exc
    session = botocore_session.Session(profile=profile)
    _sessions[profile] = session
    return session


def _frozen_credentials(session: Any) -> AwsCredentials | None:
    credentials = session.get_credentials()
    if credentials is None:
        return None
    frozen = credentials.get_frozen_credentials()
    return AwsCredentials(frozen.access_key, frozen.secret_key, frozen.token or None)


# --------------------------------------------------------------------------- SigV4


def amz_date(now: datetime.datetime) -> str:
    """``now`` (timezone-aware) as SigV4's ``YYYYMMDDTHHMMSSZ``."""
    return now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")


def canonical_uri(path: str) -> str:
    """The canonical URI of an already percent-encoded request path (encoded once more)."""
    return quote(path or "/", safe="/~")


def sign_request(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    credentials: AwsCredentials,
    region: str,
    now: datetime.datetime,
    service: str = SERVICE,
) -> dict[str, str]:
    """Return ``headers`` plus ``x-amz-date``, the session token and the SigV4 ``authorization``.

    Args:
        url: the request URL with its path already percent-encoded as it is sent.
        headers: the request headers; ``content-type`` among them is signed, and ``host`` is
            taken from ``url``.
        body: the exact bytes that are sent.
        now: the signing time (timezone-aware).
    """
    parts = urlsplit(url)
    stamp = amz_date(now)
    day = stamp[:8]
    signed: dict[str, str] = {"host": parts.netloc, "x-amz-date": stamp}
    for name, value in headers.items():
        if name.lower() == "content-type":
            signed["content-type"] = value
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{' '.join(signed[name].split())}\n" for name in names)
    signed_names = ";".join(names)
    canonical_request = "\n".join(
        (
            method.upper(),
            canonical_uri(parts.path),
            _canonical_query(parts.query),
            canonical_headers,
            signed_names,
            hashlib.sha256(body).hexdigest(),
        )
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        (ALGORITHM, stamp, scope, hashlib.sha256(canonical_request.encode()).hexdigest())
    )
    key = _signing_key(credentials.secret_key, day, region, service)
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    result = dict(headers)
    result["x-amz-date"] = stamp
    if credentials.session_token:
        result["x-amz-security-token"] = credentials.session_token
    result["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={signed_names}, Signature={signature}"
    )
    return result


def _canonical_query(query: str) -> str:
    if not query:
        return ""
    pairs = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        pairs.append((quote(name, safe="-_.~"), quote(value, safe="-_.~")))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = hmac.new(f"AWS4{secret}".encode(), day.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key
