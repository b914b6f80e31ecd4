"""End to end: the ``pitrio`` command in a tmux pane, with the scripted faux model.

A tool-using turn, ``/tree`` back to the first message, ``/fork``, quit; then the terminal is
as sane as before (``stty -g`` equal). This runs a real process on a real terminal, so it
waits on wall-clock time (bounded polls of the pane), and is skipped without tmux.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PANE_WAIT = 30.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Pane:
    def __init__(self, socket: str, target: str) -> None:
        self.socket = socket
        self.target = target

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-S", "-200", "-t", self.target)

    def visible(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.target)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def wait_for(self, check: Callable[[str], bool] | str) -> str:
        test = (lambda text: check in text) if isinstance(check, str) else check
        deadline = time.monotonic() + PANE_WAIT
        while True:
            text = self.text()
            if test(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"pane never showed {check!r}:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    project = tmp_path / "project"
    project.mkdir()
    script = [
        {
            "content": [
                {
                    "type": "toolCall",
                    "name": "bash",
                    "arguments": {"command": "echo tmux-tool-output"},
                }
            ]
        },
        "The tool said hello.",
        "Second answer.",
        "Answer in the fork.",
    ]
    (tmp_path / "faux.json").write_text(json.dumps(script))
    env = {
        "HOME": str(tmp_path / "home"),
        "PITRIO_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PITRIO_FAUX_SCRIPT": str(tmp_path / "faux.json"),
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = (
        f"cd {shlex.quote(str(project))} && stty -g > ../before.txt && "
        f"env -i {exports} {shlex.quote(sys.executable)} -m pitrio --provider faux; "
        # after.txt is written before EXIT shows, so the test never reads it half-written.
        "status=$?; stty -g > ../after.txt; echo EXIT=$status; sleep 600"
    )
    socket = f"pitrio-test-{os.getpid()}"
    target = "tui"
    subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            target,
            "-x",
            "100",
            "-y",
            "40",
            command,
        ],
        check=True,
    )
    try:
        yield Pane(socket, target), tmp_path
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, capture_output=True)


def test_a_session_in_tmux(pane: tuple[Pane, Path]) -> None:
    tmux, root = pane
    tmux.wait_for("(faux) faux-1")
    tmux.keys("list files", "Enter")
    tmux.wait_for("The tool said hello.")
    text = tmux.text()
    assert "$ echo tmux-tool-output" in text
    assert text.count("tmux-tool-output") == 2  # the call, then its output
    tmux.keys("second question", "Enter")
    tmux.wait_for("Second answer.")

    # /tree back to the second user message: the first turn stays, its text is in the editor.
    tmux.keys("/tree", "Enter")
    tmux.wait_for("Session tree")
    tree = tmux.text()
    rows = [line for line in tree.splitlines() if "user: " in line]
    assert [r.split("user: ")[1].strip() for r in rows] == ["list files", "second question"]
    tmux.keys("Up")
    tmux.wait_for("→ user: second question")
    tmux.keys("Enter")
    tmux.wait_for("Summarize the branch you leave?")
    tmux.keys("Enter")  # No summary
    tmux.wait_for(lambda t: "Second answer." not in tmux.visible())
    screen = tmux.visible()
    assert "Session tree" not in screen and "The tool said hello." in screen
    assert "\nsecond question\n" in screen

    # /fork from the first message: a new session, that message's text in the editor.
    tmux.keys("C-u", "/fork", "Enter")
    tmux.wait_for("Fork from message")
    tmux.keys("Enter")
    tmux.wait_for("Forked to a new session")
    screen = tmux.visible()
    assert "\nlist files\n" in screen and "The tool said hello." not in screen
    tmux.keys("Enter")
    tmux.wait_for("Answer in the fork.")

    tmux.keys("C-c", "C-c")
    tmux.wait_for("EXIT=0")
    assert (root / "before.txt").read_text() == (root / "after.txt").read_text()
    sessions = sorted((root / "agent" / "sessions").glob("*/*.jsonl"))
    assert len(sessions) == 2
