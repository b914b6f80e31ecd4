"""One pacing clock per Trio run: paced streams wait on a shared heap, not a timer each.

A paced faux stream waits ``n / tokens_per_second`` seconds before every chunk. With
``trio.sleep`` each of those waits is a cancel scope with a deadline whose expiry raises and
catches a ``Cancelled``; with thousands of paced sessions that machinery was most of the run
loop. Here a waiting stream pushes ``(due, seq, waiter)`` onto one heap and parks
(``wait_task_rescheduled``); whoever is earliest wakes everybody that is due with a plain
``reschedule``. One Trio deadline per *tick* then serves every stream whose chunk is due by
that tick, and under load (many streams per tick) the per-chunk cost is a heap push, a park
and a reschedule.

Structured concurrency: there is no timer task, so the clock needs no nursery and outlives
nothing. The timing is done by the waiting tasks themselves: the *leader* is one of the
parked waiters (the one holding the earliest entry when leadership was handed over); it sleeps
in a cancel scope whose deadline is the heap's earliest due, releases the due waiters when it
expires, and once its own entry is due it hands leadership to the earliest remaining waiter
(rescheduling it with :data:`_LEAD`) before returning. A waiter that arrives with an earlier
due moves the leader's deadline forward. A cancelled follower marks its entry dead (the heap
skips it); a cancelled leader hands over in a ``finally`` without a checkpoint. So every
moment some live waiter is sleeping on the earliest due, and a stream's wait never outlives
the stream's own task.

The clock is per Trio run (a :class:`trio.lowlevel.RunVar`), so each ``trio.run`` (and each
test's ``MockClock``) has its own; the autojump clock sees the leader's deadline as the next
event and jumps to it.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Final

import outcome
import trio

_LEAD: Final = "lead"
"""The value a parked waiter is rescheduled with when it becomes the leader."""


class _Waiter:
    """One parked wait: its due time and task (``None`` once cancelled or released)."""

    __slots__ = ("due", "task")

    def __init__(self, due: float, task: trio.lowlevel.Task) -> None:
        self.due = due
        self.task: trio.lowlevel.Task | None = task

    def abort(self, _: object) -> trio.lowlevel.Abort:
        # A method, not a closure per wait: every object a wait allocates lives as long as the
        # wait (a pacing interval), long enough for the cyclic GC to walk and promote it.
        self.task = None  # the heap drops it when it reaches the top
        return trio.lowlevel.Abort.SUCCEEDED


class PacingClock:
    """The shared wake-up heap of one Trio run; use :func:`pacing_clock` to get it.

    Resource handling: the clock owns no task; each :meth:`wait_until` runs in the caller's
    task and leaves nothing behind when it returns or is cancelled.
    """

    __slots__ = ("_heap", "_leader", "_scope", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Waiter]] = []
        self._seq = itertools.count()
        self._leader: trio.lowlevel.Task | None = None
        self._scope: trio.CancelScope | None = None

    def waiting(self) -> int:
        """How many waits are parked (dead entries not yet popped included)."""
        return len(self._heap)

    async def wait(self, delay: float) -> None:
        """Wait ``delay`` seconds from now (as ``trio.sleep``, but through the shared heap)."""
        await self.wait_until(trio.current_time() + delay)

    async def wait_until(self, due: float) -> None:
        """Return once the Trio clock reaches ``due`` (a checkpoint, cancellable)."""
        task = trio.lowlevel.current_task()
        waiter = _Waiter(due, task)
        heapq.heappush(self._heap, (due, next(self._seq), waiter))
        if self._leader is None:
            self._leader = task
            await self._lead(waiter)
            return
        scope = self._scope
        if scope is not None and due < scope.deadline:
            scope.deadline = due

        if await trio.lowlevel.wait_task_rescheduled(waiter.abort) == _LEAD:
            await self._lead(waiter)

    async def _lead(self, me: _Waiter) -> None:
        # Sleep until the earliest due, release what is due, until our own entry was released.
        heap = self._heap
        try:
            while me.task is not None:
                with trio.CancelScope(deadline=heap[0][0]) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
                self._release(trio.current_time(), me)
        finally:
            self._scope = None
            me.task = None
            self._leader = None
            self._promote()

    def _release(self, now: float, me: _Waiter) -> None:
        heap = self._heap
        reschedule = trio.lowlevel.reschedule
        while heap and heap[0][0] <= now:
            waiter = heapq.heappop(heap)[2]
            task = waiter.task
            if task is None:
                continue
            waiter.task = None
            if waiter is not me:
                reschedule(task, outcome.Value(None))

    def _promote(self) -> None:
        # Hand leadership to the earliest live waiter (it stays in the heap, parked until now).
        heap = self._heap
        while heap:
            waiter = heap[0][2]
            if waiter.task is None:
                heapq.heappop(heap)
                continue
            self._leader = waiter.task
            trio.lowlevel.reschedule(waiter.task, outcome.Value(_LEAD))
            return


_CLOCK: Final = trio.lowlevel.RunVar[PacingClock]("pitrio_pacing_clock")


def pacing_clock() -> PacingClock:
    """Return the current Trio run's pacing clock (created on first use)."""
    try:
        return _CLOCK.get()
    except LookupError:
        clock = PacingClock()
        _CLOCK.set(clock)
        return clock
