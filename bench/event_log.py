"""Micro-benchmark of `pitrio.channels.EventLog.publish`, the per-token hot path of a session.

Publishes ``--events`` prebuilt ``message_update``-like events and reports events per second
for 0, 1 and 10 subscriptions, without encoding and with every reader taking ``item.wire``
(orjson, encoded once per event however many read it). Each subscription is read by its own
task the way a host batches a websocket write: one ``await receive()``, then
``receive_nowait()`` until the buffer is empty. The ``async_for`` figures read one item per
``async for`` step instead; every step is a Trio checkpoint, which then dominates. For scale,
the same runs on a plain `Broadcast` and with one sync callback. Prints one JSON object.

    python bench/event_log.py --events 200000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import orjson
import trio

from pitrio.channels import Broadcast, EventLog

from _common import emit, env


def make_events(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "abcd"}}
        for _ in range(n)
    ]


async def run_log(
    events: list[dict[str, Any]], subscriptions: int, encode: bool, batched: bool = True
) -> float:
    log: EventLog[dict[str, Any]] = EventLog(encode=orjson.dumps)
    total = 0

    async def reader(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal total
        async with log.open_subscription() as sub:
            task_status.started()
            if not batched:
                async for item in sub:
                    if encode:
                        total += len(item.wire)  # type: ignore[union-attr]
                return
            while True:
                try:
                    batch = [await sub.receive()]
                except trio.EndOfChannel:
                    return
                try:
                    while True:
                        batch.append(sub.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    pass
                if encode:
                    total += len(b"".join([item.wire for item in batch]))  # type: ignore[union-attr]

    async with trio.open_nursery() as nursery:
        for _ in range(subscriptions):
            await nursery.start(reader)
        publish = log.publish
        start = time.perf_counter()
        for event in events:
            await publish(event)
        log.close()
    elapsed = time.perf_counter() - start
    if encode and subscriptions:
        assert total == len(orjson.dumps(events[0])) * len(events) * subscriptions
    return len(events) / elapsed


async def run_callback(events: list[dict[str, Any]]) -> float:
    log: EventLog[dict[str, Any]] = EventLog()
    count = 0

    def callback(event: dict[str, Any]) -> None:
        nonlocal count
        count += 1

    log.subscribe(callback)
    publish = log.publish
    start = time.perf_counter()
    for event in events:
        await publish(event)
    return len(events) / (time.perf_counter() - start)


async def run_broadcast(events: list[dict[str, Any]], subscriptions: int) -> float:
    broadcast: Broadcast[dict[str, Any]] = Broadcast()

    async def reader(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with broadcast.open_subscription() as sub:
            task_status.started()
            while True:
                try:
                    await sub.receive()
                except trio.EndOfChannel:
                    return
                try:
                    while True:
                        sub.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    pass

    async with trio.open_nursery() as nursery:
        for _ in range(subscriptions):
            await nursery.start(reader)
        publish = broadcast.publish
        start = time.perf_counter()
        for event in events:
            await publish(event)
        broadcast.close()
    return len(events) / (time.perf_counter() - start)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    events = make_events(args.events)
    result: dict[str, Any] = {"scenario": "event_log", "events": args.events, **env()}
    for encode in (False, True):
        suffix = "encoded" if encode else "plain"
        for n in (0, 1, 10):
            if n == 0 and encode:
                continue  # nobody reads: nothing is encoded
            best = max([await run_log(events, n, encode) for _ in range(args.repeat)])
            result[f"log_{n}_subscriptions_{suffix}_events_per_s"] = round(best)
    for n in (1, 10):
        best = max([await run_log(events, n, False, False) for _ in range(args.repeat)])
        result[f"log_{n}_subscriptions_async_for_events_per_s"] = round(best)
    result["log_1_sync_callback_events_per_s"] = round(
        max([await run_callback(events) for _ in range(args.repeat)])
    )
    for n in (0, 1, 10):
        best = max([await run_broadcast(events, n) for _ in range(args.repeat)])
        result[f"broadcast_{n}_subscriptions_events_per_s"] = round(best)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts")
    emit(trio.run(main, parser.parse_args()))
