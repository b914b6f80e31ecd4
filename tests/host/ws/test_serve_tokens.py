"""Client tokens that outlive the host (hashed on disk, expiry, ``revoke_token``), the
sessions ``list_sessions`` finds on disk, and what a client token's tools may touch
(docs/host-protocol.md, "Tokens" and "Tool isolation")."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed

from pitrio.host import Confinement
from pitrio.host.ws._policy import PathRefused, is_protected
from pitrio.host.ws._tokens import Tokens, TokensFileError, token_digest
from tests.host.serve_helpers import (
    Client,
    faux_env,
    open_client,
    open_test_host,
    upgrade_status,
)

GUARD_S = 60
HOST_TOKEN = "host-token-for-tests-0123456789"


@attrs.frozen
class _Address:
    """What ``open_client`` and ``upgrade_status`` need of a host."""

    port: int
    token: str


def _is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "agent_end"


@asynccontextmanager
async def _serve(
    tmp_path: Path, nursery: trio.Nursery, *extra: str
) -> AsyncIterator[tuple[trio.Process, _Address]]:
    """A real ``pitrio serve --port 0`` on ``tmp_path/sessions`` with the host token
    :data:`HOST_TOKEN`; killed (SIGKILL) on exit if it still runs."""
    env = {**os.environ, **faux_env(str(tmp_path)), "PYTHONPATH": os.getcwd()}
    env.pop("PITRIO_HOST_TOKEN", None)
    command = [
        *(sys.executable, "-m", "pitrio", "serve", "--port", "0", "--provider", "faux"),
        *("--session-dir", str(tmp_path / "sessions"), "--token", HOST_TOKEN, *extra),
    ]
    run = functools.partial(
        trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False, cwd=tmp_path
    )
    process: trio.Process = await nursery.start(run)
    assert process.stderr is not None
    line = b""
    while b"listening on" not in line:
        chunk = await process.stderr.receive_some(4096)
        assert chunk, "pitrio serve ended before listening"
        line += chunk
    text = line.decode().split("listening on ", 1)[1]
    port = int(text.split()[0].rstrip("/").rsplit(":", 1)[1])
    try:
        yield process, _Address(port, HOST_TOKEN)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


async def test_tokens_grants_and_sessions_survive_a_killed_host(tmp_path: Path) -> None:
    """A client token made before a SIGKILL still opens its session on the new host, which
    ``list_sessions`` lists from disk (name, cwd, last activity); a revoked token stays
    revoked; the tokens file holds digests only, mode 0600."""
    tokens_file = tmp_path / "sessions" / ".host" / "tokens.json"
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            async with _serve(tmp_path, nursery) as (process, address):
                async with open_client(address) as admin:  # type: ignore[arg-type]
                    made = (await admin.call({"type": "create_token"}))["data"]
                    other = (await admin.call({"type": "create_token"}))["data"]
                    doomed = (await admin.call({"type": "create_token"}))["data"]
                    revoked = await admin.call(
                        {"type": "revoke_token", "tokenId": doomed["tokenId"]}
                    )
                    assert revoked["success"] is True, revoked
                client_address = _Address(address.port, made["token"])
                async with open_client(client_address) as client:  # type: ignore[arg-type]
                    created = (await client.call({"type": "create_session"}))["data"]
                    sid = created["session"]
                    await client.call({"type": "set_session_name", "session": sid, "name": "n1"})
                    await client.call({"type": "prompt", "session": sid, "message": "hi"})
                    await client.until(_is_end)
                process.kill()
                await process.wait()
            data = tokens_file.read_bytes()
            assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
            for secret in (made["token"], other["token"], doomed["token"]):
                assert secret.encode() not in data
            stored = json.loads(data)["tokens"]
            assert {t["sha256"] for t in stored} == {
                token_digest(made["token"]),
                token_digest(other["token"]),
            }
            async with _serve(tmp_path, nursery) as (_, address):
                assert (
                    await upgrade_status(_Address(address.port, doomed["token"]), _ws(doomed))
                    == 401
                )  # type: ignore[arg-type]
                client_address = _Address(address.port, made["token"])
                async with open_client(client_address) as client:  # type: ignore[arg-type]
                    [entry] = (await client.call({"type": "list_sessions"}))["data"]["sessions"]
                    assert entry["session"] == sid and entry["live"] is False
                    assert entry["name"] == "n1"
                    assert entry["cwd"] == str(await trio.Path(tmp_path).resolve())
                    assert entry["sessionFile"] == created["sessionFile"]
                    assert entry["lastActivity"].endswith("Z")
                    opened = await client.call({"type": "open_session", "session": sid})
                    assert opened["success"] is True, opened
                    messages = await client.call({"type": "get_messages", "session": sid})
                    roles = [m["role"] for m in messages["data"]["messages"]]
                    assert roles == ["user", "assistant"]
                    [entry] = (await client.call({"type": "list_sessions"}))["data"]["sessions"]
                    assert entry["live"] is True
                other_address = _Address(address.port, other["token"])
                async with open_client(other_address) as stranger:  # type: ignore[arg-type]
                    listed = await stranger.call({"type": "list_sessions"})
                    assert listed["data"]["sessions"] == []
                    refused = await stranger.call({"type": "open_session", "session": sid})
                    assert refused["error"] == f"Unknown session: {sid}"


def _ws(made: dict[str, Any]) -> str:
    return f"/ws?token={made['token']}"


async def test_revoke_token_cuts_off_its_connections_and_refuses_it(tmp_path: Path) -> None:
    """``revoke_token`` (by the secret) closes the token's connections with 4003 and later
    upgrades get 401; only the host token may revoke, and an unknown token is an error."""
    async with open_test_host(tmp_path) as host, open_client(host) as admin:
        made = (await admin.call({"type": "create_token"}))["data"]
        async with open_client(host, token=made["token"]) as client:
            assert (await client.call({"type": "list_sessions"}))["success"] is True
            denied = await client.call({"type": "revoke_token", "token": made["token"]})
            assert denied["error"] == "Only the host token may revoke tokens"
            answer = await admin.call({"type": "revoke_token", "token": made["token"]})
            assert answer["success"] is True, answer
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await client.frame()
            assert closed.value.reason is not None and closed.value.reason.code == 4003
        assert await upgrade_status(host, _ws(made)) == 401
        again = await admin.call({"type": "revoke_token", "token": made["token"]})
        assert again["error"] == "revoke_token: no such client token"


async def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    """A token past its ``expiresAt`` is refused at the upgrade (401); a bad expiry is an
    error response."""
    async with open_test_host(tmp_path) as host, open_client(host) as admin:
        expired = (await admin.call({"type": "create_token", "expiresAt": 1}))["data"]
        assert expired["expiresAt"] == 1
        assert await upgrade_status(host, _ws(expired)) == 401
        later = (await admin.call({"type": "create_token", "expiresIn": 3600}))["data"]
        assert await upgrade_status(host, _ws(later)) != 401
        bad = await admin.call({"type": "create_token", "expiresIn": -5})
        assert bad["error"] == 'Invalid create_token command: "expiresIn" must be a number > 0'


async def test_a_token_that_expires_while_connected_is_cut_off(tmp_path: Path) -> None:
    """Expiry is checked on every frame: the first frame after it is answered with an error
    and the connection closed with 4003."""
    now = [1000.0]
    async with open_test_host(tmp_path) as host, open_client(host) as admin:
        host.tokens._clock = lambda: now[0]  # the host's wall clock, moved by the test
        made = (await admin.call({"type": "create_token", "expiresAt": 2000}))["data"]
        async with open_client(host, token=made["token"]) as client:
            assert (await client.call({"type": "list_sessions"}))["success"] is True
            now[0] = 2000.0
            refused = await client.call({"type": "list_sessions"})
            assert refused["error"] == "Token revoked or expired"
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await client.frame()
            assert closed.value.reason is not None and closed.value.reason.code == 4003


def test_tokens_file_round_trip_and_a_broken_file_stops_the_host(tmp_path: Path) -> None:
    """What one ``Tokens`` saves, another loads (grants, expiry, tools); a file that is not
    a tokens file raises rather than being taken as empty."""
    path = str(tmp_path / "state" / "tokens.json")
    first = Tokens("h", path, clock=lambda: 10.0)
    secret, token_id = first.create(expires=20.0, tools=("read", "write"))
    first.grant(token_id, "s1")
    trio.run(first.save)
    second = Tokens("h", path, clock=lambda: 10.0)
    second.load()
    assert second.authenticate(secret) == token_id
    assert second.may_open(token_id, "s1") and not second.may_open(token_id, "s2")
    assert second.tools_of(token_id) == ("read", "write")
    late = Tokens("h", path, clock=lambda: 20.0)
    late.load()
    assert late.authenticate(secret) is None
    (tmp_path / "state" / "tokens.json").write_text("[1, 2]")
    with pytest.raises(TokensFileError):
        Tokens("h", path).load()


# --------------------------------------------------------------------------- tool isolation


def _call(name: str, arguments: dict[str, Any], id_: str) -> dict[str, Any]:
    return {"type": "toolCall", "name": name, "arguments": arguments, "id": id_}


async def _tool_results(client: Client, sid: str, message: str = "go") -> dict[str, dict[str, Any]]:
    """Prompt ``sid`` and return its ``tool_execution_end`` frames by tool call id."""
    await client.call({"type": "prompt", "session": sid, "message": message})
    frames = await client.until(_is_end)
    return {f["toolCallId"]: f for f in frames if f.get("type") == "tool_execution_end"}


def _text(frame: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in frame["result"]["content"])


async def test_a_token_made_while_another_host_writes_the_file_is_kept(tmp_path: Path) -> None:
    """A refresh (the file changed: another host wrote it) waits on the file's lock while
    this host makes a token: the token survives the refresh and reaches the file with its
    save, beside the other host's (before, the refresh, applied in its worker thread, replaced
    the maps with the file's tokens: the new token was gone)."""
    path = str(tmp_path / "tokens.json")
    other, here = Tokens("host", path), Tokens("host", path)
    _, theirs = other.create()
    await other.save()
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another host's save is in progress
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(here.refresh)
            await trio.testing.wait_all_tasks_blocked()  # the refresh waits on the lock
            secret, mine = here.create()
            fcntl.flock(lock, fcntl.LOCK_UN)
    finally:
        os.close(lock)
    assert here.authenticate(secret) == mine and here.active(theirs)
    await here.save()
    on_disk = Tokens("host", path)
    on_disk.load()
    assert on_disk.authenticate(secret) == mine and on_disk.active(theirs)


