"""``pitrio --mode rpc`` answers as pi 0.73.1 where a new user meets its edges."""

from __future__ import annotations

from pathlib import Path

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
