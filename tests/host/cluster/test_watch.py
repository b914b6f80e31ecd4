"""The gateway's watcher: one blocking read over many session streams (a real redis-server)."""

from __future__ import annotations

import trio
import trio.testing

from pitrio.host.cluster import open_cluster_node


async def test_events_of_several_sessions_arrive_in_order_per_session(redis_url, prefix):
    """Events appended to three sessions in interleaved batches come out of one watcher in
    each session's order, none missing."""
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        gateway.watch() as watcher,
    ):
        sessions = ["s0", "s1", "s2"]
        epochs = {sid: await owner.claim(sid) for sid in sessions}
        for sid in sessions:
            watcher.add(sid, after=(epochs[sid], 0))
        for batch in range(10):
            for sid in sessions:
                await owner.append_events(
                    sid,
                    epochs[sid],
                    [(batch * 3 + k + 1, f"{sid}:{batch * 3 + k + 1}".encode()) for k in range(3)],
                )
        got: dict[str, list[int]] = {sid: [] for sid in sessions}
        with trio.fail_after(10):
            async for sid, epoch, seq, payload in watcher:
                assert epoch == epochs[sid]
                assert payload == f"{sid}:{seq}".encode()
                got[sid].append(seq)
                if all(len(v) == 30 for v in got.values()):
                    break
        assert got == {sid: list(range(1, 31)) for sid in sessions}


async def test_adding_and_removing_while_the_read_is_blocked(redis_url, prefix):
    """A session added while the watcher blocks is read without waiting out the block; a
    removed one is no longer read."""
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        open_cluster_node(redis_url, node_id="gw", address="ws://g", prefix=prefix) as gateway,
        gateway.watch() as watcher,
    ):
        ea = await owner.claim("a")
        eb = await owner.claim("b")
        watcher.add("a", after=(ea, 0))
        await owner.append_event("a", ea, 1, b"a1")
        with trio.fail_after(3):
            assert await watcher.__aiter__().receive() == ("a", ea, 1, b"a1")
        # The reader is now blocked on "a" (and its wake stream) only.
        await trio.testing.wait_all_tasks_blocked()
        await owner.append_event("b", eb, 1, b"b1")
        watcher.add("b", after=(eb, 0))
        with trio.fail_after(3):  # well under the read's block time
            assert await watcher.__aiter__().receive() == ("b", eb, 1, b"b1")
        watcher.remove("a")
        await owner.append_event("a", ea, 2, b"a2")
        await owner.append_event("b", eb, 2, b"b2")
        with trio.fail_after(3):
            assert await watcher.__aiter__().receive() == ("b", eb, 2, b"b2")
        assert gateway.metrics()["watched_streams"] == 1


async def test_watching_from_now_skips_what_was_written_before(redis_url, prefix):
    """``after=None`` starts at the stream's end: earlier events are not replayed."""
    async with (
        open_cluster_node(redis_url, node_id="owner", address="ws://o", prefix=prefix) as owner,
        owner.watch() as watcher,
    ):
        epoch = await owner.claim("s")
        await owner.append_events("s", epoch, [(1, b"old"), (2, b"old")])
        watcher.add("s")
        with trio.fail_after(5):
            while watcher.cursor("s") is None:  # the reader resolves "now" in a round trip
                await trio.testing.wait_all_tasks_blocked()
        assert watcher.cursor("s") == (epoch, 2)
        await owner.append_event("s", epoch, 3, b"new")
        with trio.fail_after(3):
            assert await watcher.__aiter__().receive() == ("s", epoch, 3, b"new")
