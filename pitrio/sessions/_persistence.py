"""Reading and writing session files: the loader, the file writer and the Persistence actor.

Writing (seed 002 s.7.5, ARCHITECTURE s.6):

* A session file is only ever appended to, one complete line per entry, through one
  ``O_APPEND`` descriptor per file and **one** ``os.write`` per batch of complete lines. A process
  killed at any moment leaves every line whole except, at worst, the last one, which the loader
  skips and the next writer cuts off.
* Lazy first flush: nothing is written until the session holds an assistant message; then the
  buffered lines (header first) go out in one write, and every later entry as it comes. (pi
  rechecks the whole transcript for an assistant message on every append and, after reopening a
  file that has none, writes the already-saved lines a second time; here the writer knows which
  lines are on disk.)
* :class:`SessionFileWriter` does this synchronously; the :class:`Persistence` actor owns the
  writer of a running session, batches what was appended between two checkpoints into one write
  and reports progress to whoever waits for an entry to be on disk.

Why no worker thread: an ``os.write`` of a few kilobytes to the page cache takes microseconds
(``bench/session_io.py`` measures it), less than handing the write to a thread and back with
``trio.to_thread.run_sync`` would cost. Nothing here calls ``fsync`` per entry (pi does not
either): a killed process loses nothing the kernel has accepted; a power failure may lose the
last entries, never the lines before them. Whole-file rewrites (after a migration, when
forking) go to a temporary file that is flushed to disk and renamed over the old one.

Reading: :func:`load_session_file` parses every line once, migrates old versions, and decodes
the entries. A torn last line (a crash during a write) is skipped and reported; any other line
that is not a valid entry raises :class:`SessionFileCorrupt` with its line number. Nothing is
modified on disk while loading except the rewrite of a migrated file.
"""

from __future__ import annotations

import gc
import os
import tempfile
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import structlog
import trio

from pitrio._exceptions import UsageError
from pitrio.codec import WireFormatError, dumps, from_wire, loads
from pitrio.sessions._entries import (
    SessionEntry,
    SessionFileCorrupt,
    SessionHeader,
    SessionWriteError,
    decode_entry,
    random_entry_id,
)
from pitrio.sessions._migrations import migrate_session_entries

if TYPE_CHECKING:
    from pitrio.sessions._manager import SessionManager

log = structlog.get_logger(__name__)

PERSISTENCE_INBOX: Final = 256
"""Entries that may wait in a :class:`Persistence` actor's inbox.

An AgentSession appends a handful of entries per turn and the actor writes them at the next
checkpoint, so the inbox is almost always empty; 256 absorbs bursts (a forked session, a batch
of extension entries) without a write per entry. When it is full the appending task writes the
backlog itself (see :class:`Persistence`), so memory stays bounded and nothing is dropped.
"""

FILE_MODE: Final = 0o644
"""Permissions of new session files (before the umask)."""


# --------------------------------------------------------------------------- loading


@attrs.frozen
class LoadProblem:
    """Something the loader skipped instead of failing (reported, never silent)."""

    path: str
    line_no: int
    """1-based line number."""
    kind: Literal["torn_last_line", "extra_header"]
    """``torn_last_line``: the last line is not complete JSON (a crash during a write);
    ``extra_header``: a second session header (older pi versions wrote one on a re-flush)."""
    detail: str


@attrs.frozen
class FileTail:
    """What the loader saw at the end of the file, so a writer can append cleanly."""

    size: int
    """File size when it was read."""
    good_size: int
    """Bytes up to the end of the last complete line (``< size`` after a torn last line)."""


@attrs.frozen
class LoadedSession:
    """A parsed, migrated, decoded session file."""

    path: str
    header: SessionHeader | None
    """``None`` when the file holds no lines at all."""
    entries: list[SessionEntry]
    problems: tuple[LoadProblem, ...]
    migrated: bool
    """True when the file was an older version (and, if asked, has been rewritten)."""
    tail: FileTail | None
    """The end of the file as read (``None`` when it was not read from disk)."""


