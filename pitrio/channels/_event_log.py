"""A per-session, sequenced event bus with a replay ring, for hosts whose clients reconnect.

Kept in one module: the sequenced log, its replay ring and the subscriptions'
coalescing are one structure.

`Broadcast` is pi's ``subscribe``/``emit``: events go to whoever listens now and are gone.
A host (RPC over stdio, a websocket server) needs more: a client that drops and reconnects wants
the events it missed, in order, without doubles, and a slow client must not slow the agent. The
`EventLog` adds, on top of Broadcast's callback semantics:

- a per-log sequence number: `EventLog.publish` gives each event ``seq`` 1, 2, 3, ... (outside
  the event itself, so pi's event JSON is unchanged);
- a bounded replay ring of the last `REPLAY_RING` events, so
  ``open_subscription(from_seq=N)`` resumes after cursor ``N``; a cursor that left the ring
  gets a `Snapshot` to rebuild from instead, then live events;
- bounded iterators with a policy for falling behind: ``"block"``, ``"coalesce"`` (merge
  consecutive mergeable events, never drop the others) or ``"error"`` (end with the cursor to
  resume from);
- each event encoded to wire bytes at most once however many iterators send it
  (`Sequenced.wire`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from itertools import islice
from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar, get_args

import attrs
import structlog
import trio

from ._broadcast import SUBSCRIPTION_BUFFER, _Callback
from ._exceptions import SubscriberLagged

log = structlog.get_logger(__name__)

T = TypeVar("T")

REPLAY_RING: Final = 1024
"""Default number of recent events an `EventLog` keeps for ``open_subscription(from_seq=N)``.

A streamed assistant reply is one ``message_update`` per token, so 1,024 events cover the
last few hundred tokens of text plus the structural events around them: enough for a client
that lost its connection for a few seconds (a Wi-Fi hand-over, a laptop lid) to resume
seamlessly. A client gone longer gets a `Snapshot` instead, which costs the same as a first
connect. The ring holds references to events the session keeps anyway, so its own cost is
about 100 bytes per slot (the `Sequenced` record and the deque slot): ~100 KB per session.
"""

COALESCE_OVERRUN: Final = 4
"""How many times ``max_buffer`` a ``"coalesce"`` subscription may hold before it is cut off.

Coalescing never drops a structural event (a ``message_end``, a ``tool_execution_end``), so a
full buffer of events that do not merge grows past ``max_buffer``. An agent turn adds about
five structural events plus four per tool call; at the default buffer of 64 the overrun allows
256 of them, several busy turns, before the reader is treated as gone: it is cut off as under
``"error"`` (with its resume cursor) rather than holding memory without bound.
"""

EventLogPolicy: TypeAlias = Literal["block", "coalesce", "error"]
"""What an `EventLog` does when a subscription's buffer (``max_buffer`` live events) is full.

- ``"block"``: `EventLog.publish` waits until the reader makes room. Lossless; the only policy
  under which one reader can slow the publisher (the caller chose it).
- ``"coalesce"``: the new event is merged into the newest buffered one with the log's ``merge``
  function; if they do not merge it is buffered anyway, up to ``max_buffer *``
  `COALESCE_OVERRUN` events, beyond which the subscription is cut off as under ``"error"``.
  A merged item carries the ``seq`` of the last event merged into it.
- ``"error"``: the subscription is cut off, its buffer discarded; the next read raises
  `SubscriberLagged` whose ``resume_from`` is the last ``seq`` the reader received.
