"""A scripted coding session end to end: the faux model reads a file, edits it, runs its tests
with bash and greps for a symbol, in a temporary git repository, with the real tools.

The same script runs twice: through the Python API (an AgentSession with
``create_coding_tools`` and the grep tool) and through ``pitrio -p`` as a real subprocess,
scripted from outside with ``PITRIO_FAUX_SCRIPT``. Each time the repository really changes,
the tests really run, and the session file records every step.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from pitrio.providers import (
    ProviderRegistry,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.sessions import SessionManager, open_agent_session
from pitrio.tools.builtin import create_coding_tools, create_tool

CLI_GUARD_S = 60
"""A hung command fails the test instead of hanging the suite (not a timing assertion)."""

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    'if __name__ == "__main__":\n    unittest.main()\n'
)
FINAL_ANSWER = "Fixed add(): it subtracted. The tests pass."


def make_repo(root: Path) -> Path:
    """A git repository with a bug, its failing test, and an ignored copy of the code."""
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "test_calc.py").write_text(TESTS)
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "calc.py").write_text(BUGGY)  # ignored: grep must not report it
    return repo


def steps() -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of the script, in order."""
    return [
        ("read", {"path": "calc.py"}),
        ("edit", {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}),
        ("bash", {"command": f"{sys.executable} -m unittest -q test_calc 2>&1"}),
        ("grep", {"pattern": "def add"}),
    ]


def wire_script() -> list[Any]:
    """The script as the JSON ``PITRIO_FAUX_SCRIPT`` reads (pi's assistant blocks)."""
    responses: list[Any] = [
        {"content": [{"type": "toolCall", "id": f"call-{i}", "name": name, "arguments": args}]}
        for i, (name, args) in enumerate(steps())
    ]
    return [*responses, FINAL_ANSWER]


def session_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_recorded_session(lines: list[dict[str, Any]], repo: Path) -> None:
    """The session file holds the header, then every message of the coding session in order."""
    assert lines[0]["type"] == "session"
    assert lines[0]["cwd"] == str(repo)
    messages = [entry["message"] for entry in lines if entry["type"] == "message"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", *["assistant", "toolResult"] * 4, "assistant"]
    calls = [m["content"][0] for m in messages if m["role"] == "assistant"][:4]
    assert [(c["name"], c["arguments"]) for c in calls] == steps()
    results = {m["toolName"]: m for m in messages if m["role"] == "toolResult"}
    assert not any(r["isError"] for r in results.values()), results
    assert "return a - b" in results["read"]["content"][0]["text"]
    assert "-2     return a - b\n+2     return a + b" in results["edit"]["details"]["diff"]
    bash_output = results["bash"]["content"][0]["text"]
    assert "Ran 1 test" in bash_output
    assert "OK" in bash_output
    assert results["grep"]["content"][0]["text"] == "calc.py:1: def add(a, b):"
    final = messages[-1]
    assert final["stopReason"] == "stop"
    assert final["content"] == [{"type": "text", "text": FINAL_ANSWER}]
    # Each entry hangs off the one before: one branch, nothing lost.
    entries = lines[1:]
    for parent, child in itertools.pairwise(entries):
        assert child["parentId"] == parent["id"]


async def test_python_api_runs_a_scripted_coding_session(tmp_path: Path) -> None:
    """An AgentSession with the coding tools reads, edits, tests and greps a real repo."""
    repo = make_repo(tmp_path)
    registry = ProviderRegistry()
    faux = register_faux_provider(registry=registry)
    faux.set_responses(
        [
            *(
                faux_assistant_message(
                    faux_tool_call(name, args, id=f"call-{i}"), stop_reason="toolUse"
                )
                for i, (name, args) in enumerate(steps())
            ),
            faux_assistant_message(FINAL_ANSWER),
        ]
    )
    manager = SessionManager.create(str(repo), str(tmp_path / "sessions"))
    tools = [*create_coding_tools(str(repo)), create_tool("grep", str(repo))]
    async with open_agent_session(
        session_manager=manager, model=faux.get_model(), tools=tools, registry=registry
    ) as session:
        await session.prompt("The add test fails. Fix it.")
        assert session.get_last_assistant_text() == FINAL_ANSWER
        path = session.session_file
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert path is not None
    check_recorded_session(session_lines(Path(path)), repo)


def cli_env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PITRIO_", "PI_"))}
    env["HOME"] = str(root / "home")
    env["PITRIO_CODING_AGENT_DIR"] = str(root / "agent")
    env.update(extra)
    return env


async def test_pitrio_print_mode_runs_the_same_session_with_the_real_tools(
    tmp_path: Path,
) -> None:
    """``pitrio -p`` with a faux script drives the real tools; the answer and file say so."""
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(wire_script()))
    env = cli_env(tmp_path, PITRIO_FAUX_SCRIPT=str(script))
    with trio.fail_after(CLI_GUARD_S):
        done = await trio.run_process(
            [sys.executable, "-m", "pitrio", "--provider", "faux", "--tools",
             "read,bash,edit,write,grep", "-p", "The add test fails. Fix it."],
            stdin=b"",
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
            cwd=repo,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == FINAL_ANSWER + "\n"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    files = sorted((tmp_path / "agent" / "sessions").glob("*/*.jsonl"))
    assert len(files) == 1
    check_recorded_session(session_lines(files[0]), repo)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("not json", "not JSON"),
        ('{"responses": 3}', "expected a list of responses"),
        ('[{"content": [{"type": "image"}]}]', "response 1: not a text, thinking or toolCall"),
    ],
)
def test_a_broken_faux_script_is_one_error_line(tmp_path: Path, script: str, message: str) -> None:
    """A faux script that cannot be used stops the command with its reason, exit status 1."""
    (tmp_path / "s.json").write_text(script)
    (tmp_path / "p").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pitrio", "--provider", "faux", "-p", "hi"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, PITRIO_FAUX_SCRIPT=str(tmp_path / "s.json")),
        cwd=tmp_path / "p",
        stdin=subprocess.DEVNULL,
        timeout=CLI_GUARD_S,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: Invalid faux script {tmp_path / 's.json'}: ")
    assert message in done.stderr
