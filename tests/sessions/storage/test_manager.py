"""SessionManager: appends, tree navigation, labels, names, forks, and finding sessions."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from session_script import Messages, counter_ids, step_clock

from pitrio._exceptions import UsageError
from pitrio.sessions import (
    AGENT_DIR_ENV,
    CompactionSummaryMessage,
    LabelEntry,
    SessionEntryNotFound,
    SessionManager,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    encode_cwd,
    get_default_session_dir,
)

T = 1735689600000


def memory() -> tuple[SessionManager, Messages]:
    return SessionManager.in_memory("/p", clock=step_clock(T), new_id=counter_ids()), Messages(0)


def lines(path: str | Path | None) -> list[dict[str, object]]:
    assert path is not None
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines()]


def test_appends_chain_entries_and_move_the_leaf() -> None:
    """Each append is a child of the leaf, becomes the leaf, and returns its id."""
    sm, m = memory()
    a = sm.append_model_change("p", "m")
    b = sm.append_message(m.user("hi"))
    c = sm.append_thinking_level_change("low")
    assert [(e.id, e.parent_id) for e in sm.get_entries()] == [(a, None), (b, a), (c, b)]
    assert sm.get_leaf_id() == c
    leaf = sm.get_leaf_entry()
    assert leaf is not None and leaf.id == c
    entry = sm.get_entry(b)
    assert isinstance(entry, SessionMessageEntry)
    assert entry.timestamp == "2025-01-01T00:00:02.000Z"


def test_get_entries_is_a_copy() -> None:
    """Changing the returned list does not change the session."""
    sm, m = memory()
    sm.append_message(m.user("hi"))
    sm.get_entries().clear()
    assert len(sm.get_entries()) == 1


def test_branch_navigation() -> None:
    """branch() moves the leaf back, get_branch walks to the root, get_children lists children."""
    sm, m = memory()
    root = sm.append_message(m.user("root"))
    a = sm.append_message(m.assistant("a"))
    x = sm.append_message(m.user("x"))
    sm.branch(a)
    y = sm.append_message(m.user("y"))
    assert [e.id for e in sm.get_branch()] == [root, a, y]
    assert [e.id for e in sm.get_branch(x)] == [root, a, x]
    assert [e.id for e in sm.get_children(a)] == [x, y]
    assert sm.get_branch("missing") == []
    with pytest.raises(SessionEntryNotFound) as info:
        sm.branch("missing")
    assert info.value.entry_id == "missing"


def test_reset_leaf_starts_a_new_root() -> None:
    """After reset_leaf the next entry has no parent."""
    sm, m = memory()
    sm.append_message(m.user("first"))
    sm.reset_leaf()
    assert sm.get_leaf_id() is None and sm.get_leaf_entry() is None
    second = sm.append_message(m.user("second root"))
    entry = sm.get_entry(second)
    assert entry is not None and entry.parent_id is None
    assert [node.entry.id for node in sm.get_tree()] == [sm.get_entries()[0].id, second]


def test_tree_sorts_children_by_time_and_keeps_orphans(tmp_path: Path) -> None:
    """get_tree orders children oldest first and returns entries with a missing parent as roots."""
    path = tmp_path / "s.jsonl"
    objects = [
        {
            "type": "session",
            "version": 3,
            "id": "s",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/p",
        },
        {
            "type": "custom",
            "customType": "t",
            "id": "a",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
        },
        {
            "type": "custom",
            "customType": "t",
            "id": "c",
            "parentId": "a",
            "timestamp": "2025-01-01T00:00:03.000Z",
        },
        {
            "type": "custom",
            "customType": "t",
            "id": "b",
            "parentId": "a",
            "timestamp": "2025-01-01T00:00:02.000Z",
        },
        {
            "type": "custom",
            "customType": "t",
            "id": "o",
            "parentId": "gone",
            "timestamp": "2025-01-01T00:00:04.000Z",
        },
    ]
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))
    sm = SessionManager.open(path)
    tree = sm.get_tree()
    assert [node.entry.id for node in tree] == ["a", "o"]
    assert [child.entry.id for child in tree[0].children] == ["b", "c"]
    assert [e.id for e in sm.get_children("a")] == ["c", "b"]
    assert sm.get_leaf_id() == "o"


def test_labels_set_and_clear() -> None:
    """Labels are set by label entries and cleared by an empty or missing label."""
    sm, m = memory()
    target = sm.append_message(m.user("hi"))
    sm.append_label_change(target, "one")
    assert sm.get_label(target) == "one"
    (node,) = sm.get_tree()
    assert node.label == "one" and node.label_timestamp == "2025-01-01T00:00:02.000Z"
    sm.append_label_change(target, "")
    assert sm.get_label(target) is None
    sm.append_label_change(target, "two")
    sm.append_label_change(target, None)
    assert sm.get_label(target) is None and sm.get_labels() == {}
    with pytest.raises(SessionEntryNotFound):
        sm.append_label_change("missing", "x")


def test_session_name_is_the_latest_info() -> None:
    """The name is the latest session_info name, trimmed; an empty one clears it."""
    sm, _ = memory()
    assert sm.get_session_name() is None
    sm.append_session_info("  My session ")
    assert sm.get_session_name() == "My session"
    sm.append_session_info("   ")
    assert sm.get_session_name() is None


def test_summary_messages_need_their_own_entries() -> None:
    """append_message refuses compaction summaries (they are compaction entries)."""
    sm, _ = memory()
    with pytest.raises(UsageError):
        sm.append_message(CompactionSummaryMessage(summary="s", tokens_before=1, timestamp=1))


def test_branch_with_summary_requires_existing_entry() -> None:
    """Branching with a summary from an unknown entry raises."""
    sm, _ = memory()
    with pytest.raises(SessionEntryNotFound):
        sm.branch_with_summary("missing", "s")


def test_create_branched_session_in_memory() -> None:
    """The new session holds the path to the leaf, with the path's labels re-created at its end."""
    sm, m = memory()
    u1 = sm.append_message(m.user("u1"))
    a1 = sm.append_message(m.assistant("a1"))
    other = sm.append_message(m.user("other"))
    sm.append_label_change(u1, "keep")
    sm.append_label_change(other, "drop")
    old_id = sm.get_session_id()
    assert sm.create_branched_session(a1) is None
    assert sm.get_session_id() != old_id
    entries = sm.get_entries()
    assert [e.id for e in entries[:2]] == [u1, a1]
    label = entries[2]
    assert isinstance(label, LabelEntry)
    assert (label.target_id, label.label, label.parent_id) == (u1, "keep", a1)
    assert len(entries) == 3
    assert sm.get_label(u1) == "keep"
    header = sm.get_header()
    assert header is not None and header.parent_session is None
    with pytest.raises(SessionEntryNotFound):
        sm.create_branched_session("missing")


