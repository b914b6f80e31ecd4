"""AgentSession end to end on the faux provider: persistence, the prompt pipeline, steering and
follow-up, models and thinking levels, threshold / overflow / manual compaction, fork, tree
navigation with branch summaries, new and resumed sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from pitrio._exceptions import UsageError
from pitrio.actors import RequestDraft
from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    StreamOptions,
    TextContent,
    UserMessage,
    faux_assistant_message,
)
from pitrio.sessions import (
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    CustomMessageEntry,
    ModelChangeEntry,
    SessionManager,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    load_session_file,
)
from pitrio.sessions.compaction._compaction import CompactionError, CompactionResult
from pitrio.sessions.runtime._agent_session import AgentSession
from pitrio.sessions.runtime._agent_session_compaction import OVERFLOW_RECOVERY_FAILED
from pitrio.sessions.runtime._agent_session_types import (
    BeforeAgentStartResult,
    BeforeCompactResult,
    InputResult,
    SessionHooks,
)
from pitrio.sessions.runtime._session_actor import SessionActor
from pitrio.sessions.settings._settings import SettingsManager

from session_helpers import (
    OLD_CLOCK_MS,
    Events,
    Summaries,
    fail,
    file_manager,
    gated,
    make_faux,
    model_of,
    open_session,
    reply,
)

OVERFLOW = "prompt is too long: 5000 tokens > 1000 maximum"


def entry_types(session: AgentSession) -> list[str]:
    out = []
    for entry in session.session_manager.get_entries():
        if isinstance(entry, SessionMessageEntry):
            out.append(entry.message.role)
        else:
            out.append(entry.type)
    return out


def texts(session: AgentSession) -> list[str]:
    out = []
    for message in session.messages:
        if isinstance(message, UserMessage | AssistantMessage):
            text = (
                message.text()
                if isinstance(message, AssistantMessage)
                else (
                    message.content
                    if isinstance(message.content, str)
                    else "".join(getattr(b, "text", "") for b in message.content)
                )
            )
            out.append(f"{message.role}:{text}")
        else:
            out.append(message.role)
    return out


# --------------------------------------------------------------------------- prompting


async def test_prompt_persists_each_message_as_it_ends(tmp_path: Path) -> None:
    """A new session records its model and thinking level, then each message; the file on disk
    holds the same entries, and subscribers see pi's event order."""
    faux, registry = make_faux()
    faux.set_responses([reply("hi there")])
    manager = file_manager(tmp_path)
    async with open_session(faux, registry, manager=manager) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        assert [t for t in events.types if t != "message_update"] == [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
        ]
        assert entry_types(session) == [
            "model_change",
            "thinking_level_change",
            "user",
            "assistant",
        ]
        path = session.session_file
        assert path is not None
    loaded = load_session_file(path)
    assert [to_wire(e) for e in loaded.entries] == [to_wire(e) for e in manager.get_entries()]


async def test_prompt_without_a_model_fails() -> None:
    """Prompting with no model selected raises before anything is sent."""
    faux, registry = make_faux()
    async with open_session(faux, registry, model=None, models=[]) as session:
        assert session.model is None
        with pytest.raises(UsageError, match="No model selected"):
            await session.prompt("hello")
    assert faux.state.call_count == 0


async def test_prompt_while_streaming_queues_steering_and_follow_up() -> None:
    """While a response streams, prompt() needs streaming_behavior; steering runs before the
    follow-up, each as a turn of its own, and queue_update tracks both queues."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "first"), reply("to steer"), reply("to follow-up")])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "start")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_streaming
            with pytest.raises(UsageError, match="already processing"):
                await session.prompt("not queued")
            await session.prompt("later", streaming_behavior="follow_up")
            await session.prompt("now", streaming_behavior="steer")
            assert session.get_steering_messages() == ["now"]
            assert session.pending_message_count == 2
            gate.set()
        assert texts(session) == [
            "user:start",
            "assistant:first",
            "user:now",
            "assistant:to steer",
            "user:later",
            "assistant:to follow-up",
        ]
        queues = [(e.steering, e.follow_up) for e in events.of("queue_update")]
        assert queues == [((), ("later",)), (("now",), ("later",)), ((), ("later",)), ((), ())]
        assert session.pending_message_count == 0


async def test_abort_ends_the_run_and_keeps_the_partial_response() -> None:
    """abort() during a response: the run ends with an aborted message, which is saved."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "never")])
    async with open_session(faux, registry) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            await session.abort()
            assert not session.is_streaming
        last = session.session_manager.get_entries()[-1]
        assert isinstance(last, SessionMessageEntry)
        assert isinstance(last.message, AssistantMessage)
        assert last.message.stop_reason == "aborted"


