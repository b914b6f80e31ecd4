"""The bash tool: pi 0.73.1's output for the captured cases, streaming, timeouts, process groups."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import trio

from pitrio.codec import to_wire
from pitrio.tools import AgentToolResult
from pitrio.tools.builtin._bash import BashTool, OutputAccumulator, SpawnContext
from pitrio.tools.builtin._shell import (
    BashExecutionError,
    LocalBashOperations,
    resolve_shell,
    shell_env,
)

from pi_data import load_json

CAPTURE = load_json("tools/bash_cases.json")
CASES = {case["name"]: case for case in CAPTURE["cases"]}
TMPFILE = re.compile(r"/[^\s\"]*/pitrio-bash-[0-9a-f]{16}\.log")


def _normalise(text: str, root: Path) -> tuple[str, list[str]]:
    paths = TMPFILE.findall(text)
    return TMPFILE.sub("$TMPFILE", text).replace(str(root), "$ROOT"), paths


async def _run(
    tool: BashTool, args: dict[str, Any]
) -> tuple[AgentToolResult, list[AgentToolResult]]:
    updates: list[AgentToolResult] = []
    result = await tool.execute("call-1", args, updates.append)
    return result, updates


def test_tool_definition_matches_pi() -> None:
    """Name, label, description and parameter schema are pi's."""
    tool = BashTool(cwd="/")
    assert {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": dict(tool.parameters),
    } == CAPTURE["tool"]


@pytest.mark.parametrize("name", sorted(CASES))
async def test_output_matches_pi(name: str, tmp_path: Path) -> None:
    """Each captured command gives pi's text, details and full-output file."""
    case = CASES[name]
    prefix = case.get("options", {}).get("commandPrefix")
    tool = BashTool(cwd=str(tmp_path), command_prefix=prefix)
    try:
        result, _ = await _run(tool, case["args"])
    except BashExecutionError as exc:
        assert "error" in case, f"pi succeeded: {case.get('result')}"
        text, paths = _normalise(str(exc), tmp_path)
        assert text == case["error"]
    else:
        assert "result" in case, f"pi failed: {case.get('error')}"
        text, paths = _normalise(json.dumps(to_wire(result), ensure_ascii=False), tmp_path)
        assert json.loads(text) == case["result"]
    if "fullOutputSha256" in case:
        assert paths, "no full output file named"
        assert _sha256(paths[0]) == case["fullOutputSha256"]
        os.unlink(paths[0])
    else:
        assert not paths


async def test_streams_updates_with_the_output_so_far(tmp_path: Path) -> None:
    """The first update is empty, later ones carry the output, the last one all of it."""
    tool = BashTool(cwd=str(tmp_path))
    result, updates = await _run(tool, {"command": "echo one; echo two"})
    assert updates[0] == AgentToolResult(content=())
    assert len(updates) >= 2
    assert updates[-1].content[0].text == "one\ntwo\n"  # type: ignore[union-attr]
    assert updates[-1].details == {}
    assert result.content[0].text == "one\ntwo\n"  # type: ignore[union-attr]


async def test_updates_name_the_full_output_file_once_truncated(tmp_path: Path) -> None:
    """An update of truncated output carries pi's truncation details and the temp file path."""
    tool = BashTool(cwd=str(tmp_path))
    result, updates = await _run(tool, {"command": "seq 1 2500"})
    last = updates[-1].details
    assert last["truncation"]["truncated"] is True
    assert last["fullOutputPath"] == result.details["fullOutputPath"]
    os.unlink(result.details["fullOutputPath"])


async def test_command_prefix_runs_first(tmp_path: Path) -> None:
    """The command prefix is a line of its own before the command, as pi's shellCommandPrefix."""
    tool = BashTool(cwd=str(tmp_path), command_prefix="set -e\nfalse")
    with pytest.raises(BashExecutionError) as info:
        await _run(tool, {"command": "echo unreachable"})
    assert str(info.value) == "(no output)\n\nCommand exited with code 1"
    assert info.value.exit_code == 1


async def test_spawn_hook_changes_the_environment(tmp_path: Path) -> None:
    """A spawn hook's context is what runs."""

    def hook(context: SpawnContext) -> SpawnContext:
        return SpawnContext(command=context.command, cwd=context.cwd, env={**context.env, "X": "7"})

    tool = BashTool(cwd=str(tmp_path), spawn_hook=hook)
    result, _ = await _run(tool, {"command": "echo $X"})
    assert result.content[0].text == "7\n"  # type: ignore[union-attr]


