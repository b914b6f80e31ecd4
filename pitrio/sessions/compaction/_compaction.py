"""Compaction: summarise old history so a long session fits the context window (seed 002 s.8).

Kept in one module: cut point, summary and the entry it writes are one algorithm
(seed 002 s.8).

The pieces, as pi 0.73.1 (docs/compaction.md):

* **Token accounting.** :func:`estimate_tokens` counts characters / 4 (rounded up) per message;
  :func:`estimate_context_tokens` takes the usage of the last successful assistant response and
  adds estimates for the messages after it.
* **Triggers** (the :class:`~pitrio.sessions.AgentSession` checks them after each run):
  *threshold*, ``contextTokens > contextWindow - reserve`` (:func:`should_compact`), where
  the reserve is ``reserveTokens`` clamped to a quarter of the window (:func:`effective_reserve`)
  so a small local model is not compacted after every turn;
  *overflow*, the model rejected the request as too long (then the session compacts and
  retries once).
* **Cut point** (:func:`find_cut_point`): walk back from the newest message until
  ``keepRecentTokens`` are accumulated and cut at the nearest user, assistant, bash, custom or
  summary message at or after that point, never at a tool result, so a tool call keeps its
  result. A cut inside a turn is a *split turn*: the turn's beginning is summarised apart.
* **Preparation** (:func:`prepare_compaction`): what to summarise (from the previous
  compaction's kept boundary to the cut), the previous summary to update, the files touched.
* **Summary** (:func:`compact`): the model writes it with the prompts of
  :mod:`~pitrio.sessions.compaction._compaction_prompts`; split turns get two summaries joined; the
  file lists are appended and kept in ``details`` (``readFiles``, ``modifiedFiles``).

Everything here is a pure function of the entries except the summarising LLM call, which goes
through a :data:`CompleteFn` so the session decides which provider registry and key it uses.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from pitrio.actors import AgentMessage
from pitrio.channels import open_body_nursery
from pitrio.codec import extra_field, wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelThinkingLevel,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    complete_simple,
    now_ms,
)
from pitrio.sessions.compaction._compaction_prompts import (
    ADDITIONAL_FOCUS,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pitrio.sessions.compaction._compaction_utils import (
    FileOperations,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    serialize_conversation,
)
from pitrio.sessions.context._messages import convert_to_llm
from pitrio.sessions.settings._settings import CompactionSettings
from pitrio.sessions.storage._context import build_session_context
from pitrio.sessions.storage._entries import (
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    CustomMessageEntry,
    SessionEntry,
    SessionError,
    SessionMessageEntry,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
)

__all__ = [
    "IMAGE_CHARS",
    "RESERVE_WINDOW_DIVISOR",
    "AutoCompactionEndEvent",
    "AutoCompactionStartEvent",
    "CompactionEndEvent",
    "CompactionError",
    "CompactionPreparation",
    "CompactionReason",
    "CompactionResult",
    "CompactionStartEvent",
    "CompleteFn",
    "ContextTokenEstimate",
    "CutPoint",
    "calculate_context_tokens",
    "compact",
    "default_complete",
    "effective_reserve",
    "estimate_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "find_turn_start_index",
    "generate_summary",
    "get_last_assistant_usage",
    "message_from_entry",
    "prepare_compaction",
    "should_compact",
]

IMAGE_CHARS: Final = 4800
"""Characters an image counts for in a token estimate (1200 tokens)."""
SUMMARY_BUDGET: Final = 0.8
"""Share of ``reserveTokens`` the history summary may use as ``maxTokens``."""
TURN_PREFIX_BUDGET: Final = 0.5
"""Share of ``reserveTokens`` the turn-prefix summary may use."""

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]
CompleteFn: TypeAlias = Callable[[Model, Context, StreamOptions], Awaitable[AssistantMessage]]
"""Runs one LLM request to the end (pi-ai ``completeSimple``); the session supplies it."""


class CompactionError(SessionError):
    """Compaction could not be done (nothing to compact, the summary request failed ...)."""


# --------------------------------------------------------------------------- results and events


@wire
@attrs.frozen(kw_only=True)
class CompactionResult:
    """What a compaction produced (seed 002 s.8.4); saved as a ``compaction`` entry."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    """pi's default: ``{"readFiles": [...], "modifiedFiles": [...]}``."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CompactionStartEvent:
    """A compaction begins (pi 0.73.1's event, for manual and automatic compactions)."""

    type: Literal["compaction_start"] = attrs.field(default="compaction_start", init=False)
    reason: CompactionReason
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CompactionEndEvent:
    """A compaction ended: ``result`` on success, ``aborted`` or ``error_message`` otherwise."""

    type: Literal["compaction_end"] = attrs.field(default="compaction_end", init=False)
    reason: CompactionReason
    result: CompactionResult | None = None
    """Left out of the JSON when there is none (pi's ``undefined``)."""
    aborted: bool
    will_retry: bool
    error_message: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AutoCompactionStartEvent:
    """An automatic compaction begins (seed 002 s.7.2)."""

    type: Literal["auto_compaction_start"] = attrs.field(
        default="auto_compaction_start", init=False
    )
    reason: Literal["threshold", "overflow"]
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AutoCompactionEndEvent:
    """An automatic compaction ended (seed 002 s.7.2); ``will_retry`` after an overflow."""

    type: Literal["auto_compaction_end"] = attrs.field(default="auto_compaction_end", init=False)
    result: CompactionResult | None = None
    aborted: bool
    will_retry: bool
    error_message: str | None = None
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- tokens


