"""The websocket host at its edges: throw-away sessions, and hostile frames that never cost
the connection or the host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.host.serve_helpers import open_client, open_test_host


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
