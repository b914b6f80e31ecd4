"""Signing in: OAuth PKCE with a loopback callback, and RFC 8628 device-code polling.

The browser flow (as pi 0.73.1's ``loginOpenAICodex``): a verifier and its S256 challenge, a
random ``state``; a listener on the provider's loopback port (``127.0.0.1``) that takes one
``GET <path>?code=..&state=..`` and answers a small HTML page; meanwhile the user may paste the
redirect URL (or the bare code) instead, for SSH and headless use. Whichever arrives first wins
and the other is cancelled. The code is then exchanged at the token endpoint (a form POST with
the verifier) and the entry is returned for :meth:`CredentialStore.set` to write under the lock.

The device flow (RFC 8628): a device code is requested, the verification URL and the user code
are shown, and the token endpoint is polled every ``interval`` seconds (``slow_down`` adds five,
``authorization_pending`` continues, ``access_denied`` and ``expired_token`` end it, as does the
code's own expiry). Waits are :func:`trio.sleep`, so a :class:`trio.testing.MockClock` drives
them in tests.

The HTTP head reader here is pitrio's own and minimal: one request line and its headers, at most
:data:`MAX_HEAD_BYTES`; the body (a GET has none) is not read.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from html import escape
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
import httpx2
import trio

from pitrio.providers._http import current_http_client, make_http_client
from pitrio.providers._registry import ProviderError
from pitrio.providers.credentials._auth_file import OAuthCredential

MAX_HEAD_BYTES: Final = 16 * 1024
"""The largest request head the callback listener reads; a larger one is answered 431."""
CALLBACK_READ_TIMEOUT: Final = 10.0
"""How long one connection to the callback listener may take to send its request head."""
DEVICE_CODE_GRANT: Final = "urn:ietf:params:oauth:grant-type:device_code"
SLOW_DOWN_STEP: Final = 5.0
"""Seconds RFC 8628 (section 3.5) adds to the polling interval on ``slow_down``."""
DEFAULT_POLL_INTERVAL: Final = 5.0


class LoginError(ProviderError):
    """A sign-in did not complete (port in use, state mismatch, refused, expired ...).

    Attributes:
        provider: the provider being signed in to.
    """

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(message)
        self.provider = provider


@attrs.frozen(kw_only=True)
class OAuthClient:
    """How one provider signs in: its public client and endpoints.

    Attributes:
        provider: the ``auth.json`` key the entry is stored under.
        name: shown to the user.
        client_id: the public client id (not a secret).
        authorize_url: the browser's authorization endpoint (PKCE), or ``None``.
        token_url: the token endpoint (code exchange, device-code polling, refresh).
        device_code_url: the RFC 8628 device authorization endpoint, or ``None``.
        scope: the scopes asked for.
        callback_host: the address the callback listener binds.
        callback_port: its port (``0``: any free port, for tests).
        callback_path: the redirect path.
        redirect_uri: the redirect URI with ``{port}`` for the bound port.
        authorize_params: extra query parameters of the authorization URL.
        entry_fields: the provider fields stored beside the tokens (``accountId`` ...), from
            the access token; raises :class:`LoginError` when a required one is missing.
    """

    provider: str
    name: str
    client_id: str
    token_url: str
    authorize_url: str | None = None
    device_code_url: str | None = None
    scope: str = ""
    callback_host: str = "127.0.0.1"
    callback_port: int = 0
    callback_path: str = "/auth/callback"
    redirect_uri: str = "http://localhost:{port}/auth/callback"
    authorize_params: Mapping[str, str] = attrs.field(factory=dict)
    entry_fields: Callable[[str], Mapping[str, Any]] = lambda _access: {}


# --------------------------------------------------------------------------- PKCE pieces


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def generate_pkce() -> tuple[str, str]:
    """A fresh ``(verifier, challenge)``: 32 random bytes base64url, and its S256 digest."""
    verifier = _b64url(secrets.token_bytes(32))
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """A fresh ``state`` (16 random bytes in hex, as pi makes it)."""
    return secrets.token_hex(16)


def authorization_url(client: OAuthClient, *, redirect_uri: str, challenge: str, state: str) -> str:
    """The URL the user opens: pi's parameters for ``client`` with this flow's values."""
    if client.authorize_url is None:
        raise LoginError(f"{client.name} has no browser sign-in", provider=client.provider)
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "scope": client.scope,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        **client.authorize_params,
    }
    return f"{client.authorize_url}?{urlencode(params)}"


def parse_authorization_input(text: str) -> tuple[str | None, str | None]:
    """``(code, state)`` from what the user pasted, as pi reads it.

    A redirect URL (its ``code`` and ``state`` parameters), ``code#state``, a query string with
    ``code=``, or the bare code.
    """
    value = text.strip()
    if not value:
        return None, None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        query = parse_qs(parts.query)
        return query.get("code", [None])[0], query.get("state", [None])[0]
    if "#" in value:
        code, state = value.split("#", 1)
        return code or None, state or None
    if "code=" in value:
        query = parse_qs(value)
        return query.get("code", [None])[0], query.get("state", [None])[0]
    return value, None


# --------------------------------------------------------------------------- callback listener


async def open_callback_listener(client: OAuthClient) -> trio.SocketListener:
    """Bind the callback port; a port already taken is a :class:`LoginError` saying so."""
    try:
        listeners = await trio.open_tcp_listeners(client.callback_port, host=client.callback_host)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise LoginError(
                f"port {client.callback_port} is in use: {exc.strerror}. Close what listens "
                f"there (another sign-in?) or paste the redirect URL with --no-browser",
                provider=client.provider,
            ) from exc
        raise LoginError(
            f"cannot listen on {client.callback_host}:{client.callback_port}: {exc}",
            provider=client.provider,
        ) from exc
    return listeners[0]


def _page(title: str, message: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>pitrio</title></head>"
        f"<body><h1>{escape(title)}</h1><p>{escape(message)}</p></body></html>"
    )


async def _read_head(stream: trio.SocketStream) -> bytes | None:
    buffer = bytearray()
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD_BYTES:
            return None
        chunk = await stream.receive_some(4096)
        if not chunk:
            return None
        buffer += chunk
    return bytes(buffer.split(b"\r\n\r\n", 1)[0])


async def _answer(stream: trio.SocketStream, status: str, html: str) -> None:
    body = html.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with suppress(trio.BrokenResourceError):
        await stream.send_all(head + body)


async def _callback_request(
    stream: trio.SocketStream, client: OAuthClient, state: str
) -> str | None:
    """Answer one connection; the code when it is the callback, else ``None``.

    Raises:
        LoginError: the callback's ``state`` is not this flow's (answered 400 first).
    """
    async with stream:
        head: bytes | None = None
        with trio.move_on_after(CALLBACK_READ_TIMEOUT):
            head = await _read_head(stream)
        if head is None:
            return None
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        target = rest.rsplit(" ", 1)[0]
        url = urlsplit(target)
        if method != "GET" or url.path != client.callback_path:
            await _answer(stream, "404 Not Found", _page("Not found", "Callback route not found."))
            return None
        query = parse_qs(url.query)
        if query.get("state", [None])[0] != state:
            await _answer(stream, "400 Bad Request", _page("Sign-in failed", "State mismatch."))
            raise LoginError(
                "state mismatch on the sign-in callback (a stale or forged redirect); "
                "start the sign-in again",
                provider=client.provider,
            )
        code = query.get("code", [None])[0]
        if not code:
            error = query.get("error", [""])[0]
            await _answer(stream, "400 Bad Request", _page("Sign-in failed", error or "No code."))
            raise LoginError(
                f"the sign-in callback carried no code{f': {error}' if error else ''}",
                provider=client.provider,
            )
        await _answer(
            stream,
            "200 OK",
            _page("Signed in", f"{client.name} sign-in completed. You can close this window."),
        )
        return code


async def wait_for_callback(listener: trio.SocketListener, client: OAuthClient, state: str) -> str:
    """Accept connections on ``listener`` until one is the callback; its code.

    Each connection is served in a task of its own, so an idle connection (a browser's
    preconnect) does not hold up the callback.

    Raises:
        LoginError: the callback's ``state`` is not this flow's, or it carries no code.
    """
    outcome: list[str | LoginError] = []
    async with trio.open_nursery() as nursery:

        async def serve(stream: trio.SocketStream) -> None:
            try:
                code = await _callback_request(stream, client, state)
            except LoginError as exc:
                outcome.append(exc)
            else:
                if code is None:
                    return
                outcome.append(code)
            nursery.cancel_scope.cancel()

        while True:
            stream = await listener.accept()
            nursery.start_soon(serve, stream)
    first = outcome[0]
    if isinstance(first, LoginError):
        raise first
    return first


# --------------------------------------------------------------------------- token endpoint


async def _post_form(
    client: OAuthClient, url: str, form: Mapping[str, str], http: httpx2.AsyncClient | None
) -> httpx2.Response:
    shared = http or current_http_client()
    try:
        async with AsyncExitStack() as stack:
            if shared is None:
                shared = await stack.enter_async_context(make_http_client())
            response = await shared.post(
                url, data=dict(form), headers={"Accept": "application/json"}
            )
            await response.aread()
            return response
    except httpx2.HTTPError as exc:
        raise LoginError(f"{client.name} sign-in: {url}: {exc}", provider=client.provider) from exc


def _json_body(response: httpx2.Response) -> dict[str, Any]:
    try:
        body = json.loads(response.text)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _credential(
    client: OAuthClient, body: Mapping[str, Any], text: str, clock: Callable[[], float]
) -> OAuthCredential:
    access = body.get("access_token")
    renewal = body.get("refresh_token")
    expires_in = body.get("expires_in")
    if (
        not (isinstance(access, str) and access)
        or not (isinstance(renewal, str) and renewal)
        or isinstance(expires_in, bool)
        or not isinstance(expires_in, int | float)
    ):
        raise LoginError(
            f"{client.name} token response missing fields: {text}", provider=client.provider
        )
    return OAuthCredential(
        access=access,
        refresh=renewal,
        expires=int(clock() * 1000 + expires_in * 1000),
        extra=dict(client.entry_fields(access)),
    )


async def exchange_code(
    client: OAuthClient,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    http: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuthCredential:
    """Trade an authorization code for tokens (``grant_type=authorization_code``)."""
    form = {
        "grant_type": "authorization_code",
        "client_id": client.client_id,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": redirect_uri,
    }
    response = await _post_form(client, client.token_url, form, http)
    if not response.is_success:
        raise LoginError(
            f"{client.name} token exchange failed ({response.status_code}): "
            f"{response.text or response.reason_phrase}",
            provider=client.provider,
        )
    return _credential(client, _json_body(response), response.text, clock)


# --------------------------------------------------------------------------- browser flow

PasteFn = Callable[[], Awaitable[str]]
"""Reads one pasted line (``""`` at end of input: nothing more will be pasted)."""


async def login_pkce(
    client: OAuthClient,
    *,
    on_url: Callable[[str], None],
    paste: PasteFn | None = None,
    http: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuthCredential:
    """Sign in through the browser; the entry to store (not stored here).

    Args:
        client: the provider's client.
        on_url: called once with the authorization URL, after the listener is bound.
        paste: reads what the user pastes (the redirect URL or the code); races the callback.
            End of input leaves the callback alone; a blank line is asked again.
        http: the HTTP client for the exchange; default the run's, else one of its own.
        clock: the wall clock in seconds (``expires`` is counted from it).

    Raises:
        LoginError: the port is taken, the state does not match, the exchange is refused.
    """
    verifier, challenge = generate_pkce()
    state = new_state()
    listener = await open_callback_listener(client)
    async with listener:
        port = listener.socket.getsockname()[1]
        redirect_uri = client.redirect_uri.format(port=port)
        on_url(
            authorization_url(client, redirect_uri=redirect_uri, challenge=challenge, state=state)
        )
        outcome: list[str | LoginError] = []
        async with trio.open_nursery() as nursery:

            async def from_callback() -> None:
                try:
                    outcome.append(await wait_for_callback(listener, client, state))
                except LoginError as exc:
                    outcome.append(exc)
                nursery.cancel_scope.cancel()

            async def from_paste(read: PasteFn) -> None:
                while True:
                    line = await read()
                    if not line:
                        return
                    code, pasted_state = parse_authorization_input(line)
                    if code is None:
                        continue
                    if pasted_state is not None and pasted_state != state:
                        outcome.append(
                            LoginError(
                                "state mismatch in the pasted redirect URL; start the sign-in "
                                "again",
                                provider=client.provider,
                            )
                        )
                    else:
                        outcome.append(code)
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(from_callback)
            if paste is not None:
                nursery.start_soon(from_paste, paste)
    first = outcome[0]
    if isinstance(first, LoginError):
        raise first
    return await exchange_code(
        client, code=first, verifier=verifier, redirect_uri=redirect_uri, http=http, clock=clock
    )


# --------------------------------------------------------------------------- device code


@attrs.frozen(kw_only=True)
class DeviceCode:
    """A device authorization (RFC 8628 section 3.2) as shown to the user."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float


