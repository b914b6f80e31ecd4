"""The session's entry tree in memory: appends, the leaf, labels, branches, read views.

:class:`SessionTree` is the part of :class:`~pitrio.sessions.SessionManager` that never touches
a file: every ``append_*`` builds an entry, indexes it and hands it to
:meth:`SessionTree._write_entry`, which the manager overrides to write its file. Entries are
never modified or deleted; the *leaf* is the current position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from pitrio._exceptions import UsageError
from pitrio.actors import AgentMessage
from pitrio.providers import AssistantMessage, ImageContent, TextContent
from pitrio.sessions.storage._context import SessionContext, SessionTreeCycle, context_of_path
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextTransformEntry,
    CustomEntry,
    CustomMessageEntry,
    EphemeralEntry,
    LabelEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionEntryNotFound,
    SessionInfoEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    generate_id,
    iso_timestamp,
    timestamp_ms,
)
from pitrio.sessions.storage._entry_columns import EntryColumns

Clock = Callable[[], int]
"""Returns the current time in milliseconds since the epoch (entry and header timestamps)."""
IdSource = Callable[[], str]
"""Returns a fresh id candidate (entry ids are checked for collisions and retried)."""


@attrs.define(kw_only=True)
class SessionTreeNode:
    """One entry of :meth:`SessionManager.get_tree` with its children (oldest first)."""

    entry: SessionEntry
    children: list[SessionTreeNode] = attrs.field(factory=list)
    label: str | None = None
    """The entry's current label."""
    label_timestamp: str | None = None
    """When the label was last set."""


