"""Branch summarisation: keep what was learnt on a branch the user navigates away from.

When tree navigation leaves a branch, the entries from the old leaf back to the deepest entry
it shares with the target (:func:`collect_entries_for_branch_summary`) can be summarised by the
model; the summary becomes a ``branch_summary`` entry where the conversation continues.
Messages are taken newest first within a token budget (:func:`prepare_branch_entries`); files
read and modified on the branch, and on branches summarised inside it, are tracked as for
compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from pitrio.actors import AgentMessage
from pitrio.providers import Context, Model, StreamOptions, TextContent, UserMessage, now_ms
from pitrio.sessions.compaction._compaction import (
    CompleteFn,
    default_complete,
    estimate_tokens,
    message_from_entry,
)
from pitrio.sessions.compaction._compaction_prompts import (
    ADDITIONAL_FOCUS,
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
)
from pitrio.sessions.compaction._compaction_utils import (
    FileOperations,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    serialize_conversation,
)
from pitrio.sessions.context._messages import convert_to_llm
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    SessionEntry,
    SessionMessageEntry,
)
from pitrio.sessions.storage._manager import SessionManager

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "DEFAULT_CONTEXT_WINDOW",
    "NO_CONTENT_TO_SUMMARIZE",
    "BranchEntries",
    "BranchSummaryResult",
    "collect_entries_for_branch_summary",
    "generate_branch_summary",
    "prepare_branch_entries",
]

BRANCH_SUMMARY_MAX_TOKENS: Final = 2048
"""``maxTokens`` of a branch summary request (pi's value)."""
DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""Context window assumed for a model that declares none."""
SUMMARY_FIT_RATIO: Final = 0.9
"""An older summary still goes in over budget while the budget is less than 90% used."""
NO_CONTENT_TO_SUMMARIZE: Final = "No content to summarize"
NO_SUMMARY_GENERATED: Final = "No summary generated"


def collect_entries_for_branch_summary(
    session: SessionManager, old_leaf_id: str | None, target_id: str
) -> tuple[list[SessionEntry], str | None]:
    """Return the entries left behind when moving from ``old_leaf_id`` to ``target_id``.

    Returns:
        The entries from just below the deepest common ancestor down to the old leaf (oldest
        first; compactions included, their summaries become context), and that ancestor's id
        (``None`` when the two share nothing).
    """
    if not old_leaf_id:
        return [], None
    old_path = {entry.id for entry in session.get_branch(old_leaf_id)}
    common: str | None = None
    for entry in reversed(session.get_branch(target_id)):
        if entry.id in old_path:
            common = entry.id
            break
    entries: list[SessionEntry] = []
    current: str | None = old_leaf_id
    while current and current != common:
        found = session.get_entry(current)
        if found is None:
            break
        entries.append(found)
        current = found.parent_id
    entries.reverse()
    return entries, common


def _branch_message(entry: SessionEntry) -> AgentMessage | None:
    # A tool result adds little to a summary: the assistant's tool call already says what ran.
    if isinstance(entry, SessionMessageEntry) and entry.message.role == "toolResult":
        return None
    return message_from_entry(entry)


@attrs.frozen
class BranchEntries:
    """The messages of a branch that fit a token budget, and the files it touched."""

    messages: list[AgentMessage]
    file_ops: FileOperations
    total_tokens: int


def prepare_branch_entries(entries: Sequence[SessionEntry], token_budget: int = 0) -> BranchEntries:
    """Pick the newest messages of ``entries`` (oldest first) that fit ``token_budget``.

    Files are collected from every entry, even those over budget: from assistant tool calls
    and from the ``details`` of branch summaries written by pitrio or pi (not by extensions).
    A compaction or branch summary that no longer fits is still taken while less than 90% of
    the budget is used. ``token_budget`` 0 means no limit.
    """
    ops = FileOperations()
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not entry.from_hook:
            ops.add_details(entry.details)
    picked: list[AgentMessage] = []
    total = 0
    for entry in reversed(entries):
        message = _branch_message(entry)
        if message is None:
            continue
        extract_file_ops_from_message(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            important = isinstance(entry, CompactionEntry | BranchSummaryEntry)
            if important and total < token_budget * SUMMARY_FIT_RATIO:
                picked.append(message)
                total += tokens
            break
        picked.append(message)
        total += tokens
    picked.reverse()
    return BranchEntries(picked, ops, total)


@attrs.frozen(kw_only=True)
class BranchSummaryResult:
    """The outcome of :func:`generate_branch_summary`: a summary, an abort, or an error."""

    summary: str | None = None
    read_files: list[str] = attrs.field(factory=list)
    modified_files: list[str] = attrs.field(factory=list)
    aborted: bool = False
    error: str | None = None


async def generate_branch_summary(
    entries: Sequence[SessionEntry],
    model: Model,
    complete: CompleteFn = default_complete,
    *,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
) -> BranchSummaryResult:
    """Have ``model`` summarise the abandoned ``entries`` (oldest first).

    Args:
        reserve_tokens: kept free of the context window; the rest is the message budget.
        custom_instructions: added to the prompt, or replacing it with
            ``replace_instructions``.

    Returns:
        The summary (with the branch preamble and the file lists), ``aborted`` when the
        model's response was aborted, or ``error`` with the model's error message.
    """
    budget = (model.context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens
    prepared = prepare_branch_entries(entries, budget)
    if not prepared.messages:
        return BranchSummaryResult(summary=NO_CONTENT_TO_SUMMARIZE)
    conversation = serialize_conversation(convert_to_llm(prepared.messages))
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = BRANCH_SUMMARY_PROMPT + ADDITIONAL_FOCUS + custom_instructions
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"
    request = Context(
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        messages=[UserMessage(content=[TextContent(text=prompt)], timestamp=now_ms())],
    )
    options = StreamOptions(max_tokens=BRANCH_SUMMARY_MAX_TOKENS, api_key=api_key, headers=headers)
    response = await complete(model, request, options)
    if response.stop_reason == "aborted":
        return BranchSummaryResult(aborted=True)
    if response.stop_reason == "error":
        return BranchSummaryResult(error=response.error_message or "Summarization failed")
    text = "\n".join(b.text for b in response.content if isinstance(b, TextContent))
    read_files, modified_files = compute_file_lists(prepared.file_ops)
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
    return BranchSummaryResult(
        summary=summary or NO_SUMMARY_GENERATED,
        read_files=read_files,
        modified_files=modified_files,
    )
