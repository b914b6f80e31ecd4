"""Signing in, end to end against authorization servers on 127.0.0.1 (real HTTP).

The test plays the browser: it reads the authorization URL the flow shows, then GETs the
redirect URI with a code and the state (or pastes the redirect URL instead). The token
endpoint checks the PKCE verifier against the challenge of the URL and answers with JWT access
tokens carrying a ChatGPT account id, as OpenAI's does. Device-code tests run on a
:class:`trio.testing.MockClock` that jumps once the run has been idle for a moment of real time
(sockets are real, so the jump must not happen while a request is on the wire).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import httpx2
import pytest
import trio
import trio.testing

from pitrio.cli._auth import auth_main
from pitrio.providers.credentials import (
    CredentialStore,
    DeviceCode,
    LoginError,
    OAuthClient,
    OAuthCredential,
    TokenRefreshers,
    login_device_code,
    login_pkce,
    openai_codex_client,
    openai_codex_refresher,
    parse_authorization_input,
)

from loopback import Request, ResponseWriter, serve

NOW = 1_800_000_000.0
ACCOUNT = "acct-loopback"
PROVIDER = "openai-codex"


def jwt(n: int) -> str:
    """An unsigned JWT whose payload names :data:`ACCOUNT` (the claim pi reads)."""
    claims = {"https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT}, "n": n}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"e30.{payload}.sig"


def form_of(request: Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}


@attrs.define
class AuthServer:
    """A token endpoint (code exchange, refresh, device code) with a scripted device answer."""

    challenge: str = ""
    check_challenge: bool = True
    """Off when the test cannot see the authorization URL (a bare pasted code)."""
    device_answers: list[str] = attrs.field(factory=list)
    """``error`` codes answered to device polls in turn; then tokens."""
    polls: list[float] = attrs.field(factory=list)
    """Trio's clock at each device poll."""
    forms: list[dict[str, str]] = attrs.field(factory=list)
    issued: int = 0

    async def handle(self, request: Request, writer: ResponseWriter) -> None:
        form = form_of(request)
        self.forms.append(form)
        if request.path == "/device":
            body = {
                "device_code": "dev-1",
                "user_code": "ABCD-EFGH",
                "verification_uri": "http://127.0.0.1/activate",
                "expires_in": 12 if form.get("scope") == "short" else 900,
                "interval": 5,
            }
            await writer.send_body(200, json.dumps(body).encode())
            return
        grant = form["grant_type"]
        if grant == "urn:ietf:params:oauth:grant-type:device_code":
            self.polls.append(trio.current_time())
            assert form["device_code"] == "dev-1"
            if self.device_answers:
                error = self.device_answers.pop(0)
                await writer.send_body(400, json.dumps({"error": error}).encode())
                return
        elif grant == "authorization_code":
            verifier = form["code_verifier"].encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            mismatch = self.check_challenge and digest.decode() != self.challenge
            if mismatch or form["code"] != "the-code":
                await writer.send_body(400, b'{"error":"invalid_grant"}')
                return
        else:
            assert grant == "refresh_token"
            assert form["refresh_token"] == f"rt-{self.issued}"
        self.issued += 1
        tokens = {
            "access_token": jwt(self.issued),
            "refresh_token": f"rt-{self.issued}",
            "expires_in": 3600,
        }
        await writer.send_body(200, json.dumps(tokens).encode())


def codex(server_url: str, **kwargs: Any) -> OAuthClient:
    return attrs.evolve(
        openai_codex_client(
            token_url=f"{server_url}/token",
            authorize_url=f"{server_url}/authorize",
            callback_port=0,
        ),
        **kwargs,
    )


class Browser:
    """Receives the authorization URL and follows the redirect the server would send."""

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](1)

    def on_url(self, url: str) -> None:
        self.send.send_nowait(url)

    async def authorize(self, server: AuthServer) -> dict[str, str]:
        url = await self.receive.receive()
        params = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        server.challenge = params["code_challenge"]
        return params


