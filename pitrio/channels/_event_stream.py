"""A bounded, Trio-native port of pi-ai's ``EventStream<T, R>``.

pi (``packages/ai/src/utils/event-stream.ts``) queues events in an unbounded array; here the
queue is bounded, so a producer that outruns its consumer is paused instead of growing memory
without limit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Final, Generic, Self, TypeAlias, TypeVar

import attrs
import outcome
import trio

from ._exceptions import StreamEndedWithoutResult
from ._park import READY, Park, checkpoint, schedule_point, wake
from ._reply import Latch

T = TypeVar("T")
R = TypeVar("R")

NOT_TAKEN: Final[Any] = object()
"""What a consumer's inline handler (see `EventStream.wait_readable`) returns for an event it
leaves to the consumer's task: the event is then buffered and the consumer woken."""

FEED_STOPPED: Final[Any] = object()
"""What `EventStream.offer_or_stop` returns to stop a feed: the consumer takes over (an
event is buffered for it, or it has a delivery to finish or an error to raise)."""

CHECKPOINT: Final[Any] = object()
"""What a source (`EventStream.feed_from`) yields to have the consumer pass through the
scheduler before it goes on (a cancellation point too)."""

EventSource: TypeAlias = Generator["list[T] | Awaitable[Any]", Any, None]
"""A producer that runs in the consumer's task (see `EventStream.feed_from`): each step yields
the next *run* of events as a list, `CHECKPOINT`, or an awaitable the consumer awaits for it
and sends the result back in (a callback that may be async)."""

EVENT_STREAM_BUFFER: Final = 64
"""Default number of events an `EventStream` holds before ``push`` blocks.

One network read from a provider often carries dozens of SSE events; 64 lets the parser push a
whole read without a task switch per event, yet a consumer that stops reading pauses the HTTP
read loop after a few kilobytes of small event objects instead of letting memory grow.
"""


@attrs.frozen
class EventStreamStatistics:
    """A snapshot of an `EventStream`, returned by `EventStream.statistics`."""

    buffered: int
    """Events pushed but not yet received."""
    max_buffer: int
    """The buffer size the stream was created with."""
    done: bool
    """True once the completion event was pushed or ``end()`` was called."""
    consumer_closed: bool
    """True once the consumer called ``aclose()``; pushes are no-ops from then on."""
    producers_waiting: int
    """Tasks blocked in ``push`` because the buffer is full."""


