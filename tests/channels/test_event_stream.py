"""Tests for pitrio.channels.EventStream: pi-ai's EventStream, bounded."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.channels import (
    CHECKPOINT,
    EVENT_STREAM_BUFFER,
    EventStream,
    StreamEndedWithoutResult,
)

TIMEOUT = 10  # virtual seconds (autojump clock): only a deadlock can reach it


@attrs.frozen
class Ev:
    kind: str
    value: int = 0


def make_stream(max_buffer: int = EVENT_STREAM_BUFFER) -> EventStream[Ev, int]:
    return EventStream(
        lambda e: e.kind == "done",
        lambda e: e.value,
        max_buffer=max_buffer,
    )


async def collect(stream: EventStream[Ev, int]) -> list[Ev]:
    return [event async for event in stream]


async def test_events_arrive_in_push_order_and_completion_ends_iteration(autojump_clock):
    """The consumer sees every event in push order, ending with the completion event."""
    stream = make_stream(max_buffer=2)
    events = [Ev("delta", i) for i in range(10)]
    received: list[Ev] = []

    async def consume() -> None:
        received.extend(await collect(stream))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            for event in events:
                await stream.push(event)
            await stream.push(Ev("done", 42))
    assert received == [*events, Ev("done", 42)]
    assert await stream.result() == 42


async def test_result_is_extracted_from_the_completion_event():
    """result() returns extract_result(completion event) as soon as it is pushed."""
    stream = make_stream()
    await stream.push(Ev("start"))
    await stream.push(Ev("done", 7))
    assert await stream.result() == 7
    assert await collect(stream) == [Ev("start"), Ev("done", 7)]


async def test_pushes_after_completion_are_ignored():
    """Events pushed after the completion event are silently dropped, as in pi."""
    stream = make_stream()
    await stream.push(Ev("done", 1))
    await stream.push(Ev("late"))
    stream.push_nowait(Ev("late"))
    await stream.push(Ev("done", 2))
    assert await collect(stream) == [Ev("done", 1)]
    assert await stream.result() == 1


async def test_end_with_result_ends_iteration_after_buffered_events():
    """end(result) lets the consumer drain buffered events, then ends iteration."""
    stream = make_stream()
    await stream.push(Ev("a"))
    await stream.push(Ev("b"))
    stream.end(5)
    await stream.push(Ev("ignored"))
    assert await collect(stream) == [Ev("a"), Ev("b")]
    assert await stream.result() == 5


async def test_end_without_result_makes_result_raise():
    """result() raises StreamEndedWithoutResult when the stream ended with no result."""
    stream = make_stream()
    await stream.push(Ev("a"))
    stream.end()
    with pytest.raises(StreamEndedWithoutResult):
        await stream.result()
    assert await collect(stream) == [Ev("a")]


async def test_end_is_idempotent_and_the_first_result_wins():
    """Repeated end() calls are harmless and do not replace a recorded result."""
    stream = make_stream()
    await stream.push(Ev("done", 1))
    stream.end(2)
    stream.end()
    assert await stream.result() == 1


async def test_result_waits_until_the_stream_is_done(autojump_clock):
    """result() blocks until the completion event is pushed, then returns."""
    stream = make_stream()
    results: list[int] = []

    async def wait_result() -> None:
        results.append(await stream.result())

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_result)
            nursery.start_soon(wait_result)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []
            await stream.push(Ev("done", 3))
    assert results == [3, 3]


async def test_full_buffer_blocks_push_until_the_consumer_reads(autojump_clock):
    """A producer pushing into a full buffer waits until the consumer makes room."""
    stream = make_stream(max_buffer=2)
    pushed: list[int] = []

    async def produce() -> None:
        for i in range(3):
            await stream.push(Ev("delta", i))
            pushed.append(i)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            assert pushed == [0, 1]
            assert stream.statistics().producers_waiting == 1
            assert await stream.__anext__() == Ev("delta", 0)
            await trio.testing.wait_all_tasks_blocked()
            assert pushed == [0, 1, 2]
            assert stream.statistics().producers_waiting == 0
    assert stream.statistics().buffered == 2


async def test_zero_buffer_makes_each_push_a_rendezvous(autojump_clock):
    """With max_buffer=0 a push completes only when the consumer takes the event."""
    stream = make_stream(max_buffer=0)
    pushed: list[Ev] = []

    async def produce() -> None:
        event = Ev("a")
        await stream.push(event)
        pushed.append(event)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            assert pushed == []
            assert await stream.__anext__() == Ev("a")
    assert pushed == [Ev("a")]


async def test_push_nowait_raises_would_block_when_full():
    """push_nowait raises trio.WouldBlock on a full buffer and accepts nothing."""
    stream = make_stream(max_buffer=1)
    stream.push_nowait(Ev("a"))
    with pytest.raises(trio.WouldBlock):
        stream.push_nowait(Ev("b"))
    with pytest.raises(trio.WouldBlock):
        stream.push_nowait(Ev("done", 9))
    assert not stream.statistics().done  # the refused completion event recorded nothing
    assert await stream.__anext__() == Ev("a")
    stream.push_nowait(Ev("done", 9))
    assert await collect(stream) == [Ev("done", 9)]
    assert await stream.result() == 9


async def test_aclose_turns_pushes_into_noops_but_still_records_the_result():
    """After the consumer closes, pushes return at once and a completion still sets result()."""
    stream = make_stream(max_buffer=1)
    await stream.push(Ev("a"))
    await stream.aclose()
    await stream.aclose()  # idempotent
    assert stream.statistics().consumer_closed
    await stream.push(Ev("b"))
    stream.push_nowait(Ev("c"))
    await stream.push(Ev("done", 4))
    assert await stream.result() == 4


async def test_aclose_wakes_a_blocked_producer(autojump_clock):
    """A producer waiting for room returns when the consumer closes the stream."""
    stream = make_stream(max_buffer=1)
    await stream.push(Ev("a"))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.push, Ev("b"))
            await trio.testing.wait_all_tasks_blocked()
            await stream.aclose()
    assert stream.statistics().producers_waiting == 0


async def test_iterating_after_aclose_raises_closed_resource_error():
    """Reading from a stream the consumer closed raises trio.ClosedResourceError."""
    stream = make_stream()
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await stream.__anext__()


async def test_async_with_closes_the_consumer_side():
    """Leaving ``async with stream`` closes the consumer side."""
    stream = make_stream()
    async with stream:
        await stream.push(Ev("a"))
        assert await stream.__anext__() == Ev("a")
    assert stream.statistics().consumer_closed


async def test_end_wakes_a_blocked_producer(autojump_clock):
    """end() from another task releases a producer waiting for room; its event is dropped."""
    stream = make_stream(max_buffer=1)
    await stream.push(Ev("a"))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.push, Ev("b"))
            await trio.testing.wait_all_tasks_blocked()
            stream.end(1)
    assert await collect(stream) == [Ev("a")]


async def test_cancelled_push_leaves_the_stream_usable(autojump_clock):
    """A push cancelled while waiting for room enqueues nothing and blocks nothing."""
    stream = make_stream(max_buffer=1)
    await stream.push(Ev("a"))
    with trio.move_on_after(1) as scope:
        await stream.push(Ev("lost"))
    assert scope.cancelled_caught
    assert stream.statistics().producers_waiting == 0
    assert await stream.__anext__() == Ev("a")
    await stream.push(Ev("done", 2))
    assert await collect(stream) == [Ev("done", 2)]


async def test_cancelled_completion_push_still_records_the_result(autojump_clock):
    """A completion push cancelled while waiting records the result and ends iteration."""
    stream = make_stream(max_buffer=1)
    await stream.push(Ev("a"))
    with trio.move_on_after(1):
        await stream.push(Ev("done", 8))
    assert await stream.result() == 8
    assert await collect(stream) == [Ev("a")]


async def test_cancelled_consumer_leaves_the_stream_usable(autojump_clock):
    """A consumer cancelled while waiting for an event can resume iterating later."""
    stream = make_stream()
    with trio.move_on_after(1) as scope:
        await stream.__anext__()
    assert scope.cancelled_caught
    await stream.push(Ev("a"))
    stream.end()
    assert await collect(stream) == [Ev("a")]


async def test_cancelled_result_wait_leaves_the_stream_usable(autojump_clock):
    """A result() waiter that is cancelled raises Cancelled and a later call still works."""
    stream = make_stream()
    with trio.move_on_after(1) as scope:
        await stream.result()
    assert scope.cancelled_caught
    await stream.push(Ev("done", 6))
    assert await stream.result() == 6


def test_negative_max_buffer_is_rejected():
    """A negative buffer size raises ValueError."""
    with pytest.raises(ValueError, match="max_buffer"):
        make_stream(max_buffer=-1)


@settings(max_examples=50, deadline=None, database=None)
@given(
    max_buffer=st.integers(min_value=0, max_value=8),
    n_events=st.integers(min_value=0, max_value=40),
    consumer_pauses=st.lists(st.booleans(), max_size=40),
)
def test_order_is_preserved_for_any_buffer_size(max_buffer, n_events, consumer_pauses):
    """Every event arrives exactly once and in push order, whatever the buffer size."""
    events = [Ev("delta", i) for i in range(n_events)]

    async def main() -> list[Ev]:
        stream = make_stream(max_buffer=max_buffer)
        received: list[Ev] = []

        async def consume() -> None:
            pauses = iter(consumer_pauses)
            async for event in stream:
                received.append(event)
                if next(pauses, False):
                    await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            for event in events:
                await stream.push(event)
            await stream.push(Ev("done", n_events))
        assert await stream.result() == n_events
        return received

    assert trio.run(main) == [*events, Ev("done", n_events)]


async def test_offer_buffers_until_full_then_refuses(autojump_clock):
    """offer buffers while there is room, returns False on a full buffer without raising, and
    receive_all_nowait hands the buffered events over in order and makes room again."""
    stream = make_stream(max_buffer=2)
    assert stream.offer(Ev("delta", 1))
    assert stream.offer(Ev("delta", 2))
    assert not stream.offer(Ev("delta", 3))
    assert [e.value for e in stream.receive_all_nowait()] == [1, 2]
    assert not stream.receive_all_nowait()
    assert stream.offer(Ev("delta", 3))
    await stream.push(Ev("done", 9))
    assert [e.kind for e in stream.receive_all_nowait()] == ["delta", "done"]
    assert await stream.result() == 9
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_offer_wakes_a_waiting_consumer_and_is_dropped_after_the_end(autojump_clock):
    """An offered event reaches a parked consumer; after end() offers are dropped silently."""
    stream = make_stream(max_buffer=0)
    received: list[Ev] = []

    async def consume() -> None:
        received.append(await anext(stream))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert stream.offer(Ev("delta", 5))  # rendezvous: the waiting consumer takes it
    assert received == [Ev("delta", 5)]
    stream.end(1)
    assert stream.offer(Ev("delta", 6))
    assert not stream.receive_all_nowait()


async def test_receive_all_nowait_unblocks_a_waiting_producer(autojump_clock):
    """Taking the whole buffer lets a producer waiting for room go on."""
    stream = make_stream(max_buffer=1)
    stream.offer(Ev("delta", 1))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.push, Ev("delta", 2))
        await trio.testing.wait_all_tasks_blocked()
        assert [e.value for e in stream.receive_all_nowait()] == [1]
    assert [e.value for e in stream.receive_all_nowait()] == [2]


# -- a source run by the consumer (feed_from) ---------------------------------------------------


async def collect_noting_steps(stream: EventStream[Ev, int]) -> tuple[list[Ev], list[int]]:
    """Iterate ``stream`` to its end, noting after each step of this task how much was
    buffered (a Trio instrument): the events, and those counts."""
    me = trio.lowlevel.current_task()
    buffered_at_step_end: list[int] = []

    class Steps(trio.abc.Instrument):
        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            if task is me:
                buffered_at_step_end.append(stream.statistics().buffered)

    instrument = Steps()
    trio.lowlevel.add_instrument(instrument)
    try:
        received = await collect(stream)
    finally:
        trio.lowlevel.remove_instrument(instrument)
    return received, buffered_at_step_end


async def test_a_source_is_run_by_the_consumer_a_run_per_step():
    """The consumer runs the source itself: each run is buffered whole, in order, and the
    consumer yields to the scheduler before every run but the first (a step per run); the
    completion event ends the stream, its result recorded, and closes the source."""
    closed: list[bool] = []

    def source():
        try:
            yield [Ev("a", 1), Ev("a", 2)]
            yield [Ev("a", 3)]
            yield [Ev("a", 4), Ev("done", 9)]
            yield [Ev("never")]
        finally:
            closed.append(True)

    stream = make_stream()
    stream.feed_from(source())
    received, buffered_at_step_end = await collect_noting_steps(stream)
    assert [e.value for e in received] == [1, 2, 3, 4, 9]
    assert closed == [True]
    assert await stream.result() == 9
    # Two steps ended, at the checkpoints before runs 2 and 3, the run before each all taken.
    assert buffered_at_step_end == [0, 0]


async def test_a_sources_awaitable_is_awaited_by_the_consumer_and_its_value_sent_back():
    """An awaitable the source yields in place of a run is awaited in the consumer's task and
    its value sent back in (an async callback inside a computed answer)."""

    async def answer() -> int:
        await trio.lowlevel.checkpoint()
        return 5

    def source():
        value = yield answer()
        yield [Ev("a", value), Ev("done", value * 2)]

    stream = make_stream()
    stream.feed_from(source())
    assert [e.value for e in await collect(stream)] == [5, 10]
    assert await stream.result() == 10


async def test_a_source_that_returns_without_completion_ends_the_stream_without_a_result():
    """A source that stops early ends the iteration after its events; result() raises."""

    def source():
        yield [Ev("a", 1)]

    stream = make_stream()
    stream.feed_from(source())
    assert [e.value for e in await collect(stream)] == [1]
    with pytest.raises(StreamEndedWithoutResult):
        await stream.result()


async def test_a_source_that_raises_raises_in_the_consumer_and_ends_the_stream():
    """An exception from the source comes out of the consumer's wait; the stream is ended."""

    def source():
        yield [Ev("a", 1)]
        raise ValueError("broken source")

    stream = make_stream()
    stream.feed_from(source())
    received: list[Ev] = []
    with pytest.raises(ValueError, match="broken source"):
        async for event in stream:
            received.append(event)
    assert received == [Ev("a", 1)]
    assert stream.statistics().done


