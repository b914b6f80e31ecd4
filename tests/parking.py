"""What a parked Trio task is waiting on, for the tests that pin a wait's reuse."""

from __future__ import annotations

from typing import Any

import trio


def parked_on(task: trio.lowlevel.Task) -> Any:
    """The innermost object a parked task's coroutine chain is awaiting."""
    awaited: Any = task.coro
    while True:
        inner = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
        if inner is None:
            return awaited
        awaited = inner
