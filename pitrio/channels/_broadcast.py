"""Ordered fan-out of events to callbacks and bounded subscriptions.

This is the substrate of pi's ``Agent.subscribe`` / ``emit`` (listeners awaited one after the
other, in subscription order) with one addition: subscribers that would rather iterate than be
called back get a bounded `Subscription` and choose what happens when they fall behind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager
from typing import Any, Final, Generic, Literal, Protocol, TypeAlias, TypeVar, cast, get_args

import attrs
import structlog
import trio

from ._exceptions import SubscriberOverflow

log = structlog.get_logger(__name__)

T = TypeVar("T")

SlowSubscriberPolicy: TypeAlias = Literal["block", "drop_oldest", "drop_newest", "error"]
"""What `Broadcast.publish` does when a subscription's buffer is full.

- ``"block"``: wait until the subscriber reads (backpressure reaches the producer). Lossless.
- ``"drop_oldest"``: discard the oldest buffered event to make room. Lossy; the subscriber
  always holds the newest events.
- ``"drop_newest"``: discard the event being published. Lossy; the subscriber keeps the oldest.
- ``"error"``: cut the subscriber off; its next read raises `SubscriberOverflow`.
"""

_POLICIES: Final = frozenset(get_args(SlowSubscriberPolicy))

SUBSCRIPTION_BUFFER: Final = 64
"""Default number of events a `Subscription` buffers before its policy applies.

Large enough to absorb one burst of agent events (a tool result arriving with its
``message_start``/``message_end`` and a run of text deltas) without waking the producer for each
event, small enough that a stalled reader holds only a few kilobytes and, under the default
``"block"`` policy, slows the agent within one burst rather than minutes later.
"""


_FINISHED: Final = cast(Generator[Any, None, None], iter(()))
"""An exhausted iterator: awaiting an awaitable whose ``__await__`` returns it finishes at
once with ``None`` (no checkpoint). One shared object: an exhausted iterator keeps no state,
and a generator made per await would be an allocation and a frame per event."""


class _Delivered:
    """The awaitable `Broadcast.publish` returns when it delivered everything itself."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return _FINISHED


DELIVERED: Final = _Delivered()
"""What `Broadcast.publish` returns when the event reached every subscriber during the call:
awaiting it is a no-op, and a caller on a hot path may test ``is DELIVERED`` and skip the await."""

# Subscription states. A subscription is delivered to only while _OPEN.
_OPEN: Final = 0  # receiving events
_ENDED: Final = 1  # Broadcast.close(): drain the buffer, then EndOfChannel
_BROKEN: Final = 2  # policy "error" overflowed: SubscriberOverflow
_CLOSED: Final = 3  # the subscriber closed it: ClosedResourceError


@attrs.frozen
class SubscriptionStatistics:
    """A snapshot of one `Subscription`, returned by `Subscription.statistics`."""

    buffered: int
    """Events published to this subscription and not yet received."""
    peak_buffered: int
    """The largest ``buffered`` has been."""
    dropped: int
    """Events this subscriber lost to its policy (always 0 under ``"block"``)."""
    max_buffer: int
    """The buffer size the subscription was opened with."""
    policy: SlowSubscriberPolicy
    """The slow-subscriber policy the subscription was opened with."""


@attrs.frozen
class BroadcastStatistics:
    """A snapshot of a `Broadcast`, returned by `Broadcast.statistics`."""

    callbacks: int
    """Callback subscribers currently registered with `Broadcast.subscribe`."""
    subscriptions: int
    """Open subscriptions from `Broadcast.open_subscription`."""
    closed: bool
    """True once `Broadcast.close` was called."""


class _Owner(Protocol):
    """What a callback entry needs of the bus it is registered with (Broadcast, EventLog)."""

    def _remove(self, entry: Any) -> None: ...


class _Callback(Generic[T]):
    """A registered callback; `unsubscribe` takes it out of its owner's subscribers."""

    __slots__ = ("active", "callback", "owner")

    def __init__(self, owner: _Owner, callback: Callable[[T], Awaitable[None] | None]):
        self.owner = owner
        self.callback = callback
        self.active = True

    def unsubscribe(self) -> None:
        if self.active:
            self.active = False
            self.owner._remove(self)