"""

_POLICIES: Final = frozenset(get_args(EventLogPolicy))

# Subscription states; delivered to only while _OPEN (the same states as Broadcast's).
_OPEN: Final = 0  # receiving events
_ENDED: Final = 1  # EventLog.close(): drain the buffer, then EndOfChannel
_BROKEN: Final = 2  # overflowed ("error", or "coalesce" beyond its overrun): SubscriberLagged
_CLOSED: Final = 3  # the subscriber closed it: ClosedResourceError


@attrs.define(eq=False)
class Sequenced(Generic[T]):
    """One published event with its sequence number; what `EventLogSubscription` yields.

    The same record is shared by the replay ring and every subscription that reads the event,
    so `wire` encodes it once per log. Treat it as read-only. (It is not ``frozen`` because a
    frozen attrs ``__init__`` costs three times as much, and one is made per published event.)
    """

    seq: int
    """The event's position in its log: 1 for the first event, then 2, 3, ... For an item a
    ``"coalesce"`` subscription merged, the seq of the last event merged into it, so the last
    seq a reader saw is always the right cursor to resume from."""
    event: T
    """The event as published (or as merged)."""
    _encode: Callable[[T], bytes] | None = attrs.field(repr=False)
    _wire: bytes | None = attrs.field(default=None, init=False, repr=False)

    @property
    def wire(self) -> bytes:
        """The event encoded with the log's ``encode`` function, computed on first access.

        Raises:
            TypeError: The log was created without an ``encode`` function.
        """
        wire = self._wire
        if wire is None:
            if self._encode is None:
                raise TypeError("this EventLog was created without an encode function")
            wire = self._wire = self._encode(self.event)
        return wire


@attrs.frozen
class Snapshot:
    """The first item of a subscription whose ``from_seq`` cursor is no longer in the ring.

    The reader rebuilds its view from ``state``; the items after it are the live events with
    ``seq`` greater than this snapshot's ``seq``.
    """

    seq: int
    """The log's sequence number when the snapshot was taken: ``state`` includes every event up
    to and including this seq, and none after."""
    state: Any
    """What the log's ``snapshot`` function returned (None if the log has none)."""


@attrs.frozen
class EventLogSubscriptionStatistics:
    """A snapshot of one `EventLogSubscription`, returned by its ``statistics()``."""

    buffered: int
    """Live events (or merged items) waiting for the reader; replayed items not counted."""
    replay: int
    """Replayed items (ring events or the `Snapshot`) the reader has still to read."""
    peak_buffered: int
    """The largest ``buffered`` has been."""
    coalesced: int
    """Events merged into an already buffered item (``"coalesce"`` only)."""
    dropped: int
    """Items discarded when the subscription was cut off (``"error"``, or ``"coalesce"``
    beyond its overrun); 0 otherwise."""
    last_seq: int
    """The seq of the last item the reader received: its resume cursor."""
    max_buffer: int
    """The buffer size the subscription was opened with."""
    policy: EventLogPolicy
    """The policy the subscription was opened with."""


@attrs.frozen
class EventLogStatistics:
    """A snapshot of an `EventLog`, returned by `EventLog.statistics`."""

    seq: int
    """The seq of the last published event (0 before the first)."""
    ring_size: int
    """How many events the replay ring holds at most."""
    ring_length: int
    """How many events the replay ring holds now."""
    oldest_seq: int
    """The seq of the oldest event in the ring (``seq + 1`` while the ring is empty): a cursor
    ``>= oldest_seq - 1`` resumes without a snapshot."""
    callbacks: int
    """Callbacks registered with `EventLog.subscribe`."""
    subscriptions: tuple[EventLogSubscriptionStatistics, ...]
    """One entry per open subscription, in the order they were opened."""
    closed: bool
    """True once `EventLog.close` was called."""