def _parse_lines(path: str, data: bytes) -> tuple[list[tuple[int, Any]], list[LoadProblem], int]:
    """Split and parse; returns (line number, object) pairs, problems, and the good size."""
    lines = data.split(b"\n")
    last = len(lines) - 1
    while last >= 0 and (not lines[last] or lines[last].isspace()):
        last -= 1
    parsed: list[tuple[int, Any]] = []
    problems: list[LoadProblem] = []
    offset = 0
    good_size = len(data)
    for index, line in enumerate(lines):
        start = offset
        offset += len(line) + 1
        if not line or line.isspace():
            continue
        try:
            obj = loads(line)
        except ValueError as exc:
            if index == last:
                good_size = start
                detail = f"torn last line skipped ({len(line)} bytes): {exc}"
                problems.append(LoadProblem(path, index + 1, "torn_last_line", detail))
                break
            raise SessionFileCorrupt(path, index + 1, f"not valid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise SessionFileCorrupt(path, index + 1, f"expected a JSON object, got {line[:80]!r}")
        parsed.append((index + 1, obj))
    return parsed, problems, good_size


def load_session_file(
    path: str,
    *,
    new_id: Callable[[], str] = random_entry_id,
    rewrite_migrated: bool = True,
) -> LoadedSession:
    """Read a session file: parse, migrate to the current version, decode.

    Args:
        path: the file (must exist).
        new_id: source of the ids the v1 -> v2 migration assigns.
        rewrite_migrated: after migrating an older file, write it back in the current version
            (atomically). ``False`` leaves the file untouched (forking from it, listing).

    Returns:
        The header (``None`` for an empty file), the entries in file order, and what was
        skipped. A torn last line is logged as a warning and listed in ``problems``.

    Raises:
        SessionFileCorrupt: a line other than the last is not JSON, a line is not a JSON object,
            the first line is not a session header, or a line does not have the shape of its
            entry type.
        OSError: the file cannot be read.
    """
    with open(path, "rb") as file:
        data = file.read()
    with _gc_paused():
        return _load(path, data, new_id, rewrite_migrated)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Decoding a long session allocates hundreds of thousands of objects that all stay alive;
    # the collector would scan them again and again (about a quarter of the load time of a
    # 10,000-entry file). Nothing else runs while this synchronous code does.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load(
    path: str, data: bytes, new_id: Callable[[], str], rewrite_migrated: bool
) -> LoadedSession:
    parsed, problems, good_size = _parse_lines(path, data)
    for problem in problems:
        log.warning(
            "session_line_skipped", path=path, line_no=problem.line_no, detail=problem.detail
        )
    tail = FileTail(size=len(data), good_size=good_size)
    if not parsed:
        return LoadedSession(path, None, [], tuple(problems), False, tail)

    first_line, first = parsed[0]
    if first.get("type") != "session" or not isinstance(first.get("id"), str):
        raise SessionFileCorrupt(path, first_line, "the first line is not a session header")

    raws = [obj for _, obj in parsed]
    migrated = migrate_session_entries(raws, new_id)
    if migrated and rewrite_migrated:
        write_file_atomically(path, [dumps(obj) + b"\n" for obj in raws])
        size = os.path.getsize(path)
        tail = FileTail(size=size, good_size=size)
        log.info("session_file_migrated", path=path)

    try:
        header = from_wire(SessionHeader, first)
    except WireFormatError as exc:
        raise SessionFileCorrupt(path, first_line, str(exc)) from exc

    entries: list[SessionEntry] = []
    append = entries.append
    for line_no, obj in parsed[1:]:
        if obj.get("type") == "session":
            problems.append(
                LoadProblem(path, line_no, "extra_header", "a second session header was skipped")
            )
            continue
        try:
            append(decode_entry(obj))
        except WireFormatError as exc:
            raise SessionFileCorrupt(path, line_no, str(exc)) from exc
    return LoadedSession(path, header, entries, tuple(problems), migrated, tail)


