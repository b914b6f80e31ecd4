"""The websocket host at its edges: throw-away sessions, and hostile frames that never cost
the connection or the host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import trio

from pitrio.host import HostLimits
from tests.host.serve_helpers import open_client, open_test_host, text_of_deltas

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
    assert list((tmp_path / "sessions").glob("**/*.jsonl")) == []


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
