"""Commands routed from a gateway node to a session's owner node, over Redis Streams.

Each node has a command stream (``P:n:{node}:commands``, consumer group ``pitrio``) that one
task reads, and a reply stream (``P:n:{node}:replies``) that one task reads for the commands
it sent as a gateway. Results are stored under the request id (``P:r:{request_id}``, SET NX EX),
which is the idempotency key.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any, Final, cast

import coredis
import structlog
import trio
from coredis.exceptions import StreamConsumerGroupError, StreamDuplicateConsumerGroupError

from pitrio.host.cluster._errors import ClusterUnavailable, CommandTimeout
from pitrio.host.cluster._scripts import REDIS_FAILURES, ScriptRunner
from pitrio.host.cluster._types import Command

log = structlog.get_logger(__name__)

COMMAND_BUFFER: Final = 64
"""Commands read from the node's stream waiting for the host; when full the reader stops
reading (they stay in Redis, undelivered), which is the backpressure."""
COMMAND_BATCH: Final = 64
"""Entries asked for per XREADGROUP / XREAD of the command and reply readers."""
BLOCK_MS: Final = 5000
"""Longest a blocking stream read waits before it is issued again; new entries end it sooner."""
REPLY_STREAM_MAXLEN: Final = 4096
"""Replies kept in a gateway's reply stream; its reader consumes them as they arrive."""
RECENT_RESULTS: Final = 1024
"""Results of the last commands this node ran, kept to answer a late duplicate without running
it again (Redis keeps every result for ``result_ttl``; this saves the lookup)."""
COMMAND_GROUP: Final = "pitrio"
"""The consumer group on every node's command stream."""

_Target = tuple[str, bytes, str]
"""Where a reply goes: the command stream, the entry id to ack there, the gateway node id."""


