"""build_session_context turns the path to the leaf into LLM messages (seed 002 s.4.1-4.6)."""

from __future__ import annotations

import pytest
from session_script import Messages, counter_ids, step_clock

from pitrio.providers import AssistantMessage, UserMessage
from pitrio.sessions import (
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContextModel,
    CustomMessage,
    ModelChangeEntry,
    SessionContext,
    SessionManager,
    SessionTreeCycle,
    build_session_context,
    get_latest_compaction_entry,
    timestamp_ms,
)

T = 1735689600000


def new_session() -> tuple[SessionManager, Messages]:
    sm = SessionManager.in_memory("/p", clock=step_clock(T), new_id=counter_ids())
    return sm, Messages(0)


def texts(context: SessionContext) -> list[str]:
    out = []
    for message in context.messages:
        if isinstance(message, UserMessage):
            assert isinstance(message.content, str)
            out.append(message.content)
        elif isinstance(message, AssistantMessage):
            out.append(message.text())
        elif isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            out.append(f"<{message.summary}>")
        elif isinstance(message, CustomMessage):
            out.append(f"custom:{message.content}")
    return out


def test_empty_session_has_empty_context() -> None:
    """No entries: no messages, thinking off, no model."""
    sm, _ = new_session()
    assert sm.build_session_context() == SessionContext(
        messages=[], thinking_level="off", model=None
    )


def test_reset_leaf_gives_empty_context() -> None:
    """A leaf before the first entry builds an empty context, even with entries present."""
    sm, m = new_session()
    sm.append_message(m.user("hi"))
    sm.reset_leaf()
    assert sm.build_session_context().messages == []


def test_unknown_leaf_falls_back_to_last_entry() -> None:
    """A leaf id that does not exist builds the context of the last entry."""
    sm, m = new_session()
    sm.append_message(m.user("a"))
    sm.append_message(m.assistant("b"))
    context = build_session_context(sm.get_entries(), "nope")
    assert texts(context) == ["a", "b"]


def test_only_the_path_to_the_leaf_is_in_context() -> None:
    """Entries on other branches are left out; branching back changes the context."""
    sm, m = new_session()
    sm.append_message(m.user("q"))
    a1 = sm.append_message(m.assistant("a1"))
    sm.append_message(m.user("branch one"))
    sm.branch(a1)
    sm.append_message(m.user("branch two"))
    assert texts(sm.build_session_context()) == ["q", "a1", "branch two"]


def test_compaction_keeps_entries_from_first_kept_entry() -> None:
    """Summary first, then the kept entries before the compaction, then what follows it."""
    sm, m = new_session()
    sm.append_thinking_level_change("high")
    sm.append_model_change("anthropic", "claude")
    sm.append_message(m.user("u1"))
    sm.append_message(m.assistant("a1"))
    u2 = sm.append_message(m.user("u2"))
    sm.append_message(m.assistant("a2"))
    compaction_id = sm.append_compaction("summary", u2, 1234)
    sm.append_message(m.user("u3"))
    context = sm.build_session_context()
    assert texts(context) == ["<summary>", "u2", "a2", "u3"]
    summary = context.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.tokens_before == 1234
    compaction = sm.get_entry(compaction_id)
    assert compaction is not None
    assert summary.timestamp == timestamp_ms(compaction.timestamp)
    assert context.thinking_level == "high"
    assert context.model == ContextModel(provider="anthropic", model_id="claude-sonnet-4-5")


def test_latest_compaction_on_the_path_wins() -> None:
    """With two compactions on the path only the later one's summary and kept entries count."""
    sm, m = new_session()
    u1 = sm.append_message(m.user("u1"))
    sm.append_compaction("first", u1, 1)
    u2 = sm.append_message(m.user("u2"))
    sm.append_message(m.user("u3"))
    second = sm.append_compaction("second", u2, 2)
    sm.append_message(m.user("u4"))
    assert texts(sm.build_session_context()) == ["<second>", "u2", "u3", "u4"]
    latest = get_latest_compaction_entry(sm.get_entries())
    assert latest is not None and latest.id == second


