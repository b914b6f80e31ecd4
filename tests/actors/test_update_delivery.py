"""A stream's deltas become ``message_update`` events in the run's own task; every subscriber,
sync or async, sees the same events in the same order, paced or not."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from pitrio.actors import AgentEvent, MessageUpdateEvent, open_agent

from helpers import Recorder, assistant, call, echo_tool, make_faux, tool_then_text


def _shape(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    """Each event's type, its delta type and the partial text or arguments it carries."""
    out = []
    for event in events:
        if isinstance(event, MessageUpdateEvent):
            inner = event.assistant_message_event
            out.append((event.type, inner.type, repr(event.message.content)))
        else:
            out.append((event.type, "", ""))
    return out


async def _run(tokens_per_second: float | None) -> tuple[list[AgentEvent], list[AgentEvent]]:
    faux, registry = make_faux(tokens_per_second=tokens_per_second)
    faux.set_responses(
        [tool_then_text([call("t1", "hello there")], "abcd" * 6)] * 2 + [assistant("efgh" * 5)]
    )
    sync_seen = Recorder()
    async_seen: list[AgentEvent] = []

    async def slow(event: AgentEvent) -> None:
        await trio.sleep(0.001)  # an async subscriber the publish has to await
        async_seen.append(event)

    async with open_agent(model=faux.get_model(), registry=registry, tools=[echo_tool()]) as agent:
        agent.subscribe(sync_seen)
        agent.subscribe(slow)
        await agent.prompt("use the tool")
        await agent.prompt("and talk")
    return sync_seen.events, async_seen


async def test_paced_and_unpaced_runs_deliver_the_same_events(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With and without pacing, a sync and an async subscriber each see the same events."""
    paced_sync, paced_async = await _run(50.0)
    fast_sync, fast_async = await _run(None)
    assert _shape(paced_sync) == _shape(fast_sync)
    assert _shape(paced_async) == _shape(paced_sync)
    assert _shape(fast_async) == _shape(fast_sync)
    assert sum(isinstance(e, MessageUpdateEvent) for e in paced_sync) > 20


async def _abort_on_fifth_delta(
    tokens_per_second: float | None, text: str, with_async_subscriber: bool
) -> tuple[list[AgentEvent], list[AgentEvent]]:
    """Run one prompt whose sync subscriber calls agent.abort() on the fifth delta, with an
    async subscriber after it or not; return what each saw. The run must end aborted."""
    faux, registry = make_faux(tokens_per_second=tokens_per_second)
    faux.set_responses([assistant(text)])
    seen: list[AgentEvent] = []
    later_seen: list[AgentEvent] = []
    async with open_agent(model=faux.get_model(), registry=registry) as agent:

        def listener(event: AgentEvent) -> None:
            seen.append(event)
            if sum(isinstance(e, MessageUpdateEvent) for e in seen) == 5 and isinstance(
                event, MessageUpdateEvent
            ):
                agent.abort()

        agent.subscribe(listener)
        if with_async_subscriber:

            async def later(event: AgentEvent) -> None:
                await trio.lowlevel.checkpoint()
                later_seen.append(event)

            agent.subscribe(later)
        with trio.fail_after(10):
            await agent.prompt("talk")
    last = agent.messages[-1]
    assert last.stop_reason == "aborted"  # type: ignore[union-attr]
    return seen, later_seen


def _updates(events: list[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if isinstance(e, MessageUpdateEvent)]


@pytest.mark.parametrize("with_async_subscriber", [False, True])
async def test_a_subscriber_aborting_from_a_delta_stops_the_paced_run(
    autojump_clock: trio.testing.MockClock, with_async_subscriber: bool
) -> None:
    """agent.abort() called by a sync subscriber on the fifth delta ends the paced run as
    aborted, with no delta after the next one; the closing events reach every subscriber."""
    seen, later_seen = await _abort_on_fifth_delta(50, "abcd" * 40, with_async_subscriber)
    assert 5 <= len(_updates(seen)) <= 6
    # The closing events were delivered, not skipped for a delivery left unfinished.
    assert [e.type for e in seen[-3:]] == ["message_end", "turn_end", "agent_end"]
    if with_async_subscriber:
        assert [e.type for e in later_seen[-3:]] == ["message_end", "turn_end", "agent_end"]


@pytest.mark.parametrize("with_async_subscriber", [False, True])
async def test_no_delta_is_delivered_after_an_abort_at_unlimited_speed(
    with_async_subscriber: bool,
) -> None:
    """At unlimited speed the faux streams a burst of deltas between two checkpoints, and stops
    only at the next one: a subscriber aborting on the fifth delta still sees no sixth (it saw
    64 or 127 before), then the closing events; the transcript ends aborted."""
    seen, later_seen = await _abort_on_fifth_delta(None, "abcd" * 400, with_async_subscriber)
    assert len(_updates(seen)) == 5
    assert [e.type for e in seen[-3:]] == ["message_end", "turn_end", "agent_end"]
    if with_async_subscriber:
        # Its delivery of the fifth was cancelled at its checkpoint (the abort landed there).
        assert _updates(later_seen) == _updates(seen)[:4]


async def test_message_updates_equal_the_constructed_ones() -> None:
    """Each token's ``message_update`` is the frozen event ``MessageUpdateEvent(...)`` makes
    from the same values, every field set."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "hello there")], "abcd" * 60)] * 2)
    seen = Recorder()
    async with open_agent(model=faux.get_model(), registry=registry, tools=[echo_tool()]) as agent:
        agent.subscribe(seen)
        await agent.prompt("use the tool")
    updates = [e for e in seen.events if type(e) is MessageUpdateEvent]
    assert sum(e.assistant_message_event.type.endswith("_delta") for e in updates) > 6
    for event in updates:
        rebuilt = MessageUpdateEvent(
            assistant_message_event=event.assistant_message_event, message=event.message
        )
        assert event == rebuilt
        assert [getattr(event, f.name) for f in attrs.fields(MessageUpdateEvent)] == [
            getattr(rebuilt, f.name) for f in attrs.fields(MessageUpdateEvent)
        ]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.message = None  # type: ignore[misc]
