"""The floor of one LLM call's shape on this interpreter (no pi counterpart; no pitrio code).

The faux-alone row of ``compare_pi.py`` (scenario 1, ``--mode provider``) has a shape fixed
by the design: every streamed delta is one event object, and the consumer takes each event
with one ``async for`` step. Since 2026-11-23 the faux at unlimited speed has no task: the
consumer runs its answer itself, a run of up to 128 events at a time with a checkpoint before
each run but the first, and an answer of one run checkpoints before it: every call is one
scheduler pass at least (``inline``); before, the provider ran as a task in a nursery opened
per call (``task``, still the shape of every provider that waits on I/O). This script times
both with nothing else in them: the same two calls per prompt (7 events, then 207: an echo
tool call, then 200 text deltas, the 214 events per prompt of the benchmark), a minimal
single-consumer stream, and events that are either prebuilt (``prebuilt``: Trio and
``async for`` alone) or made per event as a slotted object with five fields (``built``: plus
the one object per delta). It prints microseconds per LLM call, the unit of the faux-alone
row: pitrio's figure there minus ``built`` is what pitrio itself spends.

    python bench/call_floor.py --prompts 4000
"""

from __future__ import annotations

import argparse
import collections
import time
from typing import Any

import trio
from trio.lowlevel import Abort, current_task, reschedule, wait_task_rescheduled

from _common import emit, env

CALL_EVENTS = (7, 207)
"""Events per call of one prompt of the faux-alone benchmark (214 per prompt)."""
CHECKPOINT_EVERY = 128
PASS = None
"""What a run generator yields, before the only run of a call, for a plain checkpoint."""


class _Delta:
    __slots__ = ("content_index", "delta", "extra", "partial", "type")


class _Stream:
    """One producer, one consumer, unbounded (the calls here are shorter than any buffer)."""

    __slots__ = ("_buffer", "_done", "_waiter")

    def __init__(self) -> None:
        self._buffer: collections.deque[Any] = collections.deque()
        self._waiter: trio.lowlevel.Task | None = None
        self._done = False

    def push(self, event: Any) -> None:
        self._buffer.append(event)
        self._wake()

    def end(self) -> None:
        self._done = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            reschedule(waiter)

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> Any:
        buffer = self._buffer
        if not buffer:
            if self._done:
                raise StopAsyncIteration
            self._waiter = current_task()
            await wait_task_rescheduled(lambda _: Abort.SUCCEEDED)
            if not buffer:
                raise StopAsyncIteration
        return buffer.popleft()


async def _produce_prebuilt(stream: _Stream, events: list[Any]) -> None:
    countdown = CHECKPOINT_EVERY
    for event in events:
        stream.push(event)
        countdown -= 1
        if countdown == 0:
            countdown = CHECKPOINT_EVERY
            await trio.lowlevel.checkpoint()
    stream.end()


async def _produce_built(stream: _Stream, events: list[Any]) -> None:
    # _produce_prebuilt's loop with the event made in it, written out rather than shared
    # through a callback: a call per event is part of what a floor must not contain.
    countdown = CHECKPOINT_EVERY
    for chunk in events:
        event = _Delta()
        event.type = "text_delta"
        event.content_index = 0
        event.delta = chunk
        event.partial = None
        event.extra = None
        stream.push(event)
        countdown -= 1
        if countdown == 0:
            countdown = CHECKPOINT_EVERY
            await trio.lowlevel.checkpoint()
    stream.end()


class _Runs:
    """The consumer runs the producer: a run of up to CHECKPOINT_EVERY events per step, with a
    checkpoint before each run but the first, and where the producer yields `PASS` (the
    inline faux's shape)."""

    __slots__ = ("_buffer", "_runs", "_started")

    def __init__(self, runs: Any) -> None:
        self._buffer: collections.deque[Any] = collections.deque()
        self._runs = runs
        self._started = False

    def __aiter__(self) -> _Runs:
        return self

    async def __anext__(self) -> Any:
        buffer = self._buffer
        while not buffer:
            if self._runs is None:
                raise StopAsyncIteration
            if self._started:
                await trio.lowlevel.checkpoint()
            self._started = True
            try:
                run = next(self._runs)
                if run is PASS:
                    await trio.lowlevel.checkpoint()
                    run = next(self._runs)
                buffer.extend(run)
            except StopIteration:
                self._runs = None
        return buffer.popleft()


def _runs_prebuilt(events: list[Any]) -> Any:
    if len(events) < CHECKPOINT_EVERY:
        yield PASS
    for start in range(0, len(events), CHECKPOINT_EVERY):
        yield events[start : start + CHECKPOINT_EVERY]


def _runs_built(events: list[Any]) -> Any:
    # _produce_built's loop, yielding runs instead of pushing (see there).
    if len(events) < CHECKPOINT_EVERY:
        yield PASS
    run: list[Any] = []
    add = run.append
    countdown = CHECKPOINT_EVERY
    for chunk in events:
        event = _Delta()
        event.type = "text_delta"
        event.content_index = 0
        event.delta = chunk
        event.partial = None
        event.extra = None
        add(event)
        countdown -= 1
        if countdown == 0:
            countdown = CHECKPOINT_EVERY
            yield run
            run = []
            add = run.append
    yield run


async def _inline_prompts(count: int, runs: Any) -> float:
    calls = [["abcd"] * n for n in CALL_EVENTS]
    taken = 0
    start = time.perf_counter()
    for _ in range(count):
        for events in calls:
            async for _event in _Runs(runs(events)):
                taken += 1
    elapsed = time.perf_counter() - start
    assert taken == count * sum(CALL_EVENTS)
    return elapsed * 1e6 / (count * len(CALL_EVENTS))


async def _prompts(count: int, produce: Any) -> float:
    calls = [["abcd"] * n for n in CALL_EVENTS]
    taken = 0
    start = time.perf_counter()
    for _ in range(count):
        for events in calls:
            async with trio.open_nursery() as nursery:
                stream = _Stream()
                nursery.start_soon(produce, stream, events)
                async for _event in stream:
                    taken += 1
    elapsed = time.perf_counter() - start
    assert taken == count * sum(CALL_EVENTS)
    return elapsed * 1e6 / (count * len(CALL_EVENTS))


async def main_async(args: argparse.Namespace) -> None:
    result: dict[str, Any] = {"scenario": "call_floor", "prompts": args.prompts, **env()}
    for name, runs in (("prebuilt", _runs_prebuilt), ("built", _runs_built)):
        await _inline_prompts(args.warmup, runs)
        result[f"{name}_us_per_call"] = round(await _inline_prompts(args.prompts, runs), 1)
    for name, produce in (("prebuilt", _produce_prebuilt), ("built", _produce_built)):
        await _prompts(args.warmup, produce)
        result[f"task_{name}_us_per_call"] = round(await _prompts(args.prompts, produce), 1)
    result["events_per_call"] = sum(CALL_EVENTS) / len(CALL_EVENTS)
    emit(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4000)
    parser.add_argument("--warmup", type=int, default=200)
    trio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
