"""The single writer of one session file (seed 002 s.7.5, ARCHITECTURE s.6).

* A session file is only ever appended to, one complete line per entry, through one
  ``O_APPEND`` descriptor per file and **one** ``os.write`` per batch of complete lines. A process
  killed at any moment leaves every line whole except, at worst, the last one, which the loader
  skips and the next writer cuts off.
* Lazy first flush: nothing is written until the session holds an assistant message; then the
  buffered lines (header first) go out in one write, and every later entry as it comes. (pi
  rechecks the whole transcript for an assistant message on every append and, after reopening a
  file that has none, writes the already-saved lines a second time; here the writer knows which
  lines are on disk.)
* One writer per file: the descriptor carries the file's exclusive ``flock`` (see
  :mod:`._files`), taken when the file is opened for the first write (or created) and held
  until :meth:`SessionFileWriter.close`. The writer also knows how large the file was when it
  was read (or last written) and refuses to append to a file that has changed since.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from pitrio.sessions.storage._entries import SessionWriteError
from pitrio.sessions.storage._files import check_size, lock_session_file, write_all
from pitrio.sessions.storage._loader import FileTail

log = structlog.get_logger("pitrio.sessions.storage._persistence")


class SessionFileWriter:
    """The single writer of one session file: lazy first flush, one ``os.write`` per batch.

    Lines are complete JSON lines ending in ``\\n``. :meth:`add` holds them back while
    ``flush`` is false (the session has no assistant message yet) and otherwise writes the held
    lines and the new ones together. The descriptor (``O_APPEND``) opens on the first write, or
    on :meth:`acquire`.

    Before the first write to an existing file the writer repairs its end: a torn last line the
    loader skipped is cut off, and a last line without a newline gets one, so the new lines
    start on a line of their own.

    Args:
        path: the session file.
        written: file entries already on disk (header included).
        tail: what the loader saw at the end of the file. Without it, a writer with
            ``written == 0`` expects a new file (missing or empty) and one with ``written > 0``
            does not check the file's size.

    Resource handling:
        Opening the file takes its write lock; :meth:`close` releases the descriptor and the
        lock, and a later :meth:`add` reopens it (if the file has not changed meanwhile).
        :meth:`retire` also drops the lines still held back. A descriptor left open is closed
        when the writer is garbage collected.

    Error handling:
        :class:`~pitrio.sessions.SessionLocked` when another writer holds the file,
        :class:`~pitrio.sessions.SessionFileChanged` when it is not the file that was read
        (nothing is written in either case; a later call tries again). A failed write raises
        :class:`SessionWriteError`; the writer then refuses further writes (a line after a
        short write would be glued to a torn one).
    """

    __slots__ = (
        "__weakref__",
        "_expected_size",
        "_failed",
        "_fd",
        "_fenced",
        "_finalizer",
        "_pending",
        "_tail",
        "guard",
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
        self._fenced = False
        self.guard: Callable[[], bool] | None = None
        """Asked before every write; when it returns False nothing is written and the writer
        fences itself (:meth:`fence`): for a file another writer may own from that moment
        (a cluster node's session whose lease lapsed)."""
        self._expected_size: int | None = (
            tail.size if tail is not None else (0 if written == 0 else None)
        )

    @property
    def pending(self) -> int:
        """Lines held back until the session has an assistant message."""
        return len(self._pending)

    @property
    def holds_lock(self) -> bool:
        """True while the writer has the file open (and so holds its write lock)."""
        return self._fd is not None

    def acquire(self) -> None:
        """Open the file and take its write lock now, without writing (idempotent).

        A running session calls this when it starts on an existing file, so a second writer
        is refused at once rather than at its first append.

        Raises:
            SessionLocked: another writer holds the file.
            SessionFileChanged: the file changed since it was read (or was removed).
            SessionWriteError: the file cannot be opened.
        """
        if self._fd is None:
            try:
                self._open()
            except OSError as exc:
                raise SessionWriteError(self.path, exc) from exc

    def add(self, lines: Sequence[bytes], *, flush: bool) -> int:
        """Hold ``lines`` back (``flush`` false) or write them after any held lines.

        Returns:
            The number of lines written now.

        Raises:
            SessionLocked: another writer holds the file (the lines stay held back).
            SessionFileChanged: the file changed since it was read (the lines stay held back).
            SessionWriteError: the write failed (now or earlier).
        """
        if self._fenced:
            return 0
        if not flush:
            self._pending.extend(lines)
            return 0
        if self._pending:
            lines = [*self._pending, *lines]
        if not lines:
            return 0
        if self.guard is not None and not self.guard():
            self.fence()
            return 0
        self._write(lines[0] if len(lines) == 1 else b"".join(lines))
        self._pending = []
        self.written += len(lines)
        return len(lines)

    def _write(self, data: bytes) -> None:
        if self._failed is not None:
            raise self._failed
        try:
            fd = self._fd if self._fd is not None else self._open()
        except OSError as exc:
            raise SessionWriteError(self.path, exc) from exc
        try:
            write_all(fd, data)
        except OSError as exc:
            self._failed = SessionWriteError(self.path, exc)
            raise self._failed from exc

    def _open(self) -> int:
        # Read access only to look at the last byte before the first append.
        expected = self._expected_size
        fd = lock_session_file(self.path, create=expected == 0)
        try:
            if expected is not None:
                check_size(self.path, fd, expected)
            tail, self._tail = self._tail, None
            size = os.fstat(fd).st_size
            if tail is not None and tail.good_size < tail.size:
                os.ftruncate(fd, tail.good_size)
                log.warning(
                    "session_torn_line_removed",
                    path=self.path,
                    offset=tail.good_size,
                    bytes=tail.size - tail.good_size,
                )
                size = tail.good_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                write_all(fd, b"\n")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)
        return fd

    def close(self) -> None:
        """Release the descriptor and the lock (held-back lines are kept; a later write
        reopens the file if no one else has written it meanwhile)."""
        if self._fd is not None:
            try:
                self._expected_size = os.fstat(self._fd).st_size
            except OSError:
                self._expected_size = None
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._fd = None

    def fence(self) -> None:
        """Write nothing more, ever: drop what is held back, release the file and its lock,
        and let every later :meth:`add` drop its lines (another writer owns the file now)."""
        self._fenced = True
        self.retire()

    def retire(self) -> int:
        """Close for good, dropping held-back lines (a session left before any answer).

        Returns:
            The number of lines dropped.
        """
        dropped = len(self._pending)
        self._pending = []
        self.close()
        return dropped
