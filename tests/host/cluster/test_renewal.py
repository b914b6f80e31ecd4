"""A node that cannot renew stops writing at once (a real redis-server, killed for one test)."""

from __future__ import annotations

import coredis
import pytest
import trio

from pitrio.host.cluster import ClusterUnavailable, SessionLost, StaleOwner, open_cluster_node


async def lost_events(node, count: int) -> set[SessionLost]:
    got = set()
    with trio.fail_after(15):
        while len(got) < count:
            event = await node.ownership_events().receive()
            if isinstance(event, SessionLost):
                got.add(event)
    return got


async def test_redis_going_away_loses_every_session_and_appends_refuse(redis_servers, prefix):
    """When the renewal cannot reach Redis, every owned session is lost and its appends raise
    StaleOwner without reaching Redis; a read raises ClusterUnavailable."""
    server = redis_servers.start()
    async with open_cluster_node(
        server.url, node_id="a", address="ws://a", prefix=prefix, lease_ttl=0.6
    ) as node:
        epochs = {sid: await node.claim(sid) for sid in ("s1", "s2")}
        await node.append_event("s1", epochs["s1"], 0, b"ok")
        server.kill()
        assert await lost_events(node, 2) == {SessionLost(s, e) for s, e in epochs.items()}
        assert not node.owns("s1")
        for sid, epoch in epochs.items():
            with pytest.raises(StaleOwner):
                await node.append_event(sid, epoch, 1, b"after")
        # Redis' own failures read as the layer's, not coredis'.
        with pytest.raises(ClusterUnavailable):
            await node.read_events("s1")


async def test_a_vanished_membership_loses_every_session_and_the_node_rejoins(redis_url, prefix):
    """A renewal that finds the node's membership lease gone loses all its sessions, then
    registers again, so the node can claim anew (at a new epoch)."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as node:
        e1 = await node.claim("s1")
        e2 = await node.claim("s2")
        async with coredis.Redis.from_url(redis_url) as redis:
            await redis.delete([f"{prefix}:n:a:lease"])
        await node.refresh()
        assert await lost_events(node, 2) == {SessionLost("s1", e1), SessionLost("s2", e2)}
        with pytest.raises(StaleOwner):
            await node.append_event("s1", e1, 0, b"x")
        assert [n.node_id for n in node.live_nodes()] == ["a"]
        assert await node.claim("s1") == e1 + 1
        await node.append_event("s1", e1 + 1, 0, b"x")


async def test_leaving_releases_the_sessions_for_the_next_node(redis_url, prefix):
    """A node that exits releases its leases: the other node is assigned and claims them."""
    async with open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b:
        async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
            await a.claim("s")
        await b.refresh()
        with trio.fail_after(5):
            event = await b.ownership_events().receive()
        assert event.session_id == "s" and event.type == "session_assigned"
        assert await b.claim("s") == 2


async def test_a_failed_renewal_rejoins_at_once_and_reclaims_at_a_new_epoch(redis_url, prefix):
    """After a renewal that failed (the node gave up its sessions while its old leases are
    still in Redis), the next renewal replaces its own old membership instead of waiting for
    it to expire, and claiming a session again takes a new epoch."""
    async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as node:
        epoch = await node.claim("s")
        node._lose_all()  # what a renewal that could not reach Redis does
        assert not node.owns("s")
        await node.refresh()
        assert [n.node_id for n in node.live_nodes()] == ["a"]
        assert await node.claim("s") == epoch + 1
        await node.append_event("s", epoch + 1, 0, b"x")
        with pytest.raises(StaleOwner):
            await node.append_event("s", epoch, 1, b"old epoch")
