"""Scenario 5, ``session_persistence``, as far as the session layer goes (mirrors
../shared/bench/pi/scenarios/session_persistence.mjs).

Part A (per-entry cost): 200 turns (+5 warm-up) of "user prompt -> 80-character answer", each
turn appending the user and the assistant message to a SessionManager, every
``append_message`` timed. Three ways: in memory, file-backed with synchronous writes (one
``os.write`` per entry, pi's model without the open/close), and file-backed through the
Persistence actor (the append only enqueues; ``turn_persist`` also awaits the line on disk).
pi times ``appendMessage`` inside real AgentSession turns; ``agent_session`` gives the turn
times of 200 AgentSession turns (file-backed and in memory) beside them.

Part B (reopen): a 10,000-entry file written through the SessionManager API (a model change, a
thinking level change, then clones of the 4 messages one real "echo tool + 800-character answer"
prompt produces on the faux provider), then 5 times: ``SessionManager.open``,
``build_session_context``, ``get_branch``, a full restore (``SessionManager.open`` and an
AgentSession built on it, as ``createAgentSession`` does), and the reference: read + split +
parse every line. Medians of the 5.

Also measured: one ``os.write`` of an entry line to the page cache against a round trip through
``trio.to_thread.run_sync`` (why the Persistence actor writes on the event loop).

    python bench/session_io.py --turns 200 --entries 10000 --reopens 5

Prints one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from pitrio.actors import open_agent
from pitrio.providers import TextContent, UserMessage, faux_assistant_message, now_ms
from pitrio.sessions import SessionManager, open_persistence

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

CWD = "/bench/cwd"
WARMUP_TURNS = 5


def _us(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(values) * 1e6, 2),
        "p50": round(percentile(ordered, 50) * 1e6, 2),
        "p99": round(percentile(ordered, 99) * 1e6, 2),
        "max": round(ordered[-1] * 1e6, 2),
    }


# --------------------------------------------------------------------------- part A


def turn_messages(i: int) -> tuple[UserMessage, Any]:
    user = UserMessage(
        content=[TextContent(text=f"turn {i}: say something short")], timestamp=now_ms()
    )
    return user, faux_assistant_message(make_text(80))


def appends_sync(manager: SessionManager, turns: int) -> list[float]:
    times: list[float] = []
    for i in range(turns + WARMUP_TURNS):
        for message in turn_messages(i):
            start = time.perf_counter()
            manager.append_message(message)
            elapsed = time.perf_counter() - start
            if i >= WARMUP_TURNS:
                times.append(elapsed)
    return times


async def appends_actor(manager: SessionManager, turns: int) -> tuple[list[float], list[float]]:
    append_times: list[float] = []
    turn_times: list[float] = []
    async with open_persistence(manager):
        for i in range(turns + WARMUP_TURNS):
            turn_start = time.perf_counter()
            last = ""
            for message in turn_messages(i):
                start = time.perf_counter()
                last = manager.append_message(message)
                elapsed = time.perf_counter() - start
                if i >= WARMUP_TURNS:
                    append_times.append(elapsed)
            assert await manager.wait_persisted(last)
            if i >= WARMUP_TURNS:
                turn_times.append(time.perf_counter() - turn_start)
    return append_times, turn_times


async def agent_session_turns(args: argparse.Namespace, run_dir: Path) -> dict[str, Any]:
    """pi's part A proper: ``WARMUP_TURNS + args.turns`` AgentSession turns of
    ``"turn {i}: say something short"`` -> an 80-character answer, file-backed and in memory;
    every turn timed (prompt call -> resolution)."""
    faux, registry = setup_faux()
    factory = SessionFactory(faux, registry)
    answer = faux_assistant_message(make_text(80))
    result: dict[str, Any] = {}
    for name, manager in (
        ("persisted", SessionManager.create(CWD, run_dir / "agent-session")),
        ("inmemory", SessionManager.in_memory(CWD)),
    ):
        times: list[float] = []
        async with trio.open_nursery() as nursery:
            served = await factory.start(nursery, manager)
            for i in range(WARMUP_TURNS + args.turns):
                faux.append_responses([answer])
                start = time.perf_counter()
                await served.session.prompt(f"turn {i}: say something short")
                if i >= WARMUP_TURNS:
                    times.append(time.perf_counter() - start)
            await served.dispose()
        ordered = sorted(times)
        result[f"turn_ms_p50_{name}"] = round(percentile(ordered, 50) * 1e3, 3)
        result[f"turn_ms_p99_{name}"] = round(percentile(ordered, 99) * 1e3, 3)
        result[f"turns_per_s_{name}"] = round(len(times) / sum(times), 1)
    return result


# --------------------------------------------------------------------------- part B


async def echo_prompt_messages() -> list[Any]:
    """The 4 messages of one real 'echo tool + 800-char answer' prompt on the faux provider."""
    faux, registry = setup_faux()
    respond = tool_then_text(make_text(800))
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        system_prompt="You are a benchmark agent.",
        tools=[echo_tool()],
    ) as agent:
        faux.append_responses([respond, respond])
        await agent.prompt("please echo hello world")
        return list(agent.messages[-4:])


def write_big_session(
    directory: Path, templates: list[Any], entries: int
) -> tuple[str, list[float]]:
    manager = SessionManager.create(CWD, directory)
    manager.append_model_change("faux", "faux-1")
    manager.append_thinking_level_change("off")
    times: list[float] = []
    for i in range(2, entries):
        template = templates[(i - 2) % 4]
        if isinstance(template, UserMessage):
            message = UserMessage(
                content=[TextContent(text=f"prompt {i}: please echo hello world")],
                timestamp=now_ms(),
            )
        else:
            message = attrs.evolve(template, timestamp=now_ms())
        start = time.perf_counter()
        manager.append_message(message)
        times.append(time.perf_counter() - start)
    manager.close()
    path = manager.get_session_file()
    assert path is not None
    return path, times


def file_stats(path: str) -> tuple[int, int, bytes]:
    """Entries (lines after the header), size in bytes, and the last line of a session file."""
    data = Path(path).read_bytes()
    lines = data.splitlines()
    return len(lines) - 1, len(data), lines[-1] + b"\n"


def reopen(path: str, directory: Path, reopens: int) -> dict[str, Any]:
    parse_only: list[float] = []
    open_ms: list[float] = []
    build_ms: list[float] = []
    branch_ms: list[float] = []
    restore_ms: list[float] = []
    context_messages = 0
    factory = SessionFactory(*setup_faux())
    for _ in range(reopens):
        start = time.perf_counter()
        with open(path, "rb") as file:
            count = sum(1 for line in file.read().split(b"\n") if line and orjson.loads(line))
        parse_only.append(time.perf_counter() - start)
        assert count > 0

        start = time.perf_counter()
        opened_manager = SessionManager.open(path, directory)
        opened = time.perf_counter()
        context = opened_manager.build_session_context()
        built = time.perf_counter()
        opened_manager.get_branch()
        branched = time.perf_counter()
        open_ms.append(opened - start)
        build_ms.append(built - opened)
        branch_ms.append(branched - built)
        context_messages = len(context.messages)
        opened_manager.close()

        start = time.perf_counter()
        restored_manager = SessionManager.open(path, directory)
        session = factory.create(restored_manager)
        restore_ms.append(time.perf_counter() - start)
        assert len(session.messages) == context_messages
        restored_manager.close()
        # As in pi's loop body: this round's sessions stay alive until the round ends (the
        # open one during the restore), then go; not freed inside the next round's timings.
        del opened_manager, context, restored_manager, session
    med = statistics.median
    return {
        "parse_only_ms": round(med(parse_only) * 1e3, 2),
        "open_ms": round(med(open_ms) * 1e3, 2),
        "build_context_ms": round(med(build_ms) * 1e3, 2),
        "open_plus_build_ms": round(
            med([a + b for a, b in zip(open_ms, build_ms, strict=True)]) * 1e3, 2
        ),
        "get_branch_ms": round(med(branch_ms) * 1e3, 2),
        "restore_agent_session_ms": round(med(restore_ms) * 1e3, 2),
        "context_messages": context_messages,
    }


# --------------------------------------------------------------------------- write latency


async def write_latency(run_dir: Path, line: bytes, n: int = 2000) -> dict[str, float]:
    """One os.write of an entry line vs. a thread round trip (the alternative to writing inline)."""
    fd = os.open(run_dir / "latency.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        direct: list[float] = []
        for _ in range(n):
            start = time.perf_counter()
            os.write(fd, line)
            direct.append(time.perf_counter() - start)
        threaded: list[float] = []
        for _ in range(n // 10):
            start = time.perf_counter()
            await trio.to_thread.run_sync(os.write, fd, line)
            threaded.append(time.perf_counter() - start)
    finally:
        os.close(fd)
    return {
        "line_bytes": len(line),
        "os_write_us_p50": _us(direct)["p50"],
        "os_write_us_p99": _us(direct)["p99"],
        "to_thread_write_us_p50": _us(threaded)["p50"],
    }


# --------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Path(tempfile.mkdtemp(prefix="pitrio-session-io-"))
    try:
        memory = appends_sync(SessionManager.in_memory(CWD), args.turns)
        file_manager = SessionManager.create(CWD, run_dir / "a")
        file_sync = appends_sync(file_manager, args.turns)
        file_manager.close()
        actor_appends, actor_turns = await appends_actor(
            SessionManager.create(CWD, run_dir / "actor"), args.turns
        )
        sync_file = file_manager.get_session_file()
        assert sync_file is not None
        sync_entries, sync_bytes, _ = file_stats(sync_file)
        part_a: dict[str, Any] = {
            "turns": args.turns,
            "entries_in_file": sync_entries,
            "file_bytes": sync_bytes,
            "append_message_us_file_sync": _us(file_sync),
            "append_message_us_file_actor": _us(actor_appends),
            "append_message_us_inmemory": _us(memory),
            "turn_persist_us_actor": _us(actor_turns),
            "agent_session": await agent_session_turns(args, run_dir),
        }

        templates = await echo_prompt_messages()
        big_file, bulk = write_big_session(run_dir / "b", templates, args.entries)
        big_entries, big_bytes, line = file_stats(big_file)
        part_b: dict[str, Any] = {
            "entries": big_entries,
            "file_mb": round(big_bytes / 1_000_000, 2),
            "generate_s": round(sum(bulk), 3),
            "bulk_append_message_us": _us(bulk),
            **reopen(big_file, run_dir / "b", args.reopens),
        }
        latency = await write_latency(run_dir, line)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "scenario": "session_persistence",
        **part_a,
        "reopen": part_b,
        "write_latency": latency,
        "env": env(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--reopens", type=int, default=5)
    emit(trio.run(main, parser.parse_args()))
