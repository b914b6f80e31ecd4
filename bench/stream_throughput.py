"""Scenario 2, ``stream_throughput``: one very long streamed answer (mirrors
../shared/bench/pi/scenarios/stream_throughput.mjs).

The faux provider streams one text block of N characters at unlimited speed in 4-character
deltas (token_size 1..1); the consumer counts ``text_delta`` events and their UTF-8 bytes. A
20,000-character warm-up runs first. Each size prints one JSON object per line; the last line is
a summary with the throughput ratio between the smallest and the largest answer (1.0 = flat).

    python bench/stream_throughput.py                      # 10 KB, 100 KB, 250 KB, 1 MB
    python bench/stream_throughput.py --chars 1000000 --yield-every 1

``--mode agent`` (default) runs one Agent prompt and counts ``message_update`` text deltas in a
subscriber; ``--mode provider`` drains ``stream_simple`` directly (pi's ``--mode=provider``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import trio

from pitrio.actors import AgentEvent, MessageUpdateEvent, open_agent
from pitrio.providers import (
    DEFAULT_YIELD_EVERY,
    AssistantMessage,
    Context,
    TextDeltaEvent,
    UserMessage,
    faux_assistant_message,
    stream_simple,
)

from _common import emit, env, make_text, peak_rss_mb, setup_faux

SYSTEM_PROMPT = "You are a benchmark agent."
PROMPT = "Write a very long answer."
DEFAULT_SIZES = (10_000, 100_000, 250_000, 1_000_000)


async def run_once(mode: str, n_chars: int, text: str, yield_every: int) -> dict[str, Any]:
    faux, registry = setup_faux(yield_every=yield_every)
    model = faux.get_model()
    assert model is not None
    faux.set_responses([faux_assistant_message(text[:n_chars])])
    events = deltas = size = 0
    first_delta = 0.0

    def on_delta(delta: str) -> None:
        nonlocal deltas, size, first_delta
        if deltas == 0:
            first_delta = time.perf_counter()
        deltas += 1
        size += len(delta.encode())

    if mode == "provider":
        context = Context(
            system_prompt=SYSTEM_PROMPT, messages=[UserMessage(content=PROMPT, timestamp=0)]
        )
        t0 = time.perf_counter()
        async with stream_simple(model, context, registry=registry) as stream:
            async for event in stream:
                events += 1
                if type(event) is TextDeltaEvent:
                    on_delta(event.delta)
            final = await stream.result()
        wall = time.perf_counter() - t0
    else:

        def listener(event: AgentEvent) -> None:
            nonlocal events
            events += 1
            if type(event) is MessageUpdateEvent:
                inner = event.assistant_message_event
                if type(inner) is TextDeltaEvent:
                    on_delta(inner.delta)

        async with open_agent(model=model, registry=registry, system_prompt=SYSTEM_PROMPT) as agent:
            agent.subscribe(listener)
            t0 = time.perf_counter()
            await agent.prompt(PROMPT)
            wall = time.perf_counter() - t0
            last = agent.messages[-1]
            assert isinstance(last, AssistantMessage)
            final = last
    return {
        "wall_s": round(wall, 4),
        "events": events,
        "text_deltas": deltas,
        "delta_bytes": size,
        "text_deltas_per_s": round(deltas / wall),
        "events_per_s": round(events / wall),
        "mb_per_s": round(size / 2**20 / wall, 3),
        "us_per_delta": round(wall * 1e6 / deltas, 3),
        "time_to_first_delta_ms": round((first_delta - t0) * 1000, 2),
        "final_text_length_ok": len(final.text()) == n_chars,
    }


async def main_async(args: argparse.Namespace) -> None:
    sizes = args.chars or list(DEFAULT_SIZES)
    text = make_text(max(sizes))
    await run_once(args.mode, 20_000, text, args.yield_every)  # warm-up
    results = []
    for n in sizes:
        result = {
            "scenario": "stream_throughput",
            "mode": args.mode,
            "chars": n,
            "chars_per_delta": 4,
            "yield_every": args.yield_every,
            **await run_once(args.mode, n, text, args.yield_every),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "env": env(),
        }
        results.append(result)
        emit(result)
    rates = [r["text_deltas_per_s"] for r in results]
    summary = {
        "scenario": "stream_throughput",
        "summary": True,
        "sizes": sizes,
        "text_deltas_per_s": rates,
        "largest_over_smallest": round(rates[-1] / rates[0], 3),
    }
    emit(summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, action="append", help="answer size (repeatable)")
    parser.add_argument("--mode", choices=["agent", "provider"], default="agent")
    parser.add_argument(
        "--yield-every",
        type=int,
        default=DEFAULT_YIELD_EVERY,
        help="faux checkpoints after every N deltas (default %(default)s; 1 = a scheduler pass "
        "per delta; 0 = every OFFER_BATCH deltas)",
    )
    trio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
