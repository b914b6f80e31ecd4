"""The Persistence actor: writes a running session's file from the event loop.

A file-backed :class:`~pitrio.sessions.SessionManager` writes through a
:class:`~pitrio.sessions.SessionFileWriter` (lazy first flush, one ``os.write`` per batch of
complete lines, one writer per file: see :mod:`._writer` and :mod:`._files`). In a running
session the :class:`Persistence` actor takes the writing over: the manager hands it every
encoded entry, it batches what was appended between two checkpoints into one write, and it
reports progress to whoever waits for an entry to be on disk.

Why no worker thread: an ``os.write`` of a few kilobytes to the page cache takes microseconds
(``bench/session_io.py`` measures it), less than handing the write to a thread and back with
``trio.to_thread.run_sync`` would cost. Nothing here calls ``fsync`` per entry (pi does not
either): a killed process loses nothing the kernel has accepted; a power failure may lose the
last entries, never the lines before them. Whole-file work (loading, migrating, forking,
listing) does go to a thread, through :func:`~pitrio.sessions.run_file_work`.

The actor knows its session only through :class:`PersistenceHost` (attach and detach); the
manager calls the actor's :meth:`Persistence.submit` and :meth:`Persistence.drain`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final, Protocol

import attrs
import trio

from pitrio._exceptions import UsageError
from pitrio.sessions.storage._writer import SessionFileWriter

PERSISTENCE_INBOX: Final = 256
"""Entries that may wait in a :class:`Persistence` actor's inbox.

