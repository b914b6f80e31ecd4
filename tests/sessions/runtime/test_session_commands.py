"""The session's command vocabulary: the abort commands are the real path (and abort), state
changes are commands executed in order, and the facade is a sender of the same types."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from pitrio.channels import Reply
from pitrio.providers import AssistantMessage, UserMessage
from pitrio.sessions import SessionMessageEntry
from pitrio.sessions import commands as cmd
from pitrio.sessions.compaction._compaction import CompactionError
from pitrio.sessions.runtime._retry import RETRY_CANCELLED
from pitrio.sessions.runtime._session_actor import SessionActor

from session_helpers import Events, fail, gated, make_faux, open_session, reply


@pytest.mark.parametrize("via", ["facade", "command"])
async def test_abort_compaction_cancels_a_manual_compaction(via: str) -> None:
    """``AbortCompaction`` (sent by ``abort_compaction()`` or as a command) cancels the
    compaction whose summary is being written: compaction_end reports it aborted, compact
    raises, and no compaction entry is saved."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([reply("a1"), reply("a2"), gated(gate, "never summarised")])
    settings = {"compaction": {"keepRecentTokens": 2}}
    async with open_session(faux, registry, settings=settings) as session:
        await session.prompt("one")
        await session.prompt("two")
        events = Events()
        session.subscribe(events)
        raised: list[BaseException] = []

        async def compact() -> None:
            try:
                await session.compact()
            except CompactionError as exc:
                raised.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(compact)
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_compacting
            if via == "facade":
                await session.abort_compaction()
            else:
                await session.execute(cmd.AbortCompaction())
        assert [str(e) for e in raised] == ["Compaction cancelled"]
        assert events.wire("compaction_end")[0]["aborted"] is True
        assert not session.is_compacting
        assert all(e.type != "compaction" for e in session.session_manager.get_entries())


@pytest.mark.parametrize("via", ["facade", "command"])
async def test_abort_retry_ends_the_backoff(
    via: str, autojump_clock: trio.testing.MockClock
) -> None:
    """``AbortRetry`` during the backoff ends it: auto_retry_end reports "Retry cancelled", the
    prompt returns with the error as its last message, and no second request is made."""
    faux, registry = make_faux()
    faux.set_responses([fail("529 overloaded"), reply("never sent")])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hi")
            while not session.is_retrying:
                await trio.testing.wait_all_tasks_blocked()
            if via == "facade":
                await session.abort_retry()
            else:
                await session.execute(cmd.AbortRetry())
        assert events.wire("auto_retry_end") == [
            {
                "type": "auto_retry_end",
                "success": False,
                "attempt": 1,
                "finalError": RETRY_CANCELLED,
            }
        ]
        assert faux.state.call_count == 1
        assert not session.is_retrying and not session.is_streaming


async def test_abort_branch_summary_cancels_the_summary() -> None:
    """``AbortBranchSummary`` while a branch summary is written: the navigation is cancelled
    (aborted) and the leaf stays where it was."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([reply("a1"), reply("a2"), gated(gate, "never summarised")])
    async with open_session(faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        manager = session.session_manager
        leaf = manager.get_leaf_id()
        user_two = [
            e
            for e in manager.get_entries()
            if isinstance(e, SessionMessageEntry) and isinstance(e.message, UserMessage)
        ][1]
        outcomes: list[Any] = []

        async def navigate() -> None:
            outcomes.append(await session.navigate_tree(user_two.id, summarize=True))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(navigate)
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_compacting
            await session.execute(cmd.AbortBranchSummary())
        assert outcomes[0].cancelled and outcomes[0].aborted
        assert manager.get_leaf_id() == leaf


async def test_the_facade_sends_abort_as_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``abort()`` reaches the session's task as the ``Abort`` command (not by changing the
    session's state from the caller's task), and the run it aborts ends aborted."""
    sent: list[str] = []
    send = SessionActor.send

    async def spy(self: SessionActor, command: cmd.SessionCommand) -> None:
        sent.append(type(command).__name__)
        await send(self, command)

    monkeypatch.setattr(SessionActor, "send", spy)
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "never")])
    async with open_session(faux, registry) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hi")
            await trio.testing.wait_all_tasks_blocked()
            await session.abort()
        assert sent == ["Prompt", "Abort"]
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"


async def test_state_changes_sent_without_waiting_are_executed_in_order() -> None:
    """Commands sent back to back are executed in the order sent, the state changes among
    them too: each reply is answered in that order, and the last change wins."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        commands: list[Any] = [
            cmd.SetSteeringMode(mode="all"),
            cmd.SetAutoRetry(enabled=False),
            cmd.Steer(message="queued"),
            cmd.SetSteeringMode(mode="one-at-a-time"),
            cmd.SetTools(tools=()),
            cmd.SetAutoRetry(enabled=True),
        ]
        answered: list[int] = []

        async def watch(index: int, reply: Reply[Any]) -> None:
            await reply.answered()
            answered.append(index)

        async with trio.open_nursery() as nursery:
            for index, command in enumerate(commands):
                nursery.start_soon(watch, index, command.reply)
            await trio.testing.wait_all_tasks_blocked()
            for command in commands:
                session.send_nowait(command)
            cleared = await session.execute(cmd.ClearQueue())
        assert answered == list(range(len(commands)))
        assert cleared == (["queued"], [])
        assert session.steering_mode == "one-at-a-time"
        assert session.auto_retry_enabled
        assert session.agent.tools == ()


async def test_set_label_is_a_command_applied_in_order() -> None:
    """``SetLabel`` (the facade's ``set_label``, an extension's ``set_label``) labels an entry
    from the session's task, in the order the labels were sent."""
    faux, registry = make_faux()
    faux.set_responses([reply("a1")])
    async with open_session(faux, registry) as session:
        await session.prompt("first")
        manager = session.session_manager
        leaf = manager.get_leaf_id()
        assert leaf is not None
        session.send_nowait(cmd.SetLabel(entry_id=leaf, label="one"))
        session.send_nowait(cmd.SetLabel(entry_id=leaf, label="two"))
        assert manager.get_label(leaf) is None  # not yet: the session's task applies them
        await session.set_label(leaf, "three")
        assert manager.get_label(leaf) == "three"
        labels = [e.label for e in manager.get_entries() if e.type == "label"]
        assert labels == ["one", "two", "three"]
