"""Builds each request's ContextEnvelope, runs the ``context`` hooks, persists and replays them.

The session hands :meth:`ContextEngine.prepare_request` to its agent as the loop's
``prepare_request`` hook. Per provider request it

1. builds the envelope: the system prompt split into ``base``, ``project_context``, ``skills``
   and ``runtime`` parts, the run's tool definitions, ``messages.cached`` = the session path
   replayed (:meth:`ContextEngine.replay`), ``uncached`` empty;
2. runs ``context_envelope("before_request")``: each result's patch is applied and persisted
   as a ``context_transform`` entry (with a transcript-only ``contextTransform`` message when
   ``display.showInChat``); a result's ``messages`` (seed 004's replacement) is applied to
   this request only and leaves just a small ``ephemeral`` note naming its extension;
3. runs ``context_envelope("ephemeral")``: applied to this request only, logged as an
   ``ephemeral`` entry, never replayed;
4. checks that every tool definition names a loaded tool (else the request ends with an error
   assistant message) and sends ``cached + uncached``.

After each ``turn_end`` the session calls :meth:`ContextEngine.turn_end`
(``context_envelope("turn_end")``, persisted).

Replay walks the active path root to leaf: message entries append to the cached messages,
``context_transform`` entries apply their patch, a legacy ``compaction`` entry is read as
``compaction_apply``; ``ephemeral`` entries are skipped. No hook runs. A message entry whose
message the agent's transcript no longer holds (a failed response the retry took out) is left
out, as the transcript leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
import structlog
import trio

from pitrio.actors import AgentMessage, RequestDraft, RequestRejected
from pitrio.sessions.context._envelope import (
    CompactionApplyOp,
    ContextEnvelope,
    ContextMeta,
    ContextPatchError,
    ContextReason,
    ContextResult,
    GenerationOptions,
    SystemPart,
    SystemPrompt,
    ToolDefinition,
    apply_patch,
    replace_messages,
    unknown_tool_names,
)
from pitrio.sessions.resources._system_prompt import split_system_prompt
from pitrio.sessions.storage._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextTransformEntry,
    ContextTransformMessage,
    CustomMessageEntry,
    SessionEntry,
    SessionMessageEntry,
    create_branch_summary_message,
    create_custom_message,
    timestamp_ms,
)

if TYPE_CHECKING:
    from pitrio.sessions.runtime._agent_session_types import SessionHooks
    from pitrio.sessions.storage._manager import SessionManager

__all__ = [
    "ContextEngine",
    "SessionContext",
    "compaction_op",
    "install_context_engine",
    "system_prompt_parts",
]

log = structlog.get_logger(__name__)


def system_prompt_parts(prompt: str) -> SystemPrompt:
    """The envelope's system prompt for ``prompt`` (four parts; concatenation == ``prompt``)."""
    return SystemPrompt(
        parts=tuple(SystemPart(name=name, text=text) for name, text in split_system_prompt(prompt))
    )


@attrs.define
class _Fold:
    envelope: ContextEnvelope
    ids: list[str | None]
    """The entry id of each cached message (``None`` for messages a patch added)."""
    history: list[tuple[str, AgentMessage]]
    """Every message entry of the path so far (for a compaction that keeps compacted ones)."""


