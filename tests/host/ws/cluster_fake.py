"""An in-memory cluster for host tests: :class:`~pitrio.host.ws._cluster.ClusterNode` without
Redis.

Leases with epochs (a claim of a session another node holds raises, as Redis' would refuse),
fenced appends (the lease must be the writer's at that epoch and the ids must increase),
streams trimmed to ``replay`` entries, commands routed to the lease's holder (else to the
first node by id), answered once per request id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any

import trio

from pitrio.host.ws._cluster import (
    IncomingCommand,
    OwnershipLost,
    SessionAssigned,
    SessionLost,
    StreamEntry,
)
from pitrio.host.ws._host import CommandRefused


class FakeCluster:
    def __init__(self, replay: int = 1024) -> None:
        self.replay = replay
        self.nodes: dict[str, FakeNode] = {}
        self.leases: dict[str, tuple[str, int]] = {}
        self.epochs: dict[str, int] = {}
        self.streams: dict[str, list[StreamEntry]] = {}
        self.trimmed: dict[str, tuple[int, int]] = {}
        """The id of the last entry trimmed from each stream."""
        self.results: dict[str, bytes] = {}
        self.changed = trio.Event()

    def node(self, node_id: str) -> FakeNode:
        node = self.nodes[node_id] = FakeNode(self, node_id)
        return node

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()


class _Incoming:
    def __init__(self, session_id: str, request_id: str, payload: bytes) -> None:
        self.session_id = session_id
        self.request_id = request_id
        self.payload = payload
        self.answer: bytes | None = None
        self.done = trio.Event()

    async def respond(self, answer: bytes) -> None:
        if self.answer is None:
            self.answer = answer
            self.done.set()


class FakeNode:
    def __init__(self, cluster: FakeCluster, node_id: str) -> None:
        self.cluster = cluster
        self._id = node_id
        self.partitioned = False
        self._send, self._receive = trio.open_memory_channel[_Incoming](64)
        self._changes_send, self._changes = trio.open_memory_channel[SessionAssigned | SessionLost](
            64
        )

    @property
    def node_id(self) -> str:
        return self._id

    async def claim(self, session_id: str) -> int:
        await trio.lowlevel.checkpoint()
        cluster = self.cluster
        held = cluster.leases.get(session_id)
        if held is not None and held[0] == self._id:
            return held[1]
        if held is not None:
            raise CommandRefused("session_failed", f"held by {held[0]}")
        epoch = cluster.epochs[session_id] = cluster.epochs.get(session_id, 0) + 1
        cluster.leases[session_id] = (self._id, epoch)
        return epoch

    def writable(self, session_id: str, epoch: int) -> bool:
        return not self.partitioned and self.cluster.leases.get(session_id) == (self._id, epoch)

    def partition(self) -> None:
        """Cut this node off: its appends hang (as a Redis that no longer answers) and, its
        leases unrenewed, it may no longer write its sessions' files (``writable``)."""
        self.partitioned = True

    async def release(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        if self.cluster.leases.get(session_id, ("", 0))[0] == self._id:
            del self.cluster.leases[session_id]

    async def forget(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self.cluster.leases.pop(session_id, None)

    async def append_events(
        self, session_id: str, epoch: int, events: Sequence[tuple[int, bytes]]
    ) -> None:
        await trio.lowlevel.checkpoint()
        if self.partitioned:
            await trio.sleep_forever()
        cluster = self.cluster
        if cluster.leases.get(session_id) != (self._id, epoch):
            raise OwnershipLost(f"{session_id} at {epoch}")
        stream = cluster.streams.setdefault(session_id, [])
        last = (stream[-1].epoch, stream[-1].seq) if stream else cluster.trimmed.get(session_id)
        for seq, payload in events:
            if last is not None and (epoch, seq) <= last:
                raise OwnershipLost(f"{session_id}: {epoch}-{seq} not above {last}")
            stream.append(StreamEntry(epoch, seq, payload))
            last = (epoch, seq)
        while len(stream) > cluster.replay:
            gone = stream.pop(0)
            cluster.trimmed[session_id] = (gone.epoch, gone.seq)
        cluster.notify()

    def read_events(
        self, session_id: str, after: tuple[int, int]
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEntry | None]]:
        return self._read(session_id, after)

    @asynccontextmanager
    async def _read(
        self, session_id: str, after: tuple[int, int]
    ) -> AsyncIterator[AsyncIterator[StreamEntry | None]]:
        entries = self._entries(session_id, after)
        try:
            yield entries
        finally:
            await entries.aclose()

    async def _entries(
        self, session_id: str, cursor: tuple[int, int]
    ) -> AsyncIterator[StreamEntry | None]:
        cluster = self.cluster
        while True:
            changed = cluster.changed
            trimmed = cluster.trimmed.get(session_id)
            if trimmed is not None and cursor < trimmed:
                yield None
                return
            for entry in list(cluster.streams.get(session_id, ())):
                if (entry.epoch, entry.seq) > cursor:
                    cursor = (entry.epoch, entry.seq)
                    yield entry
            await changed.wait()

    async def send_command(self, session_id: str, request_id: str, payload: bytes) -> bytes:
        cluster = self.cluster
        if request_id in cluster.results:
            return cluster.results[request_id]
        held = cluster.leases.get(session_id)
        target = cluster.nodes[held[0] if held is not None else min(cluster.nodes)]
        incoming = _Incoming(session_id, request_id, payload)
        await target._send.send(incoming)
        await incoming.done.wait()
        assert incoming.answer is not None
        cluster.results[request_id] = incoming.answer
        return incoming.answer

    def commands(self) -> AbstractAsyncContextManager[AsyncIterator[IncomingCommand]]:
        return aclosing(self._each())

    async def _each(self) -> AsyncIterator[IncomingCommand]:
        async for incoming in self._receive:
            yield incoming

    def ownership_events(
        self,
    ) -> AbstractAsyncContextManager[AsyncIterator[SessionAssigned | SessionLost]]:
        return aclosing(self._each_change())

    async def _each_change(self) -> AsyncIterator[SessionAssigned | SessionLost]:
        async for change in self._changes:
            yield change

    async def tell(self, change: SessionAssigned | SessionLost) -> None:
        """Deliver an ownership change to this node's host."""
        await self._changes_send.send(change)

    def metrics(self) -> Mapping[str, Any]:
        return {"fake_streams": len(self.cluster.streams)}
