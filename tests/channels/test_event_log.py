"""Tests for pitrio.channels.EventLog: sequenced delivery, replay, resume and slow-reader policies."""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from pitrio.channels import (
    COALESCE_OVERRUN,
    REPLAY_RING,
    EventLog,
    EventLogStatistics,
    EventLogSubscriptionStatistics,
    Sequenced,
    Snapshot,
    SubscriberLagged,
    SubscriberOverflow,
)

TIMEOUT = 10  # virtual seconds (autojump clock): only a deadlock can reach it


@attrs.frozen
class Delta:
    """A stand-in for a ``message_update``: a text delta and the message so far."""

    message: int
    text: str
    partial: str


@attrs.frozen
class Mark:
    """A stand-in for a structural event (``message_end``, ``turn_end``...)."""

    name: str


Event: TypeAlias = Delta | Mark


def merge(older: Event, newer: Event) -> Event | None:
    """Merge consecutive deltas of one message: texts concatenated, the newer partial wins."""
    if type(older) is Delta and type(newer) is Delta and older.message == newer.message:
        return Delta(older.message, older.text + newer.text, newer.partial)
    return None


def make_log(**kwargs: Any) -> EventLog[Event]:
    return EventLog(merge=merge, **kwargs)


def deltas(message: int, *texts: str) -> list[Delta]:
    """The deltas of one streamed message, each carrying the text so far."""
    out: list[Delta] = []
    partial = ""
    for text in texts:
        partial += text
        out.append(Delta(message, text, partial))
    return out


def drain(sub: Any) -> list[Any]:
    """Read every item buffered now."""
    items = []
    while True:
        try:
            items.append(sub.receive_nowait())
        except trio.WouldBlock:
            return items


def events_of(items: list[Any]) -> list[Any]:
    return [item.event for item in items]


def seqs_of(items: list[Any]) -> list[int]:
    return [item.seq for item in items]


# -- numbering and the ring ------------------------------------------------------------------


async def test_publish_numbers_events_from_one_and_delivers_them_in_order():
    """publish() returns 1, 2, 3, ...; subscriptions get Sequenced items, callbacks the events."""
    log: EventLog[str] = EventLog()
    seen: list[tuple[str, int]] = []
    log.subscribe(lambda e: seen.append((e, log.seq)))
    assert log.seq == 0
    async with log.open_subscription() as sub:
        assert [await log.publish(e) for e in "abc"] == [1, 2, 3]
        items = drain(sub)
    assert [(item.seq, item.event) for item in items] == [(1, "a"), (2, "b"), (3, "c")]
    assert all(type(item) is Sequenced for item in items)
    assert seen == [("a", 1), ("b", 2), ("c", 3)]
    assert log.seq == 3


async def test_publish_does_not_checkpoint_when_nothing_waits():
    """Under an already cancelled scope, publish() still delivers when nothing has to wait."""
    log = make_log()
    seen: list[Event] = []
    log.subscribe(seen.append)
    async with (
        log.open_subscription(max_buffer=1, policy="coalesce") as coalescing,
        log.open_subscription(max_buffer=8) as blocking,
    ):
        with trio.CancelScope() as scope:
            scope.cancel()
            for event in deltas(1, "a", "b"):
                await log.publish(event)
        assert not scope.cancelled_caught
        assert len(seen) == 2
        assert len(drain(coalescing)) == 1
        assert len(drain(blocking)) == 2


async def test_the_ring_keeps_only_the_newest_events():
    """A ring of size 3 keeps the last three events; oldest_seq moves with it."""
    log: EventLog[int] = EventLog(ring_size=3)
    assert (log.ring_size, log.oldest_seq) == (3, 1)
    for i in range(5):
        await log.publish(i)
    stats = log.statistics()
    assert (stats.seq, stats.ring_size, stats.ring_length, stats.oldest_seq) == (5, 3, 3, 3)
    async with log.open_subscription(from_seq=2) as sub:
        assert [(item.seq, item.event) for item in drain(sub)] == [(3, 2), (4, 3), (5, 4)]


