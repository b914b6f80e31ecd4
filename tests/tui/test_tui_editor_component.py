"""``ctx.ui.set_editor_component``: an extension's editor in the built-in one's place (pi's
``EditorComponent`` / ``CustomEditor``), through a pty."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

EXTENSION = """
from pitrio.tui import CustomEditor


class ModalEditor(CustomEditor):
    mode = "insert"

    def handle_input(self, key):
        if key == "escape" and self.mode == "insert":
            self.mode = "normal"
            return
        if self.mode == "normal":
            if key == "i":
                self.mode = "insert"
            return  # normal mode types nothing
        super().handle_input(key)

    def render(self, width):
        return [f"-- {self.mode.upper()} --", *super().render(width)]


class Plain:
    def __init__(self, tui, theme, keys):
        self.text = ""
        self.on_submit = None

    def render(self, width):
        return [f"plain> {self.text}|"]

    def handle_input(self, key):
        if key == "enter":
            text, self.text = self.text, ""
            self.on_submit(text)
        elif key == "space":
            self.text += " "
        elif len(key) == 1:
            self.text += key

    def get_text(self):
        return self.text

    def set_text(self, text):
        self.text = text


class Broken:
    def render(self, width):
        return ["broken editor here"]

    def handle_input(self, key):
        raise RuntimeError("editor bug")


async def editor(args, ctx):
    if args == "off":
        ctx.ui.set_editor_component(None)
    elif args == "plain":
        ctx.ui.set_editor_component(Plain)
        ctx.ui.set_editor_text("preset")
    elif args == "broken":
        ctx.ui.set_editor_component(lambda tui, theme, keys: Broken())
    else:
        ctx.ui.set_editor_component(ModalEditor)
    ctx.ui.notify(f"editor factory set: {ctx.ui.get_editor_component() is not None}")


async def read(args, ctx):
    ctx.ui.notify(f"editor holds: {ctx.ui.get_editor_text()!r}")


def register(pi):
    pi.register_command("editor", editor, description="swap the editor")
    pi.register_command("read", read, description="read the editor")
"""


def _write(tmp_path: Path) -> Path:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    return extension


async def test_a_custom_editor_subclass_takes_keys_and_passes_the_rest_on(tmp_path: Path) -> None:
    """A CustomEditor subclass: its own keys (Esc to a normal mode that types nothing) and
    the built-in editing and Enter for the rest; the message reaches the session; None gives
    the built-in editor back."""
    script = ["Modal reply."]
    async with open_tui(tmp_path, script, "-e", str(_write(tmp_path))) as tui:
        tui.type("/editor\r")
        await tui.wait_for("editor factory set: True")
        await tui.wait_for("-- INSERT --")
        tui.type("hello")
        await tui.wait_for(lambda: tui.app.editor.text == "hello")
        tui.type("\x1b")
        await tui.wait_for("-- NORMAL --")
        tui.type("xyz")
        tui.type("i")
        await tui.wait_for("-- INSERT --")
        assert tui.app.editor.text == "hello"  # normal mode typed nothing
        tui.type(" world\r")
        await tui.wait_for("Modal reply.")
        assert tui.user_texts() == ["hello world"]
        tui.type("/editor off\r")
        await tui.wait_for("editor factory set: False")
        assert "-- INSERT --" not in tui.text()
        tui.type("abc")
        await tui.wait_for(lambda: tui.app.editor.text == "abc")


async def test_a_plain_editor_component_submits_through_on_submit(tmp_path: Path) -> None:
    """A component of its own (no CustomEditor): it renders, gets every key, set_editor_text
    and get_editor_text use its get_text / set_text, and on_submit sends as Enter does (a
    prompt, then a command)."""
    script = ["Plain reply."]
    async with open_tui(tmp_path, script, "-e", str(_write(tmp_path))) as tui:
        tui.type("/editor plain\r")
        await tui.wait_for("plain> preset|")
        tui.type("\x7f")  # backspace is not this component's: nothing happens
        tui.ui.set_editor_text("")
        tui.type("hi there")
        await tui.wait_for("plain> hi there|")
        assert tui.ui.get_editor_text() == "hi there"
        assert tui.app.editor.text == ""
        tui.type("\r")
        await tui.wait_for("Plain reply.")
        assert tui.user_texts() == ["hi there"]
        tui.type("/editor off\r")
        await tui.wait_for("editor factory set: False")
        assert "plain>" not in tui.text()


async def test_a_failing_editor_gives_the_built_in_one_back(tmp_path: Path) -> None:
    async with open_tui(tmp_path, [], "-e", str(_write(tmp_path))) as tui:
        tui.type("/editor broken\r")
        await tui.wait_for("broken editor here")
        tui.type("a")
        await tui.wait_for("Extension editor failed: RuntimeError: editor bug")
        assert "broken editor here" not in tui.text()
        tui.type("/name still-alive\r")
        await tui.wait_for("Session name: still-alive")
