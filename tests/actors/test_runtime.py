"""The Agent as an actor: one cancel scope per run (abort reaches every stage), tool batches of
any size, the command inbox with its busy policies, and errors that read as themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from pitrio._exceptions import UsageError
from pitrio.actors import (
    ABORTED_TOOL_MESSAGE,
    SKIPPED_MESSAGE,
    Agent,
    AgentEvent,
    BeforeToolCallResult,
    open_agent,
)
from pitrio.providers import AssistantMessage, ToolResultMessage, UserMessage

from helpers import Recorder, assistant, call, echo_tool, make_faux, never, tool_then_text
from transcripts import assert_valid_transcript

QUIET_WITHIN = 0.1
"""Virtual seconds from abort() to a finished run: the issue's 100 ms, on Trio's MockClock."""


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)


def result_text(message: ToolResultMessage) -> str:
    return "".join(getattr(block, "text", "") for block in message.content)


async def abort_when_blocked(agent: Agent, prompt: Callable[[], Any]) -> float:
    """Start ``prompt``, wait until the run is stuck, abort, and return the virtual seconds
    from the abort to the end of the prompt call."""
    ended: list[float] = []

    async def run_prompt() -> None:
        await prompt()
        ended.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_prompt)
        await trio.testing.wait_all_tasks_blocked()
        assert agent.is_streaming
        aborted_at = trio.current_time()
        agent.abort()
    await trio.testing.wait_all_tasks_blocked()
    assert agent._nursery is not None
    assert {task.name for task in agent._nursery.child_tasks} <= {
        "pitrio.actors._agent.Agent._serve"
    }
    assert not agent.is_streaming
    return ended[0] - aborted_at


def check_closing_events(recorder: Recorder) -> None:
    """The run closed as pi closes an aborted run: turn_end then agent_end, each once at the end."""
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert recorder.types.count("agent_end") == 1
    assert recorder.types.count("agent_start") == 1
    assert recorder.types.count("turn_start") == recorder.types.count("turn_end")


# --------------------------------------------------------------------------- abort at every stage


async def test_abort_during_a_slow_before_tool_call_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """abort() while before_tool_call hangs ends prompt() within 100 ms with a valid transcript."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a"), call("t2", "b")])] * 2)
    recorder = Recorder()

    async def before(_: Any) -> BeforeToolCallResult | None:
        await trio.sleep_forever()
        return None

    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool()], before_tool_call=before
    ) as agent:
        agent.subscribe(recorder)
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error, result_text(r)) for r in results] == [
        ("t1", True, ABORTED_TOOL_MESSAGE),
        ("t2", True, ABORTED_TOOL_MESSAGE),
    ]
    assert agent.messages[-1].stop_reason == "aborted"
    check_closing_events(recorder)
    assert_valid_transcript(agent.messages)


async def test_abort_during_a_slow_transform_context_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """abort() while transform_context hangs ends the turn with an aborted assistant message."""
    faux, registry = make_faux()
    faux.set_responses([assistant("never sent")])
    recorder = Recorder()

    async def transform(messages: Any) -> Any:
        await trio.sleep_forever()
        return messages

    async with open_agent(
        model=faux.get_model(), registry=registry, transform_context=transform
    ) as agent:
        agent.subscribe(recorder)
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert faux.state.call_count == 0
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


@pytest.mark.parametrize("hook", ["convert_to_llm", "get_api_key", "should_stop_after_turn"])
async def test_abort_during_any_other_hook_returns_at_once(
    hook: str, autojump_clock: trio.testing.MockClock
) -> None:
    """convert_to_llm, get_api_key and should_stop_after_turn are inside the run's scope too."""
    faux, registry = make_faux()
    faux.set_responses([assistant("hello")])
    recorder = Recorder()

    async def hang(*args: Any) -> Any:
        await trio.sleep_forever()

    async with open_agent(model=faux.get_model(), registry=registry, **{hook: hang}) as agent:
        agent.subscribe(recorder)
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    check_closing_events(recorder)
    assert_valid_transcript(agent.messages)
    assert agent.messages[0].role == "user"
    assert agent.messages[-1].role == "assistant"