async def test_the_default_ring_holds_replay_ring_events():
    """An EventLog keeps REPLAY_RING events unless told otherwise."""
    assert EventLog().ring_size == REPLAY_RING


# -- resume ----------------------------------------------------------------------------------


@pytest.mark.parametrize("from_seq", [0, 1, 3, 5])
async def test_resume_from_a_cursor_in_the_ring_replays_then_follows_live(from_seq):
    """from_seq=N yields the ring's events after N, then live events, none lost or doubled."""
    log: EventLog[int] = EventLog()
    for i in range(1, 6):
        await log.publish(i)
    async with log.open_subscription(from_seq=from_seq, max_buffer=1) as sub:
        assert sub.statistics().replay == 5 - from_seq
        await log.publish(6)  # replayed items do not count against max_buffer
        items = drain(sub)
    assert seqs_of(items) == list(range(from_seq + 1, 7))
    assert events_of(items) == list(range(from_seq + 1, 7))


async def test_without_a_cursor_only_later_events_arrive():
    """from_seq=None starts with the next published event."""
    log: EventLog[int] = EventLog()
    await log.publish(1)
    async with log.open_subscription() as sub:
        assert sub.last_seq == 1
        await log.publish(2)
        assert seqs_of(drain(sub)) == [2]


async def test_a_subscription_opened_during_an_awaited_callback_sees_that_event_once(
    autojump_clock,
):
    """An event whose callbacks are still running is replayed to a new cursor, never doubled."""
    log: EventLog[int] = EventLog()
    in_callback = trio.Event()
    release = trio.Event()

    async def slow(event: int) -> None:
        if event == 2:
            in_callback.set()
            await release.wait()

    log.subscribe(slow)
    await log.publish(1)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.publish, 2)
            await in_callback.wait()
            async with (
                log.open_subscription(from_seq=1) as resumed,
                log.open_subscription() as live,
            ):
                release.set()
                await trio.testing.wait_all_tasks_blocked()
                await log.publish(3)
                assert seqs_of(drain(resumed)) == [2, 3]
                assert seqs_of(drain(live)) == [3]


@pytest.mark.parametrize("reconnect_every", [1, 3, 7])
async def test_reconnecting_readers_lose_and_double_nothing_while_publishing(
    autojump_clock, reconnect_every
):
    """A reader that keeps reconnecting with its last seq sees every event exactly once."""
    total = 200
    log: EventLog[int] = EventLog(ring_size=total)
    received: list[int] = []

    async def publisher() -> None:
        for i in range(1, total + 1):
            await log.publish(i)
            await trio.lowlevel.checkpoint()  # a chance to publish while the reader reconnects
        log.close()

    async def reader() -> None:
        cursor = 0
        for _ in range(2 * total):  # bounded: a cursor that stops moving fails, never spins
            async with log.open_subscription(from_seq=cursor, max_buffer=4) as sub:
                for _ in range(reconnect_every):
                    try:
                        item = await sub.receive()
                    except trio.EndOfChannel:
                        return
                    received.append(item.event)
                    assert item.seq == item.event
                cursor = sub.last_seq
            await trio.lowlevel.checkpoint()
        raise AssertionError("the reader never reached the end")

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(publisher)
    assert received == list(range(1, total + 1))


@pytest.mark.parametrize("from_seq", [1, 2, 9])
async def test_a_cursor_outside_the_ring_gets_a_snapshot_then_live_events(from_seq):
    """An evicted (or future) cursor first yields a Snapshot at the current seq, then live events."""
    state = {"messages": []}
    log: EventLog[int] = EventLog(ring_size=2, snapshot=lambda: dict(state))
    for i in range(1, 6):
        state["messages"] = [*state["messages"], i]
        await log.publish(i)
    async with log.open_subscription(from_seq=from_seq) as sub:
        await log.publish(6)
        items = drain(sub)
        assert sub.last_seq == 6
    assert items[0] == Snapshot(seq=5, state={"messages": [1, 2, 3, 4, 5]})
    assert [(item.seq, item.event) for item in items[1:]] == [(6, 6)]