class ContextEngine:
    """The envelope, the ``context`` hooks and their entries, for one session.

    Args:
        manager: returns the session's manager (it changes on new/resume/fork).
        hooks: the session's hooks.
        transcript: returns the agent's transcript.
        tools: returns the run's tool definitions.
        loaded_tools: returns the names of the loaded tool implementations.
        system_prompt: returns the current system prompt.
        meta: returns the request metadata (model, limit, session id).
    """

    def __init__(
        self,
        *,
        manager: Callable[[], SessionManager],
        hooks: SessionHooks,
        transcript: Callable[[], Sequence[AgentMessage]],
        tools: Callable[[], Sequence[ToolDefinition]],
        loaded_tools: Callable[[], Collection[str]],
        system_prompt: Callable[[], str],
        options: Callable[[], GenerationOptions],
        meta: Callable[[], ContextMeta],
    ) -> None:
        self._manager = manager
        self._hooks = hooks
        self._transcript = transcript
        self._tools = tools
        self._loaded = loaded_tools
        self._system_prompt = system_prompt
        self._options = options
        self._meta = meta
        self.last_envelope: ContextEnvelope | None = None
        """The envelope of the last request sent (ephemeral patches applied)."""
        self.active: Callable[[], bool] = lambda: True
        """Whether requests go through the envelope (see :func:`install_context_engine`)."""

    def path(self) -> list[SessionEntry]:
        """The entries of the session's active path, root to leaf."""
        return self._manager().get_branch()

    def has_transforms(self) -> bool:
        """Whether the active path holds a ``context_transform`` entry."""
        manager = self._manager()
        # Most sessions never have one: answer from the tree's flag instead of walking the
        # path, which would make every request O(entries).
        if not manager.has_context_transforms():
            return False
        return any(type(e) is ContextTransformEntry for e in manager.get_branch())

    # ------------------------------------------------------------------ building

    def base_envelope(self, draft: RequestDraft | None = None) -> ContextEnvelope:
        """The envelope before replay: parts, tools, options, meta; no messages."""
        meta = self._meta()
        if draft is not None:
            meta = attrs.evolve(
                meta, turn_index=draft.turn_index, request_index=draft.request_index
            )
        return ContextEnvelope(
            system=system_prompt_parts(
                draft.system_prompt if draft is not None else self._system_prompt()
            ),
            tools=draft.tools if draft is not None else tuple(self._tools()),
            options=self._options(),
            meta=meta,
        )

    def replay(self, base: ContextEnvelope | None = None) -> ContextEnvelope:
        """The envelope of the active path: ``base`` with every persisted transform replayed.

        No hook runs; the result depends only on the session file and the transcript.
        """
        base = base if base is not None else self.base_envelope()
        manager = self._manager()
        path = manager.get_branch()
        live = {id(m) for m in self._transcript()}
        fold = _Fold(base, [], [])
        for entry in path:
            self._fold_entry(fold, entry, live)
        return fold.envelope

    def _fold_entry(self, fold: _Fold, entry: SessionEntry, live: set[int]) -> None:
        message: AgentMessage | None = None
        if type(entry) is SessionMessageEntry:
            if id(entry.message) in live and not isinstance(entry.message, ContextTransformMessage):
                message = entry.message
        elif type(entry) is CustomMessageEntry:
            message = create_custom_message(
                entry.custom_type, entry.content, entry.display, entry.details, entry.timestamp
            )
        elif type(entry) is BranchSummaryEntry and entry.summary:
            message = create_branch_summary_message(entry.summary, entry.from_id, entry.timestamp)
        elif type(entry) is CompactionEntry:
            self._apply(fold, (compaction_op(entry),))
            return
        elif type(entry) is ContextTransformEntry:
            try:
                self._apply(fold, entry.patch)
            except ContextPatchError as exc:  # a damaged entry must not make a session unusable
                log.warning("context_transform_replay_failed", entry_id=entry.id, error=str(exc))
            return
        if message is not None:
            messages = fold.envelope.messages
            fold.envelope = attrs.evolve(
                fold.envelope,
                messages=attrs.evolve(messages, cached=(*messages.cached, message)),
            )
            fold.ids.append(entry.id)
            fold.history.append((entry.id, message))

    def _apply(self, fold: _Fold, ops: Sequence[Any]) -> None:
        before = fold.envelope.messages.cached
        ids_by_object = {id(m): i for m, i in zip(before, fold.ids, strict=True)}
        resolved_ops = []
        for op in ops:
            if isinstance(op, CompactionApplyOp) and op.first_kept_index is None:
                op = self._resolve_compaction(fold, op)
            resolved_ops.append(op)
        fold.envelope = apply_patch(fold.envelope, resolved_ops)
        fold.ids = [ids_by_object.get(id(m)) for m in fold.envelope.messages.cached]

    def _resolve_compaction(self, fold: _Fold, op: CompactionApplyOp) -> CompactionApplyOp:
        """Resolve ``first_kept_entry_id`` as pi does: keep from that entry on, or nothing."""
        target = op.first_kept_entry_id
        if target is not None and target in fold.ids:
            return attrs.evolve(op, first_kept_index=fold.ids.index(target))
        kept: list[AgentMessage] = []
        if target is not None:
            found = False
            for entry_id, message in fold.history:
                found = found or entry_id == target
                if found:
                    kept.append(message)
        # Entries compacted away earlier: rebuild the cached list from the path's history.
        messages = fold.envelope.messages
        fold.envelope = attrs.evolve(
            fold.envelope, messages=attrs.evolve(messages, cached=(*messages.cached, *kept))
        )
        fold.ids.extend(None for _ in kept)
        return attrs.evolve(op, first_kept_index=len(messages.cached))

    # ------------------------------------------------------------------ hooks

    async def _run_hook(
        self, reason: ContextReason, envelope: ContextEnvelope
    ) -> tuple[ContextEnvelope, list[ContextResult]]:
        """Run ``context_envelope(reason)`` and apply its results in order.

        A patch that does not apply (no ``invalidate_cache_reason`` on a cached op, a malformed
        op) is skipped with a warning and the request goes out without it; the extension
        runner has reported it as an ``extension_error`` already. Seed 004's message-list
        replacement (``ContextResult.messages``) counts for ``before_request`` only.
        """
        try:
            results = await self._hooks.context_envelope(reason, envelope)
        except Exception:
            log.exception("session_hook_failed", hook="context_envelope", reason=reason)
            return envelope, []
        applied: list[ContextResult] = []
        for result in results or ():
            if result.messages is not None:
                if reason == "before_request":
                    envelope = replace_messages(envelope, result.messages)
                    applied.append(attrs.evolve(result, patch=()))
                else:
                    log.debug(
                        "context_messages_ignored", reason=reason, name=result.transformer_name
                    )
            if not result.patch:
                continue
            try:
                envelope = apply_patch(envelope, result.patch)
            except ContextPatchError as exc:
                log.warning("context_patch_rejected", reason=reason, error=str(exc))
                continue
            applied.append(attrs.evolve(result, messages=None))
        return envelope, applied

    def _persist(self, reason: ContextReason, results: Sequence[ContextResult]) -> None:
        manager = self._manager()
        for result in results:
            if result.messages is not None:
                # Seed 004's replacement is request-only (as pi 0.73.1): a small note names
                # who replaced the messages; the messages themselves are not written.
                manager.append_ephemeral((), _replaced_by(result.transformer_name))
                continue
            manager.append_context_transform(
                reason, result.patch, result.transformer_name, result.display
            )
            display = result.display
            if display is not None and display.show_in_chat:
                manager.append_message(
                    ContextTransformMessage(
                        transformer_name=result.transformer_name,
                        title=display.title,
                        summary=display.summary,
                        timestamp=timestamp_ms(manager.get_leaf_entry().timestamp)  # type: ignore[union-attr]
                        if manager.get_leaf_entry() is not None
                        else 0,
                    )
                )

    async def prepare_request(self, draft: RequestDraft) -> RequestDraft:
        """The loop's ``prepare_request``: build, run the hooks, persist, check, send."""
        envelope = self.replay(self.base_envelope(draft))
        envelope, persisted = await self._run_hook("before_request", envelope)
        self._persist("before_request", persisted)
        envelope, ephemeral = await self._run_hook("ephemeral", envelope)
        manager = self._manager()
        for result in ephemeral:
            manager.append_ephemeral(result.patch, result.transformer_name)
        unknown = unknown_tool_names(envelope.tools, self._loaded())
        if unknown:
            raise RequestRejected(
                f"Context envelope names tools that are not loaded: {', '.join(unknown)}"
            )
        self.last_envelope = envelope
        options = draft.options
        if envelope.options.reasoning is not None:
            reasoning = None if envelope.options.reasoning == "off" else envelope.options.reasoning
            options = attrs.evolve(options, reasoning=cast(Any, reasoning))
        if envelope.options.temperature is not None:
            options = attrs.evolve(options, temperature=envelope.options.temperature)
        if envelope.options.max_tokens is not None:
            options = attrs.evolve(options, max_tokens=envelope.options.max_tokens)
        return attrs.evolve(
            draft,
            system_prompt=envelope.system.compiled,
            tools=envelope.tools,
            messages=envelope.messages.cached,
            uncached=envelope.messages.uncached,
            options=options,
        )

    async def turn_end(self) -> None:
        """After a ``turn_end``: run ``context_envelope("turn_end")`` and persist its patches."""
        envelope = self.replay()
        _, persisted = await self._run_hook("turn_end", envelope)
        self._persist("turn_end", persisted)

    async def preview(self, *, ephemeral: bool) -> ContextEnvelope:
        """The envelope the next request would start from (for ``/context``); with
        ``ephemeral``, the ephemeral hooks run once on it (nothing is persisted)."""
        envelope = self.replay()
        if ephemeral:
            envelope, _ = await self._run_hook("ephemeral", envelope)
        return envelope


