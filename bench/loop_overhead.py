"""Scenario 1, ``loop_overhead``: agent-loop cost per turn (mirrors
../shared/bench/pi/scenarios/loop_overhead.mjs).

One Agent with the ``echo`` tool on the faux provider at unlimited speed; each prompt is two
turns (an echo tool call, then a 200-token answer = 800 characters). 100 warm-up prompts, then
``--prompts`` (2,000) strictly sequential prompts, timed one by one. Prints one JSON line.

Modes: ``reset`` (headline: ``agent.reset()`` before every prompt, constant context),
``accumulate`` (history grows), ``provider`` (no Agent: the same two requests per prompt sent
straight to ``stream_simple``; the cost of the faux provider alone), and through an
``AgentSession`` built as pi's ``lib/session.mjs`` builds it (``_common.SessionFactory``):
``session`` (a fresh session per prompt, created and disposed outside the timed region) and
``session-accumulate`` (one session for every prompt, history kept in memory).

    python bench/loop_overhead.py --mode reset --prompts 2000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import trio

from pitrio.actors import AgentEvent, MessageUpdateEvent, open_agent
from pitrio.providers import (
    DEFAULT_YIELD_EVERY,
    Context,
    TextContent,
    TextDeltaEvent,
    ToolResultMessage,
    UserMessage,
    now_ms,
    start_stream,
    stream_simple,
)

from _common import (
    SessionFactory,
    echo_tool,
    emit,
    env,
    make_text,
    percentile,
    setup_faux,
    tool_then_text,
)

SYSTEM_PROMPT = "You are a benchmark agent. Call the echo tool, then answer."
FINAL_TEXT_CHARS = 800


async def run_agent(args: argparse.Namespace) -> dict[str, Any]:
    faux, registry = setup_faux(yield_every=args.yield_every)
    respond = tool_then_text(make_text(args.final_chars))
    counts = {"events": 0, "text_deltas": 0, "turns": 0, "tool_executions": 0}

    def listener(event: AgentEvent) -> None:
        counts["events"] += 1
        if type(event) is MessageUpdateEvent:
            if type(event.assistant_message_event) is TextDeltaEvent:
                counts["text_deltas"] += 1
        elif event.type == "turn_end":
            counts["turns"] += 1
        elif event.type == "tool_execution_end":
            counts["tool_executions"] += 1

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        system_prompt=SYSTEM_PROMPT,
        tools=[echo_tool()],
    ) as agent:
        agent.subscribe(listener)

        async def one(i: int) -> None:
            if args.mode == "reset":
                await agent.reset()
            faux.append_responses([respond, respond])
            await agent.prompt(f"prompt number {i}: please echo hello world")

        for i in range(args.warmup):
            await one(i)
        if args.mode == "reset":
            await agent.reset()
        for key in counts:
            counts[key] = 0
        latencies: list[float] = []
        blocks: list[float] = []
        block = 0.0
        for i in range(args.prompts):
            start = time.perf_counter()
            await one(i)
            elapsed = time.perf_counter() - start
            latencies.append(elapsed)
            block += elapsed
            if (i + 1) % 200 == 0:
                blocks.append(round(200 / block, 1))
                block = 0.0
        error = agent.error
        history = len(agent.messages)
    return {
        **_prompt_report(args, latencies, counts, blocks, history),
        "error": error,
    }


def _prompt_report(
    args: argparse.Namespace,
    latencies: list[float],
    counts: dict[str, int],
    blocks: list[float],
    history: int,
) -> dict[str, Any]:
    """The figures every prompt-loop mode reports (latencies in seconds, one per prompt)."""
    wall = sum(latencies)
    ordered = sorted(latencies)
    return {
        "wall_s": round(wall, 4),
        "prompts": args.prompts,
        "final_chars": args.final_chars,
        **counts,
        "events_per_prompt": round(counts["events"] / args.prompts, 2),
        "prompts_per_s": round(args.prompts / wall, 1),
        "events_per_s": round(counts["events"] / wall),
        "per_turn_us": round(wall * 1e6 / max(1, counts["turns"]), 1),
        "per_prompt_us_p50": round(percentile(ordered, 50) * 1e6, 1),
        "per_prompt_us_p99": round(percentile(ordered, 99) * 1e6, 1),
        "prompts_per_s_by_block_of_200": blocks,
        "final_history_messages": history,
    }


async def run_session(args: argparse.Namespace) -> dict[str, Any]:
    faux, registry = setup_faux(yield_every=args.yield_every)
    factory = SessionFactory(faux, registry)
    respond = tool_then_text(make_text(args.final_chars))
    counts = {"events": 0, "text_deltas": 0, "turns": 0, "tool_executions": 0}

    def listener(event: Any) -> None:
        counts["events"] += 1
        if type(event) is MessageUpdateEvent:
            if type(event.assistant_message_event) is TextDeltaEvent:
                counts["text_deltas"] += 1
        elif event.type == "turn_end":
            counts["turns"] += 1
        elif event.type == "tool_execution_end":
            counts["tool_executions"] += 1

    latencies: list[float] = []
    blocks: list[float] = []
    errors = 0
    history = 0
    async with trio.open_nursery() as nursery:
        kept = await factory.start(nursery) if args.mode == "session-accumulate" else None
        if kept is not None:
            kept.session.subscribe(listener)
        block = 0.0
        for i in range(args.warmup + args.prompts):
            if i == args.warmup:
                for key in counts:
                    counts[key] = 0
            served = kept
            if served is None:
                served = await factory.start(nursery)
                served.session.subscribe(listener)
            faux.append_responses([respond, respond])
            start = time.perf_counter()
            await served.session.prompt(f"prompt number {i}: please echo hello world")
            elapsed = time.perf_counter() - start
            errors += served.session.agent.error is not None
            history = len(served.session.messages)
            if kept is None:
                await served.dispose()
            if i < args.warmup:
                continue
            latencies.append(elapsed)
            block += elapsed
            if len(latencies) % 200 == 0:
                blocks.append(round(200 / block, 1))
                block = 0.0
        if kept is not None:
            await kept.dispose()
    return {
        **_prompt_report(args, latencies, counts, blocks, history),
        "system_prompt_chars": len(factory.system_prompt),
        "errors": errors,
    }


async def run_provider(args: argparse.Namespace) -> dict[str, Any]:
    faux, registry = setup_faux(yield_every=args.yield_every)
    model = faux.get_model()
    assert model is not None
    respond = tool_then_text(make_text(args.final_chars))
    tool = echo_tool().to_tool()
    user = UserMessage(
        content=[TextContent(text="prompt: please echo hello world")], timestamp=now_ms()
    )
    first = Context(system_prompt=SYSTEM_PROMPT, messages=[user], tools=[tool])
    call_message = respond(first)
    result = ToolResultMessage(
        tool_call_id=call_message.content[0].id,
        tool_name="echo",
        content=[TextContent(text="hello world")],
        details={},
        is_error=False,
        timestamp=now_ms(),
    )
    second = Context(
        system_prompt=SYSTEM_PROMPT, messages=[user, call_message, result], tools=[tool]
    )

    async def one_scoped() -> int:
        faux.append_responses([respond, respond])
        events = 0
        for context in (first, second):
            async with stream_simple(model, context, registry=registry) as stream:
                async for _ in stream:
                    events += 1
        return events

    async def one_started() -> int:
        # pi's streamSimple() returns at once and a detached promise feeds the stream; the
        # Trio form of that is a task in a nursery the caller already has (start_stream),
        # not abortable on its own (pi's call without a signal): no nursery and no cancel
        # scope per call.
        faux.append_responses([respond, respond])
        events = 0
        for context in (first, second):
            stream = start_stream(calls, model, context, registry=registry, abortable=False)
            async for _ in stream:
                events += 1
        return events

    one = one_started if args.call == "start_stream" else one_scoped
    latencies = []
    events = 0
    async with trio.open_nursery() as calls:
        for _ in range(args.warmup):
            await one()
        for _ in range(args.prompts):
            start = time.perf_counter()
            events += await one()
            latencies.append(time.perf_counter() - start)
    wall = sum(latencies)
    return {
        "wall_s": round(wall, 4),
        "prompts": args.prompts,
        "final_chars": args.final_chars,
        "call": args.call,
        "llm_calls": 2 * args.prompts,
        "events": events,
        "prompts_per_s": round(args.prompts / wall, 1),
        "events_per_s": round(events / wall),
        "per_turn_us": round(wall * 1e6 / (2 * args.prompts), 1),
    }


async def main_async(args: argparse.Namespace) -> None:
    if args.mode == "provider":
        result = await run_provider(args)
    elif args.mode.startswith("session"):
        result = await run_session(args)
    else:
        result = await run_agent(args)
    emit(
        {
            "scenario": "loop_overhead",
            "mode": args.mode,
            "yield_every": args.yield_every,
            **result,
            "env": env(),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Agent-loop cost per turn (pi scenario 1).")
    parser.add_argument(
        "--mode",
        choices=["reset", "accumulate", "provider", "session", "session-accumulate"],
        default="reset",
    )
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument(
        "--yield-every",
        type=int,
        default=DEFAULT_YIELD_EVERY,
        help="faux checkpoints every N deltas (default %(default)s; 1 = a scheduler pass per "
        "delta; 0 = every OFFER_BATCH deltas)",
    )
    parser.add_argument(
        "--call",
        choices=["stream_simple", "start_stream"],
        default="stream_simple",
        help="provider mode: each call in its own `async with stream_simple` (default), or "
        "start_stream into one nursery, not abortable on its own (pi's detached call)",
    )
    parser.add_argument(
        "--final-chars",
        type=int,
        default=FINAL_TEXT_CHARS,
        help="characters of the final answer (default %(default)s, pi's; 4 leaves the fixed "
        "cost of a prompt or call: the difference per delta is the streaming cost)",
    )
    trio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
