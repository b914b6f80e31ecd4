"""Failover with a real kill -9: a node process dies holding sessions and a command; its leases
run out by their TTL and a surviving node takes over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from pitrio.host.cluster import SessionAssigned, open_cluster_node

NODE_PROCESS = Path(__file__).with_name("node_process.py")
WORKTREE = Path(__file__).resolve().parents[3]


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    """The process's next ``@`` line, without the ``@`` (its log lines are skipped)."""
    while True:
        while b"\n" not in buffer:
            chunk = await stream.receive_some()
            assert chunk, "the node process ended"
            buffer += chunk
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        if line.startswith(b"@"):
            return line[1:].decode()


async def test_a_killed_owners_sessions_and_pending_command_move_to_a_survivor(redis_url, prefix):
    """After kill -9 of the owner: the survivor is assigned every session once the dead
    node's leases run out (by their TTL), claims them at epoch 2, continues the streams after
    the dead node's entries, and answers, once, the command the dead node took but never
    answered; the gateway's original request gets that answer."""
    sessions = [f"s{i}" for i in range(6)]
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    async with (
        open_cluster_node(
            redis_url, node_id="survivor", address="ws://survivor", prefix=prefix, lease_ttl=1.0
        ) as survivor,
        trio.open_nursery() as nursery,
    ):
        process = await trio.lowlevel.open_process(
            [sys.executable, str(NODE_PROCESS), redis_url, prefix, "dead", *sessions],
            stdout=subprocess.PIPE,
            env=env,
        )
        replies_send, replies = trio.open_memory_channel[bytes](1)
        try:
            assert process.stdout is not None
            buffer = bytearray()
            with trio.fail_after(30):
                assert await read_line(process.stdout, buffer) == "ready"

            async def ask() -> None:
                # The survivor is the gateway too; "dead" holds s0's lease, so it goes there.
                reply = await survivor.send_command("s0", "r1", b"work", timeout=60)
                await replies_send.send(reply)

            nursery.start_soon(ask)
            with trio.fail_after(30):
                assert await read_line(process.stdout, buffer) == "took r1"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()

        assigned: set[str] = set()
        with trio.fail_after(30):
            async for event in survivor.ownership_events():
                assert isinstance(event, SessionAssigned)
                assigned.add(event.session_id)
                if assigned == set(sessions):
                    break
        for session_id in sessions:
            epoch = await survivor.claim(session_id)
            assert epoch == 2
            await survivor.append_event(session_id, epoch, 3, b"after")
            assert await survivor.read_events(session_id) == [
                (1, 0, b"before"),
                (1, 1, b"before"),
                (1, 2, b"before"),
                (2, 3, b"after"),
            ]
        with trio.fail_after(30):
            command = await survivor.commands().receive()
        assert (command.session_id, command.request_id, command.payload) == ("s0", "r1", b"work")
        await command.reply(b"done")
        with trio.fail_after(30):
            assert await replies.receive() == b"done"
        assert survivor.commands().statistics().current_buffer_used == 0
        assert survivor.metrics()["takeovers"] == len(sessions)
