"""The API of seed 003 and pi 0.73.1 beyond the events: active tools, the tool_call type
guard, before_agent_start's ctx helpers, the model registry and context usage (real sessions
over the faux provider, real files for the built-in tools)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_type

from ext_helpers import Log, make_faux, make_runner, open_session, reply

from pitrio.extensions import (
    ExtensionAPI,
    ReadToolInput,
    ToolCallEvent,
    ToolInfo,
    is_tool_call_event_type,
)
from pitrio.providers import AssistantMessage, faux_assistant_message, faux_tool_call
from pitrio.tools import text_result
from pitrio.tools.builtin import create_tool


def tool_names(context: Any) -> list[str]:
    return [tool.name for tool in context.tools or ()]


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)


class Recorder:
    """A faux response that keeps the request's context and answers ``text``."""

    def __init__(self, contexts: list[Any], text: str = "ok") -> None:
        self.contexts = contexts
        self.text = text

    def __call__(self, context: Any, *_: Any) -> AssistantMessage:
        self.contexts.append(context)
        return faux_assistant_message(self.text)


# --------------------------------------------------------------------------- active tools


async def test_set_active_tools_ignores_unknown_names_and_reaches_the_next_request(
    tmp_path: Path,
) -> None:
    """A command's set_active_tools picks from the session's, the available and the
    extensions' tools (unknown names ignored, repeats once) and the next request sends them."""
    seen: dict[str, Any] = {}

    def ext(pi: ExtensionAPI) -> None:
        pi.register_tool(
            {
                "name": "echo",
                "description": "echo",
                "execute": lambda call_id, params, on_update: text_result("e"),
            }
        )

        def narrow(args: str, ctx: Any) -> None:
            seen["before"] = pi.get_active_tools()
            pi.set_active_tools(["ls", "nope", "echo", "ls"])
            seen["after"] = pi.get_active_tools()
            seen["all"] = pi.get_all_tools()

        pi.register_command("narrow", narrow)

    runner = make_runner(ext)
    faux, registry = make_faux()
    contexts: list[Any] = []
    faux.set_responses([Recorder(contexts), Recorder(contexts)])
    read, ls = create_tool("read", str(tmp_path)), create_tool("ls", str(tmp_path))
    async with open_session(runner, faux, registry, tools=[read], available_tools=[ls]) as session:
        await session.prompt("first")
        await session.prompt("/narrow")
        await session.prompt("second")
    assert tool_names(contexts[0]) == ["read", "echo"]
    assert tool_names(contexts[1]) == ["ls", "echo"]
    assert seen["before"] == ["read", "echo"]
    assert seen["after"] == ["ls", "echo"]
    infos: list[ToolInfo] = seen["all"]
    assert [(i.name, i.source, i.source_path) for i in infos] == [
        ("read", "builtin", None),
        ("echo", "extension", "ext0"),
        ("ls", "builtin", None),
    ]
    assert infos[2].parameters == ls.parameters


async def test_set_active_tools_inside_a_run_applies_from_the_next_run(tmp_path: Path) -> None:
    """A tool that narrows the tools mid-run: as pi's agent (which copies its tool list when a
    run starts), the run's later request keeps both tools and the next prompt sends only read."""
    calls = Log()

    def ext(pi: ExtensionAPI) -> None:
        def execute(call_id: str, params: Any, on_update: Any) -> Any:
            calls("narrow")
            pi.set_active_tools(["read"])
            return text_result("narrowed")

        pi.register_tool({"name": "narrow", "description": "narrow", "execute": execute})

    runner = make_runner(ext)
    faux, registry = make_faux()
    contexts: list[Any] = []

    def call_narrow(context: Any, *_: Any) -> AssistantMessage:
        contexts.append(context)
        return faux_assistant_message([faux_tool_call("narrow", {})], stop_reason="toolUse")

    faux.set_responses([call_narrow, Recorder(contexts, "done"), Recorder(contexts)])
    async with open_session(
        runner, faux, registry, tools=[create_tool("read", str(tmp_path))]
    ) as session:
        await session.prompt("go")
        await session.prompt("again")
    assert calls.labels() == ["narrow"]
    assert [tool_names(c) for c in contexts] == [["read", "narrow"], ["read", "narrow"], ["read"]]


# --------------------------------------------------------------------------- type guard


