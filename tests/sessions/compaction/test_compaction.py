"""Compaction and branch summarisation as pure functions: token estimates, cut points, split
turns, preparation, the summary requests, file tracking (docs/compaction.md)."""

from __future__ import annotations

from typing import Any

import pytest

from pitrio.providers import (
    AssistantMessage,
    Cost,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    faux_assistant_message,
    is_context_overflow,
)
from pitrio.sessions import (
    BashExecutionMessage,
    CompactionSummaryMessage,
    CustomMessage,
    SessionManager,
)
from pitrio.sessions.compaction._compaction import (
    CompactionError,
    compact,
    effective_reserve,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    prepare_compaction,
    should_compact,
)
from pitrio.sessions.compaction._compaction_branch import (
    collect_entries_for_branch_summary,
    generate_branch_summary,
    prepare_branch_entries,
)
from pitrio.sessions.compaction._compaction_prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    SUMMARIZATION_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pitrio.sessions.compaction._compaction_utils import serialize_conversation
from pitrio.sessions.settings._settings import CompactionSettings

from session_helpers import (
    OLD_CLOCK_MS,
    Events,
    Summaries,
    fail,
    make_faux,
    model_of,
    open_session,
    reply,
)


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1)


def assistant(text: str = "", *calls: ToolCall, tokens: int = 0) -> AssistantMessage:
    message = faux_assistant_message(
        [TextContent(text=text), *calls], stop_reason="toolUse" if calls else "stop"
    )
    return AssistantMessage(
        content=message.content,
        api="faux",
        provider="faux",
        model="faux-1",
        usage=Usage(input=tokens, total_tokens=tokens, cost=Cost()),
        stop_reason=message.stop_reason,
        timestamp=2,
    )


def result(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text=text)],
        is_error=False,
        timestamp=3,
    )


def call(name: str, path: str, id: str = "c1") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"path": path})


def manager() -> SessionManager:
    return SessionManager.in_memory("/p", clock=lambda: OLD_CLOCK_MS)


SETTINGS = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=100)


# --------------------------------------------------------------------------- token accounting


def test_estimate_tokens_counts_characters_over_four_per_kind() -> None:
    """Each message kind counts the characters pi counts, divided by 4 and rounded up."""
    assert estimate_tokens(user("x" * 9)) == 3
    assert estimate_tokens(UserMessage(content="abcd", timestamp=1)) == 1
    tool = ToolCall(id="1", name="read", arguments={"path": "a"})  # 4 + len('{"path":"a"}')
    assert estimate_tokens(assistant("12345678", tool)) == 6
    image = ImageContent(data="x" * 10, mime_type="image/png")
    custom = CustomMessage(
        custom_type="t", content=[TextContent(text="abcd"), image], display=True, timestamp=1
    )
    assert estimate_tokens(custom) == (4 + 4800) // 4
    bash = BashExecutionMessage(
        command="ls", output="123456", cancelled=False, truncated=False, timestamp=1
    )
    assert estimate_tokens(bash) == 2
    assert (
        estimate_tokens(CompactionSummaryMessage(summary="x" * 5, tokens_before=0, timestamp=1))
        == 2
    )
    # Non-ASCII counts UTF-16 code units, as JavaScript's length does.
    assert estimate_tokens(user("\U0001f600\U0001f600")) == 1


def test_context_tokens_use_the_last_usage_plus_estimates_after_it() -> None:
    """The last successful response's usage counts, plus estimates of what followed; errors and
    aborted responses carry no usage."""
    messages: list[Any] = [user("a" * 400), assistant("b", tokens=500), user("c" * 40)]
    failed = faux_assistant_message([], stop_reason="error", error_message="boom")
    messages.append(failed)
    estimate = estimate_context_tokens(messages)
    assert estimate.usage_tokens == 500
    assert estimate.trailing_tokens == 10
    assert estimate.tokens == 510
    assert estimate.last_usage_index == 1
    assert estimate_context_tokens([user("a" * 400)]).last_usage_index is None


def test_should_compact_when_context_exceeds_window_minus_reserve() -> None:
    """contextTokens > contextWindow - reserveTokens, and only when enabled."""
    settings = CompactionSettings(reserve_tokens=100)
    assert should_compact(901, 1000, settings)
    assert not should_compact(900, 1000, settings)
    assert not should_compact(10_000, 1000, CompactionSettings(enabled=False))


