"""``/share`` (a secret gist through ``gh``), ``/changelog`` and image paste (Ctrl+V through
``wl-paste`` / ``xclip``), through a pty; the borrowed programs are fakes on ``PATH`` that
record how they were run (real subprocesses)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
import trio
from tui_harness import Tui, open_tui

from pitrio.providers import ImageContent, UserMessage
from pitrio.sessions import SessionMessageEntry, load_session_file
from pitrio.tui import _commands

pytestmark = pytest.mark.usefixtures("autojump_clock")

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

FAKE_GH = """
import json, os, shutil, sys
log = os.environ["FAKE_LOG"]
with open(log, "a") as file:
    file.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["auth", "status"]:
    sys.exit(0 if os.environ.get("FAKE_GH_LOGGED_IN") == "1" else 1)
if sys.argv[1:3] == ["gist", "create"]:
    shutil.copy(sys.argv[-1], log + ".html")
    print("https://gist.github.com/someone/abc123def")
    sys.exit(0)
sys.exit(2)
"""

FAKE_XCLIP = f"""
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as file:
    file.write(json.dumps(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
kind = args[args.index("-t") + 1]
if kind == "TARGETS":
    print("TARGETS\\ntext/plain\\nimage/png")
elif kind == "image/png":
    sys.stdout.buffer.write({PNG!r})
else:
    sys.exit(1)
"""


def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **programs: str) -> Path:
    """A folder holding only ``programs`` (name -> Python source), made the whole PATH."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, source in programs.items():
        program = folder / name.replace("_", "-")
        program.write_text(f"#!{sys.executable}\n{source}")
        program.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    return log


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def squeezed(tui: Tui) -> str:
    return " ".join(tui.text().split())


async def answered_once(tui: Tui) -> None:
    tui.type("hello share\r")
    await tui.wait_for("Shared reply.")


async def test_share_without_gh_names_gh_and_its_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin(tmp_path, monkeypatch)
    async with open_tui(tmp_path, ["Shared reply."]) as tui:
        await answered_once(tui)
        tui.type("/share\r")
        await tui.wait_for(lambda: "GitHub CLI (gh) is not installed" in squeezed(tui))
        assert "https://cli.github.com/" in squeezed(tui)
        assert "'gh auth login'" in squeezed(tui)


async def test_share_with_gh_logged_out_says_to_log_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_bin(tmp_path, monkeypatch, gh=FAKE_GH)
    async with open_tui(tmp_path, ["Shared reply."]) as tui:
        await answered_once(tui)
        tui.type("/share\r")
        await tui.wait_for("GitHub CLI is not logged in. Run 'gh auth login' first.")
    assert calls(log) == [["auth", "status"]]  # nothing uploaded


async def test_share_uploads_the_html_export_as_a_secret_gist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gh auth status, then gh gist create --public=false <the export>; the URL is shown;
    the temporary export is removed; PITRIO_SHARE_VIEWER_URL gives a viewer link."""
    log = fake_bin(tmp_path, monkeypatch, gh=FAKE_GH)
    monkeypatch.setenv("FAKE_GH_LOGGED_IN", "1")
    async with open_tui(tmp_path, ["Shared reply."]) as tui:
        await answered_once(tui)
        tui.type("/share\r")
        await tui.wait_for("Share URL: https://gist.github.com/someone/abc123def")
        monkeypatch.setenv("PITRIO_SHARE_VIEWER_URL", "https://viewer.example/s/")
        tui.type("/share\r")
        await tui.wait_for("Share URL: https://viewer.example/s/#abc123def")
        assert "Gist: https://gist.github.com/someone/abc123def" in tui.text()
    made = calls(log)
    assert [c[:3] for c in made] == [["auth", "status"], ["gist", "create", "--public=false"]] * 2
    uploaded = Path(made[1][3])
    assert uploaded.name == "session.html"
    assert not await trio.Path(uploaded).exists()  # the temporary export is gone
    html = read_text(str(log) + ".html")
    assert "<html" in html.lower() and "hello share" in html


async def test_changelog_shows_the_changelog_or_says_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 0.1.0\n\n- **First** release of the faux thing\n")
    monkeypatch.setattr(_commands, "find_changelog", lambda: None)
    async with open_tui(tmp_path, []) as tui:
        tui.type("/changelog\r")
        await tui.wait_for(lambda: "pitrio ships no CHANGELOG.md" in squeezed(tui))
        monkeypatch.setattr(_commands, "find_changelog", lambda: str(changelog))
        tui.type("/changelog\r")
        await tui.wait_for("What's New")
        await tui.wait_for("First release of the faux thing")  # rendered: no ** left
        assert "0.1.0" in tui.text()


async def test_ctrl_v_attaches_the_clipboard_image_to_the_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+V reads the image with xclip (TARGETS, then image/png), shows [image #1] in the
    editor, and the next message carries it: the session's user message has the PNG."""
    log = fake_bin(tmp_path, monkeypatch, xclip=FAKE_XCLIP)
    async with open_tui(tmp_path, ["Seen it."]) as tui:
        tui.type("what is in ")
        await tui.wait_for(lambda: tui.app.editor.text == "what is in ")
        tui.type("\x16")
        await tui.wait_for(lambda: tui.app.editor.text == "what is in [image #1]")
        tui.type(" please\r")
        await tui.wait_for("Seen it.")
        (path,) = tui.session_files()
    assert calls(log) == [
        ["-selection", "clipboard", "-t", "TARGETS", "-o"],
        ["-selection", "clipboard", "-t", "image/png", "-o"],
    ]
    users = [
        entry.message
        for entry in load_session_file(str(path)).entries
        if isinstance(entry, SessionMessageEntry) and isinstance(entry.message, UserMessage)
    ]
    (user,) = users
    assert not isinstance(user.content, str)
    images = [block for block in user.content if isinstance(block, ImageContent)]
    assert [(i.mime_type, base64.b64decode(i.data)) for i in images] == [("image/png", PNG)]
    assert "what is in [image #1] please" in str(user.content[0])


async def test_ctrl_v_without_a_clipboard_tool_says_which_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin(tmp_path, monkeypatch)
    async with open_tui(tmp_path, []) as tui:
        tui.type("\x16")
        await tui.wait_for(lambda: "Image paste needs wl-paste" in squeezed(tui))
        assert "xclip" in squeezed(tui)
        assert tui.app.editor.text == ""