async def request_device_code(
    client: OAuthClient, *, http: httpx2.AsyncClient | None = None
) -> DeviceCode:
    """Ask the device authorization endpoint for a code."""
    if client.device_code_url is None:
        raise LoginError(f"{client.name} has no device-code sign-in", provider=client.provider)
    form = {"client_id": client.client_id}
    if client.scope:
        form["scope"] = client.scope
    response = await _post_form(client, client.device_code_url, form, http)
    body = _json_body(response)
    if not response.is_success:
        raise LoginError(
            f"{client.name} device code request failed ({response.status_code}): "
            f"{response.text or response.reason_phrase}",
            provider=client.provider,
        )
    device_code = body.get("device_code")
    user_code = body.get("user_code")
    uri = body.get("verification_uri") or body.get("verification_url")
    expires_in = body.get("expires_in")
    interval = body.get("interval", DEFAULT_POLL_INTERVAL)
    if (
        not isinstance(device_code, str)
        or not isinstance(user_code, str)
        or not isinstance(uri, str)
        or isinstance(expires_in, bool)
        or not isinstance(expires_in, int | float)
        or isinstance(interval, bool)
        or not isinstance(interval, int | float)
    ):
        raise LoginError(
            f"{client.name} device code response missing fields: {response.text}",
            provider=client.provider,
        )
    complete = body.get("verification_uri_complete")
    return DeviceCode(
        device_code=device_code,
        user_code=user_code,
        verification_uri=uri,
        verification_uri_complete=complete if isinstance(complete, str) else None,
        expires_in=float(expires_in),
        interval=float(interval),
    )


