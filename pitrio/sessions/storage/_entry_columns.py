"""A session's entries in file order, the message entries' wrappers built when first asked for.

A loaded session keeps, for each line, its ``id`` and ``parentId`` in parallel lists; for a
plain message line (no unknown keys) it keeps the ``timestamp`` and the decoded message too and
builds the :class:`~pitrio.sessions.SessionMessageEntry` only when someone asks for that entry
(then caches it). Opening a session, building its context and restoring an agent from it need
only the messages, so a long session is held as its messages alone: one object fewer per entry
that stays alive, which is what schedules CPython's full garbage-collection passes (each one
walks every live object).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from pitrio.actors import AgentMessage
from pitrio.sessions.storage._entries import SessionEntry, SessionMessageEntry


def _build_message_entry(
    entry_id: str, parent_id: str | None, timestamp: str, message: AgentMessage
) -> SessionMessageEntry:
    return SessionMessageEntry(
        id=entry_id, parent_id=parent_id, timestamp=timestamp, message=message
    )


class EntryColumns:
    """The entries of a session in file order; see the module notes.

    ``entries[i]`` is the entry at position ``i``, or ``None`` for a message entry whose
    wrapper is not built yet. ``ids`` and ``parents`` hold every entry's ``id`` and
    ``parent_id``; ``times`` and ``messages`` the ``timestamp`` and message of each entry
    added with :meth:`add_message` (built since or not; ``None`` for the others).
    """

    __slots__ = ("entries", "ids", "messages", "parents", "times", "unbuilt")

    def __init__(self, entries: list[SessionEntry] | None = None) -> None:
        self.entries: list[SessionEntry | None] = []
        self.ids: list[str] = []
        self.parents: list[str | None] = []
        self.times: list[str | None] = []
        self.messages: list[AgentMessage | None] = []
        self.unbuilt = 0
        """How many ``None`` are in ``entries``."""
        if entries:
            for entry in entries:
                self.add(entry)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, entry: SessionEntry) -> None:
        """Append a built entry."""
        self.entries.append(entry)
        self.ids.append(entry.id)
        self.parents.append(entry.parent_id)
        self.times.append(None)
        self.messages.append(None)

    def add_message(
        self, entry_id: str, parent_id: str | None, timestamp: str, message: AgentMessage
    ) -> None:
        """Append a message entry without building its wrapper (equal to
        ``SessionMessageEntry(id=entry_id, parent_id=parent_id, timestamp=timestamp,
        message=message)``)."""
        self.entries.append(None)
        self.unbuilt += 1
        self.ids.append(entry_id)
        self.parents.append(parent_id)
        self.times.append(timestamp)
        self.messages.append(message)

    def get(self, index: int) -> SessionEntry:
        """The entry at ``index`` (its wrapper built and kept on first access)."""
        entry = self.entries[index]
        if entry is None:
            entry = self.entries[index] = _build_message_entry(
                self.ids[index],
                self.parents[index],
                cast(str, self.times[index]),
                cast(AgentMessage, self.messages[index]),
            )
            self.unbuilt -= 1
        return entry

    def get_many(self, indices: Iterable[int]) -> list[SessionEntry]:
        """The entries at ``indices`` (as :meth:`get`, in one loop)."""
        entries, ids, parents, times, messages = (
            self.entries,
            self.ids,
            self.parents,
            self.times,
            self.messages,
        )
        out: list[SessionEntry] = []
        append = out.append
        built = 0
        build: Callable[..., SessionEntry] = _build_message_entry
        for index in indices:
            entry = entries[index]
            if entry is None:
                entry = entries[index] = build(
                    ids[index], parents[index], times[index], messages[index]
                )
                built += 1
            append(entry)
        self.unbuilt -= built
        return out

    def all(self) -> list[SessionEntry]:
        """Every entry, built (the list kept here: callers copy it before changing it)."""
        entries = self.entries
        if self.unbuilt:
            self.get_many(range(len(entries)))
        return cast(list[SessionEntry], entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EntryColumns):
            return NotImplemented
        return self.all() == other.all()

    __hash__: Any = None

    def __repr__(self) -> str:
        return f"EntryColumns({self.all()!r})"
