"""Session file migrations v1 -> v2 -> v3 (seed 002 s.7.7), on the raw JSON objects.

The migrations work on the parsed lines before they are decoded, mutating them in place as pi
does, so that a migrated file written back has pi's key order (new keys last) and a pi file
migrated by pitrio reads exactly like the same file migrated by pi.

* v1 -> v2: entries get ``id`` and ``parentId`` (a linear chain), and a compaction's
  ``firstKeptEntryIndex`` (an index into the file's lines, header included) becomes
  ``firstKeptEntryId``.
* v2 -> v3: messages with the role ``hookMessage`` are renamed to ``custom``.

A header without ``version`` is version 1.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from pitrio.sessions.storage._entries import CURRENT_SESSION_VERSION, generate_id, random_entry_id

RawEntry = MutableMapping[str, Any]


def migrate_v1_to_v2(
    entries: Sequence[RawEntry], new_id: Callable[[], str] = random_entry_id
) -> None:
    """Give every entry an id and chain them with ``parentId``; header version becomes 2."""
    taken: set[str] = set()
    previous: str | None = None
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry_id = generate_id(taken, new_id)
        taken.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
        index = entry.get("firstKeptEntryIndex")
        if entry.get("type") == "compaction" and _is_number(index):
            del entry["firstKeptEntryIndex"]
            # The target has an id already only if it precedes this entry.
            if isinstance(index, int) and 0 <= index < len(entries):
                target = entries[index]
                if target.get("type") != "session" and "id" in target:
                    entry["firstKeptEntryId"] = target["id"]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def migrate_v2_to_v3(entries: Sequence[RawEntry]) -> None:
    """Rename the ``hookMessage`` message role to ``custom``; header version becomes 3."""
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 3
            continue
        if entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, MutableMapping) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def session_version(entries: Sequence[RawEntry]) -> int:
    """The version the header declares (1 when it has none)."""
    for entry in entries:
        if entry.get("type") == "session":
            version = entry.get("version")
            return version if isinstance(version, int) and not isinstance(version, bool) else 1
    return 1


def migrate_session_entries(
    entries: Sequence[RawEntry], new_id: Callable[[], str] = random_entry_id
) -> bool:
    """Bring raw file entries (header included) to the current version, in place.

    Args:
        entries: the parsed lines of a session file.
        new_id: source of the short ids the v1 -> v2 migration assigns.

    Returns:
        True when a migration ran (the caller then rewrites the file).
    """
    version = session_version(entries)
    if version >= CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        migrate_v1_to_v2(entries, new_id)
    if version < 3:
        migrate_v2_to_v3(entries)
    return True
