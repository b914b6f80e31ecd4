"""An idle AgentSession keeps one task: the agent's task and the Persistence actor's start with
the first use, inside the session's nursery, and the laziness changes no behaviour."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
import trio
from session_script import Messages, counter_ids

from pitrio._exceptions import UsageError
from pitrio.providers import AssistantMessage
from pitrio.sessions import SessionHooks, SessionLocked, SessionManager, open_persistence

from session_helpers import fail, make_faux, open_session, reply


def task_names() -> list[str]:
    """The names of every task alive in this Trio run."""
    names: list[str] = []
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None:
            continue
        names.append(task.name)
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return names


def count(names: list[str], suffix: str) -> int:
    return sum(name.endswith(suffix) for name in names)


def saved_session(directory: Path) -> Path:
    sm = SessionManager.create("/p", directory, new_id=counter_ids())
    m = Messages(0)
    sm.append_message(m.user("q"))
    sm.append_message(m.assistant("a"))
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    return Path(path)


async def test_idle_session_has_no_agent_task_until_the_first_prompt() -> None:
    """The agent's task is started by the first prompt, in the session's nursery, and stays."""
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(faux, registry) as session:
        await trio.testing.wait_all_tasks_blocked()
        names = task_names()
        assert count(names, "Agent.run") == 0
        assert count(names, "Persistence.run") == 0  # in memory: nothing to write
        await session.prompt("hello")
        assert count(task_names(), "Agent.run") == 1
        await session.prompt("again")
        assert count(task_names(), "Agent.run") == 1
        assert [m.role for m in session.messages] == ["user", "assistant"] * 2


async def test_agent_started_by_the_session_lives_in_the_session_nursery() -> None:
    """Structured concurrency holds: the agent's task is a child of the session's run task."""
    faux, registry = make_faux()
    faux.set_responses([reply("one")])
    async with open_session(faux, registry) as session:
        await session.prompt("hello")
        parents = []
        stack = [trio.lowlevel.current_root_task()]
        while stack:
            task = stack.pop()
            for nursery in task.child_nurseries:
                for child in nursery.child_tasks:
                    if child.name.endswith("Agent.run"):
                        parents.append(task.name)
                    stack.append(child)
        assert len(parents) == 1 and parents[0].endswith("AgentSession.run")


async def test_closing_an_idle_session_closes_its_agent() -> None:
    """A session closed before any prompt leaves an agent that refuses commands and queues."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        agent = session._actor.agent
    with pytest.raises(UsageError, match="closed"):
        await agent.prompt("too late")
    with pytest.raises(trio.ClosedResourceError):
        agent.steer(Messages(0).user("too late"))
    with pytest.raises(UsageError, match="closed"):
        await session.prompt("too late")


async def test_concurrent_first_runs_start_one_agent_task() -> None:
    """Two callers racing to start the agent wait for one start and both find it running."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        agent = session._actor.agent
        async with trio.open_nursery() as owner:
            async with trio.open_nursery() as racers:
                for _ in range(3):
                    racers.start_soon(agent.ensure_started, owner)
            assert count(task_names(), "Agent.run") == 1
            owner.cancel_scope.cancel()


async def test_idle_file_session_holds_the_lock_without_a_writer_task(tmp_path: Path) -> None:
    """A file-backed idle session locks its file at start; the writer task starts with the first
    entry, writes every entry in order, and the lock is released when the session ends."""
    path = saved_session(tmp_path)
    faux, registry = make_faux()
    faux.set_responses([reply("first answer"), reply("second answer")])
    async with open_session(faux, registry, manager=SessionManager.open(path)) as session:
        await session.prompt("hello")  # also records the model and thinking level
    manager = SessionManager.open(path)
    async with open_session(faux, registry, manager=manager) as session:
        await trio.testing.wait_all_tasks_blocked()
        assert count(task_names(), "Persistence.run") == 0
        with pytest.raises(SessionLocked):
            async with open_persistence(SessionManager.open(path)):
                pytest.fail("a second writer started on an idle session's file")
        await session.prompt("again")
        assert count(task_names(), "Persistence.run") == 1
        await manager.flush()
    reopened = SessionManager.open(path)
    assert [e.id for e in reopened.get_entries()] == [e.id for e in manager.get_entries()]
    roles = [m.role for m in reopened.build_session_context().messages]
    assert roles == ["user", "assistant"] * 3
    async with open_persistence(SessionManager.open(path)) as persistence:
        assert persistence.running  # the lock was released


async def test_idle_file_session_that_never_wrote_releases_its_lock(tmp_path: Path) -> None:
    """The lock an idle session took is released when it closes without ever writing."""
    path = saved_session(tmp_path)
    faux, registry = make_faux()
    manager = SessionManager.open(path)
    async with open_session(faux, registry, manager=manager, thinking_level="off"):
        pass
    assert manager.persistence is None
    async with open_persistence(SessionManager.open(path)) as persistence:
        assert persistence.running


async def test_context_engine_is_built_only_when_someone_needs_it() -> None:
    """A session without context hooks or transforms never builds its ContextEngine (prompts
    go out as built); asking for the engine (/context) builds it once."""
    faux, registry = make_faux()
    faux.set_responses([reply("one")])
    async with open_session(faux, registry) as session:
        context = session._actor.context
        assert context._engine is None
        await session.prompt("hello")
        assert context._engine is None
        engine = session.context_engine
        assert session.context_engine is engine
        assert context._engine is engine


async def test_session_actor_has_no_instance_dict(tmp_path: Path) -> None:
    """The session actor is slotted all the way down (an idle session holds no 30-key
    ``__dict__``), and its user-bash state is made by the first user command only."""
    faux, registry = make_faux()
    manager = SessionManager.in_memory(str(tmp_path))
    async with open_session(faux, registry, manager=manager) as session:
        actor = session._actor
        assert not hasattr(actor, "__dict__")
        await session.abort_bash()
        assert actor._user_bash is None
        result = await session.execute_bash("echo hi")
        assert result.output == "hi\n"
        assert actor._user_bash is not None and actor._user_bash.running == []


def test_a_delivered_queued_text_leaves_the_queue_once() -> None:
    """The queued texts are tuples now: a delivered text removes its first occurrence only,
    as list.remove did, and the rest keep their order."""
    from pitrio.sessions.runtime._session_actor import _without

    assert _without(("a", "b", "a"), "a") == ("b", "a")
    assert _without(("a", "b", "a"), "b") == ("a", "a")
    assert _without(("only",), "only") == ()


class _StartNurseryProbe(SessionHooks):
    """Keeps a weak reference to the nursery the session's task runs in while it starts."""

    def __init__(self) -> None:
        self.starting_nursery: weakref.ref[Any] | None = None

    async def session_start(self, reason: Any, previous_session_file: str | None) -> None:
        task = trio.lowlevel.current_task()
        self.starting_nursery = weakref.ref(task.parent_nursery)


