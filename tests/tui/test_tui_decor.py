"""``ctx.ui.set_header``, component widgets (``set_widget`` with a factory) and
``set_working_message`` (pi's), through a pty."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

EXTENSION = """
class Header:
    def __init__(self, tui, theme):
        self.tui = tui

    def render(self, width):
        return [f"== my header {width} =="]


class Widget:
    def __init__(self, tui, theme):
        self.ticks = 0

    def render(self, width):
        return [f"widget ticks={self.ticks}"]


class Broken:
    def render(self, width):
        raise RuntimeError("widget bug")


async def decor(args, ctx):
    if args == "off":
        ctx.ui.set_header(None)
        ctx.ui.set_widget("w", None)
        ctx.ui.set_working_message()
    elif args == "broken":
        ctx.ui.set_widget("bad", lambda tui, theme: Broken())
    else:
        ctx.ui.set_header(Header)
        ctx.ui.set_widget("w", Widget, placement="belowEditor")
        ctx.ui.set_working_message("Crunching numbers")


def register(pi):
    pi.register_command("decor", decor, description="decorate")
"""


async def test_header_widget_component_and_working_message(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    script = [" ".join(["slow"] * 60), "Second."]
    async with open_tui(tmp_path, script, "-e", str(extension), speed=10) as tui:
        assert "pitrio v" in tui.text()
        tui.type("/decor\r")
        await tui.wait_for("== my header 80 ==")
        assert "pitrio v" not in tui.transcript().split("== my header")[-1]
        await tui.wait_for("widget ticks=0")
        lines = tui.text().splitlines()
        footer_cwd = next(i for i, line in enumerate(lines) if line.endswith("/project"))
        widget = next(i for i, line in enumerate(lines) if "widget ticks=0" in line)
        assert widget < footer_cwd  # below the editor, above the footer
        tui.type("go\r")
        await tui.wait_for("Crunching numbers")
        await tui.wait_for(lambda: "Crunching" not in tui.text())
        tui.type("/decor off\r")
        await tui.wait_for(lambda: "widget ticks" not in tui.text())
        # The header is above the screen by now: the redraw writes the built-in one again.
        await tui.wait_for(
            lambda: tui.transcript().rfind("pitrio v") > tui.transcript().rfind("== my header")
        )
        tui.type("again\r")
        await tui.wait_for("Working... (esc to interrupt)")


async def test_a_failing_widget_is_removed_and_shown(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/decor broken\r")
        await tui.wait_for("Extension widget failed: RuntimeError: widget bug")
        assert "bad" not in tui.app.widgets
        tui.type("/name still-alive\r")
        await tui.wait_for("Session name: still-alive")
