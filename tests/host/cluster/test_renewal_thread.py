"""Lease renewal off the event loop: a node whose loop is blocked for a few lease TTLs keeps
its leases (the renewal thread renews them), and one blocked past ``stall_limit`` lets them
lapse (the zombie guard). A real redis-server; the loop is blocked with ``time.sleep`` on
purpose, standing for a burst of synchronous work."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import coredis
import pytest
import trio
import trio.testing

from pitrio._exceptions import UsageError
from pitrio.host.cluster import (
    LeaseHeld,
    SessionAssigned,
    SessionLost,
    StaleOwner,
    open_cluster_node,
)


async def test_a_node_whose_loop_is_blocked_keeps_its_leases(redis_url, prefix):
    """Blocked for three lease TTLs (no task of the node runs): afterwards the node still owns
    its session, appends at its epoch succeed, it lost nothing, and another node cannot claim
    the session (its lease and the node's membership never lapsed)."""
    async with (
        open_cluster_node(
            redis_url, node_id="b", address="ws://b", prefix=prefix, lease_ttl=1.0
        ) as b,
        open_cluster_node(
            redis_url, node_id="a", address="ws://a", prefix=prefix, lease_ttl=1.0
        ) as a,
    ):
        epoch = await a.claim("s")
        await a.append_event("s", epoch, 0, b"before")
        # The whole event loop blocked, as a burst of synchronous work would block it.
        time.sleep(3.0)  # noqa: ASYNC251
        assert a.owns("s")
        await a.append_event("s", epoch, 1, b"after")
        with pytest.raises(LeaseHeld):
            await b.claim("s")
        await a.refresh()
        with trio.fail_after(10):
            await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            a.ownership_events().receive_nowait()
        assert a.owns("s")
        assert await a.read_events("s") == [(epoch, 0, b"before"), (epoch, 1, b"after")]


async def test_a_node_whose_loop_is_blocked_past_the_stall_limit_loses_its_leases(
    redis_url, prefix
):
    """Blocked longer than ``stall_limit`` plus the TTL: the renewal thread stopped renewing,
    the leases lapsed in Redis, and once the loop runs again the node loses its session
    (SessionLost, appends refuse) and another node claims it at a new epoch."""
    async with (
        open_cluster_node(
            redis_url, node_id="b", address="ws://b", prefix=prefix, lease_ttl=1.0
        ) as b,
        open_cluster_node(
            redis_url,
            node_id="a",
            address="ws://a",
            prefix=prefix,
            lease_ttl=1.0,
            stall_limit=1.5,
        ) as a,
    ):
        epoch = await a.claim("s")
        # Past stall_limit (1.5 s) plus the lease TTL (1 s), with a margin.
        time.sleep(4.5)  # noqa: ASYNC251
        assert not a.owns("s")
        with pytest.raises(StaleOwner):
            await a.append_event("s", epoch, 0, b"zombie")
        assert await a.holder_of("s") is None
        assert await b.claim("s") == epoch + 1
        with trio.fail_after(10):
            while True:
                event = await a.ownership_events().receive()
                if isinstance(event, SessionLost):
                    break
        assert event == SessionLost("s", epoch)


async def test_a_lapse_seen_by_a_write_check_loses_every_session_at_once(redis_url, prefix):
    """Right after a block past the stall limit, before any task of the node has run, the
    write check (asked before each file write) refuses: the leases lapsed by the node's own
    clock. That first refusal loses every session at once (a later renewal does not give them
    back), and each session's loss is announced."""
    async with open_cluster_node(
        redis_url, node_id="a", address="ws://a", prefix=prefix, lease_ttl=1.0, stall_limit=1.5
    ) as a:
        first, second = await a.claim("s1"), await a.claim("s2")
        assert a.writable("s1", first) and a.writable("s2", second)
        time.sleep(4.5)  # noqa: ASYNC251
        assert not a.writable("s1", first)  # no checkpoint since the block
        assert a.epoch_of("s2") is None
        lost = set()
        with trio.fail_after(10):
            while len(lost) < 2:
                event = await a.ownership_events().receive()
                if isinstance(event, SessionLost):
                    lost.add(event)
        assert lost == {SessionLost("s1", first), SessionLost("s2", second)}
        await a.refresh()  # renewals go on, for the node's new incarnation only
        assert not a.writable("s2", second)
        assert await a.claim("s2") > second


async def test_the_stall_limit_must_exceed_the_lease_ttl(redis_url, prefix):
    with pytest.raises(UsageError):
        async with open_cluster_node(
            redis_url, address="ws://a", prefix=prefix, lease_ttl=5.0, stall_limit=5.0
        ):
            pass  # pragma: no cover - the node does not open


def test_serve_refuses_a_stall_limit_not_above_the_lease_ttl(tmp_path):
    """``pitrio serve --cluster`` checks ``--stall-limit`` against ``--lease-ttl`` up front."""
    repo = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": repo}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pitrio",
            "serve",
            "--cluster",
            "redis://127.0.0.1:1",
            "--lease-ttl",
            "5",
            "--stall-limit",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "--stall-limit must be above --lease-ttl" in done.stderr


async def test_what_the_thread_renewal_finds_reaches_the_loop(redis_url, prefix):
    """Without any renewal from the loop (no refresh): a session lease deleted in Redis is
    reported lost, and a session registered without a lease is assigned, by the thread's
    ticks."""
    async with open_cluster_node(
        redis_url, node_id="a", address="ws://a", prefix=prefix, lease_ttl=1.0
    ) as a:
        epoch = await a.claim("s")
        async with coredis.Redis.from_url(redis_url) as redis:
            await redis.delete([f"{prefix}:s:s:lease"])
            await redis.hset(f"{prefix}:sessions", {"orphan": "gone"})
        seen: set[object] = set()
        with trio.fail_after(15):
            while seen != {SessionLost("s", epoch), SessionAssigned("orphan")}:
                seen.add(await a.ownership_events().receive())
                seen.discard(SessionAssigned("s"))  # assigned back once its lease is gone
        assert not a.owns("s")
