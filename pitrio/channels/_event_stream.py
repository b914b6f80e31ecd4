"""A bounded, Trio-native port of pi-ai's ``EventStream<T, R>``.

pi (``packages/ai/src/utils/event-stream.ts``) queues events in an unbounded array; here the
events go through a bounded Trio memory channel, so a producer that outruns its consumer is
paused instead of growing memory without limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Generic, Self, TypeVar

import attrs
import trio

from ._exceptions import StreamEndedWithoutResult

T = TypeVar("T")
R = TypeVar("R")

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

    The producer calls `push` for every event; the consumer iterates with ``async for`` (or
    `receive` and `receive_all_nowait`). Iteration ends once the *completion event* (the first
    event for which ``is_complete`` returns true) has been delivered, or once the producer
    calls `end` and the buffered events have drained. `result` returns
    ``extract_result(completion_event)`` or the value given to `end`. This is pi's contract,
    with a bounded buffer added; the events travel through a `trio.open_memory_channel`.

    Only one consumer is supported: several tasks iterating at once would each receive a
    share of the events, not a copy (use `Broadcast` for fan-out). Producer and consumer are
    separate tasks (or one task doing both in turn): nothing of the consumer's ever runs in
    the producer's task.

    Resource handling:
        The producer owns the send side and closes it with `end`, which is synchronous so it
        can sit in a ``finally`` without a checkpoint. Pushing the completion event closes the
        send side as well. The consumer owns the receive side and may close it early with
        `aclose` (or ``async with stream:``); from then on `push` and `push_nowait` return
        without buffering anything, so a producer never hangs on a consumer that left, and a
        completion event pushed afterwards still records the result.

    Buffering:
        At most ``max_buffer`` events wait between producer and consumer (default
        `EVENT_STREAM_BUFFER`). When the buffer is full, `push` waits (backpressure reaches
        the producer) and `push_nowait` raises `trio.WouldBlock`. ``max_buffer=0`` makes
        every push a rendezvous with the consumer.

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
        "_consumer_closed",
        "_done",
        "_extract_result",
        "_finished",
        "_has_result",
        "_is_complete",
        "_max_buffer",
        "_receive",
        "_result",
        "_send",
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
        self._send, self._receive = trio.open_memory_channel[T](max_buffer)
        self._consumer_closed = False
        # _done: no further events are accepted (completion pushed or end() called).
        self._done = False
        self._has_result = False
        self._result: R | None = None
        # Set together with _done; made by the first result() that has to wait.
        self._finished: trio.Event | None = None

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
            await trio.lowlevel.checkpoint()
            return
        if not self._is_complete(event):
            await self._put(event)
            return
        self._record(self._extract_result(event))
        try:
            await self._put(event)
        finally:
            self._send.close()

    async def _put(self, event: T) -> None:
        # Dropped when the consumer closed (Broken) or end() ran (Closed), before or while
        # waiting for room.
        try:  # noqa: SIM105 (as in push_nowait)
            await self._send.send(event)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

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
        # The consumer left (Broken): dropped, and a completion event still records its result.
        # (A try statement, not contextlib.suppress: no context-manager object per event.)
        try:  # noqa: SIM105
            self._send.send_nowait(event)
        except trio.BrokenResourceError:
            pass
        if self._is_complete(event):
            self._record(self._extract_result(event))
            self._send.close()

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
        self._send.close()

    def _record(self, result: R) -> None:
        self._result = result
        self._has_result = True
        self._mark_done()

    def _mark_done(self) -> None:
        self._done = True
        if self._finished is not None:  # made only by a result() that had to wait
            self._finished.set()

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
        if self._done:
            await trio.lowlevel.checkpoint()
        else:
            finished = self._finished
            if finished is None:
                finished = self._finished = trio.Event()
            await finished.wait()
        if not self._has_result:
            raise StreamEndedWithoutResult
        return self._result  # type: ignore[return-value]  # _has_result: this is an R

    async def receive(self) -> T:
        """Wait for the next event and return it.

        Raises:
            trio.EndOfChannel: The stream is finished and every event was taken.
            trio.ClosedResourceError: The consumer closed the stream.
        """
        return await self._receive.receive()

    def receive_nowait(self) -> T:
        """Take the oldest buffered event without waiting (no checkpoint).

        Raises:
            trio.WouldBlock: Nothing is buffered and the stream is not finished.
            trio.EndOfChannel: The stream is finished and every event was taken.
            trio.ClosedResourceError: The consumer closed the stream.
        """
        return self._receive.receive_nowait()

    def receive_all_nowait(self) -> list[T]:
        """Take every buffered event at once, oldest first, without waiting (no checkpoint).

        The batch form of `receive_nowait` for a consumer that handles bursts: an empty list
        means nothing is buffered (or the stream is finished); `receive` then waits for the
        next event, or raises `trio.EndOfChannel` once the stream is finished.

        Raises:
            trio.ClosedResourceError: The consumer closed the stream.
        """
        events: list[T] = []
        take = self._receive.receive_nowait
        try:
            while True:
                events.append(take())
        except (trio.WouldBlock, trio.EndOfChannel):
            return events

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        # A buffered event is taken without a scheduler round trip (a checkpoint costs many
        # times the take); the consumer still waits, a checkpoint, whenever the buffer runs
        # dry, so it never runs more than a buffer's worth of events without one.
        receive = self._receive
        try:
            return receive.receive_nowait()
        except trio.WouldBlock:
            pass
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        try:
            return await receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Stop consuming: drop buffered events and turn later pushes into no-ops.

        Idempotent, and closes even when cancelled. Iterating after ``aclose`` raises
        `trio.ClosedResourceError`. `result` is unaffected.
        """
        self.close()
        await trio.lowlevel.checkpoint()

    def close(self) -> None:
        """`aclose` without its checkpoint: for a consumer's ``finally`` block, where a
        checkpoint would need a shielded cancel scope around it."""
        self._consumer_closed = True
        self._receive.close()

    def statistics(self) -> EventStreamStatistics:
        """Return a snapshot of the buffer and the stream's state."""
        stats = self._send.statistics()
        return EventStreamStatistics(
            buffered=stats.current_buffer_used,
            max_buffer=self._max_buffer,
            done=self._done,
            consumer_closed=self._consumer_closed,
            producers_waiting=stats.tasks_waiting_send,
        )
