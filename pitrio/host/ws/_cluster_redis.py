"""The host's :class:`~pitrio.host.ws._cluster.ClusterNode` over :mod:`pitrio.host.cluster`
(Redis Streams through coredis, the optional ``pitrio[cluster]`` extra).

::

    open_redis_node (nursery)
     |- pitrio.host.cluster node    leases, fenced appends, routed commands (its own tasks)
     `- StreamHub.run               the node's one Watcher (one blocking XREAD over every
                                    session a client of this gateway follows) -> each
                                    follower's bounded queue

A follower (:meth:`RedisNode.read_events`) first reads what its cursor missed
(``read_events``, one round trip), then takes the watcher's entries (the watcher starts at the
first follower's cursor); an entry that does not follow its cursor (the queue overflowed, a new
epoch) makes it read the gap from the stream again. The hub never waits for a follower: a full
queue only marks the follower behind.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from pitrio._exceptions import UsageError
from pitrio.host.ws._cluster import (
    FORWARD_TIMEOUT,
    IncomingCommand,
    OwnershipLost,
    SessionAssigned,
    SessionLost,
    StreamEntry,
)

if TYPE_CHECKING:
    from pitrio.host.cluster import ClusterNode as CoreNode
    from pitrio.host.cluster import Watcher

__all__ = ["CLUSTER_EXTRA", "RedisNode", "open_redis_node"]

CLUSTER_EXTRA: Final = "pitrio[cluster]"
FOLLOWER_QUEUE: Final = 256
"""Entries the hub holds for one follower; past it the follower reads the gap from Redis."""


class _Follower:
    __slots__ = ("behind", "receive", "send")

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[StreamEntry](FOLLOWER_QUEUE)
        self.behind = False


class StreamHub:
    """Fans one :class:`~pitrio.host.cluster.Watcher` out to the followers of each session."""

    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher
        self._followers: dict[str, set[_Follower]] = {}

    def follow(self, session_id: str, after: tuple[int, int]) -> _Follower:
        """A new follower of ``session_id``, which reads the stream after ``after`` itself
        (its catch-up read) and takes the hub's entries from then on.

        The first follower starts the watcher at ``after``, not at the stream's end: the
        watcher finds the end only when its reader next runs, and an entry written between
        the follower's catch-up read and then would be skipped, unseen until the next entry
        (never, for an idle session). A later follower needs nothing: every entry the hub has
        not yet handed out reaches it, and its catch-up read covers the ones before."""
        follower = _Follower()
        followers = self._followers.setdefault(session_id, set())
        if not followers:
            self._watcher.add(session_id, after)
        followers.add(follower)
        return follower

    def unfollow(self, session_id: str, follower: _Follower) -> None:
        followers = self._followers.get(session_id)
        if followers is None:
            return
        followers.discard(follower)
        follower.send.close()
        if not followers:
            del self._followers[session_id]
            self._watcher.remove(session_id)

    async def run(self) -> None:
        async for session_id, epoch, seq, payload in self._watcher:
            entry = StreamEntry(epoch, seq, payload)
            for follower in self._followers.get(session_id, ()):
                try:
                    follower.send.send_nowait(entry)
                except trio.WouldBlock:
                    follower.behind = True
                except trio.ClosedResourceError:
                    pass


@attrs.frozen
class _Incoming:
    session_id: str
    request_id: str
    payload: bytes
    _reply: Any

    async def respond(self, answer: bytes) -> None:
        await self._reply(answer)


class RedisNode:
    """:class:`~pitrio.host.ws._cluster.ClusterNode` over a :mod:`pitrio.host.cluster` node."""

    def __init__(self, node: CoreNode, hub: StreamHub) -> None:
        self._node = node
        self._hub = hub

    @property
    def node_id(self) -> str:
        return str(self._node.node_id)

    async def claim(self, session_id: str) -> int:
        from pitrio.host.cluster import LeaseHeld, NotAMember

        from ._host import CommandRefused

        try:
            return await self._node.claim(session_id)
        except (LeaseHeld, NotAMember) as exc:
            raise CommandRefused("session_failed", f"Cannot own the session: {exc}") from exc

    def writable(self, session_id: str, epoch: int) -> bool:
        return bool(self._node.writable(session_id, epoch))

    async def release(self, session_id: str) -> None:
        await self._node.close(session_id)

    async def forget(self, session_id: str) -> None:
        await self._node.forget(session_id)

    async def append_events(
        self, session_id: str, epoch: int, events: Sequence[tuple[int, bytes]]
    ) -> None:
        from pitrio.host.cluster import StaleOwner

        try:
            await self._node.append_events(session_id, epoch, events)
        except StaleOwner as exc:
            raise OwnershipLost(str(exc)) from exc
        except UsageError as exc:
            # A seq not above the stream's last at this epoch: another writer of this epoch.
            raise OwnershipLost(str(exc)) from exc

    def read_events(
        self, session_id: str, after: tuple[int, int]
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEntry | None]]:
        return self._read(session_id, after)

    @asynccontextmanager
    async def _read(
        self, session_id: str, after: tuple[int, int]
    ) -> AsyncIterator[AsyncIterator[StreamEntry | None]]:
        follower = self._hub.follow(session_id, after)
        entries = self._entries(session_id, after, follower)
        try:
            yield entries
        finally:
            self._hub.unfollow(session_id, follower)
            await entries.aclose()

    async def _catch_up(self, session_id: str, after: tuple[int, int]) -> list[StreamEntry] | None:
        read = await self._node.read_events(session_id, after)
        if read is None:
            return None
        return [StreamEntry(epoch, seq, payload) for epoch, seq, payload in read]

    async def _entries(
        self, session_id: str, cursor: tuple[int, int], follower: _Follower
    ) -> AsyncGenerator[StreamEntry | None]:
        missed = await self._catch_up(session_id, cursor)
        while True:
            if missed is None:
                yield None  # trimmed past the cursor: the reader sends a snapshot, reopens
                return
            for entry in missed:
                if (entry.epoch, entry.seq) > cursor:
                    cursor = (entry.epoch, entry.seq)
                    yield entry
            try:
                entry = await follower.receive.receive()
            except trio.EndOfChannel:
                return
            if (entry.epoch, entry.seq) <= cursor:
                missed = []
                continue
            if entry.epoch == cursor[0] and entry.seq == cursor[1] + 1 and not follower.behind:
                missed = [entry]
                continue
            follower.behind = False
            missed = await self._catch_up(session_id, cursor)

    async def send_command(self, session_id: str, request_id: str, payload: bytes) -> bytes:
        return await self._node.send_command(session_id, request_id, payload, FORWARD_TIMEOUT)

    def commands(self) -> AbstractAsyncContextManager[AsyncIterator[IncomingCommand]]:
        return aclosing(self._each_command())

    async def _each_command(self) -> AsyncGenerator[IncomingCommand]:
        async for command in self._node.commands():
            yield _Incoming(command.session_id, command.request_id, command.payload, command.reply)

    def ownership_events(
        self,
    ) -> AbstractAsyncContextManager[AsyncIterator[SessionAssigned | SessionLost]]:
        return aclosing(self._each_change())

    async def _each_change(self) -> AsyncGenerator[SessionAssigned | SessionLost]:
        from pitrio.host.cluster import SessionAssigned as Assigned

        async for change in self._node.ownership_events():
            if isinstance(change, Assigned):
                yield SessionAssigned(change.session_id)
            else:
                yield SessionLost(change.session_id)

    def metrics(self) -> Mapping[str, float]:
        return {f"node_{name}": value for name, value in self._node.metrics().items()}


def missing_extra_message() -> str:
    """What ``pitrio serve --cluster`` says when coredis is not installed."""
    return (
        f"--cluster needs the optional cluster dependencies: pip install '{CLUSTER_EXTRA}' "
        "(coredis)"
    )


@asynccontextmanager
async def open_redis_node(
    url: str,
    *,
    node_id: str | None,
    address: str,
    lease_ttl: float,
    stall_limit: float | None = None,
) -> AsyncIterator[RedisNode]:
    """Join the cluster at ``url`` for the block's length (see
    :func:`pitrio.host.cluster.open_cluster_node`).

    ``stall_limit`` None is the node's default.

    Raises:
        ImportError: coredis (``pitrio[cluster]``) is not installed.
    """
    from pitrio.host.cluster import STALL_LIMIT, open_cluster_node

    async with (
        open_cluster_node(
            url,
            node_id=node_id,
            address=address,
            lease_ttl=lease_ttl,
            stall_limit=STALL_LIMIT if stall_limit is None else stall_limit,
        ) as node,
        node.watch() as watcher,
        trio.open_nursery() as nursery,
    ):
        hub = StreamHub(watcher)
        nursery.start_soon(hub.run)
        try:
            yield RedisNode(node, hub)
        finally:
            nursery.cancel_scope.cancel()
