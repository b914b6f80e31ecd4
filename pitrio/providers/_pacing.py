"""One pacing clock per Trio run: paced streams wait on a shared heap, not a timer each.

A paced faux stream waits ``n / tokens_per_second`` seconds before every chunk. With
``trio.sleep`` each of those waits is a cancel scope with a deadline whose expiry raises and
catches a ``Cancelled``; with thousands of paced sessions that machinery was most of the run
loop. Here a waiting stream pushes ``[due, seq, pacer]`` onto one heap and parks; whoever is
earliest wakes everybody that is due with a plain ``reschedule``. One Trio deadline per *tick*
then serves every stream whose chunk is due by that tick, and under load (many streams per
tick) the per-chunk cost is a heap push, a park and a reschedule.

Nothing per wait outlives the wait's start: a stream takes one :class:`Pacer` (its heap entry,
its abort callback and its park message made once) and awaits the pacer itself, which parks
the task with no coroutine, closure or message allocated per chunk. Every object alive across
a wait (20 ms at 50 tokens/s) is walked and promoted by the cyclic garbage collector; with
thousands of paced sessions the eight objects a ``wait_task_rescheduled`` wait kept alive per
chunk were a good part of the collector's work.

Structured concurrency: there is no timer task, so the clock needs no nursery and outlives
nothing. The timing is done by the waiting tasks themselves: the *leader* is one of the
parked waiters (the one holding the earliest entry when leadership was handed over); it sleeps
in a cancel scope whose deadline is the heap's earliest due, releases the due waiters when it
expires, and once its own entry is due it hands leadership to the earliest remaining waiter
(rescheduling it with the lead signal) before returning. A waiter that arrives with an earlier
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
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Final, TypeVar, cast

import outcome
import trio

from pitrio.channels._park import PARK_MESSAGE, READY, WOKEN, wake

_LEAD: Final = outcome.Value("lead")
"""What a parked waiter is rescheduled with when it becomes the leader."""

RELEASE_DELIVERIES: Final = 64
"""Feed deliveries the time keeper makes per pass before it lets the other tasks run (the
rest of what is due follows on its next pass, a scheduler round later). A delivery runs the
whole per-token path of the consumer (its agent's reducer and subscribers), so with thousands
of paced streams falling due together an unbounded pass would hold the event loop for as long
as all of them take."""

C = TypeVar("C")


def _no_delay(_: object) -> float:
    return 0.0


def _no_delivery(_: object) -> object:
    return None


_Entry = list[Any]
"""A heap entry ``[due, seq, pacer]``; ``pacer`` is None once released or cancelled (dead).
A list compares like a tuple, and its pacer slot can be cleared in place; ``seq`` is unique,
so the comparison never reaches the pacer."""


class Pacer:
    """One stream's waits on the clock: ``await pacer.until(due)``; one task, one wait at a time.

    The pacer is its own awaitable: awaiting it yields the run loop's park message directly
    and takes the outcome back in :meth:`send`, so a follower's wait allocates nothing. A
    waiter told to lead runs :meth:`PacingClock._lead` as a sub-coroutine (rare: once per
    hand-over).
    """

    __slots__ = (
        "__weakref__",
        "_chunks",
        "_clock",
        "_delay",
        "_deliver",
        "_delivering",
        "_entry",
        "_message",
        "_outcome",
        "_position",
        "_sub",
        "_task",
    )

    def __init__(self, clock: PacingClock) -> None:
        self._clock = clock
        self._task: trio.lowlevel.Task | None = None
        self._entry: _Entry = [0.0, 0, None]
        self._sub: Coroutine[Any, Any, Any] | None = None
        # A feed (see `feed`): the chunks, the next one's index, and the two callbacks.
        self._chunks: Sequence[Any] | None = None
        self._position = 0
        self._delay: Callable[[Any], float] = _no_delay
        self._deliver: Callable[[Any], Any] = _no_delivery
        self._outcome: Any = WOKEN  # how the feed's last release ended (the leader's answer)
        # While the clock runs one of this feed's deliveries: False; then the cancellation
        # that came meanwhile (its raise_cancel), refused and delivered once it is done.
        self._delivering: Any = None
        # The park message's abort reaches the pacer through a weak reference: a strong one
        # would be a cycle, and the pacer (with the stream's task, its nursery and scopes
        # until the task is gone) would wait for a full collection instead of dying with the
        # block.
        self._message: Any = PARK_MESSAGE(_AbortRef(self)) if PARK_MESSAGE is not None else None

    def until(self, due: float) -> Awaitable[None]:
        """Return an awaitable that returns once the Trio clock reaches ``due``.

        Await it at once, from the task that called this (a checkpoint, cancellable).
        """
        self._chunks = None
        return self._arm(due)

    def feed(
        self,
        chunks: Sequence[C],
        delay: Callable[[C], float],
        deliver: Callable[[C], object],
    ) -> Awaitable[Any]:
        """Hand ``chunks`` to ``deliver`` one at a time, each ``delay(chunk)`` seconds after
        the one before (the first: after now); the awaitable returns once all were delivered.

        The per-token path of a paced stream without a task switch per token: the chunks are
        delivered by whichever waiter holds the clock when they fall due, so the feeding task
        sleeps through the whole block and the clock's one wake-up per tick serves every
        stream. ``deliver`` must not block and should not raise (it runs in another stream's
        task; an exception is handed back to this awaitable). It returns None once the chunk
        is delivered, or something else to stop the feed: the awaitable then returns that
        (say, an event the consumer had no room for, to push with backpressure) and a later
        ``await pacer.feed_on()`` continues with the next chunk, its delay counted from then.

        Await it at once, from the task that called this (a checkpoint, cancellable; a
        cancelled feed delivers nothing more). A cancellation that arrives while one of its
        deliveries runs (the delivery cancelled the feeding task: a subscriber aborting its
        run) is held until that delivery is done: the feed then raises it, or, if the
        delivery stopped the feed, returns the stop value first (the task meets the
        cancellation at its next checkpoint).
        """
        self._chunks = chunks
        self._position = 0
        self._delay = delay
        self._deliver = deliver
        if not chunks:
            return READY
        return self.feed_on()

    def feed_on(self) -> Awaitable[Any]:
        """Continue the feed from its next chunk (after it returned a stopped delivery)."""
        chunks = self._chunks
        assert chunks is not None, "feed_on() without a feed"
        position = self._position
        if position >= len(chunks):
            return READY
        return self._arm(trio.current_time() + self._delay(chunks[position]))

    def _arm(self, due: float) -> Awaitable[Any]:
        clock = self._clock
        task = self._task = trio.lowlevel.current_task()
        entry = self._entry
        entry[0] = due
        entry[1] = next(clock._seq)
        entry[2] = self
        heapq.heappush(clock._heap, entry)
        if clock._leader is None:
            clock._leader = task
            return clock._lead(self)
        scope = clock._scope
        if scope is not None and due < scope.deadline:
            scope.deadline = due
        if self._message is None:  # pragma: no cover - see the import above
            return self._park_public()
        return self

    async def _park_public(self) -> Any:  # pragma: no cover - see the import above
        value = await trio.lowlevel.wait_task_rescheduled(self._abort)
        if value is _LEAD.value:
            return await self._clock._lead(self)
        return value

    def _abort(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        if self._delivering is not None:
            # One of this feed's deliveries runs (it cancelled its own consumer, say): the
            # clock finishes it, then wakes the task with the cancellation (or with what the
            # delivery stopped the feed with, for the consumer to take over first).
            self._delivering = raise_cancel
            return trio.lowlevel.Abort.FAILED
        # Cancelled while parked as a follower: the entry stays in the heap, dead; the next
        # wait takes a fresh one (a live entry's due must never change inside the heap).
        self._entry[2] = None
        self._entry = [0.0, 0, None]
        return trio.lowlevel.Abort.SUCCEEDED

    # The awaitable protocol, by hand (a generator would be an object per wait).

    def __await__(self) -> Generator[Any, Any, None]:
        return cast("Generator[Any, Any, None]", self)

    def __next__(self) -> Any:
        return self._message  # park: the run loop records _abort and waits for reschedule

    def send(self, value: Any) -> Any:
        sub = self._sub
        if sub is not None:
            try:
                return sub.send(value)
            except BaseException:
                self._sub = None
                raise
        if value is WOKEN:
            self._task = None
            raise StopIteration
        if value is _LEAD:
            self._sub = self._clock._lead(self)
            return self.send(None)
        # Error(Cancelled) after _abort (or another outcome): raise it or return its value.
        self._task = None
        raise StopIteration(value.unwrap())

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        sub = self._sub
        if sub is not None:
            try:
                return sub.throw(val if val is not None else typ)
            except BaseException:
                self._sub = None
                raise
        raise val if val is not None else typ

    def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            sub.close()


class _AbortRef:
    """A pacer's abort callback that does not keep the pacer alive."""

    __slots__ = ("_pacer",)

    def __init__(self, pacer: Pacer) -> None:
        self._pacer = weakref.ref(pacer)

    def __call__(self, raise_cancel: object) -> trio.lowlevel.Abort:
        pacer = self._pacer()
        assert pacer is not None  # a parked pacer is referenced by its waiting coroutine
        return pacer._abort(raise_cancel)


class PacingClock:
    """The shared wake-up heap of one Trio run; use :func:`pacing_clock` to get it.

    Resource handling: the clock owns no task; each wait runs in the caller's task and leaves
    nothing behind when it returns or is cancelled.
    """

    __slots__ = ("_heap", "_leader", "_scope", "_seq")

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._leader: trio.lowlevel.Task | None = None
        self._scope: trio.CancelScope | None = None

    def waiting(self) -> int:
        """How many waits are parked (dead entries not yet popped included)."""
        return len(self._heap)

    def pacer(self) -> Pacer:
        """A pacer for one stream's successive waits (see :class:`Pacer`)."""
        return Pacer(self)

    async def wait(self, delay: float) -> None:
        """Wait ``delay`` seconds from now (as ``trio.sleep``, but through the shared heap)."""
        await Pacer(self).until(trio.current_time() + delay)

    async def wait_until(self, due: float) -> None:
        """Return once the Trio clock reaches ``due`` (a checkpoint, cancellable)."""
        await Pacer(self).until(due)

    async def _lead(self, me: Pacer) -> Any:
        # Sleep until the earliest due, release what is due, until our own entry was released;
        # return what our own wait ended with (a feed's stopped delivery, or None).
        heap = self._heap
        entry = me._entry
        try:
            while entry[2] is not None:
                with trio.CancelScope(deadline=heap[0][0]) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
                self._release(trio.current_time(), me)
        finally:
            self._scope = None
            if entry[2] is not None:  # cancelled: the entry stays in the heap, dead
                entry[2] = None
                me._entry = [0.0, 0, None]
            me._task = None
            self._leader = None
            self._promote()
        result, me._outcome = me._outcome, WOKEN
        return None if result is WOKEN else result.unwrap()  # WOKEN is shared: never unwrapped

    def _release(self, now: float, me: Pacer) -> None:
        heap = self._heap
        reschedule = trio.lowlevel.reschedule
        heappop = heapq.heappop
        heappush = heapq.heappush
        seq = self._seq
        budget = RELEASE_DELIVERIES
        while heap and heap[0][0] <= now:
            entry = heappop(heap)
            pacer = entry[2]
            if pacer is None:
                continue
            chunks = pacer._chunks
            if chunks is not None:
                # A feed: deliver its due chunk here; it sleeps on while chunks remain.
                if not budget:  # the rest on the next pass, after other tasks had a turn
                    heappush(heap, entry)
                    return
                budget -= 1
                position = pacer._position
                pacer._delivering = False
                stopped = None
                try:
                    stopped = pacer._deliver(chunks[position])
                    position += 1
                    pacer._position = position
                    if stopped is None and position < len(chunks) and pacer._delivering is False:
                        pacer._delivering = None
                        entry[0] = now + pacer._delay(chunks[position])
                        entry[1] = next(seq)
                        heappush(heap, entry)
                        continue
                except Exception as exc:  # handed to the feed's own task, not raised here
                    pacer._position = len(chunks)
                    result: Any = outcome.Error(exc)
                else:
                    result = WOKEN if stopped is None else outcome.Value(stopped)
                raise_cancel, pacer._delivering = pacer._delivering, None
                if raise_cancel is not None and raise_cancel is not False and stopped is None:
                    # The delivery cancelled the feed's own task (a subscriber aborting its
                    # run on this token; its abort was refused meanwhile): the feed raises
                    # the cancellation now, unless it stopped for its consumer to take over
                    # first (which then meets the cancellation at its next checkpoint).
                    result = outcome.capture(raise_cancel)
                entry[2] = None
                if pacer is me:
                    me._outcome = result
                else:
                    reschedule(pacer._task, result)
                continue
            entry[2] = None
            if pacer is not me:
                wake(pacer._task)

    def _promote(self) -> None:
        # Hand leadership to the earliest live waiter (it stays in the heap, parked until now).
        heap = self._heap
        while heap:
            pacer = heap[0][2]
            if pacer is None:
                heapq.heappop(heap)
                continue
            self._leader = pacer._task
            trio.lowlevel.reschedule(pacer._task, _LEAD)
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
