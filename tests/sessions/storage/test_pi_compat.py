"""pitrio and pi 0.73.1 read each other's session files the same way.

The files and pi's view of them come from tests/data/pi/sessions/capture.mjs, which drives pi's
own SessionManager (see tests/data/pi/README.md). pitrio opens each file and must see what pi
saw: the same entries (after migration), leaf, labels, name, tree, branch, children and, for
every leaf, the same ``buildSessionContext()`` output, compared as JSON.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from session_script import (
    PITRIO_WRITTEN,
    SESSIONS_DATA,
    Messages,
    counter_ids,
    write_pitrio_session,
)

from pitrio.codec import to_wire
from pitrio.sessions import SessionManager, SessionTreeNode, build_session_context

from pi_data import canonical

PI_FILES = [
    "all_entry_types",
    "branching",
    "compaction",
    "fork_branched",
    "fork_from",
    "torn_tail",
    "pitrio_written",
]


def pi_view(name: str) -> dict[str, Any]:
    return orjson.loads((SESSIONS_DATA / f"{name}.pi.json").read_bytes())  # type: ignore[no-any-return]


def _tree(nodes: list[SessionTreeNode]) -> list[dict[str, Any]]:
    out = []
    for node in nodes:
        item: dict[str, Any] = {"id": node.entry.id}
        if node.label is not None:
            item["label"] = node.label
            item["labelTimestamp"] = node.label_timestamp
        item["children"] = _tree(node.children)
        out.append(item)
    return out


def pitrio_view(sm: SessionManager, *, all_leaves: bool) -> dict[str, Any]:
    """The same record capture.mjs makes of pi's SessionManager."""
    entries = sm.get_entries()
    view: dict[str, Any] = {
        "header": to_wire(sm.get_header()),
        "entries": to_wire(entries),
        "leafId": sm.get_leaf_id(),
        "sessionName": sm.get_session_name(),
        "labels": {e.id: label for e in entries if (label := sm.get_label(e.id)) is not None},
        "tree": _tree(sm.get_tree()),
        "branch": [e.id for e in sm.get_branch()],
        "children": {e.id: [c.id for c in sm.get_children(e.id)] for e in entries},
        "context": to_wire(sm.build_session_context()),
    }
    if all_leaves:
        view["contextsByLeaf"] = {
            e.id: to_wire(build_session_context(entries, e.id)) for e in entries
        }
    return view


def assert_same_view(ours: dict[str, Any], pi: dict[str, Any]) -> None:
    for key in pi:
        assert canonical(ours[key]) == canonical(pi[key]), key


def open_copy(tmp_path: Path, source: Path) -> SessionManager:
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return SessionManager.open(target, new_id=counter_ids())


@pytest.mark.parametrize("name", PI_FILES)
def test_pitrio_reads_pi_files_as_pi_does(tmp_path: Path, name: str) -> None:
    """Opening a file pi wrote gives pi's entries, tree, labels and contexts for every leaf."""
    pi = pi_view(name)
    sm = open_copy(tmp_path, SESSIONS_DATA / f"{name}.jsonl")
    assert_same_view(pitrio_view(sm, all_leaves="contextsByLeaf" in pi), pi)


@pytest.mark.parametrize("version", [1, 2])
def test_old_versions_migrate_exactly_as_in_pi(tmp_path: Path, version: int) -> None:
    """A v1/v2 file opened by pitrio is migrated and rewritten byte for byte as pi rewrote it."""
    target = tmp_path / f"migrate_v{version}.jsonl"
    shutil.copyfile(SESSIONS_DATA / f"migrate_v{version}.input.jsonl", target)
    sm = SessionManager.open(target, new_id=counter_ids())
    assert target.read_bytes() == (SESSIONS_DATA / f"migrate_v{version}.jsonl").read_bytes()
    assert_same_view(pitrio_view(sm, all_leaves=True), pi_view(f"migrate_v{version}"))


def test_pitrio_written_file_is_reproducible(tmp_path: Path) -> None:
    """The session pitrio writes with fixed ids and clock is byte-identical to the committed file
    that pi's capture read."""
    written = write_pitrio_session(tmp_path)
    assert written.read_bytes() == PITRIO_WRITTEN.read_bytes()


def test_pi_reads_pitrio_file_as_pitrio_does() -> None:
    """pi's view of pitrio's file (recorded by the capture) equals pitrio's view of it."""
    pi = pi_view("pitrio_written")
    sm = SessionManager.open(PITRIO_WRITTEN, session_dir=PITRIO_WRITTEN.parent)
    ours = pitrio_view(sm, all_leaves=True)
    # pi re-serialises the entries it read; equal JSON means pi understood every field.
    assert canonical(ours["entries"]) == canonical(
        [orjson.loads(line) for line in PITRIO_WRITTEN.read_bytes().splitlines()[1:]]
    )
    assert_same_view(ours, pi)


def test_lazy_first_flush_matches_pi(tmp_path: Path) -> None:
    """Lines on disk after each step are what pi wrote: nothing until the first assistant message."""
    steps = orjson.loads((SESSIONS_DATA / "behaviour.json").read_bytes())["lazyFlush"]
    m = Messages(0)
    sm = SessionManager.create("/work/project", tmp_path)
    path = Path(sm.get_session_file() or "")

    def lines() -> int | None:
        return len(path.read_bytes().splitlines()) if path.exists() else None

    actions: dict[str, Callable[[], object]] = {
        "create": lambda: None,
        "appendModelChange": lambda: sm.append_model_change("anthropic", "claude-sonnet-4-5"),
        "appendMessage(user)": lambda: sm.append_message(m.user("hi")),
        "appendMessage(assistant)": lambda: sm.append_message(m.assistant("hello")),
        "appendLabelChange": lambda: sm.append_label_change(sm.get_leaf_id() or "", "x"),
        "newSession": lambda: sm.new_session(),
    }
    observed = []
    for step in steps:
        actions[step["after"]]()
        observed.append({"after": step["after"], "fileLines": lines()})
    assert observed == steps
