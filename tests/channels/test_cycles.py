"""A finished wait leaves no reference cycle: a one-shot flag that was waited on, a mailbox
that was closed and a cancelled wait are freed by reference counting, not kept (with all
they reach: a run's controller and transcript) until the cyclic collector runs."""

from __future__ import annotations

import types

import outcome
import pytest
import trio
import trio.testing
from garbage import cyclic_garbage, pitrio_objects

from pitrio.channels import Latch, Mailbox, Reply


async def _wait_then_set(kind: str) -> None:
    flag: Latch | Reply[int] = Latch() if kind == "latch" else Reply()

    async def waiter() -> None:
        await flag.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()  # the waiter parked on the flag's park
        if isinstance(flag, Latch):
            flag.set()
        else:
            flag.set(7)


@pytest.mark.parametrize("kind", ["latch", "reply"])
async def test_a_flag_set_after_a_wait_is_freed_without_the_collector(kind: str) -> None:
    with cyclic_garbage() as garbage:
        await _wait_then_set(kind)
    assert pitrio_objects(garbage) == []


async def _wait_cancel_then_close() -> None:
    box = Mailbox[int](max_size=4)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(box.wait_nonempty)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()  # the waiting consumer is cancelled
    box.close()


async def test_a_cancelled_wait_and_a_closed_mailbox_leave_no_cycle() -> None:
    """A cancelled wait leaves nothing of its cancellation (the Cancelled, its traceback)
    tangled in a cycle, and a closed mailbox is freed by reference counting."""
    with cyclic_garbage() as garbage:
        await _wait_cancel_then_close()
    assert pitrio_objects(garbage) == []
    tangled = [
        o
        for o in garbage
        if isinstance(o, trio.Cancelled | outcome.Error | types.TracebackType)
        or (isinstance(o, types.FrameType) and "/pitrio/channels/" in o.f_code.co_filename)
    ]
    assert tangled == []