def test_the_reserve_is_clamped_to_a_quarter_of_a_small_window() -> None:
    """reserve = min(reserveTokens, window // 4): an 8k model compacts only past 6,144 tokens,
    a 128k model exactly as pi (past window - 16,384), an unknown window never."""
    default = CompactionSettings()
    assert effective_reserve(8192, 16384) == 2048
    assert effective_reserve(32_768, 16384) == 8192
    assert effective_reserve(65_536, 16384) == 16384
    assert effective_reserve(200_000, 16384) == 16384
    assert not should_compact(3000, 8192, default)
    assert not should_compact(6144, 8192, default)
    assert should_compact(6145, 8192, default)
    assert not should_compact(128_000 - 16384, 128_000, default)
    assert should_compact(128_000 - 16384 + 1, 128_000, default)
    assert not should_compact(10**9, 0, default)


async def test_an_8k_model_does_not_compact_after_every_turn() -> None:
    """With the default reserve, short turns on an 8,192-token model never compact."""
    faux, registry = make_faux(context_window=8192)
    faux.set_responses([reply("one"), reply("two"), reply("three")])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        for prompt in ("hello", "and again", "once more"):
            await session.prompt(prompt)
    assert [t for t in events.types if "compaction" in t] == []
    assert faux.state.call_count == 3


# --------------------------------------------------------------------------- cut points


def test_cut_point_never_separates_a_tool_result_from_its_call() -> None:
    """When the budget is reached at a tool result, the cut moves to the next valid point, so
    the kept part never starts with a tool result."""
    m = manager()
    m.append_message(user("first question"))
    tc = call("read", "a.py")
    m.append_message(assistant("let me look", tc))
    m.append_message(result(tc, "x" * 2000))  # 500 tokens: reaches the budget alone
    m.append_message(assistant("done"))
    m.append_message(user("second"))
    entries = m.get_branch()
    cut = find_cut_point(entries, 0, len(entries), keep_recent_tokens=400)
    kept = entries[cut.first_kept_entry_index]
    assert getattr(kept, "message", None) is not None
    assert kept.message.role != "toolResult"  # type: ignore[union-attr]
    assert cut.first_kept_entry_index == 3  # the assistant after the big result


def test_cut_point_inside_a_turn_is_a_split_turn() -> None:
    """A turn larger than keepRecentTokens is cut at an assistant message: split turn, with the
    turn's user message as its start."""
    m = manager()
    m.append_message(user("old"))
    m.append_message(assistant("old answer"))
    turn_start = len(m.get_entries())
    m.append_message(user("big task"))
    for i in range(4):
        tc = call("edit", f"f{i}.py", id=f"c{i}")
        m.append_message(assistant("step " + "y" * 400, tc))
        m.append_message(result(tc, "ok"))
    entries = m.get_branch()
    cut = find_cut_point(entries, 0, len(entries), keep_recent_tokens=150)
    assert cut.is_split_turn
    assert cut.turn_start_index == turn_start
    assert entries[cut.first_kept_entry_index].message.role == "assistant"  # type: ignore[union-attr]


def test_cut_point_takes_preceding_settings_entries_along() -> None:
    """Model and thinking changes just before the cut stay with the kept messages."""
    m = manager()
    m.append_message(user("a" * 800))
    m.append_message(assistant("b" * 800))
    m.append_model_change("faux", "other")
    m.append_thinking_level_change("high")
    m.append_message(user("c" * 800))
    m.append_message(assistant("d" * 800))
    entries = m.get_branch()
    cut = find_cut_point(entries, 0, len(entries), keep_recent_tokens=300)
    assert entries[cut.first_kept_entry_index].type == "model_change"


def test_prepare_compaction_summarises_from_the_previous_kept_boundary() -> None:
    """A second compaction summarises from the first one's first kept entry, passes the old
    summary for updating, and carries its file lists over."""
    m = manager()
    m.append_message(user("u1 " + "a" * 800))
    first_kept = m.append_message(user("u2 " + "b" * 800))
    tc = call("write", "new.py")
    m.append_message(assistant("writing", tc))
    m.append_message(result(tc, "written"))
    m.append_compaction(
        "old summary", first_kept, 999, {"readFiles": ["r.py"], "modifiedFiles": []}
    )
    m.append_message(user("u3 " + "c" * 800))
    m.append_message(assistant("e" * 800))
    preparation = prepare_compaction(m.get_branch(), SETTINGS)
    assert preparation is not None
    assert preparation.previous_summary == "old summary"
    texts = [
        serialize_conversation([msg])
        for msg in preparation.messages_to_summarize
        if isinstance(msg, UserMessage)
    ]
    assert texts[0].startswith("[User]: u2")  # from the kept boundary, not u1
    assert all("u1" not in t for t in texts)
    assert sorted(preparation.file_ops.read) == ["r.py"]
    assert sorted(preparation.file_ops.written) == ["new.py"]
    assert preparation.first_kept_entry_id == m.get_branch()[-1].id


