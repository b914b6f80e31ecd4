"""Scenario 3, ``concurrent_sessions``: many paced sessions streaming at once (mirrors
../shared/bench/pi/scenarios/concurrent_sessions.mjs).

N AgentSessions (``_common.SessionFactory``: in memory, the ``echo`` tool, pi's default system
prompt), each with one counting subscriber, each running one prompt
``"session {i}: please echo hello world"``, all started together. The faux provider is paced
at 50 tokens/s with 4 characters per delta (a delta every 20 ms): turn 1 is the echo tool call
(6 deltas), turn 2 a ``make_text(400)`` answer (100 deltas); with zero overhead a session takes
2.12 s. Five warm-up sessions run first; then the sessions are created (``create_us_per_session``)
and all prompts run (``wall_s``). The RSS is sampled every 25 ms on the event loop
(``peak_rss_per_session_kb`` = (peak - baseline) / N); the event-loop lag is measured by a task
that sleeps 10 ms and records its overshoot. After the run and ``gc.collect()``:
``retained_rss_per_session_kb``; after disposing every session: ``rss_not_released_*``.

``--tune-gc`` (no pi counterpart) first applies ``pitrio.host.tune_gc_for_many_sessions()``, the
collector thresholds ``pitrio serve`` and ``pitrio load`` set for a process holding many sessions;
the headline rows run with CPython's defaults, as a library embedded by someone else would.

``--mixed M`` (no pi counterpart) adds M sessions whose faux provider is *not* paced, each
streaming a ``--mixed-chars`` answer as fast as it can, started together with the paced ones:
the lag and the paced sessions' latency then show whether unlimited streams starve the others
(``mixed_*`` fields; the totals count the paced sessions only).

    python bench/concurrent_sessions.py --n 1000
    python bench/concurrent_sessions.py --n 1000 --mixed 10 --mixed-chars 400000

Prints one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from typing import Any

import trio

from pitrio.actors import MessageUpdateEvent
from pitrio.host import tune_gc_for_many_sessions
from pitrio.providers import DEFAULT_YIELD_EVERY, TextDeltaEvent

from _common import (
    LagMonitor,
    RssSampler,
    SessionFactory,
    current_rss_bytes,
    emit,
    env,
    make_text,
    percentile,
    setup_faux,
    tool_then_text,
)

WARMUP_SESSIONS = 5
ECHO_ARGUMENTS = '{"text":"hello world"}'


def ideal_seconds(tps: float, answer_chars: int) -> float:
    """Latency of one session with zero overhead: one delay of ceil(len/4)/tps per delta."""

    def chunks(n: int) -> list[int]:
        return [min(4, n - i * 4) for i in range(math.ceil(n / 4))]

    return sum(math.ceil(c / 4) / tps for c in chunks(len(ECHO_ARGUMENTS)) + chunks(answer_chars))


async def main_async(args: argparse.Namespace) -> None:
    n = args.n
    faux, registry = setup_faux(tokens_per_second=args.tps)
    factory = SessionFactory(faux, registry)
    respond = tool_then_text(make_text(args.answer_chars))
    fast, fast_registry = setup_faux(yield_every=args.yield_every)
    fast_factory = SessionFactory(fast, fast_registry)
    mb = 1024 * 1024

    async with trio.open_nursery() as nursery:
        warm = [await factory.start(nursery) for _ in range(WARMUP_SESSIONS)]
        faux.append_responses([respond] * (2 * WARMUP_SESSIONS))
        async with trio.open_nursery() as prompts:
            for served in warm:
                prompts.start_soon(served.session.prompt, "warm up")
        for served in warm:
            await served.dispose()
        del warm, served
        gc.collect()
        await trio.sleep(0.1)
        rss_baseline = current_rss_bytes()

        sampler = RssSampler(0.025)
        nursery.start_soon(sampler.run)
        counts = {"events": 0, "text_deltas": 0, "mixed_events": 0}

        def listener(event: Any) -> None:
            counts["events"] += 1
            if type(event) is MessageUpdateEvent and (
                type(event.assistant_message_event) is TextDeltaEvent
            ):
                counts["text_deltas"] += 1

        def fast_listener(event: Any) -> None:
            counts["mixed_events"] += 1

        start = time.perf_counter()
        sessions = []
        for _ in range(n):
            served = await factory.start(nursery)
            served.session.subscribe(listener)
            sessions.append(served)
        create_s = time.perf_counter() - start
        rss_after_create = current_rss_bytes()
        fast_sessions = []
        for _ in range(args.mixed):
            served = await fast_factory.start(nursery)
            served.session.subscribe(fast_listener)
            fast_sessions.append(served)

        faux.append_responses([respond] * (2 * n))
        fast.append_responses([tool_then_text(make_text(args.mixed_chars))] * (2 * args.mixed))
        latencies: list[float] = []
        fast_latencies: list[float] = []
        errors = 0

        async def one(i: int, session: Any, into: list[float]) -> None:
            nonlocal errors
            began = time.perf_counter()
            await session.prompt(f"session {i}: please echo hello world")
            into.append(time.perf_counter() - began)
            errors += session.agent.error is not None

        lag = LagMonitor(0.010)
        nursery.start_soon(lag.run)
        start = time.perf_counter()
        with trio.move_on_after(args.timeout) as timeout:
            async with trio.open_nursery() as prompts:
                for i, served in enumerate(fast_sessions):
                    prompts.start_soon(one, n + i, served.session, fast_latencies)
                for i, served in enumerate(sessions):
                    prompts.start_soon(one, i, served.session, latencies)
        wall = time.perf_counter() - start
        lag_stats = lag.stop()
        peak = sampler.stop()

        gc.collect()
        rss_after_run = current_rss_bytes()
        for served in sessions + fast_sessions:
            await served.dispose()
        sessions.clear()
        fast_sessions.clear()
        gc.collect()
        await trio.sleep(0.2)
        gc.collect()
        rss_after_dispose = current_rss_bytes()

    ordered = sorted(latencies)
    ideal = ideal_seconds(args.tps, args.answer_chars)
    emit(
        {
            "scenario": "concurrent_sessions",
            "n": n,
            "tokens_per_second": args.tps,
            "answer_chars": args.answer_chars,
            "completed": len(latencies),
            "errors": errors,
            "aborted": f"timeout after {args.timeout}s" if timeout.cancelled_caught else None,
            "create_s": round(create_s, 3),
            "create_us_per_session": round(create_s * 1e6 / n, 1),
            "ideal_latency_s": round(ideal, 3),
            "wall_s": round(wall, 3),
            "wall_over_ideal": round(wall / ideal, 3),
            "latency_p50_s": round(percentile(ordered, 50), 3) if ordered else None,
            "latency_p99_s": round(percentile(ordered, 99), 3) if ordered else None,
            "latency_max_s": round(ordered[-1], 3) if ordered else None,
            "total_events": counts["events"],
            "text_deltas": counts["text_deltas"],
            "events_per_s": round(counts["events"] / wall),
            "rss_baseline_mb": round(rss_baseline / mb, 1),
            "rss_after_create_mb": round(rss_after_create / mb, 1),
            "peak_rss_mb": round(peak / mb, 1),
            "rss_after_run_gc_mb": round(rss_after_run / mb, 1),
            "peak_rss_per_session_kb": round((peak - rss_baseline) / 1024 / n, 1),
            "retained_rss_per_session_kb": round((rss_after_run - rss_baseline) / 1024 / n, 1),
            "rss_not_released_after_dispose_per_session_kb": round(
                (rss_after_dispose - rss_baseline) / 1024 / n, 2
            ),
            "rss_samples": sampler.samples,
            "mixed": args.mixed,
            "mixed_chars": args.mixed_chars if args.mixed else None,
            "mixed_completed": len(fast_latencies),
            "mixed_latency_max_s": round(max(fast_latencies), 3) if fast_latencies else None,
            "mixed_events": counts["mixed_events"],
            "yield_every": args.yield_every,
            "tune_gc": args.tune_gc,
            "gc_threshold": list(gc.get_threshold()),
            **lag_stats,
            "env": env(),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Many paced sessions at once (pi scenario 3).")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--tps", type=float, default=50.0)
    parser.add_argument("--answer-chars", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--mixed", type=int, default=0, help="also run M sessions streaming at unlimited speed"
    )
    parser.add_argument("--mixed-chars", type=int, default=400_000, help="their answer size")
    parser.add_argument(
        "--yield-every",
        type=int,
        default=DEFAULT_YIELD_EVERY,
        help="the unlimited faux checkpoints every N deltas (0 = on backpressure)",
    )
    parser.add_argument(
        "--tune-gc",
        action="store_true",
        help="apply pitrio.host.tune_gc_for_many_sessions() first (as pitrio serve/load do)",
    )
    args = parser.parse_args()
    if args.tune_gc:
        tune_gc_for_many_sessions()
    trio.run(main_async, args)


if __name__ == "__main__":
    main()
