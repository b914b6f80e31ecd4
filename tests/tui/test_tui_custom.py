"""Extensions' own components (``ctx.ui.custom``, ``ctx.ui.set_footer``), through a pty."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

EXTENSION = """
class Counter:
    def __init__(self, tui, theme, keys, done):
        self.count = 0
        self.keys = keys
        self.done = done
        self.tui = tui
        self.pasted = ""

    def render(self, width):
        return [f"counter: {self.count} pasted={self.pasted} width={width}", "x" * (width + 30)]

    def handle_input(self, key):
        if key == "up":
            self.count += 1
        elif key == "down":
            self.count -= 1
        elif self.keys.matches(key, "tui.select.confirm"):
            self.done(self.count)
        elif key == "escape":
            self.done(None)

    def handle_paste(self, text):
        self.pasted = text


class Broken:
    def render(self, width):
        return ["broken component here"]

    def handle_input(self, key):
        raise RuntimeError("component bug")


class Footer:
    def __init__(self, tui, theme):
        self.tui = tui

    def render(self, width):
        return [f"my footer {width}x{self.tui.rows}"]


class BadFooter:
    def render(self, width):
        raise ValueError("footer bug")


async def counter(args, ctx):
    result = await ctx.ui.custom(Counter)
    ctx.ui.notify(f"counter result: {result}")


async def broken(args, ctx):
    result = await ctx.ui.custom(lambda tui, theme, keys, done: Broken())
    ctx.ui.notify(f"broken result: {result}")


async def footer(args, ctx):
    if args == "off":
        ctx.ui.set_footer(None)
    elif args == "bad":
        ctx.ui.set_footer(lambda tui, theme: BadFooter())
    else:
        ctx.ui.set_footer(Footer)


def register(pi):
    pi.register_command("counter", counter, description="count")
    pi.register_command("broken", broken, description="break")
    pi.register_command("footer", footer, description="footer")
"""


async def test_custom_component_gets_the_keys_until_done(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/counter\r")
        await tui.wait_for("counter: 0")
        assert "width=80" in tui.text()
        (long,) = [line for line in tui.text().splitlines() if line.startswith("xxx")]
        assert len(long) == 80  # cut to the width
        tui.type("\x1b[A\x1b[A\x1b[A\x1b[B")
        await tui.wait_for("counter: 2")
        tui.type("\x1b[200~pasted-text\x1b[201~")
        await tui.wait_for("pasted=pasted-text")
        assert "pasted-text" not in tui.app.editor.text  # the editor got no key
        tui.type("\r")
        await tui.wait_for("counter result: 2")
        assert "counter: 2" not in tui.text()
        tui.type("/counter\r")
        await tui.wait_for("counter: 0")
        tui.type("\x1b")
        await tui.wait_for("counter result: None")


async def test_a_failing_component_is_closed_and_the_screen_stays(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/broken\r")
        await tui.wait_for("broken component here")
        tui.type("a")
        await tui.wait_for("Extension component failed: RuntimeError: component bug")
        await tui.wait_for("broken result: None")
        assert "broken component here" not in tui.text()
        tui.type("/name still-alive\r")
        await tui.wait_for("Session name: still-alive")


async def test_footer_replaced_and_restored(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        assert "(faux) faux-1" in tui.text()
        tui.type("/footer\r")
        await tui.wait_for("my footer 80x24")
        assert "(faux) faux-1" not in tui.text()
        tui.type("/footer off\r")
        await tui.wait_for("(faux) faux-1")
        assert "my footer" not in tui.text()
        tui.type("/footer bad\r")
        await tui.wait_for("Extension footer failed: ValueError: footer bug")
        assert "(faux) faux-1" in tui.text()
