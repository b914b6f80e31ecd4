"""Waits that an actor repeats (a Mailbox consumer, a Reply's sender) park on an object made once,
not on a coroutine chain made per wait: with thousands of sessions whatever a parked task keeps
alive is promoted by CPython's cyclic collector. These tests pin the reuse and the behaviour
around it (several waiters, cancellation, close)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from pitrio.channels import Mailbox


def parked_on(task: trio.lowlevel.Task) -> Any:
    """The innermost object a parked task's coroutine chain is awaiting."""
    awaited: Any = task.coro
    while True:
        inner = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
        if inner is None:
            return awaited
        awaited = inner


async def test_a_mailbox_consumer_parks_on_the_same_object_every_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The one consumer of a Mailbox waits on one reused park, wait after wait."""
    box: Mailbox[int] = Mailbox()
    got: list[int] = []
    consumer: list[trio.lowlevel.Task] = []

    async def consume() -> None:
        consumer.append(trio.lowlevel.current_task())
        while True:
            await box.wait_nonempty()
            got.extend(box.drain())

    leaves = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        for item in range(3):
            await trio.sleep(1)
            leaves.append(parked_on(consumer[0]))
            box.put_nowait(item)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert got == [0, 1, 2]
    assert leaves[0] is leaves[1] is leaves[2]
    assert not hasattr(leaves[0], "cr_frame")  # not a coroutine made for the wait


async def test_several_mailbox_waiters_all_wake_and_cancel_cleanly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Three tasks waiting at once all wake on one put; a cancelled one leaves the others."""
    box: Mailbox[str] = Mailbox()
    woke: list[int] = []

    async def wait(n: int) -> None:
        await box.wait_nonempty()
        woke.append(n)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, 0)
        nursery.start_soon(wait, 1)
        nursery.start_soon(wait, 2)
        await trio.sleep(1)
        cancelled = trio.CancelScope()

        async def wait_cancelled() -> None:
            with cancelled:
                await box.wait_nonempty()
            woke.append(-1)

        nursery.start_soon(wait_cancelled)
        await trio.sleep(1)
        cancelled.cancel()
        await trio.sleep(1)
        assert woke == [-1]
        box.put_nowait("x")
    assert sorted(woke) == [-1, 0, 1, 2]


@pytest.mark.parametrize("first_cancelled", [True, False])
async def test_the_reused_park_serves_the_next_waiter_after_a_cancel_or_close(
    autojump_clock: trio.testing.MockClock, first_cancelled: bool
) -> None:
    """After the consumer's wait is cancelled another task can wait and be woken; a close
    ends a waiting consumer with EndOfChannel."""
    box: Mailbox[str] = Mailbox()
    if first_cancelled:
        with trio.move_on_after(1):
            await box.wait_nonempty()
    async with trio.open_nursery() as nursery:

        async def put_later() -> None:
            await trio.sleep(1)
            box.put_nowait("a")

        nursery.start_soon(put_later)
        await box.wait_nonempty()
    assert box.drain() == ["a"]
    async with trio.open_nursery() as nursery:

        async def close_later() -> None:
            await trio.sleep(1)
            box.close()

        nursery.start_soon(close_later)
        with pytest.raises(trio.EndOfChannel):
            await box.wait_nonempty()
