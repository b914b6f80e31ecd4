"""The AgentSession's moves in and between sessions: restore, new, resume, fork, tree.

Each is a function of the session actor, seen as a :class:`SessionCore` (the facade's public
methods send commands whose jobs call these). The moves abort a run in
progress first, let the hooks cancel, move the :class:`SessionManager` (which keeps writing
through the same Persistence actor) and then reload the agent's state from the session with
:func:`restore_state`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, cast

import attrs
import trio

from pitrio._exceptions import UsageError
from pitrio.providers import (
    Model,
    ModelThinkingLevel,
    TextContent,
    UserMessage,
    clamp_thinking_level,
)
from pitrio.sessions.compaction._compaction import CompactionError
from pitrio.sessions.compaction._compaction_branch import (
    collect_entries_for_branch_summary,
    generate_branch_summary,
)
from pitrio.sessions.runtime._agent_session_types import (
    BeforeForkResult,
    ForkResult,
    NavigateTreeResult,
    TreePreparation,
)
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    CustomMessageEntry,
    SessionEntry,
    SessionEntryNotFound,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
)

if TYPE_CHECKING:
    from pitrio.actors import AgentMessage
    from pitrio.sessions.runtime._session_core import SessionCore

__all__ = [
    "DEFAULT_THINKING_LEVEL",
    "RestoredState",
    "fork",
    "navigate_tree",
    "new_session",
    "restore_state",
    "restored_state",
    "switch_session",
    "user_text",
]

DEFAULT_THINKING_LEVEL: Final = "medium"
"""The thinking level when neither the session nor the settings name one (pi's default)."""


def user_text(message: UserMessage) -> str:
    """The text of a user message (its text blocks joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


@attrs.frozen
class RestoredState:
    """What an agent is given from a session (see :func:`restored_state`)."""

    messages: list[AgentMessage]
    model: Model | None
    thinking_level: ModelThinkingLevel
    session_id: str
    pending: list[tuple[str, Any]]
    """The entries to record once the session runs: a new session records its model and
    thinking level, a resumed one without a thinking entry records that."""


def restored_state(
    session: SessionCore,
    model: Model | None,
    level: ModelThinkingLevel | None,
    current_model: Model | None,
) -> RestoredState:
    """Read messages, model and thinking level from the session (pi's createAgentSession).

    An explicit ``model`` / ``level`` wins; else the session's (if it has messages), else
    ``current_model`` or the settings default; the level is clamped to the model. Sets the
    session's ``model_fallback_message``; changes nothing else (the session actor builds
    its agent with the result, or hands it to a running agent with :func:`restore_state`).
    """
    manager = session.session_manager
    context = manager.build_session_context()
    existing = bool(context.messages)
    has_thinking_entry = manager.has_on_branch(ThinkingLevelChangeEntry)
    session.model_fallback_message = None
    if model is None and existing and context.model is not None:
        model = session.find_model(context.model.provider, context.model.model_id)
        if model is None:
            wanted = f"{context.model.provider}/{context.model.model_id}"
            session.model_fallback_message = f"Could not restore model {wanted}"
    if model is None:
        model = current_model or _default_model(session)
    if level is None:
        if existing and has_thinking_entry:
            level = cast(ModelThinkingLevel, context.thinking_level)
        else:
            default = session.settings.default_thinking_level or DEFAULT_THINKING_LEVEL
            level = cast(ModelThinkingLevel, default)
    level = clamp_thinking_level(model, level) if model is not None else "off"
    pending: list[tuple[str, Any]] = []
    if not existing and model is not None:
        pending.append(("model", model))
    if not existing or not has_thinking_entry:
        pending.append(("thinking", level))
    return RestoredState(list(context.messages), model, level, manager.get_session_id(), pending)


async def restore_state(
    session: SessionCore, model: Model | None, level: ModelThinkingLevel | None
) -> list[tuple[str, Any]]:
    """Load the session's state into the agent (:func:`restored_state`, sent to the agent
    as its state-change commands); returns the entries to record."""
    agent = session.agent
    restored = restored_state(session, model, level, agent.model)
    await agent.replace_messages(restored.messages)
    if restored.model is not None:
        await agent.set_model(restored.model)
    await agent.set_thinking_level(restored.thinking_level)
    if agent.session_id is not None:  # else the session passes none (provider_session_id)
        await agent.set_session_id(restored.session_id)
    return restored.pending


def _default_model(session: SessionCore) -> Model | None:
    provider, model_id = session.settings.default_provider, session.settings.default_model
    if provider and model_id:
        found = session.find_model(provider, model_id)
        if found is not None:
            return found
    return session.available_models[0] if session.available_models else None


async def new_session(session: SessionCore, parent_session: str | None) -> bool:
    """See :meth:`AgentSession.new_session`."""
    if await session.hook("session_before_switch", "new", None):
        return False
    async with session.exclusive():
        previous = session.session_manager.get_session_file()
        await session.hook("session_shutdown", "new")
        session.session_manager.new_session(parent_session=parent_session)
        await session.replace_session("new", previous)
    return True


async def switch_session(session: SessionCore, path: str) -> bool:
    """See :meth:`AgentSession.switch_session`."""
    if await session.hook("session_before_switch", "resume", path):
        return False
    async with session.exclusive():
        previous = session.session_manager.get_session_file()
        await session.hook("session_shutdown", "resume")
        await session.session_manager.aset_session_file(path)
        await session.replace_session("resume", previous)
    return True


async def fork(
    session: SessionCore, entry_id: str, position: Literal["before", "at"]
) -> ForkResult:
    """See :meth:`AgentSession.fork`."""
    decision = await session.hook("session_before_fork", entry_id, position)
    if isinstance(decision, BeforeForkResult):
        if decision.cancel:
            return ForkResult(cancelled=True)
        skip_restore = decision.skip_conversation_restore
    elif decision:
        return ForkResult(cancelled=True)
    else:
        skip_restore = False
    manager = session.session_manager
    selected = manager.get_entry(entry_id)
    if selected is None:
        raise UsageError("Invalid entry ID for forking")
    text: str | None = None
    if position == "at":
        target: str | None = selected.id
    else:
        if not (
            isinstance(selected, SessionMessageEntry) and isinstance(selected.message, UserMessage)
        ):
            raise UsageError("Invalid entry ID for forking")
        target = selected.parent_id
        text = user_text(selected.message)
    async with session.exclusive():
        if skip_restore:
            # Seed 004's skipConversationRestore: the fork happens (a new session, its
            # events), but the conversation is not moved back to the entry: the new session
            # holds the path to the current leaf, so the agent's transcript and the file
            # stay one.
            target = manager.get_leaf_id()
        previous = session.session_manager.get_session_file()
        await session.hook("session_shutdown", "fork")
        if target is None:
            manager.new_session(parent_session=previous)
        else:
            manager.create_branched_session(target)
        await session.replace_session("fork", previous)
    return ForkResult(cancelled=False, selected_text=text)


async def navigate_tree(
    session: SessionCore,
    target_id: str,
    *,
    summarize: bool,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
) -> NavigateTreeResult:
    """See :meth:`AgentSession.navigate_tree` (pi's ``navigateTree``)."""
    manager = session.session_manager
    old_leaf = manager.get_leaf_id()
    if target_id == old_leaf:
        return NavigateTreeResult(cancelled=False)
    model = session.model
    if summarize and model is None:
        raise UsageError("No model available for summarization")
    target = manager.get_entry(target_id)
    if target is None:
        raise SessionEntryNotFound(target_id)
    async with session.exclusive():
        return await _navigate(
            session, target, summarize, custom_instructions, replace_instructions, label
        )


async def _navigate(
    session: SessionCore,
    target: SessionEntry,
    summarize: bool,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
) -> NavigateTreeResult:
    manager = session.session_manager
    old_leaf = manager.get_leaf_id()
    target_id = target.id
    model = session.model
    entries, common = collect_entries_for_branch_summary(manager, old_leaf, target_id)
    preparation = TreePreparation(
        target_id=target_id,
        old_leaf_id=old_leaf,
        common_ancestor_id=common,
        entries_to_summarize=entries,
        user_wants_summary=summarize,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        label=label,
    )
    summary: str | None = None
    details: Any = None
    from_extension = False
    scope = session.branch_summary_scope = trio.CancelScope()
    try:
        with scope:
            decision = await session.hook("session_before_tree", preparation)
            if decision is not None:
                if decision.cancel:
                    return NavigateTreeResult(cancelled=True)
                if decision.summary is not None and summarize:
                    summary, details, from_extension = decision.summary, decision.details, True
                if decision.custom_instructions is not None:
                    custom_instructions = decision.custom_instructions
                if decision.replace_instructions is not None:
                    replace_instructions = decision.replace_instructions
                if decision.label is not None:
                    label = decision.label
            if summarize and entries and summary is None:
                assert model is not None
                result = await generate_branch_summary(
                    entries,
                    model,
                    session.complete,
                    reserve_tokens=session.settings.branch_summary_settings().reserve_tokens,
                    custom_instructions=custom_instructions,
                    replace_instructions=replace_instructions,
                )
                if result.aborted:
                    return NavigateTreeResult(cancelled=True, aborted=True)
                if result.error is not None:
                    raise CompactionError(result.error)
                summary = result.summary
                details = {"readFiles": result.read_files, "modifiedFiles": result.modified_files}
        if scope.cancel_called:
            return NavigateTreeResult(cancelled=True, aborted=True)
    finally:
        session.branch_summary_scope = None

    # A user or custom message goes back to the editor: continue from its parent.
    editor_text: str | None = None
    new_leaf: str | None
    if isinstance(target, SessionMessageEntry) and isinstance(target.message, UserMessage):
        new_leaf = target.parent_id
        editor_text = user_text(target.message)
    elif isinstance(target, CustomMessageEntry):
        new_leaf = target.parent_id
        content = target.content
        editor_text = (
            content
            if isinstance(content, str)
            else "".join(b.text for b in content if isinstance(b, TextContent))
        )
    else:
        new_leaf = target_id
    summary_entry: BranchSummaryEntry | None = None
    if summary:
        summary_id = manager.branch_with_summary(new_leaf, summary, details, from_extension)
        found = manager.get_entry(summary_id)
        summary_entry = found if isinstance(found, BranchSummaryEntry) else None
        if label:
            manager.append_label_change(summary_id, label)
    elif new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    if label and not summary:
        manager.append_label_change(target_id, label)
    await session.agent.replace_messages(manager.build_session_context().messages)
    await session.hook(
        "session_tree",
        manager.get_leaf_id(),
        old_leaf,
        summary_entry,
        from_extension if summary else None,
    )
    return NavigateTreeResult(cancelled=False, editor_text=editor_text, summary_entry=summary_entry)
