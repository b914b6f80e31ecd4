"""EventStream.wait_readable(inline): events offered while the consumer waits are handled in the
producer's task, in order with everything buffered, and the consumer wakes only when it must."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.channels import FEED_STOPPED, NOT_TAKEN, EventStream


@attrs.frozen
class Ev:
    kind: str
    value: int = 0


def make_stream(max_buffer: int = 8) -> EventStream[Ev, int]:
    return EventStream(lambda e: e.kind == "done", lambda e: e.value, max_buffer=max_buffer)


class Consumer:
    """A batch consumer whose inline handler takes "delta" events and leaves the rest."""

    def __init__(self, stream: EventStream[Ev, int]) -> None:
        self.stream = stream
        self.got: list[tuple[str, Ev]] = []  # (where it was handled, event)
        self.wake_ups = 0
        self.after_inline: Awaitable[None] | None = None

    def inline(self, event: Ev) -> Any:
        if event.kind != "delta":
            return NOT_TAKEN
        self.got.append(("inline", event))
        pending, self.after_inline = self.after_inline, None
        return pending

    async def run(self) -> None:
        stream = self.stream
        while True:
            batch = stream.receive_all_nowait()
            if not batch:
                if stream.exhausted:
                    return
                rest = await stream.wait_readable(self.inline)
                self.wake_ups += 1
                if rest is not None:
                    await rest
                continue
            self.got.extend(("task", event) for event in batch)


async def test_offered_deltas_are_handled_inline_while_the_consumer_sleeps() -> None:
    """Deltas offered to a waiting consumer are handled at once and do not wake it; an event
    it leaves wakes it, and the deltas offered before it runs queue behind that event."""
    stream = make_stream()
    consumer = Consumer(stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer.run)
        await trio.testing.wait_all_tasks_blocked()
        for i in range(3):
            assert stream.offer(Ev("delta", i))
        assert consumer.wake_ups == 0
        assert [(w, e.value) for w, e in consumer.got] == [
            ("inline", 0),
            ("inline", 1),
            ("inline", 2),
        ]
        assert stream.offer(Ev("end", 3))
        assert stream.offer(Ev("delta", 4))  # buffered: the consumer is awake now
        await trio.testing.wait_all_tasks_blocked()
        assert consumer.wake_ups == 1
        assert stream.offer(Ev("delta", 5))  # inline again: the consumer waits again
        await stream.push(Ev("done", 6))
    assert [(w, e.value) for w, e in consumer.got] == [
        ("inline", 0),
        ("inline", 1),
        ("inline", 2),
        ("task", 3),
        ("task", 4),
        ("inline", 5),
        ("task", 6),
    ]


async def test_a_handler_can_leave_an_awaitable_for_the_consumer_to_finish() -> None:
    """An awaitable the handler returns wakes the consumer, which finishes it before taking the
    events offered meanwhile."""
    stream = make_stream()
    consumer = Consumer(stream)
    finished: list[str] = []

    async def finish() -> None:
        await trio.lowlevel.checkpoint()
        finished.append(f"finished after {len(consumer.got)} events")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer.run)
        await trio.testing.wait_all_tasks_blocked()
        consumer.after_inline = finish()
        assert stream.offer(Ev("delta", 0))
        assert stream.offer(Ev("delta", 1))  # buffered behind the unfinished delivery
        await trio.testing.wait_all_tasks_blocked()
        assert finished == ["finished after 1 events"]
        await stream.push(Ev("done", 2))
    assert [(w, e.value) for w, e in consumer.got] == [("inline", 0), ("task", 1), ("task", 2)]


async def test_an_exception_in_the_handler_is_raised_in_the_consumer() -> None:
    """A handler that raises does not fail the producer: its consumer's wait raises it."""
    stream = make_stream()

    def broken(event: Ev) -> Any:
        raise ValueError(f"cannot handle {event.value}")

    async def consume() -> None:
        await stream.wait_readable(broken)

    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match="cannot handle 7")):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            assert stream.offer(Ev("delta", 7))  # taken: the consumer raises, not the producer


