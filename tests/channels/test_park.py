"""Park: a reusable wait_task_rescheduled that returns what the task is woken with, and aborts."""

from __future__ import annotations

import outcome
import pytest
import trio
import trio.testing

from pitrio.channels._park import Park, wake


async def test_a_park_returns_each_value_it_is_rescheduled_with_and_raises_errors() -> None:
    """One Park awaited again and again returns each wake-up's value, or raises its error."""
    parked: list[trio.lowlevel.Task] = []
    got: list[object] = []

    def abort(_: object) -> trio.lowlevel.Abort:
        return trio.lowlevel.Abort.FAILED

    park = Park(abort)

    async def waiter() -> None:
        for _ in range(3):
            parked.append(trio.lowlevel.current_task())
            got.append(await park)
        parked.append(trio.lowlevel.current_task())
        with pytest.raises(KeyError):
            await park

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        for value in ("a", None, 3):
            await trio.testing.wait_all_tasks_blocked()
            trio.lowlevel.reschedule(parked.pop(), outcome.Value(value))
        await trio.testing.wait_all_tasks_blocked()
        trio.lowlevel.reschedule(parked.pop(), outcome.Error(KeyError("x")))
    assert got == ["a", None, 3]


async def test_a_cancelled_park_calls_its_abort_and_can_be_awaited_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling the waiting task calls abort (SUCCEEDED raises Cancelled); the same Park then
    parks the task again."""
    aborted: list[trio.lowlevel.Task] = []
    current: list[trio.lowlevel.Task] = []

    def abort(_: object) -> trio.lowlevel.Abort:
        aborted.append(current[0])
        return trio.lowlevel.Abort.SUCCEEDED

    park = Park(abort)
    current.append(trio.lowlevel.current_task())
    with trio.move_on_after(1) as scope:
        await park
    assert scope.cancelled_caught
    assert aborted == current
    with trio.move_on_after(1) as again:
        await park
    assert again.cancelled_caught
    assert len(aborted) == 2


async def test_wake_returns_none_again_and_again() -> None:
    """wake() reschedules with one shared outcome; every await of the Park returns None."""
    parked: list[trio.lowlevel.Task] = []
    got: list[object] = []
    park = Park(lambda _: trio.lowlevel.Abort.FAILED)

    async def waiter() -> None:
        for _ in range(3):
            parked.append(trio.lowlevel.current_task())
            got.append(await park)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        for _ in range(3):
            await trio.testing.wait_all_tasks_blocked()
            wake(parked.pop())
    assert got == [None, None, None]