async def test_pkce_callback_signs_in_stores_and_refreshes(tmp_path: Path) -> None:
    """The browser's callback completes the flow; the entry is stored as pi stores it, read
    back by a new CredentialStore, and its refresh token renews it at the same endpoint."""
    auth = AuthServer()
    browser = Browser()
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        client = codex(server.url())
        result: list[OAuthCredential] = []
        answer: list[httpx2.Response] = []
        async with trio.open_nursery() as nursery:

            async def sign_in() -> None:
                result.append(
                    await login_pkce(client, on_url=browser.on_url, http=http, clock=lambda: NOW)
                )

            nursery.start_soon(sign_in)
            params = await browser.authorize(auth)
            assert params["code_challenge_method"] == "S256"
            assert params["client_id"] == "app_EMoamEEZ73f0CkXaXp7hrann"
            assert params["scope"] == "openid profile email offline_access"
            assert params["originator"] == "pi"
            assert params["codex_cli_simplified_flow"] == "true"
            assert params["id_token_add_organizations"] == "true"
            redirect = params["redirect_uri"]
            assert redirect.startswith("http://localhost:") and redirect.endswith("/auth/callback")
            callback = redirect.replace("localhost", "127.0.0.1")
            answer.append(
                await http.get(callback, params={"code": "the-code", "state": params["state"]})
            )
        assert answer[0].status_code == 200
        assert "completed" in answer[0].text
        assert auth.forms[-1]["redirect_uri"] == redirect
        credential = result[0]
        assert credential.extra == {"accountId": ACCOUNT}
        assert credential.expires == int(NOW * 1000) + 3600 * 1000

        path = str(tmp_path / "auth.json")
        await CredentialStore([path]).set(PROVIDER, credential)
        stored = json.loads(await trio.Path(path).read_text())
        assert stored[PROVIDER] == {
            "type": "oauth",
            "refresh": "rt-1",
            "access": jwt(1),
            "expires": credential.expires,
            "accountId": ACCOUNT,
        }
        later = NOW + 7200
        refreshers = TokenRefreshers(
            {PROVIDER: openai_codex_refresher(token_url=server.url("/token"), client=http)}
        )
        store = CredentialStore.load([path], refreshers=refreshers, clock=lambda: later)
        assert await store.api_key(PROVIDER) == jwt(2)
        assert json.loads(await trio.Path(path).read_text())[PROVIDER]["refresh"] == "rt-2"


async def test_state_mismatch_is_refused() -> None:
    """A callback whose state is not the flow's is answered 400 and ends the sign-in."""
    auth = AuthServer()
    browser = Browser()
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        client = codex(server.url())
        answer: list[httpx2.Response] = []
        with pytest.RaisesGroup(pytest.RaisesExc(LoginError, match="state mismatch")):
            async with trio.open_nursery() as nursery:

                async def play() -> None:
                    params = await browser.authorize(auth)
                    callback = params["redirect_uri"].replace("localhost", "127.0.0.1")
                    answer.append(
                        await http.get(callback, params={"code": "the-code", "state": "forged"})
                    )

                nursery.start_soon(play)
                await login_pkce(client, on_url=browser.on_url, http=http)
        assert answer[0].status_code == 400
        assert auth.forms == []


async def test_port_taken_is_a_clear_error() -> None:
    """A callback port already listened on ends the sign-in with the port named."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with listeners[0]:
        client = codex("http://127.0.0.1:9", callback_port=port)
        with pytest.raises(LoginError, match=f"port {port} is in use"):
            await login_pkce(client, on_url=lambda _url: None)


async def test_paste_back_wins_when_pasted_first() -> None:
    """A pasted redirect URL completes the flow; the callback listener is closed afterwards."""
    auth = AuthServer()
    browser = Browser()
    pasted_send, pasted_receive = trio.open_memory_channel[str](1)
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        client = codex(server.url())
        result: list[OAuthCredential] = []
        redirect: list[str] = []
        async with trio.open_nursery() as nursery:

            async def sign_in() -> None:
                result.append(
                    await login_pkce(
                        client, on_url=browser.on_url, paste=pasted_receive.receive, http=http
                    )
                )

            nursery.start_soon(sign_in)
            params = await browser.authorize(auth)
            redirect.append(params["redirect_uri"])
            await pasted_send.send("\n")
            await pasted_send.send(
                f"{params['redirect_uri']}?code=the-code&state={params['state']}\n"
            )
        assert result[0].access == jwt(1)
        callback = redirect[0].replace("localhost", "127.0.0.1")
        with pytest.raises(httpx2.ConnectError):
            await http.get(callback, params={"code": "late", "state": "x"})


async def test_pasted_url_with_another_state_is_refused() -> None:
    """A pasted redirect URL from another sign-in is refused (state mismatch)."""
    auth = AuthServer()
    browser = Browser()
    pasted_send, pasted_receive = trio.open_memory_channel[str](1)
    async with serve(auth.handle) as server:
        client = codex(server.url())
        with pytest.RaisesGroup(pytest.RaisesExc(LoginError, match="state mismatch")):
            async with trio.open_nursery() as nursery:

                async def play() -> None:
                    await browser.authorize(auth)
                    await pasted_send.send("http://localhost:1455/auth/callback?code=c&state=s")

                nursery.start_soon(play)
                await login_pkce(client, on_url=browser.on_url, paste=pasted_receive.receive)
        assert auth.forms == []


def test_parse_authorization_input_reads_pi_forms() -> None:
    """A redirect URL, ``code#state``, a query string, and a bare code, as pi reads them."""
    assert parse_authorization_input(" http://localhost:1455/cb?code=a&state=b ") == ("a", "b")
    assert parse_authorization_input("a#b") == ("a", "b")
    assert parse_authorization_input("code=a&state=b") == ("a", "b")
    assert parse_authorization_input("abc") == ("abc", None)
    assert parse_authorization_input("  ") == (None, None)


