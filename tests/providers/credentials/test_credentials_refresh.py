"""OAuth token refresh: when, under the lock, once, and safe from a cancelled caller.

The refresh function the tests register posts to a real token endpoint on 127.0.0.1 (the
shape of pi's OpenAI Codex refresh: a form with ``grant_type=refresh_token``), which answers
with a rotated pair of tokens and can be held back with a :class:`trio.Event`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import attrs
import httpx2
import pytest
import trio
import trio.lowlevel
import trio.testing

from pitrio.providers.credentials import (
    REFRESH_MARGIN,
    CredentialStore,
    OAuthCredential,
    RefreshFn,
    TokenRefreshError,
    TokenRefreshers,
    default_refreshers,
    lock_path,
    openai_codex_account_id,
    openai_codex_refresher,
    read_auth_file,
)

from loopback import LoopbackServer, Request, ResponseWriter, serve

NOW = 1_800_000_000.0
"""The wall clock the stores read (seconds); Trio's own clock runs for real."""

PROVIDER = "loopback-oauth"
JWT_CLAIM = "https://api.openai.com/auth"


@attrs.define
class TokenServer:
    """A token endpoint that rotates both tokens on every refresh."""

    gate: trio.Event | None = None
    """When set, each answer waits for it."""
    received: trio.Event = attrs.field(factory=trio.Event)
    status: int = 200
    refresh_tokens: list[str] = attrs.field(factory=list)

    async def handle(self, request: Request, writer: ResponseWriter) -> None:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        assert form["grant_type"] == "refresh_token"
        self.refresh_tokens.append(form["refresh_token"])
        self.received.set()
        if self.gate is not None:
            await self.gate.wait()
        n = len(self.refresh_tokens)
        if self.status != 200:
            body = {"error": "invalid_grant"}
        else:
            body = {"access_token": f"at-{n}", "refresh_token": f"rt-{n}", "expires_in": 3600}
        await writer.send_body(self.status, json.dumps(body).encode())


def loopback_refresher(url: str, client: httpx2.AsyncClient) -> RefreshFn:
    """A refresh function for :class:`TokenServer` (keeps the entry's extra fields)."""

    async def refresh(stored: OAuthCredential) -> OAuthCredential:
        response = await client.post(
            url, data={"grant_type": "refresh_token", "refresh_token": stored.refresh}
        )
        if response.status_code != 200:
            raise TokenRefreshError(
                f"token endpoint said {response.status_code}", provider=PROVIDER
            )
        body = response.json()
        return OAuthCredential(
            access=body["access_token"],
            refresh=body["refresh_token"],
            expires=int((NOW + body["expires_in"]) * 1000),
            extra=stored.extra,
        )

    return refresh


@attrs.frozen
class Setup:
    server: LoopbackServer
    tokens: TokenServer
    refreshers: TokenRefreshers


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    tokens = TokenServer()
    async with serve(tokens.handle) as server, httpx2.AsyncClient() as client:
        refreshers = TokenRefreshers()
        refreshers.register(PROVIDER, loopback_refresher(server.url("/oauth/token"), client))
        yield Setup(server, tokens, refreshers)


def _write_oauth(path: Path, access: str, expires_in: float, **extra: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "type": "oauth",
        "refresh": "rt-" + access,
        "access": access,
        "expires": int((NOW + expires_in) * 1000),
        **extra,
    }
    path.write_text(json.dumps({PROVIDER: entry, "other": {"type": "api_key", "key": "k"}}))
    return path


def _store(setup: Setup, *paths: Path) -> CredentialStore:
    return CredentialStore.load(
        [str(p) for p in paths], env={}, refreshers=setup.refreshers, clock=lambda: NOW
    )


def _entry(path: Path) -> dict[str, Any]:
    entry: dict[str, Any] = read_auth_file(str(path))[PROVIDER]
    return entry


async def test_refresh_when_under_five_minutes_remain(setup: Setup, tmp_path: Path) -> None:
    """A token with less than five minutes left is renewed before use and the rotated pair
    is stored; the refresh token sent is the stored one; other entries stay."""
    path = _write_oauth(tmp_path / "auth.json", "old", REFRESH_MARGIN - 60, accountId="a-1")
    store = _store(setup, path)
    assert await store.api_key(PROVIDER) == "at-1"
    assert setup.tokens.refresh_tokens == ["rt-old"]
    entry = _entry(path)
    assert entry == {
        "type": "oauth",
        "refresh": "rt-1",
        "access": "at-1",
        "expires": int((NOW + 3600) * 1000),
        "accountId": "a-1",
    }
    assert read_auth_file(str(path))["other"] == {"type": "api_key", "key": "k"}
    assert await store.api_key(PROVIDER) == "at-1"
    assert len(setup.tokens.refresh_tokens) == 1


