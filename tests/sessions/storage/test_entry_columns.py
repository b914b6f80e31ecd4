"""A loaded session builds its message entries only when asked for: every read view equals the
entries decoded line by line, and opening, building the context and restoring leave them
unbuilt."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from session_script import Messages, counter_ids, step_clock

from pitrio import _wire_fast
from pitrio.sessions import (
    LoadedSession,
    SessionManager,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    build_session_context,
    load_session_file,
)
from pitrio.sessions.storage._codec import decode_entry
from pitrio.sessions.storage._context import SessionTreeCycle

ACCELERATED: Final = pytest.mark.skipif(
    not _wire_fast.ENABLED, reason="PITRIO_ACCELERATORS=0: the loader builds every entry"
)

T = 1735689600000


def branched_session(tmp_path: Path) -> SessionManager:
    """A file with messages, a model and thinking change, a label, a compaction, a custom
    message, a branch summary, a second branch and an entry type this version does not know."""
    sm = SessionManager.create("/p", tmp_path, clock=step_clock(T), new_id=counter_ids())
    m = Messages(0)
    sm.append_model_change("faux", "faux-1")
    first = sm.append_message(m.user("one"))
    sm.append_message(m.assistant("two"))
    sm.append_thinking_level_change("high")
    kept = sm.append_message(m.user("three"))
    sm.append_message(m.assistant("four"))
    sm.append_label_change(first, "start")
    sm.append_compaction("summary", kept, 1234)
    sm.append_custom_message_entry("ext", "note", True)
    sm.append_message(m.user("five"))
    sm.branch_with_summary(first, "left behind")
    sm.append_message(m.user("six"))
    sm.append_session_info("named")
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    with open(path, "ab") as file:
        file.write(
            orjson.dumps(
                {
                    "type": "future_kind",
                    "id": "f1",
                    "parentId": sm.get_leaf_id(),
                    "timestamp": "2025-01-01T00:01:00.000Z",
                }
            )
            + b"\n"
        )
    return sm


def decoded(path: str) -> list[Any]:
    """Every entry line decoded on its own (the eager reference)."""
    lines = Path(path).read_bytes().splitlines()[1:]
    return [decode_entry(orjson.loads(line)) for line in lines]


def test_read_views_equal_the_entries_decoded_line_by_line(tmp_path: Path) -> None:
    """Entries, entry lookups, children, branches, the tree, labels and the context of an
    opened file are those of the entries decoded one by one."""
    path = branched_session(tmp_path).get_session_file()
    assert path is not None
    reference = decoded(path)
    by_id = {entry.id: entry for entry in reference}

    opened = SessionManager.open(path)
    context = opened.build_session_context()
    assert context == build_session_context(reference, opened.get_leaf_id(), by_id)
    roles = set()
    for entry in reference:
        opened.branch(entry.id)
        context = opened.build_session_context()
        assert context == build_session_context(reference, entry.id, by_id)
        roles.add(context.messages[0].role if context.messages else None)
    assert "compactionSummary" in roles
    assert opened.get_entries() == reference
    for entry in reference:
        assert opened.get_entry(entry.id) == entry
        assert opened.get_children(entry.id) == [e for e in reference if e.parent_id == entry.id]
        assert opened.get_branch(entry.id) == [
            e for e in reference if e.id in _ancestors(entry.id, by_id)
        ]
    assert opened.get_leaf_entry() == reference[-1]
    assert opened.get_labels() == {reference[1].id: "start"}
    assert opened.get_session_name() == "named"

    again = SessionManager.open(path)
    assert [node.entry for node in again.get_tree()] == [reference[0]]
    assert again.get_entries() == reference


def _ancestors(entry_id: str, by_id: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    current: str | None = entry_id
    while current is not None:
        found.add(current)
        current = by_id[current].parent_id
    return found


def test_a_message_line_with_unknown_keys_keeps_them(tmp_path: Path) -> None:
    """A message entry with keys this version does not know is read with its ``extra`` (the
    same entry as decoding the line alone), beside plain ones."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t0", "cwd": "/p"}
    message = {"role": "user", "content": "hi", "timestamp": 1}
    lines = [
        header,
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t1", "message": message},
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "t2",
            "message": message,
            "futureKey": [1, 2],
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    opened = SessionManager.open(path)
    extra = opened.get_entry("b")
    assert isinstance(extra, SessionMessageEntry)
    assert extra.extra == {"futureKey": [1, 2]}
    assert opened.get_entries() == decoded(str(path))


@ACCELERATED
def test_open_context_and_restore_build_no_message_entry(tmp_path: Path) -> None:
    """Opening a file, building its context and asking for a thinking entry on the branch
    build no message entry; one asked for is built once and kept."""
    path = branched_session(tmp_path).get_session_file()
    assert path is not None
    opened = SessionManager.open(path)
    opened.build_session_context()
    assert opened.has_on_branch(ThinkingLevelChangeEntry) is False
    messages = sum(1 for entry in decoded(path) if type(entry) is SessionMessageEntry)
    assert opened._entries.unbuilt == messages
    leaf = opened.get_leaf_entry()
    assert opened.get_leaf_entry() is leaf
    fresh = SessionManager.open(path)
    assert fresh.has_on_branch(SessionMessageEntry) is True
    assert fresh._entries.unbuilt == messages


def test_has_on_branch_sees_a_thinking_entry_on_the_branch_only(tmp_path: Path) -> None:
    """has_on_branch answers for the entries between the root and the leaf, as get_branch."""
    path = branched_session(tmp_path).get_session_file()
    assert path is not None
    opened = SessionManager.open(path)
    thinking = next(e for e in opened.get_entries() if type(e) is ThinkingLevelChangeEntry)
    assert opened.has_on_branch(ThinkingLevelChangeEntry, thinking.id) is True
    children = opened.get_children(thinking.id)
    assert opened.has_on_branch(ThinkingLevelChangeEntry, children[0].id) is True
    assert opened.has_on_branch(ThinkingLevelChangeEntry) is False


def test_a_parent_cycle_is_reported_on_a_loaded_file(tmp_path: Path) -> None:
    """Message entries whose parentId links loop raise SessionTreeCycle from get_branch and
    build_session_context, naming the entry the walk started at."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t0", "cwd": "/p"}
    message = {"role": "user", "content": "hi", "timestamp": 1}
    lines = [
        header,
        {"type": "message", "id": "a", "parentId": "b", "timestamp": "t", "message": message},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": message},
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    opened = SessionManager.open(path)
    with pytest.raises(SessionTreeCycle) as caught:
        opened.build_session_context()
    assert caught.value.entry_id == "b"
    with pytest.raises(SessionTreeCycle):
        opened.get_branch()


def test_loaded_session_accepts_a_list_of_entries(tmp_path: Path) -> None:
    """LoadedSession built with a list (by position or as ``entries=``) gives it back, equal to
    the loaded one."""
    path = branched_session(tmp_path).get_session_file()
    assert path is not None
    loaded = load_session_file(path)
    reference = decoded(path)
    assert loaded.entries == reference
    rebuilt = LoadedSession(
        path=path,
        header=loaded.header,
        entries=reference,
        problems=(),
        migrated=False,
        tail=loaded.tail,
    )
    assert rebuilt.entries == reference
    assert rebuilt == loaded
