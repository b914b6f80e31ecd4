"""Tests for pitrio.channels.Broadcast: ordered fan-out to callbacks and subscriptions."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from pitrio.channels import (
    DELIVERED,
    SUBSCRIPTION_BUFFER,
    Broadcast,
    BroadcastStatistics,
    SubscriberOverflow,
    Subscription,
    SubscriptionStatistics,
)

TIMEOUT = 10  # virtual seconds (autojump clock): only a deadlock can reach it


# -- callbacks -------------------------------------------------------------------------------


async def test_callbacks_see_events_in_publish_order_and_subscription_order():
    """Each event reaches every callback in subscription order, events in publish order."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[tuple[str, int]] = []
    broadcast.subscribe(lambda e: seen.append(("first", e)))

    async def second(event: int) -> None:
        seen.append(("second", event))

    broadcast.subscribe(second)
    broadcast.subscribe(lambda e: seen.append(("third", e)))
    await broadcast.publish(1)
    await broadcast.publish(2)
    assert seen == [
        ("first", 1),
        ("second", 1),
        ("third", 1),
        ("first", 2),
        ("second", 2),
        ("third", 2),
    ]


async def test_publish_returns_after_async_callbacks_complete(autojump_clock):
    """publish() awaits each async callback before serving the next subscriber and returning."""
    broadcast: Broadcast[str] = Broadcast()
    release = trio.Event()
    seen: list[str] = []
    published = False

    async def slow(event: str) -> None:
        await release.wait()
        seen.append("slow")

    broadcast.subscribe(slow)
    broadcast.subscribe(lambda e: seen.append("after"))

    async def publish() -> None:
        nonlocal published
        await broadcast.publish("x")
        published = True

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(publish)
            await trio.testing.wait_all_tasks_blocked()
            assert (seen, published) == ([], False)
            release.set()
    assert seen == ["slow", "after"]
    assert published


async def test_a_raising_sync_callback_is_logged_and_does_not_stop_delivery():
    """A sync callback that raises is logged as subscriber_failed; later callbacks still run."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []

    def boom(event: int) -> None:
        raise ValueError("boom")

    broadcast.subscribe(boom)
    broadcast.subscribe(seen.append)
    with capture_logs() as logs:
        await broadcast.publish(1)
        await broadcast.publish(2)
    assert seen == [1, 2]
    assert [log["event"] for log in logs] == ["subscriber_failed", "subscriber_failed"]
    assert logs[0]["log_level"] == "error"
    assert logs[0]["subscriber"] is boom
    assert logs[0]["exc_info"] is True


async def test_a_raising_async_callback_is_logged_and_does_not_stop_delivery():
    """An async callback that raises is logged as subscriber_failed; later callbacks still run."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []

    async def boom(event: int) -> None:
        await trio.lowlevel.checkpoint()
        raise RuntimeError("boom")

    broadcast.subscribe(boom)
    broadcast.subscribe(seen.append)
    with capture_logs() as logs:
        await broadcast.publish(1)
    assert seen == [1]
    assert [log["event"] for log in logs] == ["subscriber_failed"]


async def test_unsubscribe_stops_delivery_and_is_idempotent():
    """The function returned by subscribe() stops delivery and may be called repeatedly."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []
    unsubscribe = broadcast.subscribe(seen.append)
    await broadcast.publish(1)
    unsubscribe()
    unsubscribe()
    await broadcast.publish(2)
    assert seen == [1]
    assert broadcast.statistics().callbacks == 0


async def test_a_callback_may_unsubscribe_itself_during_delivery():
    """A callback that unsubscribes itself finishes the current event and gets no more."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[tuple[str, int]] = []

    def once(event: int) -> None:
        seen.append(("once", event))
        unsubscribe_once()

    unsubscribe_once = broadcast.subscribe(once)
    broadcast.subscribe(lambda e: seen.append(("always", e)))
    await broadcast.publish(1)
    await broadcast.publish(2)
    assert seen == [("once", 1), ("always", 1), ("always", 2)]


