"""Session files migrate v1 -> v2 -> v3 and are rewritten once (seed 002 s.7.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from session_script import counter_ids

from pitrio.sessions import (
    CURRENT_SESSION_VERSION,
    CompactionEntry,
    CustomMessage,
    SessionManager,
    SessionMessageEntry,
    migrate_session_entries,
)

HEADER_V1 = {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def user(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def v1_entries() -> list[dict[str, Any]]:
    return [
        dict(HEADER_V1),
        {"type": "message", "timestamp": "t1", "message": user("one", 1)},
        {"type": "message", "timestamp": "t2", "message": user("two", 2)},
        {
            "type": "compaction",
            "timestamp": "t3",
            "summary": "s",
            "firstKeptEntryIndex": 2,
            "tokensBefore": 10,
        },
        {"type": "message", "timestamp": "t4", "message": {"role": "hookMessage", "x": 1}},
    ]


def test_v1_gets_a_linear_tree_and_first_kept_entry_id() -> None:
    """v1 entries are chained with new ids; firstKeptEntryIndex (header counted) becomes an id."""
    entries = v1_entries()
    assert migrate_session_entries(entries, counter_ids()) is True
    assert entries[0]["version"] == CURRENT_SESSION_VERSION
    assert [(e["id"], e["parentId"]) for e in entries[1:]] == [
        ("00000001", None),
        ("00000002", "00000001"),
        ("00000003", "00000002"),
        ("00000004", "00000003"),
    ]
    assert entries[3]["firstKeptEntryId"] == "00000002"
    assert "firstKeptEntryIndex" not in entries[3]
    assert entries[4]["message"]["role"] == "custom"


def test_v1_ids_never_collide() -> None:
    """The v1 migration checks its new ids against the ones it already gave out."""
    candidates = iter(["aaaaaaaa", "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"])
    entries = v1_entries()
    migrate_session_entries(entries, lambda: next(candidates))
    assert [e["id"] for e in entries[1:]] == ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"]


def test_v2_renames_hook_messages_only() -> None:
    """v2 -> v3 renames the hookMessage role and leaves everything else alone."""
    entries: list[dict[str, Any]] = [
        {**HEADER_V1, "version": 2},
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": user("x", 1)},
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "t",
            "message": {"role": "hookMessage", "customType": "h"},
        },
    ]
    assert migrate_session_entries(entries) is True
    assert entries[0]["version"] == 3
    assert entries[1]["message"] == user("x", 1)
    assert entries[2]["message"]["role"] == "custom"
    assert entries[2]["id"] == "b"


def test_current_version_is_untouched() -> None:
    """A v3 file needs no migration."""
    entries: list[dict[str, Any]] = [{**HEADER_V1, "version": 3}]
    assert migrate_session_entries(entries) is False
    assert entries == [{**HEADER_V1, "version": 3}]


def test_migrated_file_is_rewritten_once(tmp_path: Path) -> None:
    """Opening a v1 file rewrites it as v3; opening it again changes nothing."""
    path = tmp_path / "old.jsonl"
    raw = v1_entries()
    raw[1]["timestamp"] = raw[2]["timestamp"] = raw[3]["timestamp"] = raw[4]["timestamp"] = (
        "2025-01-01T00:00:01.000Z"
    )
    raw[4]["message"] = {
        "role": "hookMessage",
        "customType": "h",
        "content": "c",
        "display": True,
        "timestamp": 3,
    }
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in raw))
    sm = SessionManager.open(path, new_id=counter_ids())
    rewritten = path.read_bytes()
    assert orjson.loads(rewritten.splitlines()[0])["version"] == 3
    entries = sm.get_entries()
    assert isinstance(entries[2], CompactionEntry)
    assert entries[2].first_kept_entry_id == entries[1].id
    assert isinstance(entries[3], SessionMessageEntry)
    assert isinstance(entries[3].message, CustomMessage)
    SessionManager.open(path)
    assert path.read_bytes() == rewritten


def test_fork_of_an_old_file_is_migrated_and_source_kept(tmp_path: Path) -> None:
    """Forking a v1 file writes a migrated copy and leaves the source as it was."""
    source = tmp_path / "old.jsonl"
    raw = v1_entries()[:3]
    source.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in raw))
    before = source.read_bytes()
    fork = SessionManager.fork_from(source, "/other", tmp_path / "forks", new_id=counter_ids())
    assert source.read_bytes() == before
    assert [e.id for e in fork.get_entries()] == ["00000001", "00000002"]
    assert fork.get_entries()[1].parent_id == "00000001"