def write_file_atomically(path: str, lines: Sequence[bytes]) -> None:
    """Replace ``path`` with ``lines`` (each ending in a newline): temp file, fsync, rename.

    Raises:
        SessionWriteError: the file could not be written.
    """
    directory = os.path.dirname(path) or "."
    try:
        fd, temp = tempfile.mkstemp(
            dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp"
        )
    except OSError as exc:
        raise SessionWriteError(path, exc) from exc
    try:
        try:
            os.fchmod(fd, os.stat(path).st_mode & 0o777)
        except FileNotFoundError:
            os.fchmod(fd, FILE_MODE & ~_umask())
        _write_all(fd, b"".join(lines))
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        os.unlink(temp)
        raise SessionWriteError(path, exc) from exc
    os.close(fd)
    os.replace(temp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_all(fd: int, data: bytes) -> None:
    # A regular file takes the whole buffer in one call unless the disk is full or a signal
    # interrupts it; the loop makes a short write finish the line rather than tear it.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# --------------------------------------------------------------------------- the writer


class SessionFileWriter:
    """The single writer of one session file: lazy first flush, one ``os.write`` per batch.

    Lines are complete JSON lines ending in ``\\n``. :meth:`add` holds them back while
    ``flush`` is false (the session has no assistant message yet) and otherwise writes the held
    lines and the new ones together. The descriptor (``O_APPEND``) opens on the first write.

    Before the first write to an existing file the writer repairs its end: a torn last line the
    loader skipped is cut off (if the file has not changed since), and a last line without a
    newline gets one, so the new lines start on a line of their own.

    Args:
        path: the session file.
        written: file entries already on disk (header included).
        tail: what the loader saw at the end of the file.

    Resource handling:
        :meth:`close` releases the descriptor; a later :meth:`add` reopens it. :meth:`retire`
        also drops the lines still held back. A descriptor left open is closed when the writer
        is garbage collected.

    Error handling:
        A failed write raises :class:`SessionWriteError`; the writer then refuses further
        writes (a line after a short write would be glued to a torn one).
    """

    __slots__ = (
        "__weakref__",
        "_failed",
        "_fd",
        "_finalizer",
        "_pending",
        "_tail",
        "path",
        "written",
    )

    def __init__(self, path: str, *, written: int = 0, tail: FileTail | None = None) -> None:
        self.path = path
        self.written = written
        """File entries on disk, header included."""
        self._pending: list[bytes] = []
        self._fd: int | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._tail = tail
        self._failed: SessionWriteError | None = None

    @property
    def pending(self) -> int:
        """Lines held back until the session has an assistant message."""
        return len(self._pending)

    def add(self, lines: Sequence[bytes], *, flush: bool) -> int:
        """Hold ``lines`` back (``flush`` false) or write them after any held lines.

        Returns:
            The number of lines written now.

        Raises:
            SessionWriteError: the write failed (now or earlier).
        """
        if not flush:
            self._pending.extend(lines)
            return 0
        if self._pending:
            self._pending.extend(lines)
            lines = self._pending
            self._pending = []
        if not lines:
            return 0
        self._write(lines[0] if len(lines) == 1 else b"".join(lines))
        self.written += len(lines)
        return len(lines)

    def _write(self, data: bytes) -> None:
        if self._failed is not None:
            raise self._failed
        try:
            fd = self._fd if self._fd is not None else self._open()
            _write_all(fd, data)
        except OSError as exc:
            self._failed = SessionWriteError(self.path, exc)
            raise self._failed from exc

    def _open(self) -> int:
        # Read access only to look at the last byte before the first append.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, FILE_MODE)
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)
        tail, self._tail = self._tail, None
        size = os.fstat(fd).st_size
        if tail is not None and tail.good_size < tail.size and size == tail.size:
            os.ftruncate(fd, tail.good_size)
            log.warning(
                "session_torn_line_removed",
                path=self.path,
                offset=tail.good_size,
                bytes=tail.size - tail.good_size,
            )
            size = tail.good_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            _write_all(fd, b"\n")
        return fd

    def close(self) -> None:
        """Release the descriptor (held-back lines are kept; a later write reopens it)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._fd = None

    def retire(self) -> int:
        """Close for good, dropping held-back lines (a session left before any answer).

        Returns:
            The number of lines dropped.
        """
        dropped = len(self._pending)
        self._pending = []
        self.close()
        return dropped


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
    """The actor that writes a file-backed :class:`SessionManager` of a running session.

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

    def __init__(self, manager: SessionManager, *, inbox_size: int = PERSISTENCE_INBOX) -> None:
        if inbox_size < 1:
            raise ValueError("inbox_size must be at least 1")
        self._manager = manager
        self._inbox: deque[_Item] = deque()
        self._max_queued = inbox_size
        self._wakeup = trio.Event()
        self._progress = trio.Event()
        self._closing = False
        self._running = False
        self._submitted = 0
        self._processed = 0
        self._peak_queued = 0
        self._batches = 0
        self._inline_batches = 0

    @property
    def manager(self) -> SessionManager:
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

        Raises:
            UsageError: the manager already has a Persistence actor, or this one runs already.
            SessionWriteError: a write failed.
        """
        if self._running or self._closing:
            raise UsageError("a Persistence actor runs once")
        self._manager._attach(self)
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
                    self._wakeup = trio.Event()
                    await self._wakeup.wait()
        finally:
            self._running = False
            self._closing = True
            try:
                self._drain_now()
            finally:
                self._manager._detach(self)
                self._notify()

    async def aclose(self) -> None:
        """End the actor once it has written what is queued (idempotent)."""
        self._closing = True
        self._wakeup.set()
        await trio.lowlevel.checkpoint()

    async def wait_processed(self, count: int) -> None:
        """Wait until the first ``count`` submitted entries are written or held back."""
        while self._processed < count and self._running:
            await self._progress.wait()
        await trio.lowlevel.checkpoint()

    async def wait_progress(self) -> None:
        """Wait for the actor's next batch (or for it to stop)."""
        if self._running:
            await self._progress.wait()
        else:
            await trio.lowlevel.checkpoint()

    # -- called by the manager (same thread, no checkpoint in between)

    def _submit(self, writer: SessionFileWriter, line: bytes, flush: bool) -> None:
        self._submitted += 1
        inbox = self._inbox
        if len(inbox) >= self._max_queued or not self._running:
            # Caller runs: write the backlog and this entry now, in order.
            inbox.append((writer, line, flush))
            self._drain_now()
            self._inline_batches += 1
            return
        inbox.append((writer, line, flush))
        if len(inbox) > self._peak_queued:
            self._peak_queued = len(inbox)
        if len(inbox) == 1:
            self._wakeup.set()

    def _drain_now(self) -> None:
        """Write everything queued, synchronously (also a barrier before switching files)."""
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

    def _notify(self) -> None:
        self._progress.set()
        self._progress = trio.Event()


@asynccontextmanager
async def open_persistence(
    manager: SessionManager, *, inbox_size: int = PERSISTENCE_INBOX
) -> AsyncIterator[Persistence]:
    """Run a :class:`Persistence` actor for ``manager`` for the duration of the block.

    Leaving the block writes what is still queued and detaches the actor.
    """
    async with trio.open_nursery() as nursery:
        persistence: Persistence = await nursery.start(
            Persistence(manager, inbox_size=inbox_size).run
        )
        try:
            yield persistence
        finally:
            await persistence.aclose()
