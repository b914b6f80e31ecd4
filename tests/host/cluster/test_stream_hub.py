"""A gateway's follower of a session stream (``RedisNode.read_events`` over a ``StreamHub``)
against a real redis-server."""

from __future__ import annotations

import trio

from pitrio.host.cluster import open_cluster_node
from pitrio.host.cluster._watch import WATCH_BUFFER
from pitrio.host.ws._cluster import StreamEntry
from pitrio.host.ws._cluster_redis import RedisNode, StreamHub


async def test_an_entry_written_before_the_watcher_reads_again_reaches_a_new_follower(
    redis_url: str, prefix: str
) -> None:
    """The first follower of a session catches up from its cursor, then waits on the hub. An
    entry written after that catch-up but before the node's watcher next reads reaches it
    (before, the watcher started at the stream's end as of that read, past the entry: an idle
    session's follower then waited forever; the failover test hung on a new epoch's
    snapshot)."""
    async with (
        open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as node,
        node.watch() as watcher,
        trio.open_nursery() as nursery,
    ):
        hub = StreamHub(watcher)
        gateway = RedisNode(node, hub)
        epoch = await node.claim("s")
        await node.append_events("s", epoch, [(0, b"e0"), (1, b"e1")])

        # Hold the watcher's reader: with the hub not yet running, a busy session's entries
        # fill its output, and the reader waits to hand out the next one.
        busy_epoch = await node.claim("busy")
        busy = hub.follow("busy", (0, 0))  # every entry of the stream
        await node.append_events("busy", busy_epoch, [(i, b"x") for i in range(WATCH_BUFFER + 8)])
        with trio.fail_after(30):
            while watcher.backlog() < WATCH_BUFFER:  # noqa: ASYNC110 (polls the reader's state)
                await trio.sleep(0.01)

        received: list[StreamEntry | None] = []
        caught_up = trio.Event()
        got_e2 = trio.Event()

        async def follow() -> None:
            async with gateway.read_events("s", (epoch, 0)) as entries:
                async for entry in entries:
                    received.append(entry)
                    if entry is not None and entry.seq == 1:
                        caught_up.set()
                    if entry is not None and entry.seq == 2:
                        got_e2.set()
                        return

        nursery.start_soon(follow)
        with trio.fail_after(30):
            await caught_up.wait()
        await node.append_event("s", epoch, 2, b"e2")
        nursery.start_soon(hub.run)  # the reader goes on
        with trio.fail_after(30):
            await got_e2.wait()
        assert received == [StreamEntry(epoch, 1, b"e1"), StreamEntry(epoch, 2, b"e2")]
        hub.unfollow("busy", busy)
        nursery.cancel_scope.cancel()
