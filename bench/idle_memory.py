"""Scenario 4, ``idle_memory``: what an idle AgentSession costs (mirrors
../shared/bench/pi/scenarios/idle_memory.mjs).

20 sessions are created and disposed (warm-up), ``gc.collect()``; then N idle AgentSessions
(``_common.SessionFactory``: in memory, the ``echo`` tool, pi's default system prompt), each
served (its tasks running) and never prompted, are kept; ``gc.collect()`` again.
``rss_per_session_kb`` = (after - before) / N, and the same for the bytes Python's allocator
traced (``tracemalloc`` is off: ``sys.getallocatedblocks`` stands in for V8's heapUsed as a
count of live objects). Then every session is disposed and dropped: what was not released.

``--trace`` also runs ``tracemalloc`` over the creation (slower, and its own memory inflates the
RSS figures) and reports the bytes per session by allocating site, each allocation charged to
the innermost frame in ``pitrio/`` or ``bench/`` (``tracemalloc_sites``): what an idle session
holds, line by line.

    python bench/idle_memory.py --n 10000
    python bench/idle_memory.py --n 2000 --trace

Prints one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections import Counter
from typing import Any

import trio

from _common import SessionFactory, current_rss_bytes, emit, env, setup_faux

WARMUP_SESSIONS = 20


def count_tasks() -> int:
    """Every task alive in this Trio run."""
    total = 0
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None:
            continue
        total += 1
        for child in task.child_nurseries:
            stack.extend(child.child_tasks)
    return total


async def settle() -> None:
    gc.collect()
    await trio.sleep(0.2)
    gc.collect()


TRACE_FRAMES = 40
TRACE_SITES = 20


def charged_sites(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int) -> Any:
    """Bytes and blocks per session by the innermost pitrio/bench frame that allocated them."""
    size: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for stat in after.compare_to(before, "traceback"):
        site = "other"
        for frame in reversed(stat.traceback):  # oldest first: walk from the newest
            name = frame.filename
            at = max(name.rfind("/pitrio/"), name.rfind("/bench/"))
            if at >= 0:
                site = f"{name[at + 1 :]}:{frame.lineno}"
                break
        size[site] += stat.size_diff
        count[site] += stat.count_diff
    return [
        {"site": site, "bytes": round(total / n, 1), "blocks": round(count[site] / n, 2)}
        for site, total in size.most_common(TRACE_SITES)
    ]


async def main_async(args: argparse.Namespace) -> None:
    n = args.n
    faux, registry = setup_faux()
    factory = SessionFactory(faux, registry)
    mb = 1024 * 1024

    async with trio.open_nursery() as nursery:
        warm = [await factory.start(nursery) for _ in range(WARMUP_SESSIONS)]
        for served in warm:
            await served.dispose()
        del warm, served
        await settle()
        rss_before = current_rss_bytes()
        blocks_before = sys.getallocatedblocks()
        tasks_before = count_tasks()
        if args.trace:
            tracemalloc.start(TRACE_FRAMES)
            trace_before = tracemalloc.take_snapshot()

        start = time.perf_counter()
        sessions = [await factory.start(nursery) for _ in range(n)]
        create_s = time.perf_counter() - start
        rss_before_gc = current_rss_bytes()
        await settle()
        sites = None
        if args.trace:
            sites = charged_sites(trace_before, tracemalloc.take_snapshot(), n)
            tracemalloc.stop()
        rss_after = current_rss_bytes()
        blocks_after = sys.getallocatedblocks()
        tasks_per_session = (count_tasks() - tasks_before) / n

        for served in sessions:
            await served.dispose()
        sessions.clear()
        await settle()
        rss_after_dispose = current_rss_bytes()
        blocks_after_dispose = sys.getallocatedblocks()

    emit(
        {
            "scenario": "idle_memory",
            "n": n,
            "create_s": round(create_s, 3),
            "create_us_per_session": round(create_s * 1e6 / n, 1),
            "rss_before_mb": round(rss_before / mb, 1),
            "rss_before_gc_mb": round(rss_before_gc / mb, 1),
            "rss_after_mb": round(rss_after / mb, 1),
            "rss_per_session_kb": round((rss_after - rss_before) / 1024 / n, 2),
            "allocated_blocks_per_session": round((blocks_after - blocks_before) / n, 1),
            "tasks_per_session": round(tasks_per_session, 2),
            "rss_after_dispose_mb": round(rss_after_dispose / mb, 1),
            "rss_not_released_per_session_kb": round(
                (rss_after_dispose - rss_before) / 1024 / n, 2
            ),
            "allocated_blocks_not_released_per_session": round(
                (blocks_after_dispose - blocks_before) / n, 2
            ),
            "system_prompt_chars": len(factory.system_prompt),
            **({"tracemalloc_sites": sites} if sites is not None else {}),
            "env": env(),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="RSS of idle AgentSessions (pi scenario 4).")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--trace", action="store_true", help="bytes per session by site")
    trio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
