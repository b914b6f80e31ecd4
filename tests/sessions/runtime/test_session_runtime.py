"""AgentSession as an actor: commands from listeners, persist-then-publish, seq and replay,
coalescing readers, abort through hooks and backoff, busy policies, and many sessions at once."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from pitrio.actors import AgentEvent
from pitrio.channels import Sequenced, Snapshot, SubscriberLagged
from pitrio.codec import loads
from pitrio.providers import AssistantMessage
from pitrio.sessions import SessionManager, SessionMessageEntry, SessionSnapshot
from pitrio.sessions.runtime._agent_session import AgentSession, open_agent_session
from pitrio.sessions.runtime._agent_session_types import BeforeAgentStartResult, SessionHooks
from pitrio.sessions.settings._settings import SettingsManager

from session_helpers import (
    Events,
    fail,
    file_manager,
    gated,
    make_faux,
    model_of,
    open_session,
    reply,
)
from transcripts import assert_valid_transcript

QUIET_WITHIN = 0.1
"""Virtual seconds from abort() to an idle session: the issue's 100 ms, on Trio's MockClock."""
SESSIONS = 1000
"""Sessions driven at once by the many-sessions test."""


# --------------------------------------------------------------------------- listeners


async def test_a_listener_may_steer_and_the_message_is_delivered() -> None:
    """session.steer() awaited inside a listener is queued (not refused) and runs next turn."""
    faux, registry = make_faux()
    faux.set_responses([reply("first"), reply("after steer")])
    async with open_session(faux, registry) as session:
        events = Events()
        steered: list[str] = []

        async def listener(event: Any) -> None:
            if event.type == "message_start" and event.message.role == "assistant" and not steered:
                await session.steer("also this")
                steered.append("done")

        session.subscribe(listener)
        session.subscribe(events)
        with trio.fail_after(5):
            await session.prompt("hello")
    assert steered == ["done"]
    texts = [m.text() if isinstance(m, AssistantMessage) else m.content for m in session.messages]
    assert texts[-2:] != [] and "after steer" in str(texts)
    updates = [(e.steering, e.follow_up) for e in events.of("queue_update")]
    assert updates[0] == (("also this",), ()) and updates[-1] == ((), ())


async def test_a_listener_may_change_the_thinking_level_mid_run() -> None:
    """A command with its own events, awaited from a listener, does not deadlock the run."""
    faux, registry = make_faux(reasoning=True)
    faux.set_responses([reply("hi")])
    async with open_session(faux, registry) as session:
        events = Events()

        async def listener(event: Any) -> None:
            if event.type == "turn_start":
                await session.set_thinking_level("high")

        session.subscribe(listener)
        session.subscribe(events)
        with trio.fail_after(5):
            await session.prompt("hello")
            await session.wait_for_idle()
    assert session.thinking_level == "high"
    assert [e.level for e in events.of("thinking_level_changed")] == ["high"]


# --------------------------------------------------------------------------- persistence first


async def test_the_entry_is_recorded_before_any_listener_sees_message_end(
    tmp_path: Path,
) -> None:
    """When a listener sees an assistant message_end, the session already holds its entry."""
    faux, registry = make_faux()
    faux.set_responses([reply("saved first")])
    seen: list[bool] = []
    async with open_session(faux, registry, manager=file_manager(tmp_path)) as session:

        def listener(event: Any) -> None:
            if event.type == "message_end" and isinstance(event.message, AssistantMessage):
                last = session.session_manager.get_entries()[-1]
                seen.append(isinstance(last, SessionMessageEntry) and last.message is event.message)

        session.subscribe(listener)
        await session.prompt("hello")
    assert seen == [True]


async def test_a_stalled_listener_does_not_hold_the_answer_out_of_the_file(
    tmp_path: Path,
) -> None:
    """A listener stuck on the assistant's message_end: the answer is on disk all the same."""
    faux, registry = make_faux()
    faux.set_responses([reply("on disk")])
    release = trio.Event()
    async with open_session(faux, registry, manager=file_manager(tmp_path)) as session:

        async def stalls(event: Any) -> None:
            if event.type == "message_end" and isinstance(event.message, AssistantMessage):
                await release.wait()

        session.subscribe(stalls)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            path = session.session_file
            assert path is not None
            data = await trio.Path(path).read_bytes()
            lines = [loads(line) for line in data.splitlines()]
            assert lines[-1]["message"]["content"][0]["text"] == "on disk"
            release.set()


