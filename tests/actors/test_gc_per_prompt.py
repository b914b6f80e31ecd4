"""What a prompt leaves behind: nothing for CPython's cyclic collector, and the agent is started
without a start handshake."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from garbage import cyclic_garbage, pitrio_objects

from pitrio._exceptions import UsageError
from pitrio.actors import Agent, open_agent
from pitrio.providers import faux_tool_call

from helpers import assistant, echo_tool, make_faux, tool_then_text


def agent_tasks() -> list[trio.lowlevel.Task]:
    found = []
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task.name.endswith("Agent.run"):
            found.append(task)
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return found


async def test_an_agent_started_once_by_ensure_started_serves_prompt_after_prompt() -> None:
    """Started by ensure_started (twice: it starts once), the agent's one task serves prompt
    after prompt, and refuses prompts once its nursery is gone."""
    faux, registry = make_faux()
    faux.set_responses([assistant("one"), assistant("two"), assistant("three")])
    agent = Agent(model=faux.get_model(), registry=registry)
    async with trio.open_nursery() as nursery:
        await agent.ensure_started(nursery)
        await agent.ensure_started(nursery)  # started once
        for text in ("a", "b", "c"):
            await agent.prompt(text)
            await trio.testing.wait_all_tasks_blocked()
            (_task,) = agent_tasks()
        nursery.cancel_scope.cancel()
    assert [m.role for m in agent.messages] == ["user", "assistant"] * 3
    with pytest.raises(UsageError, match="closed"):
        await agent.prompt("after the end")


async def test_a_prompt_sent_before_the_started_task_ran_is_served() -> None:
    """ensure_started returns before the agent's task runs; a prompt sent at once waits in the
    inbox and runs; a closed agent refuses to start."""
    faux, registry = make_faux()
    faux.set_responses([assistant("hello")])
    agent = Agent(model=faux.get_model(), registry=registry)
    async with trio.open_nursery() as nursery:
        await agent.ensure_started(nursery)
        await agent.prompt("hi")
        nursery.cancel_scope.cancel()
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    closed = Agent(model=faux.get_model(), registry=registry)
    closed.close()
    async with trio.open_nursery() as nursery:
        with pytest.raises(UsageError, match="closed"):
            await closed.ensure_started(nursery)


async def test_a_finished_prompt_leaves_nothing_to_the_cyclic_collector() -> None:
    """A prompt's command, run, controller, messages and events are freed by reference
    counting once it returns (a reply or a run's end latch waited on made a cycle that kept
    all of them until a collection: most of the collector's work in the loop benchmark)."""
    faux, registry = make_faux()
    respond = tool_then_text([faux_tool_call("echo", {"value": "hi"}, id="call-1")])
    async with open_agent(model=faux.get_model(), registry=registry, tools=[echo_tool()]) as agent:
        agent.subscribe(lambda event: None)
        faux.set_responses([respond, respond])
        await agent.prompt("warm up")  # first-use work (imports, caches) out of the way
        with cyclic_garbage() as garbage:
            for text in ("one", "two"):
                await agent.reset()
                faux.append_responses([respond, respond])
                await agent.prompt(text)
        assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert pitrio_objects(garbage) == []


class _Steps(trio.abc.Instrument):
    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.steps += 1


async def test_the_sender_of_a_prompt_is_woken_once_by_its_run() -> None:
    """agent.prompt parks once, from sending the command to the run's end: the agent answers
    the command when its run has ended (a reply with the run, and then a wait on its end,
    woke the sender in between: a scheduler pass and a park per prompt)."""
    faux, registry = make_faux()
    faux.set_responses([assistant("one"), assistant("two")])
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        await agent.prompt("warm up")
        steps = _Steps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(steps)
        try:
            await agent.prompt("counted")
        finally:
            trio.lowlevel.remove_instrument(steps)
    assert steps.steps == 1
    assert [m.role for m in agent.messages] == ["user", "assistant"] * 2