async def test_the_oldest_cursor_still_in_reach_needs_no_snapshot():
    """from_seq == oldest_seq - 1 replays the whole ring instead of snapshotting."""
    log: EventLog[int] = EventLog(ring_size=2, snapshot=lambda: "state")
    for i in range(1, 6):
        await log.publish(i)
    async with log.open_subscription(from_seq=log.oldest_seq - 1) as sub:
        assert seqs_of(drain(sub)) == [4, 5]


async def test_a_snapshot_without_a_snapshot_function_has_no_state():
    """A log made without snapshot= still answers an evicted cursor, with state None."""
    log: EventLog[int] = EventLog(ring_size=0)
    await log.publish(1)
    async with log.open_subscription(from_seq=0) as sub:
        assert drain(sub) == [Snapshot(seq=1, state=None)]


# -- coalesce --------------------------------------------------------------------------------


async def test_coalescing_merges_deltas_and_keeps_structural_events_under_a_stalled_reader():
    """A full "coalesce" buffer merges consecutive deltas of one message and keeps every mark."""
    log = make_log()
    published: list[Event] = [
        Mark("turn_start"),
        Mark("message_start"),
        *deltas(1, "He", "llo", ", ", "wor", "ld"),
        Mark("message_end"),
        Mark("message_start"),
        *deltas(2, "a", "b", "c"),
        Mark("message_end"),
    ]
    async with log.open_subscription(max_buffer=2, policy="coalesce") as sub:
        for event in published:
            await log.publish(event)
        stats = sub.statistics()
        items = drain(sub)
    assert [(item.seq, item.event) for item in items] == [
        (1, Mark("turn_start")),
        (2, Mark("message_start")),
        (7, Delta(1, "Hello, world", "Hello, world")),
        (8, Mark("message_end")),
        (9, Mark("message_start")),
        (12, Delta(2, "abc", "abc")),
        (13, Mark("message_end")),
    ]
    assert (stats.buffered, stats.peak_buffered, stats.coalesced, stats.dropped) == (7, 7, 6, 0)


async def test_coalescing_only_starts_when_the_buffer_is_full():
    """A reader that keeps up gets every delta unmerged."""
    log = make_log()
    async with log.open_subscription(max_buffer=4, policy="coalesce") as sub:
        for event in deltas(1, "a", "b", "c"):
            await log.publish(event)
        items = drain(sub)
    assert events_of(items) == deltas(1, "a", "b", "c")
    assert sub.statistics().coalesced == 0


async def test_coalescing_beyond_its_overrun_cuts_the_reader_off_with_its_cursor():
    """More unmergeable events than max_buffer * COALESCE_OVERRUN end the subscription."""
    log = make_log()
    async with log.open_subscription(max_buffer=2, policy="coalesce") as sub:
        await log.publish(Mark("first"))
        assert drain(sub)[0].seq == 1
        limit = 2 * COALESCE_OVERRUN
        for i in range(limit):
            await log.publish(Mark(str(i)))
        assert sub.statistics().buffered == limit
        await log.publish(Mark("one too many"))
        assert log.statistics().subscriptions == ()
        with pytest.raises(SubscriberLagged) as info:
            sub.receive_nowait()
        assert sub.statistics().dropped == limit + 1
    assert (info.value.resume_from, info.value.max_buffer) == (1, 2)


# -- error and block -------------------------------------------------------------------------


async def test_error_policy_ends_the_iterator_with_the_cursor_to_resume_from():
    """An "error" overflow raises SubscriberLagged(resume_from=last seq read); resuming loses nothing."""
    log: EventLog[int] = EventLog()
    async with log.open_subscription(max_buffer=2, policy="error") as sub:
        await log.publish(1)
        assert (await sub.receive()).seq == 1
        for i in range(2, 5):  # 2 and 3 fit, 4 overflows
            await log.publish(i)
        with pytest.raises(SubscriberLagged) as info:
            await sub.receive()
        with pytest.raises(SubscriberLagged):
            async for _ in sub:
                pass
        assert sub.statistics().dropped == 3
    error = info.value
    assert isinstance(error, SubscriberOverflow)
    assert error.resume_from == 1
    assert "resume from seq 1" in str(error)
    await log.publish(5)
    async with log.open_subscription(from_seq=error.resume_from) as resumed:
        assert seqs_of(drain(resumed)) == [2, 3, 4, 5]


