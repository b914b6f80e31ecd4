"""The Agent facade: ports of pi-agent-core's agent tests (packages/agent/test/agent.test.ts)
plus pitrio's abort, steering, follow-up, guard and concurrency behaviour."""

from __future__ import annotations

from functools import partial
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from pitrio._exceptions import UsageError
from pitrio.actors import (
    SKIPPED_MESSAGE,
    Agent,
    AgentEvent,
    open_agent,
)
from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    get_model,
)
from pitrio.tools import AgentToolResult, FunctionTool

from helpers import (
    Recorder,
    assistant,
    call,
    echo_tool,
    make_faux,
    tool_then_text,
    user,
)
from pi_data import canonical, load_json, load_jsonl, normalise_now
from transcripts import assert_valid_transcript

# --------------------------------------------------------------------------- ports of agent.test.ts


def test_should_create_an_agent_instance_with_default_state() -> None:
    """A new agent has pi's default state."""
    agent = Agent()
    assert agent.system_prompt == ""
    assert agent.thinking_level == "off"
    assert agent.tools == ()
    assert agent.messages == ()
    assert agent.is_streaming is False
    assert agent.stream_message is None
    assert agent.pending_tool_calls == frozenset()
    assert agent.error is None


def test_should_create_an_agent_instance_with_custom_initial_state() -> None:
    """Constructor arguments set the initial state."""
    model = get_model("openai", "gpt-4o-mini")
    agent = Agent(system_prompt="You are a helpful assistant.", model=model, thinking_level="low")
    assert agent.system_prompt == "You are a helpful assistant."
    assert agent.model is model
    assert agent.thinking_level == "low"


async def test_should_subscribe_to_events() -> None:
    """Subscribing emits nothing; mutators emit nothing; unsubscribe works."""
    agent = Agent()
    recorder = Recorder()
    unsubscribe = agent.subscribe(recorder)
    await agent.set_system_prompt("Test prompt")
    assert recorder.events == []
    assert agent.system_prompt == "Test prompt"
    unsubscribe()
    unsubscribe()  # idempotent


async def test_should_update_state_with_mutators() -> None:
    """The mutators replace state; replace_messages copies its input."""
    agent = Agent()
    model = get_model("google", "gemini-2.5-flash")
    await agent.set_model(model)
    await agent.set_thinking_level("high")
    tool = echo_tool()
    await agent.set_tools([tool])
    messages = [user("Hello")]
    await agent.replace_messages(messages)
    messages.append(user("not in the agent"))
    await agent.append_message(assistant("Hi"))
    assert (agent.model, agent.thinking_level, agent.tools) == (model, "high", (tool,))
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    await agent.clear_messages()
    assert agent.messages == ()


def test_should_support_steering_message_queue() -> None:
    """A steered message waits in the queue, not in the transcript."""
    agent = Agent()
    agent.steer(user("Steering message"))
    assert agent.messages == ()
    assert agent.has_queued_messages()


def test_should_support_follow_up_message_queue() -> None:
    """A follow-up message waits in the queue, not in the transcript."""
    agent = Agent()
    agent.follow_up(user("Follow-up message"))
    assert agent.messages == ()
    assert agent.has_queued_messages()


async def test_should_handle_abort_controller() -> None:
    """abort() with nothing running does not raise, emits nothing, leaves the state as it was,
    and does not abort the next run."""
    faux, registry = make_faux()
    faux.set_responses([assistant("after the abort")])
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        recorder = Recorder()
        agent.subscribe(recorder)
        agent.abort()
        assert recorder.events == []
        assert (agent.is_streaming, agent.error, agent.messages) == (False, None, ())
        await agent.prompt("hello")
        assert [m.role for m in agent.messages] == ["user", "assistant"]
        assert agent.messages[-1].stop_reason == "stop"


async def _blocking_agent(**options: Any) -> tuple[Any, Any, trio.Event]:
    faux, registry = make_faux()
    release = trio.Event()

    async def slow(*_: Any) -> AssistantMessage:
        await release.wait()
        return assistant("late")

    faux.set_responses([slow])
    return faux, registry, release


