"""Every hook of seeds 003/004 through a real session on the faux provider: when it fires, how
two extensions chain, and what each return shape does."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from ext_helpers import Log, make_faux, make_runner, open_session, reply

from pitrio.extensions import ExtensionAPI, InputEventResult, ToolCallEventResult
from pitrio.providers import (
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
)
from pitrio.sessions import CustomMessage, SessionManager
from pitrio.tools import AgentTool, AgentToolResult, FunctionTool, text_result

QUIET_WITHIN = 0.1


def echo_tool(log: Log | None = None) -> AgentTool:
    async def run(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        if log is not None:
            log("execute", params)
        on_update(text_result("working"))
        return text_result(f"echo {params.get('text')}")

    return FunctionTool(
        name="echo",
        label="Echo",
        description="echo text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        fn=run,
    )


def tool_then_text(text: str = "hi") -> list[Any]:
    return [
        lambda *_: faux_assistant_message(
            [faux_tool_call("echo", {"text": text})], stop_reason="toolUse"
        ),
        reply("done"),
    ]


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


# --------------------------------------------------------------------------- timing


async def test_events_fire_in_seed_003_order() -> None:
    """One prompt with one tool call fires the hooks in seed 003's order."""
    log = Log()
    informational = [
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    ]

    def register(pi: ExtensionAPI) -> None:
        for name in [*informational, "input", "before_agent_start", "tool_call"]:
            pi.on(name, lambda event, ctx, name=name: log(name))
        # One context event per reason (seed 001), with seed 004's messages field.
        pi.on("context", lambda event, ctx: log(f"context:{event.reason}"))
        pi.on("tool_result", lambda event, ctx: log("tool_result"))
        pi.on("session_start", lambda event, ctx: log("session_start", event.reason))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool(log)]) as session:
        await session.prompt("hello")
    labels = [label for label in log.labels() if label != "message_start"]
    assert labels == [
        "session_start",
        "input",
        "before_agent_start",
        "agent_start",
        "turn_start",
        "message_end",  # the user message
        "context:before_request",
        "context:ephemeral",
        "message_end",  # the assistant's tool call
        "tool_execution_start",
        "tool_call",
        "execute",
        "tool_execution_update",
        "tool_result",
        "tool_execution_end",
        "message_end",  # the tool result
        "turn_end",
        "context:turn_end",
        "turn_start",
        "context:before_request",
        "context:ephemeral",
        "message_end",
        "turn_end",
        "context:turn_end",
        "agent_end",
    ]


async def test_turn_events_carry_turn_index() -> None:
    """turn_start and turn_end carry pi's 0-based turnIndex within the run."""
    seen: list[tuple[str, int]] = []

    def register(pi: ExtensionAPI) -> None:
        pi.on("turn_start", lambda e, ctx: seen.append(("start", e.turn_index)))
        pi.on("turn_end", lambda e, ctx: seen.append(("end", e.turn_index)))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([*tool_then_text(), reply("again")])
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        await session.prompt("one")
        await session.prompt("two")
    assert seen == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 0), ("end", 0)]


# --------------------------------------------------------------------------- input


