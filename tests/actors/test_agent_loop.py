"""The turn loop: ports of pi-agent-core's tests (packages/agent/test/agent-loop.test.ts).

Each test named ``test_should_...`` mirrors the pi ``it("should ...")`` of the same words; the
scripted model is the faux provider over a private registry.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from pitrio.actors import (
    AfterToolCallResult,
    ExtensionMessage,
    OpaqueMessage,
    ShouldStopAfterTurnContext,
    open_agent,
)
from pitrio.providers import Context, Message, ToolCall, ToolResultMessage, UserMessage
from pitrio.tools import FunctionTool

from helpers import (
    Recorder,
    assistant,
    call,
    echo_tool,
    make_faux,
    tool_then_text,
    user,
)


async def test_should_emit_events_with_agent_message_types() -> None:
    """A plain answer emits pi's exact event sequence and adds user + assistant messages."""
    faux, registry = make_faux()
    faux.set_responses([assistant("Hi there!")])
    recorder = Recorder()
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(recorder)
        await agent.prompt(user("Hello"))
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    updates = ["message_update"] * (2 + len("Hi there!") // 4 + 1)
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        *updates,
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert [m.role for m in recorder.events[-1].messages] == ["user", "assistant"]


async def test_should_handle_custom_message_types_via_convert_to_llm() -> None:
    """Custom transcript messages reach convert_to_llm, which decides what the model sees."""
    faux, registry = make_faux()
    faux.set_responses([assistant("Response")])
    notification = OpaqueMessage({"role": "notification", "text": "hi", "timestamp": 1})
    seen: list[list[str]] = []

    def convert(messages: Any) -> list[Message]:
        seen.append([m.role for m in messages])
        return [m for m in messages if not isinstance(m, ExtensionMessage)]

    async with open_agent(
        model=faux.get_model(), registry=registry, messages=[notification], convert_to_llm=convert
    ) as agent:
        await agent.prompt(user("Hello"))
    assert seen == [["notification", "user"]]


async def test_should_apply_transform_context_before_convert_to_llm() -> None:
    """transform_context prunes the transcript before convert_to_llm sees it."""
    faux, registry = make_faux()
    requests: list[Context] = []

    def respond(context: Context, *_: Any) -> Any:
        requests.append(context)
        return assistant("Response")

    faux.set_responses([respond])
    history = [user("old 1"), assistant("reply 1"), user("old 2"), assistant("reply 2")]
    converted: list[int] = []

    async def transform(messages: Any) -> Any:
        await trio.lowlevel.checkpoint()
        return list(messages)[-2:]

    def convert(messages: Any) -> Any:
        converted.append(len(messages))
        return list(messages)

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        messages=history,
        transform_context=transform,
        convert_to_llm=convert,
    ) as agent:
        await agent.prompt(user("new message"))
    assert converted == [2]
    assert [m.content for m in requests[0].messages if isinstance(m, UserMessage)] == [
        "new message"
    ]


async def test_should_handle_tool_calls_and_results() -> None:
    """A tool call runs the tool, emits execution events and feeds the result back."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "hello")])] * 2)
    executed: list[str] = []
    observed: list[Any] = []

    def after(context: Any) -> AfterToolCallResult:
        observed.append(context.result.details)
        return AfterToolCallResult(details={"patched": True})

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(executed)],
        after_tool_call=after,
    ) as agent:
        agent.subscribe(recorder)
        await agent.prompt(user("echo something"))
    assert executed == ["hello"]
    (end,) = recorder.of("tool_execution_end")
    assert end.is_error is False
    assert observed == [{"value": "hello"}]
    result = next(m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert result.details == {"patched": True}
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_should_execute_mutated_before_tool_call_args_without_revalidation() -> None:
    """Arguments changed by before_tool_call reach execute as they are, unvalidated."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "hello")])] * 2)
    executed: list[Any] = []

    def before(context: Any) -> None:
        context.args["value"] = 123

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(executed)],
        before_tool_call=before,
    ) as agent:
        await agent.prompt(user("echo something"))
    assert executed == [123]