async def test_custom_messages_are_saved_as_custom_message_entries() -> None:
    """Without a turn a custom message is appended and announced; with trigger_turn it starts a
    run; the LLM sees it as user text."""
    faux, registry = make_faux()
    seen: list[Any] = []

    def respond(context: Any, *_: Any) -> AssistantMessage:
        seen.append(context.messages)
        return faux_assistant_message("noted")

    faux.set_responses([respond])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        await session.send_custom_message("note", "quiet", display=False, details={"k": 1})
        assert events.types == ["message_start", "message_end"]
        await session.send_custom_message("note", "loud", trigger_turn=True)
        entries = [
            e for e in session.session_manager.get_entries() if isinstance(e, CustomMessageEntry)
        ]
        assert [(e.content, e.display, e.details) for e in entries] == [
            ("quiet", False, {"k": 1}),
            ("loud", True, None),
        ]
        assert [m.role for m in seen[0]] == ["user", "user"]
        assert isinstance(session.messages[0], CustomMessage)


# --------------------------------------------------------------------------- models and thinking


async def test_model_and_thinking_changes_are_recorded_and_clamped() -> None:
    """set_thinking_level clamps to the model and records changes; set_model records the switch,
    updates the settings defaults and re-clamps the thinking level."""
    faux, registry = make_faux(models=("deep", "plain"), reasoning=True)
    plain = attrs_evolve(model_of(faux, "plain"), reasoning=False)
    settings = SettingsManager.in_memory()
    async with open_session(
        faux,
        registry,
        settings=settings,
        model=model_of(faux, "deep"),
        models=[model_of(faux, "deep"), plain],
    ) as session:
        events = Events()
        session.subscribe(events)
        levels = [session.thinking_level]  # pi's default: medium
        await session.set_thinking_level("xhigh")  # not offered: clamped down
        levels.append(session.thinking_level)
        await session.set_thinking_level("high")  # no change, nothing recorded
        await session.set_model(plain)
        levels.append(session.thinking_level)
        assert levels == ["medium", "high", "off"]
        assert [to_wire(e) for e in events.of("thinking_level_changed")] == [
            {"type": "thinking_level_changed", "level": "high"},
            {"type": "thinking_level_changed", "level": "off"},
        ]
        changes = [
            (e.type, getattr(e, "thinking_level", None) or getattr(e, "model_id", None))
            for e in session.session_manager.get_entries()
            if isinstance(e, ThinkingLevelChangeEntry | ModelChangeEntry)
        ]
        assert changes == [
            ("model_change", "deep"),
            ("thinking_level_change", "medium"),
            ("thinking_level_change", "high"),
            ("model_change", "plain"),
            ("thinking_level_change", "off"),
        ]
        assert settings.default_model == "plain" and settings.default_provider == "faux"
        assert settings.default_thinking_level == "high"
        cycled = await session.cycle_model()
        assert cycled is not None and cycled.model.id == "deep" and not cycled.is_scoped
        assert session.model is not None and session.model.id == "deep"


def attrs_evolve(model: Any, **changes: Any) -> Any:
    import attrs

    return attrs.evolve(model, **changes)


async def test_a_resumed_session_restores_messages_model_and_thinking(tmp_path: Path) -> None:
    """Opening the file again restores the transcript, the last model and the thinking level."""
    faux, registry = make_faux(models=("a", "b"), reasoning=True)
    faux.set_responses([reply("one")])
    manager = file_manager(tmp_path)
    async with open_session(faux, registry, manager=manager, model=model_of(faux, "a")) as session:
        await session.prompt("hello")
        await session.set_model(model_of(faux, "b"))
        await session.set_thinking_level("low")
        path = session.session_file
    assert path is not None
    reopened = SessionManager.open(path)
    async with open_session(faux, registry, manager=reopened, model=None) as session:
        assert session.model is not None and session.model.id == "b"
        assert session.thinking_level == "low"
        assert texts(session) == ["user:hello", "assistant:one"]


# --------------------------------------------------------------------------- compaction