def _replaced_by(name: str | None) -> str:
    return f"{name or 'context'}: messages replaced for this request"


def compaction_op(entry: CompactionEntry) -> CompactionApplyOp:
    """A legacy ``compaction`` entry read as the ``compaction_apply`` op it stands for."""
    return CompactionApplyOp(
        summary=entry.summary,
        tokens_before=entry.tokens_before,
        first_kept_entry_id=entry.first_kept_entry_id,
        timestamp=timestamp_ms(entry.timestamp),
        invalidate_cache_reason="compaction",
    )


def _overrides(hooks: SessionHooks, name: str) -> bool:
    from pitrio.sessions.runtime._agent_session_types import SessionHooks

    return getattr(type(hooks), name, None) is not getattr(SessionHooks, name)


class SessionContext:
    """A session's seed-001 hooks into its agent, with the :class:`ContextEngine` built on
    first use: most sessions never need one, and an idle session should not carry it (the
    engine and its accessors cost about 2.8 KB per session).

    ``session`` is the session actor (``session_manager``, ``hooks``, ``agent``,
    ``thinking_level``). A session whose hooks have no ``context`` handler and whose file
    holds no ``context_transform`` entry sends its requests unchanged (no envelope is built).
    """

    __slots__ = ("_engine", "_has_handlers", "_overridden", "_session")

    def __init__(self, session: Any) -> None:
        self._session = session
        self._engine: ContextEngine | None = None
        hooks = session.hooks
        self._overridden = _overrides(hooks, "context_envelope")
        self._has_handlers = getattr(hooks, "has_handlers", None)

    def release(self) -> None:
        """Let go of the session and the engine, which both refer back here (the session is
        closed: no request is prepared any more)."""
        del self._session
        self._engine = None

    def has_context_hook(self) -> bool:
        """Whether a ``context`` hook listens (an extension runner implements the hook for
        every session; it counts only when an extension listens to ``context``)."""
        has_handlers = self._has_handlers
        return self._overridden and (has_handlers is None or bool(has_handlers("context")))

    def active(self) -> bool:
        """Whether requests go through the envelope."""
        if self.has_context_hook():
            return True
        manager = self._session.session_manager
        return manager.has_context_transforms() and any(
            type(e) is ContextTransformEntry for e in manager.get_branch()
        )

    @property
    def engine(self) -> ContextEngine:
        """The session's engine (built on first use)."""
        engine = self._engine
        if engine is None:
            engine = self._engine = _build_engine(self._session, self.active)
        return engine

    async def prepare_request(self, draft: RequestDraft) -> RequestDraft:
        """The agent's ``prepare_request``: the envelope, when one is needed.

        Always a checkpoint: the request is built in a scheduler step of its own, not in the
        one that also opened the run and recorded its prompt. When many sessions start a
        prompt at once (a host, a load run) every such step runs in the same scheduler pass,
        so the split shortens the longest pass of the start and with it the event-loop lag
        (docs/bench-history.md has the measurement); it costs one scheduler pass per LLM call.
        """
        await trio.lowlevel.checkpoint()
        if not self.active():
            return draft
        return await self.engine.prepare_request(draft)

    async def on_message_end(self, message: AgentMessage) -> AgentMessage | None:
        """The agent's ``on_message_end``: the hooks' ``message_end`` (replace or drop)."""
        try:
            result = await self._session.hooks.message_end(message)
        except Exception:
            log.exception("session_hook_failed", hook="message_end")
            return message
        return message if result is None else result.message


