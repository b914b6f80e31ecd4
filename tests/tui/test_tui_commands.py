"""The interactive mode's commands, keys and extension dialogs, through a pty."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from tui_harness import open_tui

pytestmark = pytest.mark.usefixtures("autojump_clock")

EXTENSION = """
async def pick(args, ctx):
    choice = await ctx.ui.select("Pick one", ["alpha", "beta", "gamma"])
    sure = await ctx.ui.confirm("Really?", "Keep " + str(choice) + "?")
    name = await ctx.ui.input("Your name", "type here")
    ctx.ui.set_status("ext", "status-from-ext")
    ctx.ui.set_widget("w", ["widget line one"])
    ctx.ui.notify(f"picked {choice} sure={sure} name={name}")


def register(pi):
    pi.register_command("pick", pick, description="pick something")
"""


async def test_extension_dialogs_status_and_widget(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/pick\r")
        await tui.wait_for("Pick one")
        assert "→ alpha" in tui.text()
        tui.type("\x1b[B")  # down
        await tui.wait_for("→ beta")
        tui.type("\r")
        await tui.wait_for("Keep beta?")
        tui.type("y")
        await tui.wait_for("Your name")
        tui.type("Ada\r")
        await tui.wait_for("picked beta sure=True name=Ada")
        screen = tui.text()
    assert "status-from-ext" in screen
    assert "widget line one" in screen


async def test_cancelled_dialog_answers_none(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/pick\r")
        await tui.wait_for("Pick one")
        tui.type("\x1b")
        await tui.wait_for("Keep None?")
        tui.type("n")
        await tui.wait_for("Your name")
        tui.type("\x1b")
        await tui.wait_for("picked None sure=False name=None")


async def test_name_and_session_info(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Hi."]) as tui:
        tui.type("hello\r")
        await tui.wait_for("Hi.")
        tui.type("/name my work\r")
        await tui.wait_for("• my work")
        tui.type("/session\r")
        await tui.wait_for("Name: my work")
        screen = tui.transcript()
    (path,) = tui.session_files()
    assert "Messages: 1 user, 1 assistant, 0 tool results" in screen
    assert path.name in screen.replace("\n", "")


async def test_model_selector_searches(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/model\r")
        await tui.wait_for("Select model")
        assert "→ faux/faux-1" in tui.text()
        tui.type("zzzz")
        await tui.wait_for("(no matches)")
        tui.type("\x7f\x7f\x7f\x7ffaux")
        await tui.wait_for("→ faux/faux-1")
        tui.type("\r")
        await tui.wait_for("Model: faux/faux-1")


async def test_shell_command_is_shown_and_recorded(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("!echo out-of-shell\r")
        await tui.wait_for("out-of-shell\n")
        await tui.wait_for(lambda: len(tui.app.session.messages) == 1)
        await tui.wait_for(lambda: "running..." not in tui.text())
        assert "! echo out-of-shell" in tui.text()
        # (A session holding no answer yet is not written to its file: as pi, it waits.)
        messages = list(tui.app.session.messages)
    assert [m.role for m in messages] == ["bashExecution"]
    assert messages[0].output.strip() == "out-of-shell"
    assert messages[0].exclude_from_context is False


async def test_double_bang_runs_a_command_the_model_never_sees(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("!!echo kept-private\r")
        await tui.wait_for("!! echo kept-private")
        # The run is recorded once it ended (before it starts, "running..." is not shown yet).
        await tui.wait_for(lambda: len(tui.app.session.messages) == 1)
        (message,) = tui.app.session.messages
    assert message.exclude_from_context is True


async def test_slash_completion_and_tab(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/hot")
        await tui.wait_for("→ /hotkeys")
        tui.type("\t")
        await tui.wait_for(lambda: "→ /hotkeys" not in tui.text())
        assert "\n/hotkeys\n" in tui.text()
        tui.type("\r")
        # The list is longer than the screen: it scrolls into the scrollback.
        await tui.wait_for(lambda: "Cycle thinking level" in tui.transcript())


async def test_file_reference_completion(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "src").mkdir()
    (tmp_path / "project" / "src" / "notes_file.txt").write_text("x")
    async with open_tui(tmp_path, []) as tui:
        tui.type("look at @notes")
        await tui.wait_for("src/notes_file.txt")
        tui.type("\t")
        await tui.wait_for("look at @src/notes_file.txt")


async def test_tab_completes_a_path(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "unique_folder").mkdir()
    async with open_tui(tmp_path, []) as tui:
        tui.type("cd uniq\t")
        await tui.wait_for("cd unique_folder/")


async def test_large_paste_is_a_marker_and_sent_whole(tmp_path: Path) -> None:
    pasted = "\n".join(f"pasted line {i}" for i in range(30))
    async with open_tui(tmp_path, ["Got it."]) as tui:
        tui.type(b"\x1b[200~" + pasted.encode() + b"\x1b[201~")
        await tui.wait_for("[paste #1 +30 lines]")
        tui.type("\r")
        await tui.wait_for("Got it.")
    assert tui.user_texts() == [pasted]


async def test_ctrl_o_expands_tool_output(tmp_path: Path) -> None:
    script = [
        {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "seq 1 12"}}]},
        "Counted.",
    ]
    async with open_tui(tmp_path, script, rows=40) as tui:
        tui.type("count\r")
        await tui.wait_for("Counted.")
        assert "earlier lines, ctrl+o to expand" in tui.text()
        assert "\n 3\n" not in tui.text()
        tui.type("\x0f")  # ctrl+o
        await tui.wait_for(lambda: "earlier lines" not in tui.text())
        assert all(f"\n {i}" in tui.text() for i in range(1, 13))


async def test_ctrl_t_shows_thinking(tmp_path: Path) -> None:
    script = [
        {
            "content": [
                {"type": "thinking", "thinking": "secret deliberation"},
                {"type": "text", "text": "Visible answer."},
            ]
        }
    ]
    async with open_tui(tmp_path, script) as tui:
        tui.type("think\r")
        await tui.wait_for("Visible answer.")
        assert "Thinking..." in tui.text() and "secret deliberation" not in tui.text()
        tui.type("\x14")  # ctrl+t
        await tui.wait_for("secret deliberation")


async def test_an_error_answer_is_shown(tmp_path: Path) -> None:
    script = [{"content": "", "stopReason": "error", "errorMessage": "model exploded"}]
    async with open_tui(tmp_path, script) as tui:
        tui.type("go\r")
        await tui.wait_for("Error: model exploded")


async def test_new_session_clears_the_chat(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["First."]) as tui:
        tui.type("hello\r")
        await tui.wait_for("First.")
        tui.type("/new\r")
        await tui.wait_for("New session started")
        assert "First." not in tui.text()


async def test_copy_writes_osc52(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Copy me."]) as tui:
        tui.type("hello\r")
        await tui.wait_for("Copy me.")
        tui.type("/copy\r")
        await tui.wait_for("Copied the last assistant message")
    encoded = base64.b64encode(b"Copy me.")
    assert b"\x1b]52;c;" + encoded + b"\x07" in tui.raw_output


async def test_export_writes_html(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Exported answer."]) as tui:
        tui.type("hello\r")
        await tui.wait_for("Exported answer.")
        tui.type("/export out.html\r")
        await tui.wait_for("Exported to:")
    page = tmp_path / "project" / "out.html"
    assert "Exported answer." in page.read_text()


async def test_ctrl_c_clears_then_twice_quits(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("some draft")
        await tui.wait_for("some draft")
        tui.type("\x03")
        await tui.wait_for(lambda: "some draft" not in tui.text())
        assert not tui.finished.is_set()
        tui.type("\x03")
        assert await tui.wait_exit() == 0


async def test_editor_history_with_up(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["One.", "Two."]) as tui:
        tui.type("first prompt\r")
        await tui.wait_for("One.")
        tui.type("\x1b[A")
        await tui.wait_for(lambda: tui.text().count("first prompt") == 2)


async def test_keybindings_json_rebinds_an_action(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "keybindings.json").write_text(json.dumps({"app.tools.expand": "ctrl+x"}))
    script = [
        {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "seq 1 12"}}]},
        "Counted.",
    ]
    async with open_tui(tmp_path, script, rows=40) as tui:
        tui.type("count\r")
        await tui.wait_for("Counted.")
        tui.type("\x0f")  # ctrl+o is no longer bound
        tui.type("\x18")  # ctrl+x expands
        await tui.wait_for(lambda: "earlier lines" not in tui.text())


async def test_ctrl_g_edits_in_the_external_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's text goes to $VISUAL in a file; what the program leaves comes back."""
    seen = tmp_path / "seen.txt"
    script = f'cat "$0" > {seen}; printf edited-outside > "$0"'
    monkeypatch.setenv("VISUAL", f"sh -c '{script}'")
    async with open_tui(tmp_path, []) as tui:
        tui.type("draft text")
        await tui.wait_for("draft text")
        tui.type("\x07")  # ctrl+g
        await tui.wait_for("edited-outside")
        assert "draft text" not in tui.text()
        assert not tui.finished.is_set()
    assert seen.read_text() == "draft text"