async def test_a_started_session_lets_go_of_the_nursery_start_opened() -> None:
    """nursery.start runs a session in a nursery of its own until it is started; an idle
    session keeps no reference to it (its cancel scope, status, sets: ~1 KB per session)."""
    faux, registry = make_faux()
    hooks = _StartNurseryProbe()
    async with open_session(faux, registry, hooks=hooks) as session:
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        assert hooks.starting_nursery is not None
        assert hooks.starting_nursery() is None
        faux.set_responses([reply("still works")])
        await session.prompt("hello")
        assert [m.role for m in session.messages] == ["user", "assistant"]


def session_task() -> trio.lowlevel.Task:
    """The one task named AgentSession.run in this Trio run."""
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task.name.endswith("AgentSession.run"):
            return task
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    raise AssertionError("no session task")


async def test_an_in_memory_session_opens_its_nursery_with_the_first_command() -> None:
    """A session never used holds no nursery; the first command (here one that only changes
    state) opens it, and the prompts after it run their jobs and the agent's task in it."""
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(faux, registry) as session:
        await trio.testing.wait_all_tasks_blocked()
        task = session_task()
        assert task.child_nurseries == []
        await session.set_session_name("named")
        assert len(task.child_nurseries) == 1
        assert session.session_name == "named"
        await session.prompt("hello")
        await session.prompt("again")
        [nursery] = task.child_nurseries
        assert [t.name.rsplit(".", 1)[-1] for t in nursery.child_tasks] == ["run"]
        assert [m.role for m in session.messages] == ["user", "assistant"] * 2


async def test_retry_state_is_made_by_the_first_run(autojump_clock: trio.testing.MockClock) -> None:
    """A session never prompted holds no retry state, yet answers for it (not retrying,
    attempt 0, abort_retry a no-op); a transient error in a later run is retried as before."""
    faux, registry = make_faux()
    faux.set_responses([fail("503 overloaded"), reply("recovered")])
    async with open_session(faux, registry) as session:
        assert session._actor._retry is None
        assert (session.is_retrying, session.retry_attempt) == (False, 0)
        await session.abort_retry()
        await session.abort()
        await session.prompt("one")
        assert session._actor._retry is not None
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage) and last.text() == "recovered"


def live_instances(*names: str) -> list[str]:
    """The class names of live objects (after a collection) whose class is one of ``names``."""
    gc.collect()
    return sorted(type(o).__qualname__ for o in gc.get_objects() if type(o).__qualname__ in names)


async def test_an_idle_session_keeps_nothing_of_its_last_prompt() -> None:
    """Between prompts the session's and the agent's command tasks wait with no command in
    hand: the last prompt's command, its reply, and the run it started (controller, loop
    configuration) are freed, not kept by a loop variable until the next command."""
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    kinds = ("Prompt", "_StartRun", "_Run", "LoopController", "LoopConfig", "Reply")
    async with open_session(faux, registry) as session:
        await session.prompt("hello")
        await trio.testing.wait_all_tasks_blocked()
        assert live_instances(*kinds) == []
        await session.prompt("again")
        await trio.testing.wait_all_tasks_blocked()
        assert live_instances(*kinds) == []
        assert [m.role for m in session.messages] == ["user", "assistant"] * 2


async def test_the_agent_started_by_a_session_opens_no_nursery_of_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The agent's task, and each run's task, live in the session's nursery: a used session
    keeps one nursery (scope, status, sets) rather than two; closing the session still stops
    a run in progress and the agent with it."""

    class Hang(SessionHooks):
        hang = False

        async def context_envelope(self, reason: Any, envelope: Any) -> Any:
            if self.hang:
                await trio.sleep_forever()
            return None

    hooks = Hang()
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("never")])
    async with open_session(faux, registry, hooks=hooks) as session:
        await session.prompt("hello")
        await trio.testing.wait_all_tasks_blocked()
        [nursery] = session_task().child_nurseries
        [agent_task] = [t for t in nursery.child_tasks if t.name.endswith("Agent.run")]
        assert agent_task.child_nurseries == []
        hooks.hang = True
        async with trio.open_nursery() as caller:
            caller.start_soon(session.prompt, "hangs")
            await trio.testing.wait_all_tasks_blocked()
            names = [t.name for t in nursery.child_tasks]
            assert sum(name.endswith("Agent._drive") for name in names) == 1
            assert agent_task.child_nurseries == []
            caller.cancel_scope.cancel()
        agent = session._actor.agent
    with pytest.raises(UsageError, match="closed"):
        await agent.prompt("after the close")
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