async def poll_device_token(
    client: OAuthClient,
    device: DeviceCode,
    *,
    http: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuthCredential:
    """Poll the token endpoint until the user approves (RFC 8628 section 3.4, 3.5).

    Each poll waits ``interval`` first (Trio's clock); ``slow_down`` adds
    :data:`SLOW_DOWN_STEP` to it for the rest of the flow.

    Raises:
        LoginError: ``access_denied``, ``expired_token``, the code's expiry passed, another
            error from the endpoint.
    """
    deadline = trio.current_time() + device.expires_in
    interval = device.interval
    form = {
        "grant_type": DEVICE_CODE_GRANT,
        "device_code": device.device_code,
        "client_id": client.client_id,
    }
    while True:
        if trio.current_time() + interval > deadline:
            break
        await trio.sleep(interval)
        response = await _post_form(client, client.token_url, form, http)
        body = _json_body(response)
        if response.is_success and "error" not in body:
            return _credential(client, body, response.text, clock)
        error = body.get("error")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += SLOW_DOWN_STEP
            continue
        if error == "access_denied":
            raise LoginError(f"{client.name} sign-in was denied", provider=client.provider)
        if error == "expired_token":
            break
        raise LoginError(
            f"{client.name} device sign-in failed ({response.status_code}): "
            f"{response.text or response.reason_phrase}",
            provider=client.provider,
        )
    raise LoginError(
        f"{client.name} device code expired before the sign-in was approved; start again",
        provider=client.provider,
    )


async def login_device_code(
    client: OAuthClient,
    *,
    on_code: Callable[[DeviceCode], None],
    http: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuthCredential:
    """Sign in with a device code; ``on_code`` shows the URL and user code."""
    device = await request_device_code(client, http=http)
    on_code(device)
    return await poll_device_token(client, device, http=http, clock=clock)