async def test_a_cancelled_consumer_handles_nothing_inline() -> None:
    """Once the waiting consumer is cancelled its handler is not called any more; offers are
    buffered as for any consumer that is not waiting."""
    stream = make_stream()
    consumer = Consumer(stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer.run)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert stream.offer(Ev("delta", 1))
    assert consumer.got == []
    assert stream.statistics().buffered == 1


@settings(deadline=None, max_examples=80)
@given(
    kinds=st.lists(st.sampled_from(["delta", "delta", "other"]), max_size=30),
    pauses=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_inline_and_buffered_handling_keep_the_producer_order(
    kinds: list[str], pauses: list[bool]
) -> None:
    """Whatever mix of taken and left events, offered with or without pauses, the consumer sees
    every event exactly once, in the order offered."""

    async def main() -> list[int]:
        stream = make_stream(max_buffer=4)
        consumer = Consumer(stream)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer.run)
            for i, (kind, pause) in enumerate(zip(kinds, pauses, strict=False)):
                event = Ev(kind, i)
                if not stream.offer(event):
                    await stream.push(event)
                if pause:
                    await trio.testing.wait_all_tasks_blocked()
            await stream.push(Ev("done", len(kinds)))
        return [event.value for _, event in consumer.got]

    assert trio.run(main) == list(range(len(kinds) + 1))


@pytest.mark.parametrize("outcome", ["handled", "left", "awaitable", "raises"])
async def test_a_handler_that_cancels_its_consumer_wakes_it_once(outcome: str) -> None:
    """A handler whose work cancels the waiting consumer (a subscriber aborting the run) does
    not wake it twice: the consumer finishes what the handler handed it, then is cancelled at
    its next checkpoint; the producer is unaffected."""
    stream = make_stream()
    finished: list[str] = []
    ended: list[str] = []
    scope = trio.CancelScope()

    async def finish() -> None:
        try:
            await trio.lowlevel.checkpoint()
        finally:
            finished.append("finally ran")  # cancelled inside, it still ends

    def inline(event: Ev) -> Any:
        scope.cancel()  # the consumer's wait is being aborted while we run
        if outcome == "handled":
            return None
        if outcome == "left":
            return NOT_TAKEN
        if outcome == "awaitable":
            return finish()
        raise ValueError("handler failed")

    async def consume() -> None:
        with scope:
            try:
                rest = await stream.wait_readable(inline)
                if rest is not None:
                    await rest
                stream.receive_all_nowait()  # what was left to the consumer
                await stream.wait_readable(inline)  # the cancellation lands here at the latest
            except ValueError as exc:
                ended.append(str(exc))
                return
        ended.append("cancelled" if scope.cancelled_caught else "not cancelled")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert stream.offer(Ev("delta", 1))
    assert ended == (["handler failed"] if outcome == "raises" else ["cancelled"])
    assert finished == (["finally ran"] if outcome == "awaitable" else [])