async def test_a_token_revoked_while_another_host_writes_the_file_stays_revoked(
    tmp_path: Path,
) -> None:
    """A refresh waits on the file's lock while this host revokes a token the file still
    has: the refresh does not bring it back, and the save removes it from the file (before,
    the refresh took the file's copy back in, and the save wrote it again)."""
    path = str(tmp_path / "tokens.json")
    here = Tokens("host", path)
    secret, doomed = here.create()
    await here.save()
    other = Tokens("host", path)
    other.load()
    _, theirs = other.create()
    await other.save()  # the file changed: the refresh reads it
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(here.refresh)
            await trio.testing.wait_all_tasks_blocked()
            assert here.revoke(doomed)
            fcntl.flock(lock, fcntl.LOCK_UN)
    finally:
        os.close(lock)
    assert here.authenticate(secret) is None and here.active(theirs)
    await here.save()
    on_disk = Tokens("host", path)
    on_disk.load()
    assert on_disk.authenticate(secret) is None and on_disk.active(theirs)


async def test_a_client_token_gets_read_only_tools_and_no_bash(tmp_path: Path) -> None:
    """By default a client token's session has read, grep, find and ls: its write and bash
    calls find no tool, a user bash command is refused, and read stays out of the host's
    folders and outside the roots; the host token's session has the coding tools."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    root = tmp_path / "root"
    root.mkdir()
    (root / "mine.txt").write_text("mine")
    script = [
        {
            "content": [
                _call("write", {"path": "w.txt", "content": "x"}, "w"),
                _call("bash", {"command": "echo hi > b.txt"}, "b"),
                _call("read", {"path": "mine.txt"}, "r1"),
                _call("read", {"path": str(outside / "secret.txt")}, "r2"),
                _call("read", {"path": "../outside/secret.txt"}, "r3"),
                _call("read", {"path": "sessions/.host/tokens.json"}, "r4"),
                _call("ls", {"path": "sessions"}, "l1"),
            ]
        },
        "done",
    ]
    async with open_test_host(root, script=script) as host, open_client(host) as admin:
        made = (await admin.call({"type": "create_token"}))["data"]
        async with open_client(host, token=made["token"]) as client:
            sid = (await client.call({"type": "create_session"}))["data"]["session"]
            state = await client.call({"type": "get_state", "session": sid})
            assert state["success"] is True
            results = await _tool_results(client, sid)
            assert results["w"]["isError"] and "not found" in _text(results["w"])
            assert results["b"]["isError"] and "not found" in _text(results["b"])
            assert not results["r1"]["isError"] and "mine" in _text(results["r1"])
            for refused in ("r2", "r3"):
                assert results[refused]["isError"], results[refused]
                assert "outside the folders this session may use" in _text(results[refused])
            for hidden in ("r4", "l1"):
                assert results[hidden]["isError"], results[hidden]
                assert "a folder of the host" in _text(results[hidden])
            assert not (root / "w.txt").exists() and not (root / "b.txt").exists()
            bash = await client.call({"type": "bash", "session": sid, "command": "echo hi"})
            assert bash["error"] == "bash is not granted to this token"
        # The host token's session runs with the factory's coding tools.
        sid = (await admin.call({"type": "create_session"}))["data"]["session"]
        results = await _tool_results(admin, sid)
        assert not results["w"]["isError"] and (root / "w.txt").read_text() == "x"


async def test_write_and_edit_granted_to_a_client_spare_protected_files(tmp_path: Path) -> None:
    """A token granted write and edit writes ordinary files in its root, but not AGENTS.md,
    SYSTEM.md, settings, skills, prompts or extensions (also through a symlink), nor outside
    the root: those calls fail and the files are as they were."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "AGENTS.md").write_text("original")
    (root / "link.md").symlink_to(root / "AGENTS.md")
    writes = {
        "agents": "AGENTS.md",
        "system": ".pitrio/SYSTEM.md",
        "extension": ".pitrio/extensions/evil.py",
        "settings": ".pitrio/settings.json",
        "skill": ".pitrio/skills/x/SKILL.md",
        "prompt": ".pitrio/prompts/p.md",
        "pi": ".pi/extensions/evil.ts",
        "link": "link.md",
        "outside": "../outside.txt",
        "agent_dir": str(root / "agent" / "extensions" / "evil.py"),
    }
    calls = [_call("write", {"path": p, "content": "pwned"}, k) for k, p in writes.items()]
    calls += [
        _call("write", {"path": "notes.txt", "content": "ok"}, "ok"),
        _call(
            "edit", {"path": "AGENTS.md", "edits": [{"oldText": "original", "newText": "x"}]}, "e1"
        ),
        _call(
            "edit", {"path": "link.md", "edits": [{"oldText": "original", "newText": "x"}]}, "e2"
        ),
    ]
    async with (
        open_test_host(root, script=[{"content": calls}, "done"]) as host,
        open_client(host) as admin,
    ):
        made = await admin.call({"type": "create_token", "tools": ["read", "write", "edit"]})
        async with open_client(host, token=made["data"]["token"]) as client:
            sid = (await client.call({"type": "create_session"}))["data"]["session"]
            results = await _tool_results(client, sid)
    assert not results["ok"]["isError"] and (root / "notes.txt").read_text() == "ok"
    for key in [*writes, "e1", "e2"]:
        assert results[key]["isError"], (key, results[key])
    for key in ("agents", "system", "extension", "settings", "skill", "prompt", "pi", "link"):
        assert "is protected" in _text(results[key]), key
    assert (root / "AGENTS.md").read_text() == "original"
    assert not (root / ".pitrio").exists() and not (root / ".pi").exists()
    assert not (tmp_path / "outside.txt").exists()
    assert not (root / "agent" / "extensions").exists()


