"""The steering / follow-up queue: a bounded box drained in pi's two modes.

pi keeps ``steeringQueue`` and ``followUpQueue`` as unbounded arrays and dequeues them with
``dequeueSteeringMessages()`` (``packages/agent/src/agent.ts:259-287``): ``"one-at-a-time"``
takes the first message, ``"all"`` takes everything. `Mailbox` keeps that contract, bounds the
queue, and adds the notifications an actor needs to react to arrivals while it is busy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final, Generic, Literal, TypeAlias, TypeVar, get_args

import attrs
import trio

from ._exceptions import MailboxFull

T = TypeVar("T")

MailboxMode: TypeAlias = Literal["one-at-a-time", "all"]
"""How `Mailbox.drain` empties the box: the first item only, or every item."""

_MODES: Final = frozenset(get_args(MailboxMode))

MAILBOX_SIZE: Final = 64
"""Default capacity of a `Mailbox`.

Items are user messages typed (or scripted over RPC) while the agent works; a person queues a
handful per turn. 64 leaves room for scripted clients while turning a runaway producer into a
prompt `MailboxFull` instead of silent memory growth.
"""


@attrs.frozen
class MailboxStatistics:
    """A snapshot of a `Mailbox`, returned by `Mailbox.statistics`."""

    size: int
    """Items in the box now."""
    peak_size: int
    """The most items the box has held."""
    max_size: int
    """The capacity."""
    waiting_putters: int
    """Tasks blocked in `Mailbox.put` because the box is full."""
    closed: bool
    """True once `Mailbox.close` was called."""


class _PendingPut(Generic[T]):
    """An item offered by a task blocked in `Mailbox.put`."""

    __slots__ = ("admitted", "item", "rejected")

    def __init__(self, item: T) -> None:
        self.item = item
        self.admitted = False  # moved into the box (or rejected): its task was unparked
        self.rejected = False  # set by close(): the put raises ClosedResourceError


class Mailbox(Generic[T]):
    """Hold up to ``max_size`` items for a consumer that takes them between steps.

    Not a memory channel: pi's two drain modes, ``peek_all`` and the arrival notifications
    need the queue itself; its waits are Trio's (`trio.lowlevel.ParkingLot`).

    Producers (UIs, RPC handlers) add items with `put_nowait` or `put`; the consumer (the agent
    loop) takes them with `drain` at the points where it looks for steering or follow-up
    messages, and can learn of arrivals while busy through `arrival_event` or
    `wait_nonempty`. Items come out in the order they went in, including items from tasks
    that were blocked in `put`.

    Modes:
        ``"one-at-a-time"`` (pi's default): `drain` returns the first item only.
        ``"all"``: `drain` returns every item. `mode` may be changed at any time.

    Buffering:
        At most ``max_size`` items (default `MAILBOX_SIZE`). When full, `put_nowait` raises
        `MailboxFull` (a `trio.WouldBlock`) and `put` waits until `drain` or `clear` makes
        room; waiting puts are admitted first come, first served.

    Resource handling:
        Whoever owns the consumer closes the box with `close`. Afterwards every put, including
        one already waiting, raises `trio.ClosedResourceError`; items already in the box can
        still be drained; `wait_nonempty` on an empty closed box raises `trio.EndOfChannel`.

    Cancellation:
        A cancelled `put` did not add its item. A cancelled `wait_nonempty` leaves no state.

    Args:
        mode: The initial drain mode.
        max_size: The capacity; must be ``>= 1``.
    """

    __slots__ = (
        "_arrival",
        "_arrival_callbacks",
        "_closed",
        "_items",
        "_max_size",
        "_mode",
        "_peak",
        "_putters",
        "_putters_lot",
        "_waiters",
    )

    def __init__(self, mode: MailboxMode = "one-at-a-time", *, max_size: int = MAILBOX_SIZE):
        if max_size < 1:
            raise ValueError(f"max_size must be >= 1, not {max_size!r}")
        self._check_mode(mode)
        self._mode: MailboxMode = mode
        self._max_size = max_size
        # A list, not a deque: at most max_size (64) items, so taking the first is cheap.
        # None while empty (an idle session holds three empty mailboxes; an empty list is 56
        # bytes and one more object for the cyclic collector to walk): made by the put that
        # fills an empty box, handed out whole by the drain that empties it. Invariant: None
        # or non-empty.
        self._items: list[T] | None = None
        self._peak = 0
        self._closed = False
        # The items of tasks blocked in put(), in arrival order, and the lot they are parked
        # in (the same order: a putter parks right after queueing its item); created by the
        # first (a box that never fills, the common case, holds neither).
        self._putters: deque[_PendingPut[T]] | None = None
        self._putters_lot: trio.lowlevel.ParkingLot | None = None
        # Tasks blocked in wait_nonempty(); created by the first wait (an idle session holds
        # a few mailboxes that nobody waits on).
        self._waiters: trio.lowlevel.ParkingLot | None = None
        # Created lazily by arrival_event(); invariant: None, or set whenever the box is
        # non-empty. Dropped (not cleared: Events cannot be) once a set one is drained empty.
        self._arrival: trio.Event | None = None
        # Synchronous arrival listeners (notify_on_arrival); a tuple, replaced on change, so a
        # callback may remove itself while the tuple is being iterated.
        self._arrival_callbacks: tuple[Callable[[], None], ...] = ()

    @staticmethod
    def _check_mode(mode: str) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}, not {mode!r}")

    @property
    def mode(self) -> MailboxMode:
        """How `drain` empties the box: ``"one-at-a-time"`` or ``"all"``."""
        return self._mode

    @mode.setter
    def mode(self, mode: MailboxMode) -> None:
        self._check_mode(mode)
        self._mode = mode

    @property
    def max_size(self) -> int:
        """The capacity."""
        return self._max_size

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    @property
    def has_items(self) -> bool:
        """True if `drain` would return something."""
        return bool(self._items)

    def __len__(self) -> int:
        items = self._items
        return 0 if items is None else len(items)

    # -- producers -----------------------------------------------------------------------------

    def put_nowait(self, item: T) -> None:
        """Add ``item`` without waiting; for producers that cannot block.

        Raises:
            MailboxFull: The box holds ``max_size`` items.
            trio.ClosedResourceError: The box was closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the mailbox was closed")
        items = self._items
        if items is not None and len(items) >= self._max_size:
            raise MailboxFull(self._max_size)
        self._add(item)

    async def put(self, item: T) -> None:
        """Add ``item``, waiting while the box is full.

        Raises:
            trio.ClosedResourceError: The box was closed, before or during the wait.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise trio.ClosedResourceError("the mailbox was closed")
        items = self._items
        if items is None or len(items) < self._max_size:
            self._add(item)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        # Full. Queue the item and park; _removed() moves queued items into the box in
        # arrival order (which waking tasks to race for the room would not keep) and unparks
        # as many putters, the same ones: the lot is first in, first out too.
        pending = _PendingPut(item)
        putters = self._putters
        lot = self._putters_lot
        if putters is None or lot is None:
            putters = self._putters = deque()
            lot = self._putters_lot = trio.lowlevel.ParkingLot()
        putters.append(pending)
        try:
            await lot.park()
        except BaseException:
            if not pending.admitted:  # cancelled while queued: the lot let go of us
                putters.remove(pending)
            raise
        if pending.rejected:
            raise trio.ClosedResourceError("the mailbox was closed while put() waited")

    # -- consumer ------------------------------------------------------------------------------

    def drain(self) -> list[T]:
        """Remove and return the next items according to `mode`.

        Returns:
            ``[first]`` in ``"one-at-a-time"`` mode, every item in ``"all"`` mode, ``[]`` if
            the box is empty. Blocked `put` calls are admitted into the freed room.
        """
        items = self._items
        if not items:
            return []
        if self._mode == "all" or len(items) == 1:
            taken = items  # the box's list is handed out; the next put makes a new one
            self._items = None
        else:
            taken = [items.pop(0)]
        self._removed()
        return taken

    def clear(self) -> list[T]:
        """Remove and return every item, whatever the `mode`.

        Blocked `put` calls are then admitted, so the box may be non-empty afterwards.
        """
        taken = self._items or []
        self._items = None
        self._removed()
        return taken

    def peek_all(self) -> list[T]:
        """Return a copy of the items in the box, oldest first, without removing them."""
        return list(self._items or ())

    async def wait_nonempty(self) -> None:
        """Wait until the box holds at least one item; always a checkpoint.

        On return the box is non-empty (until the next checkpoint, if other tasks drain it).

        Raises:
            trio.EndOfChannel: The box is closed and empty, so nothing can arrive.
        """
        if self._items or self._closed:
            await trio.lowlevel.checkpoint()
        # else the park below is the checkpoint (cancellable, and a schedule point).
        while not self._items:
            if self._closed:
                raise trio.EndOfChannel
            waiters = self._waiters
            if waiters is None:
                waiters = self._waiters = trio.lowlevel.ParkingLot()
            await waiters.park()

    def arrival_event(self) -> trio.Event:
        """Return an event that is set while the box holds, or once it receives, an item.

        For reacting to arrivals while doing something else, without a waiting task: a
        ToolRunner takes the steering mailbox's event when a tool batch starts and checks
        ``event.is_set()`` before starting each call (or awaits ``event.wait()`` in a watcher
        task) to close its intake once a steering message is queued.

        The event is level-triggered at the moment of the call: already set if the box is
        non-empty, otherwise set by the next put. Draining does not un-set it (Trio events
        cannot be cleared); call again after draining to get a fresh one. All callers between
        two drains share the same event.
        """
        event = self._arrival
        if event is None:
            event = self._arrival = trio.Event()
            if self._items:
                event.set()
        return event

    def notify_on_arrival(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` synchronously, inside the put, whenever an item arrives.

        This is how a running tool batch learns of a steering message: the ToolRunner
        registers a callback that closes its intake channel, so the skip happens at the
        arrival, not at the next time someone looks. The callback must not block or raise
        (an exception propagates into the producer's ``put``). It is not called for items
        already in the box: check `has_items` after registering.

        Returns:
            A function that removes the callback; idempotent.
        """
        self._arrival_callbacks = (*self._arrival_callbacks, callback)

        def remove() -> None:
            self._arrival_callbacks = tuple(c for c in self._arrival_callbacks if c is not callback)

        return remove

    def close(self) -> None:
        """Refuse further puts; idempotent and synchronous. Items remain drainable.

        Tasks blocked in `put` raise `trio.ClosedResourceError`; tasks in `wait_nonempty`
        wake up and raise `trio.EndOfChannel` if the box is empty.
        """
        if self._closed:
            return
        self._closed = True
        putters, self._putters = self._putters, None
        for pending in putters or ():
            pending.admitted = pending.rejected = True
        if self._putters_lot is not None:
            self._putters_lot.unpark_all()
        if self._waiters is not None:
            self._waiters.unpark_all()

    def statistics(self) -> MailboxStatistics:
        """Return a snapshot of the box's depth and waiting producers."""
        return MailboxStatistics(
            size=len(self),
            peak_size=self._peak,
            max_size=self._max_size,
            waiting_putters=len(self._putters or ()),
            closed=self._closed,
        )

    # -- internals -----------------------------------------------------------------------------

    def _add(self, item: T) -> None:
        """Append ``item`` (there is room), making the list if the box was empty."""
        items = self._items
        if items is None:
            self._items = [item]
        else:
            items.append(item)
        self._arrived()

    def _arrived(self) -> None:
        """Record new items: track the peak, set the arrival event, wake waiters."""
        size = len(self)
        if size > self._peak:
            self._peak = size
        if self._arrival is not None:
            self._arrival.set()
        if self._waiters:
            self._waiters.unpark_all()
        for callback in self._arrival_callbacks:
            callback()

    def _removed(self) -> None:
        """After items were taken: admit blocked puts, retire a used arrival event."""
        putters = self._putters
        if putters:
            items = self._items
            if items is None:
                items = self._items = []
            admitted = 0
            while putters and len(items) < self._max_size:
                pending = putters.popleft()
                pending.admitted = True
                items.append(pending.item)
                admitted += 1
            assert self._putters_lot is not None  # made with _putters
            self._putters_lot.unpark(count=admitted)
            if items:
                self._arrived()
            else:
                self._items = None
        if self._items is None and self._arrival is not None and self._arrival.is_set():
            self._arrival = None