def _js_length(text: str) -> int:
    """Length in UTF-16 code units (JavaScript's ``length``), which pi's estimates count."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def calculate_context_tokens(usage: Usage) -> int:
    """Tokens a response's context held: ``totalTokens``, else the sum of the components."""
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def _blocks_chars(content: str | Sequence[object], *, images: bool) -> int:
    if isinstance(content, str):
        return _js_length(content)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += _js_length(block.text)
        elif images and isinstance(block, ImageContent):
            chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: AgentMessage) -> int:
    """Estimate a message's tokens as characters / 4, rounded up (pi: deliberately high).

    User messages count their text; assistant messages their text, thinking and tool calls
    (name plus JSON arguments); custom messages and tool results their text plus
    :data:`IMAGE_CHARS` per image; bash executions the command and output; summaries the
    summary. Unknown kinds count 0.
    """
    if isinstance(message, UserMessage):
        chars = _blocks_chars(message.content, images=False)
    elif isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += _js_length(block.text)
            elif isinstance(block, ThinkingContent):
                chars += _js_length(block.thinking)
            elif isinstance(block, ToolCall):
                arguments = orjson.dumps(block.arguments).decode()
                chars += _js_length(block.name) + _js_length(arguments)
    elif isinstance(message, CustomMessage | ToolResultMessage):
        chars = _blocks_chars(message.content, images=True)
    elif isinstance(message, BashExecutionMessage):
        chars = _js_length(message.command) + _js_length(message.output)
    elif isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        chars = _js_length(message.summary)
    else:
        return 0
    return math.ceil(chars / 4)


def _usage_of(message: AgentMessage) -> Usage | None:
    # Aborted and failed responses carry no trustworthy usage.
    if isinstance(message, AssistantMessage) and message.stop_reason not in ("aborted", "error"):
        return message.usage
    return None


def get_last_assistant_usage(entries: Sequence[SessionEntry]) -> Usage | None:
    """The usage of the last assistant message that was neither aborted nor an error."""
    for entry in reversed(entries):
        if isinstance(entry, SessionMessageEntry):
            usage = _usage_of(entry.message)
            if usage is not None:
                return usage
    return None