async def test_missing_working_directory(tmp_path: Path) -> None:
    """A cwd that does not exist gives pi's message."""
    missing = tmp_path / "gone"
    with pytest.raises(BashExecutionError) as info:
        await _run(BashTool(cwd=str(missing)), {"command": "true"})
    assert str(info.value) == (
        f"Working directory does not exist: {missing}\nCannot execute bash commands."
    )


def test_shell_resolution(tmp_path: Path) -> None:
    """An explicit shell path wins, a missing one is an error, else /bin/bash."""
    assert resolve_shell("/bin/sh").shell == "/bin/sh"
    with pytest.raises(BashExecutionError, match="Custom shell path not found: /nope"):
        resolve_shell("/nope")
    assert resolve_shell(None).shell == "/bin/bash"
    assert shell_env(str(tmp_path))["PATH"].split(os.pathsep)[0] == str(tmp_path)


async def test_custom_shell_path(tmp_path: Path) -> None:
    """The shell_path option picks the shell that runs the command."""
    tool = BashTool(cwd=str(tmp_path), operations=LocalBashOperations(shell_path="/bin/sh"))
    result, _ = await _run(tool, {"command": 'echo "$0"'})
    assert result.content[0].text == "/bin/sh\n"  # type: ignore[union-attr]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes once it is not running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _read_pids(pid_file: Path) -> list[int]:
    # The script writes the file under another name and renames it, so it is whole or absent.
    return [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []


async def _wait_for_pids(pid_file: Path, count: int) -> list[int]:
    # Polls a real subprocess's side effect (the pids it wrote); nothing else can signal it.
    while len(pids := _read_pids(pid_file)) != count:  # noqa: ASYNC110
        await trio.sleep(0.01)
    return pids


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_abort_and_timeout_kill_the_whole_process_group(tmp_path: Path, how: str) -> None:
    """Cancelling or timing out a command kills its grandchildren too; none are left behind."""
    pid_file = tmp_path / "pids"
    command = (
        f"sleep 1000 & a=$!; sleep 1000 & b=$!; echo $$ $a $b > {pid_file}.tmp; "
        f"mv {pid_file}.tmp {pid_file}; wait"
    )
    tool = BashTool(cwd=str(tmp_path))
    pids: list[int] = []
    with trio.fail_after(10):
        if how == "cancel":
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    await _run(tool, {"command": command})

                nursery.start_soon(run)
                pids = await _wait_for_pids(pid_file, 3)
                nursery.cancel_scope.cancel()
        else:
            async with trio.open_nursery() as nursery:
                outcome: list[BaseException] = []

                async def run_with_timeout() -> None:
                    try:
                        await _run(tool, {"command": command, "timeout": 2})
                    except BashExecutionError as exc:
                        outcome.append(exc)

                nursery.start_soon(run_with_timeout)
                pids = await _wait_for_pids(pid_file, 3)
            assert [str(e) for e in outcome] == ["Command timed out after 2 seconds"]
    assert len(pids) == 3
    # The group was signalled before the call returned; dying takes the kernel a moment, so wait
    # for it (a sleep 1000 that was missed would outlive the deadline by far).
    with trio.fail_after(5):
        while [pid for pid in pids if _alive(pid)]:  # noqa: ASYNC110 - real processes
            await trio.sleep(0.01)


async def test_background_child_does_not_hold_the_call(tmp_path: Path) -> None:
    """A background child that keeps the pipe open does not keep the call from returning."""
    pid_file = tmp_path / "pid"
    tool = BashTool(cwd=str(tmp_path))
    with trio.fail_after(5):
        result, _ = await _run(tool, {"command": f"sleep 1000 & echo $! > {pid_file}; echo done"})
    assert result.content[0].text == "done\n"  # type: ignore[union-attr]
    # As in pi, the background child is left running; end it here.
    os.kill(int(pid_file.read_text()), 9)


def test_accumulator_keeps_a_bounded_tail() -> None:
    """Megabytes of output keep only a bounded tail in memory, with exact totals."""
    output = OutputAccumulator(max_lines=10, max_bytes=100)
    for index in range(10_000):
        output.append(f"line {index}\n".encode())
    output.finish()
    snapshot = output.snapshot()
    assert snapshot.truncation.total_lines == 10_001
    assert snapshot.content.endswith("line 9999\n")
    assert len(output._tail_text) <= 4 * 100 + 20
    assert output.temp_file_path is not None