async def test_should_throw_when_prompt_called_while_streaming() -> None:
    """A second prompt during a run raises pi's error text."""
    faux, registry, release = await _blocking_agent()
    async with (
        open_agent(model=faux.get_model(), registry=registry) as agent,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(agent.prompt, "First message")
        await trio.testing.wait_all_tasks_blocked()
        assert agent.is_streaming
        with pytest.raises(
            UsageError, match=r"Agent is already processing a prompt\. Use steer\(\)"
        ):
            await agent.prompt("Second message")
        release.set()


async def test_should_throw_when_continue_called_while_streaming() -> None:
    """continue_() during a run raises pi's error text."""
    faux, registry, release = await _blocking_agent()
    async with (
        open_agent(model=faux.get_model(), registry=registry) as agent,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(agent.prompt, "First message")
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(UsageError, match="Wait for completion before continuing"):
            await agent.continue_()
        release.set()


# --------------------------------------------------------------------------- wire compatibility


def _echo_text_tool() -> FunctionTool:
    async def execute(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        return AgentToolResult(
            content=[TextContent(text=params["text"])],
            details={"echoed": params["text"], "toolCallId": call_id},
        )

    spec = load_json("agent_events_tool_call.input.json")["tools"][0]
    return FunctionTool(
        name=spec["name"],
        label=spec["label"],
        description=spec["description"],
        parameters=spec["parameters"],
        fn=execute,
    )


def _comparable(event: dict[str, Any]) -> dict[str, Any]:
    # pi serialised message_update at receive time, when its shared partial had already moved
    # on (tests/data/pi/README.md); compare what the update says, not that stale partial.
    if event["type"] == "message_update":
        inner = dict(event["assistantMessageEvent"])
        inner.pop("partial", None)
        return {"type": "message_update", "assistantMessageEvent": inner}
    return event


def _completion_order_free(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sort each run of consecutive tool_execution_end events by call id: in parallel mode they
    come in completion order, and tools that finish at once finish in scheduler order."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for event in [*events, {"type": "sentinel"}]:
        if event["type"] == "tool_execution_end":
            run.append(event)
            continue
        out.extend(sorted(run, key=lambda e: e["toolCallId"]))
        run = []
        out.append(event)
    return out[:-1]


@pytest.mark.parametrize(
    ("script", "options"),
    [
        ("text", {}),
        ("tool_call", {}),
        ("error", {}),
        ("steering", {"tool_execution": "parallel", "steering_skips_tools": False}),
        ("steering_sequential", {"tool_execution": "sequential", "steering_skips_tools": False}),
    ],
)
async def test_agent_events_equal_pis(script: str, options: dict[str, Any]) -> None:
    """The agent's events, as pi JSON, equal those pi 0.73.1 emitted for the same script."""
    spec = load_json(f"agent_events_{script}.input.json")
    pi_events = load_jsonl(f"agent_events_{script}.jsonl")
    faux, registry = make_faux()
    faux.set_responses([from_wire(AssistantMessage, r) for r in spec["responses"]])
    tools = [_echo_text_tool()] if spec["tools"] else []
    ours: list[dict[str, Any]] = []
    steer = next((a for a in spec["actions"] if a["call"] == "agent.steer"), None)
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        system_prompt=spec["systemPrompt"],
        tools=tools,
        **options,
    ) as agent:

        def record(event: AgentEvent) -> None:
            ours.append(to_wire(event))
            if (
                steer
                and event.type == "tool_execution_start"
                and len(ours)
                and event.tool_call_id == "call_s1"
            ):
                agent.steer(from_wire(UserMessage, steer["message"]))

        agent.subscribe(record)
        await agent.prompt(from_wire(UserMessage, spec["prompt"]))
    ours = _completion_order_free(normalise_now(pi_events, ours))
    pi_events = _completion_order_free(pi_events)
    assert [e["type"] for e in ours] == [e["type"] for e in pi_events]
    for index, (mine, theirs) in enumerate(zip(ours, pi_events, strict=True)):
        assert canonical(_comparable(mine)) == canonical(_comparable(theirs)), f"event {index}"


# --------------------------------------------------------------------------- abort


async def _assert_quiescent(agent: Agent) -> None:
    await trio.testing.wait_all_tasks_blocked()
    assert agent._nursery is not None
    assert agent._nursery.child_tasks == set()
    assert agent.is_streaming is False
    assert agent.pending_tool_calls == frozenset()


async def test_abort_during_streaming_ends_aborted(autojump_clock: trio.testing.MockClock) -> None:
    """Aborting mid-stream ends the message "aborted", still emits turn_end and agent_end."""
    faux, registry = make_faux(tokens_per_second=10)
    faux.set_responses([assistant("word " * 200)])
    recorder = Recorder()
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(recorder)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "talk")
            await trio.sleep(2)
            assert agent.is_streaming
            agent.abort()
        await _assert_quiescent(agent)
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.stop_reason == "aborted"
    assert 0 < len(last.text()) < len("word " * 200)
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert_valid_transcript(agent.messages)


async def test_a_runs_prompt_is_sent_in_a_later_scheduler_step_than_its_start() -> None:
    """A run opens (agent_start, turn_start) in one scheduler step and sends its prompt's
    messages in a later one: when many sessions start a prompt at once, the steps that record
    their prompts are a pass of their own instead of lengthening the pass that opened them."""
    faux, registry = make_faux()
    faux.set_responses([assistant("hi")])
    marks: list[str] = []

    class StepEnds(trio.abc.Instrument):
        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            if marks and marks[-1] != "|":
                marks.append("|")

    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(lambda event: marks.append(event.type))
        instrument = StepEnds()
        trio.lowlevel.add_instrument(instrument)
        try:
            await agent.prompt("go")
        finally:
            trio.lowlevel.remove_instrument(instrument)
    start = marks.index("turn_start")
    assert "|" in marks[start : marks.index("message_start")]
    assert marks[: start + 1] == ["agent_start", "turn_start"]


async def test_abort_during_a_tool_cancels_it(autojump_clock: trio.testing.MockClock) -> None:
    """Aborting while a tool runs cancels it; the transcript stays valid and the run ends."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a"), call("t2", "b")])] * 2)
    cancelled: list[str] = []

    async def gate(value: str) -> None:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(value)

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool(gate=gate)]
    ) as agent:
        agent.subscribe(recorder)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            assert agent.pending_tool_calls == {"t1"}
            agent.abort()
        await _assert_quiescent(agent)
    assert cancelled == ["a"]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", True), ("t2", True)]
    assert agent.messages[-1].stop_reason == "aborted"
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert_valid_transcript(agent.messages)


async def test_abort_between_turns_stops_before_the_next_call() -> None:
    """An abort after a turn ends makes the next LLM call end "aborted" at once."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a")])] * 2)
    async with open_agent(model=faux.get_model(), registry=registry, tools=[echo_tool()]) as agent:

        def on_event(event: AgentEvent) -> None:
            if event.type == "turn_end":
                agent.abort()

        agent.subscribe(on_event)
        await agent.prompt("go")
        await _assert_quiescent(agent)
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert agent.messages[-1].stop_reason == "aborted"
    assert faux.state.call_count == 2
    assert_valid_transcript(agent.messages)


