"""Scenario H3, ``http_stream``: one very long streamed answer over HTTP (mirrors
../shared/bench/http/scenarios/http_stream.mjs), and long streamed tool-call arguments.

Default: one Agent, no tools, one prompt; the server answers ``makeText(--chars)`` (1,000,000
characters = 250,000 deltas of 4) at unlimited speed. ``--mode provider`` drains
``stream_simple`` with no Agent. A 20,000-character warm-up answer first. The subscriber counts
``text_delta`` events and their UTF-8 bytes. Prints one JSON line with pi's keys.

``--tool-text-chars 1000,4000,16000,64000``: instead, for each size one prompt to an Agent with
the ``echo`` tool whose call streams that many characters of arguments (``makeText(K)``, in
4-character deltas; pi's ``http_loop --tool-text-chars``), then an 800-character answer;
``--repeat`` prompts per size (the median is kept). Reported per size: milliseconds and CPU per
prompt, and CPU per argument character beyond a prompt with ``"hello world"`` as argument
(``marginal_cpu_us_per_char``): flat when the arguments cost linear time.

``--floor``: the same answer's bytes, read once as the socket delivered them, then decoded on
CPython with nothing else, twice: SSE framing and one ``orjson.loads`` per event (``decode``),
and that plus the pitrio event per text delta (``builder.append``, ``snapshot``, a
``TextDeltaEvent`` built as the providers build it: ``events``). CPU per delta of each, beside
the provider alone (``--mode provider``) on the same bytes.

    python bench/http_stream.py --api anthropic-messages
    python bench/http_stream.py --tool-text-chars 1000,4000,16000,64000
    python bench/http_stream.py --floor --api openai-completions
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import orjson
import trio

from pitrio.actors import AgentEvent, MessageUpdateEvent, open_agent
from pitrio.providers import (
    DELTA_FACTORIES,
    AssistantMessage,
    Context,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    UserMessage,
    now_ms,
    open_http_client,
    stream_simple,
)
from pitrio.providers._http import new_message_builder
from pitrio.providers._sse import SSEDecoder

from _common import RssSampler, current_rss_bytes, echo_tool, emit
from http_common import (
    API_KEY,
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

SYSTEM_PROMPT = "You are a benchmark agent."
PROMPT = "Write a very long answer."
TOOL_SYSTEM_PROMPT = "You are a benchmark agent. Call the echo tool, then answer."
HELLO = len("hello world")


async def run_once(
    args: argparse.Namespace, root: str, chars: int, measure: bool
) -> dict[str, Any]:
    model = http_model(root, args.api, answer_chars=chars, tps=0)
    counts = {"events": 0, "text_deltas": 0, "bytes": 0}
    first_delta = 0.0

    def on_delta(delta: str) -> None:
        nonlocal first_delta
        if counts["text_deltas"] == 0:
            first_delta = time.perf_counter()
        counts["text_deltas"] += 1
        counts["bytes"] += len(delta.encode())

    before = await server_stats(root) if measure else None
    rss_before = current_rss_bytes()
    final: AssistantMessage | None = None
    error: str | None = None
    async with trio.open_nursery() as nursery:
        sampler = RssSampler(0.020)
        if measure:
            nursery.start_soon(sampler.run)
        cpu0 = cpu_s()
        start = time.perf_counter()
        if args.mode == "provider":
            context = Context(
                system_prompt=SYSTEM_PROMPT,
                messages=[UserMessage(content=[TextContent(text=PROMPT)], timestamp=now_ms())],
            )
            options = StreamOptions(api_key=API_KEY)
            async with stream_simple(model, context, options, registry=registry()) as events:
                async for event in events:
                    counts["events"] += 1
                    if type(event) is TextDeltaEvent:
                        on_delta(event.delta)
                final = await events.result()
            error = final.error_message
        else:

            def listener(event: AgentEvent) -> None:
                counts["events"] += 1
                if type(event) is MessageUpdateEvent:
                    inner = event.assistant_message_event
                    if type(inner) is TextDeltaEvent:
                        on_delta(inner.delta)

            async with open_agent(
                model=model,
                registry=registry(),
                system_prompt=SYSTEM_PROMPT,
                get_api_key=get_api_key,
            ) as agent:
                agent.subscribe(listener)
                await agent.prompt(PROMPT)
                last = agent.messages[-1]
                final = last if isinstance(last, AssistantMessage) else None
                error = agent.error
        wall = time.perf_counter() - start
        cpu = cpu_s() - cpu0
        peak = sampler.stop() if measure else 0
        nursery.cancel_scope.cancel()
    after = await server_stats(root) if measure else None
    text = final.content[0] if final is not None and final.content else None
    final_len = len(text.text) if isinstance(text, TextContent) else -1
    return {
        "wall": wall,
        "cpu": cpu,
        "first_delta_ms": (first_delta - start) * 1e3 if first_delta else None,
        "final_len": final_len,
        "error": error,
        "before": before,
        "after": after,
        "rss_before": rss_before,
        "peak": peak,
        **counts,
    }


async def stream_main(args: argparse.Namespace, root: str) -> dict[str, Any]:
    async with open_http_client():
        for chars in (args.warmup_chars, args.chars):
            await prepare(root, http_model(root, args.api, answer_chars=chars, tps=0))
        await run_once(args, root, args.warmup_chars, measure=False)
        r = await run_once(args, root, args.chars, measure=True)
    wall = r["wall"]
    deltas = max(1, r["text_deltas"])
    return {
        "scenario": "http_stream",
        "implementation": "pitrio",
        "api": args.api,
        "mode": args.mode,
        "chars": args.chars,
        "chars_per_delta": 4,
        "expected_text_deltas": -(-args.chars // 4),
        "wall_s": round(wall, 4),
        "events": r["events"],
        "text_deltas": r["text_deltas"],
        "delta_bytes": r["bytes"],
        "text_deltas_per_s": round(r["text_deltas"] / wall),
        "events_per_s": round(r["events"] / wall),
        "mb_per_s": round(mb(r["bytes"]) / wall, 3),
        "us_per_delta": round(wall * 1e6 / deltas, 3),
        "time_to_first_delta_ms": (
            round(r["first_delta_ms"], 2) if r["first_delta_ms"] is not None else None
        ),
        "final_text_length_ok": r["final_len"] == args.chars,
        "error": r["error"],
        "client_cpu_s": round(r["cpu"], 3),
        "client_cpu_us_per_delta": round(r["cpu"] * 1e6 / deltas, 3),
        **server_delta(r["before"], r["after"], wall),
        "rss_before_mb": round(mb(r["rss_before"]), 1),
        "peak_rss_mb": round(mb(r["peak"]), 1),
        "env": env_info(),
    }


async def tool_args_main(args: argparse.Namespace, root: str) -> dict[str, Any]:
    sizes = [int(size) for size in args.tool_text_chars.split(",")]
    results: dict[str, Any] = {}
    async with open_http_client():
        base = await _tool_prompts(args, root, None)
        for size in sizes:
            results[str(size)] = await _tool_prompts(args, root, size)
    for size in sizes:
        row = results[str(size)]
        extra = size - HELLO
        row["cpu_us_per_char"] = round(row["cpu_ms_per_prompt"] * 1e3 / size, 3)
        row["marginal_cpu_us_per_char"] = round(
            (row["cpu_ms_per_prompt"] - base["cpu_ms_per_prompt"]) * 1e3 / extra, 3
        )
        row["marginal_ms_per_kchar"] = round(
            (row["ms_per_prompt"] - base["ms_per_prompt"]) * 1e3 / extra, 3
        )
    return {
        "scenario": "http_stream_tool_args",
        "implementation": "pitrio",
        "api": args.api,
        "repeat": args.repeat,
        "hello_world": base,
        "sizes": results,
        "env": env_info(),
    }


async def _tool_prompts(args: argparse.Namespace, root: str, size: int | None) -> dict[str, Any]:
    """``args.repeat`` prompts whose echo call streams ``size`` characters (None: hello world)."""
    model = http_model(root, args.api, answer_chars=800, tps=0, tool_text_chars=size)
    await prepare(root, model)
    walls: list[float] = []
    cpus: list[float] = []
    deltas = 0
    async with open_agent(
        model=model,
        registry=registry(),
        system_prompt=TOOL_SYSTEM_PROMPT,
        tools=[echo_tool()],
        get_api_key=get_api_key,
    ) as agent:

        def listener(event: AgentEvent) -> None:
            nonlocal deltas
            if type(event) is MessageUpdateEvent and (
                event.assistant_message_event.type == "toolcall_delta"
            ):
                deltas += 1

        agent.subscribe(listener)
        for i in range(args.repeat + 1):  # the first is a warm-up
            await agent.reset()
            deltas = 0
            cpu0 = cpu_s()
            start = time.perf_counter()
            await agent.prompt(f"prompt number {i}: please echo hello world")
            if i:
                walls.append(time.perf_counter() - start)
                cpus.append(cpu_s() - cpu0)
        call = agent.messages[1]
        block = call.content[0] if isinstance(call, AssistantMessage) else None
        arguments = block.arguments if isinstance(block, ToolCall) else {}
        ok = agent.error is None and len(arguments.get("text", "")) == (size or HELLO)
    return {
        "tool_text_chars": size or HELLO,
        "toolcall_deltas": deltas,
        "ok": ok,
        "ms_per_prompt": round(statistics.median(walls) * 1e3, 2),
        "cpu_ms_per_prompt": round(statistics.median(cpus) * 1e3, 2),
    }


async def floor_main(args: argparse.Namespace, root: str) -> dict[str, Any]:
    model = http_model(root, args.api, answer_chars=args.chars, tps=0)
    if args.api == "openai-completions":
        url = f"{root}/v1/chat/completions"
        body: dict[str, Any] = {"model": model.id, "stream": True, "messages": []}
    else:
        url = f"{root}/v1/messages"
        body = {"model": model.id, "stream": True, "max_tokens": 16384, "messages": []}
    async with open_http_client() as client:
        await prepare(root, model)
        chunks: list[bytes] = []
        async with client.stream("POST", url, json=body) as response:
            async for chunk in response.aiter_raw():
                chunks.append(chunk)
        provider = await run_once(argparse.Namespace(**{**vars(args), "mode": "provider"}),
                                  root, args.chars, measure=False)  # fmt: skip
    openai = args.api == "openai-completions"

    make_delta = DELTA_FACTORIES[TextDeltaEvent]  # the providers' way to build one

    def decode(build: bool) -> tuple[int, float]:
        builder = new_message_builder(model)
        index = builder.add_text()
        append = builder.chunk_appender(index)
        decoder = SSEDecoder()
        deltas = 0
        cpu0 = cpu_s()
        for chunk in chunks:
            for event in decoder.feed(chunk):
                if event.data == "[DONE]":
                    continue
                payload = orjson.loads(event.data)
                if openai:
                    choices = payload.get("choices")
                    text = choices[0]["delta"].get("content") if choices else None
                else:
                    delta = (
                        payload.get("delta") if payload["type"] == "content_block_delta" else None
                    )
                    text = delta.get("text") if delta else None
                if text:
                    deltas += 1
                    if build:
                        append(text)
                        make_delta(index, text, builder.snapshot())
        return deltas, cpu_s() - cpu0

    decode(True)  # warm-up
    deltas, decode_cpu = min((decode(False) for _ in range(3)), key=lambda r: r[1])
    _, events_cpu = min((decode(True) for _ in range(3)), key=lambda r: r[1])
    per = 1e6 / max(1, deltas)
    return {
        "scenario": "http_stream_floor",
        "implementation": "pitrio",
        "api": args.api,
        "chars": args.chars,
        "reads": len(chunks),
        "bytes": sum(map(len, chunks)),
        "text_deltas": deltas,
        "floor_decode_cpu_us_per_delta": round(decode_cpu * per, 3),
        "floor_events_cpu_us_per_delta": round(events_cpu * per, 3),
        "provider_cpu_us_per_delta": round(provider["cpu"] * per, 3),
        "provider_over_floor": round(provider["cpu"] / events_cpu, 2),
        "env": env_info(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_args(parser)
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--warmup-chars", type=int, default=20_000)
    parser.add_argument("--mode", default="agent", choices=("agent", "provider"))
    parser.add_argument("--tool-text-chars", help="comma-separated sizes: the tool-argument run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--floor", action="store_true", help="the CPython floor (see above)")
    args = parser.parse_args()
    with llm_server(args) as root:
        if args.floor:
            emit(trio.run(floor_main, args, root))
        elif args.tool_text_chars:
            emit(trio.run(tool_args_main, args, root))
        else:
            emit(trio.run(stream_main, args, root))


if __name__ == "__main__":
    main()