async def test_retries_that_run_out_are_reported(tmp_path: Path) -> None:
    failure = {"content": "", "stopReason": "error", "errorMessage": "503 Service Unavailable"}
    async with open_tui(tmp_path, [failure] * 4) as tui:
        tui.type("go\r")
        await tui.wait_for("Retry failed")
        assert "503 Service Unavailable" in tui.text()


async def test_compact_summarizes_and_shows_the_summary(tmp_path: Path) -> None:
    script = ["First answer.", "Second answer.", "The summary of it all."]
    async with open_tui(tmp_path, script, rows=40) as tui:
        tui.type("one\r")
        await tui.wait_for("First answer.")
        tui.type("two\r")
        await tui.wait_for("Second answer.")
        tui.type("/compact\r")
        await tui.wait_for("Compacted (")
        assert "Compacted from" in tui.text()
        tui.type("\x0f")  # ctrl+o shows the summary
        await tui.wait_for("The summary of it all.")


async def test_shift_tab_on_a_model_without_thinking(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("\x1b[Z")
        await tui.wait_for("does not support thinking")


async def test_resume_switches_to_another_session(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Old answer.", "New answer."]) as tui:
        tui.type("old question\r")
        await tui.wait_for("Old answer.")
        tui.type("/new\r")
        await tui.wait_for("New session started")
        tui.type("new question\r")
        await tui.wait_for("New answer.")
        tui.type("/resume\r")
        await tui.wait_for("Resume session")
        assert "→ old question" in tui.text()
        tui.type("\r")
        await tui.wait_for("Resumed")
        screen = tui.text()
    assert "Old answer." in screen and "New answer." not in screen


async def test_clone_duplicates_the_branch_into_a_new_session(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Cloned answer.", "After the clone."]) as tui:
        tui.type("question\r")
        await tui.wait_for("Cloned answer.")
        tui.type("/clone\r")
        await tui.wait_for("Cloned into a new session")
        assert "Cloned answer." in tui.text()
        tui.type("more\r")
        await tui.wait_for("After the clone.")
    assert len(tui.session_files()) == 2


async def test_context_is_answered_by_the_session(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/context\r")
        await tui.wait_for("System prompt")


async def test_settings_switches_the_theme(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/settings\r")
        await tui.wait_for("Settings")
        tui.type("theme")
        await tui.wait_for("→ Theme")
        tui.type("\r")
        await tui.wait_for("→ dark")
        tui.type("\x1b[B\r")
        await tui.wait_for("Theme updated")
        assert tui.app.theme.name == "light"


async def test_a_failing_command_is_shown_not_fatal(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:

        async def broken(args: str) -> None:
            raise KeyError("no such thing")

        tui.app.commands._handlers["session"] = broken
        tui.type("/session\r")
        await tui.wait_for("KeyError: 'no such thing'")
        tui.type("still here")
        await tui.wait_for("still here")


EDITOR_EXTENSION = """
async def write(args, ctx):
    text = await ctx.ui.editor("Write it", "first line")
    ctx.ui.notify("got " + repr(text))


def register(pi):
    pi.register_command("write", write)
"""


async def test_extension_editor_dialog_is_multi_line(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(EDITOR_EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("/write\r")
        await tui.wait_for("Write it")
        tui.type("\x1b[13;2usecond line\r")
        await tui.wait_for("got 'first line\\nsecond line'")


async def test_alt_up_takes_queued_messages_back(tmp_path: Path) -> None:
    script = [" ".join(["busy"] * 80), "Later."]
    async with open_tui(tmp_path, script, speed=10) as tui:
        tui.type("start\r")
        await tui.wait_for("Working...")
        tui.type("queued text\x1b\r")
        await tui.wait_for("Follow-up: queued text")
        tui.type("\x1b[1;3A")  # alt+up
        await tui.wait_for(lambda: "Follow-up:" not in tui.text())
        assert "\nqueued text" in tui.text()


SHORTCUT_EXTENSION = """
def register(pi):
    pi.register_shortcut("ctrl+shift+k", lambda ctx: ctx.ui.notify("shortcut ran"))
"""


async def test_extension_shortcut_runs_its_handler(tmp_path: Path) -> None:
    extension = tmp_path / "ext.py"
    extension.write_text(SHORTCUT_EXTENSION)
    async with open_tui(tmp_path, [], "-e", str(extension)) as tui:
        tui.type("\x1b[107;6u")  # ctrl+shift+k (Kitty)
        await tui.wait_for("shortcut ran")


async def test_reload_reads_keybindings_again(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    async with open_tui(tmp_path, []) as tui:
        (agent / "keybindings.json").write_text(json.dumps({"app.thinking.toggle": "ctrl+x"}))
        tui.type("/reload\r")
        await tui.wait_for("Reloaded")
        assert tui.app.keys.keys("app.thinking.toggle") == ("ctrl+x",)
