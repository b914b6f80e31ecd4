"""The ``auth.json`` lock, compatible with pi's (proper-lockfile 4.1.2 as pi 0.73.1 uses it).

pi locks ``auth.json`` by creating the *directory* ``auth.json.lock`` with ``mkdir`` (atomic on
every local filesystem) and removing it when done. A lock is stale when its mtime is older than
:data:`LOCK_STALE` seconds (pi's refresh passes ``stale: 30000``); a waiter removes a stale lock
and takes it. While it holds the lock the holder sets the directory's mtime to the current time
every :data:`LOCK_UPDATE` seconds, so a live holder never looks stale. If the lock's mtime is
not the one the holder last set, or the directory is gone, someone took the lock over: the lock
is *compromised* and the holder must not write (pi throws instead of writing; so does pitrio,
with :class:`AuthLockCompromised`).

pi keeps the mtime fresh every 15 s (half its 30 s staleness), but its synchronous reads
(``AuthStorage.reload``, ``set``) use proper-lockfile's default staleness of 10 s; pitrio
refreshes every :data:`LOCK_UPDATE` seconds, under both, so neither of pi's paths takes a lock
pitrio holds.

Waiting for a held lock sleeps with :func:`trio.sleep` (so a test's ``MockClock`` drives it);
staleness compares the directory's mtime with ``clock()``, the wall clock by default, which a
test may replace to let virtual time age a lock.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final

import attrs
import trio

from pitrio.channels import open_body_nursery
from pitrio.providers._registry import ProviderError
from pitrio.providers.credentials._auth_file import run_auth_file_work

LOCK_SUFFIX: Final = ".lock"
"""The lock of ``auth.json`` is the directory ``auth.json.lock`` (proper-lockfile's name)."""

LOCK_STALE: Final = 30.0
"""Seconds after its last mtime update at which a lock counts as abandoned (pi: 30000 ms)."""

LOCK_UPDATE: Final = 5.0
"""Seconds between mtime updates while the lock is held (under pi's shortest staleness)."""

LOCK_POLL_MIN: Final = 0.05
LOCK_POLL_MAX: Final = 1.0
"""Waiting for a held lock polls from ``LOCK_POLL_MIN`` seconds, doubling up to this."""

LOCK_WAIT_TIMEOUT: Final = 90.0
"""Seconds to wait for a lock before :class:`AuthLockTimeout` (a live holder keeps it fresh,
a dead one's lock is stale after :data:`LOCK_STALE`; pi gives up after about 100 s)."""


class AuthLockTimeout(ProviderError, TimeoutError):
    """The ``auth.json`` lock stayed held by a live holder for the whole wait.

    Attributes:
        path: the lock directory.
    """

    def __init__(self, path: str) -> None:
        super().__init__(f"timed out waiting for the lock {path}")
        self.path = path


class AuthLockCompromised(ProviderError):
    """The ``auth.json`` lock was taken over or removed while held: nothing was written.

    Attributes:
        path: the lock directory.
    """

    def __init__(self, path: str) -> None:
        super().__init__(f"the lock {path} was taken over while held")
        self.path = path


def lock_path(auth_path: str) -> str:
    """The lock directory of ``auth_path``: beside the file a symlink points to, as pi's
    refresh lock is (proper-lockfile resolves the real path by default)."""
    return os.path.realpath(auth_path) + LOCK_SUFFIX


@attrs.define
class HeldLock:
    """A held ``auth.json`` lock (see :func:`hold_auth_lock`)."""

    path: str
    """The lock directory."""
    mtime: float
    """The mtime this holder last gave the directory."""
    compromised: bool = False
    """Set once the directory is gone or carries someone else's mtime."""

    def check(self) -> None:
        """Raise :class:`AuthLockCompromised` if the lock is no longer this holder's."""
        if self.compromised:
            raise AuthLockCompromised(self.path)


def _try_mkdir(path: str, stale: float, now: float) -> float | None:
    """One attempt at wall time ``now``: the new lock's mtime, or ``None`` while someone else
    holds it. (The clock is read by the caller: a test's clock may need the Trio run.)"""
    for _ in range(2):
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        else:
            os.utime(path, (now, now))
            return os.stat(path).st_mtime
        try:
            held_since = os.stat(path).st_mtime
        except FileNotFoundError:
            continue  # released between mkdir and stat: try once more
        if held_since >= now - stale:
            return None
        # Abandoned: remove it and try again (proper-lockfile does the same, skipping the
        # stale check on its second try so two waiters cannot remove each other's new lock).
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)
        stale = float("inf")
    return None


