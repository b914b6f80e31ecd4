"""A tool runs in the task that calls it; its progress updates go out from a task of their own."""

from __future__ import annotations

import contextvars
from typing import Any

import trio
import trio.testing

from pitrio.actors import AgentEvent, open_agent
from pitrio.providers import TextContent
from pitrio.tools import AgentTool, AgentToolResult, FunctionTool

from helpers import Recorder, call, echo_tool, make_faux, tool_then_text

TOOL_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("tool_var", default="unset")


class _Spawns(trio.abc.Instrument):
    """Counts the tasks spawned while ``counting`` is on."""

    def __init__(self) -> None:
        self.counting = False
        self.spawned = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        if self.counting:
            self.spawned += 1


async def test_a_tool_that_reports_no_progress_starts_no_task() -> None:
    """Between tool_execution_start and _end of a tool without updates, no task is spawned."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "x")])] * 2)
    spawns = _Spawns()

    def watch(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            spawns.counting = True
        elif event.type == "tool_execution_end":
            spawns.counting = False

    trio.lowlevel.add_instrument(spawns)
    try:
        async with open_agent(
            model=faux.get_model(), registry=registry, tools=[echo_tool()]
        ) as agent:
            agent.subscribe(watch)
            await agent.prompt("go")
    finally:
        trio.lowlevel.remove_instrument(spawns)
    assert agent.messages[-1].text() == "done"  # type: ignore[union-attr]
    assert spawns.spawned == 0


async def test_a_tools_context_variables_stay_its_own() -> None:
    """A ContextVar a tool sets is not seen by the after_tool_call hook nor by the next tool,
    as when each tool ran in a task of its own."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a"), call("t2", "b")])] * 2)
    seen_by_tools: list[str] = []
    seen_by_hook: list[str] = []

    async def setter(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        seen_by_tools.append(TOOL_VAR.get())
        TOOL_VAR.set(params["value"])
        await trio.lowlevel.checkpoint()
        assert TOOL_VAR.get() == params["value"]  # its own change holds across its waits
        return AgentToolResult(content=[TextContent(text="ok")])

    async def after(context: Any) -> None:
        seen_by_hook.append(TOOL_VAR.get())

    tool = FunctionTool(
        name="echo", label="Echo", description="", parameters={"type": "object"}, fn=setter
    )
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[tool], after_tool_call=after
    ) as agent:
        await agent.prompt("go")
    assert seen_by_tools == ["unset", "unset"]
    assert seen_by_hook == ["unset", "unset"]
    assert TOOL_VAR.get() == "unset"


async def test_updates_reach_a_slow_async_subscriber_before_the_end_event() -> None:
    """With a subscriber that waits on every event, every update the tool reported is
    delivered, in order, before tool_execution_end; an update after the tool returned is not."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "x")])] * 2)
    kept: list[Any] = []

    async def progress(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        kept.append(on_update)
        for step in range(5):
            on_update(AgentToolResult(content=[TextContent(text=f"step {step}")]))
        await trio.lowlevel.checkpoint()
        on_update(AgentToolResult(content=[TextContent(text="step 5")]))
        return AgentToolResult(content=[TextContent(text="done")])

    tool = FunctionTool(
        name="echo", label="Echo", description="", parameters={"type": "object"}, fn=progress
    )
    recorder = Recorder()

    async def slow(event: AgentEvent) -> None:
        recorder(event)
        for _ in range(3):
            await trio.lowlevel.checkpoint()

    async with open_agent(model=faux.get_model(), registry=registry, tools=[tool]) as agent:
        agent.subscribe(slow)
        await agent.prompt("go")
        kept[0](AgentToolResult(content=[TextContent(text="too late")]))
        await trio.testing.wait_all_tasks_blocked()
    kinds = [t for t in recorder.types if t.startswith("tool_execution")]
    assert kinds == ["tool_execution_start"] + ["tool_execution_update"] * 6 + [
        "tool_execution_end"
    ]
    texts = [e.partial_result.content[0].text for e in recorder.of("tool_execution_update")]
    assert texts == [f"step {n}" for n in range(6)]


class _Ready:
    """An awaitable that is not a coroutine: completes at once with its value."""

    def __init__(self, value: AgentToolResult) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # a generator: __await__ returns an iterator


class _PlainAwaitableTool(AgentTool):
    """A tool whose execute() is a plain method handing back a non-coroutine awaitable."""

    name = "echo"
    label = "Echo"
    description = ""
    parameters: Any = {"type": "object"}

    def execute(  # type: ignore[override]
        self, call_id: str, params: dict[str, Any], on_update: Any
    ) -> _Ready:
        return _Ready(AgentToolResult(content=[TextContent(text="plain")]))


async def test_an_execute_that_returns_another_awaitable_still_runs() -> None:
    """execute() may hand back any awaitable, not only a coroutine: its result is the tool's."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "x")])] * 2)
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[_PlainAwaitableTool()]
    ) as agent:
        await agent.prompt("go")
    results = [m for m in agent.messages if m.role == "toolResult"]
    assert [r.content[0].text for r in results] == ["plain"]  # type: ignore[union-attr]
    assert not results[0].is_error  # type: ignore[union-attr]
