"""Print mode (``-p``) and JSON mode (``--mode json``), in the test process and as the real
``pitrio`` command.

The subprocess tests run ``python -m pitrio`` with ``HOME`` and ``PITRIO_CODING_AGENT_DIR`` in
``tmp_path`` and every API-key variable removed; the HTTP test serves the provider from a
loopback server in the test's own Trio loop while the command runs.
"""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from pitrio.actors import AgentEvent
from pitrio.cli._main import parse_cli_args
from pitrio.cli._print_mode import run_print_mode
from pitrio.cli._setup import Runtime, build_runtime
from pitrio.codec import from_wire, loads
from pitrio.providers import ENV_API_KEY_VARS, TextContent, TextDeltaEvent, UserMessage
from pitrio.sessions import SessionMessageEntry, load_session_file

from fixtures_openai_completions import SERVER_ERROR_BODY, openai_error, text_stream
from loopback import (
    ConnectionDropped,
    LoopbackServer,
    error_handler,
    sequence_handler,
    serve,
    sse_handler,
)

REPLY_FROM_SERVER = "Hello from the loopback server!"
CLI_GUARD_S = 60
"""A hung command fails the test instead of hanging the suite (not a timing assertion)."""


@attrs.define
class Place:
    """A project directory and an agent dir in tmp_path, and an environment with no keys."""

    root: Path

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    @property
    def cwd(self) -> Path:
        return self.root / "project"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PITRIO_", "AWS_", "GOOGLE_", "GCLOUD_"))
        }
        for names in ENV_API_KEY_VARS.values():
            for name in names:
                env.pop(name, None)
        env["HOME"] = str(self.root / "home")
        env["PITRIO_CODING_AGENT_DIR"] = str(self.agent_dir)
        return env

    def local_provider(self, server: LoopbackServer) -> None:
        """Describe the loopback server as provider ``local`` in models.json."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "providers": {
                "local": {
                    "baseUrl": server.url("/v1"),
                    "api": "openai-completions",
                    "apiKey": "local-key",
                    "headers": {"X-Team": "blue"},
                    "models": [{"id": "local-model"}],
                }
            }
        }
        (self.agent_dir / "models.json").write_text(json.dumps(config))

    def runtime(self, *argv: str, require_auth: bool = True) -> Runtime:
        return build_runtime(
            parse_cli_args(argv),
            cwd=str(self.cwd),
            env=self.env(),
            warn=lambda message: None,
            require_auth=require_auth,
        )

    def settings(self, data: Any) -> None:
        """Write the global settings.json (``data`` as JSON, or a string as it is)."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        text = data if isinstance(data, str) else json.dumps(data)
        (self.agent_dir / "settings.json").write_text(text)

    def session_files(self) -> list[Path]:
        return sorted((self.agent_dir / "sessions").glob("*/*.jsonl"))

    async def cli(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        with trio.fail_after(CLI_GUARD_S):
            return await trio.run_process(
                [sys.executable, "-m", "pitrio", *args],
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=self.env(),
                cwd=self.cwd,
            )


@pytest.fixture
def place(tmp_path: Path) -> Place:
    (tmp_path / "project").mkdir()
    return Place(tmp_path)


async def print_mode(runtime: Runtime, mode: Any, *prompts: str) -> tuple[int, str, str]:
    out, err = io.BytesIO(), io.StringIO()
    code = await run_print_mode(runtime, mode=mode, prompts=prompts, out=out, err=err)
    return code, out.getvalue().decode(), err.getvalue()


def user_texts(path: Path) -> list[str]:
    loaded = load_session_file(str(path))
    texts = []
    for entry in loaded.entries:
        if isinstance(entry, SessionMessageEntry) and isinstance(entry.message, UserMessage):
            content = entry.message.content
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.append("".join(b.text for b in content if isinstance(b, TextContent)))
    return texts


def agent_events(lines: list[str]) -> list[AgentEvent]:
    return [from_wire(AgentEvent, loads(line)) for line in lines]


# --------------------------------------------------------------------------- in process


async def test_text_mode_prints_the_last_answer_after_every_prompt(place: Place) -> None:
    """Prompts run in order; only the final answer's text is printed, one block per line."""
    runtime = place.runtime("--provider", "faux", "--no-session")
    code, out, err = await print_mode(runtime, "text", "first", "second")
    assert (code, err) == (0, "")
    assert out == "You said: second (message 2 in this conversation)\n"


async def test_json_mode_writes_the_header_then_every_event_in_pi_order(place: Place) -> None:
    """The session header comes first, then agent_start .. agent_end with streamed deltas."""
    runtime = place.runtime("--provider", "faux", "--no-session")
    code, out, _ = await print_mode(runtime, "json", "hello")
    assert code == 0
    lines = out.splitlines()
    header = json.loads(lines[0])
    assert header["type"] == "session"
    assert header["version"] == 3
    assert header["id"] == runtime.session_manager.get_session_id()
    events = agent_events(lines[1:])
    kinds = [e.type for e in events]
    updates = kinds.count("message_update")
    assert updates > 3
    assert kinds == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        *["message_update"] * updates,
        "message_end",
        "turn_end",
        "agent_end",
    ]
    deltas = [
        e.assistant_message_event.delta
        for e in events
        if e.type == "message_update" and isinstance(e.assistant_message_event, TextDeltaEvent)
    ]
    assert len(deltas) > 1
    assert "".join(deltas) == "You said: hello"