def _touch(lock: HeldLock, now: float) -> None:
    try:
        current = os.stat(lock.path).st_mtime
        if current != lock.mtime:
            lock.compromised = True
            return
        os.utime(lock.path, (now, now))
        lock.mtime = os.stat(lock.path).st_mtime
    except FileNotFoundError:
        lock.compromised = True
    except OSError:
        # A passing failure (proper-lockfile retries too); the next update tries again.
        pass


def _release(lock: HeldLock) -> None:
    if lock.compromised:
        return
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(lock.path)


async def keep_lock_fresh(lock: HeldLock, *, clock: Callable[[], float] = time.time) -> None:
    """Set the held lock's mtime to now every :data:`LOCK_UPDATE` seconds; never returns
    unless the lock is found compromised (then :attr:`HeldLock.compromised` is set).

    Run it in a nursery beside the work done under the lock, and cancel it after.
    """
    while not lock.compromised:
        await trio.sleep(LOCK_UPDATE)
        await run_auth_file_work(_touch, lock, clock())


async def acquire_auth_lock(
    auth_path: str,
    *,
    stale: float = LOCK_STALE,
    wait_limit: float = LOCK_WAIT_TIMEOUT,
    clock: Callable[[], float] = time.time,
) -> HeldLock:
    """Take the lock of ``auth_path``, waiting while a live holder has it.

    Does not exclude other tasks of this process by itself: callers in one process serialise
    on a :class:`trio.Lock` first (see :class:`~pitrio.providers.credentials.CredentialStore`).

    Args:
        auth_path: the ``auth.json`` whose lock to take (the file need not exist, its
            directory must).
        stale: seconds after which a lock nobody refreshes is taken over.
        wait_limit: seconds to wait for a held lock.
        clock: the wall clock in seconds, compared with the lock's mtime.

    Returns:
        The held lock. Keep it fresh with :func:`keep_lock_fresh`, call
        :meth:`HeldLock.check` right before writing, and end with :func:`release_auth_lock`.

    Raises:
        AuthLockTimeout: the lock stayed held for ``wait_limit`` seconds.
        OSError: the lock directory cannot be created (no such directory, no permission).

    Cancellation: the wait can be cancelled; a lock taken is returned, never left behind.
    """
    path = lock_path(auth_path)
    delay = LOCK_POLL_MIN
    with trio.move_on_after(wait_limit):
        while True:
            mtime = await run_auth_file_work(_try_mkdir, path, stale, clock())
            if mtime is not None:
                return HeldLock(path=path, mtime=mtime)
            await trio.sleep(delay)
            delay = min(delay * 2, LOCK_POLL_MAX)
    raise AuthLockTimeout(path)


async def release_auth_lock(lock: HeldLock) -> None:
    """Remove the lock directory (not if the lock was taken over); shielded from cancellation."""
    with trio.CancelScope(shield=True):
        await run_auth_file_work(_release, lock)


@asynccontextmanager
async def hold_auth_lock(
    auth_path: str,
    *,
    stale: float = LOCK_STALE,
    wait_limit: float = LOCK_WAIT_TIMEOUT,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[HeldLock]:
    """Hold the lock of ``auth_path`` for the block (:func:`acquire_auth_lock`'s arguments).

    Resource handling:
        The lock is kept fresh while the block runs and released when it ends, even by
        cancellation. A cancelled block stops refreshing the mtime at once: work that must
        finish under the lock despite cancellation shields itself *and* its refresher (as
        :class:`~pitrio.providers.credentials.CredentialStore` does for a token refresh).
    """
    lock = await acquire_auth_lock(auth_path, stale=stale, wait_limit=wait_limit, clock=clock)
    try:
        async with open_body_nursery() as nursery:
            nursery.start_soon(functools.partial(keep_lock_fresh, lock, clock=clock))
            yield lock
            nursery.cancel_scope.cancel()
    finally:
        await release_auth_lock(lock)