async def test_cancelling_the_prompt_caller_aborts_the_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A caller that stops waiting aborts the run, which still finishes cleanly."""
    # Virtual time: the caller's timeout fires once the run is blocked in the provider, not
    # after 10 real ms that a busy machine may spend before the run has even started.
    faux, registry, _release = await _blocking_agent()
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        with trio.move_on_after(0.01):
            await agent.prompt("hello")
        await agent.wait_for_idle()
        await _assert_quiescent(agent)
        assert agent.messages[-1].stop_reason == "aborted"


# --------------------------------------------------------------------------- steering, follow-up


async def test_steering_during_a_three_tool_batch_skips_exactly_the_unstarted_calls() -> None:
    """A steer while tool 1 runs: tool 1 finishes, tools 2 and 3 are skipped, steer opens turn 2."""
    faux, registry = make_faux()
    calls = [call("t1", "one"), call("t2", "two"), call("t3", "three")]
    requests: list[Context] = []

    def respond(context: Context, *_: Any) -> AssistantMessage:
        requests.append(context)
        if len(requests) == 1:
            return assistant(calls, stop_reason="toolUse")
        return assistant("ok")

    faux.set_responses([respond, respond])
    executed: list[str] = []
    holder: dict[str, Agent] = {}

    async def gate(value: str) -> None:
        holder["agent"].steer(user("change of plan"))
        await trio.lowlevel.checkpoint()

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool(executed, gate=gate)]
    ) as agent:
        holder["agent"] = agent
        agent.subscribe(recorder)
        await agent.prompt("three tools please")
    assert executed == ["one"]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [
        ("t1", False),
        ("t2", True),
        ("t3", True),
    ]
    assert [r.content[0].text for r in results[1:]] == [SKIPPED_MESSAGE] * 2
    assert [m.role for m in agent.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
    ]
    assert requests[1].messages[-1] == agent.messages[5]
    turn_ends = recorder.of("turn_end")
    assert [r.tool_call_id for r in turn_ends[0].tool_results] == ["t1", "t2", "t3"]


def _user_texts(context: Context) -> list[str]:
    texts = []
    for m in context.messages:
        if isinstance(m, UserMessage):
            content = m.content
            texts.append(content if isinstance(content, str) else content[0].text)
    return texts


@pytest.mark.parametrize(
    ("mode", "requests"),
    [
        ("one-at-a-time", [["start", "a"], ["start", "a", "b"]]),
        ("all", [["start", "a", "b"]]),
    ],
)
async def test_steering_modes_drain_one_or_all(mode: str, requests: list[list[str]]) -> None:
    """one-at-a-time injects one steering message per turn; all injects every queued one."""
    faux, registry = make_faux()
    seen: list[list[str]] = []

    def respond(context: Context, *_: Any) -> AssistantMessage:
        seen.append(_user_texts(context))
        return assistant("ok")

    faux.set_responses([respond] * 3)
    async with open_agent(model=faux.get_model(), registry=registry, steering_mode=mode) as agent:
        agent.steer(user("a"))
        agent.steer(user("b"))
        await agent.prompt("start")
    assert seen == requests


async def test_the_provider_sees_the_tools_set_before_each_run() -> None:
    """The tools the provider gets (with their label) are built by the run: a set_tools
    between two prompts reaches the next request, and an agent without tools sends none."""
    faux, registry = make_faux()
    seen: list[Any] = []

    def respond(context: Context, *_: Any) -> AssistantMessage:
        seen.append([(t.name, (t.extra or {}).get("label")) for t in context.tools or ()])
        return assistant("ok")

    faux.set_responses([respond] * 3)
    model = faux.get_model()
    async with open_agent(model=model, registry=registry, tools=[echo_tool()]) as agent:
        await agent.prompt("one")
        await agent.set_tools([echo_tool(name="other"), echo_tool()])
        await agent.prompt("two")
        await agent.set_tools([])
        await agent.prompt("three")
    assert seen == [[("echo", "Echo")], [("other", "Other"), ("echo", "Echo")], []]


async def test_follow_up_runs_only_when_the_agent_would_stop() -> None:
    """A follow-up queued mid-run is injected after the final answer, in a new turn."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "x")], "first answer")] * 2 + [assistant("bye")])
    recorder = Recorder()
    async with open_agent(model=faux.get_model(), registry=registry, tools=[echo_tool()]) as agent:

        def on_event(event: AgentEvent) -> None:
            if event.type == "tool_execution_start":
                agent.follow_up(user("one more thing"))

        agent.subscribe(on_event)
        agent.subscribe(recorder)
        await agent.prompt("go")
    roles = [m.role for m in agent.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert agent.messages[4].content == "one more thing"
    assert recorder.types.count("agent_end") == 1


async def test_follow_up_after_the_end_is_run_by_continue() -> None:
    """A follow-up queued after a run ends starts the next run through continue_()."""
    faux, registry = make_faux()
    faux.set_responses([assistant("first"), assistant("second")])
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        await agent.prompt("hi")
        agent.follow_up(user("and then?"))
        await agent.continue_()
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[-1].text() == "second"


async def test_continue_guards() -> None:
    """continue_() refuses an empty transcript and a final assistant message with nothing queued."""
    faux, registry = make_faux()
    faux.set_responses([assistant("ok"), assistant("again")])
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        with pytest.raises(UsageError, match="No messages to continue from"):
            await agent.continue_()
        await agent.prompt("hi")
        with pytest.raises(UsageError, match="Cannot continue from message role: assistant"):
            await agent.continue_()
        await agent.append_message(user("retry from here"))
        await agent.continue_()
    assert agent.messages[-1].text() == "again"


async def test_prompt_without_a_model_raises() -> None:
    """Prompting with no model configured raises pi's error."""
    async with open_agent() as agent:
        with pytest.raises(UsageError, match="No model configured"):
            await agent.prompt("hi")


async def test_prompt_outside_a_running_agent_raises() -> None:
    """An agent that is not served by a nursery says how to start it."""
    faux, _ = make_faux()
    with pytest.raises(UsageError, match="open_agent"):
        await Agent(model=faux.get_model()).prompt("hi")


# --------------------------------------------------------------------------- robustness


async def test_a_raising_subscriber_does_not_kill_the_agent() -> None:
    """A subscriber that raises is reported; other subscribers and the run carry on."""
    faux, registry = make_faux()
    faux.set_responses([assistant("fine")])
    recorder = Recorder()

    def broken(event: AgentEvent) -> None:
        raise RuntimeError("subscriber bug")

    async def broken_async(event: AgentEvent) -> None:
        await trio.lowlevel.checkpoint()
        raise ValueError("async subscriber bug")

    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(broken)
        agent.subscribe(broken_async)
        agent.subscribe(recorder)
        await agent.prompt("hi")
    assert recorder.types[-1] == "agent_end"
    assert agent.messages[-1].text() == "fine"


async def test_a_failing_convert_to_llm_ends_the_run_with_an_error_message() -> None:
    """An exception inside the loop becomes a synthetic error message and agent_end."""
    faux, registry = make_faux()

    def convert(messages: Any) -> Any:
        raise RuntimeError("converter exploded")

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(), registry=registry, convert_to_llm=convert
    ) as agent:
        agent.subscribe(recorder)
        await agent.prompt("hi")
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", "converter exploded")
    assert agent.error == "converter exploded"
    assert recorder.types[-1] == "agent_end"