An AgentSession appends a handful of entries per turn and the actor writes them at the next
checkpoint, so the inbox is almost always empty; 256 absorbs bursts (a forked session, a batch
of extension entries) without a write per entry. When it is full the appending task writes the
backlog itself (see :class:`Persistence`), so memory stays bounded and nothing is dropped.
"""


class PersistenceHost(Protocol):
    """What a :class:`Persistence` actor needs from the session it writes
    (:class:`~pitrio.sessions.SessionManager` is one)."""

    def attach_persistence(self, persistence: Persistence) -> None:
        """Route appends to ``persistence`` from now on.

        Raises:
            UsageError: another actor is attached.
            SessionLocked: another writer holds the session file.
        """

    def detach_persistence(self, persistence: Persistence) -> None:
        """Write synchronously again (no-op unless ``persistence`` is the attached actor)."""


# --------------------------------------------------------------------------- the actor


@attrs.frozen
class PersistenceStatistics:
    """A snapshot of a :class:`Persistence` actor (:meth:`Persistence.statistics`)."""

    queued: int
    """Entries in the inbox now."""
    peak_queued: int
    """The most entries the inbox has held."""
    max_queued: int
    """The inbox capacity."""
    submitted: int
    """Entries handed to the actor."""
    processed: int
    """Entries written or, before the first assistant message, held back by the writer."""
    batches: int
    """Write batches the actor ran."""
    inline_batches: int
    """Batches the appending task ran itself because the inbox was full."""


_Item = tuple[SessionFileWriter, bytes, bool]


class Persistence:
    """The actor that writes a file-backed :class:`~pitrio.sessions.SessionManager` of a
    running session.

    ::

        async with open_persistence(manager) as persistence:
            entry_id = manager.append_message(message)   # returns at once
            await manager.wait_persisted(entry_id)       # True once the line is on disk

    While it runs, the manager hands it every encoded entry (``append_*`` stay synchronous and
    never wait); the actor wakes at the next checkpoint and writes everything queued in one
    ``os.write`` (lazy first flush as :class:`SessionFileWriter`). Entries are written in append
    order.

    Buffering:
        The inbox holds at most ``inbox_size`` entries (default :data:`PERSISTENCE_INBOX`). When
        it is full, the appending task writes the backlog and its entry itself: bounded memory,
        and the producer, not the file, pays for going faster than the actor. (The inbox is a
        deque the actor empties in one go rather than a memory channel: a channel hands the
        first entry straight to the waiting actor task, and the appender could then no longer
        write the backlog without overtaking that entry.)

    Resource handling:
        :meth:`run` attaches the actor to the manager and detaches it when it ends, writing
        whatever is still queued first (synchronously, so even a cancelled actor loses
        nothing). :meth:`aclose` ends it. The manager keeps its writer, so appends after
        detaching are written synchronously.

    Error handling:
        A failed write (:class:`SessionWriteError`) ends :meth:`run` with that error, which the
        owning nursery sees; the entries already written stay valid.
    """

    def __init__(self, manager: PersistenceHost, *, inbox_size: int = PERSISTENCE_INBOX) -> None:
        if inbox_size < 1:
            raise ValueError("inbox_size must be at least 1")
        self._manager = manager
        # A list, not a deque: the actor takes it whole, and an empty list costs 56 bytes
        # against a deque's 768 (an idle session's actor holds an empty inbox).
        self._inbox: list[_Item] = []
        self._max_queued = inbox_size
        # Both created when someone waits (the idle actor has no task and no waiter).
        self._wakeup: trio.Event | None = None
        self._progress: trio.Event | None = None
        self._starter: trio.Nursery | None = None
        self._closing = False
        self._running = False
        self._attached = False
        self._submitted = 0
        self._processed = 0
        self._peak_queued = 0
        self._batches = 0
        self._inline_batches = 0

    @property
    def manager(self) -> PersistenceHost:
        """The session this actor writes."""
        return self._manager

    @property
    def running(self) -> bool:
        """True while :meth:`run` serves the manager."""
        return self._running

    @property
    def submitted(self) -> int:
        """Entries handed to the actor so far."""
        return self._submitted

    @property
    def processed(self) -> int:
        """Entries written or held back so far (``processed == submitted`` when idle)."""
        return self._processed

    def statistics(self) -> PersistenceStatistics:
        """A snapshot of the inbox and counters."""
        return PersistenceStatistics(
            queued=len(self._inbox),
            peak_queued=self._peak_queued,
            max_queued=self._max_queued,
            submitted=self._submitted,
            processed=self._processed,
            batches=self._batches,
            inline_batches=self._inline_batches,
        )

    async def run(
        self, *, task_status: trio.TaskStatus[Persistence] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the manager until :meth:`aclose` or cancellation.

        The host takes its session file's write lock when the actor attaches to it (for a
        file that exists; a new file is locked as it is created).

        Raises:
            UsageError: the manager already has a Persistence actor, or this one runs already.
            SessionLocked: another writer holds the session file (before ``started``).
            SessionFileChanged: the file changed on disk since the manager read it.
            SessionWriteError: a write failed.
        """
        if self._running or self._closing:
            raise UsageError("a Persistence actor runs once")
        self.attach()
        self._running = True
        try:
            task_status.started(self)
            while True:
                if self._inbox:
                    batch = list(self._inbox)
                    self._inbox.clear()
                    self._process(batch)
                    self._batches += 1
                    self._notify()
                elif self._closing:
                    break
                else:
                    wakeup = self._wakeup = trio.Event()
                    await wakeup.wait()
        finally:
            self._running = False
            self._closing = True
            try:
                self.drain()
            finally:
                self._attached = False
                self._manager.detach_persistence(self)
                self._notify()

    def attach(self) -> None:
        """Attach to the host now (idempotent); :meth:`run` then serves it.

        :meth:`run` attaches by itself; calling this first, outside the nursery that runs the
        actor, makes a refusal (:class:`~pitrio.sessions.SessionLocked` ...) surface as itself
        instead of inside the nursery's exception group. Until :meth:`run` starts, appends are
        written by the appending task.

        Raises:
            UsageError: the host has another actor, or this one has run already.
            SessionLocked: another writer holds the session file.
            SessionFileChanged: the file changed on disk since the host read it.
        """
        if self._attached:
            return
        if self._running or self._closing:
            raise UsageError("a Persistence actor runs once")
        self._manager.attach_persistence(self)
        self._attached = True

    def start_on_demand(self, nursery: trio.Nursery) -> None:
        """Start :meth:`run` in ``nursery`` with the first submitted entry, not now.

        An idle session has nothing to write, so it keeps no task for it: the first entry is
        written by the appending task (as when the actor is not running), and the actor serves
        the entries after it. Call :meth:`attach` first (the file's lock is taken there) and
        :meth:`detach` once ``nursery`` has closed (it releases the lock if the actor never
        ran).
        """
        self._starter = nursery

    def detach(self) -> None:
        """Write what is queued and detach from the host, unless :meth:`run` ran (its end
        does both); for an owner whose actor may never have started. Idempotent."""
        self._starter = None
        if self._attached and not self._running:
            self._closing = True
            try:
                self.drain()
            finally:
                self._attached = False
                self._manager.detach_persistence(self)
                self._notify()

    async def aclose(self) -> None:
        """End the actor once it has written what is queued (idempotent)."""
        self._closing = True
        if self._wakeup is not None:
            self._wakeup.set()
        await trio.lowlevel.checkpoint()

    async def wait_processed(self, count: int) -> None:
        """Wait until the first ``count`` submitted entries are written or held back."""
        while self._processed < count and self._running:
            await self._progress_event().wait()
        await trio.lowlevel.checkpoint()

    async def wait_progress(self) -> None:
        """Wait for the actor's next batch (or for it to stop)."""
        if self._running:
            await self._progress_event().wait()
        else:
            await trio.lowlevel.checkpoint()

    # -- called by the host (same thread, no checkpoint in between)

    def submit(self, writer: SessionFileWriter, line: bytes, flush: bool) -> None:
        """Queue one encoded entry for ``writer`` (``flush``: the session has an answer).

        Never waits: when the inbox is full (or the actor is not running) the calling task
        writes the backlog and this entry itself, in order.

        Raises:
            SessionError: the inline write failed (see :meth:`SessionFileWriter.add`).
        """
        self._submitted += 1
        inbox = self._inbox
        if len(inbox) >= self._max_queued or not self._running:
            # Caller runs: write the backlog and this entry now, in order.
            inbox.append((writer, line, flush))
            self.drain()
            self._inline_batches += 1
            starter = self._starter
            if starter is not None and not self._running and not self._closing:
                self._starter = None
                starter.start_soon(self.run)
            return
        inbox.append((writer, line, flush))
        if len(inbox) > self._peak_queued:
            self._peak_queued = len(inbox)
        if len(inbox) == 1 and self._wakeup is not None:
            self._wakeup.set()

    def drain(self) -> None:
        """Write everything queued, synchronously (the host's barrier before it switches or
        rewrites its file)."""
        if self._inbox:
            batch = list(self._inbox)
            self._inbox.clear()
            self._process(batch)
            self._notify()

    def _process(self, batch: list[_Item]) -> None:
        start = 0
        while start < len(batch):
            writer = batch[start][0]
            end = start + 1
            while end < len(batch) and batch[end][0] is writer:
                end += 1
            self._processed += end - start
            writer.add([item[1] for item in batch[start:end]], flush=batch[end - 1][2])
            start = end

    def _progress_event(self) -> trio.Event:
        if self._progress is None:
            self._progress = trio.Event()
        return self._progress

    def _notify(self) -> None:
        if self._progress is not None:
            self._progress.set()
            self._progress = None


@asynccontextmanager
async def open_persistence(
    manager: PersistenceHost, *, inbox_size: int = PERSISTENCE_INBOX
) -> AsyncIterator[Persistence]:
    """Run a :class:`Persistence` actor for ``manager`` for the duration of the block.

    Leaving the block writes what is still queued and detaches the actor.

    Raises:
        SessionLocked: another writer holds the session file (raised as itself on entry).
        SessionFileChanged: the file changed on disk since the manager read it.
    """
    persistence = Persistence(manager, inbox_size=inbox_size)
    persistence.attach()
    async with trio.open_nursery() as nursery:
        await nursery.start(persistence.run)
        try:
            yield persistence
        finally:
            await persistence.aclose()