async def test_threshold_compaction_runs_after_a_turn() -> None:
    """A response whose context passes contextWindow - reserveTokens triggers compaction: the
    summary request, a compaction entry, both event pairs, and a context that starts with the
    summary."""
    faux, registry = make_faux(context_window=2000)
    summaries = Summaries()
    faux.set_responses([reply("hi"), reply("ok"), summaries])
    settings = {"compaction": {"reserveTokens": 500, "keepRecentTokens": 100}}
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        assert events.of("compaction_start") == []
        await session.prompt("x" * 6800)  # ~1700 tokens of input: over 2000 - 500
        compaction_types = [t for t in events.types if "compaction" in t]
        assert compaction_types == [
            "auto_compaction_start",
            "compaction_start",
            "compaction_end",
            "auto_compaction_end",
        ]
        assert events.wire("auto_compaction_start") == [
            {"type": "auto_compaction_start", "reason": "threshold"}
        ]
        end = events.of("compaction_end")[0]
        assert end.reason == "threshold" and not end.will_retry and end.result is not None
        assert end.result.summary == "SUMMARY 1"
        assert "[User]: hello\n\n[Assistant]: hi" in summaries.prompt()
        entry = session.session_manager.get_entries()[-1]
        assert isinstance(entry, CompactionEntry)
        assert entry.first_kept_entry_id == end.result.first_kept_entry_id
        assert entry.from_hook is False
        first = session.messages[0]
        assert isinstance(first, CompactionSummaryMessage) and first.summary == "SUMMARY 1"
        assert texts(session)[1:] == ["user:" + "x" * 6800, "assistant:ok"]
        assert session.get_context_usage() is not None
        assert session.get_context_usage().tokens is None  # type: ignore[union-attr]


async def test_overflow_compacts_and_retries_once() -> None:
    """A context-overflow error: the error leaves the context, the session compacts (reason
    overflow, willRetry) and continues; the retried request does not contain the error."""
    faux, registry = make_faux(context_window=1000)
    summaries = Summaries()
    requests: list[Any] = []

    def recovered(context: Any, *_: Any) -> AssistantMessage:
        requests.append(context)
        return faux_assistant_message("recovered")

    faux.set_responses([reply("hi"), fail(OVERFLOW), summaries, recovered])
    settings = {"compaction": {"reserveTokens": 100}}
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        await session.prompt("again")
        end = events.of("compaction_end")[0]
        assert end.reason == "overflow" and end.will_retry and end.result is not None
        assert events.wire("auto_compaction_end")[0]["willRetry"] is True
        assert [m.role for m in requests[0].messages] == ["user", "user", "assistant", "user"]
        assert all(
            not (isinstance(m, AssistantMessage) and m.stop_reason == "error")
            for m in requests[0].messages
        )
        assert texts(session)[-2:] == ["user:again", "assistant:recovered"]
        assert entry_types(session).count("compaction") == 1


async def test_a_second_overflow_gives_up() -> None:
    """If the retried request overflows again, compaction_end reports the failure, no second
    compaction runs, and the prompt returns."""
    faux, registry = make_faux(context_window=1000)
    faux.set_responses([fail(OVERFLOW), Summaries(), fail(OVERFLOW)])
    settings = {"compaction": {"reserveTokens": 100}}
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        ends = events.of("compaction_end")
        assert [e.error_message for e in ends] == [None, OVERFLOW_RECOVERY_FAILED]
        assert len(events.of("compaction_start")) == 1
        assert faux.state.call_count == 3


async def test_manual_compaction_and_its_errors() -> None:
    """compact() summarises with the custom instructions and emits compaction_start/end with
    reason manual only; compacting again right away fails with "Already compacted"."""
    faux, registry = make_faux()
    summaries = Summaries()
    faux.set_responses([reply("a1"), reply("a2"), summaries])
    settings = {"compaction": {"keepRecentTokens": 2}}  # keeps the second prompt: no split turn
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("one")
        await session.prompt("two")
        result = await session.compact("keep the numbers")
        assert result.summary == "SUMMARY 1"
        assert summaries.prompt().endswith("Additional focus: keep the numbers")
        with pytest.raises(CompactionError, match="Already compacted"):
            await session.compact()
        assert [to_wire(e) for e in events.of("compaction_start")] == [
            {"type": "compaction_start", "reason": "manual"}
        ] * 2
        ends = events.wire("compaction_end")
        assert ends[0]["result"]["summary"] == "SUMMARY 1" and "errorMessage" not in ends[0]
        assert ends[1] == {
            "type": "compaction_end",
            "reason": "manual",
            "aborted": False,
            "willRetry": False,
            "errorMessage": "Compaction failed: Already compacted",
        }
        assert events.of("auto_compaction_start") == []