async def test_tool_errors_become_error_results() -> None:
    """Unknown tools, bad arguments and raising tools all come back as error results."""
    faux, registry = make_faux()
    calls = [
        ToolCall(id="t1", name="missing", arguments={}),
        ToolCall(id="t2", name="echo", arguments={"other": 1}),
        ToolCall(id="t3", name="boom", arguments={"value": "x"}),
    ]
    faux.set_responses([tool_then_text(calls)] * 2)

    async def explode(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        raise OSError("disk on fire")

    boom = FunctionTool(
        name="boom", label="Boom", description="", parameters={"type": "object"}, fn=explode
    )
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool(), boom]
    ) as agent:
        await agent.prompt("go")
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    texts = [r.content[0].text for r in results]
    assert all(r.is_error for r in results)
    assert texts[0] == "Tool missing not found"
    assert texts[1].startswith('Validation failed for tool "echo"')
    assert texts[2] == "disk on fire"


async def test_tool_updates_become_tool_execution_update_events() -> None:
    """on_update calls arrive as tool_execution_update events between start and end."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "x")])] * 2)

    async def progress(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        for step in range(3):
            on_update(AgentToolResult(content=[TextContent(text=f"step {step}")]))
            await trio.lowlevel.checkpoint()
        return AgentToolResult(content=[TextContent(text="done")])

    tool = FunctionTool(
        name="echo", label="Echo", description="", parameters={"type": "object"}, fn=progress
    )
    recorder = Recorder()
    async with open_agent(model=faux.get_model(), registry=registry, tools=[tool]) as agent:
        agent.subscribe(recorder)
        await agent.prompt("go")
    kinds = [t for t in recorder.types if t.startswith("tool_execution")]
    assert kinds == ["tool_execution_start"] + ["tool_execution_update"] * 3 + [
        "tool_execution_end"
    ]
    assert [e.partial_result.content[0].text for e in recorder.of("tool_execution_update")] == [
        "step 0",
        "step 1",
        "step 2",
    ]


async def test_events_iterator_sees_every_event_in_order() -> None:
    """agent.events() yields the same ordered events a callback sees."""
    faux, registry = make_faux()
    faux.set_responses([assistant("streamed")])
    recorder = Recorder()
    seen: list[str] = []
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(recorder)
        async with agent.events() as events, trio.open_nursery() as nursery:

            async def read() -> None:
                async for event in events:
                    seen.append(event.type)
                    if event.type == "agent_end":
                        return

            nursery.start_soon(read)
            await agent.prompt("hi")
    assert seen == recorder.types


# --------------------------------------------------------------------------- scale


async def test_a_thousand_agents_run_concurrently() -> None:
    """1,000 agents each run a tool-calling conversation at once in one process."""
    faux, registry = make_faux()
    model: Model | None = faux.get_model()
    n = 1000
    faux.set_responses([tool_then_text([call("t1", "hi")], "done")] * (2 * n))
    finished: list[int] = []

    async def one(index: int) -> None:
        async with open_agent(model=model, registry=registry, tools=[echo_tool()]) as agent:
            await agent.prompt(f"agent {index}")
            assert [m.role for m in agent.messages] == [
                "user",
                "assistant",
                "toolResult",
                "assistant",
            ]
            finished.append(index)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for index in range(n):
                nursery.start_soon(one, index)
    assert sorted(finished) == list(range(n))
    assert faux.pending_count == 0


def test_faux_assistant_message_helper_is_available() -> None:
    """The helpers module builds messages through the public faux helper."""
    assert faux_assistant_message("x").text() == "x"


async def test_abort_before_a_tool_starts_keeps_it_from_running() -> None:
    """An abort that lands between tool_execution_start and execute stops that call too."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("t1", "a"), call("t2", "b")])] * 2)
    executed: list[str] = []
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool(executed)]
    ) as agent:

        def on_event(event: AgentEvent) -> None:
            if event.type == "tool_execution_start":
                agent.abort()

        agent.subscribe(on_event)
        await agent.prompt("go")
        await _assert_quiescent(agent)
    assert executed == []
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", True), ("t2", True)]
    assert agent.messages[-1].stop_reason == "aborted"
    assert_valid_transcript(agent.messages)