async def test_should_emit_tool_execution_end_in_completion_order_but_persist_tool_results_in_source_order() -> (
    None
):
    """In parallel mode ends arrive as tools finish, results in the order the model asked."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "first"), call("tool-2", "second")])] * 2)
    release_first = trio.Event()
    order: list[str] = []

    async def gate(value: str) -> None:
        if value == "first":
            await release_first.wait()
        else:
            order.append("second ran before first finished")
            release_first.set()

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(gate=gate)],
        tool_execution="parallel",
    ) as agent:
        agent.subscribe(recorder)
        await agent.prompt(user("echo both"))
    assert order == ["second ran before first finished"]
    assert [e.tool_call_id for e in recorder.of("tool_execution_end")] == ["tool-2", "tool-1"]
    results = [
        e.message.tool_call_id for e in recorder.of("message_end") if e.message.role == "toolResult"
    ]
    assert results == ["tool-1", "tool-2"]
    (turn_with_tools, _) = recorder.of("turn_end")
    assert [r.tool_call_id for r in turn_with_tools.tool_results] == ["tool-1", "tool-2"]


async def test_should_force_sequential_execution_when_a_tool_has_execution_mode_sequential(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A tool declaring execution_mode="sequential" makes a parallel batch run one at a time."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "first"), call("tool-2", "second")])] * 2)
    running = 0
    overlap = False

    async def gate(value: str) -> None:
        nonlocal running, overlap
        running += 1
        overlap = overlap or running > 1
        await trio.sleep(0.01)
        running -= 1

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(gate=gate, execution_mode="sequential")],
        tool_execution="parallel",
    ) as agent:
        await agent.prompt(user("run both"))
    assert overlap is False


async def test_should_stop_after_the_current_turn_when_should_stop_after_turn_returns_true() -> (
    None
):
    """should_stop_after_turn ends the run after the turn, leaving follow-ups queued."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "hello")], "should not run")] * 2)
    seen: list[ShouldStopAfterTurnContext] = []

    def stop(context: ShouldStopAfterTurnContext) -> bool:
        seen.append(context)
        return True

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool()],
        should_stop_after_turn=stop,
    ) as agent:
        agent.subscribe(recorder)
        agent.follow_up(user("follow up should stay queued"))
        await agent.prompt(user("echo something"))
    assert faux.state.call_count == 1
    assert [r.tool_call_id for r in seen[0].tool_results] == ["tool-1"]
    assert [m.role for m in seen[0].messages] == ["user", "assistant", "toolResult"]
    assert agent.has_queued_messages()
    events = [t for t in recorder.types if t != "message_update"]
    assert events == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_should_stop_after_a_tool_batch_when_every_tool_result_sets_terminate_true() -> None:
    """When every result says terminate, the loop ends without another LLM call."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "hello")])] * 2)
    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[echo_tool(terminate=True)]
    ) as agent:
        agent.subscribe(recorder)
        await agent.prompt(user("echo something"))
    assert faux.state.call_count == 1
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert len(recorder.of("turn_end")) == 1


async def test_should_continue_after_parallel_tool_calls_when_not_all_tool_results_terminate() -> (
    None
):
    """One non-terminating result keeps the loop going."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "first"), call("tool-2", "second")])] * 2)

    terminate_first = echo_tool(terminate=True)
    plain = echo_tool(name="plain")
    calls = [call("tool-1", "first"), call("tool-2", "second", name="plain")]
    faux.set_responses([tool_then_text(calls)] * 2)
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[terminate_first, plain],
        tool_execution="parallel",
    ) as agent:
        await agent.prompt(user("echo both"))
    assert faux.state.call_count == 2
    assert [m.role for m in agent.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


async def test_should_allow_after_tool_call_to_mark_a_tool_batch_as_terminating() -> None:
    """after_tool_call can set terminate, ending the run after the batch."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "hello")])] * 2)
    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool()],
        after_tool_call=lambda _: AfterToolCallResult(terminate=True),
    ) as agent:
        await agent.prompt(user("echo something"))
    assert faux.state.call_count == 1


async def test_should_inject_queued_messages_after_all_tool_calls_complete() -> None:
    """With steering_skips_tools=False (pi 0.73.1) a steer waits for the whole batch."""
    faux, registry = make_faux()
    requests: list[Context] = []

    def respond(context: Context, *rest: Any) -> Any:
        requests.append(context)
        if len(requests) == 1:
            return assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse")
        return assistant("done")

    faux.set_responses([respond, respond])
    executed: list[str] = []
    holder: dict[str, Any] = {}

    async def gate(value: str) -> None:
        if value == "first":
            holder["agent"].steer(user("interrupt"))

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(executed, gate=gate)],
        steering_skips_tools=False,
    ) as agent:
        holder["agent"] = agent
        recorder = Recorder()
        agent.subscribe(recorder)
        await agent.prompt(user("start"))
    assert executed == ["first", "second"]
    sequence = [
        e.message.tool_call_id if e.message.role == "toolResult" else e.message.content
        for e in recorder.of("message_start")
        if e.message.role in ("toolResult", "user")
    ]
    assert sequence.index("tool-1") < sequence.index("interrupt")
    assert sequence.index("tool-2") < sequence.index("interrupt")
    assert any(
        isinstance(m, UserMessage) and m.content == "interrupt" for m in requests[1].messages
    )


async def test_should_prepare_tool_arguments_for_validation() -> None:
    """A tool's prepare hook reshapes legacy arguments before they are validated."""
    faux, registry = make_faux()
    legacy = ToolCall(id="tool-1", name="edit", arguments={"oldText": "before", "newText": "after"})
    faux.set_responses([tool_then_text([legacy])] * 2)
    executed: list[Any] = []

    def prepare(args: Any) -> Any:
        if isinstance(args, dict) and "oldText" in args:
            return {
                "edits": [
                    *args.get("edits", []),
                    {"oldText": args["oldText"], "newText": args["newText"]},
                ]
            }
        return args

    async def edit(call_id: str, params: dict[str, Any], on_update: Any) -> str:
        executed.append(params["edits"])
        return f"edited {len(params['edits'])}"

    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                },
            }
        },
        "required": ["edits"],
    }
    tool = FunctionTool(
        name="edit",
        label="Edit",
        description="Edit tool",
        parameters=schema,
        fn=edit,
        prepare=prepare,
    )
    async with open_agent(model=faux.get_model(), registry=registry, tools=[tool]) as agent:
        await agent.prompt(user("edit something"))
    assert executed == [[{"oldText": "before", "newText": "after"}]]