class EventLogSubscription(trio.abc.ReceiveChannel[Sequenced[T] | Snapshot]):
    """A bounded, resumable iterator of an `EventLog`; create with `EventLog.open_subscription`.

    Yields `Sequenced` items in ``seq`` order, first a `Snapshot` if the requested cursor had
    left the ring. Iteration ends (`trio.EndOfChannel` from `receive`) once the log is closed
    and the buffered items are read. Only one task should read: items are handed out, not
    copied.

    Resource handling:
        The ``async with`` of `EventLog.open_subscription` owns the subscription and closes it
        on exit; `close`/`aclose` close it early. Closing unsubscribes, discards buffered items
        and wakes a publisher blocked on this subscription; reading afterwards raises
        `trio.ClosedResourceError`.

    Buffering and error handling:
        At most ``max_buffer`` live events are buffered (replayed items do not count; there are
        at most `EventLog.ring_size` of them); then the policy applies (see `EventLogPolicy`).
        A subscription cut off by its policy is removed from the log at once, its buffer is
        discarded, and every later read raises `SubscriberLagged` with the cursor to resume
        from.
    """

    __slots__ = (
        "_buffer",
        "_coalesced",
        "_cursor",
        "_dropped",
        "_hard_limit",
        "_max_buffer",
        "_on_cut_off",
        "_owner",
        "_peak",
        "_policy",
        "_readers",
        "_replay",
        "_state",
        "_writers",
    )

    def __init__(
        self,
        owner: EventLog[T],
        max_buffer: int,
        policy: EventLogPolicy,
        replay: deque[Sequenced[T] | Snapshot],
        cursor: int,
    ):
        self._owner = owner
        self._max_buffer = max_buffer
        self._policy = policy
        # "block" never exceeds max_buffer; "error" is cut off at it; "coalesce" may overrun.
        self._hard_limit = max_buffer * COALESCE_OVERRUN if policy == "coalesce" else max_buffer
        # Replayed items first, then live ones; the first _replay items are the replayed ones
        # and do not count against max_buffer. One deque keeps the read path to one popleft.
        self._buffer = replay
        self._replay = len(replay)
        self._cursor = cursor
        self._state = _OPEN
        self._peak = 0
        self._coalesced = 0
        self._dropped = 0
        # The reading task waits here for an item; the publisher (at most one, since publish
        # is serialized) waits here for room under policy "block".
        self._readers = trio.lowlevel.ParkingLot()
        self._writers = trio.lowlevel.ParkingLot()
        self._on_cut_off: Callable[[], None] | None = None

    @property
    def max_buffer(self) -> int:
        """The buffer size the subscription was opened with."""
        return self._max_buffer

    @property
    def policy(self) -> EventLogPolicy:
        """The policy the subscription was opened with."""
        return self._policy

    @property
    def last_seq(self) -> int:
        """The seq of the last item received (the cursor the subscription started from before
        the first): pass it as ``from_seq`` to resume where this reader stopped."""
        return self._cursor

    def statistics(self) -> EventLogSubscriptionStatistics:
        """Return a snapshot of the buffer depth and the coalesced and dropped counts."""
        return EventLogSubscriptionStatistics(
            buffered=len(self._buffer) - self._replay,
            replay=self._replay,
            peak_buffered=self._peak,
            coalesced=self._coalesced,
            dropped=self._dropped,
            last_seq=self._cursor,
            max_buffer=self._max_buffer,
            policy=self._policy,
        )

    # -- reader side ---------------------------------------------------------------------------

    def receive_nowait(self) -> Sequenced[T] | Snapshot:
        """Return the oldest buffered item without waiting.

        Raises:
            trio.WouldBlock: Nothing is buffered yet.
            trio.EndOfChannel: The log was closed and everything was read.
            SubscriberLagged: The policy cut this subscriber off.
            trio.ClosedResourceError: This subscription was closed.
        """
        if self._buffer:
            return self._pop()
        if self._state != _OPEN:
            self._raise_finished()
        raise trio.WouldBlock

    async def receive(self) -> Sequenced[T] | Snapshot:
        """Return the oldest buffered item, waiting for one if necessary.

        Raises:
            trio.EndOfChannel: The log was closed and everything was read.
            SubscriberLagged: The policy cut this subscriber off.
            trio.ClosedResourceError: This subscription was closed, before or during the wait.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._buffer:
            item = self._pop()
            await trio.lowlevel.cancel_shielded_checkpoint()
            return item
        while not self._buffer:
            if self._state != _OPEN:
                self._raise_finished()
            await self._readers.park()
        return self._pop()

    def _pop(self) -> Sequenced[T] | Snapshot:
        item = self._buffer.popleft()
        if self._replay:
            self._replay -= 1
        elif self._writers:
            self._writers.unpark()
        self._cursor = item.seq
        return item

    def _raise_finished(self) -> None:
        if self._state == _ENDED:
            raise trio.EndOfChannel
        if self._state == _BROKEN:
            raise SubscriberLagged(self._max_buffer, self._cursor)
        raise trio.ClosedResourceError("the subscription was closed")

    def on_cut_off(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (synchronously, from the publisher) if this subscription is cut
        off, for a reader that is busy elsewhere (waiting to hand on the item it read) and
        so would only learn of it at its next read; ``None`` removes it."""
        self._on_cut_off = callback

    def close(self) -> None:
        """Unsubscribe and discard buffered items; idempotent and synchronous."""
        if self._state == _CLOSED:
            return
        if self._state == _OPEN:
            self._owner._remove_subscription(self)
        self._state = _CLOSED
        self._buffer.clear()
        self._replay = 0
        self._readers.unpark_all()
        self._writers.unpark_all()

    async def aclose(self) -> None:
        """Unsubscribe and discard buffered items; idempotent, closes even when cancelled."""
        self.close()
        await trio.lowlevel.checkpoint()

    # -- publisher side (called by EventLog.publish while it holds the log) --------------------

    def _offer(self, item: Sequenced[T]) -> bool:
        """Buffer ``item`` or apply the policy; return False if the publisher must wait."""
        buf = self._buffer
        live = len(buf) - self._replay
        if live < self._max_buffer:
            buf.append(item)
            if live >= self._peak:
                self._peak = live + 1
            if self._readers:
                self._readers.unpark()
            return True
        policy = self._policy
        if policy == "block":
            return False
        if policy == "coalesce":
            # live >= max_buffer >= 1, so the newest buffered item is a live Sequenced.
            tail = buf[-1]
            merge = self._owner._merge
            assert type(tail) is Sequenced and merge is not None
            merged = merge(tail.event, item.event)
            if merged is not None:
                buf[-1] = Sequenced(item.seq, merged, item._encode)
                self._coalesced += 1
                return True
            if live < self._hard_limit:
                buf.append(item)
                if live >= self._peak:
                    self._peak = live + 1
                return True
        self._cut_off()
        return True

    def _cut_off(self) -> None:
        # The event that did not fit is lost too; it is counted with the discarded buffer.
        self._dropped += len(self._buffer) + 1
        self._buffer.clear()
        self._replay = 0
        self._state = _BROKEN
        self._owner._remove_subscription(self)
        self._readers.unpark_all()
        if self._on_cut_off is not None:
            self._on_cut_off()

    async def _put_blocking(self, item: Sequenced[T]) -> None:
        while len(self._buffer) - self._replay >= self._max_buffer:
            await self._writers.park()
            if self._state != _OPEN:
                return  # closed while we waited: deliver nothing, move on
        self._offer(item)

    def _end(self) -> None:
        if self._state == _OPEN:
            self._state = _ENDED
            self._readers.unpark_all()
            self._writers.unpark_all()