def install_context_engine(session: Any) -> SessionContext:
    """Plug a session's :class:`SessionContext` into its agent (``prepare_request``, and
    ``on_message_end`` when the hooks define ``message_end``); returns it."""
    context = SessionContext(session)
    agent = session.agent
    agent.prepare_request = context.prepare_request
    if _overrides(session.hooks, "message_end"):
        agent.on_message_end = context.on_message_end
    return context


def _build_engine(session: Any, active: Callable[[], bool]) -> ContextEngine:
    from pitrio.providers import Tool

    agent = session.agent

    def tools() -> list[ToolDefinition]:
        return [
            Tool(name=t.name, description=t.description, parameters=t.parameters)
            for t in agent.tools
        ]

    def options() -> GenerationOptions:
        return GenerationOptions(reasoning=session.thinking_level)

    def meta() -> ContextMeta:
        model = agent.model
        return ContextMeta(
            model=model,
            limit=getattr(model, "context_window", None),
            session_id=session.session_manager.get_session_id(),
        )

    engine = ContextEngine(
        manager=lambda: session.session_manager,
        hooks=session.hooks,
        transcript=lambda: agent.messages,
        tools=tools,
        loaded_tools=lambda: {t.name for t in agent.tools},
        system_prompt=lambda: agent.system_prompt,
        options=options,
        meta=meta,
    )
    engine.active = active
    return engine