async def test_unsubscribing_a_later_subscriber_during_delivery_skips_it_at_once():
    """A subscriber removed by an earlier callback does not receive the current event."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[tuple[str, int]] = []

    def remover(event: int) -> None:
        seen.append(("remover", event))
        unsubscribe_victim()

    broadcast.subscribe(remover)
    unsubscribe_victim = broadcast.subscribe(lambda e: seen.append(("victim", e)))
    broadcast.subscribe(lambda e: seen.append(("last", e)))
    await broadcast.publish(1)
    assert seen == [("remover", 1), ("last", 1)]


async def test_a_subscriber_added_during_delivery_starts_with_the_next_event():
    """A callback subscribed while an event is delivered first receives the next event."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[tuple[str, int]] = []

    def adder(event: int) -> None:
        seen.append(("adder", event))
        if event == 1:
            broadcast.subscribe(lambda e: seen.append(("added", e)))

    broadcast.subscribe(adder)
    await broadcast.publish(1)
    await broadcast.publish(2)
    assert seen == [("adder", 1), ("adder", 2), ("added", 2)]


async def test_cancellation_inside_an_async_callback_propagates(autojump_clock):
    """Cancelling publish() during an async callback propagates and leaves the broadcast usable."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[tuple[str, int]] = []

    async def hang(event: int) -> None:
        seen.append(("hang", event))
        if event == 1:
            await trio.sleep_forever()

    broadcast.subscribe(hang)
    broadcast.subscribe(lambda e: seen.append(("after", e)))
    with capture_logs() as logs:
        with trio.move_on_after(1) as scope:
            await broadcast.publish(1)
        assert scope.cancelled_caught
        with trio.fail_after(TIMEOUT):
            await broadcast.publish(2)
    assert seen == [("hang", 1), ("hang", 2), ("after", 2)]
    assert logs == []


async def test_a_callback_that_publishes_again_is_reported_instead_of_deadlocking(
    autojump_clock,
):
    """An async callback awaiting publish() on the same broadcast fails loudly, not silently."""
    broadcast: Broadcast[int] = Broadcast()

    async def reentrant(event: int) -> None:
        await broadcast.publish(event + 1)

    broadcast.subscribe(reentrant)
    with capture_logs() as logs, trio.fail_after(TIMEOUT):
        await broadcast.publish(1)
    assert [log["event"] for log in logs] == ["subscriber_failed"]


async def test_concurrent_publishers_are_served_one_event_at_a_time(autojump_clock):
    """Events from concurrent publishers never interleave inside one delivery."""
    broadcast: Broadcast[str] = Broadcast()
    seen: list[tuple[str, str]] = []

    async def first(event: str) -> None:
        seen.append(("first", event))
        await trio.sleep(1)

    broadcast.subscribe(first)
    broadcast.subscribe(lambda e: seen.append(("second", e)))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for event in "abc":
                nursery.start_soon(broadcast.publish, event)
                await trio.testing.wait_all_tasks_blocked()
    assert seen == [(name, event) for event in "abc" for name in ("first", "second")]


async def test_a_cancelled_queued_publisher_does_not_disturb_the_others(autojump_clock):
    """A publish() cancelled while queued behind another delivers nothing and blocks nobody."""
    broadcast: Broadcast[str] = Broadcast()
    seen: list[str] = []
    release = trio.Event()

    async def gate(event: str) -> None:
        if event == "a":
            await release.wait()
        seen.append(event)

    broadcast.subscribe(gate)

    async def cancelled_publish(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            await broadcast.publish("b")

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(broadcast.publish, "a")
            await trio.testing.wait_all_tasks_blocked()
            scope = await nursery.start(cancelled_publish)
            nursery.start_soon(broadcast.publish, "c")
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        await broadcast.publish("d")
    assert seen == ["a", "c", "d"]


# -- subscriptions ---------------------------------------------------------------------------


async def test_subscription_receives_events_in_order_with_callbacks_in_between(autojump_clock):
    """A subscription sees the same order as callbacks and ends when the broadcast closes."""
    broadcast: Broadcast[int] = Broadcast()
    called: list[int] = []
    received: list[int] = []
    broadcast.subscribe(called.append)

    async def read(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with broadcast.open_subscription(max_buffer=2) as subscription:
            task_status.started()
            async for event in subscription:
                received.append(event)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(read)
            for i in range(10):
                await broadcast.publish(i)
            broadcast.close()
    assert called == received == list(range(10))


async def test_block_policy_makes_publish_wait_for_the_reader(autojump_clock):
    """Under "block", publish() waits while the subscription is full and resumes on a read."""
    broadcast: Broadcast[int] = Broadcast()
    published: list[int] = []

    async def produce() -> None:
        for i in range(3):
            await broadcast.publish(i)
            published.append(i)

    with trio.fail_after(TIMEOUT):
        async with (
            broadcast.open_subscription(max_buffer=2, policy="block") as subscription,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            assert published == [0, 1]
            assert await subscription.receive() == 0
            await trio.testing.wait_all_tasks_blocked()
            assert published == [0, 1, 2]
            assert [await subscription.receive() for _ in range(2)] == [1, 2]
            assert subscription.statistics() == SubscriptionStatistics(
                buffered=0, peak_buffered=2, dropped=0, max_buffer=2, policy="block"
            )


async def test_drop_oldest_policy_keeps_the_newest_events_and_counts_drops():
    """Under "drop_oldest", a full subscription discards its oldest events; publish never waits."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription(max_buffer=3, policy="drop_oldest") as subscription:
        for i in range(10):
            await broadcast.publish(i)
        broadcast.close()
        assert [event async for event in subscription] == [7, 8, 9]
        stats = subscription.statistics()
    assert (stats.dropped, stats.peak_buffered, stats.buffered) == (7, 3, 0)


