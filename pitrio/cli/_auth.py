"""``pitrio auth``: what credentials pitrio sees, and removing its own.

::

    pitrio auth status [PROVIDER]       where each provider's credentials come from (no secret)
    pitrio auth print-api-key PROVIDER  the key a request would send, on stdout
    pitrio auth logout PROVIDER         remove PROVIDER from pitrio's auth.json
    pitrio auth login [PROVIDER] [--device-code] [--no-browser]
                                        sign in (default openai-codex: "Sign in with ChatGPT")

Credentials are read as requests read them (:class:`~pitrio.providers.credentials.
CredentialStore`): pitrio's ``auth.json``, then pi's, then the environment, then the ``apiKey``
of ``models.json``. ``logout`` removes the entry from pitrio's file only; an entry in pi's
file is pi's to remove (``status`` still shows it afterwards).

``login`` runs the provider's browser flow (a callback on 127.0.0.1 racing a pasted redirect URL
or code on stdin, for SSH) or, with ``--device-code``, its RFC 8628 device flow where the
provider has one, and stores the tokens in pitrio's ``auth.json`` under the lock. Anthropic and
GitHub Copilot subscription sign-ins are not offered: with ``--subscription-terms`` the command
prints why (their terms) and stops.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import webbrowser
from collections.abc import Mapping, Sequence
from typing import Final, TextIO

import trio

from pitrio.providers import ENV_API_KEY_VARS, CustomModels, ModelsJsonError, load_models_json
from pitrio.providers.credentials import (
    ApiKeyCredential,
    CredentialStore,
    DeviceCode,
    LoginError,
    OAuthClient,
    OAuthCredential,
    TokenRefreshError,
    default_refreshers,
    login_device_code,
    login_pkce,
    openai_codex_client,
)
from pitrio.sessions.resources import resolve_agent_dirs

MODELS_FILE: Final = "models.json"

DEFAULT_LOGIN_PROVIDER: Final = "openai-codex"

SUBSCRIPTION_TERMS: Final = {
    "anthropic": (
        "Anthropic's consumer terms do not allow Claude subscription (Pro/Max) tokens to be used "
        "in tools other than Anthropic's own (Claude Code, claude.ai); pi signs in by posing as "
        "Claude Code. Use an API key (ANTHROPIC_API_KEY) instead. A token pi already stored is "
        "sent as a plain bearer token; PITRIO_ANTHROPIC_CLAUDE_CODE_IMITATION=1 adds pi's Claude "
        "Code headers, at the account's risk."
    ),
    "github-copilot": (
        "GitHub reserves the Copilot internal token endpoint (copilot_internal) for its official "
        "clients; pi signs in with VS Code's client id. A token pi already stored is used as it "
        "is, and renewed by pi."
    ),
}
"""Subscription sign-ins pitrio does not offer, and why (printed with ``--subscription-terms``)."""

DESCRIPTION: Final = """\
Sign in, show the credentials pitrio uses, print a provider's API key, or remove an entry from
pitrio's auth.json. Keys are looked up in pitrio's auth.json, then pi's, then the environment,
then models.json."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pitrio auth", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    status = commands.add_parser("status", help="where each provider's credentials come from")
    status.add_argument("provider", nargs="?")
    key = commands.add_parser("print-api-key", help="print the API key a request would send")
    key.add_argument("provider")
    logout = commands.add_parser("logout", help="remove a provider from pitrio's auth.json")
    logout.add_argument("provider")
    login = commands.add_parser("login", help="sign in and store the tokens in auth.json")
    login.add_argument("provider", nargs="?", default=DEFAULT_LOGIN_PROVIDER)
    login.add_argument(
        "--device-code", action="store_true", help="use the device-code flow (no callback)"
    )
    login.add_argument(
        "--no-browser", action="store_true", help="print the URL only (do not open a browser)"
    )
    login.add_argument(
        "--subscription-terms",
        action="store_true",
        help="for anthropic / github-copilot: print why their subscription sign-in is not offered",
    )
    return parser


def _load(env: Mapping[str, str]) -> tuple[CredentialStore, CustomModels | None, list[str]]:
    dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
    store = CredentialStore.load(dirs.auth_paths(), env=env, refreshers=default_refreshers())
    warnings = [f"cannot read {exc}" for exc in store.errors]
    custom: CustomModels | None = None
    try:
        custom = load_models_json(dirs.config_file(MODELS_FILE))
    except ModelsJsonError as exc:
        warnings.append(f"errors loading models.json:\n{exc}")
    except OSError:
        custom = None
    return store, custom, warnings


def _describe(store: CredentialStore, custom: CustomModels | None, provider: str) -> str | None:
    found = store.get(provider)
    if found is not None:
        credential, path = found
        if isinstance(credential, OAuthCredential):
            when = datetime.datetime.fromtimestamp(credential.expires / 1000, datetime.UTC)
            return f"oauth (expires {when:%Y-%m-%d %H:%M} UTC) in {path}"
        assert isinstance(credential, ApiKeyCredential)
        kind = "command" if credential.key.startswith("!") else "api_key"
        return f"{kind} in {path}"
    status = store.auth_status(provider)
    if status.source == "environment":
        return f"environment variable {status.label}"
    if custom is not None and custom.has_configured_auth(provider):
        return f"apiKey in {custom.path}"
    return None


