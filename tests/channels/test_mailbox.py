"""Tests for pitrio.channels.Mailbox: the steering and follow-up queue."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from pitrio.channels import MAILBOX_SIZE, Mailbox, MailboxFull, MailboxMode, MailboxStatistics

TIMEOUT = 10  # virtual seconds (autojump clock): only a deadlock can reach it


def filled(
    *items: str, mode: MailboxMode = "one-at-a-time", max_size: int = MAILBOX_SIZE
) -> Mailbox[str]:
    mailbox: Mailbox[str] = Mailbox(mode, max_size=max_size)
    for item in items:
        mailbox.put_nowait(item)
    return mailbox


# -- draining --------------------------------------------------------------------------------


def test_one_at_a_time_drain_returns_only_the_first_item():
    """In "one-at-a-time" mode drain() removes and returns the oldest item alone."""
    mailbox = filled("a", "b", "c")
    assert mailbox.mode == "one-at-a-time"
    assert mailbox.drain() == ["a"]
    assert mailbox.drain() == ["b"]
    assert mailbox.drain() == ["c"]
    assert mailbox.drain() == []


def test_all_drain_returns_every_item_and_empties_the_box():
    """In "all" mode drain() removes and returns every item in arrival order."""
    mailbox = filled("a", "b", "c", mode="all")
    assert mailbox.drain() == ["a", "b", "c"]
    assert mailbox.drain() == []
    assert len(mailbox) == 0


def test_mode_can_be_changed_and_is_validated():
    """Setting mode changes how the next drain() behaves; unknown modes raise ValueError."""
    mailbox = filled("a", "b", "c")
    assert mailbox.drain() == ["a"]
    mailbox.mode = "all"
    assert mailbox.drain() == ["b", "c"]
    with pytest.raises(ValueError, match="mode"):
        mailbox.mode = "some"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="mode"):
        Mailbox("some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_size"):
        Mailbox(max_size=0)


def test_peek_all_len_and_has_items_do_not_remove_anything():
    """peek_all(), len() and has_items inspect the box without changing it."""
    mailbox = filled()
    assert (mailbox.peek_all(), len(mailbox), mailbox.has_items) == ([], 0, False)
    mailbox.put_nowait("a")
    mailbox.put_nowait("b")
    assert (mailbox.peek_all(), len(mailbox), mailbox.has_items) == (["a", "b"], 2, True)
    assert mailbox.drain() == ["a"]


def test_clear_returns_what_it_removed_in_any_mode():
    """clear() empties the box and returns the removed items, even in one-at-a-time mode."""
    mailbox = filled("a", "b")
    assert mailbox.clear() == ["a", "b"]
    assert mailbox.clear() == []
    assert not mailbox.has_items


# -- bounded puts ----------------------------------------------------------------------------


def test_put_nowait_raises_mailbox_full_when_full():
    """put_nowait() on a full box raises MailboxFull, a trio.WouldBlock, and adds nothing."""
    mailbox = filled("a", "b", max_size=2)
    with pytest.raises(MailboxFull) as excinfo:
        mailbox.put_nowait("c")
    assert isinstance(excinfo.value, trio.WouldBlock)
    assert excinfo.value.max_size == 2
    assert "2 items" in str(excinfo.value)
    assert mailbox.peek_all() == ["a", "b"]


async def test_put_waits_for_room_and_drain_admits_it(autojump_clock):
    """put() on a full box blocks until drain() makes room, then the item is in the box."""
    mailbox = filled("a", max_size=1)
    done: list[str] = []

    async def put(item: str) -> None:
        await mailbox.put(item)
        done.append(item)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(put, "b")
            await trio.testing.wait_all_tasks_blocked()
            assert done == []
            assert mailbox.statistics().waiting_putters == 1
            assert mailbox.drain() == ["a"]
            assert mailbox.peek_all() == ["b"]  # admitted by drain() itself
    assert done == ["b"]


async def test_blocked_puts_are_admitted_in_arrival_order(autojump_clock):
    """Several tasks blocked in put() get into the box first come, first served."""
    mailbox = filled("a", max_size=1, mode="all")
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for item in "bcd":
                nursery.start_soon(mailbox.put, item)
                await trio.testing.wait_all_tasks_blocked()
            collected: list[str] = []
            while len(collected) < 4:
                await mailbox.wait_nonempty()
                collected += mailbox.drain()
    assert collected == ["a", "b", "c", "d"]


async def test_a_cancelled_blocked_put_leaves_the_others_in_order(autojump_clock):
    """A put cancelled while queued between two others adds nothing; the puts before and
    after it are admitted in their order, each unblocked once its item is in the box."""
    mailbox = filled("a", max_size=1, mode="one-at-a-time")
    done: list[str] = []

    async def put(item: str, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            await mailbox.put(item)
            done.append(item)

    middle = trio.CancelScope()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(put, "b")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(put, "x", middle)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(put, "c")
            await trio.testing.wait_all_tasks_blocked()
            middle.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert mailbox.statistics().waiting_putters == 2
            collected = mailbox.drain()
            await trio.testing.wait_all_tasks_blocked()
            assert done == ["b"]  # admitted with the room drain made; "c" still waits
            collected += mailbox.drain()
            await trio.testing.wait_all_tasks_blocked()
            collected += mailbox.drain()
    assert collected == ["a", "b", "c"]
    assert done == ["b", "c"]
    assert mailbox.statistics().waiting_putters == 0


async def test_clear_admits_blocked_puts(autojump_clock):
    """clear() frees room, so blocked put() calls finish and their items stay in the box."""
    mailbox = filled("a", "b", max_size=2)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mailbox.put, "c")
            await trio.testing.wait_all_tasks_blocked()
            assert mailbox.clear() == ["a", "b"]
    assert mailbox.peek_all() == ["c"]


async def test_put_with_room_does_not_wait():
    """put() on a box with room adds the item right away."""
    mailbox: Mailbox[str] = Mailbox(max_size=2)
    await mailbox.put("a")
    await mailbox.put("b")
    assert mailbox.peek_all() == ["a", "b"]


async def test_a_cancelled_put_does_not_add_its_item(autojump_clock):
    """A put() cancelled while waiting leaves neither its item nor a waiting entry behind."""
    mailbox = filled("a", max_size=1)
    with trio.move_on_after(1) as scope:
        await mailbox.put("lost")
    assert scope.cancelled_caught
    assert mailbox.statistics().waiting_putters == 0
    assert mailbox.drain() == ["a"]
    assert mailbox.drain() == []
    await mailbox.put("b")
    assert mailbox.peek_all() == ["b"]


# -- notification ----------------------------------------------------------------------------


async def test_wait_nonempty_returns_at_once_when_items_are_queued():
    """wait_nonempty() returns immediately if the box already has an item."""
    mailbox = filled("a")
    await mailbox.wait_nonempty()
    assert mailbox.has_items


async def test_wait_nonempty_waits_for_a_put(autojump_clock):
    """wait_nonempty() blocks on an empty box until an item is put."""
    mailbox: Mailbox[str] = Mailbox()
    woke: list[bool] = []

    async def wait() -> None:
        await mailbox.wait_nonempty()
        woke.append(mailbox.has_items)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            assert woke == []
            mailbox.put_nowait("a")
    assert woke == [True]


async def test_a_cancelled_wait_nonempty_leaves_no_state(autojump_clock):
    """A cancelled wait_nonempty() leaves the box working for later waiters."""
    mailbox: Mailbox[str] = Mailbox()
    with trio.move_on_after(1) as scope:
        await mailbox.wait_nonempty()
    assert scope.cancelled_caught
    mailbox.put_nowait("a")
    with trio.fail_after(TIMEOUT):
        await mailbox.wait_nonempty()


def test_arrival_event_is_already_set_when_items_are_queued():
    """arrival_event() returns a set event if the box is non-empty at the call."""
    mailbox = filled("a")
    assert mailbox.arrival_event().is_set()


def test_arrival_event_is_set_by_the_next_put_and_shared_until_drained():
    """An event taken from an empty box is set by the next put; callers share it."""
    mailbox: Mailbox[str] = Mailbox()
    event = mailbox.arrival_event()
    assert mailbox.arrival_event() is event
    assert not event.is_set()
    mailbox.put_nowait("a")
    assert event.is_set()
    mailbox.put_nowait("b")
    assert mailbox.drain() == ["a"]
    assert mailbox.arrival_event() is event  # still non-empty: still the set event


def test_arrival_event_is_fresh_after_the_box_is_drained():
    """Once drained empty, arrival_event() returns a new unset event; the old stays set."""
    mailbox = filled("a")
    old = mailbox.arrival_event()
    assert mailbox.drain() == ["a"]
    new = mailbox.arrival_event()
    assert new is not old
    assert old.is_set()
    assert not new.is_set()
    mailbox.put_nowait("b")
    assert new.is_set()


async def test_arrival_event_closes_an_intake_while_work_is_running(autojump_clock):
    """A worker watching arrival_event() stops starting new work when an item arrives."""
    mailbox: Mailbox[str] = Mailbox()
    started: list[int] = []
    intake_closed = mailbox.arrival_event()

    async def run_batch() -> None:
        for call in range(5):
            if intake_closed.is_set():
                return
            started.append(call)
            await trio.sleep(1)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_batch)
            await trio.sleep(1.5)
            mailbox.put_nowait("steer")
    assert started == [0, 1]


# -- closing ---------------------------------------------------------------------------------


def test_close_refuses_puts_but_keeps_items_drainable():
    """After close(), put_nowait raises ClosedResourceError and queued items still drain."""
    mailbox = filled("a", "b")
    mailbox.close()
    mailbox.close()  # idempotent
    assert mailbox.closed
    with pytest.raises(trio.ClosedResourceError):
        mailbox.put_nowait("c")
    assert mailbox.drain() == ["a"]
    assert mailbox.clear() == ["b"]


async def test_close_rejects_put_calls_before_and_during_their_wait(autojump_clock):
    """close() makes waiting put() calls raise ClosedResourceError, and later ones too."""
    mailbox = filled("a", max_size=1)
    errors: list[type[BaseException]] = []

    async def put(item: str) -> None:
        try:
            await mailbox.put(item)
        except trio.ClosedResourceError as exc:
            errors.append(type(exc))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(put, "b")
            nursery.start_soon(put, "c")
            await trio.testing.wait_all_tasks_blocked()
            mailbox.close()
    assert errors == [trio.ClosedResourceError] * 2
    await put("d")
    assert len(errors) == 3
    assert mailbox.peek_all() == ["a"]
    assert mailbox.statistics().waiting_putters == 0


async def test_close_wakes_wait_nonempty_with_end_of_channel(autojump_clock):
    """wait_nonempty() on a closed, empty box raises EndOfChannel instead of hanging."""
    mailbox: Mailbox[str] = Mailbox()
    outcome: list[str] = []

    async def wait() -> None:
        try:
            await mailbox.wait_nonempty()
        except trio.EndOfChannel:
            outcome.append("end")

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            mailbox.close()
    assert outcome == ["end"]
    with pytest.raises(trio.EndOfChannel):
        await mailbox.wait_nonempty()


async def test_wait_nonempty_on_a_closed_box_with_items_returns():
    """A closed box that still holds items satisfies wait_nonempty()."""
    mailbox = filled("a")
    mailbox.close()
    await mailbox.wait_nonempty()
    assert mailbox.drain() == ["a"]


def test_statistics_track_size_and_peak():
    """statistics() reports the current size, the peak size and the capacity."""
    mailbox = filled("a", "b", "c", max_size=5)
    mailbox.drain()
    assert mailbox.statistics() == MailboxStatistics(
        size=2, peak_size=3, max_size=5, waiting_putters=0, closed=False
    )
    assert Mailbox().max_size == MAILBOX_SIZE
