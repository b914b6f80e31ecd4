"""A pacer's feed: the clock delivers each chunk at its due time while the feeding task sleeps,
beside plain waits, stopping and resuming on a refused delivery, and ending on cancellation."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.providers._pacing import RELEASE_DELIVERIES, pacing_clock

DELAY = 0.02
"""Seconds per unit of a chunk in these tests (a chunk ``n`` waits ``n * DELAY``)."""


async def _feed(name: str, chunks: list[int], log: list[tuple[str, int, float]]) -> None:
    """Feed ``chunks`` (each its own delay in units), logging (name, chunk, time) per delivery."""

    def deliver(chunk: int) -> None:
        log.append((name, chunk, trio.current_time()))

    result = await pacing_clock().pacer().feed(chunks, lambda c: c * DELAY, deliver)
    assert result is None


def _expected(
    name: str, chunks: list[int], start: float, until: float = float("inf")
) -> list[tuple[str, int, float]]:
    """The log ``_feed`` should write: every chunk due by ``until``, at its due time."""
    out, at = [], start
    for chunk in chunks:
        at += chunk * DELAY
        if at > until:
            break
        out.append((name, chunk, pytest.approx(at)))
    return out


async def test_a_feed_delivers_each_chunk_its_delay_after_the_one_before(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Chunks of 1, 3 and 2 units arrive 20, 80 and 120 ms after the feed starts."""
    log: list[tuple[str, int, float]] = []
    start = trio.current_time()
    await _feed("a", [1, 3, 2], log)
    assert log == _expected("a", [1, 3, 2], start)
    assert pacing_clock().waiting() == 0


async def test_an_empty_feed_returns_at_once() -> None:
    """A feed of no chunks delivers nothing and does not wait."""
    log: list[tuple[str, int, float]] = []
    await _feed("a", [], log)
    assert log == []


async def test_a_refused_delivery_stops_the_feed_until_feed_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A delivery that returns a value ends the await with it; feed_on continues with the next
    chunk, its delay counted from the resumption."""
    pacer = pacing_clock().pacer()
    seen: list[tuple[int, float]] = []
    start = trio.current_time()

    def deliver(chunk: int) -> object:
        seen.append((chunk, trio.current_time() - start))
        return "full" if chunk == 2 else None

    assert await pacer.feed([1, 2, 3, 4], lambda c: DELAY, deliver) == "full"
    assert [c for c, _ in seen] == [1, 2]
    await trio.sleep(1.0)  # the feeding task pushes its refused item meanwhile
    assert len(seen) == 2  # nothing is delivered while the feed is stopped
    assert await pacer.feed_on() is None
    assert seen == [
        (1, pytest.approx(DELAY)),
        (2, pytest.approx(2 * DELAY)),
        (3, pytest.approx(1.0 + 3 * DELAY)),
        (4, pytest.approx(1.0 + 4 * DELAY)),
    ]


async def test_an_exception_in_a_delivery_is_raised_by_the_feeding_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A delivery that raises ends only its own feed, in its own task; the others keep going."""
    log: list[tuple[str, int, float]] = []
    failed: list[BaseException] = []

    async def bad() -> None:
        def deliver(chunk: int) -> None:
            if chunk == 2:
                raise ValueError("broken delivery")
            log.append(("bad", chunk, trio.current_time()))

        try:
            await pacing_clock().pacer().feed([1, 2, 1], lambda c: c * DELAY, deliver)
        except ValueError as exc:
            failed.append(exc)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_feed, "good", [2, 2, 2], log)
        await trio.testing.wait_all_tasks_blocked()  # "good" keeps time: deliveries run there
        nursery.start_soon(bad)
    assert [str(e) for e in failed] == ["broken delivery"]
    assert [entry for entry in log if entry[0] == "bad"] == [
        ("bad", 1, pytest.approx(start + DELAY))
    ]
    assert [entry for entry in log if entry[0] == "good"] == _expected("good", [2, 2, 2], start)


