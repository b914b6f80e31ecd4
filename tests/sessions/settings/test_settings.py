"""Settings: global and project files merged as pi's SettingsManager, defaults, persistence of
changed keys, corrupt files, migrations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from pitrio.sessions import AGENT_DIR_ENV, file_limiter
from pitrio.sessions.settings._settings import (
    CompactionSettings,
    ProviderRetrySettings,
    RetrySettings,
    SettingsFileError,
    SettingsManager,
    SettingsValueError,
    deep_merge_settings,
)


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "agent", tmp_path / "project"


def global_file(dirs: tuple[Path, Path]) -> Path:
    return dirs[0] / "settings.json"


def project_file(dirs: tuple[Path, Path]) -> Path:
    return dirs[1] / ".pitrio" / "settings.json"


def test_defaults_are_pis(dirs: tuple[Path, Path]) -> None:
    """Without files every typed getter returns pi's default."""
    settings = SettingsManager.create(dirs[1], dirs[0])
    assert settings.compaction_settings() == CompactionSettings(
        enabled=True, reserve_tokens=16384, keep_recent_tokens=20000
    )
    assert settings.retry_settings() == RetrySettings(
        enabled=True, max_retries=3, base_delay_ms=2000
    )
    assert settings.provider_retry_settings() == ProviderRetrySettings(
        timeout_ms=None, max_retries=None, max_retry_delay_ms=60000
    )
    assert settings.steering_mode == "one-at-a-time"
    assert settings.follow_up_mode == "one-at-a-time"
    assert settings.default_model is None
    assert settings.default_provider is None
    assert settings.default_thinking_level is None
    assert settings.drain_errors() == []


def test_project_settings_override_global_merging_objects_one_level(
    dirs: tuple[Path, Path],
) -> None:
    """Project keys win; nested objects merge key by key; arrays and scalars are replaced."""
    write(
        global_file(dirs),
        {
            "defaultModel": "global-model",
            "defaultProvider": "anthropic",
            "compaction": {"enabled": False, "reserveTokens": 1000},
            "retry": {"maxRetries": 5, "provider": {"maxRetryDelayMs": 10}},
            "enabledModels": ["a", "b"],
        },
    )
    write(
        project_file(dirs),
        {
            "defaultModel": "project-model",
            "compaction": {"reserveTokens": 2000, "keepRecentTokens": 300},
            "retry": {"provider": {"timeoutMs": 5}},
            "enabledModels": ["c"],
        },
    )
    settings = SettingsManager.create(dirs[1], dirs[0])
    assert settings.default_model == "project-model"
    assert settings.default_provider == "anthropic"
    assert settings.compaction_settings() == CompactionSettings(
        enabled=False, reserve_tokens=2000, keep_recent_tokens=300
    )
    assert settings.retry_settings().max_retries == 5
    # One level only (pi): the project's retry.provider replaces the global one entirely.
    assert settings.provider_retry_settings() == ProviderRetrySettings(
        timeout_ms=5, max_retries=None, max_retry_delay_ms=60000
    )
    assert settings.get("enabledModels") == ["c"]


def test_deep_merge_skips_null_overrides() -> None:
    """A null override leaves the base value (pi treats undefined the same)."""
    assert deep_merge_settings({"a": 1, "b": {"x": 1}}, {"a": None, "b": {"y": 2}}) == {
        "a": 1,
        "b": {"x": 1, "y": 2},
    }


def test_setters_write_only_changed_keys_and_keep_unknown_ones(dirs: tuple[Path, Path]) -> None:
    """A setter rewrites the global file with its key changed; unknown and concurrently edited
    keys survive."""
    write(
        global_file(dirs),
        {"theme": "light", "futureKey": {"deep": [1, 2]}, "compaction": {"reserveTokens": 7}},
    )
    settings = SettingsManager.create(dirs[1], dirs[0])
    # Someone else edits the file after we loaded it.
    on_disk = read(global_file(dirs))
    on_disk["theme"] = "dark"
    write(global_file(dirs), on_disk)

    settings.set_default_model_and_provider("openai", "gpt-4o")
    settings.set_compaction_enabled(False)
    saved = read(global_file(dirs))
    assert saved == {
        "theme": "dark",
        "futureKey": {"deep": [1, 2]},
        "compaction": {"reserveTokens": 7, "enabled": False},
        "defaultProvider": "openai",
        "defaultModel": "gpt-4o",
    }
    assert settings.default_model == "gpt-4o"
    assert settings.compaction_settings().enabled is False
    assert not project_file(dirs).exists()