def test_prepare_compaction_refuses_right_after_a_compaction() -> None:
    """Nothing to prepare when the branch ends with a compaction."""
    m = manager()
    first = m.append_message(user("hi"))
    m.append_compaction("s", first, 1)
    assert prepare_compaction(m.get_branch(), SETTINGS) is None


# --------------------------------------------------------------------------- summaries


async def test_compact_asks_the_model_with_the_conversation_and_appends_file_lists() -> None:
    """The summary request serialises the conversation in <conversation> tags after pi's system
    prompt; the result carries the file lists in the text and in details."""
    faux, registry = make_faux()
    summaries = Summaries()
    faux.set_responses([summaries])
    m = manager()
    m.append_message(user("please read " + "a" * 900))
    tc = call("read", "src/a.py")
    m.append_message(assistant("reading", tc))
    m.append_message(result(tc, "contents " + "z" * 3000))
    m.append_message(user("now the rest " + "b" * 900))
    m.append_message(assistant("fine"))
    preparation = prepare_compaction(m.get_branch(), SETTINGS)
    assert preparation is not None and not preparation.is_split_turn

    async def complete(model: Any, context: Any, options: Any) -> AssistantMessage:
        assert options.max_tokens == 800  # 0.8 * reserveTokens
        from pitrio.providers import complete_simple

        return await complete_simple(model, context, options, registry=registry)

    outcome = await compact(
        preparation, model_of(faux), complete, custom_instructions="focus on tests"
    )
    prompt = summaries.prompt()
    assert prompt.startswith("<conversation>\n[User]: please read")
    assert '[Assistant tool calls]: read(path="src/a.py")' in prompt
    assert "more characters truncated]" in prompt  # tool results cut to 2000 characters
    assert prompt.endswith(SUMMARIZATION_PROMPT + "\n\nAdditional focus: focus on tests")
    assert outcome.summary == "SUMMARY 1\n\n<read-files>\nsrc/a.py\n</read-files>"
    assert outcome.details == {"readFiles": ["src/a.py"], "modifiedFiles": []}
    assert outcome.first_kept_entry_id == preparation.first_kept_entry_id
    assert outcome.tokens_before == preparation.tokens_before


async def test_split_turn_gets_two_summaries_joined() -> None:
    """A split turn: the history summary (updating the previous one) and the turn-prefix
    summary, joined by pi's separator."""
    faux, registry = make_faux()
    summaries = Summaries()
    faux.set_responses([summaries, summaries])
    m = manager()
    kept = m.append_message(user("earlier " + "a" * 400))
    m.append_compaction("previous", kept, 5)
    m.append_message(assistant("answer " + "b" * 400))
    m.append_message(user("huge turn"))
    for i in range(3):
        tc = call("edit", f"x{i}.py", id=f"c{i}")
        m.append_message(assistant("s" * 600, tc))
        m.append_message(result(tc, "ok"))
    preparation = prepare_compaction(m.get_branch(), SETTINGS)
    assert preparation is not None and preparation.is_split_turn

    async def complete(model: Any, context: Any, options: Any) -> AssistantMessage:
        from pitrio.providers import complete_simple

        return await complete_simple(model, context, options, registry=registry)

    outcome = await compact(preparation, model_of(faux), complete)
    prompts = {summaries.prompt(0), summaries.prompt(1)}
    update = next(p for p in prompts if p.endswith(UPDATE_SUMMARIZATION_PROMPT))
    assert "<previous-summary>\nprevious\n</previous-summary>" in update
    assert any(p.endswith(TURN_PREFIX_SUMMARIZATION_PROMPT) for p in prompts)
    history, _, rest = outcome.summary.partition("\n\n---\n\n**Turn Context (split turn):**\n\n")
    assert {history, rest.split("\n\n<modified-files>")[0]} == {"SUMMARY 1", "SUMMARY 2"}
    # Files of the summarised prefix only: x2.py's edit is in the kept suffix.
    assert outcome.summary.endswith("\n\n<modified-files>\nx0.py\nx1.py\n</modified-files>")


