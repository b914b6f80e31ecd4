"""The journal of a live session's answer in flight (see :mod:`pitrio.sessions.storage._journal`).

::

    LiveSession.run's nursery
     `- TurnJournal.follow   idle: waits on session.events() for a run to start
                             during a run: once per interval, writes the streaming assistant
                             message (session.agent.stream_message) in a worker thread if it
                             changed, or deletes the journal when none streams (it ended)

A run is sampled, not followed event by event: streaming costs the session nothing per token
(no subscription buffering or merging deltas for the journal), one wake-up and at most one
write per interval. A process killed with SIGKILL loses at most what streamed since the last
write: one interval (:data:`JOURNAL_INTERVAL`), plus the time that write takes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import trio

from pitrio.providers import AssistantMessage, PartialAssistantMessage
from pitrio.sessions import AgentSession, run_file_work
from pitrio.sessions.storage._journal import JOURNAL_MAX_BYTES, delete_journal, write_journal

__all__ = ["JOURNAL_INTERVAL", "TurnJournal"]

JOURNAL_INTERVAL: Final = 0.25
"""Seconds between two writes of a streaming answer's journal (the most kill -9 can lose)."""
WATCH_BUFFER: Final = 16
"""Events the idle watch's subscription may hold (it only waits for the first of a run)."""

Write = Callable[[str, AssistantMessage, int], Awaitable[object]]
Delete = Callable[[str], Awaitable[object]]


async def _write(session_file: str, message: AssistantMessage, max_bytes: int) -> None:
    await run_file_work(write_journal, session_file, message, max_bytes)


async def _delete(session_file: str) -> None:
    await run_file_work(delete_journal, session_file)


class TurnJournal:
    """Keeps the journal of one session's streaming assistant message.

    :meth:`follow` runs for the session's life: while a run is in progress it looks at the
    streaming message every ``interval`` seconds (the first look when the run starts) and
    writes it (cut to ``max_bytes``) when it changed; when no assistant message streams (the
    run ended, a tool runs, the answer ended) the journal is deleted. ``write`` and ``delete``
    do the file work (tests pass their own).
    """

    def __init__(
        self,
        *,
        interval: float = JOURNAL_INTERVAL,
        max_bytes: int = JOURNAL_MAX_BYTES,
        write: Write = _write,
        delete: Delete = _delete,
    ) -> None:
        self._interval = interval
        self._max_bytes = max_bytes
        self._write = write
        self._delete = delete
        self._last: object = None
        """The message last written (a new snapshot per streamed token: compared by identity)."""
        self._written: str | None = None
        """The session file whose journal exists on disk (written, not deleted yet)."""

    async def follow(self, session: AgentSession) -> None:
        """Journal ``session``'s runs until it closes (or this task is cancelled)."""
        while True:
            if not session.is_streaming and not await self._wait_for_run(session):
                return
            while session.is_streaming:
                await self._look(session)
                await trio.sleep(self._interval)
            await self._remove()

    async def _wait_for_run(self, session: AgentSession) -> bool:
        """Return True once a run is in progress; False if the session closed first."""
        # No checkpoint between the caller's is_streaming test and the subscription: a run
        # that starts after it publishes its first event to this subscription.
        async with session.events(policy="coalesce", max_buffer=WATCH_BUFFER) as events:
            async for _ in events:
                if session.is_streaming:
                    return True
        return False

    async def _look(self, session: AgentSession) -> None:
        message = session.agent.stream_message
        file = session.session_file
        if (
            file is None
            or not isinstance(message, AssistantMessage | PartialAssistantMessage)
            or message.role != "assistant"
        ):
            await self._remove()  # no answer streams now: the last one is in the file
            return
        if message is self._last and self._written == file:
            return
        if self._written is not None and self._written != file:
            await self._remove()  # the session moved to another file
        self._last = message
        self._written = file
        whole = message.to_message() if isinstance(message, PartialAssistantMessage) else message
        await self._write(file, whole, self._max_bytes)

    async def discard(self) -> None:
        """Delete the journal on disk, if any (the session closed with no answer in flight)."""
        with trio.CancelScope(shield=True):
            await self._remove()

    async def _remove(self) -> None:
        written, self._written = self._written, None
        self._last = None
        if written is not None:
            await self._delete(written)