async def test_granted_bash_runs_through_the_sandbox_command(tmp_path: Path) -> None:
    """With bash granted and a ``sandboxCommand`` setting, the bash tool and user bash
    commands of a client session run under it (it sees the shell's argv); the host token's
    bash does not."""
    root = tmp_path / "root"
    root.mkdir()
    log = tmp_path / "sandbox.log"
    sandbox = tmp_path / "sandbox.sh"
    sandbox.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec "$@"\n')
    sandbox.chmod(0o755)
    script = [{"content": [_call("bash", {"command": "echo tool-ran"}, "b")]}, "done"]
    async with (
        open_test_host(root, script=script, settings={"sandboxCommand": [str(sandbox)]}) as host,
        open_client(host) as admin,
    ):
        made = await admin.call({"type": "create_token", "tools": ["read", "bash"]})
        async with open_client(host, token=made["data"]["token"]) as client:
            sid = (await client.call({"type": "create_session"}))["data"]["session"]
            results = await _tool_results(client, sid)
            assert not results["b"]["isError"] and "tool-ran" in _text(results["b"])
            user = await client.call({"type": "bash", "session": sid, "command": "echo user-ran"})
            assert user["success"] is True and "user-ran" in user["data"]["output"]
        lines = log.read_text().splitlines()
        assert len(lines) == 2
        assert lines[0].endswith("echo tool-ran") and lines[1].endswith("echo user-ran")
        host_sid = (await admin.call({"type": "create_session"}))["data"]["session"]
        ran = await admin.call({"type": "bash", "session": host_sid, "command": "echo host"})
        assert ran["success"] is True
        assert len(log.read_text().splitlines()) == 2