async def test_on_cut_off_tells_a_reader_busy_elsewhere_at_once():
    """A subscription's on_cut_off callback runs when the publisher cuts it off (not at the
    reader's next read), once; a subscription that keeps up never calls it."""
    log: EventLog[int] = EventLog()
    calls: list[str] = []
    async with (
        log.open_subscription(max_buffer=2, policy="error") as stalled,
        log.open_subscription(max_buffer=2, policy="error") as reading,
    ):
        stalled.on_cut_off(lambda: calls.append("stalled"))
        reading.on_cut_off(lambda: calls.append("reading"))
        for i in range(1, 3):
            await log.publish(i)
            reading.receive_nowait()
        assert calls == []
        await log.publish(3)  # the third does not fit the stalled one's buffer of 2
        assert calls == ["stalled"]
        await log.publish(4)
        reading.receive_nowait()
        reading.receive_nowait()
        assert calls == ["stalled"]


async def test_block_policy_makes_publish_wait_for_the_reader(autojump_clock):
    """A full "block" subscription holds publish() until the reader makes room."""
    log: EventLog[int] = EventLog()
    published: list[int] = []

    async def publisher() -> None:
        for i in range(1, 5):
            published.append(await log.publish(i))

    with trio.fail_after(TIMEOUT):
        async with (
            log.open_subscription(max_buffer=2) as sub,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(publisher)
            await trio.testing.wait_all_tasks_blocked()
            assert (published, log.seq) == ([1, 2], 3)  # 3 is numbered and waits for room
            assert (await sub.receive()).seq == 1
            await trio.testing.wait_all_tasks_blocked()
            assert published == [1, 2, 3]
            assert seqs_of([await sub.receive() for _ in range(3)]) == [2, 3, 4]
    assert published == [1, 2, 3, 4]
    assert sub.statistics().peak_buffered == 2


async def test_stalled_non_blocking_readers_never_slow_publish_or_other_readers(autojump_clock):
    """With "coalesce" and "error" readers stalled, publish never waits and others keep up."""
    log = make_log()
    async with (
        log.open_subscription(max_buffer=1, policy="coalesce") as stalled_coalesce,
        log.open_subscription(max_buffer=1, policy="error") as stalled_error,
        log.open_subscription(max_buffer=1) as fast,
    ):
        with trio.fail_after(TIMEOUT):
            for event in deltas(1, *"abcdefgh"):
                await log.publish(event)
                assert (await fast.receive()).event == event
        assert [item.event for item in drain(stalled_coalesce)] == [
            Delta(1, "abcdefgh", "abcdefgh")
        ]
        with pytest.raises(SubscriberLagged):
            stalled_error.receive_nowait()


async def test_closing_the_blocking_subscription_releases_a_waiting_publisher(autojump_clock):
    """A publisher waiting for room in a "block" subscription moves on when it closes."""
    log: EventLog[int] = EventLog()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, log.open_subscription(max_buffer=1) as sub:
            await log.publish(1)
            nursery.start_soon(log.publish, 2)
            await trio.testing.wait_all_tasks_blocked()
            assert log.seq == 2
    with pytest.raises(trio.ClosedResourceError):
        sub.receive_nowait()


# -- encoding --------------------------------------------------------------------------------


async def test_each_event_is_encoded_once_however_many_readers_send_it():
    """Three readers (and a replaying fourth) reading .wire encode every event exactly once."""
    encoded: list[int] = []

    def encode(event: int) -> bytes:
        encoded.append(event)
        return str(event).encode()

    log: EventLog[int] = EventLog(encode=encode)
    async with (
        log.open_subscription() as a,
        log.open_subscription() as b,
        log.open_subscription() as c,
    ):
        for i in range(1, 6):
            await log.publish(i)
        wires = [[item.wire for item in drain(sub)] for sub in (a, b, c)]
    async with log.open_subscription(from_seq=0) as replay:
        wires.append([item.wire for item in drain(replay)])
    assert wires == [[b"1", b"2", b"3", b"4", b"5"]] * 4
    assert encoded == [1, 2, 3, 4, 5]


async def test_nothing_is_encoded_that_nobody_reads_and_merged_items_encode_merged():
    """Encoding is lazy, and a merged item's wire is the merged event's encoding."""
    encoded: list[Event] = []

    def encode(event: Event) -> bytes:
        encoded.append(event)
        return repr(event).encode()

    log = make_log(encode=encode)
    async with log.open_subscription(max_buffer=1, policy="coalesce") as sub:
        for event in deltas(1, "a", "b"):
            await log.publish(event)
        assert encoded == []
        (item,) = drain(sub)
        assert item.wire == repr(Delta(1, "ab", "ab")).encode()
        assert item.wire is item.wire
    assert encoded == [Delta(1, "ab", "ab")]


async def test_wire_without_an_encoder_is_a_type_error():
    """A log created without encode= cannot produce wire bytes."""
    log: EventLog[int] = EventLog()
    async with log.open_subscription() as sub:
        await log.publish(1)
        with pytest.raises(TypeError, match="encode"):
            _ = sub.receive_nowait().wire


# -- callbacks -------------------------------------------------------------------------------


async def test_callbacks_keep_broadcast_order_and_failures_are_logged():
    """Callbacks run in subscription order, async ones awaited; one that raises is logged."""
    log: EventLog[int] = EventLog()
    seen: list[tuple[str, int]] = []

    def boom(event: int) -> None:
        raise ValueError("boom")

    async def second(event: int) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(("second", event))

    log.subscribe(lambda e: seen.append(("first", e)))
    log.subscribe(boom)
    unsubscribe = log.subscribe(second)
    log.subscribe(lambda e: seen.append(("last", e)))
    with capture_logs() as logs:
        await log.publish(1)
        unsubscribe()
        unsubscribe()
        await log.publish(2)
    assert seen == [("first", 1), ("second", 1), ("last", 1), ("first", 2), ("last", 2)]
    assert [entry["event"] for entry in logs] == ["subscriber_failed"] * 2
    assert logs[0]["subscriber"] is boom
    assert log.statistics().callbacks == 3


async def test_a_cancelled_publish_cancels_a_stalled_callback(autojump_clock):
    """Cancelling publish() cancels the stalled callback; later callbacks miss only that event."""
    log: EventLog[int] = EventLog()
    seen: list[tuple[str, int]] = []

    async def stall(event: int) -> None:
        seen.append(("stall", event))
        if event == 1:
            await trio.sleep_forever()

    log.subscribe(stall)
    log.subscribe(lambda e: seen.append(("after", e)))
    async with log.open_subscription() as sub:
        with capture_logs() as logs:
            with trio.move_on_after(1) as scope:
                await log.publish(1)
            assert scope.cancelled_caught
            with trio.fail_after(TIMEOUT):
                await log.publish(2)
        assert seqs_of(drain(sub)) == [1, 2]  # subscriptions had it before the callbacks
    assert seen == [("stall", 1), ("stall", 2), ("after", 2)]
    assert logs == []


async def test_a_callback_may_publish_on_the_same_log_without_reordering(autojump_clock):
    """An event published by a callback follows the current one everywhere, in seq order."""
    log: EventLog[str] = EventLog()
    seen: list[tuple[str, str]] = []
    returned: list[int] = []

    async def echo(event: str) -> None:
        seen.append(("echo", event))
        if event == "ping":
            returned.append(await log.publish("pong"))
            seen.append(("echo returned", event))

    log.subscribe(echo)
    log.subscribe(lambda e: seen.append(("last", e)))
    async with log.open_subscription() as sub:
        with trio.fail_after(TIMEOUT):
            assert await log.publish("ping") == 1
            await log.publish("after")
        assert [(i.seq, i.event) for i in drain(sub)] == [(1, "ping"), (2, "pong"), (3, "after")]
    assert returned == [2]
    assert seen == [
        ("echo", "ping"),
        ("echo returned", "ping"),
        ("last", "ping"),
        ("echo", "pong"),
        ("last", "pong"),
        ("echo", "after"),
        ("last", "after"),
    ]


async def test_events_a_callback_published_survive_a_cancelled_publish(autojump_clock):
    """If the outer publish is cancelled, the next publish first delivers the queued events."""
    log: EventLog[str] = EventLog()
    seen: list[str] = []

    async def publish_then_stall(event: str) -> None:
        seen.append(event)
        if event == "first":
            await log.publish("queued")
            await trio.sleep_forever()

    log.subscribe(publish_then_stall)
    with trio.move_on_after(1):
        await log.publish("first")
    with trio.fail_after(TIMEOUT):
        assert await log.publish("next") == 3
    assert seen == ["first", "queued", "next"]


async def test_concurrent_publishers_are_numbered_and_served_in_arrival_order(autojump_clock):
    """Publishers queued behind an awaited callback get their seqs in arrival order."""
    log: EventLog[int] = EventLog()
    release = trio.Event()
    seen: list[int] = []

    async def gate(event: int) -> None:
        if event == 0:
            await release.wait()
        seen.append(event)

    log.subscribe(gate)
    results: dict[int, int] = {}

    async def publish(i: int) -> None:
        results[i] = await log.publish(i)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(publish, i)
                await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert seen == [0, 1, 2, 3]
    assert results == {0: 1, 1: 2, 2: 3, 3: 4}


# -- close, statistics, arguments ------------------------------------------------------------


async def test_close_ends_iterators_after_their_buffers_drain_and_is_idempotent(autojump_clock):
    """close() lets readers drain, ends them, removes callbacks; late readers get the ring only."""
    log: EventLog[int] = EventLog()
    log.subscribe(lambda e: None)
    async with log.open_subscription() as sub:
        await log.publish(1)
        await log.publish(2)
        log.close()
        log.close()
        assert [item.seq async for item in sub] == [1, 2]
        with pytest.raises(trio.EndOfChannel):
            sub.receive_nowait()
    stats = log.statistics()
    assert (stats.closed, stats.callbacks, stats.subscriptions) == (True, 0, ())
    with pytest.raises(trio.ClosedResourceError):
        await log.publish(3)
    with pytest.raises(trio.ClosedResourceError):
        log.subscribe(print)
    async with log.open_subscription(from_seq=1) as late:  # the ring survives close
        assert [item.seq async for item in late] == [2]
    async with log.open_subscription() as late:
        with pytest.raises(trio.EndOfChannel):
            await late.receive()


async def test_close_wakes_a_waiting_reader_and_a_queued_publisher(autojump_clock):
    """A reader waiting for events ends; a publisher waiting for the lock raises."""
    log: EventLog[int] = EventLog()
    release = trio.Event()
    outcomes: list[str] = []

    async def stall(event: int) -> None:
        await release.wait()

    async def queued_publisher() -> None:
        with pytest.raises(trio.ClosedResourceError):
            await log.publish(2)
        outcomes.append("publisher refused")

    async def reader(sub: Any) -> None:
        assert [item.seq async for item in sub] == [1]
        outcomes.append("reader ended")

    log.subscribe(stall)
    with trio.fail_after(TIMEOUT):
        async with log.open_subscription() as sub, trio.open_nursery() as nursery:
            nursery.start_soon(log.publish, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(queued_publisher)
            nursery.start_soon(reader, sub)
            await trio.testing.wait_all_tasks_blocked()
            log.close()
            release.set()
    assert sorted(outcomes) == ["publisher refused", "reader ended"]
    assert log.seq == 1


async def test_statistics_report_the_ring_and_every_subscription():
    """statistics() is a frozen snapshot of seq, ring and per-subscription counters."""
    log = make_log(ring_size=4)
    async with (
        log.open_subscription(max_buffer=2, policy="coalesce") as sub,
        log.open_subscription(from_seq=0, max_buffer=3, policy="error"),
    ):
        for event in deltas(1, "a", "b", "c"):
            await log.publish(event)
        await sub.receive()
        stats = log.statistics()
    assert stats == EventLogStatistics(
        seq=3,
        ring_size=4,
        ring_length=3,
        oldest_seq=1,
        callbacks=0,
        subscriptions=(
            EventLogSubscriptionStatistics(
                buffered=1,
                replay=0,
                peak_buffered=2,
                coalesced=1,
                dropped=0,
                last_seq=1,
                max_buffer=2,
                policy="coalesce",
            ),
            EventLogSubscriptionStatistics(
                buffered=3,
                replay=0,
                peak_buffered=3,
                coalesced=0,
                dropped=0,
                last_seq=0,
                max_buffer=3,
                policy="error",
            ),
        ),
        closed=False,
    )
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stats.seq = 4  # type: ignore[misc]
    assert sub.max_buffer == 2 and sub.policy == "coalesce"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_buffer": 0}, "max_buffer"),
        ({"policy": "drop_oldest"}, "policy"),
        ({"from_seq": -1}, "from_seq"),
        ({"policy": "coalesce"}, "merge"),
    ],
)
async def test_invalid_subscription_arguments_raise_value_error(kwargs, message):
    """open_subscription() rejects bad sizes, cursors and policies, and coalesce without merge."""
    log: EventLog[int] = EventLog()
    with pytest.raises(ValueError, match=message):
        async with log.open_subscription(**kwargs):
            pass