async def test_drop_newest_policy_keeps_the_oldest_events_and_counts_drops():
    """Under "drop_newest", a full subscription discards new events; publish never waits."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription(max_buffer=3, policy="drop_newest") as subscription:
        for i in range(10):
            await broadcast.publish(i)
        assert subscription.statistics().dropped == 7
        assert subscription.receive_nowait() == 0
        await broadcast.publish(10)
        broadcast.close()
        assert [event async for event in subscription] == [1, 2, 10]


async def test_error_policy_cuts_off_a_subscriber_that_overflows():
    """Under "error", overflow removes the subscription and its next read raises."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription(max_buffer=2, policy="error") as subscription:
        await broadcast.publish(0)
        await broadcast.publish(1)
        assert broadcast.statistics().subscriptions == 1
        await broadcast.publish(2)  # overflow: never raises in the publisher
        assert broadcast.statistics().subscriptions == 0
        with pytest.raises(SubscriberOverflow) as excinfo:
            await subscription.receive()
        assert isinstance(excinfo.value, trio.BrokenResourceError)
        assert excinfo.value.max_buffer == 2
        with pytest.raises(SubscriberOverflow):
            async for _ in subscription:
                pass
        assert subscription.statistics().dropped == 3  # the overflowing event + 2 discarded


