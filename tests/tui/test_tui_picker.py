"""``-r`` on a terminal: the session selector on the screen (pi's), through a pty."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
from tui_harness import env_for, set_size
from tui_screen import Screen

from pitrio.tui import Keybindings, Theme, open_terminal, pick_session

ROOT = Path(__file__).resolve().parents[2]

SESSIONS = [
    SimpleNamespace(
        id=f"id-{n}",
        name=None,
        first_message=text,
        modified=datetime(2026, 1, n),
        message_count=n * 2,
        path=f"/tmp/{n}.jsonl",
    )
    for n, text in ((3, "newest talk"), (2, "second talk"), (1, "oldest talk"))
]


@asynccontextmanager
async def pty_screen() -> AsyncIterator[tuple[int, int, Screen, list[trio.Event]]]:
    master, slave = os.openpty()
    set_size(slave, 80, 24)
    screen = Screen(80, 24)
    fed = [trio.Event()]

    async def pump() -> None:
        while True:
            await trio.lowlevel.wait_readable(master)
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            screen.feed(data)
            fed[0].set()
            fed[0] = trio.Event()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump)
            yield master, slave, screen, fed
            nursery.cancel_scope.cancel()
    finally:
        os.close(master)
        os.close(slave)


async def wait_text(screen: Screen, fed: list[trio.Event], text: str, present: bool = True) -> None:
    with trio.fail_after(30):
        while (text in screen.text()) != present:
            await fed[0].wait()


@pytest.mark.usefixtures("autojump_clock")
async def test_picker_searches_and_answers_the_chosen_session() -> None:
    async with pty_screen() as (master, slave, screen, fed):
        answer: list[Any] = []

        async def run() -> None:
            with open_terminal(slave, slave) as terminal:
                answer.append(
                    await pick_session(SESSIONS, terminal, Theme.builtin("dark"), Keybindings())
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await wait_text(screen, fed, "→ newest talk")
            assert "Resume session" in screen.text()
            assert "2026-01-02 00:00 · 4 messages" in screen.text()
            os.write(master, b"second")
            await wait_text(screen, fed, "→ second talk")
            os.write(master, b"\r")
        assert answer == [SESSIONS[1]]
        await wait_text(screen, fed, "Resume session", present=False)  # erased


@pytest.mark.usefixtures("autojump_clock")
async def test_picker_cancelled_answers_none() -> None:
    async with pty_screen() as (master, slave, screen, fed):
        answer: list[Any] = []

        async def run() -> None:
            with open_terminal(slave, slave) as terminal:
                answer.append(
                    await pick_session(SESSIONS, terminal, Theme.builtin("dark"), Keybindings())
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await wait_text(screen, fed, "→ newest talk")
            os.write(master, b"\x1b[B\x1b")
        assert answer == [None]


async def test_resume_flag_picks_on_the_screen_and_opens_that_session(tmp_path: Path) -> None:
    """The command: ``-r`` on a terminal shows the selector (no numbered list) and the chosen
    session's messages are in the chat. A child process on a pty in real time (the app reads
    signals, which only the main thread may); ``fail_after`` only guards against a hang."""
    (tmp_path / "project").mkdir()
    env = env_for(tmp_path, [], None)
    del env["PITRIO_FAUX_SCRIPT"]  # the echoing faux model
    env["PYTHONPATH"] = str(ROOT)
    cwd = tmp_path / "project"
    for text in ("alpha question", "beta question"):
        await trio.run_process(
            [sys.executable, "-m", "pitrio", "--provider", "faux", "-p", text],
            cwd=cwd,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            stdin=b"",
        )
    master, slave = os.openpty()
    set_size(slave, 80, 24)
    screen = Screen(80, 24)
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "pitrio", "--provider", "faux", "-r"],
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )

        async def until(text: str) -> None:
            with trio.fail_after(60):
                while text not in screen.text():
                    await trio.lowlevel.wait_readable(master)
                    screen.feed(os.read(master, 65536))

        await until("Resume session")
        assert "→ beta question" in screen.text()  # the most recent first
        assert "Resume which session" not in screen.text()
        os.write(master, b"alpha")
        await until("→ alpha question")
        os.write(master, b"\r")
        await until("You said: alpha question")
        assert "Resume session" not in screen.text()
        os.write(master, b"\x03\x03")
        with trio.fail_after(60):
            code = await process.wait()
        assert code == 0
    finally:
        os.close(master)
        os.close(slave)