async def test_input_transforms_chain_and_handled_stops() -> None:
    """input: B sees A's transform; a handled result stops later handlers and the prompt."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e, ctx: {"action": "transform", "text": e.text + " +A"})

    def b(pi: ExtensionAPI) -> None:
        async def handler(e: Any, ctx: Any) -> Any:
            log("b", (e.text, e.source))
            if "swallow" in e.text:
                return InputEventResult(action="handled")
            return InputEventResult(action="transform", text=e.text + " +B")

        pi.on("input", handler)

    def c(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e, ctx: log("c", e.text))

    runner = make_runner(a, b, c)
    faux, registry = make_faux()
    faux.set_responses([reply("ok")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hi", source="rpc")
        await session.prompt("swallow")
    assert log.items == [
        ("b", ("hi +A", "rpc")),
        ("c", "hi +A +B"),
        ("b", ("swallow +A", "interactive")),
    ]
    users = [m for m in session.messages if isinstance(m, UserMessage)]
    assert [text_of(m) for m in users] == ["hi +A +B"]
    assert faux.state.call_count == 1


async def test_input_continue_and_none_pass_through_and_images_are_kept() -> None:
    """input: continue / None change nothing; a transform without images keeps them."""
    from pitrio.providers import ImageContent

    image = ImageContent(data="AAAA", mime_type="image/png")

    def register(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e, ctx: {"action": "continue"})
        pi.on("input", lambda e, ctx: None)
        pi.on("input", lambda e, ctx: {"action": "transform", "text": "new"})

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply()])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("old", images=[image])
    user = session.messages[0]
    assert isinstance(user, UserMessage)
    assert text_of(user) == "new"
    assert image in list(user.content)


async def test_registered_command_runs_before_input() -> None:
    """A registered /command runs instead of the prompt; input never fires for it."""
    log = Log()

    def register(pi: ExtensionAPI) -> None:
        pi.register_command("hello", lambda args, ctx: log("command", args), description="hi")
        pi.on("input", lambda e, ctx: log("input", e.text))

    runner = make_runner(register)
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        await session.prompt("/hello  world ")
    assert log.items == [("command", "world")]
    assert faux.state.call_count == 0


# --------------------------------------------------------------------------- before_agent_start


async def test_before_agent_start_chains_system_prompt_and_accumulates_messages() -> None:
    """before_agent_start: B sees A's system prompt; both messages are injected after the user
    message; the run uses the chained prompt."""
    seen: list[str] = []

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            return {
                "systemPrompt": e.system_prompt + " A",
                "message": {"customType": "a", "content": "from A", "display": False},
            }

        pi.on("before_agent_start", handler)

    def b(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            seen.append(e.system_prompt)
            seen.append(ctx.get_system_prompt())
            return {
                "system_prompt": e.system_prompt + " B",
                "message": {"custom_type": "b", "content": "from B"},
            }

        pi.on("before_agent_start", handler)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses([reply()])
    async with open_session(runner, faux, registry, system_prompt="BASE") as session:
        await session.prompt("go")
        assert session.system_prompt == "BASE A B"
    assert seen == ["BASE A", "BASE A"]
    kinds = [getattr(m, "custom_type", m.role) for m in session.messages]
    assert kinds == ["user", "a", "b", "assistant"]
    custom = session.messages[1]
    assert isinstance(custom, CustomMessage) and custom.display is False


async def test_before_agent_start_without_prompt_result_resets_to_base() -> None:
    """A run whose handlers return no systemPrompt uses the base prompt again."""
    calls = 0

    def register(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            nonlocal calls
            calls += 1
            return {"systemPrompt": "CHANGED"} if calls == 1 else None

        pi.on("before_agent_start", handler)

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply(), reply()])
    async with open_session(runner, faux, registry, system_prompt="BASE") as session:
        await session.prompt("one")
        assert session.system_prompt == "CHANGED"
        await session.prompt("two")
        assert session.system_prompt == "BASE"


# --------------------------------------------------------------------------- context


async def test_context_chains_on_a_deep_copy() -> None:
    """context: the first handler gets a copy; B sees A's list; the LLM sees B's."""
    seen: list[int] = []

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            e.messages.append(UserMessage(content="injected", timestamp=1))
            return {"messages": e.messages}

        pi.on("context", handler)

    def b(pi: ExtensionAPI) -> None:
        pi.on("context", lambda e, ctx: seen.append(len(e.messages)) if e.reason else None)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    contexts: list[Any] = []

    def respond(context: Any, *_: Any) -> AssistantMessage:
        contexts.append(context)
        return faux_assistant_message("ok")

    faux.set_responses([respond])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hello")
        assert len(session.messages) == 2  # the transcript did not get "injected"
    # B sees A's list at before_request and (the same request) at ephemeral, where A's new
    # replacement is ignored; at turn_end the replayed history: hello and the answer.
    assert seen == [2, 2, 2]
    assert [text_of(m) for m in contexts[0].messages] == ["hello", "injected"]


# --------------------------------------------------------------------------- tools


async def test_tool_call_first_block_wins_and_later_handlers_are_skipped() -> None:
    """tool_call: A blocks with a reason; B never runs; the tool never executes; the result is
    an error with the reason."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            log("a", (e.tool_name, e.input))
            return ToolCallEventResult(block=True, reason="read-only mode")

        pi.on("tool_call", handler)

    def b(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e, ctx: log("b"))

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool(log)]) as session:
        await session.prompt("go")
    assert log.items == [("a", ("echo", {"text": "hi"}))]
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and text_of(result) == "read-only mode"


