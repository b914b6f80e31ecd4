"""The journal of a live session's answer in flight (see :mod:`pitrio.sessions.storage._journal`).

::

    LiveSession.run's nursery
     |- TurnJournal.follow   session.events(policy="coalesce"): notes the streaming assistant
     |                       message (start, updates) and its end; while one streams it reads
     |                       once per interval (the deltas merge meanwhile), not per token
     `- TurnJournal.run      writes the latest note at most once per interval, in a worker
                             thread; deletes the journal once the message ended

A process killed with SIGKILL loses at most what streamed since the last write: one interval
(:data:`JOURNAL_INTERVAL`) of the answer, plus the time that write takes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import trio

from pitrio.actors import AgentEndEvent, MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from pitrio.channels import Snapshot, SubscriberLagged
from pitrio.providers import AssistantMessage, PartialAssistantMessage
from pitrio.sessions import AgentSession, run_file_work
from pitrio.sessions.storage._journal import JOURNAL_MAX_BYTES, delete_journal, write_journal

__all__ = ["JOURNAL_INTERVAL", "TurnJournal"]

JOURNAL_INTERVAL: Final = 0.25
"""Seconds between two writes of a streaming answer's journal (the most kill -9 can lose)."""
JOURNAL_SUBSCRIPTION: Final = 64
"""Events the journal's subscription may hold while it waits an interval (streamed deltas
merge; past the coalescing overrun of other events it follows again from the next)."""

Write = Callable[[str, AssistantMessage, int], Awaitable[object]]
Delete = Callable[[str], Awaitable[object]]


async def _write(session_file: str, message: AssistantMessage, max_bytes: int) -> None:
    await run_file_work(write_journal, session_file, message, max_bytes)


async def _delete(session_file: str) -> None:
    await run_file_work(delete_journal, session_file)


class TurnJournal:
    """Keeps the journal of one session's streaming assistant message.

    :meth:`started`, :meth:`updated` and :meth:`ended` note what streams (:meth:`follow` calls
    them from the session's events); :meth:`run` writes: the first note of a message at once,
    later ones at most once per ``interval``, each write the latest message (cut to
    ``max_bytes``); once the message ended, the journal is deleted. ``write`` and ``delete``
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
        self._file: str | None = None
        """The session file of the message streaming now."""
        self._latest: AssistantMessage | PartialAssistantMessage | None = None
        self._written: str | None = None
        """The session file whose journal exists on disk (written, not deleted yet)."""
        self._wake = trio.Event()

    def started(
        self, session_file: str | None, message: AssistantMessage | PartialAssistantMessage
    ) -> None:
        """An assistant message of ``session_file`` (None: in memory, nothing kept) started."""
        self._file = session_file
        self._note(message if session_file is not None else None)

    def updated(self, message: AssistantMessage | PartialAssistantMessage) -> None:
        if self._file is not None:
            self._note(message)

    def ended(self) -> None:
        """The message ended (it is in the session file, or the run stopped)."""
        self._file = None
        self._note(None)

    def _note(self, message: AssistantMessage | PartialAssistantMessage | None) -> None:
        self._latest = message
        self._wake.set()

    async def run(self) -> None:
        """Write and delete the journal as noted, until cancelled (then a journal whose
        message ended is still deleted)."""
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                latest, file = self._latest, self._file
                if latest is None or file is None:
                    await self._remove()
                    continue
                if self._written is not None and self._written != file:
                    await self._remove()  # the session moved to another file meanwhile
                message = (
                    latest.to_message() if isinstance(latest, PartialAssistantMessage) else latest
                )
                self._written = file
                await self._write(file, message, self._max_bytes)
                await trio.sleep(self._interval)
        finally:
            if self._latest is None and self._written is not None:
                with trio.CancelScope(shield=True):
                    await self._remove()

    async def discard(self) -> None:
        """Delete the journal on disk, if any (the session closed with no answer in flight)."""
        self._latest = self._file = None
        with trio.CancelScope(shield=True):
            await self._remove()

    async def _remove(self) -> None:
        written, self._written = self._written, None
        if written is not None:
            await self._delete(written)

    def _see(self, session: AgentSession, event: object) -> None:
        if isinstance(event, MessageStartEvent | MessageUpdateEvent):
            message = event.message
            if not isinstance(message, AssistantMessage | PartialAssistantMessage):
                return
            if isinstance(event, MessageStartEvent) or self._file is None:
                # (An update without its start: this subscription was cut off meanwhile.)
                self.started(session.session_file, message)
            else:
                self.updated(message)
        elif isinstance(event, AgentEndEvent) or (
            isinstance(event, MessageEndEvent) and event.message.role == "assistant"
        ):
            self.ended()

    async def follow(self, session: AgentSession) -> None:
        """Note ``session``'s streaming assistant messages until it closes."""
        while True:
            try:
                async with session.events(
                    policy="coalesce", max_buffer=JOURNAL_SUBSCRIPTION
                ) as subscription:
                    async for item in subscription:
                        if not isinstance(item, Snapshot):
                            self._see(session, item.event)
                        if self._file is not None and not subscription.statistics().buffered:
                            # An answer streams: its deltas merge in the buffer meanwhile,
                            # rather than waking this task per token (it is written once
                            # per interval anyway).
                            await trio.sleep(self._interval)
                return  # the session closed
            except SubscriberLagged:
                # Cut off (the host is very busy): follow again from now; the next update
                # carries the whole message so far.
                continue
