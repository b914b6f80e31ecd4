"""User bash (pi's ``!cmd`` / ``!!cmd``) in an AgentSession: real commands in the session's cwd,
recorded as ``bashExecution`` messages in pi's JSON shape, seen (or not) by the next LLM call,
kept back while a run streams, aborted with their process, truncated with a full-output file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from pitrio._exceptions import UsageError
from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    UserMessage,
    faux_assistant_message,
)
from pitrio.sessions import (
    BashExecutionMessage,
    SessionManager,
    SessionMessageEntry,
    bash_execution_to_text,
)
from pitrio.sessions.runtime._agent_session import AgentSession
from pitrio.sessions.runtime._bash_executor import BashResult, sanitize_output
from pitrio.tools.builtin import BashExecutionError

from session_helpers import file_manager, make_faux, open_session

# The message entries pi 0.73.1 wrote for the same commands (AgentSession.executeBash on an
# in-memory SessionManager; ids, timestamps and the temp file name left out).
PI_ECHO_EXIT_3 = {
    "role": "bashExecution",
    "command": "echo hi; exit 3",
    "output": "hi\n",
    "exitCode": 3,
    "cancelled": False,
    "truncated": False,
}
PI_EXCLUDED = {
    "role": "bashExecution",
    "command": "echo secret",
    "output": "secret\n",
    "exitCode": 0,
    "cancelled": False,
    "truncated": False,
    "excludeFromContext": True,
}
PI_CANCELLED = {
    "role": "bashExecution",
    "command": "echo start; sleep 30",
    "output": "start\n",
    "cancelled": True,
    "truncated": False,
}


class Recorder:
    """A faux response factory that keeps the context of every LLM call."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def __call__(self, context: Context, *_: Any) -> AssistantMessage:
        self.contexts.append(context)
        return faux_assistant_message(f"reply {len(self.contexts)}")


def user_texts(messages: list[Message]) -> list[str]:
    out = []
    for message in messages:
        if isinstance(message, UserMessage):
            content = message.content
            assert not isinstance(content, str)
            out.append("".join(b.text for b in content if isinstance(b, TextContent)))
    return out


def bash_entries(session: AgentSession) -> list[BashExecutionMessage]:
    return [
        e.message
        for e in session.session_manager.get_entries()
        if isinstance(e, SessionMessageEntry) and isinstance(e.message, BashExecutionMessage)
    ]


def file_messages(path: str) -> list[dict[str, Any]]:
    lines = Path(path).read_bytes().splitlines()
    entries = [orjson.loads(line) for line in lines[1:]]
    return [e["message"] for e in entries if e["type"] == "message"]


