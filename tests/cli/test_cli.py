"""The ``pitrio`` command, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys

import pitrio
from pitrio.actors import AgentEvent
from pitrio.codec import from_wire, loads


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pitrio", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,  # the command reads a prompt from a stdin that is not a TTY
        text=True,
        timeout=60,
        check=False,
    )


def test_version_prints_the_package_version() -> None:
    """``pitrio --version`` prints the version and exits 0."""
    done = _run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"pitrio {pitrio.__version__}"


def test_demo_streams_a_tool_calling_conversation() -> None:
    """``pitrio demo`` shows the question, the tool call, its result and the final answer."""
    done = _run("demo", "--speed", "0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("user> ") < out.index("(tool call)> ") < out.index("tool> get_weather")
    assert out.rstrip().endswith("A good afternoon for a walk along the Tejo.")


def test_demo_json_prints_pi_agent_events() -> None:
    """``pitrio demo --json`` prints one pi AgentEvent per line, from agent_start to agent_end."""
    done = _run("demo", "--json", "--speed", "0")
    assert done.returncode == 0, done.stderr
    events = [from_wire(AgentEvent, loads(line)) for line in done.stdout.splitlines()]
    assert events[0].type == "agent_start"
    assert events[-1].type == "agent_end"
    assert sum(e.type == "tool_execution_end" for e in events) == 1


def test_no_command_prints_usage_and_fails() -> None:
    """Running ``pitrio`` with no command prints usage to stderr and exits 2."""
    done = _run()
    assert done.returncode == 2
    assert "usage: pitrio" in done.stderr