@settings(deadline=None, max_examples=150)
@given(
    kinds=st.lists(st.sampled_from(["delta", "delta", "other", "await", "raise"]), max_size=12),
    max_buffer=st.integers(min_value=0, max_value=4),
    waiting=st.booleans(),
    cancel_at=st.one_of(st.none(), st.integers(min_value=0, max_value=11)),
)
def test_offer_many_is_one_offer_per_event(
    kinds: list[str], max_buffer: int, waiting: bool, cancel_at: int | None
) -> None:
    """offer_many takes the same prefix that one offer per event would, and the consumer sees
    the same thing: which events were handled inline and which in its task, in what order,
    after how many wake-ups; a handler that leaves an awaitable or cancels its consumer midway
    included, and one that raises."""

    async def scenario(batched: bool) -> list[object]:
        stream = make_stream(max_buffer=max_buffer)
        consumer = Consumer(stream)
        notes: list[str] = []
        scope = trio.CancelScope()

        async def finish(value: int) -> None:
            await trio.lowlevel.checkpoint()
            notes.append(f"finished {value}")

        def inline(event: Ev) -> Any:
            if event.value == cancel_at:
                scope.cancel()
            if event.kind == "await":
                consumer.got.append(("inline", event))
                return finish(event.value)
            if event.kind == "raise":
                raise ValueError(f"handler failed on {event.value}")
            return Consumer.inline(consumer, event)

        consumer.inline = inline  # type: ignore[method-assign]

        async def consume() -> None:
            with scope:
                try:
                    await consumer.run()
                except ValueError as exc:  # the handler's, raised in the consumer's task
                    notes.append(str(exc))
                    return
            if scope.cancelled_caught:
                notes.append("consumer cancelled")

        def seen() -> list[tuple[str, int]]:
            return [(where, event.value) for where, event in consumer.got]

        events = [Ev(kind, i) for i, kind in enumerate(kinds)]
        observed: list[object] = []
        async with trio.open_nursery() as nursery:
            if waiting:
                nursery.start_soon(consume)
                await trio.testing.wait_all_tasks_blocked()
            if batched:
                taken = stream.offer_many(events)
            else:
                taken = 0
                for event in events:
                    if not stream.offer(event):
                        break
                    taken += 1
            # Right after the offers, and once the consumer (the only other task) is done
            # with what they gave it: the rest depends on how Trio orders two busy tasks.
            observed += [taken, seen(), stream.statistics().buffered, list(notes)]
            await trio.testing.wait_all_tasks_blocked()
            observed += [consumer.wake_ups, seen(), list(notes)]
            if not waiting:
                nursery.start_soon(consume)
            for event in events[taken:]:
                if scope.cancel_called or any("failed" in note for note in notes):
                    break  # nobody reads any more: a push could wait for room for ever
                await stream.push(event)
            stream.end(0)
        observed += [seen(), notes]
        return observed

    one_by_one = trio.run(scenario, False)
    batched = trio.run(scenario, True)
    assert batched == one_by_one


async def test_offer_many_after_the_end_or_close_drops_everything() -> None:
    """As offer does: everything counts as taken and nothing is buffered once the stream ended
    or its consumer left."""
    ended = make_stream()
    ended.end(1)
    assert ended.offer_many([Ev("delta", 1), Ev("delta", 2)]) == 2
    assert ended.statistics().buffered == 0
    closed = make_stream()
    closed.close()
    assert closed.offer_many([Ev("delta", 1)]) == 1
    assert closed.statistics().buffered == 0


async def test_offer_many_buffers_up_to_the_room_left() -> None:
    """Without a waiting consumer the prefix that fits is buffered and its length returned."""
    stream = make_stream(max_buffer=3)
    assert stream.offer(Ev("delta", 0))
    assert stream.offer_many([Ev("delta", i) for i in range(1, 6)]) == 2
    assert [e.value for e in stream.receive_all_nowait()] == [0, 1, 2]
    assert stream.offer_many([]) == 0


class Feed:
    """A source's awaitable that another task drives, as a paced feed is driven by the pacing
    clock: `deliver` offers an event through `offer_or_stop`; a stop, or `finish`, ends the
    awaited wait with that value."""

    def __init__(self, stream: EventStream[Ev, int]) -> None:
        self.stream = stream
        self.send, self.receive = trio.open_memory_channel[Any](1)
        self.waits = 0

    async def wait(self) -> Any:
        self.waits += 1
        return await self.receive.receive()

    def deliver(self, event: Ev) -> Any:
        stopped = self.stream.offer_or_stop(event)
        if stopped is not None:
            self.send.send_nowait(stopped)
        return stopped

    def finish(self) -> None:
        self.send.send_nowait(None)

    def source(self) -> Any:
        """Start, a feed (resumed after each stop), done: as the paced faux's source."""
        yield [Ev("start")]
        stopped = yield self.wait()
        while stopped is not None:
            yield [] if stopped is FEED_STOPPED else [stopped]
            stopped = yield self.wait()
        yield [Ev("done", 99)]


