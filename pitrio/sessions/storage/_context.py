"""What a session sends to the model: :func:`build_session_context` (seed 002 s.4.1, s.4.6).

The context is the path from the root to the current leaf, with the latest compaction on that
path replacing everything before its first kept entry, branch summaries and custom messages
turned into their message kinds, and the model and thinking level restored from the path.
Unlike pi, which builds the path with ``Array.unshift`` (quadratic), the walk here is linear.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from pitrio.actors import AgentMessage
from pitrio.codec import extra_field, wire
from pitrio.providers import AssistantMessage
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionError,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
)


class _Unset:
    """Type of :data:`LAST_ENTRY`."""

    def __repr__(self) -> str:
        return "LAST_ENTRY"


LAST_ENTRY: Final = _Unset()
"""``leaf_id`` default of :func:`build_session_context`: use the last entry as the leaf."""


@wire
@attrs.frozen(kw_only=True)
class ContextModel:
    """The model a context was last used with (pi: ``{provider, modelId}``)."""

    provider: str
    model_id: str
    extra: dict[str, Any] | None = extra_field()


def _messages(items: Sequence[AgentMessage]) -> list[AgentMessage]:
    return items if isinstance(items, list) else list(items)


@wire
@attrs.frozen(kw_only=True)
class SessionContext:
    """The messages for the LLM plus the thinking level and model to restore (pi's shape)."""

    messages: list[AgentMessage] = attrs.field(converter=_messages)
    thinking_level: str
    model: ContextModel | None
    """``None`` when no model change or assistant message is on the path (written as null)."""
    extra: dict[str, Any] | None = extra_field()


class SessionTreeCycle(SessionError, ValueError):
    """Following ``parentId`` links from an entry came back to an entry already visited.

    Attributes:
        entry_id: the entry where the walk started.
    """

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"the parentId chain of entry {entry_id} has a cycle")
        self.entry_id = entry_id


def path_to_root(
    start: SessionEntry | None, by_id: Mapping[str, SessionEntry]
) -> list[SessionEntry]:
    """The entries from the root to ``start`` (inclusive), in root-to-leaf order.

    Raises:
        SessionTreeCycle: the ``parentId`` links loop (a damaged file).
    """
    path: list[SessionEntry] = []
    append = path.append
    get = by_id.get
    current = start
    # A path longer than the whole tree can only be a loop.
    for _ in range(len(by_id) + 2):
        if current is None:
            break
        append(current)
        parent = current.parent_id
        current = get(parent) if parent else None
    else:
        raise SessionTreeCycle(path[0].id)
    path.reverse()
    return path


def get_latest_compaction_entry(entries: Sequence[SessionEntry]) -> CompactionEntry | None:
    """The last ``compaction`` entry of ``entries``, or ``None``."""
    for entry in reversed(entries):
        if type(entry) is CompactionEntry:
            return entry
    return None


def _append_message(messages: list[AgentMessage], entry: SessionEntry) -> None:
    if type(entry) is SessionMessageEntry:
        messages.append(entry.message)
    elif type(entry) is CustomMessageEntry:
        messages.append(
            create_custom_message(
                entry.custom_type, entry.content, entry.display, entry.details, entry.timestamp
            )
        )
    elif type(entry) is BranchSummaryEntry and entry.summary:
        messages.append(
            create_branch_summary_message(entry.summary, entry.from_id, entry.timestamp)
        )


def build_session_context(
    entries: Sequence[SessionEntry],
    leaf_id: str | _Unset | None = LAST_ENTRY,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> SessionContext:
    """Build the LLM context of the path that ends at ``leaf_id`` (seed 002 s.4.1).

    Args:
        entries: the session's entries in file order (header excluded).
        leaf_id: the leaf; ``None`` means "before the first entry" (an empty context); an id
            that is not found, or :data:`LAST_ENTRY`, means the last entry.
        by_id: an index of ``entries`` by id, if the caller keeps one.

    Returns:
        The messages (compaction summary first, then the kept entries, then what follows the
        compaction), the thinking level (``"off"`` unless changed on the path) and the model
        (the latest model change or assistant message on the path).
    """
    if leaf_id is None:
        return SessionContext(messages=[], thinking_level="off", model=None)
    if by_id is None:
        by_id = {entry.id: entry for entry in entries}
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) else None
    if leaf is None:
        if not entries:
            return SessionContext(messages=[], thinking_level="off", model=None)
        leaf = entries[-1]
    path = path_to_root(leaf, by_id)
    return context_of_path(range(len(path)), path, (), lambda index: path[index].id)


def _append_at(
    messages: list[AgentMessage],
    entries: Sequence[SessionEntry | None],
    lazy: Sequence[AgentMessage | None],
    index: int,
) -> None:
    entry = entries[index]
    if entry is None:
        messages.append(lazy[index])  # type: ignore[arg-type]
    else:
        _append_message(messages, entry)


def context_of_path(
    path: Sequence[int],
    entries: Sequence[SessionEntry | None],
    lazy: Sequence[AgentMessage | None],
    id_at: Callable[[int], str],
) -> SessionContext:
    """The context of a path given as positions in ``entries`` (root first).

    Args:
        path: the positions of the path's entries, root first.
        entries: the entries; ``None`` at a message entry not built (see
            :class:`~pitrio.sessions.storage._entry_columns.EntryColumns`), whose message is then
            ``lazy[position]``.
        lazy: the messages of the entries not built.
        id_at: the id of the entry at a position.
    """
    # One pass collects the messages, the thinking level and the model; a compaction on the
    # path (rare) has the messages collected again from its first kept entry.
    thinking_level = "off"
    model_source: AssistantMessage | ModelChangeEntry | None = None
    compaction_at = -1
    messages: list[AgentMessage] = []
    append = messages.append
    for at, index in enumerate(path):
        entry = entries[index]
        if entry is None:
            message = lazy[index]
            append(message)  # type: ignore[arg-type]
            if type(message) is AssistantMessage:
                model_source = message
            continue
        kind = type(entry)
        if kind is SessionMessageEntry:
            message = entry.message  # type: ignore[union-attr]
            append(message)
            if type(message) is AssistantMessage:
                model_source = message
        elif kind is ThinkingLevelChangeEntry:
            thinking_level = entry.thinking_level  # type: ignore[union-attr]
        elif kind is ModelChangeEntry:
            model_source = entry  # type: ignore[assignment]
        elif kind is CompactionEntry:
            compaction_at = at
        else:
            _append_message(messages, entry)
    model: ContextModel | None = None
    if type(model_source) is AssistantMessage:
        model = ContextModel(provider=model_source.provider, model_id=model_source.model)
    elif type(model_source) is ModelChangeEntry:
        model = ContextModel(provider=model_source.provider, model_id=model_source.model_id)

    if compaction_at >= 0:
        compaction = entries[path[compaction_at]]
        assert isinstance(compaction, CompactionEntry)
        messages = [
            create_compaction_summary_message(
                compaction.summary, compaction.tokens_before, compaction.timestamp
            )
        ]
        kept = False
        for index in path[:compaction_at]:
            if id_at(index) == compaction.first_kept_entry_id:
                kept = True
            if kept:
                _append_at(messages, entries, lazy, index)
        for index in path[compaction_at + 1 :]:
            _append_at(messages, entries, lazy, index)
    return SessionContext(messages=messages, thinking_level=thinking_level, model=model)