def test_a_corrupt_file_is_reported_by_name_and_never_overwritten(dirs: tuple[Path, Path]) -> None:
    """Invalid JSON in the global file: empty settings, an error naming the file, and the file
    left as the user wrote it even after a setter runs."""
    write(global_file(dirs), '{"defaultModel": "x",')
    write(project_file(dirs), {"defaultThinkingLevel": "high"})
    settings = SettingsManager.create(dirs[1], dirs[0])
    errors = settings.drain_errors()
    assert len(errors) == 1
    assert isinstance(errors[0], SettingsFileError)
    assert errors[0].scope == "global"
    assert str(global_file(dirs)) in str(errors[0])
    assert settings.default_model is None
    assert settings.default_thinking_level == "high"
    settings.set_default_thinking_level("low")
    assert global_file(dirs).read_text() == '{"defaultModel": "x",'
    assert settings.default_thinking_level == "high"  # the project still wins


def test_strict_loading_raises_for_a_file_that_is_not_an_object(dirs: tuple[Path, Path]) -> None:
    """With strict=True a settings file holding a JSON array raises, naming the file."""
    write(project_file(dirs), "[1, 2]")
    with pytest.raises(SettingsFileError, match="expected a JSON object") as info:
        SettingsManager.create(dirs[1], dirs[0], strict=True)
    assert info.value.path == str(project_file(dirs))


def test_agent_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PITRIO_CODING_AGENT_DIR names the agent dir; otherwise it is ~/.pitrio/agent."""
    monkeypatch.setenv(AGENT_DIR_ENV, str(tmp_path / "custom"))
    write(tmp_path / "custom" / "settings.json", {"defaultProvider": "groq"})
    assert SettingsManager.create(tmp_path / "cwd").default_provider == "groq"
    monkeypatch.delenv(AGENT_DIR_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "home" / ".pitrio" / "agent" / "settings.json", {"defaultProvider": "xai"})
    assert SettingsManager.create(tmp_path / "cwd").default_provider == "xai"


def test_old_keys_are_migrated() -> None:
    """queueMode becomes steeringMode and retry.maxDelayMs becomes retry.provider.maxRetryDelayMs."""
    settings = SettingsManager.in_memory({"queueMode": "all", "retry": {"maxDelayMs": 1234}})
    assert settings.steering_mode == "all"
    assert settings.provider_retry_settings().max_retry_delay_ms == 1234
    assert "maxDelayMs" not in settings.get("retry")


def test_in_memory_settings_never_touch_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-memory variant keeps its documents in memory, setters included."""
    monkeypatch.setenv(AGENT_DIR_ENV, str(tmp_path / "agent"))
    settings = SettingsManager.in_memory(
        {"retry": {"baseDelayMs": 10}}, project={"retry": {"maxRetries": 1}}
    )
    settings.set_retry_enabled(False)
    assert settings.retry_settings() == RetrySettings(
        enabled=False, max_retries=1, base_delay_ms=10
    )
    assert not (tmp_path / "agent").exists()
    assert json.loads(settings.storage.read("global") or "") == {
        "retry": {"baseDelayMs": 10, "enabled": False}
    }


def test_overrides_apply_without_being_saved() -> None:
    """apply_overrides changes the effective settings only."""
    settings = SettingsManager.in_memory({"compaction": {"reserveTokens": 5}})
    settings.apply_overrides({"compaction": {"keepRecentTokens": 9}})
    assert settings.compaction_settings().keep_recent_tokens == 9
    assert settings.compaction_settings().reserve_tokens == 5
    settings.set_steering_mode("all")
    assert "keepRecentTokens" not in (settings.storage.read("global") or "")


def test_wrongly_typed_values_fall_back_to_defaults() -> None:
    """A string where a number belongs (or a boolean) gives the default, not a crash."""
    settings = SettingsManager.in_memory(
        {"compaction": {"reserveTokens": "big", "keepRecentTokens": True, "enabled": "yes"}}
    )
    assert settings.compaction_settings() == CompactionSettings()


def test_wrongly_typed_values_are_reported_by_file_and_key(dirs: tuple[Path, Path]) -> None:
    """Each wrongly typed known key is a warning naming the file and the key; only that key
    falls back to its default."""
    write(global_file(dirs), {"retry": "yes", "defaultModel": 7, "myExtension": "kept"})
    write(
        project_file(dirs),
        {
            "compaction": {"reserveTokens": "x", "keepRecentTokens": 1000},
            "steeringMode": "sometimes",
            "retry": None,
        },
    )
    settings = SettingsManager.create(dirs[1], dirs[0])
    errors = settings.drain_errors()
    assert all(isinstance(e, SettingsValueError) for e in errors)
    found = {(e.scope, e.key) for e in errors if isinstance(e, SettingsValueError)}
    assert found == {
        ("global", "retry"),
        ("global", "defaultModel"),
        ("project", "compaction.reserveTokens"),
        ("project", "steeringMode"),
    }
    messages = [str(e) for e in errors]
    assert f'Invalid setting retry in {global_file(dirs)}: expected an object, got "yes"' in (
        "\n".join(messages)
    )
    assert any(
        m.startswith(f"Invalid setting compaction.reserveTokens in {project_file(dirs)}")
        and 'expected a number, got "x"; using the default' in m
        for m in messages
    )
    assert settings.retry_settings() == RetrySettings()
    assert settings.compaction_settings() == CompactionSettings(keep_recent_tokens=1000)
    assert settings.default_model is None
    assert settings.steering_mode == "one-at-a-time"
    assert settings.get("myExtension") == "kept"


