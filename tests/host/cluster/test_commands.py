"""Commands routed from a gateway to a session's owner, and adopted after the owner dies."""

from __future__ import annotations

import coredis
import pytest
import trio

from pitrio.host.cluster import CommandTimeout, open_cluster_node


async def serve(
    node,
    *,
    runs: list[tuple[str, bytes]],
    stop_after: int | None = None,
    replied: trio.Event | None = None,
):
    """Answer commands as ``done:<payload>``, recording every run; ``replied`` is set once the
    owner's ``reply`` has returned (the gateway can have the answer before that)."""
    async for command in node.commands():
        runs.append((command.request_id, command.payload))
        await command.reply(b"done:" + command.payload)
        if replied is not None:
            replied.set()
        if stop_after is not None and len(runs) >= stop_after:
            return


async def test_a_command_round_trips_to_the_owner(redis_url, prefix):
    """A gateway's command reaches the session's owner and its reply comes back."""
    runs: list[tuple[str, bytes]] = []
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        trio.open_nursery() as nursery,
    ):
        await owner.claim("s")
        replied = trio.Event()
        nursery.start_soon(lambda: serve(owner, runs=runs, replied=replied))
        reply = await gateway.send_command("s", "r1", b"prompt", timeout=10)
        assert reply == b"done:prompt"
        assert runs == [("r1", b"prompt")]
        # The gateway can read the reply before the owner's task resumes from writing it.
        await replied.wait()
        assert owner.metrics()["commands_served"] == 1
        nursery.cancel_scope.cancel()


async def test_a_retried_request_returns_the_first_result_without_running_again(redis_url, prefix):
    """The request id is the idempotency key: a retry gets the stored result."""
    runs: list[tuple[str, bytes]] = []
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        trio.open_nursery() as nursery,
    ):
        await owner.claim("s")
        nursery.start_soon(lambda: serve(owner, runs=runs))
        assert await gateway.send_command("s", "r1", b"first", timeout=10) == b"done:first"
        assert await gateway.send_command("s", "r1", b"second", timeout=10) == b"done:first"
        assert await owner.send_command("s", "r1", b"third", timeout=10) == b"done:first"
        assert runs == [("r1", b"first")]
        nursery.cancel_scope.cancel()


async def test_a_duplicate_in_flight_gets_the_first_ones_reply(redis_url, prefix):
    """Two sends of one request id while the first is still running: it runs once and both
    callers get its result."""
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        trio.open_nursery() as nursery,
    ):
        await owner.claim("s")
        replies_send, replies = trio.open_memory_channel[bytes](2)

        async def send(payload: bytes) -> None:
            await replies_send.send(await gateway.send_command("s", "r1", payload, timeout=10))

        nursery.start_soon(send, b"one")
        with trio.fail_after(10):
            first = await owner.commands().receive()
        nursery.start_soon(send, b"two")
        # Wait until the duplicate is in the owner's stream (read or not) before replying.
        with trio.fail_after(10):
            while owner.metrics()["stream_lag"] < 2:
                await owner.refresh()
                await trio.sleep(0.01)  # polling what Redis reports, not a stand-in for it
        await first.reply(b"result")
        with trio.fail_after(10):
            assert [await replies.receive(), await replies.receive()] == [b"result"] * 2
        assert owner.commands().statistics().current_buffer_used == 0
        nursery.cancel_scope.cancel()


async def test_a_command_nobody_answers_times_out(redis_url, prefix):
    """Without a reply in time the gateway raises CommandTimeout."""
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
    ):
        await owner.claim("s")
        with pytest.raises(CommandTimeout) as info:
            await gateway.send_command("s", "r1", b"x", timeout=0.2)
        assert info.value.request_id == "r1"


async def test_a_dead_owners_pending_command_is_answered_once_by_the_new_owner(redis_url, prefix):
    """The owner takes a command and dies without replying (no release, leases expired); the
    session's new owner adopts the pending command, runs it once, and the gateway's retry
    gets that result."""
    runs: list[tuple[str, bytes]] = []
    async with (
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b,
        trio.open_nursery() as nursery,
    ):
        async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
            await a.claim("s")
            sent = trio.Event()

            async def first_send() -> None:
                with pytest.raises(CommandTimeout):
                    await gateway.send_command("s", "r1", b"work", timeout=0.5)
                sent.set()

            nursery.start_soon(first_send)
            with trio.fail_after(10):
                taken = await a.commands().receive()  # delivered, never replied
            assert taken.request_id == "r1"
            a._abandon()
        async with coredis.Redis.from_url(redis_url) as redis:
            assert await redis.exists([f"{prefix}:n:a:lease"]) == 1  # not released
            await redis.delete([f"{prefix}:n:a:lease", f"{prefix}:s:s:lease"])
        await sent.wait()
        assert await b.claim("s") == 2
        nursery.start_soon(lambda: serve(b, runs=runs))
        assert await gateway.send_command("s", "r1", b"work", timeout=10) == b"done:work"
        assert runs == [("r1", b"work")]
        assert b.metrics()["takeovers"] == 1
        nursery.cancel_scope.cancel()


async def test_a_command_for_a_session_another_live_node_holds_is_forwarded(redis_url, prefix):
    """A command that reached a node after its session moved to another live node (sent just
    before the handoff) is forwarded to the holder, which gets it; the first node's host
    never sees it."""
    async with (
        open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a,
        open_cluster_node(redis_url, node_id="b", address="ws://b", prefix=prefix) as b,
    ):
        await a.claim("s")
        await a.release("s")
        await b.claim("s")
        async with coredis.Redis.from_url(redis_url) as redis:
            # As if a gateway had routed it to "a" just before the handoff.
            await redis.xadd(
                f"{prefix}:n:a:commands", {"s": "s", "r": "r1", "g": "gw", "p": b"late"}
            )
        with trio.fail_after(10):
            command = await b.commands().receive()
        assert (command.session_id, command.request_id, command.payload) == ("s", "r1", b"late")
        assert a.commands().statistics().current_buffer_used == 0


async def test_a_restarted_node_reruns_what_its_earlier_incarnation_took(redis_url, prefix):
    """Commands a node took and never answered before it died come out of the commands of
    the next node opened with the same id."""
    async with open_cluster_node(
        redis_url, node_id="gw", address="ws://g", prefix=prefix
    ) as gateway:
        async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a:
            await a.claim("s")

            async def send_once() -> None:
                with pytest.raises(CommandTimeout):
                    await gateway.send_command("s", "r1", b"work", timeout=1.0)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send_once)
                with trio.fail_after(10):
                    assert (await a.commands().receive()).request_id == "r1"
            a._abandon()
        async with coredis.Redis.from_url(redis_url) as redis:
            await redis.delete([f"{prefix}:n:a:lease", f"{prefix}:s:s:lease"])
        async with open_cluster_node(redis_url, node_id="a", address="ws://a", prefix=prefix) as a2:
            assert await a2.claim("s") == 2
            with trio.fail_after(10):
                command = await a2.commands().receive()
            assert (command.request_id, command.payload) == ("r1", b"work")
            await command.reply(b"done")
            assert await gateway.send_command("s", "r1", b"work", timeout=10) == b"done"