def test_a_negative_ring_size_is_refused():
    """EventLog(ring_size=-1) raises ValueError."""
    with pytest.raises(ValueError, match="ring_size"):
        EventLog(ring_size=-1)


# -- property --------------------------------------------------------------------------------


def canonical(events: list[Event]) -> list[Event]:
    """Fold runs of deltas of one message into one: the view a coalescing reader must keep."""
    out: list[Event] = []
    for event in events:
        merged = merge(out[-1], event) if out else None
        if merged is None:
            out.append(event)
        else:
            out[-1] = merged
    return out


_op = st.one_of(
    st.tuples(st.just("delta"), st.integers(0, 2), st.text(alphabet="xyz", min_size=1, max_size=3)),
    st.tuples(st.just("mark"), st.sampled_from(["message_end", "turn_end", "tool_end"])),
    st.tuples(st.just("read"), st.integers(0, 3)),
)


@settings(max_examples=200, deadline=None, database=None)
@given(ops=st.lists(_op, max_size=60), max_buffer=st.integers(1, 4))
def test_a_coalescing_reader_receives_every_delta_and_mark_in_order(ops, max_buffer):
    """For any publish/read interleaving, a coalescing reader's deltas concatenate to the
    published ones, every mark arrives, order holds, and a cut-off reader resumes losslessly."""

    async def main() -> tuple[list[Event], list[Any]]:
        log = make_log()
        published: list[Event] = []
        received: list[Any] = []
        partials: dict[int, str] = {}
        async with trio.open_nursery():  # a Trio task context, nothing else
            sub_cm = log.open_subscription(max_buffer=max_buffer, policy="coalesce")
            sub = await sub_cm.__aenter__()

            async def read(n: int) -> None:
                nonlocal sub, sub_cm
                for _ in range(n):
                    try:
                        item = sub.receive_nowait()
                    except trio.WouldBlock:
                        return
                    except SubscriberLagged as lagged:
                        await sub_cm.__aexit__(None, None, None)
                        sub_cm = log.open_subscription(
                            from_seq=lagged.resume_from, max_buffer=max_buffer, policy="coalesce"
                        )
                        sub = await sub_cm.__aenter__()
                        continue
                    received.append(item)

            for op in ops:
                if op[0] == "delta":
                    partials[op[1]] = partials.get(op[1], "") + op[2]
                    event: Event = Delta(op[1], op[2], partials[op[1]])
                elif op[0] == "mark":
                    event = Mark(op[1])
                else:
                    await read(op[1])
                    continue
                published.append(event)
                assert await log.publish(event) == len(published)
            await read(10 * len(published) + 10)
            log.close()
            with pytest.raises(trio.EndOfChannel):
                sub.receive_nowait()
            await sub_cm.__aexit__(None, None, None)
        return published, received

    published, received = trio.run(main)
    seqs = seqs_of(received)
    assert seqs == sorted(set(seqs))
    assert canonical(events_of(received)) == canonical(published)
    for item in received:
        if type(item.event) is Delta:
            assert item.event.partial == published[item.seq - 1].partial  # the newest wins
    if published:
        assert seqs[-1] == len(published)