def test_create_branched_session_writes_a_new_file(tmp_path: Path) -> None:
    """A persisted branch goes to a new file naming the old one as parent."""
    sm = SessionManager.create("/p", tmp_path, new_id=counter_ids())
    m = Messages(0)
    u1 = sm.append_message(m.user("u1"))
    a1 = sm.append_message(m.assistant("a1"))
    sm.append_message(m.user("u2"))
    old_file = sm.get_session_file()
    new_file = sm.create_branched_session(a1)
    assert new_file is not None and new_file != old_file
    written = lines(new_file)
    assert written[0]["parentSession"] == old_file
    assert [line["id"] for line in written[1:]] == [u1, a1]
    assert len(lines(old_file)) == 4


def test_create_branched_session_without_answer_is_lazy(tmp_path: Path) -> None:
    """A branch whose path has no assistant message is written with the first answer."""
    sm = SessionManager.create("/p", tmp_path)
    m = Messages(0)
    u1 = sm.append_message(m.user("u1"))
    sm.append_message(m.assistant("a1"))
    new_file = sm.create_branched_session(u1)
    assert new_file is not None and not os.path.exists(new_file)
    sm.append_message(m.assistant("answer"))
    assert [line["type"] for line in lines(new_file)] == ["session", "message", "message"]


