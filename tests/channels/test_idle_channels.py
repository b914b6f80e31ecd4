"""The buffers an idle actor holds are created on first use (EventLog ring and publisher queue,
Mailbox waiters, a Mailbox used as an actor's inbox); these tests pin the behaviour around that
first use."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from pitrio.channels import EventLog, Mailbox, Reply, close_inbox


async def test_resuming_an_event_log_that_never_published() -> None:
    """A resume at 0 on a fresh log replays nothing (no snapshot) and then gets live events."""
    log: EventLog[int] = EventLog(ring_size=4, snapshot=lambda: "state")
    assert (log.seq, log.oldest_seq, log.ring_size) == (0, 1, 4)
    assert log.statistics().ring_length == 0
    async with log.open_subscription(from_seq=0) as sub:
        await log.publish(1)
        await log.publish(2)
        got = [await sub.receive(), await sub.receive()]
    assert [item.seq for item in got] == [1, 2]
    assert [item.event for item in got] == [1, 2]
    assert (log.oldest_seq, log.statistics().ring_length) == (1, 2)


async def test_resume_ahead_of_a_fresh_log_gets_a_snapshot() -> None:
    """A cursor ahead of a log with no events yet gets the snapshot, as for any log."""
    log: EventLog[int] = EventLog(snapshot=lambda: "state")
    async with log.open_subscription(from_seq=3) as sub:
        first = await sub.receive()
    assert getattr(first, "state", None) == "state"


async def test_contended_publishers_keep_their_order_on_a_fresh_log() -> None:
    """The first publisher that has to wait for the lock creates the queue; order is FIFO."""
    log: EventLog[str] = EventLog()
    gate = trio.Event()
    seen: list[str] = []

    async def slow(event: str) -> None:
        seen.append(event)
        if event == "first":
            await gate.wait()

    log.subscribe(slow)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.publish, "first")
        await trio.testing.wait_all_tasks_blocked()
        for name in ("second", "third"):
            nursery.start_soon(log.publish, name)
            await trio.testing.wait_all_tasks_blocked()
        gate.set()
    assert seen == ["first", "second", "third"]
    assert log.seq == 3


async def test_mailbox_wakes_every_waiter_and_forgets_cancelled_ones() -> None:
    """Two waiters both wake on one put; a cancelled waiter is not woken later."""
    box: Mailbox[int] = Mailbox()
    woke: list[str] = []

    async def wait(name: str) -> None:
        await box.wait_nonempty()
        woke.append(name)

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as cancelled:
            nursery.start_soon(wait, "a")
            nursery.start_soon(wait, "b")
            await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as inner:
            inner.start_soon(wait, "gone")
            await trio.testing.wait_all_tasks_blocked()
            inner.cancel_scope.cancel()
        assert not cancelled.cancel_called
        box.put_nowait(1)
    assert sorted(woke) == ["a", "b"]


async def test_mailbox_close_wakes_a_waiter_with_end_of_channel() -> None:
    """Closing an empty box ends a waiting wait_nonempty with EndOfChannel."""
    box: Mailbox[int] = Mailbox()
    ended = trio.Event()

    async def wait() -> None:
        with pytest.raises(trio.EndOfChannel):
            await box.wait_nonempty()
        ended.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        box.close()
    assert ended.is_set()


class _Command:
    def __init__(self) -> None:
        self.reply: Reply[None] = Reply()


async def test_close_inbox_fails_what_a_mailbox_inbox_still_holds() -> None:
    """close_inbox on a Mailbox fails every queued command's reply and refuses new ones."""
    box: Mailbox[_Command] = Mailbox(max_size=1)
    queued = _Command()
    box.put_nowait(queued)
    blocked = _Command()
    refused: list[BaseException] = []

    async def put_blocked() -> None:
        try:
            await box.put(blocked)
        except trio.ClosedResourceError as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(put_blocked)
        await trio.testing.wait_all_tasks_blocked()
        close_inbox(box, RuntimeError("closed"))
    with pytest.raises(RuntimeError, match="closed"):
        queued.reply.value_nowait()
    assert len(refused) == 1 and not blocked.reply.is_set
    with pytest.raises(trio.ClosedResourceError):
        box.put_nowait(_Command())


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
def test_a_drained_list_is_the_callers_own(mode: str) -> None:
    """The list drain or clear returns is no longer the box's: changing it changes nothing in
    the box, and the box fills and drains again as before."""
    box: Mailbox[int] = Mailbox(mode, max_size=3)  # type: ignore[arg-type]
    box.put_nowait(1)
    taken = box.drain()
    assert taken == [1] and len(box) == 0 and not box.has_items
    taken.append(99)
    box.put_nowait(2)
    box.put_nowait(3)
    assert box.peek_all() == [2, 3]
    cleared = box.clear()
    cleared.clear()
    box.put_nowait(4)
    assert box.drain() == [4] and taken == [1, 99]
    assert box.drain() == [] and box.statistics().size == 0
    assert box.statistics().peak_size == 2
