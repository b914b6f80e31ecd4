"""The websocket host at its edges: throw-away sessions, and hostile frames that never cost
the connection or the host."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import trio

from pitrio.host import HostLimits
from tests.host.serve_helpers import faux_env, open_client, open_test_host, text_of_deltas

GUARD_S: Final = 120
"""A hung test fails instead of hanging the suite (not a timing assertion)."""


def _is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "agent_end"


async def test_an_ephemeral_session_runs_in_memory_and_leaves_no_file(tmp_path: Path) -> None:
    """``create_session`` with ``ephemeral: true`` answers without a ``sessionFile``, runs
    prompts, writes nothing in the session folder and cannot be reopened once closed."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        created = await client.call({"type": "create_session", "ephemeral": True})
        assert created["success"] is True
        assert "sessionFile" not in created["data"]
        sid = created["data"]["session"]
        await client.send({"type": "prompt", "session": sid, "message": "not saved"})
        await client.until(_is_end)
        messages = await client.call({"type": "get_messages", "session": sid})
        assert [m["role"] for m in messages["data"]["messages"]] == ["user", "assistant"]
        assert (await client.call({"type": "close_session", "session": sid}))["success"]
        reopened = await client.call({"type": "open_session", "session": sid})
        assert reopened["success"] is False
        assert reopened["error"] == f"Unknown session: {sid}"
        saved = await client.call({"type": "create_session"})
        assert saved["data"]["sessionFile"].startswith(str(tmp_path / "sessions"))
    # Only the saved session is on disk (from its creation on): the ephemeral one left none.
    files = [str(path) for path in (tmp_path / "sessions").glob("**/*.jsonl")]
    assert files == [saved["data"]["sessionFile"]]


async def test_ephemeral_must_be_a_boolean(tmp_path: Path) -> None:
    """A non-boolean ``ephemeral`` is an error response; the connection serves on."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        refused = await client.call({"type": "create_session", "ephemeral": "yes"})
        assert refused["success"] is False
        assert refused["error"] == 'Invalid create_session command: "ephemeral" must be a boolean'
        assert (await client.call({"type": "list_sessions"}))["data"]["sessions"] == []


TOKENS_PER_SECOND: Final = 50
"""The paced session's faux speed (a token is four characters, one delta each)."""
PACED_MESSAGE: Final = "stream me slowly " * 24
"""Echoed back (``You said: ...``): about a hundred tokens, two seconds of stream at that pace."""
BIG: Final = 1_000_000
"""Characters of a big hostile frame: under the default 1 MiB frame limit, so it is parsed."""
UNLIMITED_RATE: Final = HostLimits(commands_per_second=1e9, command_burst=10**9)
"""Every hostile frame reaches the parser (the rate limit has its own tests)."""


def hostile_frames(session: str) -> list[tuple[str, str | None]]:
    """Frames that must each get an error response, and the error's start (``None``: any)."""
    big_id = "9" * 400
    return [
        ('{"type":"prompt","session":"' + session + '","message":"' + "x" * BIG, "Failed"),
        ("[" * BIG, "Failed to parse command: Nesting deeper than 1024 levels"),
        ('{"a":"\\ud800","b":' + "1" * BIG, "Failed to parse command"),
        ('{"type":"get_state","session":"s","x":' + "[" * 1100 + "]" * 1100 + "}", "Failed"),
        (json.dumps({"type": "create_session", "cwd": "a\x00b"}), "Invalid create_session"),
        (json.dumps({"type": "open_session", "session": "\x00"}), "Unknown session"),
        ('{"type":"get_state","session":"\\u0000","id":' + big_id + "}", "Unknown session"),
        ('{"type":"nope","id":' + big_id + "}", "Unknown command: nope"),
        ('{"type":"open_session","session":"s","resume_from":' + big_id + "}", "Invalid"),
        (json.dumps({"type": "create_session", "ephemeral": "yes"}), "Invalid"),
        (json.dumps({"type": "grant", "session": session, "token": 5}), None),
        (json.dumps({"type": "set_thinking_level", "session": session, "level": 10**20}), None),
    ]


async def test_hostile_frames_cost_neither_the_connection_nor_a_streaming_session(
    tmp_path: Path,
) -> None:
    """While one connection sends NUL bytes, 400-digit integers, deep nesting and ~1 MB
    invalid frames, each is answered with an error on a connection that stays open (a
    400-digit id echoed as ``null``, as pi), and a paced session on another connection
    streams its whole answer meanwhile."""
    async with (
        open_test_host(
            tmp_path,
            limits=UNLIMITED_RATE,
            extra_env={"PITRIO_FAUX_TOKENS_PER_SECOND": str(TOKENS_PER_SECOND)},
        ) as host,
        open_client(host) as paced,
        open_client(host) as hostile,
    ):
        sid = (await paced.call({"type": "create_session"}))["data"]["session"]
        streaming = trio.Event()
        done = trio.Event()
        answered = {"during": 0, "total": 0}
        frames: list[dict[str, Any]] = []

        async def stream() -> None:
            await paced.send({"type": "prompt", "session": sid, "message": PACED_MESSAGE})
            while True:
                frame = await paced.frame()
                frames.append(frame)
                if frame.get("type") == "message_update":
                    streaming.set()
                if _is_end(frame):
                    done.set()
                    return

        async def attack() -> None:
            while not done.is_set():
                for text, error in hostile_frames(sid):
                    answer = await hostile.raw_call(text)
                    assert answer["success"] is False, (text[:80], answer)
                    assert error is None or answer["error"].startswith(error), answer
                    if '"id":' + "9" * 400 in text:
                        assert "id" in answer and answer["id"] is None, answer
                    answered["total"] += 1
                    if streaming.is_set() and not done.is_set():
                        answered["during"] += 1

        with trio.fail_after(GUARD_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stream)
                nursery.start_soon(attack)
        deltas = [
            f
            for f in frames
            if f.get("type") == "message_update"
            and f["assistantMessageEvent"]["type"] == "text_delta"
        ]
        print(f"{len(deltas)} deltas; hostile frames answered {answered}")
        assert text_of_deltas(frames) == f"You said: {PACED_MESSAGE}"
        assert len(deltas) > 1
        assert answered["during"] > 0
        assert (await hostile.call({"type": "list_sessions"}))["success"] is True
        assert list(host.sessions) == [sid]


