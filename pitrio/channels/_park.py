"""`Park`: ``wait_task_rescheduled`` for a waiter that parks again and again, with nothing
allocated per wait.

``await trio.lowlevel.wait_task_rescheduled(abort)`` allocates a coroutine, a generator, the
run loop's park message (with its ``__dict__``) and usually an abort closure, and all of them
live as long as the wait. A stream consumer that parks once per token of a paced session keeps
them alive for the pacing interval, long enough for the cyclic garbage collector to walk them
through its generations: with thousands of paced sessions that was a good part of the
collector's work. A `Park` is made once per waiter with its abort callback; awaiting it
yields the same message to the run loop every time and takes the outcome back in `send`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final, cast

import outcome
import trio

PARK_MESSAGE: Any
"""The message ``wait_task_rescheduled`` yields to the run loop (the same since trio 0.x),
``None`` if a trio moved it: then a reusable waiter takes the public path (`Park`, and the
pacing clock's ``Pacer``)."""
_SCHEDULE: Any  # the message of a schedule point (cancel_shielded_checkpoint), or None
try:
    from trio._core._traps import CancelShieldedCheckpoint as _SCHEDULE
    from trio._core._traps import WaitTaskRescheduled as PARK_MESSAGE
except ImportError:  # pragma: no cover - a trio that moved them: the public path
    PARK_MESSAGE = _SCHEDULE = None


_VALUE: Final = outcome.Value
WOKEN: Final = outcome.Value(None)
"""The outcome `wake` reschedules with: shared, so never unwrapped (whoever takes it back
compares it by identity, as `Park.send` does)."""


def wake(task: trio.lowlevel.Task) -> None:
    """Reschedule ``task``, parked on a `Park`, so that its ``await`` returns None, without the
    outcome object ``trio.lowlevel.reschedule`` would allocate per wake-up."""
    trio.lowlevel.reschedule(task, WOKEN)


class _Ready:
    """An awaitable that completes at once, without a checkpoint."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, Any, None]:
        return
        yield


READY: Final = _Ready()
"""What a ``wait_*`` method returns when there is nothing to wait for (it returns None)."""


class _HandDriven:
    """The end of the generator protocol for an awaitable that is its own iterator (`Park`,
    `checkpoint`'s): nothing to throw into, nothing to close (a generator would be an object
    per wait)."""

    __slots__ = ()

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        raise val if val is not None else typ

    def close(self) -> None:
        pass


class Park(_HandDriven):
    """A reusable ``wait_task_rescheduled(abort)``: ``await park`` returns the value the task
    is rescheduled with (or raises its error), exactly as ``wait_task_rescheduled`` does.

    One task awaits it at a time; the same rules as ``wait_task_rescheduled`` apply
    (``trio.lowlevel.reschedule`` exactly once per wait, or ``abort`` returning SUCCEEDED).
    """

    __slots__ = ("_abort", "_message")

    def __init__(self, abort: Callable[[Any], trio.lowlevel.Abort]) -> None:
        self._abort = abort
        self._message: Any = PARK_MESSAGE(abort) if PARK_MESSAGE else None

    def __await__(self) -> Generator[Any, Any, Any]:
        if self._message is None:  # pragma: no cover - see the import above
            # __await__ hands on the coroutine's own iterator: the caller's await drives it.
            return trio.lowlevel.wait_task_rescheduled(self._abort).__await__()  # noqa: ASYNC105
        return cast("Generator[Any, Any, Any]", self)

    # The rest of the generator protocol, by hand (a generator would be an object per wait).

    def __next__(self) -> Any:
        return self._message  # the run loop records the abort callback and parks the task

    def send(self, value: Any) -> Any:
        if value is WOKEN:
            raise StopIteration
        try:
            result = value.unwrap()  # the outcome the task was rescheduled with
        finally:
            # An error's traceback holds this frame: without the del, frame -> outcome ->
            # exception -> traceback -> frame is a cycle (every cancelled wait one more
            # tangle of frames for the cyclic collector).
            del value
        raise StopIteration(result)


class Waiters:
    """Tasks parked until their owner wakes them all: the first on a `Park` made by the first
    wait (nothing allocated per wait), any others at the same time in a list with a closure
    each (rare). A base class, not a member, so an owner carries no extra object: a `Mailbox`
    consumer and the waiters of a `Reply` or `Latch` use it.
    """

    __slots__ = ("_waiter", "_waiter_park", "_waiters")

    def __init__(self) -> None:
        self._waiter: trio.lowlevel.Task | None = None
        self._waiter_park: Park | None = None
        self._waiters: list[trio.lowlevel.Task] | None = None

    def _wait_parked(self) -> Awaitable[None]:
        """Park the calling task until `_wake_waiters`; await the result at once."""
        if self._waiter is None:
            self._waiter = trio.lowlevel.current_task()
            park = self._waiter_park
            if park is None:
                park = self._waiter_park = Park(self._abort_waiter)
            return park
        return self._wait_in_list()

    def _has_waiters(self) -> bool:
        return self._waiter is not None or bool(self._waiters)

    def _abort_waiter(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        self._waiter = None  # still parked: a woken task is never aborted
        return trio.lowlevel.Abort.SUCCEEDED

    async def _wait_in_list(self) -> None:
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = []
        task = trio.lowlevel.current_task()
        waiters.append(task)

        def abort_fn(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            waiters.remove(task)  # still listed: a woken task is never aborted
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort_fn)

    def _wake_waiters(self) -> None:
        """Reschedule every parked task."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            wake(waiter)
        waiters, self._waiters = self._waiters, None
        for task in waiters or ():
            trio.lowlevel.reschedule(task)


def _abort_at_once(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.SUCCEEDED


class _Checkpoint(_HandDriven):
    """``trio.lowlevel.checkpoint()`` as one shared, stateless awaitable (see `checkpoint`)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, Any, None]:
        if _SCHEDULE is None:  # pragma: no cover - see the import above
            return trio.lowlevel.checkpoint().__await__()  # noqa: ASYNC105
        return cast("Generator[Any, Any, None]", self)

    def __next__(self) -> Any:
        return _SCHEDULE  # the schedule point: the run loop reschedules the task at once

    def send(self, value: Any) -> Any:
        if value is None:  # driven by send(None) rather than next(): the first step
            return _SCHEDULE
        if type(value) is not _VALUE:
            value.unwrap()  # the error a cancel point resumes the task with: raised here
        # The cancel point, as trio's checkpoint() makes it after its schedule point: if the
        # task is cancelled (or, the main task, interrupted), park it with an abort that
        # succeeds, and the run loop delivers the cancellation (or KeyboardInterrupt) at once.
        task = trio.lowlevel.current_task()
        task._cancel_points += 1
        if task._cancel_status.effectively_cancelled or (
            task._runner.ki_pending and task is task._runner.main_task
        ):
            return _CANCEL_POINT
        raise StopIteration


class _SchedulePoint(_Checkpoint):
    """``trio.lowlevel.cancel_shielded_checkpoint()`` as one shared awaitable."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, Any, None]:
        if _SCHEDULE is None:  # pragma: no cover - see the import above
            return trio.lowlevel.cancel_shielded_checkpoint().__await__()  # noqa: ASYNC105
        return cast("Generator[Any, Any, None]", self)

    def send(self, value: Any) -> Any:
        if value is None:
            return _SCHEDULE
        raise StopIteration  # a schedule point is resumed with Value(None), never an error


_CANCEL_POINT: Final[Any] = PARK_MESSAGE(_abort_at_once) if PARK_MESSAGE else None
_CHECKPOINT: Final = _Checkpoint()
_SCHEDULE_POINT: Final = _SchedulePoint()


def checkpoint() -> Awaitable[None]:
    """``await checkpoint()`` is ``await trio.lowlevel.checkpoint()`` (a schedule point, then
    a cancel point), with nothing allocated by the await: trio's makes two coroutines and a
    generator, which live while the task waits in the run queue. With thousands of sessions
    stepping in the same scheduler batch, a long batch holds thousands of them, and those a
    collection finds alive are promoted towards the cyclic collector's oldest generation."""
    return _CHECKPOINT


def schedule_point() -> Awaitable[None]:
    """``await schedule_point()`` is ``await trio.lowlevel.cancel_shielded_checkpoint()``:
    the task lets the others run and comes back, even if it is cancelled."""
    return _SCHEDULE_POINT
