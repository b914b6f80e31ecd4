"""auth.json shared with pi 0.73.1: each reads what the other wrote, each waits on the other's lock.

pi runs for real: ``tests/pi/auth-storage.mjs`` drives pi's ``AuthStorage`` and
``FileAuthStorageBackend`` (proper-lockfile) with node, one JSON command per line. Needs node
and ``tests/pi/node_modules`` (``cd tests/pi && npm ci``).

Waiting for the other side's lock is observed over a short window of real time while the
holder keeps the lock; what proves the wait is the data: the waiter comes back with the token
the holder wrote before it let go, and never calls its own refresh.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from pitrio.providers.credentials import (
    ApiKeyCredential,
    CredentialStore,
    OAuthCredential,
    TokenRefreshers,
    acquire_auth_lock,
    keep_lock_fresh,
    lock_path,
    read_auth_file,
    release_auth_lock,
    write_auth_file,
)

PI_DIR = Path(__file__).resolve().parent.parent.parent / "pi"
SCRIPT = "auth-storage.mjs"
WAIT_WINDOW = 1.0
"""Real seconds a waiter is watched not to get the lock while the other side holds it."""
STEP_TIMEOUT = 30.0
"""Seconds any one exchange with node may take (it takes well under one; this stops a hang)."""

PROVIDER = "loopback-oauth"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: these tests run pi 0.73.1's AuthStorage with node")
    if not (PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir():
        pytest.fail(f"pi's packages are not installed: run (cd {PI_DIR} && npm ci)")
    return node


class Pi:
    """One node process running pi's AuthStorage; ``ask`` sends a command, ``answer`` reads."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._buffer = bytearray()

    async def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(command).encode() + b"\n")

    async def answer(self) -> Any:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            data = await self.process.stdout.receive_some(65536)
            if not data:
                raise AssertionError("pi's script ended without answering")
            self._buffer += data
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        return json.loads(line)

    async def ask(self, **command: Any) -> Any:
        with trio.fail_after(STEP_TIMEOUT):
            await self.send(**command)
            return await self.answer()