class EventStream(trio.abc.AsyncResource, Generic[T, R]):
    """Carry events from a producer to one consumer and remember the final result.

    The producer calls `push` for every event; the consumer iterates with ``async for``.
    Iteration ends once the *completion event* (the first event for which ``is_complete``
    returns true) has been delivered, or once the producer calls `end` and the buffered events
    have drained. `result` returns ``extract_result(completion_event)`` or the value given to
    `end`. This is pi's contract, with a bounded buffer added.

    Only one consumer is supported: several tasks iterating at once would each receive a
    share of the events, not a copy (use `Broadcast` for fan-out).

    Resource handling:
        The producer owns the send side and closes it with `end`, which is synchronous so it
        can sit in a ``finally`` without a checkpoint. Pushing the completion event closes the
        send side as well. The consumer owns the receive side and may close it early with
        `aclose` (or ``async with stream:``); from then on `push` and `push_nowait` return
        at once without buffering anything, so a producer never hangs on a consumer that
        left, and a completion event pushed afterwards still records the result.

    Buffering:
        At most ``max_buffer`` events wait between producer and consumer (default
        `EVENT_STREAM_BUFFER`). When the buffer is full, `push` waits (backpressure reaches
        the producer) and `push_nowait` raises `trio.WouldBlock`. ``max_buffer=0`` makes
        every push a rendezvous with the consumer.

    A producer that never waits for anything but its consumer (it computes its events) may
    instead be a *source* the consumer runs itself (`feed_from`): no task, no hand-over, and
    the consumer yields to the scheduler between two of its runs.

    Cancellation:
        A cancelled `push` did not enqueue its event, except for the completion event: the
        result is recorded the moment it is pushed (as in pi), so if that push is cancelled
        while waiting for room, `result` still returns it and iteration ends without
        delivering the completion event. A cancelled consumer or `result` waiter leaves no
        state behind.

    Args:
        is_complete: Return true for the event that completes the stream (pi:
            ``event.type === "done" || event.type === "error"``). Called once per push.
        extract_result: Map the completion event to the stream's result. Called once.
        max_buffer: How many events may wait for the consumer; must be ``>= 0``.
    """

    __slots__ = (
        "_buffer",
        "_consumer_closed",
        "_done",
        "_extract_result",
        "_feed_inline",
        "_feed_rest",
        "_feeding",
        "_finished",
        "_has_result",
        "_inline",
        "_inline_abort",
        "_is_complete",
        "_max_buffer",
        "_park",
        "_pulled",
        "_pulling",
        "_receiver",
        "_result",
        "_send_closed",
        "_source",
        "_source_started",
        "_waiting",
        "_writers",
    )

    def __init__(
        self,
        is_complete: Callable[[T], bool],
        extract_result: Callable[[T], R],
        *,
        max_buffer: int = EVENT_STREAM_BUFFER,
    ) -> None:
        if max_buffer < 0:
            raise ValueError(f"max_buffer must be >= 0, not {max_buffer!r}")
        self._is_complete = is_complete
        self._extract_result = extract_result
        self._max_buffer = max_buffer
        # One producer, one consumer: a deque, the parked consumer's task and a lot for
        # producers waiting for room cost a fraction of a memory channel's send and receive
        # (no Value objects, no OrderedDict of waiting receivers), and this is per token.
        self._buffer: deque[T] = deque()
        self._receiver: trio.lowlevel.Task | None = None
        # What the parked consumer asked to have done with an offered event in place of a
        # wake-up (see wait_readable); meaningful only while _receiver is set.
        self._inline: Callable[[T], Any] | None = None
        # While the handler runs: None; True once a cancellation of the parked consumer came
        # in meanwhile (the abort is refused, and the consumer woken when the handler is done).
        # False otherwise.
        self._inline_abort: bool | None = False
        # The consumer's park, made at its first wait: a wait allocates nothing (a paced
        # stream's consumer parks once per token). It refers back to the stream, a cycle that
        # aclose breaks.
        self._park: Park | None = None
        # Made by the first producer that has to wait for room (most streams never do: two
        # objects fewer per LLM call for the cyclic collector to walk).
        self._writers: trio.lowlevel.ParkingLot | None = None
        # How many producers are parked in _writers: an int's truth where the lot's own is a
        # Python ``__bool__`` call, and the consumer asks once per event it takes.
        self._waiting = 0
        # _send_closed: nothing more will be buffered (completion buffered or end() called).
        self._send_closed = False
        self._consumer_closed = False
        # _done: no further events are accepted (completion pushed or end() called).
        self._done = False
        self._has_result = False
        self._result: R | None = None
        # Set together with _done; result() waits on it. Made by the first result() that has
        # to wait (a consumer that iterates to the end finds the stream done).
        self._finished: Latch | None = None
        # A producer run in the consumer's task instead of a task of its own (feed_from).
        self._source: EventSource[T] | None = None
        self._source_started = False
        self._pulling = False  # a task runs the source
        self._pulled: Latch | None = None  # made by a task that found it so, to wait on
        # While the task running the source awaits what it yielded (a paced feed), with
        # no consumer parked: what offer_or_stop hands each event to (the consumer's inline
        # handler, if the puller is the consumer) and what the consumer must do once the
        # feed stopped (a delivery to finish, an error to raise).
        self._feeding = False
        self._feed_inline: Callable[[T], Any] | None = None
        self._feed_rest: Any = None

    @property
    def max_buffer(self) -> int:
        """How many events may wait for the consumer (the size the stream was made with)."""
        return self._max_buffer

    # -- producer side -------------------------------------------------------------------------

    async def push(self, event: T) -> None:
        """Send one event to the consumer, waiting while the buffer is full.

        Ignored (after a checkpoint) once the stream is done; a no-op once the consumer
        closed. If ``event`` is the completion event, the result is recorded immediately and
        the send side closes after the event is buffered, so iteration ends after it.

        Args:
            event: The event to deliver.
        """
        if self._done:
            await checkpoint()
            return
        if not self._is_complete(event):
            await self._put(event)
            return
        self._record(self._extract_result(event))
        try:
            await self._put(event)
        finally:
            self._close_send()

    async def _put(self, event: T) -> None:
        # Buffer when there is room (or the consumer waits: a rendezvous), else wait for room.
        # Dropped when the consumer closed or end() ran, before or while waiting.
        await trio.lowlevel.checkpoint_if_cancelled()
        parked = False
        buf = self._buffer
        while not (self._consumer_closed or self._send_closed):
            if len(buf) < self._max_buffer or self._receiver is not None:
                self._deliver(event)
                break
            parked = True
            writers = self._writers
            if writers is None:
                writers = self._writers = trio.lowlevel.ParkingLot()
            self._waiting += 1
            try:
                await writers.park()  # the consumer counted us out when it unparked us
            except BaseException:
                self._waiting -= 1  # cancelled while parked: the lot let go of us
                raise
        if not parked:
            await schedule_point()

    def _deliver(self, event: T) -> None:
        self._buffer.append(event)
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            wake(receiver)

    def push_nowait(self, event: T) -> None:
        """Send one event without waiting.

        Same rules as `push`, except that a full buffer raises instead of waiting; the event,
        even a completion event, is then not accepted at all and may be pushed again.

        Args:
            event: The event to deliver.

        Raises:
            trio.WouldBlock: The buffer is full.
        """
        if self._done:
            return
        complete = self._is_complete(event)
        if not self._consumer_closed:
            if len(self._buffer) >= self._max_buffer and self._receiver is None:
                raise trio.WouldBlock
            self._deliver(event)
        if complete:
            self._record(self._extract_result(event))
            self._close_send()

    def offer(self, event: T) -> bool:
        """Buffer an event that does not complete the stream; False if there is no room.

        The producer's per-token path: `push_nowait` without the completion check (a delta
        never completes a stream) and without an exception for a full buffer (then ``await
        push(event)``). An event offered after the stream ended, or with the consumer gone,
        is dropped and counts as taken (True), as `push_nowait` does.
        """
        if self._done or self._consumer_closed:
            return True
        buf = self._buffer
        receiver = self._receiver
        if receiver is not None:
            inline = self._inline
            if inline is not None:
                # The consumer is parked with nothing buffered and handles this event here,
                # in the producer's task: no task switch. It stays parked unless the handler
                # hands back an awaitable to finish in the consumer's own task (or raised).
                # A subscriber reached from the handler may cancel the consumer (abort the
                # run): the abort is refused until the handler is done (see _abort_receive),
                # so the consumer is woken once, here, and meets its cancellation at its next
                # checkpoint, after finishing what the handler handed it.
                self._inline_abort = None
                try:
                    rest = inline(event)
                except Exception as exc:
                    self._inline_abort = False
                    self._receiver = None
                    trio.lowlevel.reschedule(receiver, outcome.Error(exc))
                    return True
                aborted = self._inline_abort
                self._inline_abort = False
                if rest is None:
                    if aborted:
                        self._receiver = None
                        wake(receiver)
                    return True
                if rest is not NOT_TAKEN:
                    self._receiver = None
                    trio.lowlevel.reschedule(receiver, outcome.Value(rest))
                    return True
            self._receiver = None
            buf.append(event)
            wake(receiver)
            return True
        if len(buf) >= self._max_buffer:
            return False
        buf.append(event)
        return True

    def offer_or_stop(self, event: T) -> Any:
        """`offer` for a delivery made while a source's awaitable runs (a paced feed of
        `feed_from`, whose chunks are delivered by another task or by the timer the consumer
        itself waits on): None when ``event`` was taken and the feed may go on, else
        `FEED_STOPPED` (the awaitable should return it: the consumer then takes over), or
        ``event`` itself when there is no room for it (push it, or yield it as a run).

        While the consumer is the one awaiting the feed, its inline handler (the one given to
        `wait_readable`) handles each event here, as `offer` does for a parked consumer; an
        event it leaves (`NOT_TAKEN`) is buffered, an awaitable it returns is what the
        consumer's wait returns, and an exception it raises is raised by that wait: each
        stops the feed. Without a handler, each event is buffered and stops the feed.
        """
        if self._done or self._consumer_closed:
            return None
        if self._receiver is not None or not self._feeding:
            return None if self.offer(event) else event
        buf = self._buffer
        inline = self._feed_inline
        if inline is not None and not buf:
            try:
                rest = inline(event)
            except Exception as exc:
                self._feed_rest = outcome.Error(exc)
                return FEED_STOPPED
            if rest is None:
                return None
            if rest is not NOT_TAKEN:
                self._feed_rest = outcome.Value(rest)
                return FEED_STOPPED
        buf.append(event)
        return FEED_STOPPED

    def offer_many(self, events: Sequence[T]) -> int:
        """`offer` a run of events that do not complete the stream, in order, in one call:
        returns how many were taken, a prefix of ``events``; the rest found no room and must
        be pushed (``await push``) in order before anything else.

        For a producer that builds several events between two checkpoints (the faux streams
        up to ``yield_every`` deltas so). Nobody can tell it from one `offer` per event: no
        other task runs in between, an inline handler sees each event in turn, and once it
        wakes the consumer (an awaitable, an exception, a cancellation) the rest is buffered.
        """
        n = len(events)
        if self._done or self._consumer_closed:
            return n
        i = 0
        receiver = self._receiver
        inline = self._inline
        if receiver is not None and inline is not None:
            self._inline_abort = None  # see offer: no other task runs until we reset it
            rest: Any = None
            try:
                for event in events:
                    i += 1
                    rest = inline(event)
                    if rest is not None or self._inline_abort:
                        break
            except Exception as exc:
                self._inline_abort = False
                self._receiver = None
                trio.lowlevel.reschedule(receiver, outcome.Error(exc))
            else:
                aborted = self._inline_abort
                self._inline_abort = False
                if rest is None:
                    if not aborted:
                        return i  # all handled: the consumer stays parked
                    self._receiver = None
                    wake(receiver)
                elif rest is NOT_TAKEN:
                    i -= 1  # buffered below, and the consumer woken
                else:
                    self._receiver = None
                    trio.lowlevel.reschedule(receiver, outcome.Value(rest))
            if self._done or self._consumer_closed:  # a handler may have closed it
                return n
        buf = self._buffer
        receiver = self._receiver
        if receiver is not None and i < n:  # parked on an empty buffer: takes one regardless
            self._receiver = None
            buf.append(events[i])
            i += 1
            wake(receiver)
        room = self._max_buffer - len(buf)
        if room > 0 and i < n:
            if i == 0 and room >= n:
                buf.extend(events)
                return n
            part = events[i : i + room]
            buf.extend(part)
            i += len(part)
        return i

    def feed_from(self, source: EventSource[T]) -> None:
        """Make ``source`` the stream's producer, run by the consumer in its own task.

        For a producer that waits on nothing but its consumer (the faux provider at unlimited
        speed computes its events): a task of its own would cost a spawn and a hand-over per
        stream, here most of the work for a short answer. Whenever the consumer finds the
        buffer empty (``anext``, `wait_readable`, `result`), it runs ``source`` to its next
        yield and buffers the run of events yielded, yielding to the scheduler first unless
        ``source`` has not started yet (its first step may take what it answers and yield
        `CHECKPOINT`, as a provider task's first step would reach its first checkpoint): the
        source decides how often the consumer checkpoints by the length of its runs, and the
        buffer holds at most one run (the source keeps its runs within the stream's
        ``max_buffer``, its block boundary and completion events aside). An awaitable
        yielded instead of a run is awaited in the consumer's task and its value sent back
        into ``source``; `CHECKPOINT` only makes the consumer yield to the scheduler. One
        task runs ``source`` at a time: another that needs it meanwhile waits for that run.

        The stream ends with the run holding its completion event (``source`` is then
        closed), or when ``source`` returns (`_source_ended`) or raises (`_source_failed`).
        `close` closes ``source``.
        """
        self._source = source

    async def _pull(self, inline: Callable[[T], Any] | None = None) -> Any:
        """Run the source to its next run of events and buffer them, in the consumer's task
        (or a `result` waiter's: whoever comes while another task runs it waits for that).

        ``inline`` is the consumer's handler (`wait_readable`): it handles what is offered
        while a source's awaitable runs (`offer_or_stop`). Returns what the handler left the
        consumer to await, else None."""
        if self._pulling:  # another task runs the source (it may be awaiting for it)
            others = self._pulled
            if others is None:
                others = self._pulled = Latch()
            await others.wait()
            return None
        self._pulling = True
        source = self._source
        assert source is not None
        try:
            if self._source_started:
                await checkpoint()
                if self._source is not source:  # closed, or ended (an abort), meanwhile
                    return
            self._source_started = True
            run = source.send(None)
            while not isinstance(run, list):
                if run is CHECKPOINT:
                    await checkpoint()
                    value = None
                else:
                    self._feeding = True
                    self._feed_inline = inline
                    try:
                        value = await self._await_for_source(run)
                    finally:
                        self._feeding = False
                        self._feed_inline = None
                if self._source is not source:  # closed, or ended (an abort), meanwhile
                    return self._take_feed_rest()
                run = source.send(value)
        except StopIteration:
            self._source = None
            self._source_ended()
            return None
        except Exception as exc:
            self._source = None
            self._source_failed(exc)
            return None
        finally:
            self._pulling = False
            others = self._pulled
            if others is not None:
                self._pulled = None
                others.set()
        if run:
            self._buffer.extend(run)
            last = run[-1]
            if self._is_complete(last):
                self._source = None
                source.close()
                self._record(self._extract_result(last))
                self._close_send()
        if self._feed_rest is None:
            return None
        return self._take_feed_rest()

    def _take_feed_rest(self) -> Any:
        """What the consumer's handler left it when it stopped a feed: the awaitable to
        finish (returned), its error (raised), or None."""
        rest = self._feed_rest
        if rest is None:
            return None
        self._feed_rest = None
        return rest.unwrap()

    async def _await_for_source(self, awaitable: Awaitable[Any]) -> Any:
        """Await what the source is waiting for, in the consumer's task."""
        return await awaitable

    def _source_ended(self) -> None:
        """The source returned without a completion event: the stream ends without a result."""
        self.end()

    def _source_failed(self, exc: Exception) -> None:
        """The source raised ``exc``: the stream ends, and the consumer's wait raises it."""
        self.end()
        raise exc

    def _end_with(self, event: T) -> None:
        """Buffer the completion ``event`` whatever the room (a source's last word), unless the
        stream is done; the consumer's side may be closed (the result is recorded anyway)."""
        if self._done:
            return
        if not self._consumer_closed:
            self._buffer.append(event)
        self._record(self._extract_result(event))
        self._close_send()

    def end(self, result: R | None = None) -> None:
        """Finish the stream; the consumer's iteration ends once the buffer drains.

        Synchronous and idempotent, so it is safe in a ``finally`` block. A producer blocked
        in `push` at this moment returns without delivering its event.

        Args:
            result: The stream's result, if no completion event supplied one yet. ``None``
                means "no result": `result` then raises `StreamEndedWithoutResult` unless a
                completion event was pushed before.
        """
        if result is not None and not self._has_result:
            self._record(result)
        else:
            self._mark_done()
        self._close_send()

    def _record(self, result: R) -> None:
        self._result = result
        self._has_result = True
        self._mark_done()

    def _mark_done(self) -> None:
        self._done = True
        if self._finished is not None:  # made only by a result() that had to wait
            self._finished.set()

    def _close_send(self) -> None:
        self._send_closed = True
        if self._waiting:
            self._unpark_all()
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            wake(receiver)

    # -- consumer side -------------------------------------------------------------------------

    async def result(self) -> R:
        """Wait until the stream is done and return its result.

        Returns as soon as the completion event is pushed or `end` is called; it does not wait
        for the consumer to read the buffered events. Any number of tasks may wait.

        Returns:
            ``extract_result(completion_event)``, or the value passed to `end`.

        Raises:
            StreamEndedWithoutResult: `end` was called without a result and no completion
                event was pushed.
        """
        # A source runs for whoever waits, a buffer's worth ahead of the consumer at most.
        while self._source is not None and len(self._buffer) < self._max_buffer:
            await self._pull()
        if self._done:
            await checkpoint()
        else:
            finished = self._finished
            if finished is None:
                finished = self._finished = Latch()
            await finished.wait()
        if not self._has_result:
            raise StreamEndedWithoutResult
        return self._result  # type: ignore[return-value]  # _has_result: this is an R

    def receive_nowait(self) -> T:
        """Take the oldest buffered event without waiting (no checkpoint).

        A consumer that handles events in a loop takes every buffered one this way and only
        parks (``await anext(stream)``) when it runs dry, so a burst costs no task switch per
        event.

        Raises:
            trio.WouldBlock: Nothing is buffered and the stream is not finished.
            trio.EndOfChannel: The stream is finished and every event was taken.
            trio.ClosedResourceError: The consumer closed the stream.
        """
        buf = self._buffer
        if buf:
            event = buf.popleft()
            if self._waiting:
                self._unpark_one()
            return event
        if self._consumer_closed:
            raise trio.ClosedResourceError("the event stream's consumer side was closed")
        if self._send_closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    def receive_all_nowait(self) -> Sequence[T]:
        """Take every buffered event at once, oldest first, without waiting (no checkpoint).

        The batch form of `receive_nowait` for a consumer that handles bursts: an empty list
        means nothing is buffered; ``await anext(stream)`` then parks until the next event, or
        ends the iteration once the stream is finished. The empty answer is one shared empty
        tuple: a paced consumer parks right after asking, and a fresh list per ask would live
        across every wait (long enough for the cyclic collector to promote it).

        Raises:
            trio.ClosedResourceError: The consumer closed the stream.
        """
        buf = self._buffer
        if not buf:
            if self._consumer_closed:
                raise trio.ClosedResourceError("the event stream's consumer side was closed")
            return ()
        events = list(buf)
        buf.clear()
        if self._waiting:
            self._unpark_all()
        return events

    @property
    def exhausted(self) -> bool:
        """True once the stream is finished and every event was taken."""
        return self._send_closed and not self._buffer

    def wait_readable(self, inline: Callable[[T], Any] | None = None) -> Awaitable[Any]:
        """Return an awaitable that completes once an event is buffered or the stream is
        finished (at once if it already is); no coroutine is made when it has to wait.

        The waiting form of `receive_all_nowait` for a consumer whose every wait would
        otherwise be an ``anext`` coroutine (a paced stream's consumer waits once per token):
        ``if not batch: if stream.exhausted: ...; await stream.wait_readable()``. A
        cancellation point while it waits, like ``anext``.

        ``inline``, if given, handles events `offer`-ed while the consumer waits, in the
        producer's task, without waking the consumer (a token then costs no task switch). It
        must not block and is called only while nothing is buffered, so events keep their
        order. It returns None when it handled the event (the consumer stays parked),
        `NOT_TAKEN` to have it buffered as usual (the consumer wakes), or an awaitable the
        consumer must finish first: the wait then returns it. An exception it raises is
        raised by the wait, in the consumer's task. The awaitable returns None otherwise.
        """
        if self._buffer or self._send_closed or self._consumer_closed:
            return READY
        if self._source is not None:
            return self._pull(inline)
        if self._waiting:
            self._unpark_one()  # max_buffer=0: the waiting producer hands over to us
        self._inline = inline
        self._receiver = trio.lowlevel.current_task()
        park = self._park
        if park is None:
            park = self._park = Park(self._abort_receive)
        return park

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        # Hot path: take a buffered event without a scheduler round trip (a checkpoint costs
        # ~20x the take). The consumer still yields whenever the buffer runs dry, so it never
        # runs more than one buffer's worth of events without a checkpoint.
        buf = self._buffer
        while not buf:
            if self._consumer_closed:
                raise trio.ClosedResourceError("the event stream's consumer side was closed")
            if self._send_closed:
                raise StopAsyncIteration
            await self.wait_readable()  # parks: the buffer is empty and the stream open
        # A closed consumer side has nothing buffered (close() empties the buffer and later
        # pushes are dropped), so a buffered event needs no closed check here.
        event = buf.popleft()
        if self._waiting:
            self._unpark_one()
        return event

    async def aclose(self) -> None:
        """Stop consuming: drop buffered events and turn later pushes into no-ops.

        Idempotent, and closes even when cancelled. Iterating after ``aclose`` raises
        `trio.ClosedResourceError`. `result` is unaffected.
        """
        self.close()
        await checkpoint()

    def close(self) -> None:
        """`aclose` without its checkpoint: for a consumer's ``finally`` block, where a
        checkpoint would need a shielded cancel scope around it."""
        self._consumer_closed = True
        self._buffer.clear()
        self._park = None
        self._inline = None
        source = self._source
        if source is not None:
            self._source = None
            source.close()
        if self._waiting:
            self._unpark_all()

    def _unpark_one(self) -> None:
        if self._writers is not None:
            self._waiting -= len(self._writers.unpark())

    def _unpark_all(self) -> None:
        if self._writers is not None:
            self._waiting -= len(self._writers.unpark_all())

    def _abort_receive(self, _: object) -> trio.lowlevel.Abort:
        if self._inline_abort is not False:  # the inline handler runs: offer wakes us after
            self._inline_abort = True
            return trio.lowlevel.Abort.FAILED
        self._receiver = None
        return trio.lowlevel.Abort.SUCCEEDED

    def statistics(self) -> EventStreamStatistics:
        """Return a snapshot of the buffer and the stream's state."""
        return EventStreamStatistics(
            buffered=len(self._buffer),
            max_buffer=self._max_buffer,
            done=self._done,
            consumer_closed=self._consumer_closed,
            producers_waiting=self._waiting,
        )
