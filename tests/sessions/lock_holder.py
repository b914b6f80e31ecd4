"""A second process that writes a session file and keeps it, for the lock tests.

Usage: ``python lock_holder.py PATH``. Opens PATH (creating it if missing), starts a Persistence
actor, makes sure the file exists by writing one user/assistant exchange if it has no answer
yet, prints ``ready <pid>`` and keeps the session open until its stdin is closed.
"""

from __future__ import annotations

import os
import sys

import trio

from pitrio.providers import AssistantMessage, TextContent, UserMessage
from pitrio.sessions import SessionManager, open_persistence


async def hold(path: str) -> None:
    sm = SessionManager.open(path)
    async with open_persistence(sm):
        if not sm.get_entries():
            sm.append_message(UserMessage(content="from the holder", timestamp=1))
            answer = AssistantMessage(
                content=[TextContent(text="held")],
                api="faux",
                provider="faux",
                model="faux-1",
                stop_reason="stop",
                timestamp=2,
            )
            assert await sm.wait_persisted(sm.append_message(answer))
        os.write(1, f"ready {os.getpid()}\n".encode())
        await trio.to_thread.run_sync(sys.stdin.buffer.read)


if __name__ == "__main__":
    trio.run(hold, sys.argv[1])
