"""File primitives of the session layer: the file-work limiter, atomic rewrites, the write lock.

Blocking file work from Trio
    Loading, migrating, forking and listing sessions (and writing settings) read or write whole
    files; from a Trio task they go through :func:`run_file_work`, which runs the synchronous
    function in a worker thread under :func:`file_limiter`, one
    :class:`trio.CapacityLimiter` per Trio run shared by every caller, so a burst of such work
    (a host opening a thousand sessions) occupies at most :data:`FILE_WORK_THREADS` threads.
    Appending a line to an open session file is not file work in this sense: one ``os.write``
    to the page cache costs less than the trip to a thread (see :mod:`._persistence`).

One writer per session file
    Whoever writes a session file first takes an exclusive, non-blocking ``flock`` on it
    (:func:`lock_session_file`) and keeps it while it may write: a :class:`SessionFileWriter`
    from its first write (or from the moment a :class:`~pitrio.sessions.Persistence` actor
    starts serving an existing file) until it is closed. A second writer, in another process or
    in this one, gets :class:`SessionLocked` naming the file and, on Linux, the holder's pid
    (read from ``/proc/locks``; no lock file is created, and the kernel drops the lock when its
    holder exits, so a crash never leaves a stale lock behind). Rewrites that replace the file
    (the migration of an old version, the header of an empty file) take the lock first and
    check that the file is still the one that was read. Readers (listing, loading, building a
    context) never take the lock. The lock is advisory: only writers that ask for it (pitrio
    processes) are kept out; pi 0.73.1 does not lock.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Final, TypeVar, TypeVarTuple

import trio

from pitrio.sessions.storage._entries import SessionFileChanged, SessionLocked, SessionWriteError

FILE_MODE: Final = 0o644
"""Permissions of new session files (before the umask)."""

FILE_WORK_THREADS: Final = 4
"""Worker threads that may do session and settings file work at once (per Trio run).

The work is short and mostly waits on the disk; a few threads overlap that waiting while a
burst of opens cannot fill the process with threads.
"""

LOCK_ATTEMPTS: Final = 8
"""How often :func:`lock_session_file` retries when the path was replaced under it."""

_limiter_var: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar(
    "pitrio_file_limiter"
)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def file_limiter() -> trio.CapacityLimiter:
    """The limiter for blocking file work of the current Trio run (created on first use).

    Raises:
        RuntimeError: called outside a Trio run.
    """
    try:
        return _limiter_var.get()
    except LookupError:
        limiter = trio.CapacityLimiter(FILE_WORK_THREADS)
        _limiter_var.set(limiter)
        return limiter


async def run_file_work(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run blocking file work ``fn(*args)`` in a worker thread under :func:`file_limiter`.

    Cancellation waits for the thread to finish (a half-done rewrite is never abandoned).
    """
    return await trio.to_thread.run_sync(fn, *args, limiter=file_limiter())


# --------------------------------------------------------------------------- writing


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``.

    A regular file takes the whole buffer in one call unless the disk is full or a signal
    interrupts it; the loop makes a short write finish the line rather than tear it.
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_temp(path: str, data: bytes) -> tuple[int, str]:
    """A flushed temporary file next to ``path`` holding ``data``: (descriptor, name)."""
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, os.stat(path).st_mode & 0o777)
        except FileNotFoundError:
            os.fchmod(fd, FILE_MODE & ~_umask())
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    return fd, temp


def write_file_atomically(path: str, lines: Sequence[bytes]) -> None:
    """Replace ``path`` with ``lines`` (each ending in a newline): temp file, fsync, rename.

    No lock is taken: use it for a file no one else can know yet (a fork's new file), and
    :func:`replace_locked` for an existing session file.

    Raises:
        SessionWriteError: the file could not be written.
    """
    try:
        fd, temp = _write_temp(path, b"".join(lines))
    except OSError as exc:
        raise SessionWriteError(path, exc) from exc
    os.close(fd)
    os.replace(temp, path)