class EventLog(Generic[T]):
    """Number, keep and deliver each published event to callbacks and resumable iterators.

    `publish` gives the event the next ``seq``, keeps it in a ring of the last ``ring_size``
    events, hands it to every open subscription (`open_subscription`), then calls every callback
    (`subscribe`). Callbacks keep `Broadcast`'s contract: called in subscription order, async
    ones awaited before the next, `publish` returns after the last; a callback added during a
    publish first sees the next event, one removed during a publish sees no further events.

    Error handling:
        A callback that raises an `Exception` is logged as ``subscriber_failed`` (with the
        traceback) and skipped; `publish` does not raise. `trio.Cancelled` (and any other
        `BaseException`) propagates, so a publish under a run's cancel scope cancels a stalled
        callback; the callbacks after it miss that event (the subscriptions already have it).
        Cancelled while waiting for a full ``"block"`` subscription, the event is in the ring
        and in the subscriptions before it, and no callback sees it.

    Concurrency:
        Concurrent `publish` calls are served one at a time in arrival order, and ``seq`` is
        assigned in that order, so everyone sees the same order. A callback may publish on the
        same log (unlike `Broadcast`): the event gets its seq and reaches the subscriptions at
        once, and reaches the callbacks right after the event being delivered has reached all
        of them; that inner `publish` returns without waiting for callbacks (waiting would
        deadlock). If the outer `publish` is cancelled first, the next `publish` delivers the
        queued events to the callbacks before its own. A callback must not wait for another
        *task* that publishes on the same log: that task waits for the callback's publish to
        finish, a deadlock.

    Resource handling:
        Whoever creates the log closes it with `close`. Closing removes all callbacks, ends all
        subscriptions (readers drain their buffers, then ``async for`` ends) and makes later
        `publish` and `subscribe` calls raise `trio.ClosedResourceError`. The ring survives:
        a subscription opened after `close` yields its replay (or snapshot), then ends, so a
        client that reconnects as the log closes still gets the last events.

    Args:
        encode: Turns an event into its wire bytes; `Sequenced.wire` calls it at most once per
            event (and once per merged item).
        merge: For ``"coalesce"`` subscriptions: ``merge(older, newer)`` returns one event that
            stands for both, or None if they must stay separate (structural events). It runs
            inside `publish` and must not raise. For agent events: two ``message_update``\\ s
            of the same message and content block with deltas of one kind merge into one whose
            delta is the two concatenated and whose partial message is the newer one.
        snapshot: Returns the state a reader whose cursor left the ring rebuilds from (the
            session's messages and state). Called synchronously in `open_subscription`; it must
            include every event published so far (reduce state before publishing).
        ring_size: How many recent events to keep for resuming; default `REPLAY_RING`. 0 keeps
            none: a resume that missed any event gets a snapshot.
        ring_on_demand: Keep events in the ring only from the moment a cursor could exist: the
            first `open_subscription` or the first read of `seq`. Before that nobody holds a
            seq to resume from (callbacks get events, not seqs), so a resume from a cursor
            older than that moment gets a snapshot, as for a cursor that left the ring. Many
            sessions whose only listeners are callbacks then keep no event alive per token
            (each kept event is promoted through the cyclic collector's generations).
    """

    __slots__ = (
        "_callbacks",
        "_closed",
        "_encode",
        "_holder",
        "_keep",
        "_locked",
        "_merge",
        "_pending",
        "_ring",
        "_ring_size",
        "_seq",
        "_snapshot",
        "_subscriptions",
        "_waiting_publishers",
    )

    def __init__(
        self,
        *,
        encode: Callable[[T], bytes] | None = None,
        merge: Callable[[T, T], T | None] | None = None,
        snapshot: Callable[[], Any] | None = None,
        ring_size: int = REPLAY_RING,
        ring_on_demand: bool = False,
    ) -> None:
        if ring_size < 0:
            raise ValueError(f"ring_size must be >= 0, not {ring_size!r}")
        self._encode = encode
        self._merge = merge
        self._snapshot = snapshot
        # The ring, the publishers' parking lot and the callbacks' backlog are created on first
        # use: an idle session's log holds none of them (a deque costs 768 bytes empty).
        self._ring: deque[Sequenced[T]] | None = None
        self._ring_size = ring_size
        # Whether publish keeps events (creating the ring at the first one); with
        # ring_on_demand it turns on when a cursor is first handed out (_keep_from_now).
        self._keep = not ring_on_demand
        self._seq = 0
        # Both replaced, never mutated (copy-on-write), so publish iterates without copying and
        # (un)subscribing during delivery cannot disturb the iteration.
        self._subscriptions: tuple[EventLogSubscription[T], ...] = ()
        self._callbacks: tuple[_Callback[T], ...] = ()
        # A FIFO lock, inlined. _locked: a publish is delivering; _holder: its task, recorded
        # only while it awaits a callback (the only time a re-entrant publish can happen), so
        # the uncontended path never calls current_task().
        self._locked = False
        self._holder: trio.lowlevel.Task | None = None
        self._waiting_publishers: trio.lowlevel.ParkingLot | None = None
        # Events published by callbacks, waiting for their turn with the callbacks (rare, and
        # few: a list, made by the first; None until then, so an idle log holds no list).
        self._pending: list[T] | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    @property
    def seq(self) -> int:
        """The seq of the last published event; 0 before the first.

        With ``ring_on_demand``, reading it hands out a cursor: the ring keeps events from now.
        """
        if not self._keep:
            self._keep_from_now()
        return self._seq

    def _keep_from_now(self) -> None:
        self._keep = True
        if self._ring is None:
            self._ring = deque(maxlen=self._ring_size)

    def in_callback(self) -> bool:
        """Whether the calling task is inside an async callback of this log's publish.

        An actor answering a command from such a caller must answer before it publishes the
        command's events: the publish waits for the callback to return.
        """
        holder = self._holder
        return holder is not None and holder is trio.lowlevel.current_task()

    @property
    def ring_size(self) -> int:
        """How many recent events the log keeps for resuming."""
        return self._ring_size

    @property
    def oldest_seq(self) -> int:
        """The seq of the oldest event in the ring, ``seq + 1`` while the ring is empty."""
        ring = self._ring
        return ring[0].seq if ring else self._seq + 1

    def subscribe(self, callback: Callable[[T], Awaitable[None] | None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event published from now on.

        Args:
            callback: A function or ``async`` function of one event. If it returns an
                awaitable, `publish` awaits it before serving the next callback. During the
                call, `seq` is at least the event's seq.

        Returns:
            A function that unsubscribes; calling it again, or after `close`, does nothing.

        Raises:
            trio.ClosedResourceError: The log was closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the event log was closed")
        entry = _Callback(self, callback)
        self._callbacks = (*self._callbacks, entry)
        return entry.unsubscribe

    @asynccontextmanager
    async def open_subscription(
        self,
        *,
        from_seq: int | None = None,
        max_buffer: int = SUBSCRIPTION_BUFFER,
        policy: EventLogPolicy = "block",
    ) -> AsyncIterator[EventLogSubscription[T]]:
        """Subscribe for the duration of an ``async with`` block, optionally resuming.

        Copying the ring and registering the subscription happen with no checkpoint between
        them, so the replayed and the live events join with nothing lost or doubled.

        Args:
            from_seq: None for the events published from now on. A cursor ``N`` (the last seq
                the reader saw; 0 for "from the start") first yields the ring's events with
                seq > N if ``oldest_seq - 1 <= N <= seq``; otherwise (the cursor left the ring,
                or is ahead of this log, e.g. from an earlier process) a `Snapshot` of the
                current state. Live events follow either way.
            max_buffer: How many live events may wait for the reader; must be ``>= 1``.
                Default `SUBSCRIPTION_BUFFER`.
            policy: What happens when the buffer is full; see `EventLogPolicy`.

        Yields:
            The `EventLogSubscription`; it is closed when the block exits.

        Raises:
            ValueError: ``max_buffer < 1``, ``from_seq < 0``, an unknown ``policy``, or
                ``"coalesce"`` on a log without a ``merge`` function.
        """
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be >= 1, not {max_buffer!r}")
        if policy not in _POLICIES:
            raise ValueError(f"policy must be one of {sorted(_POLICIES)}, not {policy!r}")
        if policy == "coalesce" and self._merge is None:
            raise ValueError('policy "coalesce" needs an EventLog created with merge=')
        if from_seq is not None and from_seq < 0:
            raise ValueError(f"from_seq must be >= 0, not {from_seq!r}")
        # No checkpoint from here to the registration below.
        if not self._keep:
            self._keep_from_now()
        replay: deque[Sequenced[T] | Snapshot] = deque()
        seq = self._seq
        if from_seq is None:
            cursor = seq
        elif self.oldest_seq - 1 <= from_seq <= seq:
            cursor = from_seq
            ring = self._ring or ()
            # The ring holds oldest_seq..seq without gaps: the events with seq > from_seq are
            # its last (seq - from_seq).
            replay.extend(islice(ring, len(ring) - (seq - from_seq), None))
        else:
            cursor = from_seq
            state = self._snapshot() if self._snapshot is not None else None
            replay.append(Snapshot(seq, state))
        subscription = EventLogSubscription(self, max_buffer, policy, replay, cursor)
        if self._closed:
            subscription._end()  # replay what the ring holds, then end
        else:
            self._subscriptions = (*self._subscriptions, subscription)
        try:
            yield subscription
        finally:
            subscription.close()

    async def publish(self, event: T) -> int:
        """Number ``event``, keep it in the ring and deliver it; return its seq.

        Subscriptions get it first (buffered, merged, or cut off by their policy; a full
        ``"block"`` one is waited for), then the callbacks in subscription order. A checkpoint
        only when it waits: for an async callback, a full ``"block"`` subscription or another
        task's publish; an agent publishes once per token and a scheduler round trip costs far
        more than a delivery, so the publisher yields at its own checkpoints.

        Args:
            event: The event; every subscriber receives this same object, so it should be
                immutable.

        Returns:
            The event's seq.

        Raises:
            trio.ClosedResourceError: The log was closed before the call.
        """
        if self._closed:
            raise trio.ClosedResourceError("the event log was closed")
        if self._locked:
            if self._holder is not None and self._holder is trio.lowlevel.current_task():
                return await self._publish_from_callback(event)
            # Returns once the previous publisher handed the lock to us (see finally).
            if self._waiting_publishers is None:
                self._waiting_publishers = trio.lowlevel.ParkingLot()
            await self._waiting_publishers.park()
        else:
            self._locked = True
        try:
            if self._closed:  # while we waited for the lock
                raise trio.ClosedResourceError("the event log was closed")
            seq, item = self._number(event)
            pending = self._pending
            if pending:  # left over by a cancelled publish: those come first
                pending.append(event)
                event = pending.pop(0)
        except BaseException:
            self._unlock()
            raise
        # _finish delivers (subscriptions, then callbacks, then what they published) and
        # releases the lock.
        return await self._finish(event, seq, self._subscriptions, item, None, None)

    def _number(self, event: T) -> tuple[int, Sequenced[T] | None]:
        """Give ``event`` the next seq and keep it in the ring (only once a cursor can exist:
        before that there is nothing to keep or hand out, so no record is made)."""
        seq = self._seq = self._seq + 1
        if not self._keep:
            return seq, None
        item = Sequenced(seq, event, self._encode)
        ring = self._ring
        if ring is None:
            ring = self._ring = deque(maxlen=self._ring_size)
        ring.append(item)
        return seq, item

    def deliver(self, event: T) -> Awaitable[int] | None:
        """`publish` without a coroutine when nothing has to wait: return None if ``event``
        was numbered, kept and delivered to everyone during the call, else an awaitable that
        finishes the delivery (await it straight away: until it completes, later publishes
        queue behind it).

        The per-token path of a session: a ``message_update`` whose subscriptions have room
        and whose callbacks are synchronous costs a few calls, no coroutine and no
        checkpoint. Same order, seq, error handling and cancellation as `publish`.

        Raises:
            trio.ClosedResourceError: The log was closed before the call.
        """
        if self._closed:
            raise trio.ClosedResourceError("the event log was closed")
        if self._locked or self._pending:
            return self.publish(event)  # queued, re-entrant or with a backlog: the full path
        self._locked = True
        try:
            seq = self._seq = self._seq + 1
            if self._keep:
                item = Sequenced(seq, event, self._encode)
                ring = self._ring
                if ring is None:
                    ring = self._ring = deque(maxlen=self._ring_size)
                ring.append(item)
                subscriptions = self._subscriptions
                for index, subscription in enumerate(subscriptions):
                    if subscription._state == _OPEN and not subscription._offer(item):
                        return self._finish(event, seq, subscriptions[index:], item, None, None)
            callbacks = self._callbacks
            index = 0
            for entry in callbacks:
                index += 1
                if not entry.active:
                    continue
                try:
                    awaitable = entry.callback(event)
                except Exception:
                    log.exception("subscriber_failed", subscriber=entry.callback)
                    continue
                if awaitable is not None:  # _finish takes the lock over
                    return self._finish(event, seq, (), None, callbacks[index:], (entry, awaitable))
        except BaseException:
            self._unlock()
            raise
        self._unlock()
        return None

    async def _finish(
        self,
        event: T,
        seq: int,
        blocked: tuple[EventLogSubscription[T], ...],
        item: Sequenced[T] | None,
        rest: tuple[_Callback[T], ...] | None,
        waiting: tuple[_Callback[T], Awaitable[Any]] | None,
    ) -> int:
        # Holds the lock (taken by publish or deliver): what deliver could not do in the call,
        # then the rest in order (subscriptions, callbacks, events the callbacks published).
        try:
            if item is not None:
                for subscription in blocked:
                    if subscription._state == _OPEN and not subscription._offer(item):
                        await subscription._put_blocking(item)
            if waiting is not None:
                entry, awaitable = waiting
                self._holder = trio.lowlevel.current_task()
                try:
                    await awaitable
                except Exception:
                    log.exception("subscriber_failed", subscriber=entry.callback)
                finally:
                    self._holder = None
            callbacks = self._callbacks if rest is None else rest
            while True:
                for entry in callbacks:
                    if not entry.active:
                        continue
                    try:
                        returned = entry.callback(event)
                        if returned is not None:
                            self._holder = trio.lowlevel.current_task()
                            try:
                                await returned
                            finally:
                                self._holder = None
                    except Exception:
                        log.exception("subscriber_failed", subscriber=entry.callback)
                pending = self._pending  # read again: a callback may have made it
                if not pending:
                    return seq
                event = pending.pop(0)
                callbacks = self._callbacks
        finally:
            self._unlock()

    def _unlock(self) -> None:
        waiting = self._waiting_publishers
        if waiting:
            waiting.unpark()  # the lock passes to it: _locked stays True
        else:
            self._locked = False

    async def _publish_from_callback(self, event: T) -> int:
        # The publisher's own task, inside a callback: number the event and hand it to the
        # subscriptions now; the running publish hands it to the callbacks after the current
        # event (waiting for that here would wait for ourselves).
        seq, item = self._number(event)
        if item is not None:
            for subscription in self._subscriptions:
                if subscription._state == _OPEN and not subscription._offer(item):
                    await subscription._put_blocking(item)
        if not self._closed:
            if self._pending is None:
                self._pending = [event]
            else:
                self._pending.append(event)
        return seq

    def close(self) -> None:
        """Remove every callback and end every subscription; idempotent and synchronous."""
        if self._closed:
            return
        self._closed = True
        # The snapshot callable is usually the owner's bound method: a cycle through the owner.
        self._snapshot = None
        if self._pending is not None:
            self._pending.clear()
        callbacks, self._callbacks = self._callbacks, ()
        for entry in callbacks:
            entry.active = False
        subscriptions, self._subscriptions = self._subscriptions, ()
        for subscription in subscriptions:
            subscription._end()

    def statistics(self) -> EventLogStatistics:
        """Return a snapshot of the sequence, the ring and every subscription."""
        return EventLogStatistics(
            seq=self._seq,
            ring_size=self.ring_size,
            ring_length=len(self._ring or ()),
            oldest_seq=self.oldest_seq,
            callbacks=len(self._callbacks),
            subscriptions=tuple(s.statistics() for s in self._subscriptions),
            closed=self._closed,
        )

    def _remove(self, entry: _Callback[T]) -> None:
        """Take a callback out (its `unsubscribe`)."""
        self._callbacks = tuple(e for e in self._callbacks if e is not entry)

    def _remove_subscription(self, subscription: EventLogSubscription[T]) -> None:
        self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)