# -- ring on demand --------------------------------------------------------------------------


async def test_a_ring_on_demand_keeps_nothing_until_a_cursor_is_handed_out():
    """Before any subscription or read of seq, ring_on_demand keeps no event: an old cursor
    gets a snapshot, and callbacks still receive every event."""
    seen: list[int] = []
    log: EventLog[int] = EventLog(snapshot=lambda: "state", ring_on_demand=True)
    log.subscribe(seen.append)
    for i in range(1, 4):
        await log.publish(i)
    assert seen == [1, 2, 3]
    assert log.statistics().ring_length == 0
    async with log.open_subscription(from_seq=0) as sub:
        assert drain(sub) == [Snapshot(seq=3, state="state")]


@pytest.mark.parametrize("hand_out", ["subscription", "seq"])
async def test_a_ring_on_demand_replays_everything_after_the_first_cursor(hand_out):
    """Once a cursor could exist (a subscription opened, seq read), the ring keeps the events
    after it, so a reader resuming from that cursor misses nothing."""
    log: EventLog[int] = EventLog(snapshot=lambda: "state", ring_on_demand=True)
    await log.publish(1)
    if hand_out == "seq":
        cursor = log.seq
    else:
        async with log.open_subscription() as first:
            cursor = first.last_seq
    assert cursor == 1
    for i in range(2, 5):
        await log.publish(i)
    async with log.open_subscription(from_seq=cursor) as sub:
        assert [(item.seq, item.event) for item in drain(sub)] == [(2, 2), (3, 3), (4, 4)]