def test_fork_from_copies_into_another_project(tmp_path: Path) -> None:
    """fork_from writes a complete new file with the target cwd and the source as parent."""
    source = SessionManager.create("/p", tmp_path / "a")
    m = Messages(0)
    source.append_message(m.user("u"))
    source.append_message(m.assistant("a"))
    source_file = source.get_session_file()
    assert source_file is not None
    fork = SessionManager.fork_from(source_file, "/q", tmp_path / "b")
    fork_file = fork.get_session_file()
    written = lines(fork_file)
    assert written[0]["cwd"] == "/q" and written[0]["parentSession"] == source_file
    assert written[1:] == lines(source_file)[1:]
    assert fork.get_cwd() == "/q" and fork.get_entries() == source.get_entries()
    entry = fork.append_message(m.user("more"))
    assert fork.is_entry_persisted(entry)


def test_new_session_header(tmp_path: Path) -> None:
    """new_session takes an explicit id and parent and names the file after time and id."""
    sm = SessionManager.create("/p", tmp_path, clock=step_clock(T))
    path = sm.new_session(id="my-id", parent_session="/x.jsonl")
    header = sm.get_header()
    assert header is not None
    assert (header.id, header.parent_session, header.cwd) == ("my-id", "/x.jsonl", "/p")
    assert path == str(
        tmp_path / f"{header.timestamp.replace(':', '-').replace('.', '-')}_my-id.jsonl"
    )
    assert sm.get_session_id() == "my-id" and sm.get_entries() == []


def test_open_missing_file_creates_it_there(tmp_path: Path) -> None:
    """Opening a path that does not exist starts a session that will be written at that path."""
    path = tmp_path / "explicit.jsonl"
    sm = SessionManager.open(path, cwd_override="/elsewhere")
    m = Messages(0)
    sm.append_message(m.user("u"))
    sm.append_message(m.assistant("a"))
    assert sm.get_session_file() == str(path)
    assert lines(path)[0]["cwd"] == "/elsewhere"
    assert SessionManager.open(path).get_cwd() == "/elsewhere"


def test_open_empty_file_writes_a_header(tmp_path: Path) -> None:
    """An empty file gets a header at once, so no entry can land in a file without one."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    sm = SessionManager.open(path)
    assert [line["type"] for line in lines(path)] == ["session"]
    assert lines(path)[0]["id"] == sm.get_session_id()


def test_in_memory_session_has_no_file(tmp_path: Path) -> None:
    """An in-memory session reports no file and never persists."""
    sm, m = memory()
    entry = sm.append_message(m.assistant("a"))
    assert sm.get_session_file() is None and not sm.is_persisted()
    assert not sm.is_entry_persisted(entry)


def test_default_session_dir_follows_agent_dir_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions go to $PITRIO_CODING_AGENT_DIR/sessions/--<cwd>--/ (created on demand)."""
    monkeypatch.setenv(AGENT_DIR_ENV, str(tmp_path / "agent"))
    directory = get_default_session_dir("/work/my project")
    assert directory == str(tmp_path / "agent" / "sessions" / "--work-my project--")
    assert os.path.isdir(directory)
    sm = SessionManager.create("/work/my project")
    assert sm.get_session_dir() == directory