def _status(
    store: CredentialStore, custom: CustomModels | None, provider: str | None, out: TextIO
) -> int:
    if provider is not None:
        described = _describe(store, custom, provider)
        out.write(f"{provider}: {described or 'no credentials'}\n")
        return 0 if described else 1
    names = dict.fromkeys(store.providers())
    names.update(dict.fromkeys(p for p in ENV_API_KEY_VARS if store.has_auth(p)))
    if custom is not None:
        names.update(
            dict.fromkeys(p for p in custom.provider_configs if custom.has_configured_auth(p))
        )
    if not names:
        out.write("No credentials found (auth.json, environment variables, models.json).\n")
        return 0
    width = max(map(len, names))
    for name in names:
        out.write(f"{name:<{width}}  {_describe(store, custom, name)}\n")
    return 0


async def _print_key(
    store: CredentialStore, custom: CustomModels | None, provider: str, out: TextIO, err: TextIO
) -> int:
    try:
        key = await store.api_key(provider)
    except TokenRefreshError as exc:
        err.write(f"pitrio auth: {exc}\n")
        return 1
    if key is None and store.get(provider) is None and custom is not None:
        key = await custom.provider_api_key(provider, env=store.env)
    if not key:
        err.write(f"pitrio auth: no API key found for {provider}\n")
        return 1
    out.write(f"{key}\n")
    return 0


async def _logout(store: CredentialStore, provider: str, out: TextIO) -> int:
    own = store.paths[0]
    if not await store.remove(provider):
        out.write(f"{provider}: no entry in {own}\n")
        return 1
    out.write(f"{provider}: removed from {own}\n")
    found = store.get(provider)
    if found is not None:
        out.write(f"{provider}: pi's entry in {found[1]} is still used (remove it with pi)\n")
    return 0


def login_clients(env: Mapping[str, str]) -> dict[str, OAuthClient]:
    """The providers ``pitrio auth login`` signs in to, by ``auth.json`` key."""
    codex = openai_codex_client(env=env)
    return {codex.provider: codex}


async def _login(
    store: CredentialStore,
    client: OAuthClient,
    args: argparse.Namespace,
    stdin: TextIO,
    out: TextIO,
    err: TextIO,
) -> int:
    def show_url(url: str) -> None:
        out.write(f"Open this URL to sign in to {client.name}:\n\n  {url}\n\n")
        out.write("Or paste the redirect URL (or the code) here and press Enter:\n")
        out.flush()
        if not args.no_browser:
            webbrowser.open(url)

    def show_code(device: DeviceCode) -> None:
        url = device.verification_uri_complete or device.verification_uri
        out.write(f"Open {url} and enter the code {device.user_code}\n")
        out.flush()
        if not args.no_browser:
            webbrowser.open(url)

    async def paste() -> str:
        return await trio.to_thread.run_sync(stdin.readline, abandon_on_cancel=True)

    try:
        if args.device_code:
            credential = await login_device_code(client, on_code=show_code)
        else:
            credential = await login_pkce(client, on_url=show_url, paste=paste)
    except LoginError as exc:
        err.write(f"pitrio auth login: {exc}\n")
        return 1
    await store.set(client.provider, credential)
    out.write(f"{client.provider}: signed in, stored in {store.paths[0]}\n")
    return 0


def _refuse_subscription(provider: str, opted_in: bool, err: TextIO) -> int:
    if opted_in:
        err.write(f"{SUBSCRIPTION_TERMS[provider]}\n")
        err.write(f"pitrio auth login: {provider} subscription sign-in is not available.\n")
    else:
        err.write(
            f"pitrio auth login: {provider} subscription sign-in is not offered "
            "(the provider's terms); --subscription-terms says why.\n"
        )
    return 1


def auth_main(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    out: TextIO,
    err: TextIO,
    stdin: TextIO | None = None,
    clients: Mapping[str, OAuthClient] | None = None,
) -> int:
    """Run ``pitrio auth``; returns the exit status.

    ``stdin`` is where ``login`` reads a pasted redirect URL (default ``sys.stdin``);
    ``clients`` replaces :func:`login_clients` (tests point it at loopback servers).
    """
    args = _parser().parse_args(list(argv))
    environ = dict(os.environ if env is None else env)
    if args.command == "login":
        if args.provider in SUBSCRIPTION_TERMS:
            return _refuse_subscription(args.provider, args.subscription_terms, err)
        known = dict(login_clients(environ) if clients is None else clients)
        client = known.get(args.provider)
        if client is None:
            err.write(
                f"pitrio auth login: no sign-in for {args.provider} "
                f"(available: {', '.join(sorted(known))})\n"
            )
            return 1
        store, _, _ = _load(environ)
        return trio.run(_login, store, client, args, stdin or sys.stdin, out, err)
    store, custom, warnings = _load(environ)
    for warning in warnings:
        err.write(f"Warning: {warning}\n")
    if args.command == "status":
        return _status(store, custom, args.provider, out)
    if args.command == "print-api-key":
        return trio.run(_print_key, store, custom, args.provider, out, err)
    return trio.run(_logout, store, args.provider, out)