class _Reply:
    """A gateway's slot for one command's reply."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value = b""


class CommandRouter:
    """A node's two sides of command routing: the gateway's send and reply reader, and the
    owner's command reader and adoption of a dead owner's pending commands.

    Its tasks (:meth:`run_commands`, :meth:`run_replies`, :meth:`run_adopter`) run in the
    node's nursery.
    """

    def __init__(
        self,
        redis: coredis.Redis[bytes],
        scripts: ScriptRunner,
        *,
        node_id: str,
        prefix: str,
        retry_delay: float,
        result_ttl: int,
        reply_stream_ttl_ms: int,
        owns: Callable[[str], bool],
    ) -> None:
        self._redis = redis
        self._owns = owns
        self._scripts = scripts
        self._node_id = node_id
        self._prefix = prefix
        self._retry_delay = retry_delay
        self._result_ttl = result_ttl
        self._reply_stream_ttl_ms = reply_stream_ttl_ms
        self.served = 0
        """Replies this node wrote as an owner."""
        self._send, self._receive = trio.open_memory_channel[Command](COMMAND_BUFFER)
        self._in_flight: dict[str, list[_Target]] = {}
        self._recent_results: dict[str, bytes] = {}
        self._waiters: dict[str, list[_Reply]] = {}
        self._adoptions: dict[str, str] = {}
        self._adoptions_ready = trio.Event()

    def _stream(self, node_id: str, what: str) -> str:
        return f"{self._prefix}:n:{node_id}:{what}"

    # -- the gateway's side ------------------------------------------------------------------

    async def send(
        self,
        session_id: str,
        request_id: str,
        command: bytes,
        deadline: float,
        fallback_owner: str,
    ) -> bytes:
        """See :meth:`ClusterNode.send_command`."""
        waiter = _Reply()
        self._waiters.setdefault(request_id, []).append(waiter)
        try:
            with trio.move_on_at(deadline):
                done, value = await self._scripts.call(
                    "SEND",
                    [f"{self._prefix}:r:{request_id}", f"{self._prefix}:s:{session_id}:lease"],
                    [fallback_owner, self._prefix, session_id, request_id, self._node_id, command],
                )
                if done:
                    return cast(bytes, value)
                await waiter.done.wait()
                return waiter.value
            raise CommandTimeout(session_id, request_id)
        finally:
            waiters = self._waiters.get(request_id, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiters.pop(request_id, None)

    async def run_replies(self) -> None:
        """Read this node's reply stream and wake the senders waiting for each request."""
        stream = self._stream(self._node_id, "replies")
        cursor: Any = "0-0"
        while True:
            try:
                reply = await self._redis.xread(
                    {stream: cursor}, count=COMMAND_BATCH, block=BLOCK_MS
                )
            except REDIS_FAILURES as exc:
                log.warning("cluster_reply_read_failed", error=repr(exc))
                await trio.sleep(self._retry_delay)
                continue
            for entries in (reply or {}).values():
                for entry in entries:
                    cursor = entry.identifier
                    fields = cast("dict[bytes, bytes]", entry.field_values)
                    for waiter in self._waiters.get(fields[b"r"].decode(), []):
                        waiter.value = fields[b"v"]
                        waiter.done.set()

    # -- the owner's side --------------------------------------------------------------------

    def commands(self) -> trio.MemoryReceiveChannel[Command]:
        """See :meth:`ClusterNode.commands`."""
        return self._receive

    def adopt(self, session_id: str, previous_owner: str) -> None:
        """Queue the adoption of ``previous_owner``'s pending commands for ``session_id``."""
        self._adoptions[session_id] = previous_owner
        self._adoptions_ready.set()

    async def ensure_group(self) -> None:
        """Create this node's command stream and its consumer group (reading from the start:
        an earlier incarnation's undelivered commands are read too)."""
        with suppress(StreamDuplicateConsumerGroupError):
            await self._redis.xgroup_create(
                self._stream(self._node_id, "commands"), COMMAND_GROUP, "0", mkstream=True
            )

    async def run_commands(self) -> None:
        """Read this node's command stream (as its consumer group's one consumer) and hand
        each command to the host, or forward it to the live node that now holds its session.

        It starts with the entries still pending for this node id (taken by an earlier
        incarnation that died before answering), then reads new ones.
        """
        stream = self._stream(self._node_id, "commands")
        position: Any = "0"  # an id: pending entries after it; ">": new entries
        with self._send:
            while True:
                try:
                    reply = await self._redis.xreadgroup(
                        COMMAND_GROUP,
                        self._node_id,
                        {stream: position},
                        count=COMMAND_BATCH,
                        block=None if position != ">" else BLOCK_MS,
                    )
                except REDIS_FAILURES as exc:
                    if isinstance(exc, StreamConsumerGroupError):
                        # Redis lost the group (restarted without persistence): make it anew.
                        with suppress(*REDIS_FAILURES):
                            await self.ensure_group()
                        continue
                    log.warning("cluster_command_read_failed", error=repr(exc))
                    await trio.sleep(self._retry_delay)
                    continue
                entries = [e for batch in (reply or {}).values() for e in batch]
                if position != ">":
                    # Paging through the pending entries; once a page is short, all are read.
                    position = entries[-1].identifier if len(entries) == COMMAND_BATCH else ">"
                for entry in entries:
                    if not entry.field_values:
                        continue  # pending, but deleted from the stream since
                    fields = cast("dict[bytes, bytes]", entry.field_values)
                    try:
                        await self._handle(stream, cast(bytes, entry.identifier), fields)
                    except ClusterUnavailable as exc:
                        # Left pending in the group: the session's next owner adopts it.
                        log.warning("cluster_command_take_failed", error=str(exc))

    async def _handle(self, stream: str, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        session_id = fields[b"s"].decode()
        target = (stream, entry_id, fields[b"g"].decode())
        if not self._owns(session_id):
            holder = await self._scripts.call(
                "FORWARD",
                [f"{self._prefix}:s:{session_id}:lease"],
                [
                    self._prefix,
                    self._node_id,
                    stream,
                    COMMAND_GROUP,
                    entry_id,
                    fields[b"s"],
                    fields[b"r"],
                    fields[b"g"],
                    fields[b"p"],
                ],
            )
            if holder:
                return
        await self._take(self._send, target, session_id, fields[b"r"].decode(), fields[b"p"])

    async def run_adopter(self) -> None:
        """Adopt the pending commands of the sessions queued by :meth:`adopt`."""
        send = self._send.clone()
        with send:
            while True:
                await self._adoptions_ready.wait()
                self._adoptions_ready = trio.Event()
                while self._adoptions:
                    session_id = next(iter(self._adoptions))
                    previous = self._adoptions.pop(session_id)
                    try:
                        await self._adopt(session_id, previous, send)
                    except ClusterUnavailable as exc:
                        log.warning("cluster_adopt_failed", session_id=session_id, error=str(exc))

    async def _adopt(
        self, session_id: str, previous: str, send: trio.MemorySendChannel[Command]
    ) -> None:
        stream = self._stream(previous, "commands")
        flat = await self._scripts.call("ADOPT", [stream], [session_id, self._prefix, previous])
        for i in range(0, len(flat), 6):
            entry_id, request_id, gateway, payload, has_result, result = flat[i : i + 6]
            target = (stream, bytes(entry_id), gateway.decode())
            request = request_id.decode()
            if has_result:
                await self._write_reply(request, bytes(result), [target])
                continue
            log.info("cluster_command_adopted", session_id=session_id, request_id=request)
            await self._take(send, target, session_id, request, bytes(payload))

    async def _take(
        self,
        send: trio.MemorySendChannel[Command],
        target: _Target,
        session_id: str,
        request_id: str,
        payload: bytes,
    ) -> None:
        """Hand one command stream entry to the host, unless its request already has a result
        here (answer with it) or is running here (answer it with that run's result)."""
        recent = self._recent_results.get(request_id)
        if recent is not None:
            await self._write_reply(request_id, recent, [target])
            return
        waiting = self._in_flight.get(request_id)
        if waiting is not None:
            waiting.append(target)
            return
        self._in_flight[request_id] = [target]
        reply: Callable[[bytes], Any] = functools.partial(self._reply, request_id)
        await send.send(Command(session_id, request_id, payload, reply=reply))

    async def _reply(self, request_id: str, result: bytes) -> None:
        targets = self._in_flight.pop(request_id, None)
        if not targets:
            return
        stored = await self._write_reply(request_id, result, targets)
        self.served += 1
        # A retry XADDed before the result was stored can still be read after this reply:
        # remembering the result answers it without a second run (or a round trip).
        self._recent_results[request_id] = stored
        while len(self._recent_results) > RECENT_RESULTS:
            del self._recent_results[next(iter(self._recent_results))]

    async def _write_reply(
        self, request_id: str, result: bytes, targets: Iterable[_Target]
    ) -> bytes:
        args: list[Any] = [
            result,
            self._result_ttl,
            self._prefix,
            COMMAND_GROUP,
            request_id,
            self._reply_stream_ttl_ms,
            REPLY_STREAM_MAXLEN,
        ]
        for stream, entry_id, gateway in targets:
            args += [stream, entry_id, gateway]
        return cast(
            bytes, await self._scripts.call("REPLY", [f"{self._prefix}:r:{request_id}"], args)
        )
