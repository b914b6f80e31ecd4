"""pi's mode selection: a terminal on stdin and stdout and no -p / --mode is interactive."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pitrio.cli._interactive as interactive
from pitrio.cli._main import parse_cli_args, run_agent_command


class TerminalOut(io.BytesIO):
    def isatty(self) -> bool:
        return True


def run(
    argv: list[str], *, stdin_tty: bool, out: io.BytesIO, piped: str | None = None
) -> tuple[int, str]:
    err = io.StringIO()
    code = run_agent_command(
        parse_cli_args(argv),
        stdin_text=lambda: piped,
        out=out,
        err=err,
        env={"HOME": "/nonexistent", "PITRIO_CODING_AGENT_DIR": "/nonexistent/agent"},
        cwd=os.getcwd(),
        stdin_is_tty=stdin_tty,
    )
    return code, err.getvalue()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    def fake(args: Any, **kwargs: Any) -> int:
        seen.append(args)
        return 0

    monkeypatch.setattr(interactive, "run_interactive_command", fake)
    return seen


@pytest.mark.parametrize(
    ("argv", "messages"),
    [([], ()), (["hello", "again"], ("hello", "again")), (["--provider", "faux"], ())],
)
def test_a_terminal_on_both_sides_is_interactive(
    calls: list[Any], argv: list[str], messages: tuple[str, ...]
) -> None:
    """The messages go to the interactive mode (which sends them first)."""
    code, _ = run(argv, stdin_tty=True, out=TerminalOut())
    assert code == 0
    assert [tuple(args.messages) for args in calls] == [messages]


@pytest.mark.parametrize("argv", [["-p", "hi"], ["--mode", "json", "hi"]])
def test_print_and_json_modes_stay_non_interactive(calls: list[Any], argv: list[str]) -> None:
    run([*argv, "--provider", "faux", "--no-session"], stdin_tty=True, out=TerminalOut())
    assert calls == []


def test_stdout_not_a_terminal_is_not_interactive(calls: list[Any]) -> None:
    code, err = run([], stdin_tty=True, out=io.BytesIO())
    assert calls == [] and code == 2
    assert "needs a terminal on stdin and stdout" in err


def test_piped_stdin_stays_print_mode(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITRIO_")}
    env["HOME"] = str(tmp_path)
    env["PITRIO_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-m", "pitrio", "--provider", "faux", "--no-session"],
        input=b"piped words",
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"You said: piped words\n"