async def test_a_client_cannot_drive_a_session_opened_with_more_tools(tmp_path: Path) -> None:
    """A host-token session granted to a client token may be watched, but the client may not
    prompt it or run bash in it (it runs with the host's tools); switch_session to another
    token's file is refused; export_html writes only in the exports folder."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "AGENTS.md").write_text("original")
    async with open_test_host(root) as host, open_client(host) as admin:
        made = (await admin.call({"type": "create_token"}))["data"]
        owned = (await admin.call({"type": "create_session"}))["data"]
        await admin.call({"type": "prompt", "session": owned["session"], "message": "hi"})
        await admin.until(_is_end)
        granted = await admin.call(
            {"type": "grant", "session": owned["session"], "tokenId": made["tokenId"]}
        )
        assert granted["success"] is True, granted
        async with open_client(host, token=made["token"]) as client:
            sid = owned["session"]
            assert (await client.call({"type": "open_session", "session": sid}))["success"]
            for frame in (
                {"type": "prompt", "session": sid, "message": "rm -rf"},
                {"type": "steer", "session": sid, "message": "x"},
                {"type": "bash", "session": sid, "command": "id"},
            ):
                refused = await client.call(frame)
                assert refused["success"] is False
                assert "opened with tools this token was not granted" in refused["error"]
            mine = (await client.call({"type": "create_session"}))["data"]["session"]
            switched = await client.call(
                {"type": "switch_session", "session": mine, "sessionPath": owned["sessionFile"]}
            )
            assert "not available to client tokens" in switched["error"]
            exported = await client.call(
                {"type": "export_html", "session": sid, "outputPath": "../../../AGENTS.md"}
            )
            assert exported["success"] is True, exported
            exports = Path(host.config.exports_folder)
            assert exported["data"]["path"] == str(await trio.Path(exports / "AGENTS.md").resolve())
            assert (root / "AGENTS.md").read_text() == "original"
            nothing = await client.call(
                {"type": "export_html", "session": sid, "outputPath": "../"}
            )
            assert nothing["success"] is False


def test_confinement_checks_realpaths_against_roots_and_protected_names(tmp_path: Path) -> None:
    """The path rule itself: inside a root and outside hidden folders to read; not a
    protected name or folder (any case, relative to the root) to write."""
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    confinement = Confinement(roots=(str(root),), hidden=(str(root / "sub"),))
    assert confinement.check(str(root / "a.txt"), writing=True) == str(root / "a.txt")
    with pytest.raises(PathRefused):
        confinement.check(str(root / "sub" / "x"), writing=False)
    with pytest.raises(PathRefused):
        confinement.check(str(tmp_path / "x"), writing=False)
    for name in ("agents.MD", "x/.Pitrio/y", ".git/hooks/pre-commit", "CLAUDE.md"):
        assert is_protected(name), name
        with pytest.raises(PathRefused):
            confinement.check(str(root / name), writing=True)
        confinement.check(str(root / name), writing=False)
    assert not is_protected("docs/agents.txt")


def test_client_tools_and_state_dir_flags_reach_the_host_config(tmp_path: Path) -> None:
    """``pitrio serve --client-tools`` sets the tools of client tokens' sessions (an unknown
    name is a usage error), ``--state-dir`` where tokens and exports are kept."""
    from pitrio.cli._serve import _parser, host_config
    from pitrio.cli._setup import CliError

    args = _parser().parse_args(["--client-tools", "read, write,read", "--state-dir", "st"])
    config = host_config(args, cwd=str(tmp_path), token="t", session_dir=str(tmp_path / "s"))
    assert config.client_tools == ("read", "write")
    assert config.state_folder == str(tmp_path / "st")
    assert config.exports_folder == str(tmp_path / "st" / "exports")
    default = host_config(
        _parser().parse_args([]), cwd=str(tmp_path), token="t", session_dir=str(tmp_path / "s")
    )
    assert default.client_tools == ("read", "grep", "find", "ls")
    assert default.state_folder == str(tmp_path / "s" / ".host")
    with pytest.raises(CliError, match="unknown tool 'rm'"):
        host_config(
            _parser().parse_args(["--client-tools", "read,rm"]),
            cwd=str(tmp_path),
            token="t",
            session_dir=str(tmp_path / "s"),
        )


async def test_a_sandbox_command_the_host_cannot_read_keeps_client_sessions_closed(
    tmp_path: Path,
) -> None:
    """A ``sandboxCommand`` that is neither a string nor a list of strings fails closed: a
    client token's session is not opened (its bash would run unconfined); the host token's
    sessions, which do not use it, still open."""
    async with (
        open_test_host(tmp_path, settings={"sandboxCommand": {"bad": 1}}) as host,
        open_client(host) as admin,
    ):
        made = await admin.call({"type": "create_token", "tools": ["read", "bash"]})
        async with open_client(host, token=made["data"]["token"]) as client:
            refused = await client.call({"type": "create_session"})
            assert refused["success"] is False
            assert "Invalid setting sandboxCommand" in refused["error"]
        assert (await admin.call({"type": "create_session"}))["success"] is True