# --------------------------------------------------------------------------- branching


async def test_fork_before_a_user_message_starts_a_new_file(tmp_path: Path) -> None:
    """Forking before the second prompt: a new file whose header names the old one, holding the
    path up to the first answer; the prompt's text is returned for the editor."""
    faux, registry = make_faux()
    faux.set_responses([reply("a1"), reply("a2")])
    async with open_session(faux, registry, manager=file_manager(tmp_path)) as session:
        await session.prompt("first")
        await session.prompt("second")
        old_file = session.session_file
        second = next(
            e.id
            for e in session.session_manager.get_entries()
            if isinstance(e, SessionMessageEntry)
            and isinstance(e.message, UserMessage)
            and e.message.content[0].text == "second"  # type: ignore[union-attr]
        )
        outcome = await session.fork(second)
        assert not outcome.cancelled and outcome.selected_text == "second"
        assert session.session_file != old_file
        assert texts(session) == ["user:first", "assistant:a1"]
        header = session.session_manager.get_header()
        assert header is not None and header.parent_session == old_file
        with pytest.raises(UsageError, match="Invalid entry ID"):
            await session.fork("missing")
    assert old_file is not None
    assert len(load_session_file(old_file).entries) == 6


async def test_tree_navigation_leaves_a_branch_summary() -> None:
    """Navigating back to the second prompt with summarize=True: the leaf moves to its parent,
    a branch summary of the abandoned path is appended there, and the next prompt sees it."""
    faux, registry = make_faux()
    summaries = Summaries("BRANCH")
    seen: list[Any] = []

    def respond(context: Any, *_: Any) -> AssistantMessage:
        seen.append(context.messages)
        return faux_assistant_message("a3")

    faux.set_responses([reply("a1"), reply("a2"), summaries, respond])
    async with open_session(faux, registry) as session:
        await session.prompt("first")
        await session.prompt("second")
        manager = session.session_manager
        user_two = [
            e
            for e in manager.get_entries()
            if isinstance(e, SessionMessageEntry) and isinstance(e.message, UserMessage)
        ][1]
        outcome = await session.navigate_tree(user_two.id, summarize=True, label="tried")
        assert outcome.editor_text == "second"
        summary = outcome.summary_entry
        assert isinstance(summary, BranchSummaryEntry)
        assert summary.parent_id == user_two.parent_id
        assert summary.summary.endswith("BRANCH 1")
        assert manager.get_label(summary.id) == "tried"
        # The target is on the old path: only what came after it is summarised (as pi).
        assert "<conversation>\n[Assistant]: a2\n</conversation>" in summaries.prompt()
        assert isinstance(session.messages[-1], BranchSummaryMessage)
        await session.prompt("third")
        last_context_user = seen[0][-2]
        assert "came back from" in last_context_user.content[0].text
        # Navigating to where we are is a no-op.
        assert (await session.navigate_tree(manager.get_leaf_id() or "")).cancelled is False


async def test_new_session_and_switching_back(tmp_path: Path) -> None:
    """new_session starts an empty session in a new file; switch_session resumes the old one."""
    faux, registry = make_faux()
    faux.set_responses([reply("a1"), reply("b1")])
    async with open_session(faux, registry, manager=file_manager(tmp_path)) as session:
        await session.prompt("first session")
        first = session.session_file
        assert await session.new_session()
        assert session.messages == ()
        assert session.session_file != first
        assert entry_types(session) == ["model_change", "thinking_level_change"]
        await session.prompt("second session")
        second = session.session_file
        assert first is not None and second is not None
        assert await session.switch_session(first)
        assert texts(session) == ["user:first session", "assistant:a1"]
        assert session.session_id == session.session_manager.get_session_id()
    assert len(load_session_file(second).entries) == 4


async def test_steering_text_is_removed_when_delivered_even_without_streaming() -> None:
    """steer() while idle queues the message; the next run delivers it and clears the queue."""
    faux, registry = make_faux()
    faux.set_responses([reply("r1"), reply("r2")])
    async with open_session(faux, registry) as session:
        await session.follow_up("queued")
        assert session.get_follow_up_messages() == ["queued"]
        await session.prompt("go")
        assert session.get_follow_up_messages() == []
        assert texts(session) == ["user:go", "assistant:r1", "user:queued", "assistant:r2"]


