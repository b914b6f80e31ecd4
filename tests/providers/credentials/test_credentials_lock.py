"""The auth.json lock: pi's proper-lockfile directory, staleness, waiting, freshness.

Time is virtual; the lock compares mtimes with a wall clock that follows it, so a lock ages as
virtual time passes. The lock's file work runs in worker threads, so the clock jumps only after
the run has been idle for a moment of real time (``autojump_threshold``): a thread at work does
not count as idle to a Trio clock, and a zero threshold would let time leap while a ``mkdir``
is under way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from pitrio.providers.credentials import (
    LOCK_STALE,
    AuthLockCompromised,
    AuthLockTimeout,
    HeldLock,
    acquire_auth_lock,
    hold_auth_lock,
    lock_path,
    release_auth_lock,
)
from pitrio.providers.credentials._lock import LOCK_UPDATE


@pytest.fixture
def thread_clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the run has been idle for 20 ms of real time."""
    return trio.testing.MockClock(autojump_threshold=0.02)


def _wall_clock() -> Callable[[], float]:
    """A wall clock that starts at the real time and moves with Trio's (virtual) clock."""
    offset = time.time() - trio.current_time()
    return lambda: offset + trio.current_time()


async def test_lock_is_a_directory_removed_on_release(tmp_path: Path) -> None:
    """The lock is the directory ``auth.json.lock`` (proper-lockfile's), gone once released."""
    auth = tmp_path / "auth.json"
    async with hold_auth_lock(str(auth)) as lock:
        assert lock.path == str(auth) + ".lock"
        assert await trio.Path(lock.path).is_dir()
    assert not await trio.Path(lock_path(str(auth))).exists()


async def test_stale_lock_is_taken_over_after_30_seconds(
    tmp_path: Path, thread_clock: trio.testing.MockClock
) -> None:
    """A lock left by a dead holder (never refreshed) is taken over once 30 s old, not before."""
    clock = _wall_clock()
    auth = str(tmp_path / "auth.json")
    os.mkdir(lock_path(auth))
    os.utime(lock_path(auth), (clock(), clock()))
    left_at = trio.current_time()
    taken: list[float] = []

    async def waiter() -> None:
        lock = await acquire_auth_lock(auth, clock=clock, wait_limit=10_000)
        taken.append(trio.current_time())
        await release_auth_lock(lock)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(LOCK_STALE - 1)
        assert taken == []
    assert taken[0] - left_at >= LOCK_STALE


async def test_waiter_waits_while_a_live_holder_keeps_the_lock_fresh(
    tmp_path: Path, thread_clock: trio.testing.MockClock
) -> None:
    """A holder that keeps its lock fresh is waited for far past 30 s; the waiter takes the
    lock only after the holder releases it."""
    clock = _wall_clock()
    auth = str(tmp_path / "auth.json")
    events: list[str] = []
    held, release = trio.Event(), trio.Event()

    async def holder() -> None:
        async with hold_auth_lock(auth, clock=clock):
            held.set()
            await release.wait()
            events.append("holder releases")

    async def waiter() -> None:
        async with hold_auth_lock(auth, clock=clock):
            events.append("waiter locked")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(holder)
        await held.wait()
        nursery.start_soon(waiter)
        await trio.sleep(2 * LOCK_STALE)
        assert events == []
        release.set()
    assert events == ["holder releases", "waiter locked"]


async def test_a_lock_taken_over_is_compromised_and_not_removed(
    tmp_path: Path, thread_clock: trio.testing.MockClock
) -> None:
    """A holder whose lock was replaced by someone else's notices at its next update, refuses
    to write (``check`` raises) and leaves the other holder's lock in place."""
    clock = _wall_clock()
    auth = str(tmp_path / "auth.json")
    with pytest.raises(AuthLockCompromised):
        async with hold_auth_lock(auth, clock=clock) as lock:
            lock.check()
            os.rmdir(lock.path)
            os.mkdir(lock.path)
            os.utime(lock.path, (clock() + 1, clock() + 1))
            await trio.sleep(LOCK_UPDATE + 1)
            assert lock.compromised
            lock.check()
    assert await trio.Path(lock_path(auth)).is_dir()


async def test_wait_limit_raises_timeout(
    tmp_path: Path, thread_clock: trio.testing.MockClock
) -> None:
    """A lock held fresh for longer than the wait limit ends the wait with AuthLockTimeout."""
    clock = _wall_clock()
    auth = str(tmp_path / "auth.json")
    async with hold_auth_lock(auth, clock=clock):
        with pytest.raises(AuthLockTimeout):
            await acquire_auth_lock(auth, clock=clock, wait_limit=45)


async def test_cancelled_holder_still_releases(tmp_path: Path) -> None:
    """A block cancelled while it holds the lock removes the lock on its way out."""
    auth = str(tmp_path / "auth.json")
    with trio.CancelScope() as scope:
        async with hold_auth_lock(auth):
            scope.cancel()
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert not await trio.Path(lock_path(auth)).exists()


async def test_cancelled_waiter_leaves_no_lock(
    tmp_path: Path, thread_clock: trio.testing.MockClock
) -> None:
    """Cancelling a wait leaves the holder's lock alone and creates none."""
    clock = _wall_clock()
    auth = str(tmp_path / "auth.json")
    lock: HeldLock = await acquire_auth_lock(auth, clock=clock)
    with trio.move_on_after(3):
        await acquire_auth_lock(auth, clock=clock, stale=float("inf"))
    assert await trio.Path(lock.path).is_dir()
    await release_auth_lock(lock)
    assert not await trio.Path(lock.path).exists()