async def test_error_policy_wakes_a_waiting_reader(autojump_clock):
    """A reader that is not reading fast enough learns of the overflow on its next read."""
    broadcast: Broadcast[int] = Broadcast()
    outcome: list[str] = []

    async def read(subscription: Subscription[int]) -> None:
        try:
            async for _ in subscription:
                await trio.sleep(1)  # slower than the publisher
        except SubscriberOverflow:
            outcome.append("overflow")

    with trio.fail_after(TIMEOUT):
        async with (
            broadcast.open_subscription(max_buffer=1, policy="error") as subscription,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(read, subscription)
            for i in range(3):
                await broadcast.publish(i)
    assert outcome == ["overflow"]


async def test_close_ends_subscriptions_after_their_buffered_events(autojump_clock):
    """Broadcast.close() lets readers drain their buffers, then ends their async for."""
    broadcast: Broadcast[int] = Broadcast()
    received: dict[str, list[int]] = {"idle": [], "waiting": []}

    async def read(
        name: str, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with broadcast.open_subscription() as subscription:
            task_status.started()
            if name == "idle":
                await gate.wait()
            async for event in subscription:
                received[name].append(event)

    gate = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(read, "idle")
            await nursery.start(read, "waiting")
            await broadcast.publish(1)
            await broadcast.publish(2)
            await trio.testing.wait_all_tasks_blocked()
            broadcast.close()
            gate.set()
    assert received == {"idle": [1, 2], "waiting": [1, 2]}
    assert broadcast.statistics() == BroadcastStatistics(callbacks=0, subscriptions=0, closed=True)


async def test_close_releases_a_publisher_blocked_on_a_full_subscription(autojump_clock):
    """Closing the broadcast wakes a publish() waiting for a full "block" subscription."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription(max_buffer=1) as subscription:
        await broadcast.publish(0)
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(broadcast.publish, 1)
                await trio.testing.wait_all_tasks_blocked()
                broadcast.close()
        assert [event async for event in subscription] == [0]


async def test_operations_after_close_raise_closed_resource_error():
    """publish(), subscribe() and open_subscription() on a closed broadcast raise."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []
    unsubscribe = broadcast.subscribe(seen.append)
    broadcast.close()
    broadcast.close()  # idempotent
    unsubscribe()  # harmless after close
    assert broadcast.closed
    with pytest.raises(trio.ClosedResourceError):
        await broadcast.publish(1)
    with pytest.raises(trio.ClosedResourceError):
        broadcast.subscribe(seen.append)
    with pytest.raises(trio.ClosedResourceError):
        async with broadcast.open_subscription():
            pass
    assert seen == []


async def test_leaving_the_subscription_block_unsubscribes():
    """Exiting open_subscription() removes the subscription; reading it afterwards raises."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription() as subscription:
        assert broadcast.statistics().subscriptions == 1
        await broadcast.publish(1)
    assert broadcast.statistics().subscriptions == 0
    await broadcast.publish(2)  # nobody listening: returns at once
    with pytest.raises(trio.ClosedResourceError):
        await subscription.receive()
    assert subscription.statistics().buffered == 0


async def test_a_reader_leaving_releases_a_blocked_publisher(autojump_clock):
    """A publish() blocked on a full subscription returns when that reader leaves."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, broadcast.open_subscription(max_buffer=1):
            broadcast.subscribe(seen.append)  # served after the subscription
            await broadcast.publish(0)
            nursery.start_soon(broadcast.publish, 1)
            await trio.testing.wait_all_tasks_blocked()
            assert seen == [0]  # delivery of 1 is stuck at the subscription
    assert seen == [0, 1]


async def test_a_cancelled_reader_leaves_no_stuck_state(autojump_clock):
    """A reader cancelled while waiting can read again and nothing is lost."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription() as subscription:
        with trio.move_on_after(1) as scope:
            await subscription.receive()
        assert scope.cancelled_caught
        await broadcast.publish(1)
        assert await subscription.receive() == 1


async def test_a_cancelled_blocked_publish_leaves_the_broadcast_usable(autojump_clock):
    """A publish() cancelled while waiting for a full subscription releases the broadcast."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []
    async with broadcast.open_subscription(max_buffer=1) as subscription:
        broadcast.subscribe(seen.append)
        await broadcast.publish(0)
        with trio.move_on_after(1) as scope:
            await broadcast.publish(1)
        assert scope.cancelled_caught
        assert seen == [0]  # the callback after the full subscription never saw 1
        assert subscription.receive_nowait() == 0
        with trio.fail_after(TIMEOUT):
            await broadcast.publish(2)
        assert subscription.receive_nowait() == 2
    assert seen == [0, 2]


async def test_receive_nowait_raises_would_block_when_empty():
    """receive_nowait() returns buffered events and raises trio.WouldBlock when empty."""
    broadcast: Broadcast[int] = Broadcast()
    async with broadcast.open_subscription() as subscription:
        with pytest.raises(trio.WouldBlock):
            subscription.receive_nowait()
        await broadcast.publish(5)
        assert subscription.receive_nowait() == 5
        broadcast.close()
        with pytest.raises(trio.EndOfChannel):
            subscription.receive_nowait()


async def test_statistics_report_subscriber_counts_and_defaults():
    """Broadcast and subscription statistics reflect counts, buffer size and policy."""
    broadcast: Broadcast[int] = Broadcast()
    broadcast.subscribe(lambda e: None)
    async with broadcast.open_subscription(policy="drop_newest") as subscription:
        assert broadcast.statistics() == BroadcastStatistics(
            callbacks=1, subscriptions=1, closed=False
        )
        assert subscription.max_buffer == SUBSCRIPTION_BUFFER
        assert subscription.policy == "drop_newest"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"max_buffer": 0}, "max_buffer"), ({"policy": "coalesce"}, "policy")],
)
async def test_invalid_subscription_arguments_raise_value_error(kwargs, message):
    """open_subscription() rejects a buffer smaller than 1 and unknown policies."""
    broadcast: Broadcast[int] = Broadcast()
    with pytest.raises(ValueError, match=message):
        async with broadcast.open_subscription(**kwargs):
            pass