def test_default_agent_dir_is_under_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the variable the agent dir is ~/.pitrio/agent."""
    monkeypatch.delenv(AGENT_DIR_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_default_session_dir("/w") == str(
        tmp_path / ".pitrio" / "agent" / "sessions" / "--w--"
    )


@pytest.mark.parametrize(
    ("cwd", "name"),
    [
        ("/work/project", "--work-project--"),
        ("C:\\Users\\me", "--C--Users-me--"),
        ("rel/dir", "--rel-dir--"),
    ],
)
def test_cwd_encoding_is_pis(cwd: str, name: str) -> None:
    """The folder name drops a leading separator and turns / \\ : into dashes."""
    assert encode_cwd(cwd) == name


def _session(directory: Path, user_text: str, ts: int, name: str | None = None) -> str:
    sm = SessionManager.create("/p", directory)
    m = Messages(ts)
    sm.append_message(m.user(user_text))
    sm.append_message(m.assistant("answer"))
    if name is not None:
        sm.append_session_info(name)
    path = sm.get_session_file()
    assert path is not None
    return path


def test_continue_recent_opens_the_newest_file(tmp_path: Path) -> None:
    """continue_recent opens the session file with the latest mtime; none: a new session."""
    fresh = SessionManager.continue_recent("/p", tmp_path / "empty")
    assert fresh.get_entries() == []
    older = _session(tmp_path, "older", 1000)
    newer = _session(tmp_path, "newer", 2000)
    (tmp_path / "junk.jsonl").write_bytes(b"not a session\n")
    os.utime(older, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    os.utime(newer, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    os.utime(tmp_path / "junk.jsonl", ns=(3_000_000_000_000_000_000,) * 2)
    assert SessionManager.continue_recent("/p", tmp_path).get_session_file() == older


def test_list_sessions_summarises_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """list_sessions reports name, first message, counts, most recently active first."""
    first = _session(tmp_path, "first question", 1_000_000, name="Named")
    second = _session(tmp_path, "second question", 5_000_000)
    (tmp_path / "broken.jsonl").write_bytes(b"{\n")
    infos = SessionManager.list_sessions("/p", tmp_path)
    assert [info.path for info in infos] == [second, first]
    info = infos[1]
    assert (info.name, info.first_message, info.message_count, info.cwd) == (
        "Named",
        "first question",
        2,
        "/p",
    )
    assert info.all_messages_text == "first question answer"
    assert info.modified.timestamp() * 1000 == 1_002_000
    monkeypatch.setenv(AGENT_DIR_ENV, str(tmp_path / "agent"))
    other = _session(Path(get_default_session_dir("/q")), "elsewhere", 9_000_000)
    assert [i.path for i in SessionManager.list_all_sessions()] == [other]


def test_branch_after_each_step_reflects_appends_and_moves(tmp_path: Path) -> None:
    """get_branch, build_session_context and has_on_branch asked after every append, branch
    and reopen always describe the current leaf's path (the last path is reused only while
    nothing changed)."""
    sm = SessionManager.create("/p", str(tmp_path), clock=step_clock(T), new_id=counter_ids())
    m = Messages(0)
    root = sm.append_message(m.user("root"))
    a = sm.append_message(m.assistant("a"))
    assert [e.id for e in sm.get_branch()] == [root, a]
    assert len(sm.build_session_context().messages) == 2
    b = sm.append_message(m.user("b"))
    assert [e.id for e in sm.get_branch()] == [root, a, b]
    assert len(sm.build_session_context().messages) == 3
    sm.branch(root)
    assert [e.id for e in sm.get_branch()] == [root]
    assert not sm.has_on_branch(ThinkingLevelChangeEntry)
    level = sm.append_thinking_level_change("high")
    assert [e.id for e in sm.get_branch()] == [root, level]
    assert sm.has_on_branch(ThinkingLevelChangeEntry)
    assert sm.build_session_context().thinking_level == "high"
    path = sm.get_session_file()
    assert path is not None
    reopened = SessionManager.open(path, str(tmp_path))
    assert [e.id for e in reopened.get_branch()] == [root, level]
    reopened.branch(b)
    assert [e.id for e in reopened.get_branch()] == [root, a, b]
    assert not reopened.has_on_branch(ThinkingLevelChangeEntry)


def test_switching_files_never_reuses_the_other_files_path(tmp_path: Path) -> None:
    """After set_session_file, the branch is the new file's, though the leaf sits at the same
    position as the old file's leaf (positions are per file)."""
    m = Messages(0)
    first = SessionManager.create("/p", str(tmp_path), clock=step_clock(T), new_id=counter_ids())
    chain = [first.append_message(m.user(text)) for text in ("a", "b", "c")]
    second = SessionManager.create(
        "/p", str(tmp_path), clock=step_clock(T + 10_000), new_id=counter_ids(100)
    )
    root = second.append_message(m.user("root"))
    second.append_message(m.assistant("side"))  # the first assistant message writes the file
    second.branch(root)
    leaf = second.append_message(m.user("leaf"))
    second_file = second.get_session_file()
    assert second_file is not None
    assert [e.id for e in first.get_branch()] == chain
    first.set_session_file(second_file)
    assert [e.id for e in first.get_branch()] == [root, leaf]