class SessionTree:
    """An append-only tree of entries with a movable leaf (the in-memory half of a session).

    Args:
        clock: epoch milliseconds for timestamps.
        new_id: entry id candidates.
    """

    def __init__(self, *, clock: Clock, new_id: IdSource) -> None:
        self._clock = clock
        self._new_id = new_id
        self._entries = EntryColumns()
        self._pos: dict[str, int] = {}
        """Entry id -> its position in ``_entries`` (the last entry with that id)."""
        self._labels: dict[str, str] = {}
        self._label_times: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._has_assistant = False
        self._has_context_transform = False
        # The last path computed: (start, positions). A restore asks for the leaf's path
        # twice (the context, then has_on_branch); appends and rebuilds clear it.
        self._last_path: tuple[int | None, list[int]] | None = None

    def _build_index(self) -> None:
        self._last_path = None
        self._labels = {}
        self._label_times = {}
        self._has_context_transform = False
        columns = self._entries
        ids = columns.ids
        # Loops in C over the columns (a long session has tens of thousands of entries); only
        # the entries built (the lines that are not plain messages) are walked here, in order.
        # Each id maps to its last position, as appending them one by one would; an entry
        # without an id ("") cannot be found by id.
        self._pos = pos = dict(zip(ids, range(len(ids)), strict=True))
        pos.pop("", None)
        self._leaf_id = next(filter(None, reversed(ids)), None)
        has_assistant = AssistantMessage in set(map(type, columns.messages))
        for entry in filter(None, columns.entries):  # entries have no __len__ or __bool__
            if type(entry) is SessionMessageEntry:
                if type(entry.message) is AssistantMessage:
                    has_assistant = True
            elif type(entry) is LabelEntry:
                self._apply_label(entry)
            elif type(entry) is ContextTransformEntry:
                self._has_context_transform = True
        self._has_assistant = has_assistant

    def _path(self, start: int | None) -> list[int]:
        """Positions of the entries from the root to the one at ``start``, root first (a list
        the caller must not change: the last one is kept for the next call).

        Raises:
            SessionTreeCycle: the ``parentId`` links loop (a damaged file).
        """
        last = self._last_path
        if last is not None and last[0] == start:
            return last[1]
        path: list[int] = []
        append = path.append
        parents = self._entries.parents
        get = self._pos.get
        current = start
        # A path longer than the whole tree can only be a loop.
        for _ in range(len(self._pos) + 2):
            if current is None:
                break
            append(current)
            parent = parents[current]
            current = get(parent) if parent else None
        else:
            raise SessionTreeCycle(self._entries.ids[path[0]])
        path.reverse()
        self._last_path = (start, path)
        return path

    def _apply_label(self, entry: LabelEntry) -> None:
        if entry.label:
            self._labels[entry.target_id] = entry.label
            self._label_times[entry.target_id] = entry.timestamp
        else:
            self._labels.pop(entry.target_id, None)
            self._label_times.pop(entry.target_id, None)

    def _append_entry(self, entry: SessionEntry) -> str:
        entry_id = entry.id
        self._last_path = None
        self._pos[entry_id] = len(self._entries)
        self._entries.add(entry)
        self._leaf_id = entry_id
        if type(entry) is ContextTransformEntry:
            self._has_context_transform = True
        self._write_entry(entry)
        return entry_id

    def _write_entry(self, entry: SessionEntry) -> None:
        """Store an appended entry (in memory: nothing to do; the manager writes its file)."""

    def _next(self) -> tuple[str, str | None, str]:
        return generate_id(self._pos, self._new_id), self._leaf_id, iso_timestamp(self._clock())

    def append_message(self, message: AgentMessage) -> str:
        """Append a message (user, assistant, tool result, custom, bash execution).

        Compaction and branch summaries are entries of their own: use
        :meth:`append_compaction` and :meth:`branch_with_summary`.

        Raises:
            UsageError: ``message`` is a compaction or branch summary message.
        """
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            raise UsageError(
                f"{message.role} messages are stored as compaction / branch_summary entries"
            )
        entry_id, parent_id, timestamp = self._next()
        if not self._has_assistant and type(message) is AssistantMessage:
            self._has_assistant = True
        return self._append_entry(
            SessionMessageEntry(
                id=entry_id, parent_id=parent_id, timestamp=timestamp, message=message
            )
        )

    def append_thinking_level_change(self, thinking_level: str) -> str:
        """Record a thinking level change."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            ThinkingLevelChangeEntry(
                id=entry_id, parent_id=parent_id, timestamp=timestamp, thinking_level=thinking_level
            )
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model switch."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            ModelChangeEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                provider=provider,
                model_id=model_id,
            )
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str:
        """Record a compaction: the context keeps entries from ``first_kept_entry_id`` on."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            CompactionEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                summary=summary,
                first_kept_entry_id=first_kept_entry_id,
                tokens_before=tokens_before,
                details=details,
                from_hook=from_hook,
            )
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Store extension state (not part of the LLM context)."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            CustomEntry(
                custom_type=custom_type,
                data=data,
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
            )
        )

    def append_context_transform(
        self,
        reason: str,
        patch: Any,
        transformer_name: str | None = None,
        display: Any = None,
    ) -> str:
        """Persist a context patch (seed 001's ``context_transform``; replayed on rebuild)."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            ContextTransformEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                reason=reason,
                patch=patch,
                transformer_name=transformer_name,
                display=display,
            )
        )

    def append_ephemeral(self, patch: Any, transformer_name: str | None = None) -> str:
        """Log a request-only context patch (seed 001's ``ephemeral``; never replayed)."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            EphemeralEntry(
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
                patch=patch,
                transformer_name=transformer_name,
            )
        )

    def append_session_info(self, name: str) -> str:
        """Set the session's display name (surrounding whitespace removed; empty clears it)."""
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            SessionInfoEntry(
                id=entry_id, parent_id=parent_id, timestamp=timestamp, name=name.strip()
            )
        )

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: str | Iterable[TextContent | ImageContent],
        display: bool,
        details: Any = None,
    ) -> str:
        """Append an extension message that is part of the LLM context.

        Args:
            custom_type: the extension's identifier.
            content: text, or text and image blocks.
            display: show it in the UI (``False``: hidden).
            details: extension data that is not sent to the model.
        """
        entry_id, parent_id, timestamp = self._next()
        return self._append_entry(
            CustomMessageEntry(
                custom_type=custom_type,
                content=content,
                display=display,
                details=details,
                id=entry_id,
                parent_id=parent_id,
                timestamp=timestamp,
            )
        )

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Set (or with ``None``/``""`` clear) the label of an entry.

        Raises:
            SessionEntryNotFound: no entry ``target_id``.
        """
        if target_id not in self._pos:
            raise SessionEntryNotFound(target_id)
        entry_id, parent_id, timestamp = self._next()
        entry = LabelEntry(
            id=entry_id, parent_id=parent_id, timestamp=timestamp, target_id=target_id, label=label
        )
        self._append_entry(entry)
        self._apply_label(entry)
        return entry_id

    def get_entries(self) -> list[SessionEntry]:
        """All entries in file order (a new list; the entries themselves are immutable)."""
        return list(self._entries.all())

    def get_session_name(self) -> str | None:
        """The display name set by the latest ``session_info`` entry, if any."""
        for entry in reversed(self._entries.entries):
            if type(entry) is SessionInfoEntry:
                return (entry.name or "").strip() or None
        return None

    def has_context_transforms(self) -> bool:
        """Whether any entry of the file (on any branch) is a ``context_transform``.

        Kept up to date on load and append, so a session that never had a transform answers
        without walking its path on every request.
        """
        return self._has_context_transform

    def get_leaf_id(self) -> str | None:
        """The current leaf (``None`` before the first entry)."""
        return self._leaf_id

    def get_leaf_entry(self) -> SessionEntry | None:
        """The current leaf entry."""
        return self.get_entry(self._leaf_id) if self._leaf_id else None

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The entry with this id."""
        index = self._pos.get(entry_id)
        return None if index is None else self._entries.get(index)

    def get_children(self, parent_id: str) -> list[SessionEntry]:
        """The direct children of an entry, in file order."""
        parents = self._entries.parents
        get = self._entries.get
        return [get(index) for index in self._pos.values() if parents[index] == parent_id]

    def get_label(self, entry_id: str) -> str | None:
        """The current label of an entry."""
        return self._labels.get(entry_id)

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), root first."""
        start_id = from_id if from_id is not None else self._leaf_id
        start = self._pos.get(start_id) if start_id else None
        return self._entries.get_many(self._path(start))

    def has_on_branch(self, entry_type: type[Any], from_id: str | None = None) -> bool:
        """Whether an entry of ``entry_type`` (``isinstance``) is on :meth:`get_branch`
        (without building the message entries the branch holds)."""
        start_id = from_id if from_id is not None else self._leaf_id
        start = self._pos.get(start_id) if start_id else None
        entries = self._entries.entries
        lazy = issubclass(SessionMessageEntry, entry_type)
        for index in self._path(start):
            entry = entries[index]
            if (lazy and entry is None) or isinstance(entry, entry_type):
                return True
        return False

    def build_session_context(self) -> SessionContext:
        """The LLM context of the path to the leaf (seed 002 s.4.1)."""
        leaf_id = self._leaf_id
        if leaf_id is None:
            return SessionContext(messages=[], thinking_level="off", model=None)
        columns = self._entries
        leaf = self._pos.get(leaf_id)
        if leaf is None:
            if not columns:
                return SessionContext(messages=[], thinking_level="off", model=None)
            leaf = len(columns) - 1
        return context_of_path(
            self._path(leaf), columns.entries, columns.messages, columns.ids.__getitem__
        )

    def get_tree(self) -> list[SessionTreeNode]:
        """The entries as a tree: the roots (orphans included), children oldest first."""
        nodes: dict[str, SessionTreeNode] = {}
        entries = self._entries.all()
        for entry in entries:
            nodes[entry.id] = SessionTreeNode(
                entry=entry,
                label=self._labels.get(entry.id),
                label_timestamp=self._label_times.get(entry.id),
            )
        roots: list[SessionTreeNode] = []
        for entry in entries:
            node = nodes[entry.id]
            parent = nodes.get(entry.parent_id) if entry.parent_id else None
            if entry.parent_id is None or entry.parent_id == entry.id or parent is None:
                roots.append(node)
            else:
                parent.children.append(node)
        stack = list(roots)
        while stack:
            node = stack.pop()
            node.children.sort(key=lambda child: timestamp_ms(child.entry.timestamp))
            stack.extend(node.children)
        return roots

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf to an earlier entry; the next append starts a new branch there.

        Raises:
            SessionEntryNotFound: no such entry.
        """
        if branch_from_id not in self._pos:
            raise SessionEntryNotFound(branch_from_id)
        self._leaf_id = branch_from_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry; the next append is a new root."""
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str:
        """Branch like :meth:`branch` and append a summary of the branch that was left.

        Args:
            branch_from_id: the entry to continue from (``None``: before the first entry).
            summary: the summary of the abandoned path.
            details: data not sent to the model (pi: file lists).
            from_hook: True when an extension wrote the summary.

        Raises:
            SessionEntryNotFound: no such entry.
        """
        if branch_from_id is not None and branch_from_id not in self._pos:
            raise SessionEntryNotFound(branch_from_id)
        self._leaf_id = branch_from_id
        entry_id, _, timestamp = self._next()
        return self._append_entry(
            BranchSummaryEntry(
                id=entry_id,
                parent_id=branch_from_id,
                timestamp=timestamp,
                from_id=branch_from_id if branch_from_id is not None else "root",
                summary=summary,
                details=details,
                from_hook=from_hook,
            )
        )

    def get_labels(self) -> dict[str, str]:
        """Every current label, by target entry id."""
        return dict(self._labels)