async def test_a_cancelled_feed_delivers_nothing_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling a feeding task stops its deliveries; a feed beside it stays on time."""
    log: list[tuple[str, int, float]] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as scope:
            scope.deadline = start + 2.5 * DELAY
            nursery.start_soon(_feed, "other", [1] * 5, log)
            await _feed("cancelled", [1] * 5, log)
    assert [entry for entry in log if entry[0] == "cancelled"] == _expected(
        "cancelled", [1, 1], start
    )
    assert [entry for entry in log if entry[0] == "other"] == _expected("other", [1] * 5, start)
    assert pacing_clock().waiting() == 0


@settings(deadline=None, max_examples=60)
@given(
    feeds=st.lists(st.lists(st.integers(0, 5), max_size=6), min_size=1, max_size=6),
    waits=st.lists(st.integers(0, 30), max_size=6),
    cancelled=st.sets(st.integers(0, 11)),
)
def test_feeds_and_waits_together_keep_every_due(
    feeds: list[list[int]], waits: list[int], cancelled: set[int]
) -> None:
    """Any mix of feeds and plain waits, some cancelled halfway: each feed delivers its chunks
    at their due times (all of them unless cancelled, and only those before the cancellation),
    each plain wait wakes at its due, and nothing is left on the clock."""

    async def main() -> None:
        clock = pacing_clock()
        start = trio.current_time()
        log: list[tuple[str, int, float]] = []
        woke: dict[int, float] = {}

        async def wait(i: int, delay: float) -> None:
            await clock.wait(delay)
            woke[i] = trio.current_time() - start

        cut: dict[str, float] = {}
        async with trio.open_nursery() as nursery:
            for i, chunks in enumerate(feeds):
                scope = trio.CancelScope()
                if i in cancelled:
                    cut[f"f{i}"] = scope.deadline = start + sum(chunks) * DELAY / 2 + 0.001

                async def run(name: str, chunks: list[int], scope: trio.CancelScope) -> None:
                    with scope:
                        await _feed(name, chunks, log)

                nursery.start_soon(run, f"f{i}", chunks, scope)
            for i, w in enumerate(waits):
                nursery.start_soon(wait, i, w / 100)
        assert woke == {i: pytest.approx(w / 100) for i, w in enumerate(waits)}
        for i, chunks in enumerate(feeds):
            name = f"f{i}"
            expected = _expected(name, chunks, start, cut.get(name, float("inf")))
            assert [entry for entry in log if entry[0] == name] == expected
        assert clock.waiting() == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_many_feeds_due_together_let_other_tasks_run_between_passes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Three passes' worth of feeds falling due at once are delivered a bounded number per
    pass, and a task waiting meanwhile runs between the passes."""
    total = 3 * RELEASE_DELIVERIES
    delivered = 0
    first = trio.Event()
    observed: list[int] = []

    async def one() -> None:
        def deliver(chunk: int) -> None:
            nonlocal delivered
            delivered += 1
            first.set()

        await pacing_clock().pacer().feed([1], lambda c: DELAY, deliver)

    async def watch() -> None:
        await first.wait()
        while delivered < total:
            observed.append(delivered)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        for _ in range(total):
            nursery.start_soon(one)
    assert delivered == total
    assert observed and max(observed) < total
    assert all(n <= RELEASE_DELIVERIES * (i + 1) for i, n in enumerate(sorted(set(observed))))


async def test_an_exception_in_a_delay_is_raised_by_the_feeding_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A delay function that raises (here for the third chunk, computed by the time keeper
    after the second delivery) ends its own feed with that error; a feed beside it keeps time."""
    log: list[tuple[str, int, float]] = []
    failed: list[BaseException] = []

    def delay(chunk: int) -> float:
        if chunk == 3:
            raise ValueError("no delay for 3")
        return DELAY

    async def bad() -> None:
        def deliver(chunk: int) -> None:
            log.append(("bad", chunk, trio.current_time()))

        try:
            await pacing_clock().pacer().feed([1, 2, 3, 4], delay, deliver)
        except ValueError as exc:
            failed.append(exc)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_feed, "good", [1, 1, 1], log)
        await trio.testing.wait_all_tasks_blocked()  # "good" keeps time: the delay runs there
        nursery.start_soon(bad)
    assert [str(e) for e in failed] == ["no delay for 3"]
    assert [entry[1] for entry in log if entry[0] == "bad"] == [1, 2]
    assert [entry for entry in log if entry[0] == "good"] == _expected("good", [1, 1, 1], start)
    assert pacing_clock().waiting() == 0


@pytest.mark.parametrize(
    ("cancel_at", "then_raise"), [(1, False), (2, False), (3, False), (3, True)]
)
async def test_a_delivery_that_cancels_its_own_feed_leaves_the_other_feeds_alone(
    autojump_clock: trio.testing.MockClock, cancel_at: int, then_raise: bool
) -> None:
    """A delivery may cancel the task that fed it (a subscriber aborting its run on a token):
    that feed ends with Cancelled, at its last chunk too, and the feed whose task delivered
    it (the time keeper) goes on unharmed (the clock rescheduled the cancelled task a second
    time, an AssertionError raised in the other feed's task). A delivery that raises after
    cancelling ends its feed cancelled too (the cancellation came first)."""
    log: list[tuple[str, int, float]] = []
    outcome: list[str] = []

    async def cancelled_by_its_delivery(scope: trio.CancelScope) -> None:
        with scope:

            def deliver(chunk: int) -> None:
                log.append(("self", chunk, trio.current_time()))
                if chunk == cancel_at:
                    scope.cancel()
                    if then_raise:
                        raise ValueError("after the cancel")

            await pacing_clock().pacer().feed([1, 2, 3], lambda c: DELAY, deliver)
            outcome.append("finished")  # pragma: no cover - the scope is cancelled first
        outcome.append("cancelled" if scope.cancelled_caught else "not cancelled")

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_feed, "keeper", [1] * 6, log)
        await trio.testing.wait_all_tasks_blocked()  # "keeper" keeps time: it delivers
        nursery.start_soon(cancelled_by_its_delivery, trio.CancelScope())
    assert outcome == ["cancelled"]
    assert [chunk for name, chunk, _ in log if name == "self"] == list(range(1, cancel_at + 1))
    assert [entry for entry in log if entry[0] == "keeper"] == _expected("keeper", [1] * 6, start)
    assert pacing_clock().waiting() == 0
