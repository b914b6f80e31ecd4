"""The index a session builds when it opens a file: each id finds its last entry, children come
in the order of their ids' first lines, an entry without an id is not found by id, the leaf is
the last entry with an id, and labels are applied in file order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pitrio.providers import UserMessage
from pitrio.sessions import SessionManager

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "t0", "cwd": "/p"}


def message(entry_id: str, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    """A message line."""
    if role == "user":
        body: dict[str, Any] = {"role": "user", "content": text, "timestamp": 1}
    else:
        body = {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "faux",
            "provider": "faux",
            "model": "m",
            "stopReason": "stop",
            "timestamp": 1,
        }
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "t",
        "message": body,
    }


def label(entry_id: str, parent: str, target: str, text: str | None) -> dict[str, Any]:
    """A label line."""
    return {
        "type": "label",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "t",
        "targetId": target,
        "label": text,
    }


def open_lines(tmp_path: Path, lines: list[dict[str, Any]]) -> SessionManager:
    """A manager opened on a file of ``lines`` after a header."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for obj in [HEADER, *lines]))
    return SessionManager.open(path, tmp_path)


def test_index_of_an_opened_file(tmp_path: Path) -> None:
    """Duplicate ids, an entry without an id, labels set and cleared: what opening finds."""
    sm = open_lines(
        tmp_path,
        [
            message("a", None, "one"),
            message("b", "a", "two", role="assistant"),
            message("c", "a", "three"),
            label("l1", "c", "a", "start"),
            label("l2", "l1", "b", "tmp"),
            label("l3", "l2", "b", None),
            message("b", "a", "two again"),
            {"type": "future_kind", "parentId": "l3", "timestamp": "t"},
        ],
    )
    entry = sm.get_entry("b")
    assert entry is not None and entry.message.content == "two again"  # type: ignore[union-attr]
    assert [e.id for e in sm.get_children("a")] == ["b", "c"]
    assert sm.get_entry("") is None
    assert sm.get_leaf_id() == "b"
    assert sm.get_labels() == {"a": "start"}
    assert [e.id for e in sm.get_branch()] == ["a", "b"]


def test_appends_are_written_once_the_file_has_an_assistant_message(tmp_path: Path) -> None:
    """Opening notes whether the file has an assistant message: appends to one without go
    unwritten until one comes (as pi), appends to one with it are written at once."""
    path = tmp_path / "s.jsonl"
    only_user = open_lines(tmp_path, [message("a", None, "one")])
    only_user.append_message(UserMessage(content="two", timestamp=2))
    assert len(path.read_bytes().splitlines()) == 2
    only_user.close()
    path.unlink()
    with_assistant = open_lines(
        tmp_path, [message("a", None, "one"), message("b", "a", "two", role="assistant")]
    )
    with_assistant.append_message(UserMessage(content="three", timestamp=3))
    assert len(path.read_bytes().splitlines()) == 4
    with_assistant.close()