# --------------------------------------------------------------------------- seq and replay


async def test_events_carry_seq_and_a_reader_resumes_without_loss_or_doubles() -> None:
    """A reader that stops and resumes from its last seq sees every event exactly once."""
    faux, registry = make_faux()
    faux.set_responses([reply("one two three four"), reply("five six seven")])
    async with open_session(faux, registry) as session:
        first: list[Sequenced[Any]] = []
        async with trio.open_nursery() as nursery:

            async def read_some() -> None:
                async with session.events() as events:
                    async for item in events:
                        assert isinstance(item, Sequenced)
                        first.append(item)
                        if item.event.type == "turn_start":
                            return

            nursery.start_soon(read_some)
            await trio.testing.wait_all_tasks_blocked()
            await session.prompt("a")
        await session.prompt("b")
        cursor = first[-1].seq
        async with session.events(from_seq=cursor) as events:
            rest = [
                item for item, _ in zip(_drain(events), range(session.seq - cursor), strict=False)
            ]
    seqs = [i.seq for i in first] + [i.seq for i in rest]
    assert seqs == list(range(1, session.seq + 1))
    assert [i.event.type for i in rest][-1] == "agent_end"


def _drain(events: Any) -> Any:
    while True:
        try:
            yield events.receive_nowait()
        except trio.WouldBlock:
            return


async def test_events_are_kept_for_replay_only_once_a_cursor_was_handed_out() -> None:
    """Callbacks alone leave nothing in the ring (an early cursor gets a snapshot); once seq
    was read, a reader resuming from it gets every later event."""
    faux, registry = make_faux()
    faux.set_responses([reply("one two"), reply("three four")])
    async with open_session(faux, registry) as session:
        heard: list[Any] = []
        session.subscribe(heard.append)
        await session.prompt("a")
        assert heard
        cursor = session.seq
        async with session.events(from_seq=0) as early:
            first = early.receive_nowait()
            assert isinstance(first, Snapshot) and first.seq == cursor
        await session.prompt("b")
        async with session.events(from_seq=cursor) as events:
            rest = list(_drain(events))
    assert [item.seq for item in rest] == list(range(cursor + 1, session.seq + 1))
    assert [item.event.type for item in rest][-1] == "agent_end"


async def test_a_cursor_that_left_the_ring_gets_a_snapshot_then_live_events() -> None:
    """With a small ring, an old cursor is answered with the session's state to rebuild from."""
    faux, registry = make_faux()
    faux.set_responses([reply("x " * 40), reply("again")])
    async with open_session(faux, registry, replay_ring=8) as session:
        await session.prompt("fill the ring")
        async with session.events(from_seq=1) as events:
            first = events.receive_nowait()
            assert isinstance(first, Snapshot)
            state = first.state
            assert isinstance(state, SessionSnapshot)
            assert state.seq == first.seq == session.seq
            assert [m.role for m in state.messages] == ["user", "assistant"]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(session.prompt, "more")
                item = await events.receive()
                assert isinstance(item, Sequenced) and item.seq == first.seq + 1


async def test_each_event_is_encoded_once_for_all_readers() -> None:
    """Three readers of one event get the very same wire bytes object."""
    faux, registry = make_faux()
    faux.set_responses([reply("hi")])
    async with (
        open_session(faux, registry) as session,
        session.events(max_buffer=256) as a,
        session.events(max_buffer=256) as b,
        session.events(max_buffer=256) as c,
    ):
        await session.prompt("hello")
        wires = [[item.wire for item in _drain(reader)] for reader in (a, b, c)]
    assert wires[0] and all(x is y is z for x, y, z in zip(*wires, strict=True))
    assert loads(wires[0][0])["type"] == "agent_start"


