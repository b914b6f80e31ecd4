"""``pitrio auth``: what credentials pitrio sees, and removing its own.

::

    pitrio auth status [PROVIDER]       where each provider's credentials come from (no secret)
    pitrio auth print-api-key PROVIDER  the key a request would send, on stdout
    pitrio auth logout PROVIDER         remove PROVIDER from pitrio's auth.json
    pitrio auth login [PROVIDER]        not available yet (sign in with pi; pitrio reads it)

Credentials are read as requests read them (:class:`~pitrio.providers.credentials.
CredentialStore`): pitrio's ``auth.json``, then pi's, then the environment, then the ``apiKey``
of ``models.json``. ``logout`` removes the entry from pitrio's file only; an entry in pi's
file is pi's to remove (``status`` still shows it afterwards).
"""

from __future__ import annotations

import argparse
import datetime
import os
from collections.abc import Mapping, Sequence
from typing import Final, TextIO

import trio

from pitrio.providers import ENV_API_KEY_VARS, CustomModels, ModelsJsonError, load_models_json
from pitrio.providers.credentials import (
    ApiKeyCredential,
    CredentialStore,
    OAuthCredential,
    TokenRefreshError,
    default_refreshers,
)
from pitrio.sessions.resources import resolve_agent_dirs

MODELS_FILE: Final = "models.json"

LOGIN_UNAVAILABLE: Final = (
    "pitrio auth login: logins are not available yet. Sign in with pi (pi, then /login): "
    "pitrio reads pi's auth.json and renews its tokens."
)

DESCRIPTION: Final = """\
Show the credentials pitrio uses, print a provider's API key, or remove an entry from
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
    login = commands.add_parser("login", help="not available yet")
    login.add_argument("provider", nargs="?")
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


def auth_main(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Run ``pitrio auth``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    if args.command == "login":
        err.write(f"{LOGIN_UNAVAILABLE}\n")
        return 1
    environ = dict(os.environ if env is None else env)
    store, custom, warnings = _load(environ)
    for warning in warnings:
        err.write(f"Warning: {warning}\n")
    if args.command == "status":
        return _status(store, custom, args.provider, out)
    if args.command == "print-api-key":
        return trio.run(_print_key, store, custom, args.provider, out, err)
    return trio.run(_logout, store, args.provider, out)
