"""The issue's command list, the commands the other files leave out: ``/thinking`` (selector,
argument, Shift+Tab) on a thinking model, ``/fork`` in the pty, ``/login`` and ``/logout``,
and completion of skills, prompt templates and extension commands (run, not only listed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tui_harness import Tui, open_tui

from pitrio.sessions import ThinkingLevelChangeEntry

pytestmark = pytest.mark.usefixtures("autojump_clock")

THINKING_MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "local-key",
            "models": [{"id": "thinker", "reasoning": True}],
        }
    }
}


def squeezed(tui: Tui) -> str:
    return " ".join(tui.text().split())


def thinking_changes(tui: Tui) -> list[str]:
    """The session's thinking_level_change entries (no answer yet: the file is not written,
    as pi's; the entries are the session's)."""
    entries = tui.app.session.session_manager.get_entries()
    return [e.thinking_level for e in entries if isinstance(e, ThinkingLevelChangeEntry)]


async def test_thinking_selector_argument_and_shift_tab(tmp_path: Path) -> None:
    """/thinking picks a level in a selector, /thinking LEVEL sets it, Shift+Tab cycles; each
    is a thinking_level_change entry of the session and shows in the footer."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps(THINKING_MODELS))
    async with open_tui(tmp_path, [], "--model", "thinker", provider="local") as tui:
        await tui.wait_for("thinker")
        tui.type("/thinking\r")
        await tui.wait_for("Thinking level")
        await tui.wait_for("→ ")
        tui.type("high")  # the selector searches
        await tui.wait_for("→ high")
        tui.type("\r")
        await tui.wait_for("Thinking level: high")
        await tui.wait_for("thinker • high")
        tui.type("/thinking low\r")
        await tui.wait_for("Thinking level: low")
        await tui.wait_for("thinker • low")
        tui.type("/thinking loud\r")
        await tui.wait_for("Unknown thinking level: loud")
        tui.type("\x1b[Z")  # shift+tab: the next level
        await tui.wait_for("thinker • medium")
        assert tui.app.session.thinking_level == "medium"
        assert thinking_changes(tui)[-3:] == ["high", "low", "medium"]


async def test_fork_in_the_pty_opens_a_new_session_from_the_message(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["One.", "Two."]) as tui:
        tui.type("first\r")
        await tui.wait_for("One.")
        tui.type("second\r")
        await tui.wait_for("Two.")
        before = tui.app.session.session_file
        tui.type("/fork\r")
        await tui.wait_for("Fork from message")
        await tui.wait_for("→ second")
        tui.type("\x1b[A\r")  # up to "first"
        await tui.wait_for("Forked to a new session")
        assert tui.app.editor.text == "first"
        assert tui.app.session.session_file != before
        assert "One." not in tui.text()  # the new session holds nothing before "first"


async def test_login_and_logout_say_where_credentials_come_from(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/login\r")
        await tui.wait_for(lambda: "`pitrio auth login`" in squeezed(tui))
        tui.type("/logout\r")
        await tui.wait_for(lambda: squeezed(tui).count("`pitrio auth logout`") == 2)


EXTENSION = """
async def hello(args, ctx):
    ctx.ui.notify(f"hello ran with {args!r}")


def register(pi):
    pi.register_command("hello-ext", hello, description="say hello")
"""


async def test_skills_templates_and_extension_commands_complete_and_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    skill = project / ".pitrio" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release.\n---\nBump the version.")
    template = project / ".pitrio" / "prompts" / "greet.md"
    template.parent.mkdir(parents=True)
    template.write_text("---\ndescription: Greet someone\n---\nHello $1")
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    script = ["Greeted.", "Released."]
    async with open_tui(tmp_path, script, "-e", str(extension)) as tui:
        tui.type("/gre")
        await tui.wait_for("→ /greet")
        assert "Greet someone" in tui.text()
        tui.type("\t")
        await tui.wait_for(lambda: tui.app.editor.text == "/greet ")
        tui.type("Ann\r")
        await tui.wait_for("Greeted.")
        tui.type("/skill:rel")
        await tui.wait_for("→ /skill:release")
        assert "Cut a release." in tui.text()
        tui.type("\t2.0\r")
        await tui.wait_for("Released.")
        tui.type("/hello")
        await tui.wait_for("→ /hello-ext")
        tui.type("\t")
        await tui.wait_for(lambda: tui.app.editor.text == "/hello-ext ")
        tui.type("there\r")
        await tui.wait_for("hello ran with 'there'")
    texts = tui.user_texts()
    assert texts[0] == "Hello Ann"
    assert texts[1].startswith('<skill name="release"') and texts[1].endswith("2.0")
    assert len(texts) == 2  # the extension command reached no model
