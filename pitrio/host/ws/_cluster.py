"""A host as one node of a cluster (``pitrio serve --cluster``): owner and gateway.

::

    Host.run (nursery "sessions")
     |- ClusterLink.run
     |   |- _serve_commands     node.commands(): a command a gateway forwarded to this node
     |   |                      (open, a session command, close, snapshot), each in its task
     |   `- _follow_ownership   node.ownership_events(): SessionAssigned -> take the session
     |                          over (reopen from its file, new epoch); SessionLost -> drop it
     `- ClusterLink.publish     one per owned session: its events, batched, appended to the
                                session's stream ({epoch}-{seq}); a refused (fenced) append
                                means another node owns it now: the local copy is dropped

A session lives on the node that holds its lease (its *owner*); every other node is a
*gateway* for it: a client's command is forwarded to the owner through the cluster
(:meth:`ClusterLink.forward`, the request id is the idempotency key; the cluster routes it to
the lease's holder, or to the node placement gives the session to when nobody holds it, which
then opens it) and its events are read from the session's stream
(:meth:`ClusterNode.read_events`). The host uses only the small
:class:`ClusterNode` interface: :mod:`pitrio.host.cluster` implements it over Redis Streams
(:mod:`pitrio.host.ws._cluster_redis`), tests with an in-memory fake.

A stream entry's payload is a tag byte, the owner's wall time (8 bytes, little-endian double:
the gateways' relay lag), then the body: ``E`` and the event's JSON (as the single-node host
frames it), ``S`` and a whole ``snapshot`` frame (written first in each epoch, so a gateway
that crosses into a new epoch rebuilds its clients' view from it), or ``C`` and nothing (the
owner closed the session: its gateways send ``session_closed``).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

import attrs
import orjson
import structlog
import trio

from pitrio.channels import Snapshot
from pitrio.host.rpc import _types as rpc
from pitrio.host.rpc._types import RpcResponse
from pitrio.host.ws._client import _splice, snapshot_frame
from pitrio.host.ws._dispatch import dispatch_session_command
from pitrio.host.ws._host import CommandRefused, HostApi, LiveSession, log_failure
from pitrio.host.ws._stream import (
    StreamEntry,
    decode_payload,
    encode_closed,
    encode_event,
    encode_snapshot,
)

__all__ = [
    "APPEND_BATCH",
    "FORWARD_TIMEOUT",
    "ClusterLink",
    "ClusterNode",
    "IncomingCommand",
    "OwnershipLost",
    "SessionAssigned",
    "SessionLost",
    "StreamEntry",
    "decode_payload",
    "encode_closed",
    "encode_event",
    "encode_snapshot",
]

log = structlog.get_logger("pitrio.host.cluster")

APPEND_BATCH: Final = 256
"""Events appended to a session's stream in one call at most (more wait for the next)."""
PUBLISH_BUFFER: Final = 1024
"""Events an owned session's stream writer may hold before the session waits for it."""
FORWARD_TIMEOUT: Final = 60.0
"""Seconds a forwarded command may take (through a failover: the new owner runs it)."""
TOKENS_REFRESH: Final = 1.0
"""Seconds between two looks at the shared tokens file."""
_request_ids = itertools.count(1)


class OwnershipLost(Exception):
    """This node's append to a session's stream was refused: another node owns it now (a
    newer epoch), or this node's lease lapsed. Raised by a :class:`ClusterNode` to its host,
    which drops the session; it never reaches a caller (so it is no ``PitrioError``)."""


@attrs.frozen
class SessionAssigned:
    """The cluster gave this node a session (its owner died): take it over."""

    session_id: str


@attrs.frozen
class SessionLost:
    """This node no longer owns a session (its lease lapsed or another node took it)."""

    session_id: str


class IncomingCommand(Protocol):
    """A command a gateway forwarded to this node (as the owner)."""

    @property
    def session_id(self) -> str: ...

    @property
    def request_id(self) -> str: ...

    @property
    def payload(self) -> bytes: ...

    async def respond(self, answer: bytes) -> None:
        """Send the answer to the gateway and acknowledge the command."""
        ...


