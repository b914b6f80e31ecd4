"""Scenario H1, ``http_loop``: the agent loop over HTTP (mirrors
../shared/bench/http/scenarios/http_loop.mjs).

One Agent with the ``echo`` tool against ``llm_server.mjs`` at unlimited speed. Every prompt is
two LLM calls: an echo tool call (six argument deltas), the tool, then an ``--answer-chars``
answer (800 characters = 200 deltas). ``agent.reset()`` before every prompt, so every prompt
sends the same two requests. 50 warm-up prompts, then ``--prompts`` (500) strictly sequential
ones, timed one by one. ``--tool-text-chars K`` makes the echo argument ``makeText(K)``: long
streamed tool-call arguments (a ``write`` of a large file). Prints one JSON line with pi's keys.

    python bench/http_loop.py --api anthropic-messages
    python bench/http_loop.py --base-url http://127.0.0.1:PORT --tool-text-chars 16000 --prompts 5
"""

from __future__ import annotations

import argparse
import collections
import time
from typing import Any

import trio

from pitrio.actors import AgentEvent, MessageUpdateEvent, open_agent
from pitrio.providers import AssistantMessage, TextContent, ToolCall, open_http_client

from _common import RssSampler, current_rss_bytes, echo_tool, emit, percentile
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

SYSTEM_PROMPT = "You are a benchmark agent. Call the echo tool, then answer."


async def main_async(args: argparse.Namespace, root: str) -> dict[str, Any]:
    model = http_model(
        root,
        args.api,
        answer_chars=args.answer_chars,
        tps=0,
        tool_text_chars=args.tool_text_chars,
    )
    counts = {"events": 0, "text_deltas": 0, "toolcall_deltas": 0, "turns": 0, "tools": 0}
    by_type: collections.Counter[str] = collections.Counter()

    def listener(event: AgentEvent) -> None:
        counts["events"] += 1
        kind = event.type
        if type(event) is MessageUpdateEvent:
            inner = event.assistant_message_event.type
            by_type[f"message_update:{inner}"] += 1
            if inner == "text_delta":
                counts["text_deltas"] += 1
            elif inner == "toolcall_delta":
                counts["toolcall_deltas"] += 1
            return
        by_type[kind] += 1
        if kind == "turn_end":
            counts["turns"] += 1
        elif kind == "tool_execution_end":
            counts["tools"] += 1

    errors = bad_answers = 0
    first_error: str | None = None
    async with (
        open_http_client(),
        open_agent(
            model=model,
            registry=registry(),
            system_prompt=SYSTEM_PROMPT,
            tools=[echo_tool()],
            get_api_key=get_api_key,
        ) as agent,
        trio.open_nursery() as nursery,
    ):
        await prepare(root, model)
        agent.subscribe(listener)

        async def one(i: int) -> None:
            nonlocal errors, bad_answers, first_error
            await agent.reset()
            await agent.prompt(f"prompt number {i}: please echo hello world")
            messages = agent.messages
            last = messages[-1] if messages else None
            if agent.error or (isinstance(last, AssistantMessage) and last.stop_reason == "error"):
                errors += 1
                if first_error is None:
                    first_error = agent.error or getattr(last, "error_message", None)
            elif len(messages) != 4 or not _answer_ok(last, args.answer_chars):
                bad_answers += 1

        for i in range(args.warmup):
            await one(i)
        errors = bad_answers = 0
        first_error = None
        for name in counts:
            counts[name] = 0
        by_type.clear()

        sampler = RssSampler(0.020)
        nursery.start_soon(sampler.run)
        before = await server_stats(root)
        cpu0 = cpu_s()
        latencies: list[float] = []
        events_per_prompt: list[int] = []
        run_start = time.perf_counter()
        for i in range(args.prompts):
            e0 = counts["events"]
            start = time.perf_counter()
            await one(i)
            latencies.append(time.perf_counter() - start)
            events_per_prompt.append(counts["events"] - e0)
        run_wall = time.perf_counter() - run_start
        cpu = cpu_s() - cpu0
        after = await server_stats(root)
        peak = sampler.stop()
        last = agent.messages[-1]
        tool_message = agent.messages[1]
        nursery.cancel_scope.cancel()

    total = sum(latencies)
    ordered = sorted(latencies)
    n = args.prompts
    server = server_delta(before, after, run_wall)
    tool_call = (
        tool_message.content[0]
        if isinstance(tool_message, AssistantMessage) and tool_message.content
        else None
    )
    arguments = tool_call.arguments if isinstance(tool_call, ToolCall) else {}
    return {
        "scenario": "http_loop",
        "implementation": "pitrio",
        "api": args.api,
        "prompts": n,
        "warmup": args.warmup,
        "answer_chars": args.answer_chars,
        "tool_text_chars": args.tool_text_chars,
        "model": model.id,
        "wall_s": round(total, 4),
        "prompts_per_s": round(n / total, 1),
        "us_per_prompt": round(total * 1e6 / n, 1),
        "per_turn_us": round(total * 1e6 / max(1, counts["turns"]), 1),
        "per_prompt_us_p50": round(percentile(ordered, 50) * 1e6, 1),
        "per_prompt_us_p99": round(percentile(ordered, 99) * 1e6, 1),
        "turns": counts["turns"],
        "tool_executions": counts["tools"],
        "events": counts["events"],
        "events_per_prompt": round(counts["events"] / n, 2),
        "events_per_prompt_min": min(events_per_prompt),
        "events_per_prompt_max": max(events_per_prompt),
        "text_deltas_per_prompt": round(counts["text_deltas"] / n, 2),
        "toolcall_deltas_per_prompt": round(counts["toolcall_deltas"] / n, 2),
        "events_by_type_per_prompt": {k: round(v / n, 2) for k, v in by_type.items()},
        "errors": errors,
        "bad_answers": bad_answers,
        "parsed_last_answer": _parsed(last),
        "parsed_tool_call": {
            "stop_reason": getattr(tool_message, "stop_reason", None),
            "id": getattr(tool_call, "id", None),
            "arguments_text_chars": len(arguments.get("text", "")),
            "arguments": arguments if args.tool_text_chars is None else "(long)",
        },
        "first_error": first_error,
        "client_cpu_s": round(cpu, 3),
        "client_cpu_us_per_prompt": round(cpu * 1e6 / n, 1),
        **server,
        "server_cpu_us_per_prompt": (
            round(server["server_cpu_s"] * 1e6 / n, 1) if "server_cpu_s" in server else None
        ),
        "rss_end_mb": round(mb(current_rss_bytes()), 1),
        "peak_rss_mb": round(mb(peak), 1),
        "env": env_info(),
    }


def _answer_ok(message: Any, chars: int) -> bool:
    if not isinstance(message, AssistantMessage) or not message.content:
        return False
    block = message.content[0]
    return isinstance(block, TextContent) and len(block.text) == chars


def _parsed(message: Any) -> dict[str, Any]:
    if not isinstance(message, AssistantMessage):
        return {}
    block = message.content[0] if message.content else None
    return {
        "usage_input": message.usage.input,
        "usage_output": message.usage.output,
        "stop_reason": message.stop_reason,
        "response_id": message.response_id,
        "text_chars": len(block.text) if isinstance(block, TextContent) else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_args(parser)
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--answer-chars", type=int, default=800)
    parser.add_argument("--tool-text-chars", type=int)
    args = parser.parse_args()
    with llm_server(args) as root:
        emit(trio.run(main_async, args, root))


if __name__ == "__main__":
    main()
