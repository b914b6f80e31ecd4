"""A host node of a real cluster (Redis) is assigned a session that has no file."""

from __future__ import annotations

from pathlib import Path

import coredis
import trio

from pitrio.host.ws._cluster_redis import open_redis_node
from tests.host.serve_helpers import open_test_host


async def test_a_session_without_a_file_is_forgotten_instead_of_assigned_again(
    tmp_path: Path, redis_servers
) -> None:
    """A session in the cluster's registry whose owner is gone and whose file does not exist
    (an in-memory session of a dead node): the node it is assigned to cannot open it, and
    removes it from the registry, so it is not assigned again on every renewal."""
    server = redis_servers.start()
    ghost = "01900000-0000-7000-8000-000000000000"
    async with (
        coredis.Redis(host="127.0.0.1", port=server.port) as redis,
        open_redis_node(server.url, node_id="a", address="ws://a", lease_ttl=1.0) as node,
        open_test_host(tmp_path, cluster=node) as host,
    ):
        await redis.hset("pitrio:sessions", {ghost: "gone-node"})
        # The orphan is assigned at a renewal (every third of the lease); bounded by the guard.
        with trio.fail_after(30):
            while await redis.hexists("pitrio:sessions", ghost):  # noqa: ASYNC110
                await trio.sleep(0.05)
        assert ghost not in host.sessions
        await host.drain()