@asynccontextmanager
async def run_pi() -> AsyncIterator[Pi]:
    process = await trio.lowlevel.open_process(
        [_node(), SCRIPT], cwd=PI_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        yield Pi(process)
    finally:
        with trio.move_on_after(STEP_TIMEOUT, shield=True):
            assert process.stdin is not None
            await process.stdin.aclose()
            await process.wait()
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


def _oauth_entry(access: str, expires_in: float, **extra: Any) -> dict[str, Any]:
    return {
        "type": "oauth",
        "refresh": "rt-" + access,
        "access": access,
        "expires": int((time.time() + expires_in) * 1000),
        **extra,
    }


class CountingRefresh:
    """A refresh function that must not be needed: it counts its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, stored: OAuthCredential) -> OAuthCredential:
        self.calls.append(stored.refresh)
        return OAuthCredential(access="pitrio-refreshed", refresh="x", expires=2**53)


async def test_pi_reads_what_pitrio_wrote(tmp_path: Path) -> None:
    """pi's AuthStorage reads pitrio's api_key and oauth entries, extras included."""
    path = tmp_path / "agent" / "auth.json"
    store = CredentialStore([str(path)], env={})
    expires = int((time.time() + 3600) * 1000)
    await store.set("anthropic", ApiKeyCredential(key="sk-from-pitrio"))
    await store.set(
        "openai-codex",
        OAuthCredential(
            access="at-p", refresh="rt-p", expires=expires, extra={"accountId": "acct"}
        ),
    )
    async with run_pi() as pi:
        assert await pi.ask(op="open", path=str(path)) == {"errors": []}
        assert await pi.ask(op="list") == {"providers": ["anthropic", "openai-codex"]}
        assert (await pi.ask(op="apiKey", provider="anthropic"))["key"] == "sk-from-pitrio"
        assert (await pi.ask(op="apiKey", provider="openai-codex"))["key"] == "at-p"
        assert (await pi.ask(op="get", provider="openai-codex"))["credential"] == {
            "type": "oauth",
            "refresh": "rt-p",
            "access": "at-p",
            "expires": expires,
            "accountId": "acct",
        }


async def test_pitrio_reads_what_pi_wrote(tmp_path: Path) -> None:
    """pitrio reads the entries pi's AuthStorage wrote (mode 0600), and a pitrio write keeps
    them for pi."""
    path = tmp_path / "agent" / "auth.json"
    expires = int((time.time() + 3600) * 1000)
    async with run_pi() as pi:
        await pi.ask(op="open", path=str(path))
        await pi.ask(op="set", provider="anthropic", credential={"type": "api_key", "key": "sk-pi"})
        oauth = {
            "type": "oauth",
            "refresh": "rt-pi",
            "access": "at-pi",
            "expires": expires,
            "enterpriseUrl": "example.com",
        }
        assert await pi.ask(op="set", provider="github-copilot", credential=oauth) == {"errors": []}
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        store = CredentialStore.load([str(path)], env={})
        assert await store.api_key("anthropic") == "sk-pi"
        assert await store.api_key("github-copilot") == "at-pi"
        found = store.get("github-copilot")
        assert found is not None and found[0].extra == {"enterpriseUrl": "example.com"}
        await store.set("openai", ApiKeyCredential(key="sk-pitrio"))

    async with run_pi() as pi:
        await pi.ask(op="open", path=str(path))
        assert (await pi.ask(op="get", provider="github-copilot"))["credential"] == oauth
        assert (await pi.ask(op="apiKey", provider="openai"))["key"] == "sk-pitrio"


async def test_pitrio_waits_while_pi_holds_the_lock(tmp_path: Path) -> None:
    """With pi holding the auth.json lock, pitrio's refresh waits; once pi writes a renewed
    token and lets go, pitrio uses that token and does not refresh itself."""
    path = tmp_path / "agent" / "auth.json"
    path.parent.mkdir()
    write_auth_file(str(path), {PROVIDER: _oauth_entry("expired", -60)})
    refresh = CountingRefresh()
    store = CredentialStore.load(
        [str(path)], env={}, refreshers=TokenRefreshers({PROVIDER: refresh})
    )
    renewed = {PROVIDER: _oauth_entry("renewed-by-pi", 3600)}
    keys: list[str | None] = []
    async with run_pi() as pi:
        locked = await pi.ask(op="holdLock", path=str(path), next=renewed)
        assert locked["locked"] and await trio.Path(lock_path(str(path))).is_dir()
        with trio.fail_after(STEP_TIMEOUT):
            async with trio.open_nursery() as nursery:

                async def request() -> None:
                    keys.append(await store.api_key(PROVIDER))

                nursery.start_soon(request)
                await trio.sleep(WAIT_WINDOW)
                assert keys == []
                await pi.send(op="release")
                assert await pi.answer() == {"released": True}
    assert keys == ["renewed-by-pi"]
    assert refresh.calls == []
    assert read_auth_file(str(path)) == renewed
    assert not await trio.Path(lock_path(str(path))).exists()


async def test_pi_waits_while_pitrio_holds_the_lock(tmp_path: Path) -> None:
    """With pitrio holding the auth.json lock, pi's locked refresh waits; once pitrio writes a
    renewed token and lets go, pi uses that token and does not refresh itself."""
    path = tmp_path / "agent" / "auth.json"
    path.parent.mkdir()
    write_auth_file(str(path), {PROVIDER: _oauth_entry("expired", -60)})
    async with run_pi() as pi:
        await pi.ask(op="open", path=str(path))
        await pi.ask(op="fakeOAuth", provider=PROVIDER)
        lock = await acquire_auth_lock(str(path))
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(keep_lock_fresh, lock)
                await pi.send(op="apiKey", provider=PROVIDER)
                with trio.move_on_after(WAIT_WINDOW) as window:
                    early = await pi.answer()
                assert window.cancelled_caught, f"pi answered while pitrio held the lock: {early}"
                lock.check()
                write_auth_file(str(path), {PROVIDER: _oauth_entry("renewed-by-pitrio", 3600)})
                nursery.cancel_scope.cancel()
        finally:
            await release_auth_lock(lock)
        with trio.fail_after(STEP_TIMEOUT):
            answer = await pi.answer()
        assert answer == {"key": "renewed-by-pitrio", "errors": []}
        assert await pi.ask(op="refreshes") == {"refreshes": []}
