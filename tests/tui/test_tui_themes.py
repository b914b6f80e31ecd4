"""``--theme NAME|PATH`` and ``--no-themes`` in the interactive mode, through a pty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

MINE = {"name": "mine", "colors": {"accent": "#ff0000"}}


async def test_theme_flag_with_a_path_draws_with_that_theme(tmp_path: Path) -> None:
    theme = tmp_path / "mine.json"
    theme.write_text(json.dumps(MINE))
    async with open_tui(tmp_path, [], "--theme", str(theme)) as tui:
        assert tui.app.theme.name == "mine"
        tui.type("/settings\r")
        await tui.wait_for("Settings")
        assert "Theme  mine" in tui.text()
        tui.type("\x1b")
        await tui.wait_for(lambda: "Settings" not in tui.text())


async def test_theme_flag_with_a_builtin_name_and_the_last_one_wins(tmp_path: Path) -> None:
    theme = tmp_path / "mine.json"
    theme.write_text(json.dumps(MINE))
    async with open_tui(tmp_path, [], "--theme", str(theme), "--theme", "light") as tui:
        assert tui.app.theme.name == "light"


async def test_setting_names_a_discovered_theme_unless_no_themes(tmp_path: Path) -> None:
    themes = tmp_path / "agent" / "themes"
    themes.mkdir(parents=True)
    (themes / "mine.json").write_text(json.dumps(MINE))
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"theme": "mine"}))
    async with open_tui(tmp_path / "", []) as tui:
        assert tui.app.theme.name == "mine"
    (tmp_path / "agent" / "sessions").rename(tmp_path / "old-sessions")
    async with open_tui(tmp_path, [], "--no-themes") as tui:
        await tui.wait_for("theme not found: mine; using the dark theme")
        assert tui.app.theme.name == "dark"


async def test_setting_wins_over_the_flag_when_it_names_a_given_theme(tmp_path: Path) -> None:
    theme = tmp_path / "mine.json"
    theme.write_text(json.dumps(MINE))
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"theme": "mine"}))
    async with open_tui(
        tmp_path, [], "--theme", "light", "--theme", str(theme), "--no-themes"
    ) as tui:
        assert tui.app.theme.name == "mine"


async def test_a_theme_flag_that_does_not_load_is_a_warning(tmp_path: Path) -> None:
    async with open_tui(tmp_path, [], "--theme", str(tmp_path / "missing.json")) as tui:
        await tui.wait_for("--theme")
        assert "theme not found" in tui.text()
        assert tui.app.theme.name == "dark"