def _lines(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def _user_texts(path: str) -> list[str]:
    return [
        entry["message"]["content"]
        if isinstance(entry["message"]["content"], str)
        else entry["message"]["content"][0]["text"]
        for entry in _lines(path)
        if entry["type"] == "message" and entry["message"]["role"] == "user"
    ]


async def test_a_session_is_on_disk_from_create_session_and_a_prompt_before_its_echo(
    tmp_path: Path,
) -> None:
    """``create_session`` writes the file's header at once, and a prompt's user message is in
    the file before its ``message_end`` reaches the client (pi writes both only with the
    first answer)."""
    async with (
        open_test_host(
            tmp_path, extra_env={"PITRIO_FAUX_TOKENS_PER_SECOND": str(TOKENS_PER_SECOND)}
        ) as host,
        open_client(host) as client,
    ):
        created = (await client.call({"type": "create_session"}))["data"]
        path = created["sessionFile"]
        header, *entries = _lines(path)
        assert header["type"] == "session" and header["id"]
        assert all(entry["type"] != "message" for entry in entries)
        await client.send({"type": "prompt", "session": created["session"], "message": "kept"})
        await client.until(
            lambda f: f.get("type") == "message_end" and f["message"]["role"] == "user"
        )
        assert _user_texts(path) == ["kept"]  # read at once: the answer is still streaming
        await client.until(_is_end)


@asynccontextmanager
async def _serve_process(
    tmp_path: Path, nursery: trio.Nursery, env: dict[str, str]
) -> AsyncIterator[tuple[trio.Process, int, str]]:
    """``pitrio serve --port 0`` on ``tmp_path/sessions``: the process, its port and token."""
    command = [
        *(sys.executable, "-m", "pitrio", "serve", "--port", "0", "--provider", "faux"),
        *("--session-dir", str(tmp_path / "sessions")),
    ]
    run = functools.partial(
        trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False, cwd=tmp_path
    )
    process: trio.Process = await nursery.start(run)
    assert process.stderr is not None
    line = b""
    while b"listening on" not in line:
        chunk = await process.stderr.receive_some(4096)
        assert chunk, "pitrio serve ended before listening"
        line += chunk
    text = line.decode().split("listening on ", 1)[1]
    port = int(text.split()[0].rstrip("/").rsplit(":", 1)[1])
    token = text.split("token=", 1)[1].split()[0]
    try:
        yield process, port, token
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


async def test_a_prompt_cut_short_by_a_killed_host_is_found_by_open_session(
    tmp_path: Path,
) -> None:
    """A host killed (SIGKILL) in the middle of a session's first answer leaves the session
    on disk: a new host reopens it with ``open_session``, the prompt in its history and the
    interrupted answer closed as aborted (the crash recovery of the turn in flight)."""
    env = {
        **os.environ,
        **faux_env(str(tmp_path)),
        "PITRIO_FAUX_TOKENS_PER_SECOND": "5",  # a long first answer, cut short below
    }
    env.pop("PITRIO_HOST_TOKEN", None)
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            async with (
                _serve_process(tmp_path, nursery, env) as (process, port, token),
                open_client(_Address(port, token)) as client,  # type: ignore[arg-type]
            ):
                sid = (await client.call({"type": "create_session"}))["data"]["session"]
                await client.send({"type": "prompt", "session": sid, "message": PACED_MESSAGE})
                await client.until(lambda f: f.get("type") == "message_update")
                process.kill()
            async with (
                _serve_process(tmp_path, nursery, env) as (_, port, token),
                open_client(_Address(port, token)) as client,  # type: ignore[arg-type]
            ):
                reopened = await client.call({"type": "open_session", "session": sid})
                assert reopened["success"] is True, reopened
                messages = await client.call({"type": "get_messages", "session": sid})
                history = messages["data"]["messages"]
                assert [m["role"] for m in history] == ["user", "assistant"]
                assert history[1]["stopReason"] == "aborted"
                assert history[0]["content"] in (
                    PACED_MESSAGE,
                    [{"type": "text", "text": PACED_MESSAGE}],
                )


class _Address:
    """What :func:`open_client` needs of a host running in another process."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