async def test_a_coalescing_reader_never_slows_the_run_and_loses_no_text() -> None:
    """A reader that does not read while a long answer streams gets merged deltas, all text."""
    faux, registry = make_faux()
    answer = "word " * 300
    faux.set_responses([reply(answer)])
    async with (
        open_session(faux, registry) as session,
        session.events(max_buffer=4, policy="coalesce") as events,
    ):
        with trio.fail_after(5):
            await session.prompt("talk")
        items = list(_drain(events))
    deltas = "".join(
        i.event.assistant_message_event.delta
        for i in items
        if i.event.type == "message_update" and i.event.assistant_message_event.type == "text_delta"
    )
    assert deltas == answer
    assert [i.event.type for i in items][-1] == "agent_end"


async def test_an_error_policy_reader_is_cut_off_with_its_cursor() -> None:
    """Under "error", a reader that falls behind ends with the seq to resume from."""
    faux, registry = make_faux()
    faux.set_responses([reply("word " * 100)])
    async with (
        open_session(faux, registry) as session,
        session.events(max_buffer=2, policy="error") as events,
    ):
        await session.prompt("talk")
        with pytest.raises(SubscriberLagged) as info:
            await events.receive()
    assert info.value.resume_from == 0


# --------------------------------------------------------------------------- abort