async def test_abort_cancels_an_awaited_subscriber_that_stopped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A subscriber stuck in an await is cancelled by abort; the others get the closing events."""
    faux, registry = make_faux()
    faux.set_responses([assistant("word " * 50)])
    recorder = Recorder()
    stuck_on: list[str] = []

    async def stalls(event: AgentEvent) -> None:
        if event.type == "message_update" and not stuck_on:
            stuck_on.append(event.type)
            await trio.sleep_forever()

    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(stalls)
        agent.subscribe(recorder)
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    assert stuck_on == ["message_update"]
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    check_closing_events(recorder)


async def test_abort_cuts_off_a_subscriber_that_stalls_again_in_the_epilogue(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A subscriber that blocks on every event cannot hold abort past its bound."""
    faux, registry = make_faux()
    faux.set_responses([assistant("hello")])

    async def always_stalls(event: AgentEvent) -> None:
        await trio.sleep_forever()

    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(always_stalls)
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    assert [m.role for m in agent.messages] == ["user", "assistant"]


async def test_abort_unblocks_an_events_iterator_that_stopped_reading(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Under the "block" policy a reader that stopped holds the run; abort releases it."""
    faux, registry = make_faux()
    faux.set_responses([assistant("word " * 200)])
    async with (
        open_agent(model=faux.get_model(), registry=registry) as agent,
        agent.events(max_buffer=1, policy="block"),
    ):
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    assert agent.messages[-1].stop_reason == "aborted"


async def test_abort_during_a_slow_after_tool_call_keeps_the_result_slot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """after_tool_call hanging: abort gives that call an aborted result, the run ends."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a")])] * 2)
    executed: list[str] = []

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(executed)],
        after_tool_call=never,
    ) as agent:
        took = await abort_when_blocked(agent, lambda: agent.prompt("go"))
    assert took < QUIET_WITHIN
    assert executed == ["a"]
    assert_valid_transcript(agent.messages)
    assert agent.messages[-1].stop_reason == "aborted"


# --------------------------------------------------------------------------- tool batches


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_a_thousand_tool_calls_in_one_message_all_run(mode: str) -> None:
    """Batches are not limited by any channel size: 1,000 calls run and are answered in order."""
    faux, registry = make_faux()
    calls = [call(f"t{i}", str(i)) for i in range(1000)]
    faux.set_responses([tool_then_text(calls)] * 2)
    executed: list[str] = []
    with trio.fail_after(60):
        async with open_agent(
            model=faux.get_model(),
            registry=registry,
            tools=[echo_tool(executed)],
            tool_execution=mode,
        ) as agent:
            await agent.prompt("go")
    assert sorted(executed, key=int) == [str(i) for i in range(1000)]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert_valid_transcript(agent.messages)


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_a_thousand_calls_that_all_fail_preflight_are_answered(mode: str) -> None:
    """Unknown tools fail preflight; 1,000 of them still each get an error result."""
    faux, registry = make_faux()
    calls = [call(f"t{i}", str(i), name="missing") for i in range(1000)]
    faux.set_responses([tool_then_text(calls)] * 2)
    with trio.fail_after(60):
        async with open_agent(
            model=faux.get_model(), registry=registry, tools=[echo_tool()], tool_execution=mode
        ) as agent:
            await agent.prompt("go")
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1000
    assert all(r.is_error and result_text(r) == "Tool missing not found" for r in results)
    assert_valid_transcript(agent.messages)