async def test_session_entries_use_the_managers_clock() -> None:
    """Sanity: the helper's in-memory manager stamps entries with its old clock."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        (first, *_) = session.session_manager.get_entries()
        assert first.timestamp.startswith("2001-")
    assert OLD_CLOCK_MS < 10**13


# --------------------------------------------------------------------------- hooks and options


class RecordingHooks(SessionHooks):
    """Hooks that transform input, inject a message, and provide the compaction."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def input(self, text: str, images: Any, source: str) -> InputResult | None:
        self.calls.append(f"input:{text}:{source}")
        if text == "swallow":
            return InputResult(action="handled")
        return InputResult(action="transform", text=text.upper())

    async def before_agent_start(
        self, prompt: str, images: Any, system_prompt: str
    ) -> BeforeAgentStartResult | None:
        self.calls.append(f"before_agent_start:{prompt}:{system_prompt}")
        note = CustomMessage(custom_type="ctx", content="injected", display=False, timestamp=1)
        return BeforeAgentStartResult(messages=(note,), system_prompt="EXTENDED")

    async def session_before_compact(
        self, preparation: Any, branch_entries: Any, custom_instructions: Any
    ) -> BeforeCompactResult | None:
        self.calls.append("session_before_compact")
        return BeforeCompactResult(
            compaction=CompactionResult(
                summary="from hook",
                first_kept_entry_id=preparation.first_kept_entry_id,
                tokens_before=preparation.tokens_before,
            )
        )

    async def session_compact(self, entry: CompactionEntry, from_extension: bool) -> None:
        self.calls.append(f"session_compact:{entry.summary}:{from_extension}")


async def test_hooks_shape_the_prompt_and_may_provide_the_compaction() -> None:
    """The input hook transforms or swallows input; before_agent_start adds a message and sets
    the system prompt; session_before_compact may supply the compaction (fromHook true)."""
    faux, registry = make_faux()
    requests: list[Any] = []

    def respond(context: Any, *_: Any) -> AssistantMessage:
        requests.append(context)
        return faux_assistant_message("ok")

    faux.set_responses([respond])
    hooks = RecordingHooks()
    async with open_session(faux, registry, hooks=hooks, system_prompt="BASE") as session:
        await session.prompt("swallow")
        assert faux.state.call_count == 0
        await session.prompt("hello")
        assert requests[0].system_prompt == "EXTENDED"
        assert [m.role for m in requests[0].messages] == ["user", "user"]
        assert texts(session)[:2] == ["user:HELLO", "custom"]
        result = await session.compact()
        assert result.summary == "from hook"
        entry = session.session_manager.get_entries()[-1]
        assert isinstance(entry, CompactionEntry) and entry.from_hook is True
        assert faux.state.call_count == 1  # no summary request
    assert hooks.calls == [
        "input:swallow:interactive",
        "input:hello:interactive",
        "before_agent_start:HELLO:BASE",
        "session_before_compact",
        "session_compact:from hook:True",
    ]


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        ("seed", ["auto_compaction_start", "auto_compaction_end"]),
        ("pi", ["compaction_start", "compaction_end"]),
    ],
)
async def test_compaction_event_style_selects_the_event_names(
    style: str, expected: list[str]
) -> None:
    """compaction_events="seed" emits only auto_compaction_*, "pi" only compaction_*."""
    faux, registry = make_faux(context_window=1000)
    faux.set_responses([fail(OVERFLOW), Summaries(), reply("fine")])
    settings = {"compaction": {"reserveTokens": 100}}
    async with open_session(faux, registry, settings=settings, compaction_events=style) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        assert [t for t in events.types if "compaction" in t] == expected


async def test_abort_cancels_an_automatic_compaction() -> None:
    """abort() while the overflow compaction's summary is being written: compaction_end reports
    aborted, no compaction entry is saved and no retry runs."""
    faux, registry = make_faux(context_window=1000)
    gate = trio.Event()
    faux.set_responses([fail(OVERFLOW), gated(gate, "summary never arrives"), reply("unused")])
    settings = {"compaction": {"reserveTokens": 100}}
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hello")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_compacting
            await session.abort()
        end = events.of("compaction_end")[0]
        assert end.aborted and end.result is None and not end.will_retry
        assert "compaction" not in entry_types(session)
        assert faux.state.call_count == 2
        assert not session.is_compacting and not session.is_streaming