def test_a_nested_object_of_the_wrong_type_is_reported_once() -> None:
    """retry.provider as a string is one warning, and the other retry keys keep their values."""
    settings = SettingsManager.in_memory({"retry": {"provider": "fast", "maxRetries": 5}})
    [error] = settings.drain_errors()
    assert isinstance(error, SettingsValueError) and error.key == "retry.provider"
    assert settings.retry_settings().max_retries == 5
    assert settings.provider_retry_settings() == ProviderRetrySettings()


def test_a_reload_reports_newly_broken_values(dirs: tuple[Path, Path]) -> None:
    """reload() checks the types again and reports what is wrong now."""
    settings = SettingsManager.create(dirs[1], dirs[0])
    assert settings.drain_errors() == []
    write(global_file(dirs), {"streamStallTimeoutMs": "soon"})
    settings.reload()
    [error] = settings.drain_errors()
    assert isinstance(error, SettingsValueError) and error.key == "streamStallTimeoutMs"
    assert settings.stream_stall_timeout_ms is None


def test_well_typed_settings_give_no_warning(dirs: tuple[Path, Path]) -> None:
    """Every known key with a value of its type loads without a warning."""
    write(
        global_file(dirs),
        {
            "defaultProvider": "openai",
            "defaultModel": "gpt-4o",
            "steeringMode": "all",
            "followUpMode": "one-at-a-time",
            "streamStallTimeoutMs": 30_000,
            "compaction": {"enabled": False, "reserveTokens": 1000.0, "keepRecentTokens": 10},
            "retry": {"enabled": True, "provider": {"maxRetryDelayMs": 0, "timeoutMs": None}},
            "branchSummary": {"skipPrompt": True},
        },
    )
    settings = SettingsManager.create(dirs[1], dirs[0])
    assert settings.drain_errors() == []
    assert settings.stream_stall_timeout_ms == 30_000


async def test_async_setters_save_through_the_shared_file_limiter(dirs: tuple[Path, Path]) -> None:
    """aset_* changes the value at once and writes the file in a worker thread that waits for
    the shared file limiter like every other blocking file operation."""
    settings = SettingsManager.create(dirs[1], dirs[0])
    limiter = file_limiter()
    borrowers = [object() for _ in range(int(limiter.total_tokens))]
    for borrower in borrowers:
        limiter.acquire_on_behalf_of_nowait(borrower)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(settings.aset_retry_enabled, False)
        await trio.testing.wait_all_tasks_blocked()
        assert settings.retry_settings().enabled is False
        assert not global_file(dirs).exists()  # the save waits for a free thread
        for borrower in borrowers:
            limiter.release_on_behalf_of(borrower)
    assert read(global_file(dirs)) == {"retry": {"enabled": False}}


async def test_concurrent_async_setters_all_reach_the_file(dirs: tuple[Path, Path]) -> None:
    """Saves run one at a time; every key set concurrently ends up in the file."""
    write(global_file(dirs), {"theme": "dark"})
    settings = SettingsManager.create(dirs[1], dirs[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(settings.aset_steering_mode, "all")
        nursery.start_soon(settings.aset_compaction_enabled, False)
        nursery.start_soon(settings.aset_default_model_and_provider, "openai", "gpt-4o")
    assert read(global_file(dirs)) == {
        "theme": "dark",
        "steeringMode": "all",
        "compaction": {"enabled": False},
        "defaultProvider": "openai",
        "defaultModel": "gpt-4o",
    }
    assert settings.drain_errors() == []


async def test_an_async_save_never_overwrites_an_unreadable_file(dirs: tuple[Path, Path]) -> None:
    """A global file broken after loading is reported and left as it is by an async save."""
    settings = SettingsManager.create(dirs[1], dirs[0])
    write(global_file(dirs), "{broken")
    await settings.aset_follow_up_mode("all")
    assert global_file(dirs).read_text() == "{broken"
    [error] = settings.drain_errors()
    assert isinstance(error, SettingsFileError)
    assert settings.follow_up_mode == "all"