async def test_a_feed_delivers_to_the_consumers_handler_while_it_awaits_the_feed() -> None:
    """While the consumer runs the source's awaitable (a paced feed), events offered by the
    task driving the feed go to its inline handler: the consumer does not wake per event."""
    stream = make_stream()
    feed = Feed(stream)
    stream.feed_from(feed.source())
    consumer = Consumer(stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer.run)
        await trio.testing.wait_all_tasks_blocked()
        wake_ups = consumer.wake_ups
        for value in range(3):
            assert feed.deliver(Ev("delta", value)) is None
        await trio.testing.wait_all_tasks_blocked()
        assert consumer.wake_ups == wake_ups
        feed.finish()
    assert [(w, e.kind, e.value) for w, e in consumer.got] == [
        ("task", "start", 0),
        ("inline", "delta", 0),
        ("inline", "delta", 1),
        ("inline", "delta", 2),
        ("task", "done", 99),
    ]
    assert feed.waits == 1
    assert await stream.result() == 99


async def test_a_feed_stops_for_what_the_consumer_must_take_over_then_goes_on() -> None:
    """An event the handler leaves is buffered, an awaitable it returns is finished by the
    consumer, and each stops the feed: the consumer takes over, then the source feeds on."""
    stream = make_stream()
    feed = Feed(stream)
    stream.feed_from(feed.source())
    consumer = Consumer(stream)
    finished: list[int] = []

    async def finish_delivery() -> None:
        await trio.lowlevel.checkpoint()
        finished.append(len(consumer.got))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer.run)
        await trio.testing.wait_all_tasks_blocked()
        assert feed.deliver(Ev("delta", 0)) is None
        assert feed.deliver(Ev("other", 1)) is FEED_STOPPED  # left to the consumer's task
        await trio.testing.wait_all_tasks_blocked()
        consumer.after_inline = finish_delivery()
        assert feed.deliver(Ev("delta", 2)) is FEED_STOPPED  # a delivery to finish
        await trio.testing.wait_all_tasks_blocked()
        assert finished == [4]  # after the delta it was returned for
        assert feed.deliver(Ev("delta", 3)) is None
        feed.finish()
    assert [(w, e.kind, e.value) for w, e in consumer.got] == [
        ("task", "start", 0),
        ("inline", "delta", 0),
        ("task", "other", 1),
        ("inline", "delta", 2),
        ("inline", "delta", 3),
        ("task", "done", 99),
    ]
    assert feed.waits == 3


async def test_an_exception_in_the_handler_during_a_feed_is_raised_in_the_consumer() -> None:
    stream = make_stream()
    feed = Feed(stream)
    stream.feed_from(feed.source())

    def broken(event: Ev) -> Any:
        raise ValueError(f"cannot handle {event.value}")

    async def consume() -> None:
        assert stream.receive_all_nowait() == ()
        await stream.wait_readable(broken)  # runs the source: its start
        assert [e.kind for e in stream.receive_all_nowait()] == ["start"]
        await stream.wait_readable(broken)  # the feed

    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match="cannot handle 7")):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            assert feed.deliver(Ev("delta", 7)) is FEED_STOPPED  # raised by the consumer


async def test_a_feed_read_without_a_handler_stops_for_every_event() -> None:
    """An ``async for`` reader has no handler: each event fed is buffered and stops the feed,
    so the reader gets every one, in order."""
    stream = make_stream()
    feed = Feed(stream)
    stream.feed_from(feed.source())
    got: list[tuple[str, int]] = []

    async def read() -> None:
        async for event in stream:
            got.append((event.kind, event.value))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        for value in range(3):
            await trio.testing.wait_all_tasks_blocked()
            assert feed.deliver(Ev("delta", value)) is FEED_STOPPED
        await trio.testing.wait_all_tasks_blocked()
        feed.finish()
    assert got == [("start", 0), ("delta", 0), ("delta", 1), ("delta", 2), ("done", 99)]
    assert feed.waits == 4
