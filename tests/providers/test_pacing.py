"""The shared pacing clock wakes every waiter at its due time, whoever else waits or leaves."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from pitrio.providers import (
    Context,
    ProviderRegistry,
    TextDeltaEvent,
    faux_assistant_message,
    register_faux_provider,
    stream_simple,
)
from pitrio.providers._pacing import pacing_clock


async def _wake_times(delays: list[float], cancel: set[int]) -> dict[int, float]:
    """Start one waiter per delay together; cancel those in ``cancel`` halfway to their due."""
    start = trio.current_time()
    woke: dict[int, float] = {}
    clock = pacing_clock()

    async def wait(i: int, delay: float) -> None:
        with trio.CancelScope() as scope:
            if i in cancel:
                scope.deadline = start + delay / 2
            await clock.wait(delay)
            woke[i] = trio.current_time() - start

    with trio.fail_after(100):  # virtual seconds: only a lost wake-up can reach it
        async with trio.open_nursery() as nursery:
            for i, delay in enumerate(delays):
                nursery.start_soon(wait, i, delay)
    assert clock.waiting() == 0
    return woke


async def test_each_waiter_wakes_at_its_own_due_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Waiters started in any order wake at exactly their delay, earlier dues arriving later too."""
    delays = [0.5, 0.02, 0.3, 0.02, 0.0, 1.0, 0.1]
    woke = await _wake_times(delays, set())
    assert woke == {i: pytest.approx(d) for i, d in enumerate(delays)}


async def test_an_earlier_due_arriving_later_moves_the_wake_up_forward(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A 20 ms wait that starts while a 500 ms wait keeps time still wakes after 20 ms."""
    clock = pacing_clock()
    start = trio.current_time()
    woke: list[float] = []

    async def wait(delay: float) -> None:
        await clock.wait(delay)
        woke.append(trio.current_time() - start)

    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait, 0.5)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(wait, 0.02)
    assert woke == [pytest.approx(0.02), pytest.approx(0.5)]


async def test_a_cancelled_leader_hands_over_to_the_others(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling the first waiter (the one keeping time) leaves the others on schedule."""
    delays = [0.2, 0.4, 0.6]
    woke = await _wake_times(delays, {0})
    assert woke == {1: pytest.approx(0.4), 2: pytest.approx(0.6)}


@given(
    delays=st.lists(st.integers(0, 50), min_size=1, max_size=12),
    cancelled=st.sets(st.integers(0, 11)),
)
def test_any_mix_of_waits_and_cancellations_keeps_every_due(
    delays: list[int], cancelled: set[int]
) -> None:
    """Whatever the delays and whichever waits are cancelled, the rest wake at their due."""
    seconds = [d / 100 for d in delays]

    async def main() -> dict[int, float]:
        return await _wake_times(seconds, cancelled)

    woke = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    expected = {i: pytest.approx(s) for i, s in enumerate(seconds) if i not in cancelled}
    assert woke == expected


async def test_concurrent_paced_streams_each_keep_their_pace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Fifty faux streams at 50 tokens/s each get a 4-character delta every 20 ms."""
    registry = ProviderRegistry()
    faux = register_faux_provider(token_size=(1, 1), tokens_per_second=50, registry=registry)
    faux.set_responses([faux_assistant_message("abcd" * 10) for _ in range(50)])
    model = faux.get_model()
    assert model is not None
    times: list[list[float]] = []

    async def one() -> None:
        stamps: list[float] = []
        async with stream_simple(model, Context(), registry=registry) as events:
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    stamps.append(trio.current_time())
        times.append(stamps)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(one)
    expected = [pytest.approx(start + 0.02 * (k + 1)) for k in range(10)]
    assert times == [expected] * 50


async def _pacer_wake_times(
    plans: list[list[tuple[int, bool]]],
) -> dict[tuple[int, int], float]:
    """One task per plan, each reusing one Pacer for its waits in turn: (delay in 10 ms, and
    whether that wait is cancelled halfway; a wait of 0 is never cancelled)."""
    clock = pacing_clock()
    start = trio.current_time()
    woke: dict[tuple[int, int], float] = {}

    async def run(i: int, plan: list[tuple[int, bool]]) -> None:
        pacer = clock.pacer()
        for k, (delay, cancel) in enumerate(plan):
            now = trio.current_time()
            with trio.CancelScope() as scope:
                if cancel and delay > 0:
                    scope.deadline = now + delay / 200
                await pacer.until(now + delay / 100)
                woke[i, k] = trio.current_time() - start

    with trio.fail_after(1000):
        async with trio.open_nursery() as nursery:
            for i, plan in enumerate(plans):
                nursery.start_soon(run, i, plan)
    assert clock.waiting() == 0
    return woke


def _expected(plans: list[list[tuple[int, bool]]]) -> dict[tuple[int, int], Any]:
    expected = {}
    for i, plan in enumerate(plans):
        t = 0.0
        for k, (delay, cancel) in enumerate(plan):
            if cancel and delay > 0:
                t += delay / 200
            else:
                t += delay / 100
                expected[i, k] = pytest.approx(t)
    return expected


async def test_a_pacer_reused_after_a_cancelled_wait_keeps_every_due(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A stream whose wait was cancelled waits again with the same pacer and still wakes on
    time, as do the waiters around the dead entry it left in the heap."""
    plans = [[(100, True), (10, False), (30, False)], [(50, False), (50, False)], [(80, False)]]
    assert await _pacer_wake_times(plans) == _expected(plans)


@given(
    plans=st.lists(
        st.lists(st.tuples(st.integers(0, 30), st.booleans()), min_size=1, max_size=6),
        min_size=1,
        max_size=6,
    )
)
def test_reused_pacers_keep_every_due_whatever_is_cancelled(
    plans: list[list[tuple[int, bool]]],
) -> None:
    """Any mix of reused pacers, waits and cancellations: every wait not cancelled wakes at
    its due."""

    async def main() -> dict[tuple[int, int], float]:
        return await _pacer_wake_times(plans)

    woke = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert woke == _expected(plans)