class Subscription(trio.abc.ReceiveChannel[T]):
    """A bounded receive channel fed by a `Broadcast`; create with `Broadcast.open_subscription`.

    Iterate with ``async for`` or call `receive`. Iteration ends (`trio.EndOfChannel` from
    `receive`) once the broadcast is closed and the buffered events are read.

    Only one task should read from a subscription: events are handed out, not copied.

    Resource handling:
        The ``async with`` of `Broadcast.open_subscription` owns the subscription and closes
        it on exit; `close`/`aclose` close it early. Closing unsubscribes, discards buffered
        events and wakes a publisher blocked on this subscription; reading afterwards raises
        `trio.ClosedResourceError`.

    Buffering and error handling:
        At most ``max_buffer`` events are buffered; when full, the ``policy`` applies (see
        `SlowSubscriberPolicy`). Under ``"error"`` the subscription is removed from the
        broadcast at the overflow, its buffered events are discarded, and every later read
        raises `SubscriberOverflow` (a `trio.BrokenResourceError`).
    """

    __slots__ = (
        "_buffer",
        "_dropped",
        "_max_buffer",
        "_owner",
        "_peak",
        "_policy",
        "_readers",
        "_state",
        "_writers",
    )

    def __init__(self, owner: Broadcast[T], max_buffer: int, policy: SlowSubscriberPolicy):
        self._owner = owner
        self._max_buffer = max_buffer
        self._policy = policy
        self._buffer: deque[T] = deque()
        self._state = _OPEN
        self._peak = 0
        self._dropped = 0
        # The reading task waits here for an event; the publisher (at most one, since
        # Broadcast.publish is serialized) waits here for room under policy "block".
        self._readers = trio.lowlevel.ParkingLot()
        self._writers = trio.lowlevel.ParkingLot()

    @property
    def max_buffer(self) -> int:
        """The buffer size the subscription was opened with."""
        return self._max_buffer

    @property
    def policy(self) -> SlowSubscriberPolicy:
        """The slow-subscriber policy the subscription was opened with."""
        return self._policy

    def statistics(self) -> SubscriptionStatistics:
        """Return a snapshot of the buffer depth and the number of dropped events."""
        return SubscriptionStatistics(
            buffered=len(self._buffer),
            peak_buffered=self._peak,
            dropped=self._dropped,
            max_buffer=self._max_buffer,
            policy=self._policy,
        )

    # -- reader side ---------------------------------------------------------------------------

    def receive_nowait(self) -> T:
        """Return the oldest buffered event without waiting.

        Raises:
            trio.WouldBlock: Nothing is buffered yet.
            trio.EndOfChannel: The broadcast was closed and everything was read.
            SubscriberOverflow: Policy ``"error"`` cut this subscriber off.
            trio.ClosedResourceError: This subscription was closed.
        """
        buf = self._buffer
        if buf:
            event = buf.popleft()
            if self._writers:
                self._writers.unpark()
            return event
        if self._state != _OPEN:
            self._raise_finished()
        raise trio.WouldBlock

    async def receive(self) -> T:
        """Return the oldest buffered event, waiting for one if necessary.

        Raises:
            trio.EndOfChannel: The broadcast was closed and everything was read.
            SubscriberOverflow: Policy ``"error"`` cut this subscriber off.
            trio.ClosedResourceError: This subscription was closed, before or during the wait.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        buf = self._buffer
        if buf:
            event = buf.popleft()
            if self._writers:
                self._writers.unpark()
            await trio.lowlevel.cancel_shielded_checkpoint()
            return event
        while not buf:
            if self._state != _OPEN:
                self._raise_finished()
            await self._readers.park()
        event = buf.popleft()
        if self._writers:
            self._writers.unpark()
        return event

    def _raise_finished(self) -> None:
        if self._state == _ENDED:
            raise trio.EndOfChannel
        if self._state == _BROKEN:
            raise SubscriberOverflow(self._max_buffer)
        raise trio.ClosedResourceError("the subscription was closed")

    def close(self) -> None:
        """Unsubscribe and discard buffered events; idempotent and synchronous."""
        if self._state == _CLOSED:
            return
        if self._state == _OPEN:
            self._owner._remove(self)
        self._state = _CLOSED
        self._buffer.clear()
        self._readers.unpark_all()
        self._writers.unpark_all()

    async def aclose(self) -> None:
        """Unsubscribe and discard buffered events; idempotent, closes even when cancelled."""
        self.close()
        await trio.lowlevel.checkpoint()

    # -- publisher side (called by Broadcast.publish under its lock) ----------------------------

    def _offer(self, event: T) -> bool:
        """Buffer ``event`` or apply the policy; return False if the publisher must wait."""
        buf = self._buffer
        if len(buf) < self._max_buffer:
            buf.append(event)
            if len(buf) > self._peak:
                self._peak = len(buf)
            if self._readers:
                self._readers.unpark()
            return True
        policy = self._policy
        if policy == "block":
            return False
        self._dropped += 1
        if policy == "drop_oldest":
            buf.popleft()
            buf.append(event)
        elif policy == "error":
            self._dropped += len(buf)
            buf.clear()
            self._state = _BROKEN
            self._owner._remove(self)
            self._readers.unpark_all()
        return True

    async def _put_blocking(self, event: T) -> None:
        buf = self._buffer
        while len(buf) >= self._max_buffer:
            await self._writers.park()
            if self._state != _OPEN:
                return  # closed while we waited: deliver nothing, move on
        self._offer(event)

    def _end(self) -> None:
        if self._state == _OPEN:
            self._state = _ENDED
            self._readers.unpark_all()
            self._writers.unpark_all()


class Broadcast(Generic[T]):
    """Deliver each published event to every subscriber, in order.

    Subscribers are callbacks (`subscribe`) or bounded subscriptions (`open_subscription`).
    For every event, in publish order, each subscriber is served in subscription order, and
    `publish` returns only after all of them were served: callbacks have returned (async ones
    were awaited) and subscriptions have buffered the event or applied their policy. A
    subscriber added during a publish first sees the next event; one removed during a publish
    (even by a callback, even itself) sees no further events.

    Error handling:
        A callback that raises an `Exception` is logged as ``subscriber_failed`` (with the
        traceback) and skipped; the others still get the event and `publish` does not raise.
        `trio.Cancelled` (and any other `BaseException`) propagates.

    Cancellation:
        If `publish` is cancelled while an async callback runs or while a ``"block"``
        subscription is full, the subscribers before it have the event and the rest do not.

    Concurrency:
        Concurrent `publish` calls are served one at a time in arrival order (first come,
        first served), so every subscriber sees the same order. A callback must not await
        `publish` on the same broadcast: that raises `RuntimeError` inside the callback
        (logged as ``subscriber_failed``) instead of deadlocking.

    Resource handling:
        Whoever creates the broadcast closes it with `close`. Closing removes all callbacks,
        ends all subscriptions (readers drain their buffers, then ``async for`` ends) and
        makes later `publish`, `subscribe` and `open_subscription` calls raise
        `trio.ClosedResourceError`.
    """

    __slots__ = ("_closed", "_holder", "_locked", "_sole", "_subscribers", "_waiting_publishers")

    def __init__(self) -> None:
        # Replaced, never mutated (copy-on-write), so publish iterates without copying and
        # (un)subscribing during delivery cannot disturb the iteration. Set through
        # _set_subscribers, which keeps _sole: the one callback when it is the only
        # subscriber (an agent's bus with its one listener), served without the loop.
        self._subscribers: tuple[_Callback[T] | Subscription[T], ...] = ()
        self._sole: _Callback[T] | None = None
        # Whether a publish is delivering; the task awaiting an async callback in it (None
        # otherwise); the publishes queued behind it (FIFO).
        self._locked = False
        self._holder: trio.lowlevel.Task | None = None
        # Made by the first publish that has to queue (an idle agent's bus never does).
        self._waiting_publishers: trio.lowlevel.ParkingLot | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    def subscribe(self, callback: Callable[[T], Awaitable[None] | None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event published from now on.

        Args:
            callback: A function or ``async`` function of one event. If it returns an
                awaitable, `publish` awaits it before serving the next subscriber.

        Returns:
            A function that unsubscribes; calling it again, or after `close`, does nothing.

        Raises:
            trio.ClosedResourceError: The broadcast was closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the broadcast was closed")
        entry = _Callback(self, callback)
        self._set_subscribers((*self._subscribers, entry))
        return entry.unsubscribe

    @asynccontextmanager
    async def open_subscription(
        self,
        max_buffer: int = SUBSCRIPTION_BUFFER,
        policy: SlowSubscriberPolicy = "block",
    ) -> AsyncIterator[Subscription[T]]:
        """Subscribe with a bounded buffer for the duration of an ``async with`` block.

        Args:
            max_buffer: How many events may wait for the reader; must be ``>= 1`` (there is
                no rendezvous mode; 1 is the tightest coupling). Default `SUBSCRIPTION_BUFFER`.
            policy: What happens when the buffer is full; see `SlowSubscriberPolicy`. The
                default ``"block"`` makes `publish` wait for this reader.

        Yields:
            The `Subscription`, an async iterator of the events published from now on. It is
            closed (unsubscribed) when the block exits.

        Raises:
            ValueError: ``max_buffer < 1`` or an unknown ``policy``.
            trio.ClosedResourceError: The broadcast was closed.
        """
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be >= 1, not {max_buffer!r}")
        if policy not in _POLICIES:
            raise ValueError(f"policy must be one of {sorted(_POLICIES)}, not {policy!r}")
        if self._closed:
            raise trio.ClosedResourceError("the broadcast was closed")
        subscription = Subscription(self, max_buffer, policy)
        self._set_subscribers((*self._subscribers, subscription))
        try:
            yield subscription
        finally:
            subscription.close()

    def publish(self, event: T) -> Awaitable[None]:
        """Deliver ``event`` to every current subscriber, in subscription order.

        Call it as ``await broadcast.publish(event)``. The delivery to sync callbacks and to
        subscriptions with room happens in the call itself, with no coroutine and no
        checkpoint (an agent publishes ~100 events per turn; a scheduler round trip costs ~20x
        a delivery, the publisher yields at its own checkpoints); the returned awaitable then
        completes at once (it is `DELIVERED`). What has to wait (an async callback, a full
        ``"block"`` subscription, another task's publish in progress) is left to the returned
        awaitable, which must be awaited straight away: until it completes, later publishes
        queue behind it.

        Args:
            event: The event; every subscriber receives this same object, so it should be
                immutable.

        Raises:
            trio.ClosedResourceError: The broadcast was closed before the call.
            RuntimeError: Awaited by a callback while it is being called by `publish`.
        """
        if self._closed:
            raise trio.ClosedResourceError("the broadcast was closed")
        if self._locked:
            return self._publish_queued(event)
        sole = self._sole
        if sole is not None:  # what the loop below does for a lone callback
            self._locked = True
            try:
                awaitable = sole.callback(event)
            except Exception:
                log.exception("subscriber_failed", subscriber=sole.callback)
                awaitable = None
            except BaseException:
                self._locked = False
                raise
            if awaitable is not None:  # _finish takes the lock over
                return self._finish(event, (sole,), 1, sole, awaitable)
            self._locked = False
            return DELIVERED
        subscribers = self._subscribers
        # Locked during the delivery too: a sync callback calling publish on this broadcast
        # gets a queued publish (it cannot await it), never a nested, out-of-order delivery.
        self._locked = True
        try:
            for entry in subscribers:
                if type(entry) is _Callback:
                    if not entry.active:
                        continue
                    try:
                        awaitable = entry.callback(event)
                    except Exception:
                        log.exception("subscriber_failed", subscriber=entry.callback)
                        continue
                    if awaitable is not None:  # _finish takes the lock over
                        rest = _position(subscribers, entry) + 1
                        return self._finish(event, subscribers, rest, entry, awaitable)
                elif (
                    type(entry) is Subscription
                    and entry._state == _OPEN
                    and not entry._offer(event)
                ):
                    rest = _position(subscribers, entry)
                    return self._finish(event, subscribers, rest, None, None)
        except BaseException:
            self._locked = False
            raise
        # No publisher can be queued: none ran since the lock was found free.
        self._locked = False
        return DELIVERED

    async def _publish_queued(self, event: T) -> None:
        # Another publish holds the (FIFO) lock. A cancelled park leaves the lot without the
        # lock; one that returns was handed the lock (see _finish's finally).
        if self._holder is not None and self._holder is trio.lowlevel.current_task():
            raise RuntimeError("publish() was awaited by a subscriber of the same Broadcast")
        if self._locked:
            waiting = self._waiting_publishers
            if waiting is None:
                waiting = self._waiting_publishers = trio.lowlevel.ParkingLot()
            await waiting.park()
        else:
            # Released before this awaitable started (it was handed to another task to
            # await, as a delivery begun in a producer's task is): nobody will hand the lock
            # over, so take it.
            self._locked = True
        await self._finish(event, self._subscribers, 0, None, None)

    async def _finish(
        self,
        event: T,
        subscribers: tuple[_Callback[T] | Subscription[T], ...],
        start: int,
        waiting_for: _Callback[T] | None,
        awaitable: Awaitable[None] | None,
    ) -> None:
        # Holds the lock (taken by publish or handed over by the previous publisher): finish
        # what publish could not do synchronously, then serve the rest in subscription order.
        try:
            if waiting_for is not None and awaitable is not None:
                await self._await_callback(waiting_for, awaitable)
            for entry in subscribers[start:]:
                if type(entry) is _Callback:
                    if not entry.active:
                        continue
                    try:
                        awaitable = entry.callback(event)
                    except Exception:
                        log.exception("subscriber_failed", subscriber=entry.callback)
                        continue
                    if awaitable is not None:
                        await self._await_callback(entry, awaitable)
                elif (
                    type(entry) is Subscription
                    and entry._state == _OPEN
                    and not entry._offer(event)
                ):
                    await entry._put_blocking(event)
        finally:
            self._release()

    def _release(self) -> None:
        waiting = self._waiting_publishers
        if waiting:
            waiting.unpark()  # the lock passes to it: _locked stays True
        else:
            self._locked = False

    async def _await_callback(self, entry: _Callback[T], awaitable: Awaitable[None]) -> None:
        # While an async callback runs, its task is the holder: a publish it awaits on this
        # broadcast would deadlock, so _publish_queued refuses it. Its exception is logged, as
        # a sync callback's is.
        self._holder = trio.lowlevel.current_task()
        try:
            await awaitable
        except Exception:
            log.exception("subscriber_failed", subscriber=entry.callback)
        finally:
            self._holder = None

    def close(self) -> None:
        """Remove every callback and end every subscription; idempotent and synchronous."""
        if self._closed:
            return
        self._closed = True
        subscribers = self._subscribers
        self._set_subscribers(())
        for entry in subscribers:
            if isinstance(entry, _Callback):
                entry.active = False
            else:
                entry._end()

    def statistics(self) -> BroadcastStatistics:
        """Return a snapshot of the subscriber counts."""
        callbacks = sum(isinstance(entry, _Callback) for entry in self._subscribers)
        return BroadcastStatistics(
            callbacks=callbacks,
            subscriptions=len(self._subscribers) - callbacks,
            closed=self._closed,
        )

    def _remove(self, entry: _Callback[T] | Subscription[T]) -> None:
        self._set_subscribers(tuple(e for e in self._subscribers if e is not entry))

    def _set_subscribers(self, subscribers: tuple[_Callback[T] | Subscription[T], ...]) -> None:
        self._subscribers = subscribers
        sole = subscribers[0] if len(subscribers) == 1 else None
        self._sole = sole if type(sole) is _Callback else None


def _position(subscribers: tuple[object, ...], entry: object) -> int:
    """Where ``entry`` is in ``subscribers`` (by identity): found only when a delivery has to
    wait, so the per-event loop keeps no count."""
    for index, candidate in enumerate(subscribers):
        if candidate is entry:
            return index
    raise AssertionError("the entry is not among the subscribers")  # pragma: no cover
