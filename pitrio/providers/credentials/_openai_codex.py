"""Renewing an OpenAI Codex (ChatGPT sign-in) token as pi 0.73.1 does.

pi-ai's ``refreshOpenAICodexToken`` posts a form to ``https://auth.openai.com/oauth/token``
(``grant_type=refresh_token``, the stored refresh token, pi's public client id), expects
``access_token``, ``refresh_token`` and a numeric ``expires_in`` (seconds) back, and reads the
ChatGPT account id from the new access token's JWT claim
``https://api.openai.com/auth`` -> ``chatgpt_account_id``. The stored entry becomes
``{access, refresh, expires, accountId}`` (pi keeps no other field).

Signing in (:func:`openai_codex_client` for :mod:`._login`) uses pi's browser flow: the
authorization URL with pi's scopes and extra parameters, the callback on port 1455 (host
``PI_OAUTH_CALLBACK_HOST`` or ``127.0.0.1``), redirect ``http://localhost:1455/auth/callback``.
pi has no device-code sign-in for Codex, so neither has pitrio.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx2

from pitrio.providers._http import current_http_client, make_http_client
from pitrio.providers.credentials._auth_file import OAuthCredential
from pitrio.providers.credentials._login import LoginError, OAuthClient
from pitrio.providers.credentials._refresh import RefreshFn, TokenRefreshError, TokenRefreshers

OPENAI_CODEX_PROVIDER: Final = "openai-codex"
OPENAI_CODEX_CLIENT_ID: Final = "app_EMoamEEZ73f0CkXaXp7hrann"
"""pi's public OAuth client id for ChatGPT sign-in (not a secret)."""
OPENAI_CODEX_TOKEN_URL: Final = "https://auth.openai.com/oauth/token"
JWT_CLAIM_PATH: Final = "https://api.openai.com/auth"
OPENAI_CODEX_AUTHORIZE_URL: Final = "https://auth.openai.com/oauth/authorize"
OPENAI_CODEX_CALLBACK_PORT: Final = 1455
OPENAI_CODEX_SCOPE: Final = "openid profile email offline_access"


def openai_codex_account_id(access_token: str) -> str | None:
    """The ``chatgpt_account_id`` claim of an access token (a JWT), or ``None``.

    The signature is not checked: the token came from the token endpoint over TLS, and the
    claim only routes requests (the server checks the token itself).
    """
    parts = access_token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload: Any = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    auth = payload.get(JWT_CLAIM_PATH) if isinstance(payload, dict) else None
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return account if isinstance(account, str) and account else None


@asynccontextmanager
async def _client(client: httpx2.AsyncClient | None) -> AsyncIterator[httpx2.AsyncClient]:
    shared = client or current_http_client()
    if shared is not None:
        yield shared
        return
    async with make_http_client() as own:
        yield own


def openai_codex_refresher(
    *,
    token_url: str = OPENAI_CODEX_TOKEN_URL,
    client: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> RefreshFn:
    """A refresh function for ``openai-codex`` tokens (see the module docstring).

    Args:
        token_url: the token endpoint.
        client: the HTTP client; default the run's shared client, else one per refresh.
        clock: the wall clock in seconds (``expires`` is counted from it).
    """

    async def refresh(stored: OAuthCredential) -> OAuthCredential:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": stored.refresh,
            "client_id": OPENAI_CODEX_CLIENT_ID,
        }
        try:
            async with _client(client) as http:
                response = await http.post(token_url, data=form)
                text = response.text
        except httpx2.HTTPError as exc:
            raise TokenRefreshError(
                f"OpenAI Codex token refresh error: {exc}", provider=OPENAI_CODEX_PROVIDER
            ) from exc
        if not response.is_success:
            raise TokenRefreshError(
                f"OpenAI Codex token refresh failed ({response.status_code}): "
                f"{text or response.reason_phrase}",
                provider=OPENAI_CODEX_PROVIDER,
            )
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        access = body.get("access_token") if isinstance(body, dict) else None
        renewal = body.get("refresh_token") if isinstance(body, dict) else None
        expires_in = body.get("expires_in") if isinstance(body, dict) else None
        if (
            not (isinstance(access, str) and access)
            or not (isinstance(renewal, str) and renewal)
            or isinstance(expires_in, bool)
            or not isinstance(expires_in, int | float)
        ):
            raise TokenRefreshError(
                f"OpenAI Codex token refresh response missing fields: {text}",
                provider=OPENAI_CODEX_PROVIDER,
            )
        account = openai_codex_account_id(access)
        if account is None:
            raise TokenRefreshError(
                "Failed to extract accountId from token", provider=OPENAI_CODEX_PROVIDER
            )
        return OAuthCredential(
            access=access,
            refresh=renewal,
            expires=int(clock() * 1000 + expires_in * 1000),
            extra={"accountId": account},
        )

    return refresh


def _codex_entry_fields(access: str) -> dict[str, Any]:
    account = openai_codex_account_id(access)
    if account is None:
        raise LoginError("Failed to extract accountId from token", provider=OPENAI_CODEX_PROVIDER)
    return {"accountId": account}


def openai_codex_client(
    *,
    env: Mapping[str, str] | None = None,
    token_url: str = OPENAI_CODEX_TOKEN_URL,
    authorize_url: str = OPENAI_CODEX_AUTHORIZE_URL,
    callback_port: int = OPENAI_CODEX_CALLBACK_PORT,
    originator: str = "pi",
) -> OAuthClient:
    """pi's "Sign in with ChatGPT" client (browser flow only); endpoints overridable for tests.

    Args:
        env: read for ``PI_OAUTH_CALLBACK_HOST`` (the address the callback binds).
        token_url: the token endpoint.
        authorize_url: the authorization endpoint.
        callback_port: the callback port (pi's 1455; the redirect URI names it).
        originator: the ``originator`` parameter pi sends (``"pi"``).
    """
    host = (env or {}).get("PI_OAUTH_CALLBACK_HOST") or "127.0.0.1"
    return OAuthClient(
        provider=OPENAI_CODEX_PROVIDER,
        name="OpenAI Codex (ChatGPT)",
        client_id=OPENAI_CODEX_CLIENT_ID,
        authorize_url=authorize_url,
        token_url=token_url,
        scope=OPENAI_CODEX_SCOPE,
        callback_host=host,
        callback_port=callback_port,
        callback_path="/auth/callback",
        redirect_uri="http://localhost:{port}/auth/callback",
        authorize_params={
            "id_token_add_organizations": "true",
            "codex_cli_simplified_flow": "true",
            "originator": originator,
        },
        entry_fields=_codex_entry_fields,
    )


def default_refreshers() -> TokenRefreshers:
    """The refresh functions pitrio knows for built-in providers: ``openai-codex`` only.

    Anthropic and GitHub Copilot subscription tokens are left out on purpose: their terms
    reserve them for the vendors' own clients (issue 31 item 9 puts their use behind an
    explicit opt-in); such a token is used while it lasts, and renewed by pi.
    """
    return TokenRefreshers({OPENAI_CODEX_PROVIDER: openai_codex_refresher()})
