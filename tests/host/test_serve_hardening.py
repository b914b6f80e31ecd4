"""``pitrio serve`` hardening (issue 14): where sessions may run, what a request may name,
extensions per session, and logging that cannot end the host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.host.serve_helpers import Client, open_client, open_test_host


async def _pwd(client: Client, created: dict[str, Any]) -> str:
    """Where the created session runs commands: the output of its user bash ``pwd``."""
    sid = created["data"]["session"]
    answer = await client.call({"type": "bash", "session": sid, "command": "pwd"})
    assert answer["success"] is True, answer
    return str(answer["data"]["output"]).strip()


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    """A root (with a subfolder, a file and a symlink leading out) and a folder outside it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "afile").write_text("x")
    (root / "escape").symlink_to(outside)
    return root, outside


@pytest.mark.parametrize(
    "cwd",
    ["/", "..", "../outside", "sub/../../outside", "escape", "escape/.", "OUTSIDE"],
)
async def test_a_cwd_that_resolves_outside_the_roots_is_refused(tmp_path: Path, cwd: str) -> None:
    """A create_session cwd outside the roots (absolute, "..", or through a symlink) is
    refused for client and host tokens, with an error naming the rule; no session opens."""
    root, outside = _folders(tmp_path)
    cwd = str(outside) if cwd == "OUTSIDE" else cwd
    async with open_test_host(root) as host, open_client(host) as admin:
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            for client in (admin, guest):
                refused = await client.call({"type": "create_session", "cwd": cwd})
                assert refused["success"] is False
                assert "outside the host's roots" in refused["error"]
                assert "--root" in refused["error"]
        assert not host.sessions
        assert host.metrics.errors.get("cwd_refused") == 2


async def test_a_cwd_inside_a_root_runs_there_and_a_file_is_refused(tmp_path: Path) -> None:
    """A relative or absolute cwd inside one of the roots opens the session there (the real
    path); a file inside a root is refused as not a directory."""
    root, _ = _folders(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    async with (
        open_test_host(root, roots=(str(root), str(other))) as host,
        open_client(host) as client,
    ):
        sub = await client.call({"type": "create_session", "cwd": "sub"})
        assert sub["success"] is True and await _pwd(client, sub) == str(root / "sub")
        second = await client.call({"type": "create_session", "cwd": str(other)})
        assert second["success"] is True and await _pwd(client, second) == str(other)
        refused = await client.call({"type": "create_session", "cwd": "afile"})
        assert refused["success"] is False and "not a directory" in refused["error"]


async def test_allow_any_cwd_lets_only_the_host_token_out(tmp_path: Path) -> None:
    """With allow_any_cwd the host token may name a folder outside the roots; a client token
    still may not."""
    root, outside = _folders(tmp_path)
    async with open_test_host(root, allow_any_cwd=True) as host, open_client(host) as admin:
        allowed = await admin.call({"type": "create_session", "cwd": str(outside)})
        assert allowed["success"] is True and await _pwd(admin, allowed) == str(outside)
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            refused = await guest.call({"type": "create_session", "cwd": str(outside)})
            assert refused["success"] is False and "outside the host's roots" in refused["error"]


async def test_unknown_thinking_levels_and_models_are_refused(tmp_path: Path) -> None:
    """A thinking level that is not one of pitrio's and a model not in the registry (even of
    a known provider) are refused with an error naming them; known ones open."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        bad_level = await client.call({"type": "create_session", "thinking_level": "hyper"})
        assert bad_level["success"] is False
        assert "hyper" in bad_level["error"] and "xhigh" in bad_level["error"]
        for model in ("faux/no-such-model", "anthropic/claude-none-9", "nope/nope"):
            refused = await client.call({"type": "create_session", "model": model})
            assert refused["success"] is False and model in refused["error"], refused
        ok = await client.call(
            {"type": "create_session", "model": "faux/faux-1", "thinking_level": "high"}
        )
        assert ok["success"] is True
        assert not any(live.id != ok["data"]["session"] for live in host.sessions.values()), (
            "a refused request left a session open"
        )


def test_root_flags_default_to_the_current_folder_and_resolve_against_it(tmp_path: Path) -> None:
    """``pitrio serve`` without --root allows only its own folder; --root is repeatable,
    relative to it; --allow-any-cwd is off unless given."""
    from pitrio.cli._serve import _parser, host_config

    cwd = str(tmp_path)
    plain = host_config(_parser().parse_args([]), cwd=cwd, token="t", session_dir=cwd)
    assert plain.roots == (cwd,) and plain.allow_any_cwd is False
    args = _parser().parse_args(["--root", "a", "--root", "/srv/b", "--allow-any-cwd"])
    config = host_config(args, cwd=cwd, token="t", session_dir=cwd)
    assert config.roots == (os.path.join(cwd, "a"), "/srv/b") and config.allow_any_cwd is True