def without_timestamp(message: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(message.pop("timestamp"), int)
    return message


def in_memory(tmp_path: Path) -> SessionManager:
    return SessionManager.in_memory(str(tmp_path))


def project(tmp_path: Path) -> Any:
    manager = file_manager(tmp_path)
    os.makedirs(manager.get_cwd(), exist_ok=True)
    return manager


async def test_bang_command_is_recorded_and_the_next_call_sees_it(tmp_path: Path) -> None:
    """``!cmd`` runs for real, is saved as pi's bashExecution message entry, and the next LLM
    call gets it as user text before the prompt."""
    faux, registry = make_faux()
    recorder = Recorder()
    faux.set_responses([recorder])
    async with open_session(faux, registry, manager=project(tmp_path)) as session:
        result = await session.execute_bash("echo hi; exit 3")
        assert result == BashResult(output="hi\n", exit_code=3, cancelled=False, truncated=False)
        assert to_wire(result) == {
            "output": "hi\n",
            "exitCode": 3,
            "cancelled": False,
            "truncated": False,
        }
        assert not session.is_bash_running
        [message] = bash_entries(session)
        assert session.messages[-1] == message
        await session.prompt("what happened?")
        path = session.session_file
        assert path is not None
    assert user_texts(recorder.contexts[0].messages) == [
        "Ran `echo hi; exit 3`\n```\nhi\n\n```\n\nCommand exited with code 3",
        "what happened?",
    ]
    saved = file_messages(path)
    assert [m["role"] for m in saved] == ["bashExecution", "user", "assistant"]
    # pi's interactive `!` passes excludeFromContext: false, which pi writes.
    assert without_timestamp(saved[0]) == {**PI_ECHO_EXIT_3, "excludeFromContext": False}


async def test_double_bang_is_saved_but_kept_out_of_the_context(tmp_path: Path) -> None:
    """``!!cmd`` is recorded with excludeFromContext and never reaches the model."""
    faux, registry = make_faux()
    recorder = Recorder()
    faux.set_responses([recorder])
    async with open_session(faux, registry, manager=project(tmp_path)) as session:
        await session.execute_bash("echo secret", exclude_from_context=True)
        await session.execute_bash("echo shown")
        await session.prompt("go")
        path = session.session_file
        assert path is not None
    assert user_texts(recorder.contexts[0].messages) == [
        "Ran `echo shown`\n```\nshown\n\n```",
        "go",
    ]
    saved = file_messages(path)
    assert without_timestamp(saved[0]) == PI_EXCLUDED


async def test_record_without_an_exclusion_flag_leaves_the_key_out() -> None:
    """A result recorded with no ``exclude_from_context`` (pi's RPC ``bash``) has no such key,
    and a cancelled one has no exit code, as pi writes them."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        cancelled = BashResult(output="start\n", cancelled=True, truncated=False)
        await session.record_bash_result("echo start; sleep 30", cancelled)
        [message] = bash_entries(session)
    assert without_timestamp(to_wire(message)) == PI_CANCELLED


async def test_abort_bash_kills_a_running_command(tmp_path: Path) -> None:
    """abort_bash() ends a long command: its process is gone, the result is cancelled with no
    exit code and keeps the output so far, and it is recorded."""
    faux, registry = make_faux()
    started = trio.Event()
    chunks: list[str] = []

    def on_chunk(text: str) -> None:
        chunks.append(text)
        started.set()

    async with open_session(faux, registry, manager=in_memory(tmp_path)) as session:
        results: list[BashResult] = []

        async def run() -> None:
            command = "echo $$; exec sleep 30"
            results.append(await session.execute_bash(command, on_chunk=on_chunk))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await started.wait()
            assert session.is_bash_running
            await session.abort_bash()
        [result] = results
        assert not session.is_bash_running
        assert result.cancelled
        assert result.exit_code is None
        pid = int(result.output)
        assert result.output == "".join(chunks)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        [message] = bash_entries(session)
        assert message.cancelled
        assert bash_execution_to_text(message).endswith("\n\n(command cancelled)")


async def test_cancelling_the_call_kills_the_command(tmp_path: Path) -> None:
    """A caller that stops waiting for execute_bash takes the command down with it."""
    faux, registry = make_faux()
    started = trio.Event()
    pids: list[int] = []

    def on_chunk(text: str) -> None:
        pids.append(int(text))
        started.set()

    async with open_session(faux, registry, manager=in_memory(tmp_path)) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: session.execute_bash("echo $$; exec sleep 30", on_chunk=on_chunk)
            )
            await started.wait()
            nursery.cancel_scope.cancel()
        # The cancelled call returned once its command was gone and recorded.
        assert not session.is_bash_running
        with pytest.raises(ProcessLookupError):
            os.kill(pids[0], 0)
        [message] = bash_entries(session)
        assert message.cancelled


def gated(gate: trio.Event, recorder: Recorder) -> Any:
    async def respond(context: Context, *_: Any) -> AssistantMessage:
        await gate.wait()
        return recorder(context)

    return respond


async def test_results_wait_for_the_next_prompt_while_a_run_streams(tmp_path: Path) -> None:
    """A command that finishes while the agent streams is kept back (pi's pending bash
    messages) until the next prompt, which records it first; the order of commands holds."""
    faux, registry = make_faux()
    gate = trio.Event()
    recorder = Recorder()
    faux.set_responses([gated(gate, recorder), recorder])
    async with open_session(faux, registry, manager=in_memory(tmp_path)) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "first")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_streaming
            result = await session.execute_bash("echo during")
            assert result.output == "during\n"
            assert bash_entries(session) == []
            assert not any(isinstance(m, BashExecutionMessage) for m in session.messages)
            assert session.has_pending_bash_messages
            gate.set()
        # pi flushes at the next prompt, not when the run ends.
        assert session.has_pending_bash_messages
        await session.execute_bash("echo after")
        assert not session.has_pending_bash_messages
        await session.prompt("second")
        roles = [
            m.role if not isinstance(m, BashExecutionMessage) else m.command
            for m in session.messages
        ]
    assert roles == ["user", "assistant", "echo during", "echo after", "user", "assistant"]
    assert user_texts(recorder.contexts[1].messages) == [
        "first",
        "Ran `echo during`\n```\nduring\n\n```",
        "Ran `echo after`\n```\nafter\n\n```",
        "second",
    ]


async def test_a_kept_back_result_is_recorded_when_the_next_prompt_starts(tmp_path: Path) -> None:
    """The kept-back message reaches the transcript and the file at the next prompt even with
    no other command in between."""
    faux, registry = make_faux()
    gate = trio.Event()
    recorder = Recorder()
    faux.set_responses([gated(gate, recorder), recorder])
    async with open_session(faux, registry, manager=in_memory(tmp_path)) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "first")
            await trio.testing.wait_all_tasks_blocked()
            await session.execute_bash("echo during", exclude_from_context=True)
            gate.set()
        await session.prompt("second")
        assert [m.command for m in bash_entries(session)] == ["echo during"]
    assert user_texts(recorder.contexts[1].messages) == ["first", "second"]


async def test_long_output_is_truncated_and_kept_whole_in_a_temp_file(tmp_path: Path) -> None:
    """Output over 2000 lines keeps its last lines (as pi's for ``seq 1 3000``) and names a
    temp file with all of it; the model is told where."""
    faux, registry = make_faux()
    async with open_session(faux, registry, manager=project(tmp_path)) as session:
        result = await session.execute_bash("seq 1 3000")
        [message] = bash_entries(session)
    assert result.truncated
    assert result.exit_code == 0
    assert result.output.startswith("1002\n1003\n")  # pi's output for the same command
    assert result.output.endswith("\n3000\n")
    path = result.full_output_path
    assert path is not None
    try:
        assert os.path.basename(path).startswith("pitrio-bash-")
        full = await trio.Path(path).read_text()
        assert full == "".join(f"{n}\n" for n in range(1, 3001))
    finally:
        os.unlink(path)
    assert message.full_output_path == path
    assert bash_execution_to_text(message).endswith(f"[Output truncated. Full output: {path}]")
    assert to_wire(result) == {
        "output": result.output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": True,
        "fullOutputPath": path,
    }


async def test_large_output_goes_to_the_file_from_its_start(tmp_path: Path) -> None:
    """Past 50KB of bytes the whole output is in the temp file, and the shown tail fits 50KB."""
    faux, registry = make_faux()
    async with open_session(faux, registry, manager=project(tmp_path)) as session:
        # 300 lines of 1000 characters: 300KB, far fewer lines than the limit.
        result = await session.execute_bash(
            "for i in $(seq 1 300); do printf '%01000d\\n' $i; done"
        )
    path = result.full_output_path
    assert result.truncated and path is not None
    try:
        lines = (await trio.Path(path).read_text()).splitlines()
    finally:
        os.unlink(path)
    assert len(lines) == 300 and lines[0].endswith("1") and lines[-1].endswith("300")
    assert len(result.output.encode()) <= 50 * 1024
    assert result.output.endswith(f"{300:01000d}\n")


class ChunkedOperations:
    """BashOperations that "print" the given chunks and exit 0, recording what they ran."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.calls: list[tuple[str, str]] = []

    async def exec(
        self, command: str, cwd: str, *, on_data: Any, env: Mapping[str, str] | None = None
    ) -> int | None:
        self.calls.append((command, cwd))
        for chunk in self.chunks:
            await on_data(chunk)
        return 0


async def test_a_tail_shorter_than_the_limit_is_never_left_after_dropping(tmp_path: Path) -> None:
    """Chunks of 64KB, 64KB and 40KB: pi's rolling buffer would keep only the last 40KB and say
    "not truncated"; the shown tail is the full 50KB and the result says truncated."""
    line = b"x" * 99 + b"\n"
    chunks = (line * 655 + b"x" * 36, b"x" * 64 + line * 655, line * 410)
    operations = ChunkedOperations(*chunks)
    faux, registry = make_faux()
    async with open_session(faux, registry, manager=in_memory(tmp_path)) as session:
        result = await session.execute_bash("loud", operations=operations)
    assert operations.calls == [("loud", str(tmp_path))]
    path = result.full_output_path
    assert result.truncated and path is not None
    try:
        assert await trio.Path(path).read_bytes() == b"".join(chunks)
    finally:
        os.unlink(path)
    assert 50 * 1024 - 100 <= len(result.output.encode()) <= 50 * 1024


async def test_commands_run_in_the_session_cwd_with_the_shell_settings(tmp_path: Path) -> None:
    """The session manager's cwd and ``shellCommandPrefix`` apply; the recorded command is the
    one the user typed; a missing ``shellPath`` fails and records nothing."""
    faux, registry = make_faux()
    manager = project(tmp_path)
    settings = {"shellCommandPrefix": "GREETING=prefixed"}
    async with open_session(faux, registry, manager=manager, settings=settings) as session:
        result = await session.execute_bash('echo "$GREETING"; pwd')
        assert result.output == f"prefixed\n{manager.get_cwd()}\n"
        assert [m.command for m in bash_entries(session)] == ['echo "$GREETING"; pwd']
    missing = str(tmp_path / "no-such-shell")
    async with open_session(faux, registry, settings={"shellPath": missing}) as session:
        with pytest.raises(BashExecutionError, match="Custom shell path not found"):
            await session.execute_bash("echo hi")
        assert bash_entries(session) == []
        assert not session.is_bash_running


async def test_output_is_cleaned_as_pi_cleans_it(tmp_path: Path) -> None:
    """ANSI colours, carriage returns and control characters are removed (pi's output for the
    same printf is ``ared\\nbc\\n``)."""
    faux, registry = make_faux()
    async with open_session(faux, registry, manager=project(tmp_path)) as session:
        result = await session.execute_bash("printf 'a\\x1b[31mred\\x1b[0m\\r\\nb\\x01c\\n'")
    assert result.output == "ared\nbc\n"


def test_sanitize_output_keeps_text_and_drops_escapes() -> None:
    """Escape sequences of each kind go; tabs, newlines and other characters stay."""
    assert sanitize_output("\x1b]0;title\x07x\x1b[1;32mgreen\x1b[0m\ty\x1b(0z") == "xgreen\tyz"
    assert sanitize_output("é\u200b\ufff9日本\x7f\r\n") == "é\u200b日本\x7f\n"


async def test_bash_after_the_session_closed_is_refused() -> None:
    """A closed session refuses user commands like any other command."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        pass
    with pytest.raises(UsageError, match="closed"):
        await session.execute_bash("echo hi")