async def test_http_provider_answer_is_printed_with_models_json_auth(place: Place) -> None:
    """A models.json provider is chosen without flags; its key and headers go with the request."""
    async with serve(sse_handler(text_stream(REPLY_FROM_SERVER), chunk_size=7)) as server:
        place.local_provider(server)
        runtime = place.runtime("--no-session")
        code, out, err = await print_mode(runtime, "text", "Say hello")
    assert (code, out, err) == (0, f"{REPLY_FROM_SERVER}\n", "")
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer local-key"
    assert request.headers["x-team"] == "blue"
    body = request.json()
    assert body["model"] == "local-model"
    assert body["messages"][-1]["content"] in ("Say hello", [{"type": "text", "text": "Say hello"}])


async def test_error_answer_goes_to_stderr_with_exit_status_1(place: Place) -> None:
    """A final message that ended in an error prints its errorMessage to stderr and fails."""
    body = openai_error("The model `local-model` does not exist", "invalid_request_error")
    async with serve(error_handler(404, body)) as server:
        place.local_provider(server)
        runtime = place.runtime("--no-session")
        code, out, err = await print_mode(runtime, "text", "hi")
    assert code == 1
    assert out == ""
    assert "The model `local-model` does not exist" in err


async def test_prompt_refused_without_a_key_fails_with_its_reason(place: Place) -> None:
    """A prompt the session refuses (no API key) ends the command with the reason."""
    runtime = place.runtime(
        "--model", "anthropic/claude-sonnet-4-5", "--no-session", require_auth=False
    )
    code, out, err = await print_mode(runtime, "text", "hi")
    assert (code, out) == (1, "")
    assert err == "No API key found for anthropic.\n"


class ClosingPipe(io.BytesIO):
    """Stdout whose reader leaves after ``lines`` lines."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.lines_left = lines

    def write(self, data: Any) -> int:
        if self.lines_left == 0:
            raise BrokenPipeError
        self.lines_left -= 1
        return super().write(data)


async def test_json_reader_going_away_aborts_the_run_quietly(place: Place) -> None:
    """When stdout's reader leaves, the run is aborted, no later prompt runs, exit status 0."""
    runtime = place.runtime("--provider", "faux", "--no-session")
    out, err = ClosingPipe(lines=3), io.StringIO()
    code = await run_print_mode(runtime, mode="json", prompts=["one", "two"], out=out, err=err)
    assert (code, err.getvalue()) == (0, "")
    assert len(out.getvalue().splitlines()) == 3
    users = [
        e
        for e in runtime.session_manager.get_entries()
        if isinstance(e, SessionMessageEntry) and isinstance(e.message, UserMessage)
    ]
    assert len(users) == 1


# --------------------------------------------------------------------------- the real command