async def test_no_refresh_with_more_than_five_minutes_left(setup: Setup, tmp_path: Path) -> None:
    """A token with more than five minutes left is used as it is."""
    path = _write_oauth(tmp_path / "auth.json", "fine", REFRESH_MARGIN + 60)
    assert await _store(setup, path).api_key(PROVIDER) == "fine"
    assert setup.tokens.refresh_tokens == []


async def test_recheck_under_lock_skips_a_refresh_done_elsewhere(
    setup: Setup, tmp_path: Path
) -> None:
    """A token another process renewed after this store read the file is found once the lock
    is held: no second refresh (which would spend the rotated refresh token twice)."""
    path = _write_oauth(tmp_path / "auth.json", "old", -10)
    store = _store(setup, path)
    _write_oauth(path, "renewed-elsewhere", 3600)
    assert await store.api_key(PROVIDER) == "renewed-elsewhere"
    assert setup.tokens.refresh_tokens == []


async def test_cancelled_caller_still_stores_the_rotated_token(
    setup: Setup, tmp_path: Path
) -> None:
    """Cancelling the caller while the token request is in flight does not abandon it: the
    answer is still written (the old refresh token no longer works), and the lock released."""
    setup.tokens.gate = trio.Event()
    path = _write_oauth(tmp_path / "auth.json", "old", -10)
    store = _store(setup, path)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            caller = trio.CancelScope()

            async def prompt() -> None:
                with caller:
                    await store.api_key(PROVIDER)

            nursery.start_soon(prompt)
            await setup.tokens.received.wait()
            caller.cancel()
            await trio.lowlevel.checkpoint()
            assert _entry(path)["access"] == "old"
            setup.tokens.gate.set()
    assert caller.cancelled_caught
    assert _entry(path)["refresh"] == "rt-1"
    assert not await trio.Path(lock_path(str(path))).exists()
    assert await store.api_key(PROVIDER) == "at-1"
    assert setup.tokens.refresh_tokens == ["rt-old"]


async def test_concurrent_callers_refresh_once(setup: Setup, tmp_path: Path) -> None:
    """Many sessions asking at once for an expiring token cause one refresh; all get it."""
    setup.tokens.gate = trio.Event()
    path = _write_oauth(tmp_path / "auth.json", "old", -10)
    store = _store(setup, path)
    keys: list[str | None] = []

    async def ask() -> None:
        keys.append(await store.api_key(PROVIDER))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(ask)
            await setup.tokens.received.wait()
            await trio.testing.wait_all_tasks_blocked()
            setup.tokens.gate.set()
    assert keys == ["at-1"] * 8
    assert setup.tokens.refresh_tokens == ["rt-old"]


async def test_sessions_with_their_own_stores_refresh_once(setup: Setup, tmp_path: Path) -> None:
    """Stores built per session (as ``pitrio serve`` builds them) share one refresh, and each
    then holds the rotated token."""
    setup.tokens.gate = trio.Event()
    path = _write_oauth(tmp_path / "auth.json", "old", -10)
    stores = [_store(setup, path) for _ in range(3)]
    keys: list[str | None] = []

    async def ask(store: CredentialStore) -> None:
        keys.append(await store.api_key(PROVIDER))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for store in stores * 2:
                nursery.start_soon(ask, store)
            await setup.tokens.received.wait()
            await trio.testing.wait_all_tasks_blocked()
            setup.tokens.gate.set()
    assert keys == ["at-1"] * 6
    assert setup.tokens.refresh_tokens == ["rt-old"]
    for store in stores:
        found = store.get(PROVIDER)
        assert found is not None and found[0].refresh == "rt-1"


async def test_failed_refresh_raises_and_keeps_the_entry(setup: Setup, tmp_path: Path) -> None:
    """A refused refresh ends the request with TokenRefreshError; the file is unchanged and
    the lock released."""
    setup.tokens.status = 400
    path = _write_oauth(tmp_path / "auth.json", "old", -10)
    before = path.read_bytes()
    store = _store(setup, path)
    with pytest.raises(TokenRefreshError, match="400"):
        await store.api_key(PROVIDER)
    assert path.read_bytes() == before
    assert not await trio.Path(lock_path(str(path))).exists()