@pytest.fixture
def idle_clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the run has been idle for 50 ms of real time."""
    return trio.testing.MockClock(autojump_threshold=0.05)


def device_client(server_url: str, scope: str = "") -> OAuthClient:
    return attrs.evolve(
        codex(server_url), device_code_url=f"{server_url}/device", scope=scope or "openid"
    )


async def test_device_code_pending_then_slow_down_then_success(
    idle_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """Polls wait ``interval``; ``authorization_pending`` continues; ``slow_down`` adds 5 s."""
    auth = AuthServer(
        device_answers=["authorization_pending", "slow_down", "authorization_pending"]
    )
    shown: list[DeviceCode] = []
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        start = trio.current_time()
        credential = await login_device_code(
            device_client(server.url()), on_code=shown.append, http=http, clock=lambda: NOW
        )
    assert shown[0].user_code == "ABCD-EFGH"
    assert shown[0].verification_uri == "http://127.0.0.1/activate"
    gaps = [b - a for a, b in zip([start, *auth.polls], auth.polls, strict=False)]
    assert [round(g) for g in gaps] == [5, 5, 10, 10]
    assert credential.access == jwt(1)
    path = str(tmp_path / "auth.json")
    await CredentialStore([path]).set(PROVIDER, credential)
    assert CredentialStore.load([path]).get(PROVIDER) == (credential, path)


async def test_device_code_expiry_is_an_error(idle_clock: trio.testing.MockClock) -> None:
    """A code that expires while pending ends the sign-in; no poll is made past the expiry."""
    auth = AuthServer(device_answers=["authorization_pending"] * 10)
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        start = trio.current_time()
        with pytest.raises(LoginError, match="expired"):
            await login_device_code(
                device_client(server.url(), "short"), on_code=lambda _d: None, http=http
            )
    assert [round(t - start) for t in auth.polls] == [5, 10]


@pytest.mark.parametrize(
    ("error", "message"), [("access_denied", "denied"), ("expired_token", "expired")]
)
async def test_device_code_refusals_are_errors(
    idle_clock: trio.testing.MockClock, error: str, message: str
) -> None:
    """``access_denied`` and ``expired_token`` end the polling at once."""
    auth = AuthServer(device_answers=[error, "authorization_pending"])
    async with serve(auth.handle) as server, httpx2.AsyncClient() as http:
        with pytest.raises(LoginError, match=message):
            await login_device_code(device_client(server.url()), on_code=lambda _d: None, http=http)
    assert len(auth.polls) == 1


def test_cli_login_with_a_pasted_code_stores_the_entry(tmp_path: Path) -> None:
    """``pitrio auth login --no-browser`` prints the URL, takes a code pasted on stdin, exchanges
    it and writes the entry to pitrio's auth.json (the token server runs in another thread)."""
    auth = AuthServer(check_challenge=False)
    ready: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def run_server() -> None:
        async with serve(auth.handle) as server:
            ready.append(server.url())
            started.set()
            await trio.to_thread.run_sync(stop.wait)

    thread = threading.Thread(target=trio.run, args=(run_server,))
    thread.start()
    try:
        assert started.wait(10)
        client = codex(ready[0])
        out, err = io.StringIO(), io.StringIO()
        code = auth_main(
            ["login", "--no-browser"],
            env={"HOME": str(tmp_path)},
            out=out,
            err=err,
            stdin=io.StringIO("the-code\n"),
            clients={PROVIDER: client},
        )
    finally:
        stop.set()
        thread.join()
    assert (code, err.getvalue()) == (0, "")
    assert f"{ready[0]}/authorize?" in out.getvalue()
    stored = json.loads((tmp_path / ".pitrio" / "agent" / "auth.json").read_text())
    assert stored[PROVIDER]["accountId"] == ACCOUNT
    assert stored[PROVIDER]["refresh"] == "rt-1"
