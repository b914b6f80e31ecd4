"""``pitrio serve``: many sessions in one process, over websockets (docs/host-protocol.md).

Embedding a host in a Trio application::

    async with open_host(factory, HostConfig(port=0, session_dir=folder)) as host:
        print(host.page_url)   # http://127.0.0.1:PORT/#token=...
        ...                    # serves until the block ends (then it drains)

``factory`` opens one session per request (see :data:`~pitrio.host.SessionFactory`); the
``pitrio serve`` command builds it from the command line as print and RPC modes build theirs.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, get_args

import orjson
import structlog
import trio
from trio_websocket import wrap_server_stream

from pitrio._exceptions import PitrioError
from pitrio.host.ws._client import CLOSE_GOING_AWAY, CLOSE_REVOKED, CLOSE_TIMEOUT, Client
from pitrio.host.ws._cluster import ClusterLink, ClusterNode
from pitrio.host.ws._host import (
    DRAIN_GRACE,
    HARD_FRAME_FACTOR,
    CommandRefused,
    HostConfig,
    LiveSession,
    SessionFactory,
    SessionRequest,
    locate_session_file,
    log_failure,
    resolve_session_cwd,
)
from pitrio.host.ws._http import (
    STATIC_DIR,
    HeadError,
    HttpRequest,
    ReplayStream,
    content_type,
    read_request_head,
    read_static,
    send_response,
)
from pitrio.host.ws._listing import list_visible_sessions
from pitrio.host.ws._metrics import HostMetrics, QueueSample
from pitrio.host.ws._policy import Confinement
from pitrio.host.ws._tokens import TOKENS_FILE, Tokens, new_token
from pitrio.providers import ModelThinkingLevel
from pitrio.sessions import run_file_work
from pitrio.sessions.storage._journal import (
    next_epoch,
    recover_interrupted_turn,
    write_epoch,
)

__all__ = ["WS_MESSAGE_QUEUE", "WS_PATH", "Host", "open_host"]

log = structlog.get_logger("pitrio.host")

THINKING_LEVELS: Final = get_args(ModelThinkingLevel)

WS_PATH: Final = "/ws"
WS_MESSAGE_QUEUE: Final = 4
"""Received frames trio-websocket buffers for the reader; beyond them it stops reading the
socket, so a client that floods commands is slowed by TCP, not by host memory."""


class Host:
    """The websocket host: an actor holding live sessions, clients, tokens and metrics.

    Serve it with ``await nursery.start(host.run)`` (or :func:`open_host`); :meth:`drain`
    shuts it down gracefully and makes :meth:`run` return.

    Args:
        factory: opens sessions (:data:`~pitrio.host.SessionFactory`).
        config: see :class:`~pitrio.host.HostConfig`; a token is generated when it has none.
        cluster: an open cluster node (``pitrio serve --cluster``): this host is then one node
            of the cluster, owner of the sessions it holds the lease of and gateway for the
            others (:mod:`pitrio.host.ws._cluster`). ``None``: a host on its own.
    """

    def __init__(
        self, factory: SessionFactory, config: HostConfig, *, cluster: ClusterNode | None = None
    ) -> None:
        self.factory = factory
        self.config = config
        self.cluster = ClusterLink(cluster, self) if cluster is not None else None
        self.token = config.token or new_token(32)
        self.tokens = Tokens(self.token, os.path.join(config.state_folder, TOKENS_FILE))
        """Client tokens and their grants, kept in ``<state_dir>/tokens.json``."""
        self.roots = config.roots or (os.getcwd(),)
        """Where a ``create_session`` ``cwd`` may lead (:func:`resolve_session_cwd`)."""
        self.metrics = HostMetrics()
        self.sessions: dict[str, LiveSession] = {}
        self.clients: set[Client] = set()
        self.port = 0
        self.draining = False
        self._stopped = trio.Event()
        self._opening: dict[str, trio.Event] = {}
        self._sessions_nursery: trio.Nursery | None = None
        self._origins: frozenset[str] = frozenset()
        self._clients_changed = trio.Event()

    # ------------------------------------------------------------------ addresses

    @property
    def url(self) -> str:
        """``http://HOST:PORT/``."""
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        if host in ("0.0.0.0", "::", ""):
            shown = "127.0.0.1"
        return f"http://{shown}:{self.port}/"

    @property
    def ws_url(self) -> str:
        """The websocket's address (without the token)."""
        return "ws" + self.url[4:] + WS_PATH.lstrip("/")

    @property
    def page_url(self) -> str:
        """The browser page's address with the host token in the fragment."""
        return f"{self.url}#token={self.token}"

    # ------------------------------------------------------------------ lifetime

    async def run(self, *, task_status: trio.TaskStatus[Host] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and serve until :meth:`drain` has finished (or the call is cancelled)."""
        config = self.config
        # Before listening: a host that cannot read its tokens file must not start and
        # forget every client's grants.
        await run_file_work(self.tokens.load)
        self._warn_hidden_in_roots()
        listeners = await trio.open_tcp_listeners(config.port, host=config.host or None)
        if config.port == 0 and len(listeners) > 1:
            # Port 0 on a name with several addresses gives each its own port: keep one.
            for extra in listeners[1:]:
                await extra.aclose()
            listeners = listeners[:1]
        self.port = listeners[0].socket.getsockname()[1]
        self._origins = frozenset(
            {
                f"http://127.0.0.1:{self.port}",
                f"http://localhost:{self.port}",
                f"http://[::1]:{self.port}",
                self.url.rstrip("/"),
                *(origin.rstrip("/").lower() for origin in config.allow_origins),
            }
        )
        try:
            async with trio.open_nursery() as sessions:
                self._sessions_nursery = sessions
                if self.cluster is not None:
                    await sessions.start(self.cluster.run)
                async with trio.open_nursery() as connections:
                    connections.start_soon(
                        functools.partial(
                            trio.serve_listeners,
                            self._handle_tcp,
                            listeners,
                            handler_nursery=connections,
                        )
                    )
                    log.info("host_listening", url=self.url, sessions_dir=config.session_dir)
                    task_status.started(self)
                    await self._stopped.wait()
                    connections.cancel_scope.cancel()
                sessions.cancel_scope.cancel()
        finally:
            self._sessions_nursery = None
            for listener in listeners:
                await trio.aclose_forcefully(listener)

    async def drain(self, grace: float | None = None) -> None:
        """Shut down: refuse new connections (``/healthz`` 503), give running turns
        ``grace`` seconds (default ``config.drain_grace``) and abort them, close every session
        (their files are written), close every client with 1001, then let :meth:`run` return.
        """
        if self.draining:
            await self._stopped.wait()
            return
        self.draining = True
        grace = self.config.drain_grace if grace is None else grace
        log.info("host_draining", sessions=len(self.sessions), clients=len(self.clients))
        with trio.move_on_after(grace):
            for live in list(self.sessions.values()):
                await live.wait_idle()
        async with trio.open_nursery() as closing:
            for live in list(self.sessions.values()):
                closing.start_soon(live.close)
        for client in list(self.clients):
            client.close(CLOSE_GOING_AWAY)
        with trio.move_on_after(CLOSE_TIMEOUT + 1):
            while self.clients:
                await self._clients_changed.wait()
        log.info("host_stopped")
        self._stopped.set()

    async def join_cluster(self, node: ClusterNode) -> None:
        """Become a node of a cluster once listening (``pitrio serve --cluster``, whose node
        announces the address the host listens on): see ``cluster`` in :class:`Host`.

        Raises:
            RuntimeError: the host is not running, or is already in a cluster.
        """
        nursery = self._sessions_nursery
        if nursery is None or self.cluster is not None:
            raise RuntimeError("join_cluster: the host is not running or already joined")
        self.cluster = ClusterLink(node, self)
        await nursery.start(self.cluster.run)

    # ------------------------------------------------------------------ sessions

    def _check_token_may_open(self, token: str, session_id: str) -> None:
        if not self.tokens.may_open(token, session_id):
            raise CommandRefused("unknown_session", f"Unknown session: {session_id}")

    def live_session(self, token: str, session_id: str) -> LiveSession:
        """The live session ``token`` may use.

        Raises:
            CommandRefused: no such live session, or not this token's (the same answer, so a
                token learns nothing about sessions it may not see).
        """
        self._check_token_may_open(token, session_id)
        live = self.sessions.get(session_id)
        if live is None:
            raise CommandRefused("unknown_session", f"Unknown session: {session_id}")
        return live

    def visible_sessions(self, token: str) -> list[LiveSession]:
        """The live sessions ``token`` may see."""
        return [s for s in self.sessions.values() if self.tokens.may_open(token, s.id)]

    async def list_sessions(self, token: str) -> list[dict[str, Any]]:
        """``list_sessions``' entries: every session ``token`` may see, live or on disk."""
        return await list_visible_sessions(
            self.config.session_dir, self.visible_sessions(token), self.tokens.sessions_of(token)
        )

    def _policy(self, token: str) -> tuple[tuple[str, ...] | None, Confinement | None]:
        """The tools and confinement of a session opened for ``token`` (none for the host
        token: the factory's defaults)."""
        if self.tokens.is_host(token):
            return None, None
        tools = self.tokens.tools_of(token)
        confinement = Confinement(
            roots=self.roots, hidden=(self.config.session_dir, self.config.state_folder)
        )
        return (tools if tools is not None else self.config.client_tools), confinement

    def session_policy_allows(self, token: str, live: LiveSession) -> bool:
        """Whether ``token`` may run commands in ``live`` (prompts, bash ...): a client
        token only in a confined session whose tools it was granted all of (a session the
        host token opened runs with the host's tools)."""
        if self.tokens.is_host(token):
            return True
        if live.request.confinement is None:
            return False
        tools, _ = self._policy(token)
        return set(live.request.tools or ()) <= set(tools or ())

    async def create_token(
        self, *, expires: float | None = None, tools: tuple[str, ...] | None = None
    ) -> tuple[str, str]:
        """A new client token (``(secret, id)``), saved before it is returned."""
        created = self.tokens.create(expires=expires, tools=tools)
        await self.tokens.save()
        return created

    async def revoke_token(self, key: str) -> bool:
        """Forget a client token (saved), and cut off its connections (close code
        :data:`~pitrio.host.ws._client.CLOSE_REVOKED`); its sessions live on."""
        if self.tokens.is_host(key) or not self.tokens.revoke(key):
            return False
        await self.tokens.save()
        for client in list(self.clients):
            if client.token == key:
                client.close(CLOSE_REVOKED)
        return True

    async def grant(self, key: str, session_id: str) -> None:
        """Let the token ``key`` open ``session_id`` (saved before it returns)."""
        if self.tokens.grant(key, session_id):
            await self.tokens.save()

    def _warn_hidden_in_roots(self) -> None:
        # A recursive grep or find from a root would walk into a folder inside it; the
        # confined tools refuse to name such a folder, not to pass through it.
        for folder in (self.config.session_dir, self.config.state_folder):
            real = os.path.realpath(folder)
            for root in self.roots:
                base = os.path.realpath(root).rstrip(os.sep) + os.sep
                if real.startswith(base):
                    log.warning("host_folder_inside_root", folder=folder, root=root)

    async def create_session(
        self,
        token: str,
        *,
        cwd: str | None = None,
        model: str | None = None,
        thinking_level: str | None = None,
        ephemeral: bool = False,
    ) -> LiveSession:
        """Open a new session for ``token`` (which may then use it); an ``ephemeral`` one is
        kept in memory only (see :class:`SessionRequest`).

        Raises:
            CommandRefused: the host is draining, ``cwd`` is outside the roots (or not a
                folder), ``thinking_level`` is unknown, the token has its limit of live
                sessions, or the factory could not open the session (an unknown model).
        """
        if self.draining:
            raise CommandRefused("draining", "The host is shutting down")
        if thinking_level is not None and thinking_level not in THINKING_LEVELS:
            raise CommandRefused(
                "invalid_command",
                f"Invalid thinking_level {thinking_level!r}: one of {', '.join(THINKING_LEVELS)}",
            )
        if cwd is not None:
            anywhere = self.config.allow_any_cwd and self.tokens.is_host(token)
            cwd = await run_file_work(
                functools.partial(resolve_session_cwd, cwd, self.roots, anywhere=anywhere)
            )
        self._reserve(token)
        tools, confinement = self._policy(token)
        request = SessionRequest(
            session_dir=self.config.session_dir,
            cwd=cwd,
            model=model,
            thinking_level=thinking_level,
            ephemeral=ephemeral,
            tools=tools,
            confinement=confinement,
        )
        try:
            live = await self._start(request, token)
        except BaseException:
            self._release(token)
            raise
        if self.cluster is not None:
            await self._own(live, fresh=True)
        if not ephemeral:
            await self.grant(token, live.id)
        else:
            self.tokens.grant(token, live.id)  # nothing to find again after a restart
        return live

    def _reserve(self, token: str) -> None:
        """Count one more live session for a client token, within its limit."""
        tokens = self.tokens
        if tokens.is_host(token):
            return
        limit = self.config.limits.max_sessions_per_token
        if tokens.created.get(token, 0) >= limit:
            raise CommandRefused(
                "max_sessions_per_token",
                f"Too many open sessions: a token may have {limit} "
                "(max_sessions_per_token); close one first",
            )
        tokens.created[token] = tokens.created.get(token, 0) + 1

    def _release(self, token: str) -> None:
        created = self.tokens.created
        if token in created:
            created[token] = max(0, created[token] - 1)

    async def open_session(self, token: str, session_id: str) -> LiveSession:
        """The live session ``session_id``, reopened from its file if it was closed.

        Raises:
            CommandRefused: unknown to ``token``, no such file, or it cannot be opened.
        """
        self._check_token_may_open(token, session_id)
        while True:
            live = self.sessions.get(session_id)
            if live is not None:
                return live
            opening = self._opening.get(session_id)
            if opening is None:
                break
            await opening.wait()  # another client is reopening it: one writer per file
        if self.draining:
            raise CommandRefused("draining", "The host is shutting down")
        opening = self._opening[session_id] = trio.Event()
        try:
            path = await locate_session_file(self.config.session_dir, session_id)
            if path is None:
                raise CommandRefused("unknown_session", f"Unknown session: {session_id}")
            tools, confinement = self._policy(token)
            request = SessionRequest(
                session_dir=self.config.session_dir,
                session_file=path,
                tools=tools,
                confinement=confinement,
            )
            try:
                # A turn a crash interrupted is closed in the file before it loads, so the
                # session, and every client that resumes, sees it answered (aborted).
                closed = await run_file_work(recover_interrupted_turn, path)
                if self.cluster is not None:
                    # The cluster's epoch fences the session's stream: the lease decides.
                    epoch = await self.cluster.claim(session_id)
                    await run_file_work(write_epoch, path, epoch)
                else:
                    epoch = await run_file_work(next_epoch, path)
            except (PitrioError, OSError) as exc:
                raise CommandRefused("session_failed", f"Cannot open the session: {exc}") from exc
            if closed is not None:
                log.warning("turn_recovered", session=session_id, blocks=len(closed.content))
            # The token that reopens it owns it now: it counts towards that token's limit.
            self._reserve(token)
            try:
                live = await self._start(request, token, session_id, epoch)
            except BaseException:
                self._release(token)
                raise
            if self.cluster is not None:
                await self._own(live, fresh=False)
            return live
        finally:
            del self._opening[session_id]
            opening.set()

    async def _start(
        self,
        request: SessionRequest,
        owner: str,
        expected_id: str | None = None,
        epoch: int = 1,
    ) -> LiveSession:
        nursery = self._sessions_nursery
        if nursery is None:
            raise CommandRefused("draining", "The host is shutting down")
        live = LiveSession(
            request,
            owner,
            self.config.idle_timeout,
            exports_dir=self.config.exports_folder,
            epoch=epoch,
        )
        try:
            started: LiveSession = await nursery.start(live.run, self.factory, self._closed)
        except (PitrioError, OSError, ValueError) as exc:
            if isinstance(exc, CommandRefused):
                raise
            raise CommandRefused("session_failed", f"Cannot open the session: {exc}") from exc
        if expected_id is not None and started.id != expected_id:
            # A file whose header names another id: serve it under the id asked for.
            started.id = expected_id
        self.sessions[started.id] = started
        self.metrics.sessions_created_total += 1
        started.log.info("session_opened", file=started.session.session_file)
        return started

    async def _own(self, live: LiveSession, *, fresh: bool) -> None:
        """A clustered host's session: take its lease (a new session's, ``fresh``; a
        reopened one has its epoch already) and write its events to its stream."""
        assert self.cluster is not None and self._sessions_nursery is not None
        if fresh:
            live.epoch = await self.cluster.claim(live.id)
            file = live.session.session_file
            if file is not None:
                await run_file_work(write_epoch, file, live.epoch)
        # The file is this node's while the lease is: a write after it lapsed (by this node's
        # clock, even before a renewal says so) is refused, and the session is lost.
        live.session.session_manager.guard_writes(
            functools.partial(self.cluster.node.writable, live.id, live.epoch)
        )
        self._sessions_nursery.start_soon(self.cluster.publish, live)

    def _closed(self, live: LiveSession) -> None:
        if self.sessions.get(live.id) is live:
            del self.sessions[live.id]
        self._release(live.owner)
        self.metrics.sessions_closed_total += 1

    async def close_session(self, live: LiveSession) -> None:
        """Abort, write and close ``live`` for every client."""
        await live.close()

    # ------------------------------------------------------------------ connections

    async def _handle_tcp(self, stream: trio.SocketStream) -> None:
        send_buffer = self.config.limits.socket_send_buffer
        if send_buffer is not None:
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        try:
            try:
                request, raw = await read_request_head(stream)
            except HeadError as exc:
                if exc.status:
                    await send_response(stream, exc.status, b"bad request\n")
                return
            if request.path == WS_PATH and request.is_upgrade:
                await self._websocket(stream, request, raw)
            else:
                await self._http(stream, request)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            # One connection's failure (a bug) must not end the host and the other clients.
            self.metrics.error("internal")
            log_failure(log, "connection_failed")
        finally:
            await trio.aclose_forcefully(stream)

    def _authorized(self, request: HttpRequest) -> str | None:
        """The key of the request's token (see :meth:`Tokens.authenticate`)."""
        return self.tokens.authenticate(request.token)

    def _origin_allowed(self, request: HttpRequest) -> bool:
        origin = request.origin
        return origin is None or origin.rstrip("/").lower() in self._origins

    async def _http(self, stream: trio.SocketStream, request: HttpRequest) -> None:
        head_only = request.method == "HEAD"
        if request.method not in ("GET", "HEAD"):
            await send_response(stream, 405, b"method not allowed\n")
            return
        path = request.path
        if path == "/healthz":
            if self.draining:
                body = orjson.dumps({"status": "draining"})
                await send_response(
                    stream, 503, body, content_type="application/json", head_only=head_only
                )
                return
            body = orjson.dumps(
                {"status": "ok", "sessions": len(self.sessions), "clients": len(self.clients)}
            )
            await send_response(
                stream, 200, body, content_type="application/json", head_only=head_only
            )
            return
        if self.draining:
            await send_response(stream, 503, b"shutting down\n", head_only=head_only)
            return
        if path == "/metrics":
            token = self._authorized(request)
            if token is None or not self.tokens.is_host(token):
                await self._unauthorized(stream)
                return
            body = self.render_metrics()
            await send_response(
                stream, 200, body, content_type="text/plain; version=0.0.4", head_only=head_only
            )
            return
        if path == WS_PATH:
            await send_response(stream, 426, b"websocket upgrade required\n")
            return
        root = self.config.static_dir or STATIC_DIR
        data = await run_file_work(read_static, path, root)
        if data is None:
            await send_response(stream, 404, b"not found\n", head_only=head_only)
            return
        name = "index.html" if path in ("", "/") else path
        await send_response(stream, 200, data, content_type=content_type(name), head_only=head_only)

    async def _unauthorized(self, stream: trio.SocketStream) -> None:
        self.metrics.error("unauthorized")
        await send_response(
            stream,
            401,
            b"a valid token is required (Authorization: Bearer or ?token=)\n",
            extra_headers=[("WWW-Authenticate", "Bearer")],
        )

    def render_metrics(self) -> bytes:
        """``GET /metrics``'s body."""
        queues = []
        for client in self.clients:
            coalesced = dropped = 0
            for attachment in client.attached.values():
                subscription = attachment.subscription
                if subscription is not None:
                    stats = subscription.statistics()
                    coalesced += stats.coalesced
                    dropped += stats.dropped
            queues.append(QueueSample(client.queue_depth, coalesced, dropped))
        streaming = sum(1 for live in self.sessions.values() if live.session.is_streaming)
        return self.metrics.render(
            sessions=len(self.sessions),
            clients=len(self.clients),
            streaming=streaming,
            queues=queues,
            cluster=self.cluster.render() if self.cluster is not None else None,
        )

    async def _websocket(self, stream: trio.SocketStream, request: HttpRequest, raw: bytes) -> None:
        if self.draining:
            await send_response(stream, 503, b"shutting down\n")
            return
        token = self._authorized(request)
        if token is None and self.cluster is not None:
            # A token another node of the cluster created since this one last looked.
            await self.tokens.refresh()
            token = self._authorized(request)
        if token is None:
            await self._unauthorized(stream)
            return
        if not self._origin_allowed(request):
            self.metrics.error("origin")
            log.warning("origin_refused", origin=request.origin)
            await send_response(stream, 403, b"origin not allowed\n")
            return
        limits = self.config.limits
        replay = ReplayStream(stream, raw)
        async with trio.open_nursery() as nursery:
            handshake = await wrap_server_stream(
                nursery,
                replay,
                message_queue_size=WS_MESSAGE_QUEUE,
                max_message_size=limits.max_frame_bytes * HARD_FRAME_FACTOR,
            )
            ws = await handshake.accept()
            client = Client(self, ws, token, replay)
            self.clients.add(client)
            self.metrics.connections_total += 1
            try:
                await client.serve()
            finally:
                self.clients.discard(client)
                self._clients_changed.set()
                self._clients_changed = trio.Event()
                with trio.move_on_after(CLOSE_TIMEOUT) as scope:
                    scope.shield = True
                    await ws.aclose()
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_host(
    factory: SessionFactory,
    config: HostConfig,
    *,
    drain_grace: float = DRAIN_GRACE,
    cluster: ClusterNode | None = None,
) -> AsyncIterator[Host]:
    """Serve a :class:`Host` for the duration of the block; leaving it drains the host
    (``drain_grace`` for running turns) and waits until it has stopped. ``cluster``: see
    :class:`Host`."""
    host = Host(factory, config, cluster=cluster)
    async with trio.open_nursery() as nursery:
        await nursery.start(host.run)
        try:
            yield host
        finally:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(drain_grace + CLOSE_TIMEOUT * 2 + 1):
                    await host.drain(drain_grace)
                nursery.cancel_scope.cancel()
