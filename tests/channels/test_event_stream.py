"""Tests for pitrio.channels.EventStream: pi-ai's EventStream, bounded."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.channels import (
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


async def test_receive_all_nowait_takes_the_buffer_in_order_and_makes_room(autojump_clock):
    """receive_all_nowait hands every buffered event over in order, [] when there is none,
    and makes room for push_nowait again; after the completion event it returns the rest."""
    stream = make_stream(max_buffer=2)
    stream.push_nowait(Ev("delta", 1))
    stream.push_nowait(Ev("delta", 2))
    with pytest.raises(trio.WouldBlock):
        stream.push_nowait(Ev("delta", 3))
    assert [e.value for e in stream.receive_all_nowait()] == [1, 2]
    assert stream.receive_all_nowait() == []
    stream.push_nowait(Ev("delta", 3))
    await stream.push(Ev("done", 9))
    assert [e.kind for e in stream.receive_all_nowait()] == ["delta", "done"]
    assert await stream.result() == 9
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    with pytest.raises(trio.EndOfChannel):
        await stream.receive()


async def test_push_nowait_hands_over_to_a_waiting_consumer_even_unbuffered(autojump_clock):
    """With max_buffer=0 push_nowait succeeds while the consumer waits (a rendezvous); after
    end() pushes are dropped silently."""
    stream = make_stream(max_buffer=0)
    received: list[Ev] = []

    async def consume() -> None:
        received.append(await stream.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        stream.push_nowait(Ev("delta", 5))
    assert received == [Ev("delta", 5)]
    stream.end(1)
    stream.push_nowait(Ev("delta", 6))
    assert stream.receive_all_nowait() == []


async def test_receive_all_nowait_unblocks_a_waiting_producer(autojump_clock):
    """Taking the whole buffer lets a producer waiting for room go on: the event it waited
    with is taken by the same call, in order."""
    stream = make_stream(max_buffer=1)
    stream.push_nowait(Ev("delta", 1))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.push, Ev("delta", 2))
        await trio.testing.wait_all_tasks_blocked()
        assert stream.statistics().producers_waiting == 1
        assert [e.value for e in stream.receive_all_nowait()] == [1, 2]
    assert stream.statistics().producers_waiting == 0
    assert stream.receive_all_nowait() == []


async def test_receive_all_nowait_after_close_raises_closed_resource_error() -> None:
    """The consumer that closed its side cannot take events any more."""
    stream = make_stream()
    stream.push_nowait(Ev("delta", 1))
    stream.close()
    with pytest.raises(trio.ClosedResourceError):
        stream.receive_all_nowait()


@pytest.mark.parametrize("max_buffer", [0, 1, 3])
async def test_producers_waiting_for_room_are_served_in_the_order_they_came(
    autojump_clock, max_buffer
):
    """Several producers blocked on a full buffer: their events reach the consumer in the
    order the producers started waiting, after the buffered ones, whichever way it reads."""
    stream = make_stream(max_buffer=max_buffer)
    for value in range(max_buffer):
        stream.push_nowait(Ev("buffered", value))
    async with trio.open_nursery() as nursery:
        for value in range(3):
            nursery.start_soon(stream.push, Ev("waiting", value))
            await trio.testing.wait_all_tasks_blocked()
        assert stream.statistics().producers_waiting == 3
        first = await stream.__anext__()
        rest = stream.receive_all_nowait()
    stream.end()
    received = [first, *rest, *await collect(stream)]
    assert received == [Ev("buffered", v) for v in range(max_buffer)] + [
        Ev("waiting", v) for v in range(3)
    ]


async def test_closing_wakes_another_task_waiting_to_receive(autojump_clock):
    """A task waiting in receive() when the consumer side is closed gets
    ClosedResourceError, not a wait forever."""
    stream = make_stream()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                with pytest.raises(trio.ClosedResourceError):
                    await stream.receive()

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            stream.close()
