"""The message entry's generated twin (``pitrio._wire_fast.FIELDS``) gives the fields its
generated function builds the entry from, and gives up where that function would keep unknown
keys; the loader then keeps them as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from pitrio import _wire_fast
from pitrio._wire_fast import _Slow
from pitrio.codec import WireFormatError
from pitrio.sessions import SessionMessageEntry, load_session_file
from pitrio.sessions.storage._codec import ENTRY_BUILDERS, decode_entry

ACCELERATED: Final = pytest.mark.skipif(
    not _wire_fast.ENABLED, reason="PITRIO_ACCELERATORS=0: no generated decoders"
)

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "t0", "cwd": "/p"}


def line(**changes: Any) -> dict[str, Any]:
    """A message line as pi writes it, with ``changes`` applied."""
    return {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1},
        **changes,
    }


@ACCELERATED
def test_fields_equal_the_built_entry() -> None:
    """The twin returns id, parent id, timestamp and message, equal to the built entry's."""
    data = line(parentId="p0")
    entry = decode_entry(data)
    assert isinstance(entry, SessionMessageEntry)
    fields = ENTRY_BUILDERS["message"].fields(data)  # type: ignore[attr-defined]
    assert fields == (entry.id, entry.parent_id, entry.timestamp, entry.message)


@ACCELERATED
@pytest.mark.parametrize("changes", [{"future": 1}, {"id": 5}, {"type": "other"}, {"message": "x"}])
def test_fields_give_up_where_the_entry_is_not_plain(changes: dict[str, Any]) -> None:
    """Unknown keys or a value of the wrong type make the twin give up (as its builder does,
    or where the builder would keep the unknown keys)."""
    with pytest.raises((_Slow, WireFormatError)):
        ENTRY_BUILDERS["message"].fields(line(**changes))  # type: ignore[attr-defined]


def test_loader_keeps_unknown_keys_of_a_message_line(tmp_path: Path) -> None:
    """A message line with unknown keys loads as the entry decode_entry builds, extra kept."""
    path = tmp_path / "s.jsonl"
    lines = [HEADER, line(), line(id="a2", parentId="a1", future={"x": [1]})]
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    loaded = load_session_file(str(path))
    assert loaded.entries == [decode_entry(obj) for obj in lines[1:]]
    assert loaded.entries[1].extra == {"future": {"x": [1]}}
