"""Membership, placement, session ownership, fenced event streams (a real redis-server)."""

from __future__ import annotations

import coredis
import pytest
import trio

from pitrio._exceptions import UsageError
from pitrio.host.cluster import (
    LeaseHeld,
    NodeInfo,
    SessionAssigned,
    SessionLost,
    StaleOwner,
    open_cluster_node,
)


async def expire(url: str, *keys: str) -> None:
    """Drop lease keys as their TTL running out would."""
    async with coredis.Redis.from_url(url) as redis:
        await redis.delete(list(keys))


async def test_two_nodes_see_each_other_and_one_leaving(redis_url, prefix):
    """Each node lists both; after one leaves, the other lists only itself."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
        async with open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b:
            await a.refresh()
            assert a.live_nodes() == [NodeInfo("a", "ws://a"), NodeInfo("b", "ws://b")]
            assert b.live_nodes() == a.live_nodes()
        await a.refresh()
        assert a.live_nodes() == [NodeInfo("a", "ws://a")]


async def test_a_node_id_in_use_is_refused(redis_url, prefix):
    """A second node with a live node's id cannot join."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix):
        with pytest.raises(LeaseHeld):
            async with open_cluster_node(redis_url, node_id="a", address="ws://x", prefix=prefix):
                pass


async def test_takeover_fences_the_old_owner_before_and_after_the_new_owners_write(
    redis_url, prefix
):
    """After a takeover the old owner's append raises StaleOwner, both before the new owner
    wrote and after; the stream holds ids ``epoch-seq`` in order."""
    async with (
        open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a,
        open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b,
    ):
        assert await b.holder_of("s1") is None
        epoch_a = await a.claim("s1")
        assert epoch_a == 1
        await b.refresh()
        assert await b.holder_of("s1") == NodeInfo("a", "ws://a")
        await a.append_events("s1", epoch_a, [(0, b"a0"), (1, b"a1")])
        with pytest.raises(LeaseHeld):
            await b.claim("s1")
        # a dies as far as Redis can tell: its membership and session leases expire.
        await expire(redis_url, f"{prefix}:n:a:lease", f"{prefix}:s:s1:lease")
        epoch_b = await b.claim("s1")
        assert epoch_b == 2
        with pytest.raises(StaleOwner):
            await a.append_event("s1", epoch_a, 2, b"stale-before")
        await b.append_event("s1", epoch_b, 2, b"b2")
        with pytest.raises(StaleOwner):
            await a.append_event("s1", epoch_a, 3, b"stale-after")
        events = await b.read_events("s1")
        assert events == [(1, 0, b"a0"), (1, 1, b"a1"), (2, 2, b"b2")]


async def test_a_seq_not_above_the_last_is_a_usage_error(redis_url, prefix):
    """The owner writing a seq twice is refused, and nothing of the batch is written."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
        epoch = await a.claim("s")
        await a.append_events("s", epoch, [(0, b"x"), (1, b"y")])
        with pytest.raises(UsageError):
            await a.append_events("s", epoch, [(2, b"z"), (1, b"again")])
        assert await a.read_events("s", after=(epoch, 0)) == [(epoch, 1, b"y")]


async def test_read_events_reports_a_cursor_that_fell_out(redis_url, prefix):
    """A cursor older than what trimming kept reads as None (send a snapshot)."""
    async with open_cluster_node(
        redis_url, node_id="a", address="ws://a", prefix=prefix, replay_size=10
    ) as a:
        epoch = await a.claim("s")
        await a.append_events("s", epoch, [(i, b"%d" % i) for i in range(500)])
        assert await a.read_events("s", after=(epoch, 0)) is None
        assert await a.read_events("s") is None
        tail = await a.read_events("s", after=(epoch, 497))
        assert tail == [(epoch, 498, b"498"), (epoch, 499, b"499")]


async def test_renewal_finding_the_lease_gone_loses_the_session(redis_url, prefix):
    """When the session lease vanishes the next renewal reports SessionLost and writes refuse."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
        epoch = await a.claim("s")
        await expire(redis_url, f"{prefix}:s:s:lease")
        await a.refresh()
        assert not a.owns("s")
        with trio.fail_after(5):
            event = await a.ownership_events().receive()
        assert event == SessionLost("s", epoch)
        with pytest.raises(StaleOwner):
            await a.append_event("s", epoch, 0, b"x")


async def test_a_dead_owners_session_is_assigned_to_its_rendezvous_node(redis_url, prefix):
    """Once the owner's leases are gone, the node rendezvous places the session on is told."""
    async with (
        open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a,
        open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b,
        open_cluster_node(redis_url, node_id="c", address="ws://c", prefix=prefix) as c,
    ):
        nodes = {"a": a, "b": b, "c": c}
        await a.refresh()
        sessions = [f"s{i}" for i in range(30)]
        for sid in sessions:
            await a.claim(sid)
        a._abandon()
        await expire(redis_url, f"{prefix}:n:a:lease", *(f"{prefix}:s:{s}:lease" for s in sessions))
        for node in (b, c):
            await node.refresh()
        expected = {sid: b.owner_of(sid).node_id for sid in sessions}
        assert set(expected.values()) <= {"b", "c"}
        for name in ("b", "c"):
            mine = sorted(s for s, n in expected.items() if n == name)
            got = []
            with trio.fail_after(5):
                while len(got) < len(mine):
                    event = await nodes[name].ownership_events().receive()
                    assert isinstance(event, SessionAssigned)
                    got.append(event.session_id)
            assert sorted(got) == mine
            for sid in mine:
                assert await nodes[name].claim(sid) == 2


async def test_a_session_closed_here_is_not_assigned_to_another_node(redis_url, prefix):
    """close() gives up the lease and takes the session out of the registry in one step: no
    node is told to take it over (release() hands a live one over: it is assigned)."""
    async with (
        open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a,
        open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b,
    ):
        await a.refresh()
        await a.claim("closed")
        await a.claim("handed")
        await a.close("closed")
        await a.release("handed")
        for node in (a, b):
            await node.refresh()
        # Both sessions had no lease at these renewals; only the one released is an orphan,
        # told (in one list per renewal) to the node rendezvous places it on.
        nodes = {"a": a, "b": b}
        for name, node in nodes.items():
            if node.owner_of("handed").node_id == name:
                with trio.fail_after(10):
                    event = await node.ownership_events().receive()
                assert event == SessionAssigned("handed")
        async with coredis.Redis.from_url(redis_url) as redis:
            assert not await redis.hexists(f"{prefix}:sessions", "closed")
            assert not await redis.exists([f"{prefix}:s:closed:lease"])
        # Opening it again registers it anew, at the next epoch.
        assert await b.claim("closed") == 2