async def test_failed_refresh_of_a_token_still_valid_uses_it(setup: Setup, tmp_path: Path) -> None:
    """A token inside the renewal margin whose refresh fails is used while it lasts."""
    setup.tokens.status = 500
    path = _write_oauth(tmp_path / "auth.json", "still-good", 60)
    assert await _store(setup, path).api_key(PROVIDER) == "still-good"


async def test_token_from_pi_file_is_written_back_there(setup: Setup, tmp_path: Path) -> None:
    """A token read from pi's auth.json is renewed into pi's file (pi's copy of the old
    refresh token is dead); pitrio's own file is not created."""
    own = tmp_path / "pitrio" / "auth.json"
    pi = _write_oauth(tmp_path / "pi" / "auth.json", "old", -10)
    store = _store(setup, own, pi)
    assert await store.api_key(PROVIDER) == "at-1"
    assert _entry(pi)["refresh"] == "rt-1"
    assert not await trio.Path(own).exists()


# --------------------------------------------------------------------------- OpenAI Codex


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def _codex_handler(answer: dict[str, Any], status: int = 200) -> Any:
    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(status, json.dumps(answer).encode())

    return handle


async def test_openai_codex_refresh_posts_pi_form_and_reads_account(tmp_path: Path) -> None:
    """The OpenAI Codex refresh posts pi's form (client id, refresh token) and stores pi's
    entry: the rotated tokens, ``expires`` from ``expires_in``, the JWT's account id."""
    access = _jwt({JWT_CLAIM: {"chatgpt_account_id": "acct-9"}})
    answer = {"access_token": access, "refresh_token": "rt-new", "expires_in": 864000}
    path = tmp_path / "auth.json"
    old = {"type": "oauth", "access": "a", "refresh": "rt-old", "expires": 0, "accountId": "x"}
    path.write_text(json.dumps({"openai-codex": old}))
    async with serve(_codex_handler(answer)) as server, httpx2.AsyncClient() as client:
        refreshers = TokenRefreshers()
        refreshers.register(
            "openai-codex",
            openai_codex_refresher(
                token_url=server.url("/oauth/token"), client=client, clock=lambda: NOW
            ),
        )
        store = CredentialStore.load([str(path)], env={}, refreshers=refreshers, clock=lambda: NOW)
        assert await store.api_key("openai-codex") == access
    form = {k: v[0] for k, v in parse_qs(server.requests[0].body.decode()).items()}
    assert server.requests[0].headers["content-type"] == "application/x-www-form-urlencoded"
    assert form == {
        "grant_type": "refresh_token",
        "refresh_token": "rt-old",
        "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
    }
    assert read_auth_file(str(path))["openai-codex"] == {
        "type": "oauth",
        "refresh": "rt-new",
        "access": access,
        "expires": int((NOW + 864000) * 1000),
        "accountId": "acct-9",
    }


@pytest.mark.parametrize(
    ("status", "answer", "message"),
    [
        (401, {"error": "invalid_grant"}, r"failed \(401\)"),
        (200, {"access_token": "x", "refresh_token": "y"}, "missing fields"),
        (200, {"access_token": "not-a-jwt", "refresh_token": "y", "expires_in": 1}, "accountId"),
    ],
)
async def test_openai_codex_refresh_failures(
    status: int, answer: dict[str, Any], message: str
) -> None:
    """A refused refresh, an answer without pi's fields and a token without the account claim
    are TokenRefreshErrors with pi's messages."""
    async with serve(_codex_handler(answer, status)) as server, httpx2.AsyncClient() as client:
        refresh = openai_codex_refresher(token_url=server.url("/t"), client=client)
        stored = OAuthCredential(access="a", refresh="r", expires=0)
        with pytest.raises(TokenRefreshError, match=message):
            await refresh(stored)


def test_openai_codex_account_id_reads_the_claim() -> None:
    """The account id is the JWT payload's ``chatgpt_account_id`` under pi's claim path."""
    assert openai_codex_account_id(_jwt({JWT_CLAIM: {"chatgpt_account_id": "a1"}})) == "a1"
    assert openai_codex_account_id(_jwt({"other": 1})) is None
    assert openai_codex_account_id("a.!!!.c") is None
    assert "openai-codex" in list(default_refreshers())
