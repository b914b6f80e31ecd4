"""The gaps of the seed 004 matrix: two extensions on every informational event, the
before_agent_start, fork, compaction, tree, model and user_bash edge cases, and aborts during
the hooks of session commands (every test on a real session over the faux provider)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from ext_helpers import Log, make_runner, open_session, reply

from pitrio.extensions import ExtensionAPI
from pitrio.providers import (
    AssistantMessage,
    FauxModelDefinition,
    FauxProvider,
    ProviderRegistry,
    TextContent,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.sessions import BashResult, CompactionError, SessionManager
from pitrio.sessions.storage._entries import BranchSummaryEntry, SessionMessageEntry
from pitrio.tools import AgentTool, AgentToolResult, FunctionTool, text_result

QUIET_WITHIN = 0.1


def make_faux() -> tuple[FauxProvider, ProviderRegistry]:
    """ext_helpers' faux provider, with models that think (for thinking_level_select)."""
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        token_size=(64, 64),
        registry=registry,
        models=[
            FauxModelDefinition(id="faux-1", reasoning=True),
            FauxModelDefinition(id="faux-2", reasoning=True),
        ],
    )
    return faux, registry


def echo_tool() -> AgentTool:
    async def run(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        on_update(text_result("working"))
        return text_result(f"echo {params.get('text')}")

    return FunctionTool(
        name="echo",
        label="Echo",
        description="echo text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        fn=run,
    )


def tool_turn(text: str = "hi") -> Any:
    return lambda *_: faux_assistant_message(
        [faux_tool_call("echo", {"text": text})], stop_reason="toolUse"
    )


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


def user_entry(session: Any, text: str) -> Any:
    return next(
        e
        for e in session.session_manager.get_entries()
        if isinstance(e, SessionMessageEntry)
        and isinstance(e.message, UserMessage)
        and text_of(e.message) == text
    )


# --------------------------------------------------------------------------- informational

INFORMATIONAL = [
    "session_start",
    "agent_start",
    "turn_start",
    "message_start",
    "message_update",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "turn_end",
    "agent_end",
    "model_select",
    "thinking_level_select",
    "session_compact",
    "session_tree",
    "session_shutdown",
    "session_switch",
    "session_fork",
]


async def test_informational_events_reach_both_extensions_in_load_order() -> None:
    """Every informational event reaches A's two handlers (registration order) then B's, and
    what they return (a cancel, a block, a replacement) changes nothing."""
    log = Log()
    junk = {"cancel": True, "block": True, "action": "handled", "message": None, "messages": []}

    def extension(name: str) -> Any:
        def register(pi: ExtensionAPI) -> None:
            for event in INFORMATIONAL:
                pi.on(event, lambda e, ctx, ev=event: log(ev, f"{name}1") or junk)
                if name == "A":
                    pi.on(event, lambda e, ctx, ev=event: log(ev, f"{name}2") or junk)

        return register

    runner = make_runner(extension("A"), extension("B"))
    faux, registry = make_faux()
    faux.set_responses([tool_turn(), reply("done"), reply("second"), reply("summary")])
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        await session.prompt("hello")
        assert session.messages[-1].text() == "done"  # type: ignore[union-attr]
        await session.set_model(faux.get_model("faux-2"))  # type: ignore[arg-type]
        await session.set_thinking_level("high")
        await session.prompt("again")
        await session.compact()
        await session.navigate_tree(user_entry(session, "hello").id)
        await session.fork(user_entry(session, "hello").id)
        assert await session.new_session()
    seen: dict[str, list[str]] = {}
    for event, who in log.items:
        seen.setdefault(event, []).append(who)
    for event in INFORMATIONAL:
        whos = seen.get(event)
        assert whos, f"{event} never fired"
        assert len(whos) % 3 == 0 and whos[:3] == ["A1", "A2", "B1"], (event, whos)
        assert whos == ["A1", "A2", "B1"] * (len(whos) // 3), (event, whos)


# --------------------------------------------------------------------------- before_agent_start


async def test_before_agent_start_display_false_is_still_sent_and_errors_do_not_stop() -> None:
    """A message with display False reaches the LLM after the user message; a raising
    handler is an extension_error and B's prompt and message still apply."""

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            raise RuntimeError("A broke")

        pi.on("before_agent_start", handler)
        pi.on(
            "before_agent_start",
            lambda e, ctx: {
                "message": {"customType": "hidden", "content": "secret", "display": False}
            },
        )

    def b(pi: ExtensionAPI) -> None:
        pi.on("before_agent_start", lambda e, ctx: {"systemPrompt": e.system_prompt + " +B"})

    runner = make_runner(a, b)
    faux, registry = make_faux()
    contexts: list[Any] = []

    def respond(context: Any, *_: Any) -> AssistantMessage:
        contexts.append(context)
        return faux_assistant_message("ok")

    faux.set_responses([respond])
    events: list[Any] = []
    async with open_session(runner, faux, registry, system_prompt="BASE") as session:
        session.subscribe(events.append)
        await session.prompt("hi")
    sent = contexts[0]
    assert sent.system_prompt == "BASE +B"
    assert [(m.role, text_of(m)) for m in sent.messages] == [("user", "hi"), ("user", "secret")]
    errors = [e for e in events if e.type == "extension_error"]
    assert [(e.extension_path, e.event) for e in errors] == [("ext0", "before_agent_start")]


async def test_before_agent_start_fires_once_per_prompt_not_per_turn() -> None:
    """A prompt with a tool loop (two turns) runs before_agent_start once."""
    log = Log()
    runner = make_runner(
        lambda pi: pi.on("before_agent_start", lambda e, ctx: log("bas", e.prompt))
    )
    faux, registry = make_faux()
    faux.set_responses([tool_turn(), reply()])
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        await session.prompt("go")
    assert log.items == [("bas", "go")]


# --------------------------------------------------------------------------- context


async def test_context_fires_once_per_llm_call_over_three_tool_loops() -> None:
    """Three tool loops and the final answer: four LLM calls, four before_request events."""
    reasons: list[str] = []
    runner = make_runner(lambda pi: pi.on("context", lambda e, ctx: reasons.append(e.reason)))
    faux, registry = make_faux()
    faux.set_responses([tool_turn("1"), tool_turn("2"), tool_turn("3"), reply("end")])
    async with open_session(runner, faux, registry, tools=[echo_tool()]) as session:
        await session.prompt("loop")
    assert faux.state.call_count == 4
    assert reasons.count("before_request") == 4


# --------------------------------------------------------------------------- fork


async def test_session_before_fork_chain_and_skip_conversation_restore() -> None:
    """B sees the event after A's non-cancelling result; skipConversationRestore forks into a
    new session that keeps the whole conversation (file and agent alike)."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        pi.on("session_before_fork", lambda e, ctx: log("a", e.position) or {"cancel": False})

    def b(pi: ExtensionAPI) -> None:
        pi.on(
            "session_before_fork",
            lambda e, ctx: log("b", e.entry_id) or {"skipConversationRestore": True},
        )
        pi.on("session_fork", lambda e, ctx: log("fork"))

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        before_id = session.session_id
        entry = user_entry(session, "second")
        result = await session.fork(entry.id)
        assert not result.cancelled and result.selected_text == "second"
        assert session.session_id != before_id
        texts = [text_of(m) for m in session.messages]
        assert texts == ["first", "one", "second", "two"]
        restored = session.session_manager.build_session_context().messages
        assert [text_of(m) for m in restored] == texts
    assert log.items == [("a", "before"), ("b", entry.id), ("fork", None)]


async def test_session_before_fork_without_skip_restores_the_conversation() -> None:
    """Without skipConversationRestore the fork goes back to before the chosen message."""
    runner = make_runner(lambda pi: pi.on("session_before_fork", lambda e, ctx: {"cancel": False}))
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        await session.fork(user_entry(session, "second").id)
        assert [text_of(m) for m in session.messages] == ["first", "one"]


# --------------------------------------------------------------------------- compaction


async def test_session_before_compact_first_cancel_wins_and_chain_sees_the_same_event() -> None:
    """A and B both see the preparation; B's cancel stops C and the compaction."""
    log = Log()
    cancel = True

    def a(pi: ExtensionAPI) -> None:
        pi.on("session_before_compact", lambda e, ctx: log("a", e.custom_instructions))

    def b(pi: ExtensionAPI) -> None:
        pi.on(
            "session_before_compact",
            lambda e, ctx: log("b", bool(e.branch_entries)) or {"cancel": cancel},
        )

    def c(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            log("c")
            prep = e.preparation
            return {
                "compaction": {
                    "summary": "FROM C",
                    "firstKeptEntryId": prep.first_kept_entry_id,
                    "tokensBefore": prep.tokens_before,
                }
            }

        pi.on("session_before_compact", handler)

    runner = make_runner(a, b, c)
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        with pytest.raises(CompactionError):
            await session.compact("focus")
        cancel = False
        result = await session.compact("focus")
    assert result.summary == "FROM C"
    assert log.items == [("a", "focus"), ("b", True), ("a", "focus"), ("b", True), ("c", None)]


# --------------------------------------------------------------------------- tree


async def test_session_before_tree_summary_label_and_first_cancel() -> None:
    """A's cancel stops the navigation (B skipped); then B's summary and label land in the
    branch summary entry and session_tree says fromExtension."""
    log = Log()
    cancel = True

    def a(pi: ExtensionAPI) -> None:
        pi.on(
            "session_before_tree", lambda e, ctx: log("a") or ({"cancel": True} if cancel else None)
        )

    def b(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            log("b", e.preparation.user_wants_summary)
            return {"summary": {"summary": "CUSTOM", "details": {"n": 1}}, "label": "mine"}

        pi.on("session_before_tree", handler)
        pi.on("session_tree", lambda e, ctx: log("tree", e.from_extension))

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        target = user_entry(session, "second").id
        assert (await session.navigate_tree(target, summarize=True)).cancelled
        cancel = False
        assert not (await session.navigate_tree(target, summarize=True)).cancelled
        summaries = [
            e for e in session.session_manager.get_entries() if isinstance(e, BranchSummaryEntry)
        ]
        assert [(s.summary, s.details, s.from_hook) for s in summaries] == [
            ("CUSTOM", {"n": 1}, True)
        ]
        assert session.session_manager.get_label(summaries[0].id) == "mine"
    assert log.items == [("a", None), ("a", None), ("b", True), ("tree", True)]
    assert faux.state.call_count == 2  # no summary request: the extension's summary was used


# --------------------------------------------------------------------------- models


async def test_model_select_restore_when_a_resumed_session_brings_its_model(tmp_path: Any) -> None:
    """Resuming a session saved with another model: model_select with source restore (A then
    B, with the previous model); resuming one with the current model fires nothing."""
    log = Log()

    def extension(name: str) -> Any:
        def register(pi: ExtensionAPI) -> None:
            pi.on(
                "model_select",
                lambda e, ctx: log(
                    name, (e.source, e.model.id, e.previous_model and e.previous_model.id)
                ),
            )
            pi.on("thinking_level_select", lambda e, ctx: log(name, (e.level, e.previous_level)))

        return register

    runner = make_runner(extension("A"), extension("B"))
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    manager = SessionManager.create(str(tmp_path), session_dir=str(tmp_path / "sessions"))
    async with open_session(runner, faux, registry, manager=manager) as session:
        await session.prompt("on faux-1")
        first_file = session.session_file
        assert first_file is not None
        await session.set_model(faux.get_model("faux-2"))  # type: ignore[arg-type]
        await session.cycle_model()
        await session.set_thinking_level("high")
        assert await session.new_session()
        await session.set_model(faux.get_model("faux-2"))  # type: ignore[arg-type]
        await session.prompt("on faux-2")
        log.items.clear()
        assert await session.switch_session(first_file)
        assert session.model.id == "faux-1"  # type: ignore[union-attr]
        await session.switch_session(first_file)  # the same model: no event
    assert log.items == [
        ("A", ("restore", "faux-1", "faux-2")),
        ("B", ("restore", "faux-1", "faux-2")),
    ]


async def test_model_select_set_and_cycle_carry_the_previous_model() -> None:
    """set and cycle: A then B, with the model before the change; thinking_level_select
    carries the new and the previous level."""
    log = Log()

    def extension(name: str) -> Any:
        def register(pi: ExtensionAPI) -> None:
            pi.on(
                "model_select",
                lambda e, ctx: log(name, (e.source, e.model.id, e.previous_model.id)),
            )
            pi.on("thinking_level_select", lambda e, ctx: log(name, (e.level, e.previous_level)))

        return register

    runner = make_runner(extension("A"), extension("B"))
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        await session.set_model(faux.get_model("faux-2"))  # type: ignore[arg-type]
        await session.cycle_model()
        previous = session.thinking_level
        await session.set_thinking_level("high")
    assert log.items == [
        ("A", ("set", "faux-2", "faux-1")),
        ("B", ("set", "faux-2", "faux-1")),
        ("A", ("cycle", "faux-1", "faux-2")),
        ("B", ("cycle", "faux-1", "faux-2")),
        ("A", ("high", previous)),
        ("B", ("high", previous)),
    ]


# --------------------------------------------------------------------------- user_bash


class _Remote:
    """BashOperations that answer every command without a shell (a stand-in for SSH)."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, str]] = []

    async def exec(self, command: str, cwd: str, *, on_data: Any, env: Any = None) -> int | None:
        self.commands.append((command, cwd))
        pending = on_data(b"remote says hi\n")
        if pending is not None:
            await pending
        return 3


async def test_user_bash_operations_run_the_command_elsewhere(tmp_path: Any) -> None:
    """user_bash: A passes (None); B's operations run the command; the result is recorded."""
    remote = _Remote()
    log = Log()
    runner = make_runner(
        lambda pi: pi.on("user_bash", lambda e, ctx: log("a", e.command)),
        lambda pi: pi.on("user_bash", lambda e, ctx: {"operations": remote}),
    )
    faux, registry = make_faux()
    manager = SessionManager.in_memory(str(tmp_path))
    async with open_session(runner, faux, registry, manager=manager) as session:
        result = await session.execute_bash("uname -a")
    assert log.items == [("a", "uname -a")]
    assert remote.commands and remote.commands[0][0].endswith("uname -a")
    assert result.output == "remote says hi\n" and result.exit_code == 3
    assert getattr(session.messages[-1], "output", None) == "remote says hi\n"


# --------------------------------------------------------------------------- aborts


def _hang(event: str) -> Any:
    def register(pi: ExtensionAPI) -> None:
        async def handler(e: Any, ctx: Any) -> Any:
            await trio.sleep_forever()

        pi.on(event, handler)

    return register


@pytest.mark.parametrize(
    "event",
    [
        "agent_start",
        "message_start",
        "message_update",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "turn_end",
        "agent_end",
    ],
)
async def test_abort_during_a_slow_run_handler_is_quick(
    event: str, autojump_clock: trio.testing.MockClock
) -> None:
    """abort() while an informational handler of the run hangs: idle within 100 ms."""
    faux, registry = make_faux()
    faux.set_responses([tool_turn(), reply()])
    async with open_session(make_runner(_hang(event)), faux, registry, tools=[echo_tool()]) as s:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(s.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            assert s.is_streaming
            start = trio.current_time()
            await s.abort()
            assert trio.current_time() - start < QUIET_WITHIN
        assert not s.is_streaming


async def _two_turns(session: Any) -> None:
    await session.prompt("first")
    await session.prompt("second")


@pytest.mark.parametrize(
    "event",
    [
        "session_before_compact",
        "session_before_tree",
        "session_before_switch",
        "session_before_fork",
    ],
)
async def test_abort_during_a_slow_session_command_hook_is_quick(
    event: str, autojump_clock: trio.testing.MockClock
) -> None:
    """abort() while a session command's before-hook hangs: the command ends (cancelled or
    raising) and the session is idle within 100 ms."""
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    outcome: list[Any] = []
    async with open_session(make_runner(_hang(event)), faux, registry) as session:
        await _two_turns(session)
        target = user_entry(session, "second").id

        async def command() -> None:
            try:
                if event == "session_before_compact":
                    outcome.append(await session.compact())
                elif event == "session_before_tree":
                    outcome.append(await session.navigate_tree(target, summarize=True))
                elif event == "session_before_switch":
                    outcome.append(await session.new_session())
                else:
                    outcome.append(await session.fork(target))
            except CompactionError as exc:
                outcome.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(command)
            await trio.testing.wait_all_tasks_blocked()
            assert not outcome
            start = trio.current_time()
            await session.abort()
            await session.wait_for_idle()
            assert trio.current_time() - start < QUIET_WITHIN
        assert len(outcome) == 1
        assert [text_of(m) for m in session.messages] == ["first", "one", "second", "two"]


async def test_abort_bash_during_a_slow_user_bash_handler_is_quick(
    autojump_clock: trio.testing.MockClock, tmp_path: Any
) -> None:
    """abort_bash() while a user_bash handler hangs: execute_bash returns a cancelled result
    within 100 ms and nothing runs."""
    faux, registry = make_faux()
    manager = SessionManager.in_memory(str(tmp_path))
    results: list[BashResult] = []
    runner = make_runner(_hang("user_bash"))
    async with (
        open_session(runner, faux, registry, manager=manager) as s,
        trio.open_nursery() as nursery,
    ):

        async def run() -> None:
            results.append(await s.execute_bash("touch ran"))

        nursery.start_soon(run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        await s.abort_bash()
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() - start < QUIET_WITHIN
        assert results and results[0].cancelled
    assert not (tmp_path / "ran").exists()