async def test_tool_call_non_blocking_results_let_the_call_run() -> None:
    """tool_call: None and {block: False} from two extensions: the tool runs."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e, ctx: {"block": False})

    def b(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e, ctx: None)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool(log)]) as session:
        await session.prompt("go")
    assert log.labels() == ["execute"]


async def test_tool_call_handler_error_blocks_and_is_reported() -> None:
    """tool_call: a raising handler blocks the call (as pi) and is an extension_error event."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            raise RuntimeError("gate broke")

        pi.on("tool_call", handler)

    runner = make_runner(a)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    events: list[Any] = []
    async with open_session(runner, faux, registry, tools=[echo_tool(log)]) as session:
        session.subscribe(events.append)
        await session.prompt("go")
    assert log.items == []
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "gate broke" in text_of(result)
    errors = [e for e in events if e.type == "extension_error"]
    assert [(e.extension_path, e.event, e.error) for e in errors] == [
        ("ext0", "tool_call", "gate broke")
    ]


async def test_tool_result_changes_accumulate() -> None:
    """tool_result: B sees A's content; A's details and B's isError both land."""
    seen: list[Any] = []

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            return {
                "content": [*e.content, {"type": "text", "text": " +A"}],
                "details": {"by": "A"},
            }

        pi.on("tool_result", handler)

    def b(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            seen.append((text_of(e), e.details, e.is_error))
            return {"isError": True}

        pi.on("tool_result", handler)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        await session.prompt("go")
    assert seen == [("echo hi +A", {"by": "A"}, False)]
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and text_of(result) == "echo hi +A" and result.details == {"by": "A"}


async def test_tool_result_fires_for_errors_and_may_clear_them() -> None:
    """tool_result fires for a failing tool with isError; a handler may flip it."""

    async def boom(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        raise RuntimeError("disk on fire")

    failing = FunctionTool(name="echo", label="Echo", fn=boom)
    seen: list[Any] = []

    def register(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            seen.append((e.is_error, text_of(e)))
            return {"isError": False, "content": [{"type": "text", "text": "recovered"}]}

        pi.on("tool_result", handler)

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[failing]) as session:
        await session.prompt("go")
    assert seen == [(True, "disk on fire")]
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert not result.is_error and text_of(result) == "recovered"


async def test_registered_tool_replaces_a_builtin_and_gets_ctx() -> None:
    """register_tool with a dict definition replaces a tool of the same name; execute gets ctx."""
    log = Log()

    def register(pi: ExtensionAPI) -> None:
        async def execute(call_id: str, params: Any, on_update: Any, ctx: Any) -> Any:
            log("extension tool", (params, ctx.cwd))
            return {"content": [{"type": "text", "text": "from extension"}], "details": {"x": 1}}

        pi.register_tool(
            {
                "name": "echo",
                "description": "replacement",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
                "execute": execute,
            }
        )

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool(log)]) as session:
        assert [t.description for t in session.agent.tools] == ["replacement"]
        await session.prompt("go")
    assert log.items == [("extension tool", ({"text": "hi"}, "/project"))]
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert text_of(result) == "from extension" and result.details == {"x": 1}


# --------------------------------------------------------------------------- message events


