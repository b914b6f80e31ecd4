"""Child processes of test_crash.py: write sessions through the Persistence actor until killed.

Usage: ``python crash_writer.py DIR N``. The script imports pitrio once, then forks N writers
(so the test does not pay N interpreter start-ups) and prints ``pid I PID`` for each. Writer I
appends batches of one to three messages of varying size to ``DIR/sessionI.jsonl`` forever;
after each batch is on disk it prints ``I ENTRY_ID`` per entry (one ``os.write`` of less than
PIPE_BUF bytes, so lines of different writers never interleave). The parent kills writers with
SIGKILL; this process exits when all of them have died.
"""

from __future__ import annotations

import itertools
import os
import sys

import trio

from pitrio.providers import AssistantMessage, TextContent, UserMessage
from pitrio.sessions import SessionManager, open_persistence


def message(n: int) -> UserMessage | AssistantMessage:
    text = f"message {n} " + "x" * (100 + (n * 7919) % 6000)
    if n % 2:
        return UserMessage(content=text, timestamp=n)
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason="stop",
        timestamp=n,
    )


async def write_forever(path: str, index: int) -> None:
    sm = SessionManager.open(path)
    counter = itertools.count()
    async with open_persistence(sm):
        while True:
            size = 1 + len(sm.get_entries()) % 3
            batch = [sm.append_message(message(next(counter))) for _ in range(size)]
            if not await sm.wait_persisted(batch[-1]):
                raise RuntimeError(f"entry {batch[-1]} was not persisted")
            os.write(1, "".join(f"{index} {entry_id}\n" for entry_id in batch).encode())


def main(directory: str, count: int) -> None:
    children = []
    for index in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                trio.run(write_forever, os.path.join(directory, f"session{index}.jsonl"), index)
            finally:
                os._exit(1)
        children.append(pid)
        os.write(1, f"pid {index} {pid}\n".encode())
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