async def test_closing_the_consumer_side_closes_the_source():
    """close() (and so aclose and ``async with``) closes an unfinished source at once."""
    closed: list[bool] = []

    def source():
        try:
            while True:
                yield [Ev("a")]
        finally:
            closed.append(True)

    stream = make_stream()
    stream.feed_from(source())
    async with stream:
        assert (await stream.__anext__()).kind == "a"
    assert closed == [True]
    with pytest.raises(trio.ClosedResourceError):
        await stream.__anext__()


async def test_result_runs_the_source_for_a_stream_nobody_reads_up_to_its_buffer(autojump_clock):
    """result() runs the source while the buffer has room: a short answer completes with
    nobody iterating; a long one stops a buffer ahead and waits for the consumer."""

    def short():
        yield [Ev("a", 1)]
        yield [Ev("done", 3)]

    stream = make_stream(max_buffer=4)
    stream.feed_from(short())
    assert await stream.result() == 3
    assert stream.statistics().buffered == 2

    def endless():
        while True:
            yield [Ev("a"), Ev("a")]

    stream = make_stream(max_buffer=4)
    stream.feed_from(endless())
    with trio.move_on_after(TIMEOUT) as scope:  # result() parks: nothing else can run it
        await stream.result()
    assert scope.cancelled_caught
    assert stream.statistics().buffered == 4


async def test_a_source_yielding_checkpoint_makes_the_consumer_pass_through_the_scheduler():
    """CHECKPOINT from a source is a scheduler pass of the consumer (and nothing is sent
    back): the first run is then not in the consumer's first step."""

    def source():
        got = yield CHECKPOINT
        yield [Ev("done", 1 if got is None else 2)]

    stream = make_stream()
    stream.feed_from(source())
    received, buffered_at_step_end = await collect_noting_steps(stream)
    assert received == [Ev("done", 1)]
    assert buffered_at_step_end == [0]