async def test_record_event_sees_every_event_but_message_update_before_subscribers() -> None:
    """record_event observes each event except the per-token message_update, and always before
    the subscribers see it (message_end: the transcript already holds the message)."""
    faux, registry = make_faux()
    faux.set_responses([faux_assistant_message("hello there")])
    log: list[str] = []

    def record(event: AgentEvent) -> None:
        log.append(f"record {event.type}")

    async with open_agent(model=faux.get_model(), registry=registry, record_event=record) as agent:
        agent.subscribe(lambda event: log.append(f"deliver {event.type}") and None)
        await agent.prompt("hi")
    delivered = [entry.split()[1] for entry in log if entry.startswith("deliver")]
    recorded = [entry.split()[1] for entry in log if entry.startswith("record")]
    assert "message_update" in delivered
    assert recorded == [kind for kind in delivered if kind != "message_update"]
    for index, entry in enumerate(log):
        if entry.startswith("deliver") and not entry.endswith("message_update"):
            assert log[index - 1] == f"record {entry.split()[1]}"


# --------------------------------------------------------------------------- state changes in order


def _model_b(model: Model) -> Model:
    return attrs.evolve(model, id="faux-b")


# (change, what the provider saw before it, after it); each change is sent while a prompt waits
# in the agent's inbox.
STATE_CHANGES: list[tuple[str, Any, Any, Any]] = [
    ("set_model", _model_b, "faux-1", "faux-b"),
    ("set_thinking_level", lambda _: "high", None, "high"),
    ("set_system_prompt", lambda _: "new prompt", "old prompt", "new prompt"),
    ("set_tools", lambda _: [], ["echo"], []),
]


