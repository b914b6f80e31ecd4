"""Rough edges a new user hits: each answered with one line on stderr and the right exit status,
never a traceback or a silent success; help texts that tell the truth about what exists."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

CLI_GUARD_S = 60
"""A hung command fails the test instead of hanging the suite (not a timing assertion)."""


def _pitrio(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m pitrio ARGS`` in ``tmp_path/project``, with a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PITRIO_", "PI_"))}
    env["HOME"] = str(tmp_path / "home")
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pitrio", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=CLI_GUARD_S,
        check=False,
    )


def test_serve_on_a_taken_port_says_so_and_exits_1(tmp_path: Path) -> None:
    """``pitrio serve --port P`` with P taken names the port and suggests ``--port 0``."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _pitrio(tmp_path, "serve", "--port", str(port), "--provider", "faux")
    assert done.returncode == 1
    assert done.stderr == f"pitrio serve: port {port} is in use; try --port 0\n"


def test_an_unusable_session_directory_is_named_with_the_way_out(tmp_path: Path) -> None:
    """A session directory that cannot be created is named, ``--no-session`` suggested,
    exit status 1, no errno text alone and no traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "sessions"
    done = _pitrio(tmp_path, "--provider", "faux", "--session-dir", str(folder), "-p", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"Error: cannot use the session directory {folder} (")
    assert "--no-session" in line


def test_print_mode_with_no_message_and_empty_stdin_is_a_usage_error(tmp_path: Path) -> None:
    """``pitrio -p`` with nothing to send says so on stderr and exits 2."""
    done = _pitrio(tmp_path, "--provider", "faux", "--no-session", "-p", stdin="")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "no message given and nothing piped on stdin" in done.stderr


def test_print_mode_with_only_piped_text_still_answers(tmp_path: Path) -> None:
    """``pitrio -p`` with text on stdin sends it (the usage error is for nothing at all)."""
    done = _pitrio(tmp_path, "--provider", "faux", "--no-session", "-p", stdin="piped\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: piped\n"


def test_help_names_the_serve_and_load_commands(tmp_path: Path) -> None:
    """``pitrio --help`` lists ``serve`` and ``load`` among the commands."""
    done = _pitrio(tmp_path, "--help")
    assert done.returncode == 0
    commands = done.stdout.split("commands:", 1)[1].split("\n\n", 1)[0]
    assert "pitrio serve" in commands
    assert "pitrio load" in commands
    assert "pitrio serve" in done.stdout.split("\n\n", 1)[0]  # the usage lines


def test_theme_flag_does_not_claim_extensions_are_missing(tmp_path: Path) -> None:
    """``--theme`` is the interactive mode's: print mode takes it silently (as pi's), and
    the help says nothing is missing."""
    done = _pitrio(tmp_path, "--provider", "faux", "--no-session", "--theme", "x.json", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == "You said: hi\n"
    help_text = _pitrio(tmp_path, "--help").stdout
    # "--extension PATH, -e PATH" (Python 3.11) or "--extension, -e PATH" (3.13's argparse)
    extension_help = help_text.split("--extension", 1)[1].split("\n  -", 1)[0]
    assert "load an extension" in extension_help
    assert "not supported" not in extension_help
    assert "not supported yet" not in help_text


def test_serve_with_an_unusable_session_directory_names_it(tmp_path: Path) -> None:
    """``pitrio serve --session-dir`` naming a folder that cannot be created says which, and
    how to pick another, exit status 1."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "sessions"
    done = _pitrio(tmp_path, "serve", "--port", "0", "--session-dir", str(folder))
    assert done.returncode == 1
    assert done.stderr == (
        f"pitrio serve: cannot use the session directory (Not a directory: {folder}); "
        "name another with --session-dir\n"
    )