async def test_is_tool_call_event_type_narrows_by_tool_name(tmp_path: Path) -> None:
    """A tool_call of the real read tool matches "read" (its input has ``path``), not "bash";
    a mapping event and another event type are handled too."""
    (tmp_path / "notes.txt").write_text("hello\n")
    checks: list[tuple[bool, bool, str]] = []

    def ext(pi: ExtensionAPI) -> None:
        def on_call(event: ToolCallEvent, ctx: Any) -> None:
            if is_tool_call_event_type(event, "read"):
                assert_type(event.input, ReadToolInput)
                pi_order = is_tool_call_event_type("read", event)
                checks.append(
                    (pi_order, is_tool_call_event_type(event, "bash"), event.input["path"])
                )

        pi.on("tool_call", on_call)

    runner = make_runner(ext)
    faux, registry = make_faux()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("read", {"path": "notes.txt"})], stop_reason="toolUse"
            ),
            reply("done"),
        ]
    )
    async with open_session(
        runner, faux, registry, tools=[create_tool("read", str(tmp_path))]
    ) as session:
        await session.prompt("read it")
    assert checks == [(True, False, "notes.txt")]
    assert is_tool_call_event_type({"type": "tool_call", "toolName": "my_tool"}, "my_tool")
    assert not is_tool_call_event_type({"type": "tool_result", "toolName": "read"}, "read")
    assert not is_tool_call_event_type("bash", {"type": "tool_call", "toolName": "read"})


# --------------------------------------------------------------------------- before_agent_start


async def test_inject_and_modify_system_prompt_combine_with_returned_fields() -> None:
    """ctx calls apply as they happen, the return value after them: injected messages precede
    the returned one, and a later handler sees (and may replace) the appended prompt."""
    seen: list[str] = []

    def a(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            ctx.modify_system_prompt("A-extra")
            ctx.inject({"customType": "note", "content": "injected"})
            ctx.inject({"role": "user", "content": "seed-style"})
            return {"message": {"customType": "ret", "content": "returned"}}

        pi.on("before_agent_start", handler)

    def b(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            seen.append(event.system_prompt)
            ctx.modify_system_prompt("B")
            seen.append(ctx.get_system_prompt())
            return {"systemPrompt": ctx.get_system_prompt() + " +R"}

        pi.on("before_agent_start", handler)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    contexts: list[Any] = []
    faux.set_responses([Recorder(contexts)])
    async with open_session(runner, faux, registry, system_prompt="BASE") as session:
        await session.prompt("hi")
    assert seen == ["BASE\n\nA-extra", "BASE\n\nA-extra\n\nB"]
    assert contexts[0].system_prompt == "BASE\n\nA-extra\n\nB +R"
    assert [text_of(m) for m in contexts[0].messages] == [
        "hi",
        "injected",
        "seed-style",
        "returned",
    ]


async def test_inject_outside_before_agent_start_is_an_extension_error() -> None:
    """ctx.inject in an input handler raises UsageError, reported as an extension_error."""

    def ext(pi: ExtensionAPI) -> None:
        pi.on("input", lambda event, ctx: ctx.inject({"content": "x"}))

    runner = make_runner(ext)
    faux, registry = make_faux()
    contexts: list[Any] = []
    faux.set_responses([Recorder(contexts)])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hi")
    assert [(e.event, "before_agent_start" in e.error) for e in runner.errors] == [("input", True)]
    assert [text_of(m) for m in contexts[0].messages] == ["hi"]


# --------------------------------------------------------------------------- context


async def test_command_context_models_usage_and_idle() -> None:
    """A command sees the session's models through ctx.model_registry, pi's context usage
    shape after a reply, and an idle session."""
    seen: dict[str, Any] = {}

    def ext(pi: ExtensionAPI) -> None:
        def info(args: str, ctx: Any) -> None:
            registry = ctx.model_registry
            seen["all"] = [m.id for m in registry.get_all()]
            seen["found"] = registry.find("faux", "faux-2").id
            seen["missing"] = registry.find("faux", "nope")
            seen["usage"] = ctx.get_context_usage()
            seen["idle"] = ctx.is_idle()
            ctx.abort()  # an idle session: nothing to abort, no error

        pi.register_command("info", info)

    runner = make_runner(ext)
    faux, registry = make_faux()
    faux.set_responses([reply("hello")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hi")
        await session.prompt("/info")
        await session.wait_for_idle()
    assert seen["all"] == ["faux-1", "faux-2"]
    assert seen["found"] == "faux-2"
    assert seen["missing"] is None
    usage = seen["usage"]
    assert usage.context_window == 128000
    assert isinstance(usage.tokens, int) and usage.tokens > 0
    assert usage.percent == usage.tokens / 128000 * 100
    assert seen["idle"] is True
    assert runner.errors == []
