"""A session written through the Persistence actor survives kill -9 at any moment.

Twenty real writer processes (crash_writer.py, forked from one interpreter) write sessions and
report each entry id once it is on disk; each is killed with SIGKILL after a different number
of reports, while it keeps writing. Every file must reopen and hold every reported entry; a torn
last line is the only damage allowed, and the next append repairs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from pitrio.providers import UserMessage
from pitrio.sessions import SessionManager

CHILD = Path(__file__).parent.parent.joinpath("crash_writer.py")
WRITERS = 20


async def test_kill_9_never_loses_a_reported_entry(tmp_path: Path) -> None:
    """Every entry reported persisted before SIGKILL is in the file, which reopens cleanly."""
    kill_after = {i: 1 + (i * 13) % 60 for i in range(WRITERS)}
    reported: dict[int, list[str]] = {i: [] for i in range(WRITERS)}
    pids: dict[int, int] = {}
    killed: set[int] = set()
    with trio.fail_after(60):
        process = await trio.lowlevel.open_process(
            [sys.executable, str(CHILD), str(tmp_path), str(WRITERS)], stdout=subprocess.PIPE
        )
        assert process.stdout is not None
        try:
            buffer = b""
            while len(killed) < WRITERS:
                data = await process.stdout.receive_some()
                assert data, f"writers exited early ({await process.wait()})"
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    match line.decode().split():
                        case ["pid", writer, writer_pid]:
                            pids[int(writer)] = int(writer_pid)
                        case [writer, entry_id]:
                            reported[int(writer)].append(entry_id)
                for index, ids in reported.items():
                    if index not in killed and len(ids) >= kill_after[index]:
                        os.kill(pids[index], signal.SIGKILL)
                        killed.add(index)
            assert await process.wait() == 0
        finally:
            for index, leftover in pids.items():
                if index not in killed:
                    os.kill(leftover, signal.SIGKILL)
            process.kill()
            await process.wait()
            await process.stdout.aclose()

    for index, ids in reported.items():
        path = tmp_path / f"session{index}.jsonl"
        sm = SessionManager.open(path)
        assert [p.kind for p in sm.load_problems] in ([], ["torn_last_line"])
        on_disk = [entry.id for entry in sm.get_entries()]
        assert on_disk[: len(ids)] == ids
        sm.append_message(UserMessage(content="after the crash", timestamp=0))
        sm.close()
        again = SessionManager.open(path)
        assert again.load_problems == ()
        assert [entry.id for entry in again.get_entries()][: len(ids)] == ids