async def test_cli_print_then_continue_appends_to_the_same_session_file(place: Place) -> None:
    """``-p`` writes a session file; ``-c`` continues it and the model sees the first exchange."""
    first = await place.cli("--provider", "faux", "-p", "hello")
    assert (first.returncode, first.stdout, first.stderr) == (0, b"You said: hello\n", b"")
    [path] = place.session_files()
    assert user_texts(path) == ["hello"]

    second = await place.cli("-c", "-p", "again")
    assert second.returncode == 0, second.stderr
    assert second.stdout == b"You said: again (message 2 in this conversation)\n"
    assert place.session_files() == [path]
    loaded = load_session_file(str(path))
    assert user_texts(path) == ["hello", "again"]
    messages = [e for e in loaded.entries if isinstance(e, SessionMessageEntry)]
    assert [m.message.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[2].parent_id == messages[1].id


async def test_cli_json_mode_without_session_writes_no_file(place: Place) -> None:
    """``--mode json --no-session`` prints the header and both runs' events; nothing is saved."""
    done = await place.cli("--provider", "faux", "--no-session", "--mode", "json", "a", "b")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert json.loads(lines[0])["type"] == "session"
    kinds = [e.type for e in agent_events(lines[1:])]
    assert kinds.count("agent_start") == kinds.count("agent_end") == 2
    assert kinds[0] == "agent_start"
    assert kinds[-1] == "agent_end"
    assert not (place.agent_dir / "sessions").exists()


async def test_cli_session_path_takes_the_prompt_from_stdin(place: Place) -> None:
    """``--session PATH`` creates that file; piped stdin is the prompt."""
    path = place.root / "chosen.jsonl"
    done = await place.cli("--provider", "faux", "--session", str(path), stdin=b"from a pipe\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"You said: from a pipe\n"
    assert user_texts(path) == ["from a pipe"]
    assert place.session_files() == []


async def test_cli_without_a_provider_explains_the_setup(place: Place) -> None:
    """With no key anywhere the command says how to configure a provider and exits 1."""
    done = await place.cli("-p", "hi")
    assert done.returncode == 1
    assert done.stdout == b""
    err = done.stderr.decode()
    assert "No models available" in err
    for hint in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "models.json"):
        assert hint in err
    assert "--provider faux" in err


async def test_cli_unknown_model_fails(place: Place) -> None:
    """An unknown ``--model`` is an error on stderr with exit status 1."""
    done = await place.cli("--model", "no-such-model-xyz", "-p", "hi")
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == (
        b'Error: Model "no-such-model-xyz" not found. Use --list-models to see available models.\n'
    )


async def test_cli_answers_from_a_models_json_http_provider(place: Place) -> None:
    """The command streams a real HTTP provider configured in models.json and prints its text."""
    async with serve(sse_handler(text_stream(REPLY_FROM_SERVER), chunk_size=5)) as server:
        place.local_provider(server)
        done = await place.cli("-p", "Say hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{REPLY_FROM_SERVER}\n".encode()
    assert server.requests[0].headers["authorization"] == "Bearer local-key"


# --------------------------------------------------------------------------- retries, errors


async def test_text_mode_prints_one_line_per_retry_to_stderr(
    place: Place, autojump_clock: trio.testing.MockClock
) -> None:
    """Each retry of a transient error is one stderr line; the answer still goes to stdout."""
    handler = sequence_handler(
        error_handler(500, SERVER_ERROR_BODY),
        error_handler(503, SERVER_ERROR_BODY, {"retry-after": "7"}),
        sse_handler(text_stream(REPLY_FROM_SERVER)),
    )
    async with serve(handler) as server:
        place.local_provider(server)
        runtime = place.runtime("--no-session")
        code, out, err = await print_mode(runtime, "text", "hi")
    assert (code, out) == (0, f"{REPLY_FROM_SERVER}\n")
    assert err.splitlines() == [
        "retrying in 2 s (attempt 1/3): 500 The server had an error while processing your "
        "request. Sorry about that!",
        "retrying in 7 s (attempt 2/3): 503 The server had an error while processing your "
        "request. Sorry about that!",
    ]


async def test_a_refused_connection_is_retried_visibly_then_fails(
    place: Place, autojump_clock: trio.testing.MockClock
) -> None:
    """A server that is not there: three retry lines, then the error and exit status 1."""
    async with serve(sse_handler(b"")) as server:
        place.local_provider(server)  # the port is closed once the block ends
    runtime = place.runtime("--no-session")
    code, out, err = await print_mode(runtime, "text", "hi")
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == [
        "retrying in 2 s (attempt 1/3)",
        "retrying in 4 s (attempt 2/3)",
        "retrying in 8 s (attempt 3/3)",
    ]
    assert len(lines) == 4 and lines[3].startswith("Connection error")


async def test_json_mode_writes_no_retry_lines(
    place: Place, autojump_clock: trio.testing.MockClock
) -> None:
    """In JSON mode the auto_retry_start events show the retries; stderr stays empty."""
    handler = sequence_handler(
        error_handler(500, SERVER_ERROR_BODY), sse_handler(text_stream(REPLY_FROM_SERVER))
    )
    async with serve(handler) as server:
        place.local_provider(server)
        runtime = place.runtime("--no-session")
        code, out, err = await print_mode(runtime, "json", "hi")
    assert (code, err) == (0, "")
    assert sum('"type":"auto_retry_start"' in line for line in out.splitlines()) == 1


async def test_a_dropped_connection_exits_1_with_the_error(place: Place) -> None:
    """The server closes the connection without an answer: the error on stderr, exit 1."""

    async def drop(request: Any, writer: Any) -> None:
        raise ConnectionDropped

    async with serve(drop) as server:
        place.local_provider(server)
        place.settings({"retry": {"enabled": False}})
        runtime = place.runtime("--no-session")
        code, out, err = await print_mode(runtime, "text", "hi")
    assert (code, out) == (1, "")
    assert err.startswith("Connection lost")


# --------------------------------------------------------------------------- session files


async def test_cli_refuses_a_text_file_as_a_session_and_leaves_it_alone(place: Place) -> None:
    """--session on a one-line text file without a newline: one line naming it, exit 1, the
    file byte-identical."""
    notes = place.cwd / "notes.txt"
    notes.write_bytes(b"remember the milk")
    done = await place.cli("--provider", "faux", "--session", "./notes.txt", "-p", "hi")
    assert (done.returncode, done.stdout) == (1, b"")
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "notes.txt" in lines[0], done.stderr
    assert b"Traceback" not in done.stderr
    assert notes.read_bytes() == b"remember the milk"


async def test_cli_refuses_a_binary_blob_as_a_session(place: Place) -> None:
    """A binary file without a newline is refused the same way and not modified."""
    blob = place.cwd / "blob.jsonl"
    data = bytes(range(256)) * 4
    blob.write_bytes(data)
    done = await place.cli("--provider", "faux", "--session", str(blob), "-p", "hi")
    assert (done.returncode, done.stdout) == (1, b"")
    assert len(done.stderr.splitlines()) == 1 and b"blob.jsonl" in done.stderr
    assert blob.read_bytes() == data


async def test_cli_reports_a_session_locked_by_another_process(place: Place) -> None:
    """A session file another process writes: one line naming the file and its pid, exit 1."""
    first = await place.cli("--provider", "faux", "-p", "hello")
    assert first.returncode == 0, first.stderr
    [path] = place.session_files()
    before = path.read_bytes()
    holder = (
        "import sys, time\n"
        "from pitrio.sessions import SessionManager\n"
        "from pitrio.providers import UserMessage\n"
        "m = SessionManager.open(sys.argv[1])\n"
        "m.append_message(UserMessage(content='held', timestamp=0))\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
    )
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                [sys.executable, "-c", holder, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=place.env(),
            )
        )
        assert process.stdout is not None and process.stdin is not None
        with trio.fail_after(CLI_GUARD_S):
            assert (await process.stdout.receive_some()).startswith(b"locked")
        done = await place.cli("--provider", "faux", "--session", str(path), "-p", "again")
        await process.stdin.aclose()
    assert (done.returncode, done.stdout) == (1, b"")
    stderr = done.stderr.decode()
    assert len(stderr.splitlines()) == 1 and str(path) in stderr, stderr
    assert f"pid {process.pid}" in stderr
    assert b"again" not in path.read_bytes()
    assert path.read_bytes().startswith(before)


# --------------------------------------------------------------------------- stall timeout


async def test_stall_timeout_flag_ends_a_silent_response(
    place: Place, autojump_clock: trio.testing.MockClock
) -> None:
    """--stall-timeout 5: a server that sends its headers and then nothing fails after 5 s."""
    body = text_stream(REPLY_FROM_SERVER)
    async with serve(sse_handler(body, hang_after=0)) as server:
        place.local_provider(server)
        place.settings({"retry": {"enabled": False}})
        runtime = place.runtime("--no-session", "--stall-timeout", "5")
        start = trio.current_time()
        code, out, err = await print_mode(runtime, "text", "hi")
        waited = trio.current_time() - start
    assert (code, out) == (1, "")
    assert "stalled" in err.lower()
    assert 5 <= waited < 6


async def test_stall_timeout_setting_applies_and_the_flag_wins(
    place: Place, autojump_clock: trio.testing.MockClock
) -> None:
    """streamStallTimeoutMs sets the stall timeout; --stall-timeout overrides it."""
    body = text_stream(REPLY_FROM_SERVER)
    async with serve(sse_handler(body, hang_after=0)) as server:
        place.local_provider(server)
        place.settings({"retry": {"enabled": False}, "streamStallTimeoutMs": 2000})
        waited = []
        for argv in (("--no-session",), ("--no-session", "--stall-timeout", "9")):
            runtime = place.runtime(*argv)
            start = trio.current_time()
            code, _, err = await print_mode(runtime, "text", "hi")
            waited.append(trio.current_time() - start)
            assert code == 1 and "stalled" in err.lower()
    assert 2 <= waited[0] < 3
    assert 9 <= waited[1] < 10


async def test_cli_warns_about_wrongly_typed_settings(place: Place) -> None:
    """settings.json with wrong types: one warning per key on stderr, the run goes on."""
    place.settings({"retry": "yes", "compaction": {"reserveTokens": "x"}})
    done = await place.cli("--provider", "faux", "--no-session", "-p", "hi")
    assert (done.returncode, done.stdout) == (0, b"You said: hi\n")
    warnings = sorted(done.stderr.decode().splitlines())
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("Warning: Invalid setting compaction.reserveTokens in ")
    assert warnings[1].startswith("Warning: Invalid setting retry in ")
    assert 'expected an object, got "yes"' in warnings[1]
