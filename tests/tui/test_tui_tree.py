"""``/tree``'s filter keys and label editing (pi's tree selector), through a pty."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tui_harness import Tui, open_tui

from pitrio.sessions import SessionMessageEntry, load_session_file

pytestmark = pytest.mark.usefixtures("autojump_clock")


def entries(tui: Tui) -> list[object]:
    (path,) = tui.session_files()
    return list(load_session_file(str(path)).entries)


def user_entry_id(tui: Tui, text: str) -> str:
    for entry in entries(tui):
        message = getattr(entry, "message", None)
        is_user = isinstance(entry, SessionMessageEntry) and getattr(message, "role", "") == "user"
        if is_user and text in str(getattr(message, "content", "")):
            return entry.id
    raise AssertionError(text)


def tree_lines(tui: Tui) -> list[str]:
    return [
        line.strip() for line in tui.text().splitlines() if ": " in line and "Search" not in line
    ]


async def two_turns(tui: Tui) -> None:
    tui.type("first\r")
    await tui.wait_for("One.")
    tui.type("second\r")
    await tui.wait_for("Two.")


async def test_filter_keys_toggle_and_cycle_modes(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["One.", "Two."]) as tui:
        await two_turns(tui)
        tui.type("/tree\r")
        await tui.wait_for("Session tree")
        assert "→ • assistant: Two." in tui.text()
        assert "[model: faux/faux-1]" not in tui.text()  # bookkeeping: hidden by default
        tui.type("\x15")  # ctrl+u: user messages only
        await tui.wait_for("[user]")
        assert "assistant: One." not in tui.text()
        assert "user: first" in tui.text() and "user: second" in tui.text()
        tui.type("\x15")  # again: back to the default view
        await tui.wait_for(lambda: "[user]" not in tui.text())
        assert "assistant: One." in tui.text()
        tui.type("\x01")  # ctrl+a: every entry
        await tui.wait_for("[all]")
        assert "[model: faux/faux-1]" in tui.text()
        tui.type("\x0f")  # ctrl+o cycles on: all -> default
        await tui.wait_for(lambda: "[all]" not in tui.text())
        tui.type("\x0f")  # default -> no-tools
        await tui.wait_for("[no-tools]")
        tui.type("\x0c")  # ctrl+l: labeled only (none yet)
        await tui.wait_for("No entries found")
        tui.type("\x1b")
        await tui.wait_for(lambda: "Session tree" not in tui.text())


async def test_label_set_and_cleared_is_written_to_the_session(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["One.", "Two."]) as tui:
        await two_turns(tui)
        tui.type("/tree\r")
        await tui.wait_for("Session tree")
        tui.type("\x15")  # user only: the cursor lands on the last row
        await tui.wait_for("→ user: second")
        tui.type("\x1b[A")
        await tui.wait_for("→ user: first")
        tui.type("L")  # shift+l
        await tui.wait_for("Label (empty clears)")
        tui.type("checkpoint\r")
        await tui.wait_for("[checkpoint] user: first")
        tui.type("\x0c")  # ctrl+l: labeled only
        await tui.wait_for("[labeled]")
        assert "user: second" not in tui.text()
        tui.type("T")  # shift+t: the label's time
        await tui.wait_for("[+label time]")
        tui.type("\x1b")
        await tui.wait_for(lambda: "Session tree" not in tui.text())
        target = user_entry_id(tui, "first")
        labels = [e for e in entries(tui) if getattr(e, "type", "") == "label"]
        assert [(e.target_id, e.label) for e in labels] == [(target, "checkpoint")]  # type: ignore[attr-defined]
        assert tui.app.session.session_manager.get_label(target) == "checkpoint"

        tui.type("/tree\r")
        await tui.wait_for("[checkpoint] user: first")
        tui.type("\x0c")
        await tui.wait_for("→ [checkpoint] user: first")
        tui.type("L")
        await tui.wait_for("Label (empty clears)")
        tui.type("\x15\r")  # ctrl+u empties the field: the label is cleared
        await tui.wait_for("No entries found")
        tui.type("\x1b")
        await tui.wait_for(lambda: "Session tree" not in tui.text())
        labels = [e for e in entries(tui) if getattr(e, "type", "") == "label"]
    assert [e.label for e in labels] == ["checkpoint", None]  # type: ignore[attr-defined]


async def test_selecting_a_filtered_entry_navigates_there(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["One.", "Two."]) as tui:
        await two_turns(tui)
        tui.type("/tree\r")
        await tui.wait_for("Session tree")
        tui.type("\x15")
        await tui.wait_for("→ user: second")
        tui.type("\r")
        await tui.wait_for("Summarize the branch you leave?")
        tui.type("\r")
        await tui.wait_for(lambda: "Two." not in tui.text())
        assert "\nsecond" in tui.text()  # the message is back in the editor
        # Back to before "second": the leaf is the first answer.
        leaf = tui.app.session.session_manager.get_leaf_entry()
        assert leaf.message.role == "assistant"
        assert leaf.parent_id == user_entry_id(tui, "first")


CTRL_LEFT = "\x1b[1;5D"
CTRL_RIGHT = "\x1b[1;5C"
ALT_LEFT = "\x1b[1;3D"
ALT_RIGHT = "\x1b[1;3C"


def chosen(tui: Tui) -> str:
    """The selected row, its indentation squeezed."""
    lines = [line for line in tui.text().splitlines() if line.startswith("→ ")]
    return " ".join(lines[0].split()) if len(lines) == 1 else ""


def on(text: str, tui: Tui) -> Callable[[], bool]:
    return lambda: chosen(tui) == text


async def test_fold_keys_fold_a_branch_and_jump_between_segments(tmp_path: Path) -> None:
    """pi's app.tree.foldOrUp / unfoldOrDown: on a leaf, Ctrl+Left jumps up to the segment
    start; there it folds (⊞, the branch's entries hidden); Ctrl+Right unfolds, then jumps
    down to the branch's end; Alt+Left/Right are the same keys; a filter change unfolds."""
    async with open_tui(tmp_path, ["One.", "Two.", "Three."]) as tui:
        await two_turns(tui)
        # Back to "second": a new branch from "One." ("other" -> "Three.").
        tui.type("/tree\r")
        await tui.wait_for("→ • assistant: Two.")
        tui.type("\x1b[A")
        await tui.wait_for("→ user: second")
        tui.type("\r")
        await tui.wait_for("Summarize the branch you leave?")
        tui.type("\r")
        await tui.wait_for(lambda: tui.app.editor.text == "second")
        tui.type("\x15other\r")
        await tui.wait_for("Three.")
        tui.type("/tree\r")
        await tui.wait_for(on("→ • assistant: Three.", tui))
        assert "⊟ user: other" in tui.text() and "⊟ user: second" in tui.text()
        tui.type(CTRL_LEFT)  # a leaf: up to its segment's start
        await tui.wait_for(on("→ ⊟ user: other", tui))
        tui.type(CTRL_LEFT)  # the segment start: fold it
        await tui.wait_for(on("→ ⊞ user: other", tui))
        assert "assistant: Three." not in tui.text()
        assert "assistant: Two." in tui.text()  # the other branch stays
        tui.type(CTRL_RIGHT)  # unfold
        await tui.wait_for("assistant: Three.")
        assert chosen(tui) == "→ ⊟ user: other"
        tui.type(CTRL_RIGHT)  # no fold here: down to the branch's end
        await tui.wait_for(on("→ • assistant: Three.", tui))
        tui.type(ALT_LEFT + ALT_LEFT)
        await tui.wait_for(on("→ ⊞ user: other", tui))
        tui.type("\x01")  # ctrl+a: another filter unfolds everything
        await tui.wait_for("[all]")
        assert "assistant: Three." in tui.text() and "⊞" not in tui.text()
        tui.type(ALT_RIGHT)
        await tui.wait_for(on("→ • assistant: Three.", tui))
        tui.type("\x1b")
        await tui.wait_for(lambda: "Session tree" not in tui.text())
