"""Session, model, bash, provider-request and message_end hooks, actions, and ctx.ui over RPC."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from ext_helpers import Log, make_faux, make_runner, open_session, reply

from pitrio.extensions import ExtensionAPI, UiBridge
from pitrio.providers import AssistantMessage, UserMessage
from pitrio.sessions import BashResult


async def test_session_switch_hooks_cancel_and_fire_in_order() -> None:
    """session_before_switch: the first cancel wins (B skipped); without a cancel the switch
    fires session_shutdown, session_switch, then session_start with reason new."""
    log = Log()
    cancel = True

    def a(pi: ExtensionAPI) -> None:
        pi.on("session_before_switch", lambda e, ctx: log("a", e.reason) or {"cancel": cancel})
        pi.on("session_shutdown", lambda e, ctx: log("shutdown", e.reason))
        pi.on("session_switch", lambda e, ctx: log("switch", e.reason))
        pi.on("session_start", lambda e, ctx: log("start", e.reason))

    def b(pi: ExtensionAPI) -> None:
        pi.on("session_before_switch", lambda e, ctx: log("b", e.reason))

    runner = make_runner(a, b)
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        assert await session.new_session() is False
        cancel = False
        assert await session.new_session() is True
    assert log.items == [
        ("start", "startup"),
        ("a", "new"),
        ("a", "new"),
        ("b", "new"),
        ("shutdown", "new"),
        ("switch", "new"),
        ("start", "new"),
        ("shutdown", "quit"),
    ]


async def test_fork_hooks() -> None:
    """session_before_fork may cancel; a fork fires session_fork then session_start(fork)."""
    log = Log()
    cancel = True

    def register(pi: ExtensionAPI) -> None:
        pi.on("session_before_fork", lambda e, ctx: log("before", e.entry_id) or {"cancel": cancel})
        pi.on("session_fork", lambda e, ctx: log("fork"))
        pi.on("session_start", lambda e, ctx: log("start", e.reason))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply()])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hello")
        entry = next(
            e
            for e in session.session_manager.get_entries()
            if isinstance(getattr(e, "message", None), UserMessage)
        )
        assert (await session.fork(entry.id)).cancelled
        cancel = False
        assert not (await session.fork(entry.id)).cancelled
    assert log.labels() == ["start", "before", "before", "fork", "start"]
    assert log.items[-1] == ("start", "fork")


async def test_before_compact_custom_summary_and_session_compact() -> None:
    """session_before_compact: a handler's compaction (a mapping) replaces the model's summary;
    session_compact then fires with fromExtension."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            prep = e.preparation
            return {
                "compaction": {
                    "summary": "MY SUMMARY",
                    "first_kept_entry_id": prep.first_kept_entry_id,
                    "tokens_before": prep.tokens_before,
                }
            }

        pi.on("session_before_compact", handler)
        pi.on("session_compact", lambda e, ctx: log("compact", e.from_extension))

    runner = make_runner(a)
    faux, registry = make_faux()
    faux.set_responses([reply("one"), reply("two")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        result = await session.compact()
    assert result.summary == "MY SUMMARY"
    assert log.items == [("compact", True)]


async def test_model_and_thinking_level_select() -> None:
    """model_select and thinking_level_select carry the new and previous values."""
    log = Log()

    def register(pi: ExtensionAPI) -> None:
        pi.on("model_select", lambda e, ctx: log("model", (e.model.id, e.source)))
        pi.on("thinking_level_select", lambda e, ctx: log("thinking", e.level))

    runner = make_runner(register)
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        await session.set_model(faux.get_model("faux-2"))
    assert log.items == [("model", ("faux-2", "set"))]


async def test_user_bash_result_replaces_the_command_and_first_wins() -> None:
    """user_bash: A's result is recorded without running anything; B never runs."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            log("a", (e.command, e.exclude_from_context, e.cwd))
            return {"result": BashResult(output="remote output", exit_code=0)}

        pi.on("user_bash", handler)

    def b(pi: ExtensionAPI) -> None:
        pi.on("user_bash", lambda e, ctx: log("b"))

    runner = make_runner(a, b)
    faux, registry = make_faux()
    async with open_session(runner, faux, registry) as session:
        result = await session.execute_bash("definitely-not-a-command", exclude_from_context=True)
    assert result.output == "remote output"
    assert log.items == [("a", ("definitely-not-a-command", True, "/project"))]
    recorded = session.messages[-1]
    assert getattr(recorded, "output", None) == "remote output"


async def test_user_bash_without_result_runs_the_command(tmp_path: Any) -> None:
    """user_bash returning nothing lets the command run in the local shell."""
    from pitrio.sessions import SessionManager

    runner = make_runner(lambda pi: pi.on("user_bash", lambda e, ctx: None))
    faux, registry = make_faux()
    manager = SessionManager.in_memory(str(tmp_path))
    async with open_session(runner, faux, registry, manager=manager) as session:
        result = await session.execute_bash("echo real")
    assert result.output.strip() == "real"


async def test_before_provider_request_chains_payloads() -> None:
    """before_provider_request: B sees A's payload; the last one replaces the body."""
    runner = make_runner(
        lambda pi: pi.on("before_provider_request", lambda e, ctx: {**e.payload, "a": 1}),
        lambda pi: pi.on(
            "before_provider_request", lambda e, ctx: {**e.payload, "b": e.payload["a"] + 1}
        ),
    )
    result = await runner.before_provider_request({"model": "m"}, None)  # type: ignore[arg-type]
    assert result == {"model": "m", "a": 1, "b": 2}
    assert await make_runner().before_provider_request({"x": 1}, None) is None  # type: ignore[arg-type]


async def test_message_end_replacement_chain_and_drop() -> None:
    """message_end: B sees A's replacement; the session keeps it; a {message: None} drops the
    message and stops the chain."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            if isinstance(e.message, AssistantMessage):
                from pitrio.providers import faux_assistant_message

                return {"message": faux_assistant_message("REPLACED")}
            return None

        pi.on("message_end", handler)

    def b(pi: ExtensionAPI) -> None:
        def handler(e: Any, ctx: Any) -> Any:
            if isinstance(e.message, AssistantMessage):
                log("b", e.message.text())
            return None

        pi.on("message_end", handler)

    runner = make_runner(a, b)
    faux, registry = make_faux()
    faux.set_responses([reply("original")])
    async with open_session(runner, faux, registry) as session:
        await session.prompt("hi")
    assert log.items == [("b", "REPLACED")]
    assert session.messages[-1].text() == "REPLACED"  # type: ignore[union-attr]


async def test_send_user_message_prompts_with_source_extension() -> None:
    """pi.send_user_message from a command runs a prompt whose input event says 'extension'."""
    sources: list[str] = []
    api: list[ExtensionAPI] = []

    def register(pi: ExtensionAPI) -> None:
        api.append(pi)
        pi.on("input", lambda e, ctx: sources.append(e.source))
        pi.register_command("again", lambda args, ctx: pi.send_user_message(f"said {args}"))

    runner = make_runner(register)
    faux, registry = make_faux()
    faux.set_responses([reply()])
    ended = trio.Event()
    async with open_session(runner, faux, registry) as session:
        session.subscribe(lambda event: ended.set() if event.type == "agent_end" else None)
        await session.prompt("/again x")
        await ended.wait()
        await session.wait_for_idle()
    assert sources == ["extension"]
    assert isinstance(session.messages[0], UserMessage)


async def test_resources_discover_collects_every_handler() -> None:
    """resources_discover: every handler's paths are collected in load order."""
    runner = make_runner(
        lambda pi: pi.on("resources_discover", lambda e, ctx: {"skillPaths": ["/a/SKILL.md"]}),
        lambda pi: pi.on(
            "resources_discover",
            lambda e, ctx: {"skill_paths": ["/b/SKILL.md"], "promptPaths": [f"{e.cwd}/p.md"]},
        ),
    )
    found = await runner.resources_discover("/project")
    assert list(found.skill_paths) == ["/a/SKILL.md", "/b/SKILL.md"]
    assert list(found.prompt_paths) == ["/project/p.md"]


async def test_session_directory_first_answer_wins_without_ctx() -> None:
    """session_directory: handlers get no ctx; the first sessionDir wins."""
    seen: list[Any] = []
    runner = make_runner(
        lambda pi: pi.on("session_directory", lambda e, ctx: seen.append(ctx)),
        lambda pi: pi.on("session_directory", lambda e, ctx: {"sessionDir": f"{e.cwd}/s"}),
        lambda pi: pi.on("session_directory", lambda e, ctx: {"sessionDir": "/late"}),
    )
    assert await runner.session_directory("/p") == "/p/s"
    assert seen == [None]


async def test_ui_bridge_speaks_pi_extension_ui_protocol(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ctx.ui over RPC: a confirm becomes an extension_ui_request and takes the matching
    response; a dialog past its timeout answers the default; notify is fire-and-forget."""
    sent: list[dict[str, Any]] = []
    bridge = UiBridge(lambda record: _append(sent, record))
    answers: list[Any] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bridge.run)

        async def ask() -> None:
            answers.append(await bridge.confirm("Allow?", "rm -rf build"))
            answers.append(await bridge.select("Pick", ["a", "b"], timeout_ms=1000))

        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        request = sent[0]
        assert {k: v for k, v in request.items() if k != "id"} == {
            "type": "extension_ui_request",
            "method": "confirm",
            "title": "Allow?",
            "message": "rm -rf build",
        }
        assert not bridge.feed({"type": "extension_ui_response", "id": "other", "confirmed": True})
        assert bridge.feed(
            {"type": "extension_ui_response", "id": request["id"], "confirmed": True}
        )
        await trio.sleep(2)  # the select times out (virtual time)
        bridge.notify("done", "warning")
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert answers == [True, None]
    assert sent[1]["method"] == "select" and sent[1]["timeout"] == 1000
    assert sent[2]["method"] == "notify" and sent[2]["notifyType"] == "warning"


async def _append(sent: list[dict[str, Any]], record: dict[str, Any]) -> None:
    sent.append(record)
