"""Process settings for the commands that hold many sessions (``pitrio serve``, ``pitrio load``).

A library must not change process-wide settings, so these are applied by those two commands
only; an application that embeds many sessions may call :func:`tune_gc_for_many_sessions`
itself.
"""

from __future__ import annotations

import gc
import os
from typing import Final

__all__ = ["GC_TUNING_ENV", "MANY_SESSIONS_GC_THRESHOLD", "tune_gc_for_many_sessions"]

GC_TUNING_ENV: Final = "PITRIO_GC_TUNING"
"""Set to ``0`` to keep CPython's default thresholds in ``pitrio serve`` and ``pitrio load``
(to compare memory and lag with and without the tuning)."""

MANY_SESSIONS_GC_THRESHOLD: Final = (10_000, 20, 20)
"""``gc.set_threshold`` for a process with thousands of live sessions.

CPython's default (700, 10, 10) runs a young collection every 700 net allocations; a streamed
delta allocates a few objects (an event, a partial snapshot, a ring slot), so 1,000 sessions at
50 tokens/s triggered several hundred collections a second, each also scanning survivors into
older generations: with 1,000 paced sessions (bench/concurrent_sessions.py --n 1000,
2026-11-22) 3-4 s of a 9-10 s run went to automatic collections. With this threshold the run
took 5.4-5.9 s instead of 9.0-9.9 s and the event-loop lag p99 fell from ~410 to ~115 ms, with
the same peak RSS. Reference counting still frees almost everything at once; the threshold only
spaces out the cycle collector's passes. That holds because a closed session leaves no reference
cycle behind (tests/host/ws/test_host_memory.py): one that did would keep its memory until a rare
full collection.
"""


def tune_gc_for_many_sessions() -> None:
    """Set :data:`MANY_SESSIONS_GC_THRESHOLD` for this process (unless ``PITRIO_GC_TUNING=0``)."""
    if os.environ.get(GC_TUNING_ENV) == "0":
        return
    gc.set_threshold(*MANY_SESSIONS_GC_THRESHOLD)
