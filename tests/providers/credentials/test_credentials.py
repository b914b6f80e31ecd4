"""auth.json as pi 0.73.1 keeps it: entries, key resolution and order, files, modes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pitrio.cli._setup import Credentials, load_model_setup
from pitrio.providers import CustomModels, StreamOptions, default_catalogue, parse_models_json
from pitrio.providers.credentials import (
    ApiKeyCredential,
    CredentialStore,
    OAuthCredential,
    lock_path,
    read_auth_file,
    write_auth_file,
)
from pitrio.sessions.resources import resolve_agent_dirs

NOW = 1_800_000_000.0
"""The wall clock the stores below read (seconds)."""

HOUR_MS = 3_600_000


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _store(*paths: Path, env: dict[str, str] | None = None) -> CredentialStore:
    return CredentialStore.load([str(p) for p in paths], env=env or {}, clock=lambda: NOW)


def _oauth(access: str, expires_ms: float, **extra: Any) -> dict[str, Any]:
    return {
        "type": "oauth",
        "refresh": "r-" + access,
        "access": access,
        "expires": int(expires_ms),
        **extra,
    }


# --------------------------------------------------------------------------- resolution


async def test_api_key_entry_literal_is_the_key(tmp_path: Path) -> None:
    """An ``api_key`` entry whose key names no variable is used literally."""
    path = _write(tmp_path / "auth.json", {"anthropic": {"type": "api_key", "key": "sk-ant-1"}})
    store = _store(path)
    assert store.has_auth("anthropic")
    assert await store.api_key("anthropic") == "sk-ant-1"


async def test_api_key_entry_naming_a_set_variable_uses_its_value(tmp_path: Path) -> None:
    """A key that names a set environment variable resolves to that variable's value."""
    path = _write(tmp_path / "auth.json", {"openai": {"type": "api_key", "key": "MY_OPENAI"}})
    assert await _store(path, env={"MY_OPENAI": "sk-from-env"}).api_key("openai") == "sk-from-env"
    assert await _store(path, env={"MY_OPENAI": ""}).api_key("openai") == "MY_OPENAI"


async def test_api_key_command_runs_once_and_is_cached(tmp_path: Path) -> None:
    """A ``!command`` key is the command's trimmed output, run once per store (pi caches it)."""
    runs = tmp_path / "runs"
    command = f"!echo run >> {runs}; echo '  sk-cmd  '"
    path = _write(tmp_path / "auth.json", {"anthropic": {"type": "api_key", "key": command}})
    store = _store(path)
    assert await store.api_key("anthropic") == "sk-cmd"
    assert await store.api_key("anthropic") == "sk-cmd"
    assert runs.read_text().splitlines() == ["run"]


async def test_failing_command_gives_no_key_and_no_fallback(tmp_path: Path) -> None:
    """A failing ``!command`` gives no key; the environment is not consulted (pi's order)."""
    path = _write(tmp_path / "auth.json", {"anthropic": {"type": "api_key", "key": "!exit 3"}})
    store = _store(path, env={"ANTHROPIC_API_KEY": "sk-env"})
    assert await store.api_key("anthropic") is None


async def test_order_runtime_then_auth_json_then_env(tmp_path: Path) -> None:
    """``--api-key`` beats auth.json, which beats the environment variable."""
    path = _write(tmp_path / "auth.json", {"anthropic": {"type": "api_key", "key": "sk-file"}})
    env = {"ANTHROPIC_API_KEY": "sk-env", "OPENAI_API_KEY": "sk-openai-env"}
    store = _store(path, env=env)
    assert await store.api_key("anthropic") == "sk-file"
    assert await store.api_key("openai") == "sk-openai-env"
    store.set_runtime_key("anthropic", "sk-flag")
    assert await store.api_key("anthropic") == "sk-flag"
    assert await store.api_key("mistral") is None


async def test_models_json_key_comes_after_auth_json(tmp_path: Path) -> None:
    """The ``apiKey`` of models.json is used only when the store has no key (pi's fallback)."""
    custom = parse_models_json(
        {"providers": {"anthropic": {"apiKey": "sk-models-json", "headers": {"x-a": "1"}}}},
        base=default_catalogue,
    )
    model = custom.catalogue.models("anthropic")[0]
    empty = Credentials(custom, {}, _store(tmp_path / "missing.json"))
    assert empty.has_auth(model)
    assert (await empty.authorize(model, StreamOptions())).api_key == "sk-models-json"
    path = _write(tmp_path / "auth.json", {"anthropic": {"type": "api_key", "key": "sk-file"}})
    stored = Credentials(custom, {}, _store(path))
    assert (await stored.authorize(model, StreamOptions())).api_key == "sk-file"