def _seen(change: str, context: Context, options: Any, model: Model) -> Any:
    if change == "set_model":
        return model.id
    if change == "set_thinking_level":
        return options.reasoning
    if change == "set_system_prompt":
        return context.system_prompt
    return [tool.name for tool in context.tools or ()]


@pytest.mark.parametrize(("change", "value", "before", "after"), STATE_CHANGES)
async def test_a_state_change_sent_while_a_prompt_is_queued_applies_after_it(
    change: str, value: Any, before: Any, after: Any
) -> None:
    """A state change is a command: sent while a prompt waits in the agent's inbox, it is
    applied after that prompt's run started (the run keeps what it started with), and the
    next run gets it."""
    faux, registry = make_faux()
    model = attrs.evolve(faux.get_model(), reasoning=True)
    seen: list[Any] = []

    def respond(text: str) -> Any:
        def factory(context: Context, options: Any, state: Any, model: Model) -> AssistantMessage:
            seen.append(_seen(change, context, options, model))
            return assistant(text)

        return factory

    async def gate(value: str) -> None:
        await trio.sleep_forever()  # until the interrupt cancels it

    release = trio.Event()

    async def stall_after_abort(event: AgentEvent) -> None:
        # The aborted run's closing events wait here: its task (and so the agent's task, which
        # waits for that run to end before it starts the interrupting prompt) stays busy, and
        # the clock never runs, so the epilogue's bound cannot cut this short.
        if event.type == "agent_end" and not release.is_set():
            await release.wait()

    faux.set_responses(
        [
            assistant([call("c1", "x")], stop_reason="toolUse"),
            respond("one"),
            respond("two"),
        ]
    )
    tools = [echo_tool(gate=gate)]
    async with open_agent(
        model=model, registry=registry, tools=tools, system_prompt="old prompt"
    ) as agent:
        agent.subscribe(stall_after_abort)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "zero")
            await trio.testing.wait_all_tasks_blocked()
            assert agent.pending_tool_calls  # run zero waits in its tool
            nursery.start_soon(partial(agent.prompt, "one", busy_policy="interrupt"))
            await trio.testing.wait_all_tasks_blocked()
            # The agent's task now waits for run zero to end; the change queues behind "one".
            nursery.start_soon(getattr(agent, change), value(model))
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        await agent.prompt("two")
    assert seen == [before, after]


async def test_closing_an_agent_mid_stream_delivers_nothing_more() -> None:
    """An agent closed while its run streams (its owner shutting down) drops the deltas still
    on their way instead of publishing on its closed bus (ClosedResourceError out of the run)."""
    faux, registry = make_faux()
    faux.set_responses([assistant("word " * 400)])
    updates: list[str] = []
    async with open_agent(model=faux.get_model(), registry=registry) as agent:

        def close_on_first_delta(event: Any) -> None:
            updates.append(event.type)
            if event.type == "message_update" and updates.count("message_update") == 1:
                agent.close()

        agent.subscribe(close_on_first_delta)
        with trio.move_on_after(5):  # a guard only: the run ends once the agent is closed
            await agent.prompt("talk")
    assert updates.count("message_update") == 1
