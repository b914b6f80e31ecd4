"""A cluster node: membership and session leases, fenced event streams, and the entry points
of routed commands (their machinery is ``_commands.CommandRouter``).

Kept in one module: the renewal, the claims and the fenced writes share the node's lease
state, which must change in one place so that a lost lease stops every write at once.

Redis key layout (``P`` is the prefix, default ``pitrio``):

- ``P:nodes``: set of node ids (a hint; a node is live while its lease key exists)
- ``P:n:{node}:lease``: the node's membership lease, ``token|address``, PX lease_ttl
- ``P:n:{node}:commands``: commands routed to the node; consumer group ``pitrio``
- ``P:n:{node}:replies``: replies to the commands this node sent as a gateway
- ``P:n:{node}:watch:{k}``: the wake stream of this node's k-th watcher
- ``P:sessions``: hash of every known session id to its last owner
- ``P:s:{session}:lease``: the session's lease, ``epoch|node|token``, PX lease_ttl
- ``P:s:{session}:epoch``: the session's epoch counter (INCR on every takeover)
- ``P:s:{session}:events``: the session's events, entry id ``epoch-seq``, field ``p``
- ``P:s:{session}:trimmed``: the id of the last event trimmed from that stream
- ``P:r:{request_id}``: a command's stored result (SET NX EX result_ttl)
"""

from __future__ import annotations

import collections
import functools
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import coredis
import structlog
import trio
from coredis.retry import NoRetryPolicy

from pitrio._exceptions import UsageError, unwrap_group
from pitrio.host.cluster._commands import COMMAND_GROUP, CommandRouter
from pitrio.host.cluster._errors import (
    ClusterUnavailable,
    LeaseHeld,
    NotAMember,
    StaleOwner,
)
from pitrio.host.cluster._renewal import RenewalThread, RenewOutcome, RenewRequest
from pitrio.host.cluster._resp import RespClient
from pitrio.host.cluster._scripts import REDIS_FAILURES, RENEW, Refused, ScriptRunner
from pitrio.host.cluster._types import (
    Command,
    EventCursor,
    NodeInfo,
    OwnershipEvent,
    SessionAssigned,
    SessionLost,
    rendezvous_owner,
)
from pitrio.host.cluster._watch import Watcher

log = structlog.get_logger(__name__)

REPLAY_SIZE: Final = 1024
"""Events kept per session stream (trimmed exactly, once an eighth over): what a reconnecting
client can resume from without a snapshot."""
RESULT_TTL: Final = 300.0
"""Seconds a command's result stays stored: the window in which a retry returns it."""
OWNERSHIP_BUFFER: Final = 64
"""Ownership events waiting for the host; pending ones beyond it wait in a per-session map
(at most one per session, kind and epoch), so a slow host never stalls lease renewal."""
STALL_LIMIT: Final = 30.0
"""Seconds the node's event loop may go without running its heartbeat before the renewal
thread stops renewing its leases (a hung process must not hold sessions forever)."""
RENEWALS_PENDING: Final = 8
"""Renewal outcomes waiting for the loop; older ones are dropped (each renewal reports the
whole state again, so the newest ones suffice)."""
LEAVE_TIMEOUT: Final = 2.0
"""Seconds a closing node spends releasing its leases (shielded) before giving up; the leases
then expire on their own."""