# -- deliver ---------------------------------------------------------------------------------


async def test_deliver_to_sync_listeners_finishes_in_the_call():
    """With sync callbacks and subscriptions with room, deliver numbers, keeps and delivers
    the event during the call and returns None."""
    seen: list[tuple[int, int]] = []
    log: EventLog[int] = EventLog()
    log.subscribe(lambda event: seen.append((log.seq, event)))
    async with log.open_subscription() as sub:
        assert log.deliver(7) is None
        assert log.deliver(8) is None
        assert [(item.seq, item.event) for item in drain(sub)] == [(1, 7), (2, 8)]
    assert seen == [(1, 7), (2, 8)]


async def test_deliver_hands_what_waits_to_its_awaitable_and_keeps_the_order(
    autojump_clock: trio.testing.MockClock,
):
    """An async callback (or a full "block" subscription) is finished by the awaitable deliver
    returns; the callbacks after it, and a publish from another task, follow in order."""
    seen: list[str] = []
    log: EventLog[int] = EventLog()

    async def slow(event: int) -> None:
        await trio.sleep(1)
        seen.append(f"slow {event}")

    log.subscribe(slow)
    log.subscribe(lambda event: seen.append(f"sync {event}"))
    async with log.open_subscription(max_buffer=1) as sub, trio.open_nursery() as nursery:
        pending = log.deliver(1)
        assert pending is not None
        assert seen == []
        nursery.start_soon(log.publish, 2)
        await trio.testing.wait_all_tasks_blocked()
        assert await pending == 1
        await trio.testing.wait_all_tasks_blocked()
        assert drain(sub)[0].seq == 1  # the second event waits for room: "block"
        await trio.sleep(5)
        assert [item.seq for item in drain(sub)] == [2]
    assert seen == ["slow 1", "sync 1", "slow 2", "sync 2"]
