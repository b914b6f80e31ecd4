"""``SessionManager.write_at_once``: the host and RPC modes' sessions are on disk from their
creation on; the default (pi's, the CLI's) stays the lazy first flush."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pitrio.providers import UserMessage
from pitrio.sessions import SessionManager, open_persistence


def _records(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def test_the_default_file_waits_for_the_first_answer(tmp_path: Path) -> None:
    """Without write_at_once nothing is written for a prompt alone (pi's lazy file)."""
    manager = SessionManager.create(tmp_path, tmp_path / "sessions")
    manager.append_message(UserMessage(content="hello", timestamp=1))
    path = manager.get_session_file()
    assert path is not None and not os.path.exists(path)
    manager.close()


def test_write_at_once_writes_the_header_then_each_entry(tmp_path: Path) -> None:
    """The header is written at once, then each entry as it is appended; a new session's
    header too."""
    manager = SessionManager.create(tmp_path, tmp_path / "sessions")
    manager.write_at_once()
    path = manager.get_session_file()
    assert path is not None
    assert [r["type"] for r in _records(path)] == ["session"]
    manager.append_message(UserMessage(content="hello", timestamp=1))
    assert [r["type"] for r in _records(path)] == ["session", "message"]
    manager.new_session()
    second = manager.get_session_file()
    assert second is not None and second != path
    assert [r["type"] for r in _records(second)] == ["session"]
    manager.close()


async def test_a_prompt_is_on_disk_when_its_append_returns_under_the_actor(
    tmp_path: Path,
) -> None:
    """With the Persistence actor running, a user message is written before append_message
    returns (so before its message_end is delivered); other entries go through the actor."""
    manager = SessionManager.create(tmp_path, tmp_path / "sessions")
    manager.write_at_once()
    async with open_persistence(manager):
        entry = manager.append_message(UserMessage(content="hello", timestamp=1))
        assert manager.is_entry_persisted(entry)
        path = manager.get_session_file()
        assert path is not None
        assert _records(path)[-1]["message"]["content"] == "hello"
        name = manager.append_session_info("named")
        assert await manager.wait_persisted(name)
    manager.close()


def test_write_at_once_in_memory_writes_nothing(tmp_path: Path) -> None:
    """An in-memory session has no file to write."""
    manager = SessionManager.in_memory(str(tmp_path))
    manager.write_at_once()
    manager.append_message(UserMessage(content="hello", timestamp=1))
    assert manager.get_session_file() is None
    assert list(tmp_path.iterdir()) == []