async def test_should_force_sequential_execution_when_one_of_multiple_tools_has_execution_mode_sequential(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One sequential tool in a parallel batch makes the whole batch run in order."""
    faux, registry = make_faux()
    faux.set_responses(
        [tool_then_text([call("tool-1", "a", name="slow"), call("tool-2", "b", name="fast")])] * 2
    )
    order: list[str] = []

    async def slow_gate(value: str) -> None:
        order.append(f"slow:{value}")
        await trio.sleep(0.01)

    async def fast_gate(value: str) -> None:
        order.append(f"fast:{value}")

    slow = echo_tool(name="slow", gate=slow_gate, execution_mode="sequential")
    fast = echo_tool(name="fast", gate=fast_gate)
    async with open_agent(
        model=faux.get_model(), registry=registry, tools=[slow, fast], tool_execution="parallel"
    ) as agent:
        await agent.prompt(user("run both"))
    assert order == ["slow:a", "fast:b"]


async def test_should_allow_parallel_execution_when_all_tools_have_execution_mode_parallel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Tools that all allow parallel execution overlap in a parallel batch."""
    faux, registry = make_faux()
    faux.set_responses([tool_then_text([call("tool-1", "first"), call("tool-2", "second")])] * 2)
    first_done = trio.Event()
    overlapped: list[bool] = []

    async def gate(value: str) -> None:
        if value == "first":
            await trio.sleep(0.01)
            first_done.set()
        else:
            overlapped.append(not first_done.is_set())

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        tools=[echo_tool(gate=gate, execution_mode="parallel")],
        tool_execution="parallel",
    ) as agent:
        await agent.prompt(user("echo both"))
    assert overlapped == [True]