async def test_message_update_carries_the_streaming_event() -> None:
    """message_update fires for the assistant's stream with its assistantMessageEvent."""
    kinds: list[str] = []

    def register(pi: ExtensionAPI) -> None:
        pi.on("message_update", lambda e, ctx: kinds.append(e.assistant_message_event.type))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply("hello there")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hi")
    assert kinds[0] == "text_start" and "text_delta" in kinds and kinds[-1] == "text_end"


async def test_agent_end_lists_only_the_new_messages() -> None:
    """agent_end's messages are the run's new messages, not the history."""
    counts: list[int] = []

    def register(pi: ExtensionAPI) -> None:
        pi.on("agent_end", lambda e, ctx: counts.append(len(e.messages)))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply(), reply()])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("one")
        await session.prompt("two")
    assert counts == [2, 2]


# --------------------------------------------------------------------------- errors


async def test_a_raising_handler_is_reported_and_the_chain_goes_on() -> None:
    """An exception in A's input handler is an extension_error; B still transforms."""

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            raise ValueError("bad input handler")

        pi.on("input", handler)

    def b(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e, ctx: {"action": "transform", "text": "from B"})

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses([reply()])
    events: list[Any] = []
    async with open_session(runner, faux, registry) as session:
        session.subscribe(events.append)
        await session.prompt("hi")
    assert text_of(session.messages[0]) == "from B"
    errors = [e for e in events if e.type == "extension_error"]
    assert [(e.extension_path, e.event, e.error) for e in errors] == [
        ("ext0", "input", "bad input handler")
    ]
    from pitrio.codec import to_wire

    assert to_wire(errors[0]) == {
        "type": "extension_error",
        "extensionPath": "ext0",
        "event": "input",
        "error": "bad input handler",
    }


def test_unknown_event_name_is_refused_at_registration() -> None:
    """on() with a name no seed defines raises a ValueError naming it."""

    def register(pi: ExtensionAPI) -> None:
        pi.on("tool_cal", lambda e, ctx: None)

    with pytest.raises(ValueError, match="tool_cal"):
        make_runner(register)


# --------------------------------------------------------------------------- abort


def hang(label: str) -> Any:
    async def handler(e: Any, ctx: Any) -> Any:
        await trio.sleep_forever()

    return handler


@pytest.mark.parametrize(
    "event", ["before_agent_start", "context", "tool_call", "tool_result", "turn_start"]
)
async def test_abort_during_a_slow_handler_is_quick(
    event: str, autojump_clock: trio.testing.MockClock
) -> None:
    """abort() while a handler hangs: the session is idle again within 100 ms."""

    def register(pi: ExtensionAPI) -> None:
        pi.on(event, hang(event))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses(tool_then_text())
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_streaming
            start = trio.current_time()
            await session.abort()
            assert trio.current_time() - start < QUIET_WITHIN
        assert not session.is_streaming


async def test_abort_during_a_slow_input_handler_ends_the_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An input handler that hangs is cancelled with the prompt call's own scope."""

    def register(pi: ExtensionAPI) -> None:
        pi.on("input", hang("input"))

    runner = make_runner(register)
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        with trio.move_on_after(0.05) as scope:
            await session.prompt("go")
        assert scope.cancelled_caught
        assert trio.current_time() < QUIET_WITHIN
    assert faux.state.call_count == 0


async def test_in_memory_manager_shows_custom_entries() -> None:
    """append_entry writes a custom entry the model never sees."""

    def register(pi: ExtensionAPI) -> None:
        pi.on("session_start", lambda e, ctx: pi.append_entry("state", {"n": 1}))

    runner = make_runner(register)
    faux, registry = make_faux()
    manager = SessionManager.in_memory("/project")
    async with open_session(runner, faux, registry, manager=manager):
        pass
    entries = [e for e in manager.get_entries() if getattr(e, "custom_type", None) == "state"]
    assert len(entries) == 1 and entries[0].data == {"n": 1}
