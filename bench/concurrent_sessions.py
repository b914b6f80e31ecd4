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

``--gc-trace`` (no pi counterpart) records the cyclic collector during the run: collections per
generation, and each full collection's start (seconds into the run) and duration
(``gc_full_collections``), the stalls the lag p99 is made of with many sessions. With
``--gc-promotions`` it also counts the objects each second-generation collection moves into the
oldest one (``gc_promoted_per_session``, and by type, ``gc_promoted_types``): CPython 3.11
collects in full whenever those reach a quarter of the objects it kept. Counting walks the oldest
generation twice per such collection, so that run's lag and wall figures are not comparable.

    python bench/concurrent_sessions.py --n 1000
    python bench/concurrent_sessions.py --n 1000 --mixed 10 --mixed-chars 400000
    python bench/concurrent_sessions.py --n 5000 --gc-trace --gc-promotions

Prints one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import collections
import gc
import math
import time
import types
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


class GcTrace:
    """The collector's work while `active`: collections per generation, each full one's start
    and duration, and (``promotions``) what second-generation collections move to the oldest."""

    def __init__(self, promotions: bool) -> None:
        self.promotions = promotions
        self.active = False
        self.origin = 0.0
        self.counts = [0, 0, 0]
        self.full: list[list[float]] = []
        self.promoted: collections.Counter[str] = collections.Counter()
        self._started = 0.0
        self._oldest: set[int] | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.active:
            return
        generation = info["generation"]
        if phase == "start":
            self._started = time.perf_counter()
            if generation == 1 and self.promotions:
                self._oldest = set(map(id, gc.get_objects(2)))
            return
        self.counts[generation] += 1
        if generation == 2:
            now = time.perf_counter()
            self.full.append(
                [round(self._started - self.origin, 3), round((now - self._started) * 1e3, 1)]
            )
        elif generation == 1 and self._oldest is not None:
            before, self._oldest = self._oldest, None
            for item in gc.get_objects(2):
                if id(item) not in before:
                    self.promoted[_kind(item)] += 1

    def report(self, n: int) -> dict[str, Any]:
        report: dict[str, Any] = {
            "gc_collections": self.counts,
            "gc_full_collections": self.full,
        }
        if self.promotions:
            total = sum(self.promoted.values())
            report["gc_promoted_per_session"] = round(total / n, 1)
            report["gc_promoted_types"] = {
                kind: round(count / n, 2) for kind, count in self.promoted.most_common(30)
            }
        return report


def _kind(item: object) -> str:
    kind = type(item)
    if kind is types.CoroutineType:
        return f"coroutine {item.__qualname__}"  # type: ignore[attr-defined]
    if kind is types.MethodType:
        return f"method {item.__func__.__qualname__}"  # type: ignore[attr-defined]
    if kind is types.FunctionType:
        return f"function {item.__qualname__}"  # type: ignore[attr-defined]
    return kind.__qualname__


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
        trace = GcTrace(args.gc_promotions) if args.gc_trace else None
        if trace is not None:
            gc.callbacks.append(trace)
            trace.origin = time.perf_counter()
            trace.active = True
        start = time.perf_counter()
        with trio.move_on_after(args.timeout) as timeout:
            async with trio.open_nursery() as prompts:
                for i, served in enumerate(fast_sessions):
                    prompts.start_soon(one, n + i, served.session, fast_latencies)
                for i, served in enumerate(sessions):
                    prompts.start_soon(one, i, served.session, latencies)
        wall = time.perf_counter() - start
        lag_stats = lag.stop()
        if trace is not None:
            trace.active = False
            gc.callbacks.remove(trace)
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
            **(trace.report(n) if trace is not None else {}),
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
    parser.add_argument(
        "--gc-trace", action="store_true", help="record the collections during the run"
    )
    parser.add_argument(
        "--gc-promotions",
        action="store_true",
        help="with --gc-trace: count what moves to the oldest generation (slows the run)",
    )
    args = parser.parse_args()
    if args.gc_promotions and not args.gc_trace:
        parser.error("--gc-promotions needs --gc-trace")
    if args.tune_gc:
        tune_gc_for_many_sessions()
    trio.run(main_async, args)


if __name__ == "__main__":
    main()