async def test_oauth_entry_access_token_is_the_key(tmp_path: Path) -> None:
    """An ``oauth`` entry far from expiry gives its ``access`` token."""
    path = _write(tmp_path / "auth.json", {"anthropic": _oauth("at-1", NOW * 1000 + HOUR_MS)})
    store = _store(path, env={"ANTHROPIC_API_KEY": "sk-env"})
    assert await store.api_key("anthropic") == "at-1"


async def test_expired_oauth_without_refresher_gives_no_key(tmp_path: Path) -> None:
    """An expired token nothing can renew gives no key (not the environment's, as in pi);
    one inside the renewal margin but not yet expired is still used."""
    expired = _write(tmp_path / "a" / "auth.json", {"anthropic": _oauth("old", NOW * 1000 - 1)})
    assert await _store(expired, env={"ANTHROPIC_API_KEY": "sk-env"}).api_key("anthropic") is None
    soon = _write(tmp_path / "b" / "auth.json", {"anthropic": _oauth("soon", NOW * 1000 + 60_000)})
    assert await _store(soon).api_key("anthropic") == "soon"


# --------------------------------------------------------------------------- pi's file


async def test_pitrio_entry_wins_and_pi_entry_fills_in(tmp_path: Path) -> None:
    """A provider's entry comes from pitrio's auth.json, else from pi's."""
    own = _write(
        tmp_path / "pitrio" / "auth.json", {"anthropic": {"type": "api_key", "key": "mine"}}
    )
    pi = _write(
        tmp_path / "pi" / "auth.json",
        {
            "anthropic": {"type": "api_key", "key": "pi-anthropic"},
            "openai": {"type": "api_key", "key": "pi-openai"},
        },
    )
    store = _store(own, pi)
    assert await store.api_key("anthropic") == "mine"
    assert await store.api_key("openai") == "pi-openai"
    assert store.providers() == ["anthropic", "openai"]
    status = store.auth_status("openai")
    assert status.configured and status.source == "stored" and status.label == str(pi)


def test_agent_dirs_list_pitrio_auth_then_pi_auth(tmp_path: Path) -> None:
    """auth.json is looked for in pitrio's agent dir, then pi's (only when pitrio's dir is not
    set explicitly, as for every other file)."""
    (tmp_path / ".pi" / "agent").mkdir(parents=True)
    dirs = resolve_agent_dirs({}, home=str(tmp_path))
    assert dirs.auth_paths() == (
        str(tmp_path / ".pitrio" / "agent" / "auth.json"),
        str(tmp_path / ".pi" / "agent" / "auth.json"),
    )
    other = tmp_path / "elsewhere"
    (other).mkdir()
    dirs = resolve_agent_dirs({"PI_CODING_AGENT_DIR": str(other)}, home=str(tmp_path))
    assert dirs.auth_paths()[1] == str(other / "auth.json")
    explicit = resolve_agent_dirs(
        {"PITRIO_CODING_AGENT_DIR": str(tmp_path / "p")}, home=str(tmp_path)
    )
    assert explicit.auth_paths() == (str(tmp_path / "p" / "auth.json"),)


@pytest.mark.parametrize("where", [".pi", ".pitrio"])
def test_cli_model_setup_uses_an_auth_json_api_key(tmp_path: Path, where: str) -> None:
    """An ``api_key`` entry for anthropic in pi's or pitrio's agent dir makes anthropic's
    models available to the CLI (issue 31: it used to be ignored)."""
    agent = tmp_path / where / "agent"
    _write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "sk-ant-file"}})
    env = {"HOME": str(tmp_path)}
    dirs = resolve_agent_dirs(env, home=str(tmp_path))
    setup = load_model_setup(dirs.write_dir, env, auth_paths=dirs.auth_paths())
    providers = {m.provider for m in setup.available()}
    assert "anthropic" in providers
    assert "openai" not in providers