@settings(max_examples=50, deadline=None, database=None)
@given(
    max_buffers=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=4),
    n_events=st.integers(min_value=0, max_value=30),
    reader_pauses=st.lists(st.booleans(), max_size=30),
)
def test_block_subscriptions_see_every_event_in_order(max_buffers, n_events, reader_pauses):
    """Every "block" subscription receives every event in publish order, whatever its size."""

    async def main() -> list[list[int]]:
        broadcast: Broadcast[int] = Broadcast()
        received: list[list[int]] = [[] for _ in max_buffers]

        async def read(
            index: int, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
        ) -> None:
            pauses = iter(reader_pauses)
            async with broadcast.open_subscription(max_buffer=max_buffers[index]) as sub:
                task_status.started()
                async for event in sub:
                    received[index].append(event)
                    if next(pauses, False):
                        await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for index in range(len(max_buffers)):
                await nursery.start(read, index)
            for i in range(n_events):
                await broadcast.publish(i)
            broadcast.close()
        return received

    assert trio.run(main) == [list(range(n_events))] * len(max_buffers)


async def test_sync_callback_publishing_does_not_nest_a_delivery() -> None:
    """A sync callback that calls publish on the same broadcast gets a queued publish: the
    nested event is not delivered in the middle of the outer one's delivery."""
    bus: Broadcast[int] = Broadcast()
    seen: list[int] = []
    nested: list[Any] = []

    def first(event: int) -> None:
        if event == 1:
            nested.append(bus.publish(2))

    bus.subscribe(first)
    bus.subscribe(seen.append)
    await bus.publish(1)
    assert seen == [1]
    nested[0].close()  # never awaited: the publish it stands for is dropped


async def test_publish_to_sync_subscribers_is_done_during_the_call() -> None:
    """With only sync callbacks and subscriptions with room, publish delivers during the call
    and returns DELIVERED (nothing left to await)."""
    bus: Broadcast[int] = Broadcast()
    seen: list[int] = []
    bus.subscribe(seen.append)
    async with bus.open_subscription(max_buffer=4) as sub:
        assert bus.publish(7) is DELIVERED
        assert seen == [7]
        assert sub.receive_nowait() == 7


async def test_a_queued_publish_awaited_after_the_lock_was_released_still_delivers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A publish queued behind another, whose awaitable only starts after that one finished
    (handed to another task), takes the free lock
    instead of waiting for a hand-over that never comes."""
    bus: Broadcast[int] = Broadcast()
    seen: list[int] = []

    async def slow(event: int) -> None:
        await trio.sleep(0.01)
        seen.append(event)

    bus.subscribe(slow)
    first = bus.publish(1)  # holds the lock until awaited to the end
    second = bus.publish(2)  # queued: the lock is taken
    with trio.fail_after(10):  # virtual seconds: only a lost hand-over reaches it
        await first
        await second
        await bus.publish(3)
    assert seen == [1, 2, 3]


async def test_a_lone_callback_is_served_as_any_callback(autojump_clock):
    """With one callback subscribed (an agent and its listener) publish serves it without its
    loop, and nothing else changes: a raise is logged and the next event still delivered, an
    async callback is awaited, unsubscribing stops it, and a callback left alone after another
    one left is served alone."""
    broadcast: Broadcast[int] = Broadcast()
    seen: list[int] = []

    def boom(event: int) -> None:
        seen.append(event)
        if event == 1:
            raise ValueError("boom")

    unsubscribe = broadcast.subscribe(boom)
    with capture_logs() as logs:
        await broadcast.publish(1)
        await broadcast.publish(2)
    assert seen == [1, 2]
    assert [(log["event"], log["subscriber"]) for log in logs] == [("subscriber_failed", boom)]
    unsubscribe()
    await broadcast.publish(3)
    assert seen == [1, 2]

    async def slow(event: int) -> None:
        await trio.sleep(1)
        seen.append(-event)

    broadcast.subscribe(slow)
    await broadcast.publish(4)  # returns after the sleep: the callback was awaited
    assert seen == [1, 2, -4]
    unsubscribe_other = broadcast.subscribe(seen.append)
    await broadcast.publish(5)
    assert seen == [1, 2, -4, -5, 5]
    unsubscribe_other()
    await broadcast.publish(6)
    assert seen == [1, 2, -4, -5, 5, -6]
    broadcast.close()
    with pytest.raises(trio.ClosedResourceError):
        await broadcast.publish(7)
