"""A gateway's reader over many session event streams: one blocking XREAD per watcher."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

import coredis
import structlog
import trio
from coredis.commands.script import Script

from pitrio.host.cluster._errors import ClusterUnavailable
from pitrio.host.cluster._scripts import REDIS_FAILURES
from pitrio.host.cluster._types import EventCursor, WatchedEvent

log = structlog.get_logger(__name__)

WATCH_BUFFER: Final = 256
"""Events read but not yet taken by the gateway; when full the reader stops reading (the
streams keep the events, up to their replay size), which is the backpressure."""
WATCH_COUNT: Final = 512
"""Entries asked for per stream per XREAD: a reader that fell behind catches up in few round
trips (a stream holds at most about the replay size anyway)."""
WATCH_BLOCK_MS: Final = 5000
"""Longest one XREAD blocks; a change to the watched set wakes it sooner (its wake stream)."""
RETRY_DELAY: Final = 0.5
"""Seconds between reads while Redis cannot be reached."""


class Watcher:
    """Reads the event streams of the sessions a gateway's clients watch, with one task.

    ``add`` and ``remove`` change the watched set at once (no await): they wake the blocking
    XREAD by appending to the watcher's own wake stream, which the XREAD always includes.
    ``async for session_id, epoch, seq, payload in watcher`` yields events in stream order per
    session; entries of different sessions interleave. A cursor that fell behind the stream's
    trimming resumes at the oldest kept entry: the gateway sees a seq gap and sends a
    snapshot (or uses :meth:`ClusterNode.read_events` first, which reports the gap).

    Created by :meth:`ClusterNode.watch`.
    """

    def __init__(
        self,
        redis: coredis.Redis[bytes],
        *,
        event_key: Callable[[str], str],
        wake_key: str,
        last_ids: Script[bytes],
    ) -> None:
        self._redis = redis
        self._event_key = event_key
        self._wake_key = wake_key
        self._last_ids = last_ids
        self._cursors: dict[str, str | None] = {}
        self._keys: dict[bytes, str] = {}
        self._changed = trio.Event()
        self._send, self._receive = trio.open_memory_channel[WatchedEvent](WATCH_BUFFER)

    def add(self, session_id: str, after: EventCursor | None = None) -> None:
        """Watch ``session_id`` from after ``after`` (``(epoch, seq)``), or, when None, from
        its stream's end as the reader finds it. Adding a watched session moves its cursor."""
        self._cursors[session_id] = None if after is None else f"{after[0]}-{after[1]}"
        self._keys[self._event_key(session_id).encode()] = session_id
        self._changed.set()

    def remove(self, session_id: str) -> None:
        """Stop watching ``session_id``; events of it already read may still come out."""
        if self._cursors.pop(session_id, "") != "":
            self._keys.pop(self._event_key(session_id).encode(), None)
            self._changed.set()

    def cursor(self, session_id: str) -> EventCursor | None:
        """Where the watcher has read ``session_id`` up to: its last yielded entry, or where
        it starts; None while an ``after=None`` start is not yet resolved (or not watched)."""
        cursor = self._cursors.get(session_id)
        if cursor is None:
            return None
        epoch, _, seq = cursor.partition("-")
        return int(epoch), int(seq)

    def watched_count(self) -> int:
        """How many sessions are watched."""
        return len(self._cursors)

    def backlog(self) -> int:
        """Events read and waiting in the output channel."""
        return self._send.statistics().current_buffer_used

    def __aiter__(self) -> trio.MemoryReceiveChannel[WatchedEvent]:
        return self._receive

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read until cancelled (the watcher's nursery runs it and the waker)."""
        try:
            await self._redis.delete([self._wake_key])
        except REDIS_FAILURES as exc:
            raise ClusterUnavailable(f"Redis failed opening a watcher: {exc!r}") from exc
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_waker)
            task_status.started()
            with self._send:
                await self._run_reader()

    async def _run_waker(self) -> None:
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            try:
                await self._redis.xadd(
                    self._wake_key,
                    {"w": "1"},
                    trim_strategy=coredis.PureToken.MAXLEN,
                    threshold=16,
                    trim_operator=coredis.PureToken.APPROXIMATELY,
                )
            except REDIS_FAILURES as exc:
                log.warning("cluster_watch_wake_failed", error=repr(exc))

    async def _resolve_new(self) -> None:
        new = [s for s, c in self._cursors.items() if c is None]
        if not new:
            return
        ids = cast("list[bytes]", await self._last_ids(keys=[self._event_key(s) for s in new]))
        for session_id, entry_id in zip(new, ids, strict=True):
            if session_id in self._cursors and self._cursors[session_id] is None:
                self._cursors[session_id] = entry_id.decode()

    async def _run_reader(self) -> None:
        wake_cursor: Any = "0-0"
        while True:
            try:
                await self._resolve_new()
                asked: dict[str, str] = {s: c for s, c in self._cursors.items() if c is not None}
                streams: dict[Any, Any] = {self._wake_key: wake_cursor}
                for session_id, cursor in asked.items():
                    streams[self._event_key(session_id)] = cursor
                reply = await self._redis.xread(streams, count=WATCH_COUNT, block=WATCH_BLOCK_MS)
            except REDIS_FAILURES as exc:
                log.warning("cluster_watch_read_failed", error=repr(exc))
                await trio.sleep(RETRY_DELAY)
                continue
            for key, entries in (reply or {}).items():
                if key == self._wake_key.encode():
                    wake_cursor = entries[-1].identifier
                    continue
                watched = self._keys.get(key)
                if watched is None:
                    continue
                for entry in entries:
                    # The set may have changed while this read was out: drop what the gateway
                    # no longer asks for, and what a re-add moved the cursor away from.
                    if self._cursors.get(watched) != asked.get(watched):
                        break
                    entry_id = cast(bytes, entry.identifier).decode()
                    epoch, _, seq = entry_id.partition("-")
                    payload = cast(bytes, entry.field_values[b"p"])
                    await self._send.send((watched, int(epoch), int(seq), payload))
                    self._cursors[watched] = asked[watched] = entry_id