async def test_abort_during_a_slow_before_agent_start_hook_is_quick(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """abort() while before_agent_start hangs: the prompt ends and the session is idle at once."""

    class Slow(SessionHooks):
        async def before_agent_start(self, *args: Any) -> BeforeAgentStartResult | None:
            await trio.sleep_forever()
            return None

    faux, registry = make_faux()
    faux.set_responses([reply("never")])
    async with open_session(faux, registry, hooks=Slow()) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_streaming
            start = trio.current_time()
            await session.abort()
            assert trio.current_time() - start < QUIET_WITHIN
        assert not session.is_streaming
    assert faux.state.call_count == 0


async def test_abort_during_a_slow_context_hook_is_quick(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The context hook (before_request) hanging: abort ends the run with an aborted message."""

    class Slow(SessionHooks):
        async def context_envelope(self, reason: Any, envelope: Any) -> Any:
            await trio.sleep_forever()

    faux, registry = make_faux()
    faux.set_responses([reply("never")])
    async with open_session(faux, registry, hooks=Slow()) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            await session.abort()
            assert trio.current_time() - start < QUIET_WITHIN
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
        assert isinstance(session.session_manager.get_entries()[-1], SessionMessageEntry)


async def test_abort_during_the_retry_backoff_is_quick(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """abort() in a 60 s backoff ends it at once, reporting the retry as cancelled."""
    faux, registry = make_faux()
    faux.set_responses([fail("503 overloaded"), reply("never")])
    settings = SettingsManager.in_memory({"retry": {"baseDelayMs": 60_000}})
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_retrying
            start = trio.current_time()
            await session.abort()
            assert trio.current_time() - start < QUIET_WITHIN
    assert [e.type for e in events.events if e.type.startswith("auto_retry")] == [
        "auto_retry_start",
        "auto_retry_end",
    ]
    assert events.of("auto_retry_end")[0].success is False


async def test_cancelling_the_prompt_caller_aborts_the_session_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A caller that stops waiting aborts the run; the session is idle and the file whole."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "late")])
    async with open_session(faux, registry) as session:
        with trio.move_on_after(1):
            await session.prompt("hello")
        await session.wait_for_idle()
        assert not session.is_streaming
        assert session.messages[-1].stop_reason == "aborted"


# --------------------------------------------------------------------------- busy policies


async def test_interrupt_aborts_the_run_and_starts_the_new_prompt() -> None:
    """streaming_behavior="interrupt": the running answer ends aborted, the new prompt runs."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "never finished"), reply("second")])
    async with open_session(faux, registry) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "first")
            await trio.testing.wait_all_tasks_blocked()
            await session.prompt("second", streaming_behavior="interrupt")
        roles = [
            (m.role, m.stop_reason if isinstance(m, AssistantMessage) else None)
            for m in session.messages
        ]
    assert roles == [
        ("user", None),
        ("assistant", "aborted"),
        ("user", None),
        ("assistant", "stop"),
    ]


async def test_the_session_busy_policy_applies_without_streaming_behavior() -> None:
    """busy_policy="follow_up": a prompt during a run is queued, not refused."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "first"), reply("second")])
    async with (
        open_session(faux, registry, busy_policy="follow_up") as session,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.prompt, "one")
        await trio.testing.wait_all_tasks_blocked()
        await session.prompt("two")
        assert session.get_follow_up_messages() == ["two"]
        gate.set()
    assert faux.state.call_count == 2


# --------------------------------------------------------------------------- many sessions


async def test_a_thousand_sessions_under_mixed_commands_end_valid(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """1,000 sessions in one nursery, driven by outside tasks and by listeners with prompt,
    steer, follow-up and abort: every transcript ends valid, every file agrees with its
    session, and no task is left running."""
    rng = random.Random(7)
    faux, registry = make_faux()
    faux.set_responses([reply("ok " * 20)] * 20_000)
    sessions: list[AgentSession] = []

    async def drive(index: int) -> None:
        manager = SessionManager.in_memory("/project")
        plan = rng.choice(["plain", "steer", "follow_up", "abort", "listener"])
        async with open_agent_session(
            session_manager=manager,
            settings=SettingsManager.in_memory(),
            registry=registry,
            model=model_of(faux),
            busy_policy="follow_up",
        ) as session:
            sessions.append(session)
            if plan == "listener":

                async def listener(event: AgentEvent) -> None:
                    if event.type == "turn_start" and len(session.messages) < 4:
                        await session.steer(f"steer from listener {index}")

                session.subscribe(listener)
            async with trio.open_nursery() as inner:
                inner.start_soon(session.prompt, f"hello {index}")
                await trio.sleep(rng.random() * 0.01)
                if plan == "steer":
                    await session.steer("change course")
                elif plan == "follow_up":
                    await session.prompt("and then")
                elif plan == "abort":
                    await session.abort()
            await session.wait_for_idle()
            assert not session.is_streaming
            assert_valid_transcript(session.messages)
            entries = [
                e.message for e in manager.get_branch() if isinstance(e, SessionMessageEntry)
            ]
            assert [m.role for m in entries] == [m.role for m in session.messages]

    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            for index in range(SESSIONS):
                nursery.start_soon(drive, index)
    assert len(sessions) == SESSIONS
    await trio.testing.wait_all_tasks_blocked()


async def test_the_retry_backoff_is_a_wait_in_the_prompts_job(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The backoff before a retry runs in the prompt's own job task (no retry task of its
    own), and the retry then happens."""
    faux, registry = make_faux()
    faux.set_responses([fail("503 overloaded"), reply("recovered")])
    async with open_session(faux, registry) as session, trio.open_nursery() as nursery:
        nursery.start_soon(session.prompt, "one")
        while not session.is_retrying:
            await trio.testing.wait_all_tasks_blocked()
        names: list[str] = []
        stack = [trio.lowlevel.current_root_task()]
        while stack:
            task = stack.pop()
            if task is not None:
                names.append(task.name)
                stack.extend(t for n in task.child_nurseries for t in n.child_tasks)
        assert any(name.endswith("_run_job") for name in names)
        assert not any("Retry" in name for name in names)
        await session.wait_for_idle()
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage) and last.text() == "recovered"
