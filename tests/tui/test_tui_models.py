"""``/scoped-models`` and Ctrl+P cycling over the scope, through a pty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

LOCAL_MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "local-key",
            "models": [{"id": "local-a"}, {"id": "local-b"}, {"id": "local-c"}],
        }
    }
}


def write_models(root: Path) -> Path:
    agent = root / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps(LOCAL_MODELS))
    return agent


async def test_scoped_models_saved_to_settings_and_cycled_in_order(tmp_path: Path) -> None:
    agent = write_models(tmp_path)
    async with open_tui(tmp_path, []) as tui:
        tui.type("/scoped-models\r")
        await tui.wait_for("Scoped models")
        assert "all models cycle" in tui.text()
        tui.type("local-c")
        await tui.wait_for("→ [ ] local/local-c")
        tui.type("\r")  # enable local-c: first in the cycle
        await tui.wait_for("→ [1] local/local-c")
        tui.type("\x7f" * 7 + "local-a")
        await tui.wait_for("→ [ ] local/local-a")
        tui.type("\r")
        await tui.wait_for("→ [2] local/local-a")
        tui.type("\x13")  # ctrl+s: save
        await tui.wait_for("Saved 2 scoped models to settings")
        settings = json.loads((agent / "settings.json").read_text())
        assert settings["enabledModels"] == ["local/local-c", "local/local-a"]
        tui.type("\x10")  # ctrl+p
        await tui.wait_for("Model: local/local-c")
        tui.type("\x10")
        await tui.wait_for("Model: local/local-a")
        assert tui.app.session.model.id == "local-a"
        tui.type("\x10")
        await tui.wait_for(lambda: tui.transcript().count("Model: local/local-c") == 2)
        assert "local-b" not in tui.transcript()


async def test_scope_for_this_run_only_and_provider_toggle(tmp_path: Path) -> None:
    agent = write_models(tmp_path)
    async with open_tui(tmp_path, []) as tui:
        tui.type("/scoped-models\r")
        await tui.wait_for("Scoped models")
        tui.type("local-b")
        await tui.wait_for("→ [ ] local/local-b")
        tui.type("\x10")  # ctrl+p in the selector: the provider's models
        await tui.wait_for("3 enabled")
        tui.type("\x18")  # ctrl+x: clear the matching one
        await tui.wait_for("2 enabled")
        tui.type("\x1b")
        await tui.wait_for("Scoped models: local/local-a, local/local-c")
        tui.type("\x10")
        await tui.wait_for("Model: local/local-a")
        tui.type("\x10")
        await tui.wait_for("Model: local/local-c")
    assert "enabledModels" not in json.loads(
        (agent / "settings.json").read_text() if (agent / "settings.json").exists() else "{}"
    )


async def test_enabled_models_setting_opens_as_the_scope(tmp_path: Path) -> None:
    agent = write_models(tmp_path)
    (agent / "settings.json").write_text(json.dumps({"enabledModels": ["local/local-b"]}))
    async with open_tui(tmp_path, [], "--model", "faux/faux-1") as tui:
        tui.type("/scoped-models\r")
        await tui.wait_for("→ [1] local/local-b")
        assert "1 enabled" in tui.text()
        tui.type("\x1b")
        await tui.wait_for("Scoped models: local/local-b")
        tui.type("\x10")
        await tui.wait_for("Model: local/local-b")
