"""The terminal: raw mode in and out, reading keys on Trio, writing frames.

:func:`open_terminal` puts the terminal in raw mode (as Node's ``setRawMode``: no echo, no
line buffering, no signals from keys, so Ctrl+C and Ctrl+Z arrive as keys) and turns on
bracketed paste and the Kitty keyboard protocol's "disambiguate" level; leaving it, on every
path (a return, an exception, a cancellation from SIGTERM or Ctrl+C), turns them off, shows
the cursor and restores the terminal's attributes exactly as they were.

Reading never changes the file's flags (stdin is shared with the shell, which would inherit an
``O_NONBLOCK``): :meth:`Terminal.read` waits with :func:`trio.lowlevel.wait_readable` and then
reads what is there. Writes go through a worker thread, so a terminal that stops reading
(a paused tmux pane, a full pty buffer) blocks neither the event loop nor the input.
"""

from __future__ import annotations

import os
import signal
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import trio

__all__ = [
    "TERMINAL_SETUP",
    "TERMINAL_TEARDOWN",
    "Terminal",
    "open_terminal",
    "raw_attributes",
]

TERMINAL_SETUP: Final = "\x1b[?2004h\x1b[>1u\x1b[?25l"
"""Bracketed paste on, Kitty keyboard protocol (disambiguate) pushed, cursor hidden."""
TERMINAL_TEARDOWN: Final = "\x1b[?2004l\x1b[<u\x1b[?25h"
"""Bracketed paste off, Kitty flags popped, cursor shown."""
READ_SIZE: Final = 65536


def raw_attributes(attrs: list[object]) -> list[object]:
    """``attrs`` (from ``tcgetattr``) changed as libuv's raw mode changes them: input not
    translated or flow-controlled, 8-bit characters, no echo, no canonical mode, no signal
    keys; output post-processing kept (a ``\\n`` still moves to the next line's start)."""
    new = list(attrs)
    iflag, cflag, lflag = int(new[0]), int(new[2]), int(new[3])  # type: ignore[call-overload]
    iflag &= ~(termios.BRKINT | termios.ICRNL | termios.INPCK | termios.ISTRIP | termios.IXON)
    cflag |= termios.CS8
    lflag &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
    new[0], new[2], new[3] = iflag, cflag, lflag
    cc = list(new[6])  # type: ignore[call-overload]
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    new[6] = cc
    return new


class Terminal:
    """A terminal in raw mode (made by :func:`open_terminal`)."""

    def __init__(self, fd_in: int, fd_out: int, saved: list[object] | None) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self._saved = saved
        self._raw = False

    def size(self) -> tuple[int, int]:
        """(columns, rows); 80 x 24 when the output is not a terminal."""
        try:
            size = os.get_terminal_size(self.fd_out)
        except OSError:
            return 80, 24
        return max(1, size.columns), max(1, size.lines)

    def enter_raw(self) -> None:
        """Raw mode and the terminal features on (idempotent)."""
        if self._saved is not None:
            termios.tcsetattr(self.fd_in, termios.TCSANOW, raw_attributes(self._saved))  # type: ignore[arg-type]
        self.write_now(TERMINAL_SETUP)
        self._raw = True

    def leave_raw(self) -> None:
        """The terminal as it was found (idempotent; safe in ``finally``)."""
        if not self._raw:
            return
        self._raw = False
        try:
            self.write_now(TERMINAL_TEARDOWN)
        finally:
            if self._saved is not None:
                termios.tcsetattr(self.fd_in, termios.TCSADRAIN, self._saved)  # type: ignore[arg-type]

    def write_now(self, data: str) -> None:
        """Write ``data`` before returning (blocking; for setup and teardown)."""
        _write_all(self.fd_out, data.encode("utf-8", "replace"))

    async def write(self, data: str) -> None:
        """Write ``data`` in a worker thread (a stalled terminal blocks only this call)."""
        if data:
            await trio.to_thread.run_sync(_write_all, self.fd_out, data.encode("utf-8", "replace"))

    async def read(self) -> bytes:
        """The bytes available next (waits for some); ``b""`` at end of input."""
        while True:
            await trio.lowlevel.wait_readable(self.fd_in)
            try:
                return os.read(self.fd_in, READ_SIZE)
            except BlockingIOError:  # someone else read it first
                continue
            except OSError:  # the pty's other side closed (EIO)
                return b""

    def suspend(self) -> None:
        """Ctrl+Z: restore the terminal, stop the process (as the shell's job control would)
        and put raw mode back once continued."""
        self.leave_raw()
        os.kill(os.getpid(), signal.SIGSTOP)
        self.enter_raw()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@contextmanager
def open_terminal(fd_in: int, fd_out: int) -> Iterator[Terminal]:
    """A :class:`Terminal` in raw mode for the block; restored on every way out.

    When ``fd_in`` is not a terminal the attributes are left alone (the escape sequences are
    still written to ``fd_out``).
    """
    try:
        saved: list[object] | None = termios.tcgetattr(fd_in)
    except termios.error:
        saved = None
    terminal = Terminal(fd_in, fd_out, saved)
    try:
        terminal.enter_raw()
        yield terminal
    finally:
        terminal.leave_raw()
