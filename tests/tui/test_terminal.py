"""Raw mode in and out, suspend, and themes."""

from __future__ import annotations

import json
import os
import signal
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

import pitrio.tui._terminal as terminal_module
from pitrio.tui import Theme, ThemeError, load_theme, open_terminal


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def test_raw_mode_is_undone_on_an_exception(pty: tuple[int, int]) -> None:
    master, slave = pty
    before = termios.tcgetattr(slave)
    with pytest.raises(RuntimeError), open_terminal(slave, slave):
        raw = termios.tcgetattr(slave)
        assert not raw[3] & (termios.ECHO | termios.ICANON | termios.ISIG)
        raise RuntimeError("boom")
    assert termios.tcgetattr(slave) == before
    written = os.read(master, 4096)
    assert written.startswith(b"\x1b[?2004h") and written.endswith(b"\x1b[?25h")


def test_suspend_restores_the_terminal_while_stopped(
    pty: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+Z: the shell gets its terminal back while the process is stopped; raw mode
    returns on continue."""
    _, slave = pty
    before = termios.tcgetattr(slave)
    seen: list[tuple[int, list[object]]] = []
    monkeypatch.setattr(
        terminal_module.os, "kill", lambda pid, sig: seen.append((sig, termios.tcgetattr(slave)))
    )
    with open_terminal(slave, slave) as terminal:
        terminal.suspend()
        assert not termios.tcgetattr(slave)[3] & termios.ECHO
    assert seen == [(signal.SIGSTOP, before)]


def test_a_theme_file_overrides_tokens_and_resolves_vars(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(
        json.dumps(
            {"name": "mine", "vars": {"hot": "#ff0000"}, "colors": {"accent": "hot", "muted": 244}}
        )
    )
    theme = load_theme("mine", (str(tmp_path),))
    assert theme.fg("accent", "x") == "\x1b[38;2;255;0;0mx\x1b[39m"
    assert theme.fg("muted", "x") == "\x1b[38;5;244mx\x1b[39m"
    assert theme.fg("error", "x") == Theme.builtin("dark").fg("error", "x")  # from dark


def test_a_bad_theme_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"colors": {"accent": "nope"}}))
    with pytest.raises(ThemeError):
        load_theme(str(tmp_path / "bad.json"))
    with pytest.raises(ThemeError):
        load_theme("missing-theme")
