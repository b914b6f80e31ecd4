"""One writer at a time per file (pi 0.73.1 ``core/tools/file-mutation-queue.ts``).

``write`` and ``edit`` calls of one parallel tool batch may target the same file; each takes
that file's lock, so their read-modify-write cycles do not interleave, while calls on different
files run concurrently. Files are told apart by their real path (symlinks resolved), falling
back to the absolute path for a file that does not exist yet.

pi chains promises in a module-level map; here the map holds one :class:`trio.Lock` per path
with a count of the tasks that use it, and an entry is removed when its last user leaves, so
the map never outgrows the mutations in flight. ``trio.Lock`` is fair (FIFO), which keeps
pi's first-come, first-served order.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from pitrio.tools.builtin._io import run_sync


@attrs.define(slots=True)
class _Entry:
    lock: trio.Lock = attrs.field(factory=trio.Lock)
    users: int = 0


@attrs.define(slots=True)
class FileMutationQueue:
    """Serialises mutations per real path; one instance is shared by all tools of an agent.

    Tools made without a queue of their own share :func:`default_mutation_queue`, one per Trio
    run, as pi's tools share one module-level map per process.
    """

    _entries: dict[str, _Entry] = attrs.field(factory=dict, init=False)

    def __len__(self) -> int:
        """Return how many paths have a mutation running or waiting."""
        return len(self._entries)

    @asynccontextmanager
    async def hold(self, file_path: str) -> AsyncIterator[None]:
        """Wait for earlier mutations of ``file_path`` to finish, then hold it for the block."""
        key = await run_sync(_queue_key, file_path)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]


def _queue_key(file_path: str) -> str:
    resolved = os.path.abspath(file_path)
    try:
        return os.path.realpath(resolved, strict=True)
    except OSError:
        return resolved


_default_var: trio.lowlevel.RunVar[FileMutationQueue] = trio.lowlevel.RunVar(
    "pitrio_file_mutation_queue"
)


def default_mutation_queue() -> FileMutationQueue:
    """Return the current Trio run's shared queue, creating it on first use.

    Per run rather than per process: a :class:`trio.Lock` may only be used from one run.
    """
    try:
        return _default_var.get()
    except LookupError:
        queue = FileMutationQueue()
        _default_var.set(queue)
        return queue
