"""One websocket connection of ``pitrio serve``: frames in, commands run, frames out.

Kept in one module: one connection's frame loop: decoding, limits, dispatch and its
outbound buffer share state.

::

    Client.serve (nursery)
     |- reader   ws.get_message -> limits -> parse -> host command or RpcCommand (in order;
     |           long commands start in their session's nursery and answer from there)
     |- writer   outbound queue (limits.outbound_queue frames) -> ws.send_message
     `- pump     one per attached session: session.events(from_seq, policy="coalesce")
                 -> "{"session":..,"seq":..," + the event's JSON (encoded once per session)

A client that stops reading fills its socket, then its outbound queue; its pumps then wait and
their coalescing subscriptions merge streamed deltas; once one is cut off
(:class:`~pitrio.channels.SubscriberLagged`) the client gets a ``lagged`` frame per attached
session with the last seq it was sent, and close code 4008. The session and the other
clients never wait for it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import time
from typing import Any, Final

import orjson
import structlog
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from pitrio.channels import Snapshot, SubscriberLagged
from pitrio.codec import to_wire
from pitrio.host.rpc import _types as rpc
from pitrio.host.rpc._jsonl import JsonParseError, js_json, parse_json_line
from pitrio.host.rpc._types import MISSING, RpcResponse
from pitrio.host.ws._dispatch import ACTING_COMMANDS as ACTING_COMMANDS
from pitrio.host.ws._dispatch import dispatch_session_command
from pitrio.host.ws._host import CommandRefused, HostApi, LiveSession
from pitrio.host.ws._stream import decode_payload
from pitrio.sessions import SessionSnapshot
from pitrio.tools.builtin import builtin_tool_names

__all__ = [
    "CLOSE_GOING_AWAY",
    "CLOSE_LAGGED",
    "CLOSE_REVOKED",
    "HOST_COMMANDS",
    "Client",
    "TokenBucket",
]

log = structlog.get_logger("pitrio.host")

CLOSE_LAGGED: Final = 4008
CLOSE_GOING_AWAY: Final = 1001
CLOSE_REVOKED: Final = 4003
"""Close code of a connection whose token was revoked or has expired."""
CLOSE_TIMEOUT: Final = 5.0
"""Seconds the closing handshake may take before the socket is closed under it."""
HOST_COMMANDS: Final = frozenset(
    {
        "create_session",
        "open_session",
        "close_session",
        "detach_session",
        "list_sessions",
        "create_token",
        "revoke_token",
        "grant",
    }
)
_client_ids = itertools.count(1)


class TokenBucket:
    """``rate`` commands per second on average, bursts of ``burst`` (Trio's clock)."""

    __slots__ = ("_burst", "_level", "_rate", "_stamp")

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._level = float(burst)
        self._stamp = trio.current_time()

    def take(self) -> bool:
        """Take one token; False when the bucket is empty."""
        now = trio.current_time()
        self._level = min(self._burst, self._level + (now - self._stamp) * self._rate)
        self._stamp = now
        if self._level < 1.0:
            return False
        self._level -= 1.0
        return True


class _Attachment:
    __slots__ = ("scope", "subscription")

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope
        self.subscription: Any = None


def _splice(session: str, response: RpcResponse) -> str:
    """A response with ``"session"`` first (as the client sent it: ``js_json`` escapes a lone
    surrogate, which orjson refuses and which closed the connection)."""
    encoded = response.encode().decode()
    return '{"session":' + js_json(session) + "," + encoded[1:]


def _fail(id_: Any, command: Any, kind: str | None, message: str, session: str | None) -> str:
    response = RpcResponse.fail(id_, command, message)
    text = _splice(session, response) if session is not None else response.encode().decode()
    if kind is not None:
        text = text[:-1] + ',"limit":' + orjson.dumps(kind).decode() + "}"
    return text


def _quick_record(text: str) -> dict[str, Any]:
    """The frame as an object if orjson reads it (one pass in C), else empty: what a refusal
    before parsing can echo."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def snapshot_frame(session_id: str, snapshot: Snapshot, epoch: int = 1) -> str:
    """The ``snapshot`` frame for a resume whose cursor left the replay ring (or is of
    another epoch)."""
    state: Any = snapshot.state
    body: dict[str, Any] = {
        "type": "snapshot",
        "session": session_id,
        "epoch": epoch,
        "seq": snapshot.seq,
    }
    if isinstance(state, SessionSnapshot):
        data: dict[str, Any] = {}
        if state.model is not None:
            data["model"] = to_wire(state.model)
        data.update(thinkingLevel=state.thinking_level, isStreaming=state.is_streaming)
        if state.session_file is not None:
            data["sessionFile"] = state.session_file
        data.update(
            sessionId=state.session_id,
            messageCount=len(state.messages),
            pendingMessageCount=len(state.steering) + len(state.follow_up),
            steering=list(state.steering),
            followUp=list(state.follow_up),
        )
        body["state"] = data
        body["messages"] = to_wire(list(state.messages))
    return orjson.dumps(body).decode()


class Client:
    """One websocket connection, authenticated with ``token``.

    Resource handling:
        :meth:`serve` owns the reader, the writer and the pumps, and returns when the
        connection ends; it does not close the websocket (the caller does).
    """

    def __init__(
        self, host: HostApi, ws: WebSocketConnection, token: str, stream: trio.abc.Stream
    ) -> None:
        self.host = host
        self.ws = ws
        self.token = token
        self.id = f"c{next(_client_ids)}"
        self.log = log.bind(client=self.id)
        self._stream = stream
        limits = host.config.limits
        self._limits = limits
        send, receive = trio.open_memory_channel[tuple[str, str | None, int, int]](
            limits.outbound_queue
        )
        self._out = send
        self._out_receive = receive
        self._bucket = TokenBucket(limits.commands_per_second, limits.command_burst)
        self.attached: dict[str, _Attachment] = {}
        self.sent: dict[str, int] = {}
        """The last seq written to the socket, per attached session (the resume cursor, with
        :attr:`epochs`)."""
        self.epochs: dict[str, int] = {}
        """The epoch of each cursor in :attr:`sent`."""
        self._close_code: int | None = None
        self._attachments_changed = trio.Event()
        self._room = trio.Event()
        """Set (and replaced) each time the writer takes a frame from the queue."""
        self._nursery: trio.Nursery | None = None

    @property
    def queue_depth(self) -> int:
        return self._out.statistics().current_buffer_used

    # ------------------------------------------------------------------ lifetime

    async def serve(self) -> None:
        """Serve the connection until it closes."""
        self.log.info("client_connected", remote=_peer(self._stream))
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._writer)
                await self._reader()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            for session_id in list(self.attached):
                self._detached(session_id)
            self.log.info("client_disconnected", code=self._close_code)

    def close(self, code: int) -> None:
        """Ask the writer to close the connection with ``code``.

        For 4008 (lagged) at once: what is queued is dropped, a ``lagged`` frame per attached
        session says the last seq the client was sent. Otherwise (1001 when the host drains)
        the pumps first deliver what their sessions published until they closed.
        """
        if self._close_code is not None or self._nursery is None:
            return
        self._close_code = code
        if code == CLOSE_LAGGED:
            self.host.metrics.lag_disconnects_total += 1
            self.log.warning("client_lagged", cursors=dict(self.sent))
            self._nursery.start_soon(self._force_close, self._limits.lag_close_timeout)
            self._stop_output()
        elif code == CLOSE_REVOKED:
            self.log.info("client_token_revoked")
            self._nursery.start_soon(self._force_close, CLOSE_TIMEOUT)
            self._stop_output()
        else:
            self._nursery.start_soon(self._force_close, CLOSE_TIMEOUT * 2)
            self._nursery.start_soon(self._close_when_drained)

    def _stop_output(self) -> None:
        for attachment in list(self.attached.values()):
            attachment.scope.cancel()  # no more events
        self._out.close()  # wakes the writer

    async def _close_when_drained(self) -> None:
        with trio.move_on_after(CLOSE_TIMEOUT):
            while self.attached:
                await self._attachments_changed.wait()
        self._stop_output()

    async def _force_close(self, after: float) -> None:
        # The writer may be stuck in a send to a socket nobody reads.
        await trio.sleep(after)
        self.log.warning("client_close_forced")
        await trio.aclose_forcefully(self._stream)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def _writer(self) -> None:
        ws = self.ws
        metrics = self.host.metrics
        try:
            async for text, session, epoch, seq in self._out_receive:
                self._room.set()
                self._room = trio.Event()
                if self._close_code == CLOSE_LAGGED:
                    break  # what is queued is dropped; the client resumes from `sent`
                await ws.send_message(text)
                metrics.frames_sent_total += 1
                if session is not None:
                    self.sent[session] = seq
                    self.epochs[session] = epoch
                    metrics.events_sent()
            code = self._close_code
            if code == CLOSE_LAGGED:
                # `sent` is kept once cut off, and counts the frame that was being written.
                for session, seq in self.sent.items():
                    frame = {
                        "type": "lagged",
                        "session": session,
                        "epoch": self.epochs.get(session, 0),
                        "resume_from": seq,
                    }
                    await ws.send_message(orjson.dumps(frame).decode())
            reason = {CLOSE_LAGGED: "lagged", CLOSE_REVOKED: "token revoked or expired"}
            await ws.aclose(code or 1000, reason.get(code) if code is not None else None)
        except ConnectionClosed:
            pass
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # ------------------------------------------------------------------ output

    async def send(self, text: str) -> None:
        """Queue a frame from the reader (waits while the queue is full: the reader is this
        client's own, so a client that does not read only slows itself)."""
        with contextlib.suppress(trio.ClosedResourceError):
            await self._out.send((text, None, 0, 0))

    def send_nowait(self, text: str) -> None:
        """Queue a frame from a session's task: never waits; a full queue cuts the client
        off for lag."""
        try:
            self._out.send_nowait((text, None, 0, 0))
        except trio.WouldBlock:
            self.close(CLOSE_LAGGED)
        except trio.ClosedResourceError:
            pass

    async def _put(self, frame: str, session: str, epoch: int, seq: int, subscription: Any) -> bool:
        """Queue an event frame, waiting for room; False once ``subscription`` was cut off
        meanwhile (its ``on_cut_off`` callback, :meth:`_wake`, ends the wait).

        Raises:
            trio.ClosedResourceError: the client is closing.
        """
        while True:
            try:
                self._out.send_nowait((frame, session, epoch, seq))
                return True
            except trio.WouldBlock:
                pass
            if subscription.statistics().dropped:
                return False
            await self._room.wait()

    def _wake(self) -> None:
        # A subscription was cut off: every pump waiting for room looks again (and a new
        # Event, so the ones that still have to wait do not spin on a set one).
        self._room.set()
        self._room = trio.Event()

    # ------------------------------------------------------------------ reading

    async def _reader(self) -> None:
        while True:
            try:
                message = await self.ws.get_message()
            except ConnectionClosed:
                return
            self.host.metrics.commands_total += 1
            await self._frame(message)

    async def _frame(self, message: str | bytes) -> None:
        limits = self._limits
        size = len(message.encode()) if isinstance(message, str) else len(message)
        if size > limits.max_frame_bytes:
            await self._error(
                MISSING,
                MISSING,
                "max_frame_bytes",
                f"Frame of {size} bytes exceeds the limit of {limits.max_frame_bytes} bytes "
                "(max_frame_bytes)",
            )
            return
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        if not self.host.tokens.active(self.token):
            # Expired while connected (a revoked token's connections are closed at once).
            quick = _quick_record(text)
            type_ = quick.get("type", MISSING)
            message_ = "Token revoked or expired"
            await self._error(quick.get("id", MISSING), type_, None, message_, metric="token")
            self.close(CLOSE_REVOKED)
            return
        if not self._bucket.take():
            # Before parsing: a flood costs no parsing. Only orjson's one pass in C (bounded
            # by max_frame_bytes) looks for an id to echo, so the client can match the error.
            quick = _quick_record(text)
            session = quick.get("session")
            await self._error(
                quick.get("id", MISSING),
                quick.get("type", MISSING),
                "rate_limit",
                f"Rate limit exceeded: at most {limits.commands_per_second:g} commands/s, "
                f"bursts of {limits.command_burst} (rate_limit)",
                session if isinstance(session, str) else None,
            )
            return
        try:
            parsed = parse_json_line(text)
        except JsonParseError as exc:
            # Only its message: the exception kept in a local of this frame, which its
            # traceback holds, would be a reference cycle left to the cycle collector.
            await self._error(MISSING, "parse", None, f"Failed to parse command: {exc.message}")
            return
        record: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        type_ = record.get("type", MISSING)
        id_ = record.get("id", MISSING)
        session = record.get("session")
        if session is not None and not isinstance(session, str):
            await self._error(id_, type_, None, 'Invalid command: "session" must be a string')
            return
        try:
            if isinstance(type_, str) and type_ in HOST_COMMANDS:
                await self._host_command(type_, id_, record)
            else:
                await self._session_command(parsed, id_, session)
        except CommandRefused as exc:
            await self._error(id_, type_, exc.kind, str(exc), session, metric=exc.kind)

    async def _error(
        self,
        id_: Any,
        command: Any,
        limit: str | None,
        message: str,
        session: str | None = None,
        *,
        metric: str | None = None,
    ) -> None:
        kind = metric or limit or (command if command in ("parse",) else "invalid_command")
        self.host.metrics.error(kind)
        limit_field = limit if limit in _LIMIT_KINDS else None
        await self.send(_fail(id_, command, limit_field, message, session))

    async def _session_command(self, parsed: Any, id_: Any, session_id: str | None) -> None:
        try:
            request = rpc.decode_command(parsed)
        except rpc.UnknownCommand as exc:
            # Unlike RPC mode (pi answers without it), the id is echoed: clients match by id.
            await self._error(id_, exc.type, None, str(exc), session_id, metric="unknown")
            return
        except rpc.InvalidCommand as exc:
            await self._error(exc.id, exc.command, None, str(exc), session_id)
            return
        if session_id is None:
            raise CommandRefused("no_session", f'Command {request.name} needs a "session" field')
        host = self.host
        if host.cluster is not None and session_id not in host.sessions:
            # Another node owns it: run there, answer here (its events come from the stream).
            if not host.tokens.may_open(self.token, session_id):
                raise CommandRefused("unknown_session", f"Unknown session: {session_id}")
            answer = await host.cluster.forward(
                session_id, {"op": "command", "token": self.token, "frame": parsed}
            )
            await self.send(str(answer["response"]))
            return
        await dispatch_session_command(
            host,
            self.token,
            request,
            session_id,
            functools.partial(self._respond, session_id),
            functools.partial(self._respond_nowait, session_id),
            self.log,
        )

    async def _respond(self, session_id: str, response: RpcResponse) -> None:
        await self.send(_splice(session_id, response))

    async def _respond_nowait(self, session_id: str, response: RpcResponse) -> None:
        self.send_nowait(_splice(session_id, response))

    # ------------------------------------------------------------------ host commands

    async def _host_command(self, type_: str, id_: Any, record: dict[str, Any]) -> None:
        host = self.host
        session = record.get("session")
        if type_ == "create_session":
            fields = {}
            for name, wire in (
                ("cwd", "cwd"),
                ("model", "model"),
                ("thinking_level", "thinking_level"),
            ):
                value = record.get(wire)
                if value is not None and not isinstance(value, str):
                    raise CommandRefused(
                        "invalid_command",
                        f'Invalid create_session command: "{wire}" must be a string',
                    )
                fields[name] = value
            ephemeral = record.get("ephemeral")
            if ephemeral is None:  # null is absent, as for pi's optional fields
                ephemeral = False
            if not isinstance(ephemeral, bool):
                raise CommandRefused(
                    "invalid_command",
                    'Invalid create_session command: "ephemeral" must be a boolean',
                )
            live = await host.create_session(self.token, **fields, ephemeral=ephemeral)
            self.log.info("session_created", session=live.id)
            data = {"session": live.id, "epoch": live.epoch, "seq": live.session.seq}
            if live.session.session_file is not None:
                data["sessionFile"] = live.session.session_file
            await self._attach(live, None, id_, type_, data)
            await live.publish_load_errors()
            return
        if type_ == "list_sessions":
            listed = await host.list_sessions(self.token)
            await self.send(RpcResponse.ok(id_, type_, {"sessions": listed}).encode().decode())
            return
        if type_ == "create_token":
            if not host.tokens.is_host(self.token):
                raise CommandRefused("forbidden", "Only the host token may create tokens")
            expires, tools = _token_options(record)
            token, token_id = await host.create_token(expires=expires, tools=tools)
            self.log.info("token_created", token_id=token_id, expires=expires, tools=tools)
            data = {"token": token, "tokenId": token_id}
            if expires is not None:
                data["expiresAt"] = expires
            await self.send(RpcResponse.ok(id_, type_, data).encode().decode())
            return
        if type_ == "revoke_token":
            if not host.tokens.is_host(self.token):
                raise CommandRefused("forbidden", "Only the host token may revoke tokens")
            key = _named_token(host, record, "revoke_token")
            if key is None or not await host.revoke_token(key):
                raise CommandRefused("invalid_command", "revoke_token: no such client token")
            self.log.info("token_revoked", token_id=key)
            await self.send(RpcResponse.ok(id_, type_, {}).encode().decode())
            return
        if not isinstance(session, str):
            raise CommandRefused("no_session", f'Command {type_} needs a "session" field')
        if type_ == "open_session":
            resume = record.get("resume_from")
            if resume is not None and (
                not isinstance(resume, int) or isinstance(resume, bool) or resume < 0
            ):
                raise CommandRefused(
                    "invalid_command",
                    'Invalid open_session command: "resume_from" must be an integer >= 0',
                )
            epoch = record.get("epoch")
            if epoch is not None and (
                not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0
            ):
                raise CommandRefused(
                    "invalid_command",
                    'Invalid open_session command: "epoch" must be an integer >= 0',
                )
            cluster = host.cluster
            # Not live here: its owner (which opens it if nobody does: maybe this node) answers.
            if (
                cluster is not None
                and session not in host.sessions
                and await self._open_remote(session, resume, epoch, id_, type_)
            ):
                return
            live = await host.open_session(self.token, session)
            previous = self.attached.pop(session, None)
            if previous is not None:
                previous.scope.cancel()
            cursor = None if resume is None else (live.epoch if epoch is None else epoch, resume)
            await self._attach(live, cursor, id_, type_, None)
            await live.publish_load_errors()
            return
        if host.cluster is not None and session not in host.sessions:
            await self._remote_host_command(type_, id_, record, session)
            return
        live = host.live_session(self.token, session)
        if type_ == "detach_session":
            attachment = self.attached.pop(session, None)
            if attachment is not None:
                attachment.scope.cancel()
                self._detached(session, live)
            await self.send(_splice(session, RpcResponse.ok(id_, type_, {})))
        elif type_ == "close_session":
            await host.close_session(live)
            await self.send(_splice(session, RpcResponse.ok(id_, type_, {})))
        elif type_ == "grant":
            other = _named_token(host, record, "grant")
            if other is None or not host.tokens.active(other):
                raise CommandRefused(
                    "invalid_command",
                    'Invalid grant command: "token" (or "tokenId") must name a token of this host',
                )
            await host.grant(other, live.id)
            await self.send(_splice(session, RpcResponse.ok(id_, type_, {})))

    # ------------------------------------------------------------------ cluster gateway

    async def _remote_host_command(
        self, type_: str, id_: Any, record: dict[str, Any], session: str
    ) -> None:
        """``detach_session``, ``close_session`` or ``grant`` of a session another node of
        the cluster owns."""
        host = self.host
        cluster = host.cluster
        assert cluster is not None
        if not host.tokens.may_open(self.token, session):
            raise CommandRefused("unknown_session", f"Unknown session: {session}")
        if type_ == "detach_session":
            attachment = self.attached.pop(session, None)
            if attachment is not None:
                attachment.scope.cancel()
                self._detached(session)
        elif type_ == "close_session":
            await cluster.forward(session, {"op": "close", "token": self.token})
        elif type_ == "grant":
            other = _named_token(host, record, "grant")
            if other is None or not host.tokens.active(other):
                raise CommandRefused(
                    "invalid_command",
                    'Invalid grant command: "token" (or "tokenId") must name a token of this host',
                )
            await host.grant(other, session)
        await self.send(_splice(session, RpcResponse.ok(id_, type_, {})))

    async def _open_remote(
        self, session: str, resume: int | None, epoch: int | None, id_: Any, command: str
    ) -> bool:
        """``open_session`` of a session not live here: its owner opens it (if it is not live
        there yet), its events are relayed from the session's stream. False when the cluster
        routed the opening to this node (the session is live here now: attach as usual)."""
        host = self.host
        cluster = host.cluster
        assert cluster is not None
        if not host.tokens.may_open(self.token, session):
            await host.tokens.refresh()  # a grant another node added
            if not host.tokens.may_open(self.token, session):
                raise CommandRefused("unknown_session", f"Unknown session: {session}")
        opened = await cluster.forward(session, {"op": "open", "token": self.token})
        if session in host.sessions:
            return False
        now = (int(opened["epoch"]), int(opened["seq"]))
        cursor = now if resume is None else (now[0] if epoch is None else epoch, resume)
        previous = self.attached.pop(session, None)
        if previous is not None:
            previous.scope.cancel()
        nursery = self._nursery
        assert nursery is not None
        await nursery.start(self._relay, session, cursor, now, id_, command)
        return True

    async def _relay(
        self,
        session_id: str,
        cursor: tuple[int, int],
        now: tuple[int, int],
        id_: Any,
        command: str,
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        """The pump of a session another node owns: its stream's entries after ``cursor``
        as event frames. A client that does not read holds its cursor, not events (the stream
        holds them); once its cursor was trimmed from the stream it gets a snapshot, as a
        coalescing subscription gives one."""
        cluster = self.host.cluster
        assert cluster is not None
        name = orjson.dumps(session_id).decode()
        with trio.CancelScope() as scope:
            attachment = _Attachment(scope)
            self.attached[session_id] = attachment
            cluster.gateway_clients += 1
            try:
                self.epochs[session_id], self.sent[session_id] = cursor
                answer = {"session": session_id, "epoch": now[0], "seq": now[1]}
                await self.send(_splice(session_id, RpcResponse.ok(id_, command, answer)))
                task_status.started()
                try:
                    await self._relay_stream(session_id, name, cursor)
                except trio.ClosedResourceError:
                    return  # the client is closing
                closed = {"type": "session_closed", "session": session_id}
                await self.send(orjson.dumps(closed).decode())
            finally:
                cluster.gateway_clients -= 1
                if self.attached.get(session_id) is attachment:
                    self._detached(session_id)

    async def _relay_stream(self, session_id: str, name: str, cursor: tuple[int, int]) -> None:
        """Relay entries until the owner closes the session (its ``C`` entry)."""
        cluster = self.host.cluster
        assert cluster is not None
        while True:
            async with cluster.read_events(session_id, cursor) as entries:
                async for entry in entries:
                    if entry is None:
                        break  # trimmed past the cursor: a snapshot, then on from there
                    if (entry.epoch, entry.seq) <= cursor:
                        continue
                    tag, stamp, body = decode_payload(entry.payload)
                    if tag == "C":
                        return
                    if tag == "S":
                        frame = body.decode()
                    else:
                        frame = (
                            f'{{"session":{name},"epoch":{entry.epoch},"seq":{entry.seq},'
                            f"{body[1:].decode()}"
                        )
                    await self._put_relayed(frame, session_id, entry.epoch, entry.seq)
                    cluster.relayed(stamp)
                    cursor = (entry.epoch, entry.seq)
                else:
                    return  # the stream ended (the cluster is closing)
            answer = await cluster.forward(session_id, {"op": "snapshot", "token": self.token})
            cursor = (int(answer["epoch"]), int(answer["seq"]))
            await self._put_relayed(str(answer["frame"]), session_id, *cursor)

    async def _put_relayed(self, frame: str, session: str, epoch: int, seq: int) -> None:
        """Queue a relayed frame, waiting for room (the stream keeps what waits).

        Raises:
            trio.ClosedResourceError: the client is closing.
        """
        while True:
            try:
                self._out.send_nowait((frame, session, epoch, seq))
                return
            except trio.WouldBlock:
                pass
            await self._room.wait()

    async def _attach(
        self,
        live: LiveSession,
        resume_from: tuple[int, int] | None,
        id_: Any,
        command: str,
        data: dict[str, Any] | None,
    ) -> None:
        nursery = self._nursery
        assert nursery is not None
        await nursery.start(self._pump, live, resume_from, id_, command, data)

    def _detached(self, session_id: str, live: LiveSession | None = None) -> None:
        self.attached.pop(session_id, None)
        if self._close_code != CLOSE_LAGGED:
            self.sent.pop(session_id, None)
            self.epochs.pop(session_id, None)
        self._attachments_changed.set()
        self._attachments_changed = trio.Event()
        live = live or self.host.sessions.get(session_id)
        if live is not None and self in live.clients:
            live.clients.discard(self)
            live.touch()

    async def _pump(
        self,
        live: LiveSession,
        resume_from: tuple[int, int] | None,
        id_: Any,
        command: str,
        data: dict[str, Any] | None,
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        session_id = live.id
        limits = self._limits
        metrics = self.host.metrics
        epoch = live.epoch
        prefix = f'{{"session":{orjson.dumps(session_id).decode()},"epoch":{epoch},"seq":'
        from_seq: int | None = None
        if resume_from is not None:
            # A cursor of another epoch counts from another life's events: a snapshot, as
            # for a cursor that left the ring (a cursor ahead of the log gets one).
            from_seq = resume_from[1] if resume_from[0] == epoch else live.session.seq + 1
        with trio.CancelScope() as scope:
            attachment = _Attachment(scope)
            self.attached[session_id] = attachment
            live.clients.add(self)
            live.touch()
            try:
                async with live.session.events(
                    from_seq=from_seq,
                    policy="coalesce",
                    max_buffer=limits.subscription_buffer,
                ) as subscription:
                    attachment.subscription = subscription
                    subscription.on_cut_off(self._wake)
                    seq = live.session.seq
                    self.epochs[session_id], self.sent[session_id] = (
                        resume_from if resume_from is not None else (epoch, seq)
                    )
                    answer = (
                        data
                        if data is not None
                        else {"session": session_id, "epoch": epoch, "seq": seq}
                    )
                    await self.send(_splice(session_id, RpcResponse.ok(id_, command, answer)))
                    task_status.started()
                    try:
                        async for item in subscription:
                            if isinstance(item, Snapshot):
                                frame = snapshot_frame(session_id, item, epoch)
                            else:
                                frame = f"{prefix}{item.seq},{item.wire[1:].decode()}"
                            if not await self._put(
                                frame, session_id, epoch, item.seq, subscription
                            ):
                                raise SubscriberLagged(limits.subscription_buffer, item.seq)
                    except SubscriberLagged:
                        self.close(CLOSE_LAGGED)
                        return
                    except trio.ClosedResourceError:
                        return  # the client is closing
                    finally:
                        stats = subscription.statistics()
                        metrics.coalesced_closed += stats.coalesced
                        metrics.dropped_closed += stats.dropped
                        attachment.subscription = None
                # The session was closed (close_session, idle, drain).
                closed = {"type": "session_closed", "session": session_id}
                await self.send(orjson.dumps(closed).decode())
            finally:
                if self.attached.get(session_id) is attachment:
                    self._detached(session_id, live)


def _named_token(host: HostApi, record: dict[str, Any], command: str) -> str | None:
    """The key of the token a ``grant`` or ``revoke_token`` names (``token``: the secret,
    or ``tokenId``), ``None`` when it names none of this host's."""
    token, token_id = record.get("token"), record.get("tokenId")
    if token is not None and not isinstance(token, str):
        raise CommandRefused(
            "invalid_command", f'Invalid {command} command: "token" must be a string'
        )
    if token_id is not None and not isinstance(token_id, str):
        raise CommandRefused(
            "invalid_command", f'Invalid {command} command: "tokenId" must be a string'
        )
    if token is None and token_id is None:
        raise CommandRefused(
            "invalid_command", f'Invalid {command} command: "token" or "tokenId" is required'
        )
    return host.tokens.resolve(token=token, token_id=token_id)


def _token_options(record: dict[str, Any]) -> tuple[float | None, tuple[str, ...] | None]:
    """``create_token``'s ``expiresIn`` (seconds from now) or ``expiresAt`` (seconds since
    the epoch), and ``tools`` (built-in tool names)."""
    expires_in, expires_at, tools = (
        record.get("expiresIn"),
        record.get("expiresAt"),
        record.get("tools"),
    )
    expires: float | None = None
    for name, value in (("expiresIn", expires_in), ("expiresAt", expires_at)):
        if value is None:
            continue
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise CommandRefused(
                "invalid_command", f'Invalid create_token command: "{name}" must be a number > 0'
            )
    if expires_in is not None and expires_at is not None:
        raise CommandRefused(
            "invalid_command", 'Invalid create_token command: give "expiresIn" or "expiresAt"'
        )
    if expires_in is not None:
        expires = time.time() + float(expires_in)
    elif expires_at is not None:
        expires = float(expires_at)
    names: tuple[str, ...] | None = None
    if tools is not None:
        known = builtin_tool_names()
        if not isinstance(tools, list) or not all(isinstance(t, str) and t in known for t in tools):
            raise CommandRefused(
                "invalid_command",
                f'Invalid create_token command: "tools" must be a list of {", ".join(known)}',
            )
        names = tuple(dict.fromkeys(tools))
    return expires, names


def _peer(stream: trio.abc.Stream) -> str:
    inner = getattr(stream, "stream", stream)
    sock = getattr(inner, "socket", None)
    try:
        address = sock.getpeername() if sock is not None else None
    except OSError:
        address = None
    return f"{address[0]}:{address[1]}" if address else "?"


_LIMIT_KINDS: Final = frozenset({"max_frame_bytes", "rate_limit", "max_sessions_per_token"})