class ClusterNode(Protocol):
    """What the host uses of its cluster node (:mod:`pitrio.host.cluster` over Redis)."""

    @property
    def node_id(self) -> str: ...

    async def claim(self, session_id: str) -> int:
        """Take ``session_id``'s lease; returns its new epoch (greater than every earlier).

        Raises:
            CommandRefused: another live node holds it, or this node is no member now.
        """
        ...

    def writable(self, session_id: str, epoch: int) -> bool:
        """Whether this node may still write the session's file at ``epoch`` (it holds the
        lease, renewed less than a TTL ago by its own clock). Asked before every file write;
        once it says False the node has lost the session (a :class:`SessionLost` follows)."""
        ...

    async def release(self, session_id: str) -> None:
        """Give up the lease of ``session_id``, closed here: no node takes it over, and the
        next opening (on any node) claims a new epoch."""
        ...

    async def forget(self, session_id: str) -> None:
        """Remove ``session_id`` from the cluster (its lease, stream and registry entry): it
        has no file on the shared storage, so no node can ever take it over."""
        ...

    async def append_events(
        self, session_id: str, epoch: int, events: Sequence[tuple[int, bytes]]
    ) -> None:
        """Append ``(seq, payload)`` entries as ``{epoch}-{seq}``, in order.

        Raises:
            OwnershipLost: refused: a newer epoch wrote, or the lease is not this node's.
        """
        ...

    def read_events(
        self, session_id: str, after: tuple[int, int]
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEntry | None]]:
        """Follow the session's stream from after the ``(epoch, seq)`` cursor; ``None`` is
        yielded when the entries after the cursor were trimmed (the reader needs a snapshot;
        the iterator then goes on from the stream's tail)."""
        ...

    async def send_command(self, session_id: str, request_id: str, payload: bytes) -> bytes:
        """Run a command on the session's owner (the one that owns it by the time the
        command is read: a command pending on a dead node is run by the next); its answer.
        The caller bounds the wait (a cancel scope)."""
        ...

    def commands(self) -> AbstractAsyncContextManager[AsyncIterator[IncomingCommand]]:
        """The commands forwarded to this node (and pending ones of dead nodes it took)."""
        ...

    def ownership_events(
        self,
    ) -> AbstractAsyncContextManager[AsyncIterator[SessionAssigned | SessionLost]]: ...

    def metrics(self) -> Mapping[str, float]:
        """The node's own gauges and counters (``pitrio_cluster_`` is prefixed)."""
        ...