# --------------------------------------------------------------------------- writing


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_set_creates_file_0600_in_dir_0700(tmp_path: Path) -> None:
    """A stored credential lands in a 0600 file inside a 0700 directory pitrio creates."""
    path = tmp_path / "agent" / "auth.json"
    store = _store(path)
    await store.set("anthropic", ApiKeyCredential(key="sk-1"))
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert json.loads(path.read_text()) == {"anthropic": {"type": "api_key", "key": "sk-1"}}
    assert not (tmp_path / "agent" / "auth.json.lock").exists()
    assert await store.api_key("anthropic") == "sk-1"


def test_write_tightens_an_existing_file_to_0600(tmp_path: Path) -> None:
    """Rewriting a world-readable auth.json leaves it 0600, in pi's text layout."""
    path = _write(tmp_path / "auth.json", {})
    os.chmod(path, 0o644)
    write_auth_file(str(path), {"a": {"type": "api_key", "key": "k"}})
    assert _mode(path) == 0o600
    assert path.read_text() == json.dumps({"a": {"type": "api_key", "key": "k"}}, indent=2)


async def test_unknown_fields_and_entries_survive_a_write(tmp_path: Path) -> None:
    """Provider extras, unknown fields and entries of unknown type are written back unchanged."""
    original = {
        "openai-codex": _oauth("at", NOW * 1000 + HOUR_MS, accountId="acct-1", nested={"x": [1]}),
        "weird": {"type": "future-kind", "blob": True},
        "anthropic": {"type": "api_key", "key": "sk-old", "note": "kept"},
    }
    path = _write(tmp_path / "auth.json", original)
    store = _store(path)
    found = store.get("openai-codex")
    assert found is not None and isinstance(found[0], OAuthCredential)
    assert found[0].extra == {"accountId": "acct-1", "nested": {"x": [1]}}
    await store.set("openai", ApiKeyCredential(key="sk-new"))
    assert await store.remove("anthropic")
    assert read_auth_file(str(path)) == {
        "openai-codex": original["openai-codex"],
        "weird": original["weird"],
        "openai": {"type": "api_key", "key": "sk-new"},
    }
    assert "weird" not in store.providers()


async def test_remove_leaves_pi_file_alone(tmp_path: Path) -> None:
    """Removing a provider touches pitrio's file only; pi's entry then answers."""
    own = _write(tmp_path / "pitrio" / "auth.json", {"openai": {"type": "api_key", "key": "mine"}})
    pi = _write(tmp_path / "pi" / "auth.json", {"openai": {"type": "api_key", "key": "pis"}})
    before = pi.read_bytes()
    store = _store(own, pi)
    assert await store.remove("openai")
    assert not await store.remove("openai")
    assert pi.read_bytes() == before
    assert await store.api_key("openai") == "pis"


def test_unreadable_file_counts_as_empty_and_is_reported(tmp_path: Path) -> None:
    """An auth.json that is not JSON gives no credentials and records the problem."""
    path = tmp_path / "auth.json"
    path.write_text("{not json")
    store = _store(path, env={"OPENAI_API_KEY": "sk-env"})
    assert store.providers() == []
    assert store.has_auth("openai")
    assert len(store.errors) == 1 and str(path) in str(store.errors[0])


def test_custom_models_has_no_key_without_store() -> None:
    """A Credentials without a store still reads the environment (the default store)."""
    custom = CustomModels(catalogue=default_catalogue)
    model = default_catalogue.models("openai")[0]
    assert Credentials(custom, {"OPENAI_API_KEY": "x"}).has_auth(model)
    assert not Credentials(custom, {}).has_auth(model)


def test_cli_warns_about_an_unreadable_auth_json(tmp_path: Path) -> None:
    """A broken auth.json is reported as a setup warning naming the file; its entries are
    simply absent."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text("{oops")
    setup = load_model_setup(str(agent), {"HOME": str(tmp_path)})
    assert any("auth.json" in w and str(agent) in w for w in setup.warnings)


async def test_symlinked_auth_json_keeps_its_link(tmp_path: Path) -> None:
    """A write through a symlinked auth.json replaces the target and keeps the link; the lock
    sits beside the target, where pi's refresh lock is."""
    target = _write(tmp_path / "dotfiles" / "auth.json", {})
    link = tmp_path / "agent" / "auth.json"
    link.parent.mkdir()
    link.symlink_to(target)
    store = _store(link)
    await store.set("openai", ApiKeyCredential(key="sk-1"))
    assert link.is_symlink()
    assert json.loads(target.read_text()) == {"openai": {"type": "api_key", "key": "sk-1"}}
    assert lock_path(str(link)) == str(target) + ".lock"
