"""The interactive mode, in process, on a pseudo-terminal read by a terminal emulator.

:func:`open_tui` starts :func:`~pitrio.cli._interactive.run_interactive_session` on the
slave side of a pty (as the real command would run on a terminal) with the faux provider
playing a script, reads the master side into a pyte screen, and lets the test type bytes and
wait for what the screen shows. Run it under ``autojump_clock``: the faux stream's pacing and
the UI's frame budget are then virtual time.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import select
import struct
import termios
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from tui_screen import Screen

from pitrio.cli._extensions import load_cli_extensions
from pitrio.cli._faux_cli import FAUX_SCRIPT_ENV, FAUX_SPEED_ENV
from pitrio.cli._interactive import run_interactive_session
from pitrio.cli._main import parse_cli_args
from pitrio.cli._setup import build_runtime
from pitrio.providers import ENV_API_KEY_VARS, TextContent, UserMessage
from pitrio.sessions import SessionMessageEntry, load_session_file
from pitrio.tui import TuiExtensionUI

WAIT_LIMIT = 60.0
"""Virtual seconds a wait may take before the test fails (a guard, not a synchronisation)."""


def set_size(fd: int, columns: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def env_for(root: Path, script: Sequence[Any], speed: float | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITRIO_")}
    for names in ENV_API_KEY_VARS.values():
        for name in names:
            env.pop(name, None)
    env["HOME"] = str(root / "home")
    env["PITRIO_CODING_AGENT_DIR"] = str(root / "agent")
    script_file = root / "faux.json"
    script_file.write_text(json.dumps(list(script)))
    env[FAUX_SCRIPT_ENV] = str(script_file)
    if speed is not None:
        env[FAUX_SPEED_ENV] = str(speed)
    return env


@attrs.define
class Tui:
    """A running interactive mode (see :func:`open_tui`)."""

    master: int
    slave: int
    screen: Screen
    root: Path
    fed: trio.Event = attrs.Factory(trio.Event)
    exit_code: int | None = None
    finished: trio.Event = attrs.Factory(trio.Event)
    raw_output: bytearray = attrs.Factory(bytearray)
    ui: TuiExtensionUI = attrs.Factory(TuiExtensionUI)
    original_attrs: list[Any] = attrs.Factory(list)
    final_attrs: list[Any] = attrs.Factory(list)
    """The terminal's attributes once the UI ended (read before the pty is closed)."""

    @property
    def app(self) -> Any:
        app = self.ui.app
        assert app is not None
        return app

    def type(self, data: bytes | str) -> None:
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def text(self) -> str:
        return self.screen.text()

    def transcript(self) -> str:
        return "\n".join(self.screen.history())

    async def wait_for(self, predicate: Callable[[], bool] | str) -> None:
        """Return once ``predicate()`` holds (or the text is on the screen), checked each time
        the UI wrote something."""
        check = (lambda: predicate in self.text()) if isinstance(predicate, str) else predicate
        with trio.fail_after(WAIT_LIMIT):
            while not check():
                await self.fed.wait()
        return None

    async def wait_exit(self) -> int | None:
        with trio.fail_after(WAIT_LIMIT):
            await self.finished.wait()
        return self.exit_code

    def session_files(self) -> list[Path]:
        return sorted((self.root / "agent" / "sessions").glob("*/*.jsonl"))

    def user_texts(self) -> list[str]:
        (path,) = self.session_files()
        texts = []
        for entry in load_session_file(str(path)).entries:
            if isinstance(entry, SessionMessageEntry) and isinstance(entry.message, UserMessage):
                content = entry.message.content
                if isinstance(content, str):
                    texts.append(content)
                else:
                    texts.append("".join(b.text for b in content if isinstance(b, TextContent)))
        return texts

    def roles(self) -> list[str]:
        (path,) = self.session_files()
        return [
            entry.message.role
            for entry in load_session_file(str(path)).entries
            if isinstance(entry, SessionMessageEntry)
        ]


async def _pump(tui: Tui) -> None:
    while True:
        await trio.lowlevel.wait_readable(tui.master)
        try:
            data = os.read(tui.master, 65536)
        except OSError:
            return
        if not data:
            return
        tui.raw_output += data
        tui.screen.feed(data)
        tui.fed.set()
        tui.fed = trio.Event()


@asynccontextmanager
async def open_tui(
    root: Path,
    script: Sequence[Any] = (),
    *argv: str,
    speed: float | None = None,
    columns: int = 80,
    rows: int = 24,
    provider: str = "faux",
) -> AsyncIterator[Tui]:
    """Run the interactive mode on a ``columns`` x ``rows`` pty until the block ends (then
    it is asked to quit, and awaited)."""
    (root / "project").mkdir(exist_ok=True)
    env = env_for(root, script, speed)
    master, slave = os.openpty()
    set_size(slave, columns, rows)
    tui = Tui(master=master, slave=slave, screen=Screen(columns, rows), root=root)
    tui.original_attrs = termios.tcgetattr(slave)
    args = parse_cli_args(["--provider", provider, *argv])
    cwd = str(root / "project")
    ui = tui.ui
    err = io.StringIO()
    # The loader runs its own trio.run: in a thread of its own.
    runner, args = await trio.to_thread.run_sync(
        lambda: load_cli_extensions(args, cwd=cwd, env=env, err=err, ui=ui)
    )
    runtime = attrs.evolve(
        build_runtime(args, cwd=cwd, env=env, warn=lambda m: None, require_auth=False),
        extensions=runner,
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, tui)

            async def run() -> None:
                try:
                    tui.exit_code = await run_interactive_session(
                        runtime,
                        args=args,
                        ui=ui,
                        cwd=cwd,
                        fd_in=slave,
                        fd_out=slave,
                        err=err,
                    )
                finally:
                    tui.finished.set()
                    tui.fed.set()

            nursery.start_soon(run)
            await tui.wait_for(lambda: tui.ui.app is not None and "─" in tui.text())
            yield tui
            if not tui.finished.is_set():
                tui.type(b"\x03\x03")
                await tui.wait_exit()
            nursery.cancel_scope.cancel()
    finally:
        tui.final_attrs = termios.tcgetattr(slave)
        # What the UI wrote last (its teardown) may not have been pumped yet.
        while select.select([master], [], [], 0)[0]:
            data = os.read(master, 65536)
            if not data:
                break
            tui.raw_output += data
        os.close(master)
        os.close(slave)
