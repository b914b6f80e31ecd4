"""EventStream.wait_readable: the coroutine-free wait of a batch consumer, for any interleaving."""

from __future__ import annotations

import attrs
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from pitrio.channels import EventStream


@attrs.frozen
class Ev:
    kind: str
    value: int = 0


def make_stream(max_buffer: int) -> EventStream[Ev, int]:
    return EventStream(lambda e: e.kind == "done", lambda e: e.value, max_buffer=max_buffer)


async def _consume(stream: EventStream[Ev, int]) -> list[Ev]:
    got: list[Ev] = []
    while True:
        batch = stream.receive_all_nowait()
        if not batch:
            if stream.exhausted:
                return got
            await stream.wait_readable()
            continue
        got.extend(batch)


@given(
    max_buffer=st.integers(0, 4),
    n=st.integers(0, 20),
    pauses=st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_a_batch_consumer_gets_every_event_in_order_and_ends(
    max_buffer: int, n: int, pauses: list[bool]
) -> None:
    """receive_all_nowait plus wait_readable yields every pushed event in order, then ends."""

    async def main() -> list[Ev]:
        stream = make_stream(max_buffer)
        got: list[Ev] = []

        async def produce() -> None:
            for i in range(n):
                if pauses[i]:
                    await trio.sleep(0.01)
                await stream.push(Ev("delta", i))
            await stream.push(Ev("done", n))

        async def consume() -> None:
            got.extend(await _consume(stream))

        with trio.fail_after(100):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(consume)
                nursery.start_soon(produce)
        return got

    got = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert got == [Ev("delta", i) for i in range(n)] + [Ev("done", n)]


async def test_a_cancelled_wait_leaves_the_stream_usable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelled while it waits, wait_readable raises Cancelled; a later wait gets the event."""
    stream = make_stream(4)
    with trio.move_on_after(1) as scope:
        await stream.wait_readable()
    assert scope.cancelled_caught
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.push, Ev("delta", 1))
        await stream.wait_readable()
    assert stream.receive_all_nowait() == [Ev("delta", 1)]
    assert not stream.exhausted
    stream.end(0)
    await stream.wait_readable()  # finished: at once
    assert stream.exhausted
