"""The AgentSession's compactions: manual, after a threshold, and to recover from overflow.

:class:`SessionCompactor` is the part of an :class:`~pitrio.sessions.AgentSession` that decides
when to compact (pi's ``_checkCompaction``), runs the compaction inside a cancel scope that
``abort_compaction()`` cancels, saves the ``compaction`` entry, reloads the agent's context from
the session and emits the compaction events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

import trio

from pitrio._exceptions import UsageError
from pitrio.providers import AssistantMessage, Model, is_context_overflow
from pitrio.sessions.compaction._compaction import (
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    CompactionEndEvent,
    CompactionError,
    CompactionReason,
    CompactionResult,
    CompactionStartEvent,
    calculate_context_tokens,
    compact,
    estimate_context_tokens,
    prepare_compaction,
    should_compact,
)
from pitrio.sessions.storage._context import get_latest_compaction_entry
from pitrio.sessions.storage._entries import CompactionEntry, timestamp_ms

if TYPE_CHECKING:
    from pitrio.sessions.runtime._session_core import SessionCore

__all__ = [
    "ALREADY_COMPACTED",
    "COMPACTION_CANCELLED",
    "NOTHING_TO_COMPACT",
    "OVERFLOW_RECOVERY_FAILED",
    "SessionCompactor",
]

COMPACTION_CANCELLED: Final = "Compaction cancelled"
ALREADY_COMPACTED: Final = "Already compacted"
NOTHING_TO_COMPACT: Final = "Nothing to compact (session too small)"
OVERFLOW_RECOVERY_FAILED: Final = (
    "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context "
    "or switching to a larger-context model."
)
NO_MODEL: Final = "No model selected"


class SessionCompactor:
    """Compaction for one session, which it sees as a :class:`SessionCore`."""

    def __init__(self, session: SessionCore) -> None:
        self._session = session
        self._scope: trio.CancelScope | None = None
        self.overflow_recovery_attempted = False
        """Set by an overflow recovery; a second overflow before a new user message gives up."""

    def release(self) -> None:
        """Let go of the session, which refers back to this compactor (its session is closed:
        nothing compacts any more)."""
        del self._session

    @property
    def is_running(self) -> bool:
        """Whether a compaction is in progress."""
        return self._scope is not None

    def abort(self) -> None:
        """Cancel the compaction in progress, if any."""
        if self._scope is not None:
            self._scope.cancel()

    # ------------------------------------------------------------------ events

    async def _start(self, reason: CompactionReason) -> None:
        style = self._session.compaction_events
        if reason != "manual" and style != "pi":
            await self._session.emit(AutoCompactionStartEvent(reason=reason))
        if style != "seed":
            await self._session.emit(CompactionStartEvent(reason=reason))

    async def _end(
        self,
        reason: CompactionReason,
        result: CompactionResult | None = None,
        *,
        aborted: bool = False,
        will_retry: bool = False,
        error: str | None = None,
    ) -> None:
        style = self._session.compaction_events
        if style != "seed":
            await self._session.emit(
                CompactionEndEvent(
                    reason=reason,
                    result=result,
                    aborted=aborted,
                    will_retry=will_retry,
                    error_message=error,
                )
            )
        if reason != "manual" and style != "pi":
            await self._session.emit(
                AutoCompactionEndEvent(
                    result=result, aborted=aborted, will_retry=will_retry, error_message=error
                )
            )

    # ------------------------------------------------------------------ compacting

    async def _compact_now(
        self, model: Model, custom_instructions: str | None
    ) -> CompactionResult | None:
        """Prepare, summarise (or take the hook's result), save, reload the context.

        Returns ``None`` when there is nothing to compact.

        Raises:
            CompactionError: a hook cancelled, or the summary request failed.
        """
        session = self._session
        manager = session.session_manager
        branch = manager.get_branch()
        preparation = prepare_compaction(branch, session.settings.compaction_settings())
        if preparation is None:
            return None
        decision = await session.hook(
            "session_before_compact", preparation, branch, custom_instructions
        )
        if decision is not None and decision.cancel:
            raise CompactionError(COMPACTION_CANCELLED)
        provided = decision.compaction if decision is not None else None
        if provided is not None:
            result: CompactionResult = provided
        else:
            result = await compact(
                preparation,
                model,
                session.complete,
                custom_instructions=custom_instructions,
                thinking_level=session.thinking_level,
            )
        from_extension = provided is not None
        entry_id = manager.append_compaction(
            result.summary,
            result.first_kept_entry_id,
            result.tokens_before,
            result.details,
            from_extension,
        )
        await session.agent.replace_messages(manager.build_session_context().messages)
        entry = manager.get_entry(entry_id)
        if isinstance(entry, CompactionEntry):
            await session.hook("session_compact", entry, from_extension)
        return result

    async def compact(self, custom_instructions: str | None) -> CompactionResult:
        """Compact now, emitting ``compaction_start`` / ``compaction_end`` (reason manual).

        The session has aborted its run and claimed itself before calling this.

        Raises:
            UsageError: no model.
            CompactionError: nothing to compact, already compacted, cancelled, or failed.
        """
        await self._start("manual")
        scope = self._scope = trio.CancelScope()
        try:
            with scope:
                model = self._session.model
                if model is None:
                    raise UsageError(NO_MODEL)
                result = await self._compact_now(model, custom_instructions)
                if result is None:
                    last = self._session.session_manager.get_leaf_entry()
                    raise CompactionError(
                        ALREADY_COMPACTED
                        if isinstance(last, CompactionEntry)
                        else NOTHING_TO_COMPACT
                    )
            if scope.cancel_called:
                raise CompactionError(COMPACTION_CANCELLED)
        except (CompactionError, UsageError) as exc:
            aborted = str(exc) == COMPACTION_CANCELLED
            error = None if aborted else f"Compaction failed: {exc}"
            await self._end("manual", aborted=aborted, error=error)
            raise
        finally:
            self._scope = None
        assert result is not None  # a cancelled scope raised above
        await self._end("manual", result)
        return result

    async def check(self, message: AssistantMessage, *, skip_aborted_check: bool = True) -> bool:
        """Compact if ``message`` overflowed the context or the context passed the threshold.

        pi's ``_checkCompaction``: an overflow (same model, not already recovered once) drops
        the failed response from the context, compacts and asks for a retry; a context over
        ``contextWindow - reserveTokens`` compacts without retrying. Aborted responses are
        skipped unless ``skip_aborted_check`` is False (the check before a prompt).

        Returns:
            Whether the agent should continue now (overflow recovered, or messages are queued).
        """
        session = self._session
        settings = session.settings.compaction_settings()
        if not settings.enabled:
            return False
        if skip_aborted_check and message.stop_reason == "aborted":
            return False
        model = session.model
        window = model.context_window if model is not None else 0
        same_model = (
            model is not None and message.provider == model.provider and message.model == model.id
        )
        latest = get_latest_compaction_entry(session.session_manager.get_branch())
        latest_ms = timestamp_ms(latest.timestamp) if latest is not None else None
        # A response from before the latest compaction says nothing about the context now.
        if latest_ms is not None and message.timestamp <= latest_ms:
            return False
        if same_model and is_context_overflow(message, window):
            if self.overflow_recovery_attempted:
                await self._end("overflow", error=OVERFLOW_RECOVERY_FAILED)
                return False
            self.overflow_recovery_attempted = True
            await session.drop_trailing_assistant()
            return await self._auto("overflow", will_retry=True)
        if message.stop_reason == "error":
            # An error carries no usage: estimate from the last response that had some.
            messages = session.agent.messages
            estimate = estimate_context_tokens(messages)
            if estimate.last_usage_index is None:
                return False
            source = messages[estimate.last_usage_index]
            if (
                latest_ms is not None
                and isinstance(source, AssistantMessage)
                and source.timestamp <= latest_ms
            ):
                return False
            tokens = estimate.tokens
        else:
            tokens = calculate_context_tokens(message.usage)
        if should_compact(tokens, window, settings):
            return await self._auto("threshold", will_retry=False)
        return False

    async def _auto(self, reason: Literal["threshold", "overflow"], *, will_retry: bool) -> bool:
        await self._start(reason)
        session = self._session
        model = session.model
        if model is None:
            await self._end(reason)
            return False
        scope = self._scope = trio.CancelScope()
        result: CompactionResult | None = None
        try:
            with scope:
                result = await self._compact_now(model, None)
        except CompactionError as exc:
            if str(exc) == COMPACTION_CANCELLED:
                await self._end(reason, aborted=True)
            else:
                prefix = (
                    "Context overflow recovery failed"
                    if reason == "overflow"
                    else "Auto-compaction failed"
                )
                await self._end(reason, error=f"{prefix}: {exc}")
            return False
        finally:
            self._scope = None
        if scope.cancel_called:
            await self._end(reason, aborted=True)
            return False
        if result is None:
            await self._end(reason)
            return False
        await self._end(reason, result, will_retry=will_retry)
        if will_retry:
            await session.drop_trailing_assistant(only_errors=True)
            return True
        # Messages queued while compacting would otherwise wait for the next prompt.
        return session.agent.has_queued_messages()
