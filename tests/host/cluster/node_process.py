"""A cluster node in a process of its own, for the kill -9 test.

``python node_process.py URL PREFIX NODE_ID SESSION...``: joins with a 1-second lease, claims
the sessions, writes three events to each, prints ``@ready`` and then takes commands without
ever answering them (printing ``@took <request id>``), until it is killed. Lines of its log
(structlog prints to stdout) do not start with ``@``.
"""

from __future__ import annotations

import sys

import trio

from pitrio.host.cluster import open_cluster_node


async def main(url: str, prefix: str, node_id: str, sessions: list[str]) -> None:
    async with open_cluster_node(
        url, node_id=node_id, address=f"ws://{node_id}", prefix=prefix, lease_ttl=1.0
    ) as node:
        for session_id in sessions:
            epoch = await node.claim(session_id)
            await node.append_events(session_id, epoch, [(seq, b"before") for seq in range(3)])
        print("@ready", flush=True)
        async for command in node.commands():
            print(f"@took {command.request_id}", flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