def replace_locked(path: str, lines: Sequence[bytes], *, expected_size: int) -> int:
    """Replace an existing session file atomically while holding its write lock.

    Args:
        path: the session file.
        lines: the new contents, one complete line each.
        expected_size: the file's size when it was read; a different size means another
            process wrote it since, and nothing is replaced.

    Returns:
        The size of the new file.

    Raises:
        SessionLocked: another writer holds the file.
        SessionFileChanged: the file is not the one that was read.
        SessionWriteError: the file could not be written.
    """
    data = b"".join(lines)
    fd = lock_session_file(path, create=False)
    try:
        check_size(path, fd, expected_size)
        try:
            temp_fd, temp = _write_temp(path, data)
        except OSError as exc:
            raise SessionWriteError(path, exc) from exc
        os.close(temp_fd)
        # Renamed while the old file is still locked: a writer that opened the old file and
        # waits for it sees, once it gets the lock, that the path names another file now.
        os.replace(temp, path)
    finally:
        os.close(fd)
    return len(data)


# --------------------------------------------------------------------------- the write lock


def check_size(path: str, fd: int, expected_size: int) -> None:
    """Raise :class:`SessionFileChanged` unless the open file has ``expected_size`` bytes."""
    size = os.fstat(fd).st_size
    if size != expected_size:
        raise SessionFileChanged(path, expected_size, size)


def lock_session_file(path: str, *, create: bool) -> int:
    """Open ``path`` for appending and take its exclusive write lock (non-blocking).

    Args:
        path: the session file.
        create: create the file if it does not exist (a new session's first write);
            otherwise a missing file raises :class:`SessionFileChanged`.

    Returns:
        The descriptor (``O_RDWR | O_APPEND``); closing it releases the lock.

    Raises:
        SessionLocked: another descriptor (another process, or another writer of this one)
            holds the lock.
        SessionFileChanged: the file does not exist and ``create`` is false.
        OSError: the file cannot be opened.
    """
    flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    if create:
        flags |= os.O_CREAT
    for _ in range(LOCK_ATTEMPTS):
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileNotFoundError:
            raise SessionFileChanged(path, 0, None) from None
        try:
            if not _try_lock(fd):
                raise SessionLocked(path, lock_holder(fd))
            # The path may have been replaced (an atomic rewrite) between the open and the
            # lock; then this lock guards a file no one will open again: start over.
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise SessionLocked(path, None)


def _same_file(fd: int, path: str) -> bool:
    opened = os.fstat(fd)
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)


if sys.platform == "win32":  # pragma: no cover - pitrio's CI runs on POSIX systems

    def _try_lock(fd: int) -> bool:
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


PROC_LOCKS: Final = "/proc/locks"


def lock_holder(fd: int, proc_locks: str = PROC_LOCKS) -> int | None:
    """The pid holding a ``flock`` write lock on the open file ``fd``, where the system says.

    Linux lists every lock in ``/proc/locks`` with the holder's pid and the file's
    ``major:minor:inode`` (the device numbers in hex). Elsewhere, or when the entry cannot be
    told apart, the answer is ``None``.
    """
    try:
        stat = os.fstat(fd)
        with open(proc_locks, encoding="ascii", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    wanted = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    inode = str(stat.st_ino)
    exact: set[int] = set()
    same_inode: set[int] = set()
    for line in text.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF"; waiters read "1: -> FLOCK ...".
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or parts[3] != "WRITE":
            continue
        try:
            pid = int(parts[4])
        except ValueError:
            continue
        if pid <= 0:
            continue
        if parts[5] == wanted:
            exact.add(pid)
        elif parts[5].rsplit(":", 1)[-1] == inode:
            same_inode.add(pid)
    # Some filesystems (overlays) report another device than stat does: fall back to the
    # inode when that is unambiguous.
    candidates = exact or same_inode
    return next(iter(candidates)) if len(candidates) == 1 else None