async def test_a_failed_summary_request_raises() -> None:
    """An error response from the summarising model is a CompactionError with its message."""
    faux, registry = make_faux()
    faux.set_responses([fail("quota exceeded")])
    m = manager()
    m.append_message(user("a" * 900))
    m.append_message(assistant("b" * 900))
    m.append_message(user("c" * 900))
    preparation = prepare_compaction(m.get_branch(), SETTINGS)
    assert preparation is not None

    async def complete(model: Any, context: Any, options: Any) -> AssistantMessage:
        from pitrio.providers import complete_simple

        return await complete_simple(model, context, options, registry=registry)

    with pytest.raises(CompactionError, match="Summarization failed: quota exceeded"):
        await compact(preparation, model_of(faux), complete)


def test_context_overflow_is_recognised_from_errors_and_usage() -> None:
    """Provider overflow texts, silent overflow by usage, and rate limits that are not overflow."""

    def error(text: str) -> AssistantMessage:
        return faux_assistant_message([], stop_reason="error", error_message=text)

    assert is_context_overflow(error("prompt is too long: 213462 tokens > 200000 maximum"))
    assert is_context_overflow(error("Your input exceeds the context window of this model"))
    assert not is_context_overflow(error("ThrottlingException: Too many tokens, rate limit"))
    assert not is_context_overflow(error("overloaded"))
    silent = AssistantMessage(
        content=(),
        api="a",
        provider="p",
        model="m",
        usage=Usage(input=1100, cost=Cost()),
        stop_reason="stop",
        timestamp=1,
    )
    assert is_context_overflow(silent, 1000)
    assert not is_context_overflow(silent, 2000)


# --------------------------------------------------------------------------- branch summaries


def test_branch_entries_are_collected_back_to_the_common_ancestor() -> None:
    """Leaving a branch collects the entries from the old leaf back to the shared ancestor."""
    m = manager()
    root = m.append_message(user("root"))
    answer = m.append_message(assistant("answer"))
    b1 = m.append_message(user("branch one"))
    b2 = m.append_message(assistant("branch one answer"))
    m.branch(root)
    other = m.append_message(user("branch two"))
    entries, common = collect_entries_for_branch_summary(m, b2, other)
    assert common == root
    assert [e.id for e in entries] == [answer, b1, b2]
    assert collect_entries_for_branch_summary(m, None, other) == ([], None)


def test_branch_entries_keep_the_newest_messages_within_budget_and_track_files() -> None:
    """Newest first within the budget, tool results skipped, files from all entries counted."""
    m = manager()
    m.append_message(user("old " + "a" * 4000))
    tc = call("edit", "e.py")
    m.append_message(assistant("editing", tc))
    m.append_message(result(tc, "done"))
    m.branch_with_summary(m.get_leaf_id(), "nested", {"readFiles": ["n.py"], "modifiedFiles": []})
    m.append_message(user("new"))
    entries = m.get_branch()
    prepared = prepare_branch_entries(entries, token_budget=100)
    roles = [msg.role for msg in prepared.messages]
    assert roles == ["assistant", "branchSummary", "user"]  # the old user message is over budget
    assert sorted(prepared.file_ops.edited) == ["e.py"]
    assert sorted(prepared.file_ops.read) == ["n.py"]
    assert len(prepare_branch_entries(entries).messages) == 4  # no budget: all but the tool result


async def test_branch_summary_prepends_the_preamble() -> None:
    """The generated branch summary starts with pi's preamble and ends with the file lists."""
    faux, registry = make_faux()
    summaries = Summaries("BRANCH")
    faux.set_responses([summaries])
    m = manager()
    m.append_message(user("try something"))
    tc = call("read", "r.py")
    m.append_message(assistant("reading", tc))

    async def complete(model: Any, context: Any, options: Any) -> AssistantMessage:
        assert options.max_tokens == 2048
        from pitrio.providers import complete_simple

        return await complete_simple(model, context, options, registry=registry)

    outcome = await generate_branch_summary(
        m.get_branch(),
        model_of(faux),
        complete,
        custom_instructions="only decisions",
        replace_instructions=True,
    )
    assert (
        outcome.summary == BRANCH_SUMMARY_PREAMBLE + "BRANCH 1\n\n<read-files>\nr.py\n</read-files>"
    )
    assert outcome.read_files == ["r.py"]
    assert summaries.prompt().endswith("</conversation>\n\nonly decisions")
