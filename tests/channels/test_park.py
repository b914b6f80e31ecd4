"""Park: a reusable wait_task_rescheduled that returns what the task is woken with, and aborts."""

from __future__ import annotations

import outcome
import pytest
import trio
import trio.testing
from parking import parked_on

from pitrio.channels._park import Park, checkpoint, schedule_point, wake


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


class _Steps(trio.abc.Instrument):
    """What one task is suspended on each time the run loop is about to resume it."""

    def __init__(self) -> None:
        self.task: trio.lowlevel.Task | None = None
        self.awaited: list[object] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.awaited.append(parked_on(task))


async def test_checkpoint_is_a_schedule_point_and_a_cancel_point_with_one_shared_wait() -> None:
    """`checkpoint()` lets the other tasks run, raises Cancelled in a cancelled scope, and a
    task waiting on it is suspended on the same object every time (trio's own allocates
    coroutines per call, alive while the task waits in the run queue)."""
    order: list[str] = []

    async def other() -> None:
        order.append("other")

    steps = _Steps()
    trio.lowlevel.add_instrument(steps)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            steps.task = trio.lowlevel.current_task()
            with trio.testing.assert_checkpoints():
                await checkpoint()
            await checkpoint()  # the batch after the first: other has run by now
            order.append("me")
            await checkpoint()
            steps.task = None
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert order == ["other", "me"]
    assert len(steps.awaited) == 3
    assert steps.awaited[0] is steps.awaited[1] is steps.awaited[2] is checkpoint()
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await checkpoint()
        await checkpoint()  # raises again: the scope is still cancelled
        order.append("not reached")  # pragma: no cover
    assert scope.cancelled_caught
    assert order == ["other", "me"]


async def test_schedule_point_lets_others_run_and_ignores_cancellation() -> None:
    order: list[str] = []

    async def other() -> None:
        order.append("other")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        with trio.CancelScope() as scope:
            scope.cancel()
            await schedule_point()
            await schedule_point()  # the batch after the first: other has run by now
            order.append("me")
    assert order == ["other", "me"]
    assert not scope.cancelled_caught


async def test_checkpoint_delivers_a_pending_keyboard_interrupt_in_the_main_task() -> None:
    """As trio's checkpoint does: the main task, with a KeyboardInterrupt pending, raises it."""

    async def main() -> None:
        trio.lowlevel.current_task()._runner.ki_pending = True
        await checkpoint()

    with pytest.raises(KeyboardInterrupt):
        await trio.to_thread.run_sync(trio.run, main)