class ClusterNode:
    """One process's membership of the cluster. Create it with :func:`open_cluster_node`.

    Ownership: a session is owned by at most one node at a time, through a lease with an epoch
    that increases on every takeover. Every write for a session is fenced: it checks, inside
    the same Lua script, that the lease is this node's at that epoch, so a node that lost the
    session (expired, taken, or unable to renew) never writes after the takeover.

    Placement: :meth:`owner_of` is rendezvous hashing over the live nodes; a session only moves
    when its owner dies or releases it (a live owner keeps it even if a new node would now win
    it), and the node it then lands on gets :class:`SessionAssigned`.

    Resource handling: the channels of :meth:`ownership_events` and :meth:`commands` end when
    the node's block exits.
    """

    def __init__(
        self,
        redis: coredis.Redis[bytes],
        *,
        node_id: str,
        address: str,
        lease_ttl: float,
        prefix: str,
        replay_size: int,
        result_ttl: float,
        url: str = "",
        stall_limit: float = STALL_LIMIT,
    ) -> None:
        self._redis = redis
        self._url = url
        self._stall_limit = stall_limit
        self.node_id: Final = node_id
        self.address: Final = address
        self._ttl = lease_ttl
        self._ttl_ms = max(1, round(lease_ttl * 1000))
        self._prefix = prefix
        self._replay_size = replay_size
        self._token = secrets.token_hex(8)
        self._lease_value = self._node_lease(self._token)
        self._previous_lease_value = ""
        self._member = False
        self._valid_until = -float("inf")
        """:func:`time.monotonic` deadline of the leases; written by the renewal thread too."""
        self._registered_at = -float("inf")
        self._renewals: collections.deque[RenewOutcome] = collections.deque(maxlen=RENEWALS_PENDING)
        self._renewals_ready = trio.Event()
        self._owned: dict[str, int] = {}
        self._members: list[NodeInfo] = []
        self._announced: set[str] = set()
        self._skip_leave = False
        self._takeovers = 0
        self._command_lag = 0
        self._watchers: set[Watcher] = set()
        self._watch_counter = 0
        self._pending_events: dict[tuple[str, str, int], OwnershipEvent] = {}
        self._events_ready = trio.Event()
        self._events_send, self._events_receive = trio.open_memory_channel[OwnershipEvent](
            OWNERSHIP_BUFFER
        )
        self._scripts = ScriptRunner(redis)
        self._router = CommandRouter(
            redis,
            self._scripts,
            node_id=node_id,
            prefix=prefix,
            retry_delay=lease_ttl / 3,
            result_ttl=max(1, round(result_ttl)),
            reply_stream_ttl_ms=max(self._ttl_ms * 12, 60_000),
            owns=self.owns,
        )

    # -- keys ------------------------------------------------------------------------------

    def _node_key(self, node_id: str, what: str) -> str:
        return f"{self._prefix}:n:{node_id}:{what}"

    def _session_key(self, session_id: str, what: str) -> str:
        return f"{self._prefix}:s:{session_id}:{what}"

    def _node_lease(self, token: str) -> str:
        return f"{token}|{self.address}"

    def _session_lease(self, session_id: str, epoch: int, token: str | None = None) -> str:
        return f"{epoch}|{self.node_id}|{self._token if token is None else token}"

    async def _call(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return await self._scripts.call(name, keys, args)

    # -- membership ------------------------------------------------------------------------

    def live_nodes(self) -> list[NodeInfo]:
        """The live nodes as of the last renewal (every ``lease_ttl / 3``), sorted by id.

        Includes this node while its membership holds. :meth:`refresh` updates it now.
        """
        return list(self._members)

    def owner_of(self, session_id: str) -> NodeInfo:
        """Where rendezvous hashing places ``session_id`` over :meth:`live_nodes`.

        This is placement, not ownership: a live owner keeps a session placed elsewhere until
        it dies or releases it (the lease decides; commands are routed by the lease).

        Raises:
            NotAMember: no live node is known (this node's membership is lost).
        """
        if not self._members:
            raise NotAMember(f"node {self.node_id!r} knows no live node")
        return rendezvous_owner(session_id, self._members)

    async def refresh(self) -> None:
        """Renew the leases and reread the membership now, instead of at the next tick."""
        await self._renew()

    async def _register(self) -> None:
        started = time.monotonic()
        try:
            await self._call(
                "REGISTER",
                [self._node_key(self.node_id, "lease"), f"{self._prefix}:nodes"],
                [self._lease_value, self._ttl_ms, self.node_id, self._previous_lease_value],
            )
        except Refused:
            raise LeaseHeld(self.node_id, self.node_id) from None
        self._member = True
        self._registered_at = time.monotonic()
        self._valid_until = started + self._ttl

    def _renew_request(self) -> RenewRequest:
        # Called by the renewal thread too: every lease value comes from one read of the token,
        # so a request never mixes two incarnations.
        token = self._token
        lease_value = self._node_lease(token)
        owned = dict(self._owned)
        args: list[Any] = [lease_value, self._ttl_ms, self._prefix, COMMAND_GROUP]
        for session_id, epoch in owned.items():
            args += [session_id, self._session_lease(session_id, epoch, token)]
        keys = [
            self._node_key(self.node_id, "lease"),
            f"{self._prefix}:nodes",
            f"{self._prefix}:sessions",
            self._node_key(self.node_id, "commands"),
        ]
        return RenewRequest(lease_value, owned, keys, args)

    def _is_current(self, outcome: RenewOutcome) -> bool:
        # An outcome of an earlier incarnation, or one Redis may have evaluated before this
        # incarnation registered, says nothing about the current leases.
        return (
            outcome.request.lease_value == self._lease_value
            and outcome.started >= self._registered_at
        )

    async def _renew(self) -> None:
        request = self._renew_request()
        started = time.monotonic()
        try:
            reply = await self._call("RENEW", request.keys, request.args)
        except ClusterUnavailable as exc:
            outcome = RenewOutcome(request, started, None, str(exc))
        else:
            outcome = RenewOutcome(request, started, reply)
        await self._apply_renewal(outcome)

    def _renewed_in_thread(
        self, trio_token: trio.lowlevel.TrioToken, outcome: RenewOutcome
    ) -> None:
        """The renewal thread's outcome: move the validity deadline now (a float assignment,
        read by the loop), then hand the outcome to the loop.

        A session this renewal found lost still reads as owned until the loop applies the
        outcome (a tick later at most, for a live loop): its appends are refused in Redis, where
        the lease is checked, so that local check stays an early refusal, not the fence."""
        if self._is_current(outcome):
            if outcome.reply is not None and outcome.reply[0]:
                self._valid_until = max(self._valid_until, outcome.started + self._ttl)
            else:
                self._valid_until = -float("inf")
        with suppress(trio.RunFinishedError):
            trio_token.run_sync_soon(self._queue_renewal, outcome)

    def _queue_renewal(self, outcome: RenewOutcome) -> None:
        self._renewals.append(outcome)
        self._renewals_ready.set()

    async def _apply_renewal(self, outcome: RenewOutcome) -> None:
        if not self._is_current(outcome):
            return
        if outcome.reply is None:
            log.warning("cluster_renewal_failed", node_id=self.node_id, error=outcome.error)
            self._lose_all()
            return
        member, lost, nodes, orphans, lag = outcome.reply
        owned = outcome.request.owned
        if not member:
            log.warning("cluster_membership_lost", node_id=self.node_id)
            self._lose_all()
            try:
                await self._register()
            except (LeaseHeld, ClusterUnavailable):
                return
            nodes = [*nodes, self.node_id.encode(), self._lease_value.encode()]
        else:
            self._valid_until = max(self._valid_until, outcome.started + self._ttl)
            for session_id in lost:
                self._lose(session_id.decode(), owned.get(session_id.decode()))
        self._command_lag = int(lag)
        members = {}
        for i in range(0, len(nodes), 2):
            node_id = nodes[i].decode()
            members[node_id] = NodeInfo(node_id, nodes[i + 1].decode().partition("|")[2])
        self._members = sorted(members.values(), key=lambda n: n.node_id)
        self._assign([o.decode() for o in orphans])

    def _assign(self, orphans: list[str]) -> None:
        self._announced &= set(orphans)
        if not self._member or not self._members:
            return
        for session_id in orphans:
            if session_id in self._owned or session_id in self._announced:
                continue
            if rendezvous_owner(session_id, self._members).node_id == self.node_id:
                self._announced.add(session_id)
                self._queue_event(SessionAssigned(session_id))

    def _lose(self, session_id: str, epoch: int | None) -> None:
        if epoch is None or self._owned.get(session_id) != epoch:
            return
        del self._owned[session_id]
        log.info("cluster_session_lost", node_id=self.node_id, session_id=session_id, epoch=epoch)
        self._queue_event(SessionLost(session_id, epoch))

    def _lose_all(self) -> None:
        # A new incarnation: leases of the old token (still in Redis if only the renewal
        # failed) are no longer this node's, so a claim after a loss always takes a new epoch.
        # The registered membership may be replaced by the new one at once.
        if self._member:
            self._previous_lease_value = self._lease_value
        self._member = False
        self._valid_until = -float("inf")
        self._token = secrets.token_hex(8)
        self._lease_value = self._node_lease(self._token)
        for session_id, epoch in list(self._owned.items()):
            self._lose(session_id, epoch)

    def _queue_event(self, event: OwnershipEvent) -> None:
        epoch = event.epoch if isinstance(event, SessionLost) else 0
        self._pending_events[(event.session_id, event.type, epoch)] = event
        self._events_ready.set()

    def ownership_events(self) -> trio.MemoryReceiveChannel[OwnershipEvent]:
        """The channel of :class:`SessionAssigned` and :class:`SessionLost` events, in order.

        One consumer (the host). A lost session's writes already refuse before its event is
        read: the event tells the host to stop the session, it is not the fence.
        """
        return self._events_receive

    async def _run_renewal(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Renew once from the loop, then every ``lease_ttl / 3`` from a thread of its own
        (with its own connection) while the loop applies the outcomes and beats."""
        await self._renew()
        thread = RenewalThread(
            RespClient(self._url, timeout=self._ttl),
            RENEW,
            interval=self._ttl / 3,
            stall_limit=self._stall_limit,
            prepare=self._renew_request,
            renewed=functools.partial(self._renewed_in_thread, trio.lowlevel.current_trio_token()),
        )
        task_status.started()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_heartbeat, thread)
            nursery.start_soon(self._run_renewal_outcomes)
            await trio.to_thread.run_sync(
                thread.run, abandon_on_cancel=False, limiter=trio.CapacityLimiter(1)
            )

    async def _run_heartbeat(self, thread: RenewalThread) -> None:
        try:
            while True:
                thread.beat()
                await trio.sleep(self._ttl / 3)
        finally:
            # Cancelled (the node is closing): the thread returns, its task joins it.
            thread.stop()

    async def _run_renewal_outcomes(self) -> None:
        while True:
            await self._renewals_ready.wait()
            self._renewals_ready = trio.Event()
            while self._renewals:
                await self._apply_renewal(self._renewals.popleft())

    async def _run_events(self) -> None:
        with self._events_send:
            while True:
                await self._events_ready.wait()
                self._events_ready = trio.Event()
                while self._pending_events:
                    key = next(iter(self._pending_events))
                    event = self._pending_events.pop(key)
                    await self._events_send.send(event)

    # -- session ownership -----------------------------------------------------------------

    async def claim(self, session_id: str) -> int:
        """Take the session's lease and return its new epoch.

        The epoch is INCR'd on every takeover, atomically with the lease. Claiming a session
        this node already holds renews it and returns the same epoch. Commands still pending
        for it on a dead previous owner's stream are adopted: they come out of
        :meth:`commands` unless a result for their request id exists (then the stored result
        is sent back instead).

        Raises:
            LeaseHeld: a live other node holds it.
            NotAMember: this node's membership lease is gone.
        """
        if not self._member:
            raise NotAMember(f"node {self.node_id!r} is not a live member")
        try:
            epoch, previous = await self._call(
                "CLAIM",
                [
                    self._session_key(session_id, "lease"),
                    self._session_key(session_id, "epoch"),
                    f"{self._prefix}:sessions",
                    self._node_key(self.node_id, "lease"),
                ],
                [
                    self.node_id,
                    self._token,
                    self._ttl_ms,
                    session_id,
                    self._lease_value,
                    self._prefix,
                ],
            )
        except Refused as refusal:
            if refusal.code == "PITRIO_HELD":
                raise LeaseHeld(session_id, refusal.detail) from None
            self._lose_all()
            raise NotAMember(f"node {self.node_id!r} is not a live member") from None
        epoch = int(epoch)
        self._owned[session_id] = epoch
        self._announced.discard(session_id)
        previous = previous.decode()
        if previous and previous != self.node_id:
            # (An earlier incarnation of this node id left its pending commands in this
            # node's own stream: the command reader rereads those when the node opens.)
            self._takeovers += 1
            self._router.adopt(session_id, previous)
        log.info(
            "cluster_session_claimed", node_id=self.node_id, session_id=session_id, epoch=epoch
        )
        return epoch

    async def holder_of(self, session_id: str) -> NodeInfo | None:
        """The node holding the session's lease now (read from Redis), or None when nobody
        does. Its address is the membership view's (empty if that node is not in it).

        Raises:
            ClusterUnavailable: Redis could not be read.
        """
        try:
            lease = await self._redis.get(self._session_key(session_id, "lease"))
        except REDIS_FAILURES as exc:
            raise ClusterUnavailable(f"Redis failed reading a lease: {exc!r}") from exc
        if lease is None:
            return None
        node_id = lease.decode().split("|")[1]
        known = {node.node_id: node for node in self._members}
        return known.get(node_id, NodeInfo(node_id, ""))

    def owns(self, session_id: str) -> bool:
        """Whether this node holds the session's lease (as of its last renewal or claim)."""
        return session_id in self._owned and time.monotonic() < self._valid_until

    def epoch_of(self, session_id: str) -> int | None:
        """The epoch this node holds the session at, or None when it does not own it."""
        return self._owned.get(session_id) if self.owns(session_id) else None

    async def release(self, session_id: str) -> None:
        """Give up the session's lease (if held), so the node rendezvous places it on may
        claim it at once. Its later writes at the old epoch refuse."""
        epoch = self._owned.pop(session_id, None)
        if epoch is None:
            return
        await self._call(
            "RELEASE",
            [self._session_key(session_id, "lease")],
            [self._session_lease(session_id, epoch)],
        )

    async def close(self, session_id: str) -> None:
        """Give up the lease of a session closed here (if held) and take it out of the
        registry in the same step: no node is assigned it until someone opens it again (a
        claim registers it anew). :meth:`release` instead hands a live session over."""
        epoch = self._owned.pop(session_id, None)
        if epoch is None:
            return
        await self._call(
            "CLOSE",
            [self._session_key(session_id, "lease"), f"{self._prefix}:sessions"],
            [self._session_lease(session_id, epoch), session_id],
        )

    async def forget(self, session_id: str) -> None:
        """Remove a deleted session from the registry (no node will be assigned it again) and
        drop its event stream and lease."""
        self._owned.pop(session_id, None)
        try:
            await self._redis.hdel(f"{self._prefix}:sessions", [session_id])
            await self._redis.delete(
                [
                    self._session_key(session_id, "events"),
                    self._session_key(session_id, "trimmed"),
                    self._session_key(session_id, "lease"),
                ]
            )
        except REDIS_FAILURES as exc:
            raise ClusterUnavailable(f"Redis failed forget: {exc!r}") from exc

    async def _leave(self) -> None:
        owned, self._owned = self._owned, {}
        if owned:
            await self._call(
                "RELEASE",
                [self._session_key(s, "lease") for s in owned],
                [self._session_lease(s, e) for s, e in owned.items()],
            )
        await self._call(
            "LEAVE",
            [self._node_key(self.node_id, "lease"), f"{self._prefix}:nodes"],
            [self._lease_value, self.node_id],
        )
        self._member = False

    def _abandon(self) -> None:
        """Test hook: make the node's exit skip releasing its leases, as a killed process
        would (they then expire by their TTL)."""
        self._skip_leave = True

    # -- events ----------------------------------------------------------------------------

    def writable(self, session_id: str, epoch: int) -> bool:
        """Whether this node may still write the session at ``epoch``: it holds it, and its
        leases were renewed less than a lease TTL ago by its own clock (the renewal's start:
        a conservative bound on Redis' expiry).

        The first call that finds the leases lapsed loses every session at once, as a failed
        renewal does (:class:`SessionLost` for each, a new incarnation; a renewal that
        arrives later is not applied), so a write refused here is never followed by one
        allowed at the same epoch. Synchronous and cheap: asked before every file write of a
        session this node owns.
        """
        if self._owned.get(session_id) != epoch:
            return False
        if time.monotonic() >= self._valid_until:
            log.warning("cluster_leases_lapsed", node_id=self.node_id)
            self._lose_all()
            return False
        return True

    def _check_fence(self, session_id: str, epoch: int) -> None:
        if not self.writable(session_id, epoch):
            raise StaleOwner(session_id, epoch)

    async def append_event(self, session_id: str, epoch: int, seq: int, payload: bytes) -> None:
        """Append one event at entry id ``epoch-seq`` (see :meth:`append_events`)."""
        await self.append_events(session_id, epoch, [(seq, payload)])

    async def append_events(
        self, session_id: str, epoch: int, events: Sequence[tuple[int, bytes]]
    ) -> None:
        """Append events to the session's stream in one round trip, as ids ``epoch-seq``.

        Fenced twice, inside one Lua script: the session's lease must be this node's at
        ``epoch`` (the fence that holds before the new owner's first write), and every id must
        be above the stream's last (so a stale epoch's write after the new owner wrote is
        refused by the ids alone). Nothing is written when either fails. The stream is trimmed
        to ``replay_size`` entries once it is an eighth over (the last trimmed id recorded).

        Raises:
            StaleOwner: this node does not hold the session at ``epoch`` (checked locally
                first: a lost or unrenewed lease refuses without a round trip).
            UsageError: a seq not above the last one written at this epoch.
        """
        if not events:
            return
        self._check_fence(session_id, epoch)
        args: list[Any] = [self._session_lease(session_id, epoch), self._replay_size, epoch]
        for seq, payload in events:
            args += [seq, payload]
        try:
            await self._call(
                "APPEND",
                [
                    self._session_key(session_id, "lease"),
                    self._session_key(session_id, "events"),
                    self._session_key(session_id, "trimmed"),
                ],
                args,
            )
        except Refused as refusal:
            if refusal.code == "PITRIO_STALE":
                self._lose(session_id, epoch)
                raise StaleOwner(session_id, epoch) from None
            raise UsageError(f"session {session_id!r}: {refusal.detail}") from None

    async def read_events(
        self, session_id: str, after: EventCursor | None = None
    ) -> list[tuple[int, int, bytes]] | None:
        """The session's events after ``after`` as ``(epoch, seq, payload)``, oldest first.

        ``after=None`` reads from the start. Returns None when events after the cursor were
        trimmed away: the caller sends a snapshot instead.
        """
        cursor = "" if after is None else f"{after[0]}-{after[1]}"
        reply = await self._call(
            "READ",
            [self._session_key(session_id, "events"), self._session_key(session_id, "trimmed")],
            [cursor],
        )
        if not reply[0]:
            return None
        out: list[tuple[int, int, bytes]] = []
        for entry_id, fields in reply[1]:
            epoch, _, seq = entry_id.decode().partition("-")
            out.append((int(epoch), int(seq), fields[1]))
        return out

    @asynccontextmanager
    async def watch(self) -> AsyncIterator[Watcher]:
        """Open a gateway reader over any number of session streams (see :class:`Watcher`).

        Resource handling: the watcher's reader runs in a nursery of its own, closed when the
        block exits; its output channel then ends.
        """
        self._watch_counter += 1
        wake_key = self._node_key(self.node_id, f"watch:{self._watch_counter}")
        watcher = Watcher(
            self._redis,
            event_key=functools.partial(self._session_key, what="events"),
            wake_key=wake_key,
            last_ids=self._scripts.script("LAST_IDS"),
        )
        self._watchers.add(watcher)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(watcher.run)
                try:
                    yield watcher
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            self._watchers.discard(watcher)
            with trio.move_on_after(LEAVE_TIMEOUT, shield=True):
                with suppress(*REDIS_FAILURES):
                    await self._redis.delete([wake_key])

    # -- commands --------------------------------------------------------------------------

    async def send_command(
        self,
        session_id: str,
        request_id: str,
        command: bytes,
        timeout: float,  # noqa: ASYNC109 (the gateway's per-command deadline, part of the API)
    ) -> bytes:
        """Route a command to the session's owner and return its reply.

        The owner is the session lease's holder, or the node rendezvous places the session on
        when nobody holds it. The command goes to the owner's command stream; the reply comes
        back on this node's reply stream (``P:n:{node}:replies``), read by one task.
        ``request_id`` is the idempotency key: when a result is already stored for it, that
        result returns at once and nothing is sent.

        Raises:
            CommandTimeout: no reply within ``timeout`` seconds; retry with the same
                ``request_id``.
            NotAMember: no live node is known to route to.
            ClusterUnavailable: Redis failed the send.
        """
        fallback = self.owner_of(session_id).node_id
        deadline = trio.current_time() + timeout
        return await self._router.send(session_id, request_id, command, deadline, fallback)

    def commands(self) -> trio.MemoryReceiveChannel[Command]:
        """The channel of commands routed to this node (one consumer: the host).

        A command for a session another live node holds (sent just before a handoff) is
        forwarded there, not yielded. One for a session nobody live holds (routed by placement)
        is yielded: the host claims the session, then runs it. Duplicates of a request id still
        in flight here are not yielded again: they get the first one's reply.
        """
        return self._router.commands()

    # -- metrics ---------------------------------------------------------------------------

    def metrics(self) -> dict[str, int]:
        """A snapshot for ``/metrics``.

        Keys: ``owned_sessions``; ``watched_streams`` (over this node's open watchers);
        ``watch_backlog`` (events read but not yet taken from the watchers); ``takeovers``
        (claims of a session another node held); ``stream_lag`` (entries of this node's
        command stream not yet delivered or not yet acked, as of the last renewal);
        ``commands_served`` (replies this node wrote as an owner); ``live_nodes``.
        """
        return {
            "owned_sessions": len(self._owned),
            "watched_streams": sum(w.watched_count() for w in self._watchers),
            "watch_backlog": sum(w.backlog() for w in self._watchers),
            "takeovers": self._takeovers,
            "stream_lag": self._command_lag,
            "commands_served": self._router.served,
            "live_nodes": len(self._members),
        }


@asynccontextmanager
async def open_cluster_node(
    url: str,
    *,
    node_id: str | None = None,
    address: str,
    lease_ttl: float = 5.0,
    prefix: str = "pitrio",
    replay_size: int = REPLAY_SIZE,
    result_ttl: float = RESULT_TTL,
    stall_limit: float = STALL_LIMIT,
) -> AsyncIterator[ClusterNode]:
    """Join the cluster at ``url`` (``redis://HOST:PORT``) as a node, for the block's length.

    Registers the membership lease (``node_id``, random when None; ``address`` is the node's
    public websocket address) and renews it, with every session lease the node holds, in one
    script every ``lease_ttl / 3``. The renewal runs in a thread of its own with its own
    connection to Redis, so an event loop busy for seconds keeps its leases; only a loop that
    has not run its heartbeat for ``stall_limit`` seconds (a hung process) stops the renewal
    and lets its leases lapse. When a renewal fails or finds the membership gone or taken,
    every session is lost at once (:class:`SessionLost`; fenced writes refuse) and the node
    registers again at the next tick. The same renewal reads the live nodes and announces
    :class:`SessionAssigned` for sessions without a lease that rendezvous now places here.

    Resource handling: the node's tasks (renewal, whose thread is joined on exit, ownership
    events, command reader, reply reader, command adoption) run in a nursery the block owns.
    On exit they are cancelled and the node releases its session leases and deregisters
    (shielded, at most ``LEAVE_TIMEOUT``), so the sessions' next owners are assigned at their
    next renewal.

    Raises:
        LeaseHeld: a live node already uses ``node_id``.
        ClusterUnavailable: Redis could not be reached.
        UsageError: ``node_id`` contains ``|``, or ``stall_limit`` is not above ``lease_ttl``.
    """
    node_id = node_id or secrets.token_hex(8)
    if "|" in node_id:
        raise UsageError(f"a node id cannot contain '|' (it separates lease fields): {node_id!r}")
    if not stall_limit > lease_ttl:
        raise UsageError(f"stall_limit ({stall_limit}) must be above lease_ttl ({lease_ttl})")
    client: coredis.Redis[bytes] = coredis.Redis.from_url(url, retry_policy=NoRetryPolicy())
    try:
        async with client:
            node = ClusterNode(
                client,
                node_id=node_id,
                address=address,
                lease_ttl=lease_ttl,
                prefix=prefix,
                replay_size=replay_size,
                result_ttl=result_ttl,
                url=url,
                stall_limit=stall_limit,
            )
            await node._register()
            try:
                await node._router.ensure_group()
                await client.delete([node._node_key(node_id, "replies")])
            except REDIS_FAILURES as exc:
                raise ClusterUnavailable(f"Redis failed joining: {exc!r}") from exc
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(node._run_renewal)
                    nursery.start_soon(node._run_events)
                    nursery.start_soon(node._router.run_commands)
                    nursery.start_soon(node._router.run_replies)
                    nursery.start_soon(node._router.run_adopter)
                    try:
                        yield node
                    finally:
                        nursery.cancel_scope.cancel()
            finally:
                if not node._skip_leave:
                    with trio.move_on_after(LEAVE_TIMEOUT, shield=True):
                        try:
                            await node._leave()
                        except ClusterUnavailable as exc:
                            log.warning("cluster_leave_failed", node_id=node_id, error=str(exc))
    except BaseExceptionGroup as group:
        # coredis' connection pool and the node's nursery each wrap what escapes them; the
        # caller's own exception (or LeaseHeld) should read as itself.
        leaf = unwrap_group(group)
        if leaf is group:
            raise
        raise leaf from None
