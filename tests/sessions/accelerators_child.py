"""Run as a script (by ``test_accelerators.py``, with ``PITRIO_ACCELERATORS`` set as the test
wants): loads every session file of pi's captures, and prints, as its last
line, one JSON object with what it decoded and whether the generated decoders were on."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from session_script import counter_ids

from pitrio import _wire_fast
from pitrio.codec import dumps
from pitrio.sessions import load_session_file
from pitrio.sessions.storage._codec import ENTRY_BUILDERS, SESSIONS_CODEC, decode_entry


def main(data: Path) -> None:
    files: dict[str, list[str]] = {}
    for path in sorted((data / "sessions").glob("*.jsonl")):
        loaded = load_session_file(str(path), new_id=counter_ids(), rewrite_migrated=False)
        # repr shows the values' types (1 vs 1.0, tuple vs list); the wire bytes the unknown
        # keys kept in ``extra``.
        files[path.name] = [
            repr(loaded.header),
            *(f"{entry!r} {dumps(entry)!r}" for entry in loaded.entries),
            repr(loaded.problems),
        ]
    hook = SESSIONS_CODEC._converter.get_structure_hook(type(decode_entry(_SAMPLE)))
    print(
        orjson.dumps(
            {
                "enabled": _wire_fast.ENABLED,
                "entry_builders": len(ENTRY_BUILDERS),
                "message_entry_fast": getattr(hook, "fast", None) is not None,
                "files": files,
            }
        ).decode()
    )


_SAMPLE = {
    "type": "message",
    "id": "a1",
    "parentId": None,
    "timestamp": "t",
    "message": {"role": "user", "content": "q", "timestamp": 1},
}

if __name__ == "__main__":
    main(Path(sys.argv[1]))