class ClusterLink:
    """The host's side of its cluster node: what it owns, what it forwards, its counters.

    Args:
        node: the cluster node.
        host: the host it serves.
    """

    def __init__(self, node: ClusterNode, host: HostApi) -> None:
        self.node = node
        self.host = host
        self.takeovers_total = 0
        self.lost_total = 0
        self.forwarded_total = 0
        self.served_total = 0
        self.appended_total = 0
        self.append_lag = 0.0
        """Seconds the last append waited for the store (its batch's first event to done)."""
        self.relay_lag = 0.0
        """Seconds from the owner's append to a gateway's read of the last entry relayed."""
        self.gateway_clients = 0
        """Client attachments to sessions another node owns."""
        self._nursery: trio.Nursery | None = None

    @property
    def node_id(self) -> str:
        return self.node.node_id

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve forwarded commands and ownership changes until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self._serve_commands)
            await nursery.start(self._follow_ownership)
            nursery.start_soon(self._refresh_tokens)
            task_status.started()

    async def _refresh_tokens(self) -> None:
        # The nodes share the tokens file: a token or grant another node wrote, or a token
        # it revoked, is seen here within an interval.
        while True:
            await trio.sleep(TOKENS_REFRESH)
            try:
                await self.host.tokens.refresh()
            except Exception:
                log_failure(log, "tokens_refresh_failed")

    # ------------------------------------------------------------------ owner

    async def claim(self, session_id: str) -> int:
        """This node's lease on ``session_id``: its new epoch."""
        return await self.node.claim(session_id)

    async def publish(self, live: LiveSession) -> None:
        """Append ``live``'s events to its stream until it closes: first a snapshot of its
        state now, then every event, batched. A refused append drops the local copy."""
        session = live.session
        snapshot = Snapshot(seq=session.seq, state=session.snapshot())
        first = encode_snapshot(snapshot_frame(live.id, snapshot, live.epoch))
        pending: list[tuple[int, bytes]] = [(snapshot.seq, first)]
        try:
            async with session.events(
                from_seq=snapshot.seq, policy="block", max_buffer=PUBLISH_BUFFER
            ) as events:
                await self._append(live, pending)
                async for item in events:
                    pending = [self._entry(live, item)]
                    while len(pending) < APPEND_BATCH:
                        try:
                            pending.append(self._entry(live, events.receive_nowait()))
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    await self._append(live, pending)
                last = session.seq
            if not live.dropped:
                # Closed here (close_session, idle, drain): its gateways tell their clients,
                # and the lease goes (a reopening, here or elsewhere, is a new epoch).
                await self._append(live, [(last + 1, encode_closed())])
                await live.closed.wait()
                if self.host.sessions.get(live.id) in (None, live):
                    await self.node.release(live.id)
        except OwnershipLost:
            self.lost_total += 1
            live.log.warning("session_ownership_lost", epoch=live.epoch)
            live.drop()
        except Exception:
            log_failure(live.log, "session_stream_failed")
            live.drop()

    @staticmethod
    def _entry(live: LiveSession, item: Any) -> tuple[int, bytes]:
        if isinstance(item, Snapshot):
            # The ring moved on before this writer read (not with "block": kept for safety).
            return item.seq, encode_snapshot(snapshot_frame(live.id, item, live.epoch))
        return item.seq, encode_event(item.wire)

    async def _append(self, live: LiveSession, batch: list[tuple[int, bytes]]) -> None:
        began = trio.current_time()
        await self.node.append_events(live.id, live.epoch, batch)
        self.append_lag = trio.current_time() - began
        self.appended_total += len(batch)

    async def take_over(self, session_id: str) -> None:
        """Own ``session_id`` (its owner died): reopen it from its file under a new epoch;
        the turn the owner was running is closed as aborted (see ``Host.open_session``)."""
        if session_id in self.host.sessions:
            return
        try:
            await self.host.open_session(self.host.token, session_id)
        except CommandRefused as exc:
            log.warning("takeover_failed", session=session_id, error=str(exc))
            if exc.kind == "unknown_session":
                # No file (an in-memory session, or deleted): without forgetting it, every
                # renewal would assign it again, to fail again.
                try:
                    await self.node.forget(session_id)
                except Exception:
                    log_failure(log, "forget_failed")
            return
        self.takeovers_total += 1
        log.info("session_taken_over", session=session_id)

    async def _follow_ownership(self, *, task_status: trio.TaskStatus[None]) -> None:
        async with self.node.ownership_events() as changes:
            task_status.started()
            async for change in changes:
                if isinstance(change, SessionAssigned):
                    assert self._nursery is not None
                    self._nursery.start_soon(self.take_over, change.session_id)
                else:
                    live = self.host.sessions.get(change.session_id)
                    if live is not None:
                        self.lost_total += 1
                        live.log.warning("session_lease_lost", epoch=live.epoch)
                        live.drop()

    # ------------------------------------------------------------------ forwarded commands

    async def _serve_commands(self, *, task_status: trio.TaskStatus[None]) -> None:
        async with self.node.commands() as commands, trio.open_nursery() as running:
            task_status.started()
            async for command in commands:
                running.start_soon(self._serve_command, command)

    async def _serve_command(self, command: IncomingCommand) -> None:
        self.served_total += 1
        try:
            request = orjson.loads(command.payload)
            answer = await self._answer(command.session_id, request)
        except CommandRefused as exc:
            answer = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:
            log_failure(log, "forwarded_command_failed")
            answer = {"ok": False, "kind": "internal", "error": f"{type(exc).__name__}: {exc}"}
        await command.respond(orjson.dumps(answer))

    async def _answer(self, session_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run a forwarded request on the local session (opening it first if need be)."""
        host = self.host
        token = str(request.get("token", ""))
        if not host.tokens.active(token):
            await host.tokens.refresh()
        op = request.get("op")
        live = await host.open_session(token, session_id)
        if op == "open":
            return {"ok": True, "epoch": live.epoch, "seq": live.session.seq}
        if op == "snapshot":
            snapshot = Snapshot(seq=live.session.seq, state=live.session.snapshot())
            return {
                "ok": True,
                "epoch": live.epoch,
                "seq": snapshot.seq,
                "frame": snapshot_frame(live.id, snapshot, live.epoch),
            }
        if op == "close":
            await host.close_session(live)
            return {"ok": True}
        if op == "command":
            return {"ok": True, "response": await self._command(token, session_id, request)}
        raise CommandRefused("invalid_command", f"Unknown forwarded request: {op!r}")

    async def _command(self, token: str, session_id: str, request: dict[str, Any]) -> str:
        """A forwarded session command's response frame (as the client's own host sends it)."""

        try:
            decoded = rpc.decode_command(request.get("frame"))
        except (rpc.UnknownCommand, rpc.InvalidCommand) as exc:
            # The gateway decoded it before forwarding: not reached unless versions differ.
            raise CommandRefused("invalid_command", str(exc)) from exc
        responses: list[str] = []
        answered = trio.Event()

        async def respond(response: RpcResponse) -> None:
            if not answered.is_set():
                responses.append(_splice(session_id, response))
                answered.set()

        bound = log.bind(session=session_id)
        await dispatch_session_command(
            self.host, token, decoded, session_id, respond, respond, bound
        )
        with trio.fail_after(FORWARD_TIMEOUT):
            await answered.wait()
        return responses[0]

    # ------------------------------------------------------------------ gateway

    async def forward(self, session_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run ``request`` on ``session_id``'s owner and return its answer.

        Raises:
            CommandRefused: the owner refused it (its kind and message), or it timed out.
        """
        self.forwarded_total += 1
        request_id = f"{self.node_id}:{next(_request_ids)}"
        try:
            with trio.fail_after(FORWARD_TIMEOUT):
                raw = await self.node.send_command(session_id, request_id, orjson.dumps(request))
        except trio.TooSlowError as exc:
            raise CommandRefused(
                "session_failed", f"Session {session_id}: its owner did not answer in time"
            ) from exc
        answer: dict[str, Any] = orjson.loads(raw)
        if not answer.get("ok"):
            raise CommandRefused(str(answer.get("kind")), str(answer.get("error")))
        return answer

    def read_events(
        self, session_id: str, after: tuple[int, int]
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEntry | None]]:
        """The session's stream after ``after`` (see :meth:`ClusterNode.read_events`)."""
        return self.node.read_events(session_id, after)

    def relayed(self, stamp: float) -> None:
        """Note the relay lag of an entry the owner wrote at ``stamp`` (wall time)."""
        self.relay_lag = max(0.0, time.time() - stamp)

    def render(self) -> dict[str, float]:
        """The cluster gauges and counters for ``/metrics`` (without the prefix)."""
        values: dict[str, float] = {
            "owned_sessions": len(self.host.sessions),
            "gateway_clients": self.gateway_clients,
            "takeovers_total": self.takeovers_total,
            "ownership_lost_total": self.lost_total,
            "commands_forwarded_total": self.forwarded_total,
            "commands_served_total": self.served_total,
            "events_appended_total": self.appended_total,
            "append_lag_seconds": round(self.append_lag, 6),
            "stream_lag_seconds": round(self.relay_lag, 6),
        }
        for name, value in self.node.metrics().items():
            values.setdefault(name, value)
        return values


OpenLink = Callable[[HostApi], AbstractAsyncContextManager[ClusterLink]]
"""Opens a host's cluster link (``pitrio serve --cluster``): joins the cluster for the
duration of the context."""


def partial_link(node: ClusterNode) -> Callable[[HostApi], ClusterLink]:
    """A link factory for an already open node (tests, embedding)."""
    return functools.partial(ClusterLink, node)
