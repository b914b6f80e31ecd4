"""``pitrio --mode rpc`` answers as pi 0.73.1 where a new user meets its edges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.host.rpc_process import open_rpc

GUARD_S = 60
"""A hung process fails the test instead of hanging the suite (not a timing assertion)."""


async def test_export_html_before_the_first_answer_says_there_is_nothing_yet(
    tmp_path: Path,
) -> None:
    """``export_html`` on a saved session with no answer yet gets pi's message; after one
    prompt it exports."""
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(tmp_path))
        with trio.fail_after(GUARD_S):
            early = await rpc.call({"id": "e", "type": "export_html"})
            assert early == {
                "id": "e",
                "type": "response",
                "command": "export_html",
                "success": False,
                "error": "Nothing to export yet - start a conversation first",
            }
            await rpc.send({"id": "p", "type": "prompt", "message": "hello"})
            await rpc.until(lambda r: r.get("type") == "agent_end")
            out = tmp_path / "out.html"
            done = await rpc.call({"id": "x", "type": "export_html", "outputPath": str(out)})
            assert done["success"] is True, done
            assert "hello" in out.read_text()
            assert rpc.process.stdin is not None
            await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0


async def test_export_html_of_an_in_memory_session_names_it_as_pi(tmp_path: Path) -> None:
    """``export_html`` with ``--no-session`` gets pi's in-memory message."""
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(tmp_path), "--no-session")
        with trio.fail_after(GUARD_S):
            answer = await rpc.call({"id": "e", "type": "export_html"})
            assert answer["error"] == "Cannot export in-memory session to HTML"
            assert rpc.process.stdin is not None
            await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0


PACED_MESSAGE = "stream me slowly " * 24
"""Echoed back (``You said: ...``): about a hundred tokens at the faux pace set below."""
BIG = 1_000_000
"""Characters of a big hostile record (under the 16 MiB line limit, so it is parsed)."""


def _hostile_lines() -> list[tuple[bytes, dict[str, Any]]]:
    """Records and what their response must hold (pi's answer where pi has one)."""
    big_id = "9" * 400
    return [
        (
            ('{"type":"get_state","id":' + big_id + "}").encode(),
            {"id": None, "command": "get_state", "success": True},
        ),
        (
            ('{"type":"nope","id":-' + big_id + "}").encode(),
            {"command": "nope", "success": False, "error": "Unknown command: nope"},
        ),
        (
            b"[" * BIG,
            {
                "command": "parse",
                "success": False,
                "error": "Failed to parse command: Nesting deeper than 1024 levels in JSON",
            },
        ),
        (
            b'{"type":"prompt","message":"' + b"x" * BIG,
            {"command": "parse", "success": False},
        ),
        (
            json.dumps({"type": "export_html", "outputPath": "a\x00b", "id": "nul"}).encode(),
            {"id": "nul", "command": "export_html", "success": False},
        ),
        (
            json.dumps({"type": "set_session_name", "name": 10**400, "id": "t"}).encode(),
            {"id": "t", "command": "set_session_name", "success": False},
        ),
    ]


async def test_hostile_records_are_answered_while_the_session_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In RPC mode, a 400-digit id is echoed as ``null`` (pi's answer), deep nesting and ~1 MB
    invalid records get parse errors, a NUL in a path an error, and a prompt streaming
    meanwhile delivers its whole answer; the process serves on."""
    monkeypatch.setenv("PITRIO_FAUX_TOKENS_PER_SECOND", "50")
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(tmp_path), "--no-session")
        with trio.fail_after(GUARD_S):
            await rpc.send({"id": "p", "type": "prompt", "message": PACED_MESSAGE})
            await rpc.until(lambda r: r.get("type") == "message_update")
            lines = _hostile_lines()
            for line, _ in lines:
                await rpc.send_raw(line + b"\n")
            await rpc.send({"id": "last", "type": "get_state"})
            await rpc.until(lambda r: r.get("id") == "last")
            if not any(r.get("type") == "agent_end" for r in rpc.seen):
                await rpc.until(lambda r: r.get("type") == "agent_end")
            responses = [r for r in rpc.seen if r.get("type") == "response" and r.get("id") != "p"]
            for (line, expected), response in zip(lines, responses, strict=False):
                assert expected.items() <= response.items(), (line[:60], response)
            assert len(responses) == len(lines) + 1
            assert responses[-1]["success"] is True
            deltas = [
                r["assistantMessageEvent"]["delta"]
                for r in rpc.seen
                if r.get("type") == "message_update"
                and r["assistantMessageEvent"]["type"] == "text_delta"
            ]
            assert "".join(deltas) == f"You said: {PACED_MESSAGE}"
            assert len(deltas) > 1
            assert rpc.process.stdin is not None
            await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0


def _records(path: str) -> list[dict[str, Any]]:
    """The session file's lines (read at once: what is on disk now)."""
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


async def test_the_rpc_session_is_on_disk_from_the_start_and_a_prompt_before_its_echo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In RPC mode the session file exists before any prompt (its header), and a prompt's
    user message is in it before its ``message_end`` record is written."""
    monkeypatch.setenv("PITRIO_FAUX_TOKENS_PER_SECOND", "50")
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(tmp_path))
        with trio.fail_after(GUARD_S):
            state = await rpc.call({"id": "s", "type": "get_state"})
            path = state["data"]["sessionFile"]
            header, *entries = _records(path)
            assert header["type"] == "session"
            assert all(entry["type"] != "message" for entry in entries)
            await rpc.send({"id": "p", "type": "prompt", "message": "on disk first"})
            await rpc.until(
                lambda r: r.get("type") == "message_end" and r["message"]["role"] == "user"
            )
            saved = _records(path)
            assert [e["message"]["role"] for e in saved if e["type"] == "message"] == ["user"]
            await rpc.until(lambda r: r.get("type") == "agent_end")
            assert rpc.process.stdin is not None
            await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0