@attrs.frozen
class ContextTokenEstimate:
    """The result of :func:`estimate_context_tokens`."""

    tokens: int
    usage_tokens: int
    """What the last usable response reported (0 if none)."""
    trailing_tokens: int
    """Estimated tokens of the messages after it."""
    last_usage_index: int | None
    """Index of that response in the messages, ``None`` when there is none."""


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> ContextTokenEstimate:
    """Estimate the context size: the last reported usage plus estimates for what followed."""
    for index in range(len(messages) - 1, -1, -1):
        usage = _usage_of(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
            return ContextTokenEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextTokenEstimate(estimated, 0, estimated, None)


RESERVE_WINDOW_DIVISOR: Final = 4
"""The reserve never exceeds ``contextWindow // 4``: three quarters of a window fill first."""


def effective_reserve(context_window: int, reserve_tokens: int) -> int:
    """Return the tokens kept free for the response: ``min(reserveTokens, contextWindow // 4)``.

    pi reserves ``reserveTokens`` (default 16,384) whatever the window, which for a window at
    or below that size (an 8k or 16k local model) puts the threshold at or below zero, so the
    session compacts after every turn. Clamped, an 8,192-token window reserves 2,048 and
    compacts past 6,144 tokens; a 32k window reserves 8,192. Windows of 64k and more keep the
    default (``65,536 // 4 = 16,384``), so large models behave exactly as in pi.
    """
    return max(0, min(reserve_tokens, context_window // RESERVE_WINDOW_DIVISOR))


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Whether auto-compaction should run: ``tokens > window - reserve``.

    ``reserve`` is :func:`effective_reserve` (``reserveTokens`` clamped to a quarter of the
    window). Never when compaction is disabled, or when the window is unknown (0).
    """
    if not settings.enabled or context_window <= 0:
        return False
    reserve = effective_reserve(context_window, settings.reserve_tokens)
    return context_tokens > context_window - reserve


# --------------------------------------------------------------------------- cut points

_CUT_ROLES: Final = frozenset(
    {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


def _is_cut_point(entry: SessionEntry) -> bool:
    if isinstance(entry, SessionMessageEntry):
        return entry.message.role in _CUT_ROLES  # never a tool result
    # Summaries and extension messages become user-role messages: a turn may start there.
    return isinstance(entry, BranchSummaryEntry | CustomMessageEntry)


def find_turn_start_index(entries: Sequence[SessionEntry], entry_index: int, start: int) -> int:
    """Index of the user message (or bash execution, custom message, branch summary) that
    starts the turn holding ``entries[entry_index]``; -1 if none at or after ``start``."""
    for index in range(entry_index, start - 1, -1):
        entry = entries[index]
        if isinstance(entry, BranchSummaryEntry | CustomMessageEntry):
            return index
        if isinstance(entry, SessionMessageEntry) and entry.message.role in (
            "user",
            "bashExecution",
        ):
            return index
    return -1


@attrs.frozen
class CutPoint:
    """Where a compaction cuts (indices into the entries)."""

    first_kept_entry_index: int
    turn_start_index: int
    """Start of the turn that was cut through, -1 when the cut is at a turn boundary."""
    is_split_turn: bool


def find_cut_point(
    entries: Sequence[SessionEntry], start: int, end: int, keep_recent_tokens: int
) -> CutPoint:
    """Choose the first kept entry so that about ``keep_recent_tokens`` recent tokens remain.

    Only ``entries[start:end]`` are considered. Walking back from the newest message, tokens
    are summed until they reach ``keep_recent_tokens``; the cut goes to the first valid cut
    point at or after that message (never a tool result), then moves back over non-message
    entries (model and thinking changes, labels ...) so they stay with what follows. A cut at a
    message other than a user message splits its turn.
    """
    cut_points = [i for i in range(start, end) if _is_cut_point(entries[i])]
    if not cut_points:
        return CutPoint(start, -1, False)
    cut = cut_points[0]
    accumulated = 0
    for index in range(end - 1, start - 1, -1):
        entry = entries[index]
        if not isinstance(entry, SessionMessageEntry):
            continue
        accumulated += estimate_tokens(entry.message)
        if accumulated >= keep_recent_tokens:
            cut = next((c for c in cut_points if c >= index), cut)
            break
    while cut > start:
        previous = entries[cut - 1]
        if isinstance(previous, CompactionEntry | SessionMessageEntry):
            break
        cut -= 1
    kept = entries[cut]
    is_user = isinstance(kept, SessionMessageEntry) and isinstance(kept.message, UserMessage)
    turn_start = -1 if is_user else find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, not is_user and turn_start != -1)


# --------------------------------------------------------------------------- preparation


def message_from_entry(entry: SessionEntry) -> AgentMessage | None:
    """The context message an entry contributes (``None`` for settings, labels ...)."""
    if isinstance(entry, SessionMessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        return create_custom_message(
            entry.custom_type, entry.content, entry.display, entry.details, entry.timestamp
        )
    if isinstance(entry, BranchSummaryEntry):
        return create_branch_summary_message(entry.summary, entry.from_id, entry.timestamp)
    if isinstance(entry, CompactionEntry):
        return create_compaction_summary_message(
            entry.summary, entry.tokens_before, entry.timestamp
        )
    return None


def _message_for_compaction(entry: SessionEntry) -> AgentMessage | None:
    # The previous summary is passed separately; its entry is not summarised again.
    return None if isinstance(entry, CompactionEntry) else message_from_entry(entry)


@attrs.frozen(kw_only=True)
class CompactionPreparation:
    """Everything a compaction needs, computed from the branch (an extension may look at it)."""

    first_kept_entry_id: str
    messages_to_summarize: list[AgentMessage]
    """Whole turns before the cut, since the previous compaction's kept boundary."""
    turn_prefix_messages: list[AgentMessage]
    """For a split turn: the part of the turn before the cut."""
    is_split_turn: bool
    tokens_before: int
    """The estimated context size now."""
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings


def prepare_compaction(
    path_entries: Sequence[SessionEntry], settings: CompactionSettings
) -> CompactionPreparation | None:
    """Work out what a compaction of the branch ``path_entries`` (root first) would summarise.

    Returns:
        ``None`` when the branch already ends with a compaction, or when the first kept entry
        has no id (a file that needs migrating).
    """
    if path_entries and isinstance(path_entries[-1], CompactionEntry):
        return None
    previous_index = -1
    for index in range(len(path_entries) - 1, -1, -1):
        if isinstance(path_entries[index], CompactionEntry):
            previous_index = index
            break
    previous_summary: str | None = None
    boundary_start = 0
    previous: CompactionEntry | None = None
    if previous_index >= 0:
        found = path_entries[previous_index]
        assert isinstance(found, CompactionEntry)
        previous = found
        previous_summary = previous.summary
        kept_index = next(
            (i for i, e in enumerate(path_entries) if e.id == previous.first_kept_entry_id), -1
        )
        boundary_start = kept_index if kept_index >= 0 else previous_index + 1
    boundary_end = len(path_entries)
    tokens_before = estimate_context_tokens(build_session_context(path_entries).messages).tokens
    cut = find_cut_point(path_entries, boundary_start, boundary_end, settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(path_entries):
        return None
    first_kept = path_entries[cut.first_kept_entry_index]
    if not first_kept.id:
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = [
        m
        for m in map(_message_for_compaction, path_entries[boundary_start:history_end])
        if m is not None
    ]
    prefix: list[AgentMessage] = []
    if cut.is_split_turn:
        prefix = [
            m
            for m in map(
                _message_for_compaction,
                path_entries[cut.turn_start_index : cut.first_kept_entry_index],
            )
            if m is not None
        ]
    ops = FileOperations()
    # Files from the previous summary carry over, unless an extension wrote that summary.
    if previous is not None and not previous.from_hook:
        ops.add_details(previous.details)
    for message in (*to_summarize, *prefix):
        extract_file_ops_from_message(message, ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
    )


# --------------------------------------------------------------------------- summarising


async def default_complete(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessage:
    """A :data:`CompleteFn` on the default provider registry."""
    return await complete_simple(model, context, options)


def _options(
    model: Model,
    max_tokens: int,
    thinking_level: ModelThinkingLevel | None,
    api_key: str | None,
    headers: dict[str, str] | None,
) -> StreamOptions:
    reasoning: ThinkingLevel | None = None
    if model.reasoning and thinking_level is not None and thinking_level != "off":
        reasoning = thinking_level
    return StreamOptions(
        max_tokens=max_tokens, api_key=api_key, headers=headers, reasoning=reasoning
    )


async def _summarize(
    complete: CompleteFn, model: Model, prompt: str, options: StreamOptions, what: str
) -> str:
    request = Context(
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        messages=[UserMessage(content=[TextContent(text=prompt)], timestamp=now_ms())],
    )
    response = await complete(model, request, options)
    if response.stop_reason == "error":
        raise CompactionError(f"{what} failed: {response.error_message or 'Unknown error'}")
    return "\n".join(b.text for b in response.content if isinstance(b, TextContent))


def _conversation(messages: Sequence[AgentMessage]) -> str:
    return (
        f"<conversation>\n{serialize_conversation(convert_to_llm(messages))}\n</conversation>\n\n"
    )


async def generate_summary(
    messages: Sequence[AgentMessage],
    model: Model,
    reserve_tokens: int,
    complete: CompleteFn = default_complete,
    *,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
    thinking_level: ModelThinkingLevel | None = None,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
) -> str:
    """Have ``model`` summarise ``messages`` (updating ``previous_summary`` if given).

    Raises:
        CompactionError: the model answered with an error.
    """
    instructions = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        instructions += ADDITIONAL_FOCUS + custom_instructions
    prompt = _conversation(messages)
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    prompt += instructions
    max_tokens = math.floor(SUMMARY_BUDGET * reserve_tokens)
    options = _options(model, max_tokens, thinking_level, api_key, headers)
    return await _summarize(complete, model, prompt, options, "Summarization")


async def _turn_prefix_summary(
    messages: Sequence[AgentMessage],
    model: Model,
    reserve_tokens: int,
    complete: CompleteFn,
    thinking_level: ModelThinkingLevel | None,
    api_key: str | None,
    headers: dict[str, str] | None,
) -> str:
    prompt = _conversation(messages) + TURN_PREFIX_SUMMARIZATION_PROMPT
    max_tokens = math.floor(TURN_PREFIX_BUDGET * reserve_tokens)
    options = _options(model, max_tokens, thinking_level, api_key, headers)
    return await _summarize(complete, model, prompt, options, "Turn prefix summarization")


async def compact(
    preparation: CompactionPreparation,
    model: Model,
    complete: CompleteFn = default_complete,
    *,
    custom_instructions: str | None = None,
    thinking_level: ModelThinkingLevel | None = None,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
) -> CompactionResult:
    """Write the summary of a prepared compaction (the session then appends the entry).

    A split turn gets two summaries, made concurrently and joined: the history before the
    turn (or ``"No prior history."``) and the turn's prefix. The read and modified files are
    appended to the summary and returned in ``details``.

    Raises:
        CompactionError: a summary request failed.
    """
    p = preparation
    reserve = p.settings.reserve_tokens
    if p.is_split_turn and p.turn_prefix_messages:
        parts: dict[str, str] = {"history": NO_PRIOR_HISTORY}

        async def history() -> None:
            parts["history"] = await generate_summary(
                p.messages_to_summarize,
                model,
                reserve,
                complete,
                custom_instructions=custom_instructions,
                previous_summary=p.previous_summary,
                thinking_level=thinking_level,
                api_key=api_key,
                headers=headers,
            )

        async def prefix() -> None:
            parts["prefix"] = await _turn_prefix_summary(
                p.turn_prefix_messages, model, reserve, complete, thinking_level, api_key, headers
            )

        async with open_body_nursery() as nursery:
            if p.messages_to_summarize:
                nursery.start_soon(history)
            nursery.start_soon(prefix)
        summary = parts["history"] + SPLIT_TURN_SEPARATOR + parts["prefix"]
    else:
        summary = await generate_summary(
            p.messages_to_summarize,
            model,
            reserve,
            complete,
            custom_instructions=custom_instructions,
            previous_summary=p.previous_summary,
            thinking_level=thinking_level,
            api_key=api_key,
            headers=headers,
        )
    read_files, modified_files = compute_file_lists(p.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return CompactionResult(
        summary=summary,
        first_kept_entry_id=p.first_kept_entry_id,
        tokens_before=p.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )
