"""The waits an actor repeats (a Mailbox consumer, a Reply's sender, a Latch's waiters): several
waiters, cancellation and close."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from pitrio.channels import Latch, Mailbox, Reply


async def test_several_mailbox_waiters_all_wake_and_cancel_cleanly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Three tasks waiting at once all wake on one put; a cancelled one leaves the others."""
    box: Mailbox[str] = Mailbox()
    woke: list[int] = []

    async def wait(n: int) -> None:
        await box.wait_nonempty()
        woke.append(n)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, 0)
        nursery.start_soon(wait, 1)
        nursery.start_soon(wait, 2)
        await trio.sleep(1)
        cancelled = trio.CancelScope()

        async def wait_cancelled() -> None:
            with cancelled:
                await box.wait_nonempty()
            woke.append(-1)

        nursery.start_soon(wait_cancelled)
        await trio.sleep(1)
        cancelled.cancel()
        await trio.sleep(1)
        assert woke == [-1]
        box.put_nowait("x")
    assert sorted(woke) == [-1, 0, 1, 2]


@pytest.mark.parametrize("first_cancelled", [True, False])
async def test_the_mailbox_serves_the_next_waiter_after_a_cancel_or_close(
    autojump_clock: trio.testing.MockClock, first_cancelled: bool
) -> None:
    """After the consumer's wait is cancelled another task can wait and be woken; a close
    ends a waiting consumer with EndOfChannel."""
    box: Mailbox[str] = Mailbox()
    if first_cancelled:
        with trio.move_on_after(1):
            await box.wait_nonempty()
    async with trio.open_nursery() as nursery:

        async def put_later() -> None:
            await trio.sleep(1)
            box.put_nowait("a")

        nursery.start_soon(put_later)
        await box.wait_nonempty()
    assert box.drain() == ["a"]
    async with trio.open_nursery() as nursery:

        async def close_later() -> None:
            await trio.sleep(1)
            box.close()

        nursery.start_soon(close_later)
        with pytest.raises(trio.EndOfChannel):
            await box.wait_nonempty()


async def test_latch_waiters_beyond_the_first_and_cancelled_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Several waiters all wake; a cancelled first waiter leaves the latch usable; a set latch
    returns at once (after a checkpoint); a failed reply raises in every waiter."""
    latch = Latch()
    with trio.move_on_after(1):
        await latch.wait()
    woke: list[int] = []

    async def wait(n: int) -> None:
        await latch.wait()
        woke.append(n)

    async with trio.open_nursery() as nursery:
        for n in range(3):
            nursery.start_soon(wait, n)
        await trio.sleep(1)
        latch.set()
        latch.set()
    assert sorted(woke) == [0, 1, 2]
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await latch.wait()  # a checkpoint even when set
    reply: Reply[int] = Reply()
    errors: list[str] = []

    async def wait_reply() -> None:
        try:
            await reply.wait()
        except ValueError as exc:
            errors.append(str(exc))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait_reply)
        nursery.start_soon(wait_reply)
        await trio.sleep(1)
        reply.fail(ValueError("no"))
        reply.set(1)  # ignored: answered already
    assert errors == ["no", "no"]