async def test_send_user_message_prompts_or_queues_as_an_extension() -> None:
    """send_user_message prompts with source "extension" when idle and queues with deliver_as
    while streaming; text blocks are joined with newlines."""
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([gated(gate, "first"), reply("second")])
    hooks = SourceHooks()
    async with open_session(faux, registry, hooks=hooks) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                session.send_user_message, [TextContent(text="a"), TextContent(text="b")]
            )
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(UsageError):
                await session.send_user_message("no mode")
            await session.send_user_message("queued", deliver_as="follow_up")
            gate.set()
        assert texts(session) == ["user:a\nb", "assistant:first", "user:queued", "assistant:second"]
    assert hooks.sources == ["extension", "extension", "extension"]


class SourceHooks(SessionHooks):
    def __init__(self) -> None:
        self.sources: list[str] = []

    async def input(self, text: str, images: Any, source: str) -> InputResult | None:
        self.sources.append(source)
        return None


class AgentEventHooks(SessionHooks):
    """Hooks that only observe agent events."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def on_agent_event(self, event: Any) -> None:
        self.seen.append(event)


async def test_on_agent_event_hook_sees_every_agent_event_before_the_listeners() -> None:
    """A hook overriding on_agent_event gets every agent event, message_update included, in
    order, each before the session's listeners see it."""
    faux, registry = make_faux()
    faux.set_responses([reply("a streamed answer of several chunks")])
    hooks = AgentEventHooks()
    async with open_session(faux, registry, hooks=hooks) as session:
        order: list[tuple[str, int]] = []
        session.subscribe(lambda event: order.append((event.type, len(hooks.seen))))
        await session.prompt("hello")
    agent_types = [e.type for e in hooks.seen]
    assert agent_types.count("message_update") >= 3
    listened = [(kind, seen) for kind, seen in order if kind in set(agent_types)]
    assert [kind for kind, _ in listened] == agent_types
    # The n-th agent event reached the listener after the hook had seen n events.
    assert [seen for _, seen in listened] == list(range(1, len(agent_types) + 1))


async def test_a_plain_turns_events_are_passed_on_without_the_bookkeeping_coroutine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no hook, no queued text, no context engine and no retry under way, the session
    hands each agent event to its log in the agent's own publish call (no coroutine to await
    per event); the bookkeeping path still runs for the event that needs it: the start of a
    user message whose text was queued, which updates the queues."""
    seen: list[str] = []
    original = SessionActor._on_agent_event

    def spy(self: SessionActor, event: Any) -> Any:
        seen.append(event.type)
        return original(self, event)

    monkeypatch.setattr(SessionActor, "_on_agent_event", spy)
    faux, registry = make_faux()
    gate = trio.Event()
    faux.set_responses([reply("plain"), gated(gate, "first"), reply("to steer")])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hello")
        assert seen == []
        assert events.types[0] == "agent_start" and events.types[-1] == "agent_end"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "start")
            await trio.testing.wait_all_tasks_blocked()
            await session.prompt("now", streaming_behavior="steer")
            gate.set()
        assert seen == ["message_start"]  # the steered text's user message
        queues = [(e.steering, e.follow_up) for e in events.of("queue_update")]
        assert queues == [(("now",), ()), ((), ())]
        assert texts(session)[-4:] == [
            "user:start",
            "assistant:first",
            "user:now",
            "assistant:to steer",
        ]


async def test_a_sessions_request_is_prepared_in_a_scheduler_step_of_its_own() -> None:
    """The session's prepare_request is a checkpoint even when no envelope is needed: with
    many sessions starting a prompt at once, building their requests is a pass of its own,
    not part of the pass that opened their runs and recorded their prompts."""
    faux, registry = make_faux()
    async with open_session(faux, registry) as session:
        prepare = session._actor.agent.prepare_request
        assert prepare is not None
        draft = RequestDraft(
            system_prompt="system",
            tools=(),
            messages=(UserMessage(content="hi", timestamp=1),),
            options=StreamOptions(),
            turn_index=0,
            request_index=0,
        )
        with trio.testing.assert_checkpoints():
            prepared = await prepare(draft)
        assert prepared is draft
