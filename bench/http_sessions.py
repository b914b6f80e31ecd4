"""Scenario H2, ``http_sessions``: many AgentSessions streaming at once over HTTP (mirrors
../shared/bench/http/scenarios/http_sessions.mjs).

``--n`` AgentSessions built as pi's ``lib/session.mjs`` builds them (pitrio.host's
LoadSessionFactory: in-memory, pi's default settings and coding-agent system prompt, only the
``echo`` tool), one shared HTTP client, each running one prompt, all started together. The
server paces every response at ``--tps`` (50) deltas/s: an echo tool call (6 deltas), then a
400-character answer (100 deltas): ideal latency 2.12 s. Five warm-up sessions first; the
sessions are created (timed apart), then the N prompts (``wall_s``). Prints one JSON line with
pi's keys (``server_connections_opened``: TCP connections the server accepted, for 2N requests).

    python bench/http_sessions.py --n 1000
    python bench/http_sessions.py --n 200 --api anthropic-messages
"""

from __future__ import annotations

import argparse
import collections
import gc
import math
import time
from typing import Any

import trio

from pitrio.actors import MessageUpdateEvent
from pitrio.host.load import LoadSessionFactory
from pitrio.providers import AssistantMessage, TextContent, TextDeltaEvent, open_http_client

from _common import LagMonitor, RssSampler, current_rss_bytes, emit, percentile
from http_common import (
    add_server_args,
    cpu_s,
    env_info,
    get_api_key,
    http_model,
    llm_server,
    mb,
    prepare,
    registry,
    server_delta,
    server_stats,
)

WARMUP_SESSIONS = 5
ECHO_ARGUMENTS = '{"text":"hello world"}'


async def main_async(args: argparse.Namespace, root: str) -> dict[str, Any]:
    n = args.n
    model = http_model(root, args.api, answer_chars=args.answer_chars, tps=args.tps)
    ideal = (math.ceil(len(ECHO_ARGUMENTS) / 4) + math.ceil(args.answer_chars / 4)) / args.tps
    factory = LoadSessionFactory(registry(), model, get_api_key=get_api_key)
    counts = {"events": 0, "text_deltas": 0}
    by_type: collections.Counter[str] = collections.Counter()

    def listener(event: Any) -> None:
        counts["events"] += 1
        by_type[event.type] += 1
        if type(event) is MessageUpdateEvent and (
            type(event.assistant_message_event) is TextDeltaEvent
        ):
            counts["text_deltas"] += 1

    async with open_http_client(), trio.open_nursery() as nursery:
        await prepare(root, model)
        warm = [await factory.start(nursery) for _ in range(WARMUP_SESSIONS)]
        async with trio.open_nursery() as prompts:
            for served in warm:
                prompts.start_soon(served.session.prompt, "warm up")
        for served in warm:
            await served.dispose()
        del warm
        gc.collect()
        await trio.sleep(0.1)
        rss_baseline = current_rss_bytes()
        sampler = RssSampler(0.025)
        nursery.start_soon(sampler.run)

        start = time.perf_counter()
        sessions = []
        for _ in range(n):
            served = await factory.start(nursery)
            served.session.subscribe(listener)
            sessions.append(served)
        create_s = time.perf_counter() - start
        rss_after_create = current_rss_bytes()

        latencies: list[float] = []
        errors = bad_answers = 0
        first_error: str | None = None

        async def one(i: int, session: Any) -> None:
            nonlocal errors, bad_answers, first_error
            began = time.perf_counter()
            try:
                await session.prompt(f"session {i}: please echo hello world")
            except Exception as exc:
                errors += 1
                first_error = first_error or repr(exc)
                return
            latencies.append(time.perf_counter() - began)
            messages = session.agent.messages
            last = messages[-1] if messages else None
            if session.agent.error or (
                isinstance(last, AssistantMessage) and last.stop_reason == "error"
            ):
                errors += 1
                first_error = (
                    first_error or session.agent.error or getattr(last, "error_message", None)
                )
            elif len(messages) != 4 or not (
                isinstance(last, AssistantMessage)
                and last.content
                and isinstance(last.content[0], TextContent)
                and len(last.content[0].text) == args.answer_chars
            ):
                bad_answers += 1

        before = await server_stats(root, reset_lateness=True)
        lag = LagMonitor(0.010)
        nursery.start_soon(lag.run)
        cpu0 = cpu_s()
        start = time.perf_counter()
        with trio.move_on_after(args.timeout_s) as timeout:
            async with trio.open_nursery() as prompts:
                for i, served in enumerate(sessions):
                    prompts.start_soon(one, i, served.session)
        wall = time.perf_counter() - start
        cpu = cpu_s() - cpu0
        lag_stats = lag.stop()
        peak = sampler.stop()
        after = await server_stats(root)

        gc.collect()
        rss_after_run = current_rss_bytes()
        for served in sessions:
            await served.dispose()
        sessions.clear()
        gc.collect()
        nursery.cancel_scope.cancel()

    ordered = sorted(latencies)
    return {
        "scenario": "http_sessions",
        "implementation": "pitrio",
        "api": args.api,
        "n": n,
        "tokens_per_second": args.tps,
        "answer_chars": args.answer_chars,
        "completed": len(latencies),
        "errors": errors,
        "bad_answers": bad_answers,
        "first_error": first_error,
        "aborted": f"timeout after {args.timeout_s}s" if timeout.cancelled_caught else None,
        "create_s": round(create_s, 3),
        "create_us_per_session": round(create_s * 1e6 / n, 1),
        "ideal_s": round(ideal, 3),
        "wall_s": round(wall, 3),
        "wall_over_ideal": round(wall / ideal, 3),
        "latency_p50_s": round(percentile(ordered, 50), 3) if ordered else None,
        "latency_p99_s": round(percentile(ordered, 99), 3) if ordered else None,
        "latency_max_s": round(ordered[-1], 3) if ordered else None,
        "total_events": counts["events"],
        "events_per_session": round(counts["events"] / n, 2),
        "text_deltas": counts["text_deltas"],
        "events_per_s": round(counts["events"] / wall),
        "events_by_type": dict(by_type),
        "client_cpu_s": round(cpu, 3),
        "client_cpu_share_of_one_core": round(cpu / wall, 3),
        "client_cpu_ms_per_session": round(cpu * 1e3 / n, 3),
        **server_delta(before, after, wall),
        "rss_baseline_mb": round(mb(rss_baseline), 1),
        "rss_after_create_mb": round(mb(rss_after_create), 1),
        "peak_rss_mb": round(mb(peak), 1),
        "rss_after_run_gc_mb": round(mb(rss_after_run), 1),
        "peak_rss_per_session_kb": round((peak - rss_baseline) / 1024 / n, 1),
        **lag_stats,
        "env": env_info(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_args(parser)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--tps", type=int, default=50)
    parser.add_argument("--answer-chars", type=int, default=400)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args()
    with llm_server(args) as root:
        emit(trio.run(main_async, args, root))


if __name__ == "__main__":
    main()