def test_first_kept_entry_on_another_branch_keeps_nothing() -> None:
    """If firstKeptEntryId is not on the path, only the summary and later entries remain."""
    sm, m = new_session()
    a = sm.append_message(m.user("a"))
    other = sm.append_message(m.user("other branch"))
    sm.branch(a)
    sm.append_message(m.user("b"))
    sm.append_compaction("s", other, 5)
    sm.append_message(m.user("c"))
    assert texts(sm.build_session_context()) == ["<s>", "c"]


def test_branch_summaries_become_messages_unless_empty() -> None:
    """Branch summaries are context messages; an empty summary is left out."""
    sm, m = new_session()
    u1 = sm.append_message(m.user("u1"))
    sm.append_message(m.user("abandoned"))
    sm.branch_with_summary(u1, "what happened there")
    sm.branch_with_summary(u1, "")
    sm.append_message(m.user("after empty"))
    assert texts(sm.build_session_context()) == ["u1", "after empty"]
    sm.branch_with_summary(u1, "what happened there")
    context = sm.build_session_context()
    assert texts(context) == ["u1", "<what happened there>"]
    summary = context.messages[-1]
    assert isinstance(summary, BranchSummaryMessage) and summary.from_id == u1


def test_branch_summary_from_root() -> None:
    """A summary branched from before the first entry is a root with fromId "root"."""
    sm, m = new_session()
    sm.append_message(m.user("u1"))
    entry_id = sm.branch_with_summary(None, "from the top")
    entry = sm.get_entry(entry_id)
    assert entry is not None and entry.parent_id is None
    context = sm.build_session_context()
    assert isinstance(context.messages[0], BranchSummaryMessage)
    assert context.messages[0].from_id == "root"


def test_custom_messages_in_context_other_entries_not() -> None:
    """custom_message entries become custom messages; custom, label and info entries do not."""
    sm, m = new_session()
    u1 = sm.append_message(m.user("u1"))
    sm.append_custom_entry("ext", {"state": 1})
    entry_id = sm.append_custom_message_entry("ext", "injected", True, {"d": 1})
    sm.append_label_change(u1, "bookmark")
    sm.append_session_info("name")
    context = sm.build_session_context()
    assert texts(context) == ["u1", "custom:injected"]
    custom = context.messages[1]
    entry = sm.get_entry(entry_id)
    assert isinstance(custom, CustomMessage) and entry is not None
    assert (custom.custom_type, custom.display, custom.details) == ("ext", True, {"d": 1})
    assert custom.timestamp == timestamp_ms(entry.timestamp)


def test_model_follows_the_path_order() -> None:
    """The model is the latest model change or assistant message on the path."""
    sm, m = new_session()
    sm.append_model_change("openai", "gpt-4o")
    assert sm.build_session_context().model == ContextModel(provider="openai", model_id="gpt-4o")
    sm.append_message(m.assistant("a"))
    assert sm.build_session_context().model == ContextModel(
        provider="anthropic", model_id="claude-sonnet-4-5"
    )
    sm.append_model_change("google", "gemini")
    assert sm.build_session_context().model == ContextModel(provider="google", model_id="gemini")


def test_thinking_level_restores_latest_on_path() -> None:
    """The thinking level is the last change on the path, else "off"."""
    sm, _ = new_session()
    first = sm.append_thinking_level_change("low")
    sm.append_thinking_level_change("high")
    assert sm.build_session_context().thinking_level == "high"
    sm.branch(first)
    assert sm.build_session_context().thinking_level == "low"


def test_parent_cycle_is_an_error_not_a_hang() -> None:
    """A damaged file whose parentId links loop raises SessionTreeCycle."""
    a = ModelChangeEntry(id="a", parent_id="b", timestamp="t", provider="p", model_id="m")
    b = ModelChangeEntry(id="b", parent_id="a", timestamp="t", provider="p", model_id="m")
    with pytest.raises(SessionTreeCycle, match="cycle"):
        build_session_context([a, b], "b")