async def test_steering_closes_the_intake_at_arrival() -> None:
    """A steer that arrives while the first of three tools runs skips the other two at once,
    whatever the first tool does after it."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a"), call("t2", "b"), call("t3", "c")])] * 3)
    steered = trio.Event()
    executed: list[str] = []

    async def gate(value: str) -> None:
        if value == "a":
            await steered.wait()

    async with (
        open_agent(
            model=faux.get_model(), registry=registry, tools=[echo_tool(executed, gate=gate)]
        ) as agent,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(agent.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        agent.steer(UserMessage(content="change of plan", timestamp=1))
        steered.set()
    assert executed[0] == "a"
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)][:3]
    assert [(r.tool_call_id, result_text(r)) for r in results[1:]] == [
        ("t2", SKIPPED_MESSAGE),
        ("t3", SKIPPED_MESSAGE),
    ]


# --------------------------------------------------------------------------- the command inbox


@pytest.mark.parametrize(
    ("agent_policy", "call_policy"), [("steer", None), ("reject", "follow_up")]
)
async def test_busy_policy_steer_or_follow_up_queues_the_prompt_for_the_running_run(
    agent_policy: str, call_policy: str | None
) -> None:
    """With busy policy "steer" (the agent's) or "follow_up" (the call's) a prompt during a run
    returns once queued, and the running run takes it."""
    faux, registry = make_faux()
    release = trio.Event()

    async def slow(*_: Any) -> AssistantMessage:
        await release.wait()
        return assistant("first")

    faux.set_responses([slow, assistant("second")])
    async with (
        open_agent(model=faux.get_model(), registry=registry, busy_policy=agent_policy) as agent,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(agent.prompt, "one")
        await trio.testing.wait_all_tasks_blocked()
        await agent.prompt("two", busy_policy=call_policy)  # returns once queued
        release.set()
    assert [text_of(m) for m in agent.messages] == ["one", "first", "two", "second"]


async def test_busy_policy_interrupt_aborts_then_starts_the_new_prompt() -> None:
    """busy_policy="interrupt" aborts the run in progress and runs the new prompt after it."""
    faux, registry = make_faux()
    faux.set_responses([never_answers, assistant("second")])
    async with (
        open_agent(model=faux.get_model(), registry=registry) as agent,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(agent.prompt, "one")
        await trio.testing.wait_all_tasks_blocked()
        await agent.prompt("two", busy_policy="interrupt")
    assert [
        (m.role, m.stop_reason if isinstance(m, AssistantMessage) else None) for m in agent.messages
    ] == [
        ("user", None),
        ("assistant", "aborted"),
        ("user", None),
        ("assistant", "stop"),
    ]


async def never_answers(*_: Any) -> AssistantMessage:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


async def test_a_listener_may_prompt_and_is_answered_not_deadlocked() -> None:
    """A listener that awaits prompt() during a run gets the busy answer, and the run goes on."""
    faux, registry = make_faux()
    faux.set_responses([assistant("hello")])
    answers: list[str] = []
    async with open_agent(model=faux.get_model(), registry=registry) as agent:

        async def listener(event: AgentEvent) -> None:
            if event.type == "turn_start":
                try:
                    await agent.prompt("again")
                except UsageError as exc:
                    answers.append(str(exc))

        agent.subscribe(listener)
        with trio.fail_after(5):
            await agent.prompt("hi")
    assert len(answers) == 1 and answers[0].startswith("Agent is already processing")


async def test_closing_the_agent_closes_its_queues_and_hands_back_what_waited() -> None:
    """After close, steer() is refused and the queued messages are still readable."""
    faux, registry = make_faux()
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.follow_up(UserMessage(content="later", timestamp=1))
    steering, follow_up = agent.queued_messages
    assert steering == [] and [m.content for m in follow_up] == ["later"]
    with pytest.raises(trio.ClosedResourceError):
        agent.steer(UserMessage(content="too late", timestamp=1))


# --------------------------------------------------------------------------- errors


async def test_an_error_in_stream_fn_reads_as_itself() -> None:
    """A stream_fn that raises ends the run with its own message, not a nursery group's."""
    faux, registry = make_faux()

    def broken(*_: Any) -> Any:
        raise ValueError("no such endpoint")

    async with open_agent(model=faux.get_model(), registry=registry, stream_fn=broken) as agent:
        await agent.prompt("hi")
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", "no such endpoint")
    assert agent.error == "no such endpoint"


async def test_an_error_in_a_provider_task_reads_as_itself() -> None:
    """A stream_fn whose task fails inside its nursery is reported with the task's message."""
    faux, registry = make_faux()

    def explodes_later(nursery: trio.Nursery, *_: Any) -> Any:
        async def boom() -> None:
            raise OSError("socket closed by peer")

        nursery.start_soon(boom)
        from pitrio.providers import AssistantMessageEventStream

        return AssistantMessageEventStream(faux.get_model())

    async with open_agent(
        model=faux.get_model(), registry=registry, stream_fn=explodes_later
    ) as agent:
        await agent.prompt("hi")
    assert agent.messages[-1].error_message == "socket closed by peer"
