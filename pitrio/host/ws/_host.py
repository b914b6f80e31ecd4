"""The websocket host's state: live sessions, tokens, limits (``pitrio serve``).

::

    Host.run (nursery "sessions")
     |- LiveSession.run  one task per live session: the factory's session, its long commands
     |                   (prompt, compact ...) in its own nursery, its idle watch
     `- nursery "connections"
         |- serve_listeners: one task per TCP connection (HTTP answered, or a websocket Client)
         `- Client.serve  reader, writer, one pump per attached session (see _ws_client)

A session lives in the host, not in a connection: a client that leaves (or is cut off for
lag) does not cancel the run it started. Sessions end on ``close_session``, after the idle
timeout with no client and no run, or when the host drains.
"""

from __future__ import annotations

import functools
import glob
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

import attrs
import structlog
import trio

from pitrio._exceptions import PitrioError, UsageError
from pitrio.host.rpc._commands import PathKind, RpcServices, SessionCommands
from pitrio.host.rpc._types import RpcRequest
from pitrio.host.ws._journal import TurnJournal
from pitrio.host.ws._metrics import HostMetrics
from pitrio.host.ws._policy import DEFAULT_CLIENT_TOOLS, Confinement
from pitrio.host.ws._stream import StreamEntry
from pitrio.host.ws._tokens import Tokens, new_token
from pitrio.sessions import AgentSession, ExtensionErrorEvent, run_file_work
from pitrio.sessions.storage._journal import write_epoch
from pitrio.tools.builtin import BashOperations

__all__ = [
    "COMMANDS_PER_SECOND",
    "COMMAND_BURST",
    "DEFAULT_PORT",
    "DRAIN_GRACE",
    "IDLE_TIMEOUT",
    "LAG_CLOSE_TIMEOUT",
    "LONG_COMMANDS_PER_SESSION",
    "MAX_FRAME_BYTES",
    "MAX_SESSIONS_PER_TOKEN",
    "OUTBOUND_QUEUE",
    "SUBSCRIPTION_BUFFER",
    "CommandRefused",
    "HostApi",
    "HostConfig",
    "HostLimits",
    "LiveSession",
    "OpenedSession",
    "SessionFactory",
    "SessionRequest",
    "Tokens",
    "log_failure",
    "new_token",
    "resolve_session_cwd",
]

log = structlog.get_logger("pitrio.host")

DEFAULT_PORT: Final = 8765
IDLE_TIMEOUT: Final = 900.0
"""Seconds a session with no client and no run stays open."""
DRAIN_GRACE: Final = 10.0
"""Seconds running turns get to finish when the host drains, before they are aborted."""
MAX_FRAME_BYTES: Final = 1 << 20
"""The largest command frame answered (larger: an error response)."""
HARD_FRAME_FACTOR: Final = 4
"""A frame over ``HARD_FRAME_FACTOR * max_frame_bytes`` is not even buffered: trio-websocket
closes the connection with 1009 (a client that sends that much is not speaking the protocol)."""
COMMANDS_PER_SECOND: Final = 50.0
COMMAND_BURST: Final = 200
MAX_SESSIONS_PER_TOKEN: Final = 100
OUTBOUND_QUEUE: Final = 256
"""Frames waiting for one client's socket. Beyond it the pumps wait, the client's coalescing
subscriptions merge streamed deltas, and past their overrun the client is cut off (4008)."""
SUBSCRIPTION_BUFFER: Final = 64
"""Live events one attached session may hold for a client (policy ``coalesce``; cut off past
``COALESCE_OVERRUN`` times this of events that do not merge)."""
LAG_CLOSE_TIMEOUT: Final = 10.0
"""Seconds a client cut off for lag gets to take its ``lagged`` frame and close frame before
its socket is closed under it."""
LONG_COMMANDS_PER_SESSION: Final = 16
"""Long commands (prompt, compact ...) running at once on one session; more wait."""
STATE_FOLDER: Final = ".host"
"""The host's state folder inside its session folder, unless configured: ``tokens.json``
and the ``exports`` folder."""
EXPORTS_FOLDER: Final = "exports"
SESSION_SUFFIX: Final = ".jsonl"
"""Session files' extension: a client-named output path may not end with it."""


class CommandRefused(PitrioError):
    """A host command that cannot be done; answered as an error response.

    Attributes:
        kind: the error's kind for ``/metrics`` (``unknown_session``, ``forbidden``,
            ``session_limit`` ...), and the response's ``limit`` field for limits.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@attrs.frozen(kw_only=True)
class HostLimits:
    """Per-client limits and buffer sizes (docs/host-protocol.md)."""

    max_frame_bytes: int = MAX_FRAME_BYTES
    commands_per_second: float = COMMANDS_PER_SECOND
    command_burst: int = COMMAND_BURST
    max_sessions_per_token: int = MAX_SESSIONS_PER_TOKEN
    """Live sessions a client token may have created (the host token is not limited)."""
    outbound_queue: int = OUTBOUND_QUEUE
    subscription_buffer: int = SUBSCRIPTION_BUFFER
    lag_close_timeout: float = LAG_CLOSE_TIMEOUT
    socket_send_buffer: int | None = None
    """``SO_SNDBUF`` for accepted sockets (``None``: the system's); tests make it small so
    a client that stops reading fills it quickly."""


@attrs.frozen(kw_only=True)
class HostConfig:
    """How a host listens and what it allows.

    Attributes:
        host: the address to bind (``127.0.0.1``: this machine only).
        port: the port (0: any free one; :attr:`Host.port` tells which).
        token: the host token (every session, ``create_token``); generated when empty.
        session_dir: where session files are created and reopened from.
        idle_timeout: see :data:`IDLE_TIMEOUT`.
        drain_grace: see :data:`DRAIN_GRACE`.
        allow_origins: origins allowed besides the host's own.
        limits: see :class:`HostLimits`.
        static_dir: the browser page's folder (default: the package's ``static``).
        roots: the folders a ``create_session`` ``cwd`` must resolve inside (``realpath``,
            so a symlink cannot lead out); empty: the folder the host was created in. A
            relative ``cwd`` is taken from the first root.
        allow_any_cwd: the host token (never a client token) may name any folder.
        state_dir: where the host keeps its client tokens (``tokens.json``, mode 0600) and
            ``export_html``'s files (``exports/``); default: ``<session_dir>/.host``.
        client_tools: the tools a client token's sessions get unless its grant names others
            (docs/host-protocol.md, "Tool isolation").
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str = ""
    session_dir: str
    idle_timeout: float = IDLE_TIMEOUT
    drain_grace: float = DRAIN_GRACE
    allow_origins: tuple[str, ...] = ()
    limits: HostLimits = HostLimits()
    static_dir: str | None = None
    roots: tuple[str, ...] = ()
    allow_any_cwd: bool = False
    state_dir: str | None = None
    client_tools: tuple[str, ...] = DEFAULT_CLIENT_TOOLS

    @property
    def state_folder(self) -> str:
        """:attr:`state_dir`, or its default."""
        return self.state_dir or os.path.join(self.session_dir, STATE_FOLDER)

    @property
    def exports_folder(self) -> str:
        """Where ``export_html`` writes (the only place it writes)."""
        return os.path.join(self.state_folder, EXPORTS_FOLDER)


@attrs.frozen(kw_only=True)
class SessionRequest:
    """What a :data:`SessionFactory` is asked to open.

    Attributes:
        session_dir: the host's session folder (new files go there).
        session_file: a file to reopen, or ``None`` for a new session.
        cwd: the working directory for a new session, absolute and checked against the
            host's roots (``None``: the factory's default).
        model: ``provider/id`` (``None``: the default).
        thinking_level: the thinking level (``None``: the default).
        ephemeral: keep the new session in memory (``--no-session``): no file is written,
            so it cannot be reopened once closed.
        tools: the built-in tools the session gets (``None``: the factory's default, for
            the host token).
        confinement: set for a client token's session: its file tools stay inside
            ``roots`` and out of ``hidden``, ``write``/``edit`` spare protected files, and
            bash runs under the sandbox command. The factory adds the agent dir to
            ``hidden`` and the ``sandboxCommand`` setting.
    """

    session_dir: str
    session_file: str | None = None
    cwd: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    ephemeral: bool = False
    tools: tuple[str, ...] | None = None
    confinement: Confinement | None = None


@attrs.frozen
class OpenedSession:
    """A running session and the services its commands use (``get_commands`` ...)."""

    session: AgentSession
    services: RpcServices = attrs.field(factory=RpcServices)
    load_errors: tuple[ExtensionErrorEvent, ...] = ()
    """Extensions that failed to load (``event`` ``"load"``): logged with the session's id
    and published as ``extension_error`` events once its first client has attached."""
    bash_operations: BashOperations | None = None
    """How a user ``bash`` command of a confined session runs (its sandbox); ``None``: the
    local shell."""


SessionFactory = Callable[[SessionRequest], AbstractAsyncContextManager[OpenedSession]]
"""Opens a session for the host: the context runs it, and leaving it aborts what runs and
writes the file (as :func:`~pitrio.sessions.open_agent_session`). A request it cannot serve
(unknown model, missing cwd) raises a :class:`~pitrio.PitrioError` or ``OSError`` before
yielding; the message is sent to the client."""


class LiveSession:
    """One session served by the host: its task, clients and long commands.

    Args:
        session_id: the host's id for it (the session's id when it was opened; it stays the
            same through ``new_session``, ``switch_session`` and ``fork``).
        owner: the token that created or reopened it.
    """

    def __init__(
        self,
        request: SessionRequest,
        owner: str,
        idle_timeout: float,
        *,
        exports_dir: str = "",
        epoch: int = 1,
    ) -> None:
        self.request = request
        self.exports_dir = exports_dir
        """The only folder ``export_html`` writes in (empty: the session folder's
        ``.host/exports``)."""
        self.epoch = epoch
        """This opening's number: greater than every earlier opening's of the same session
        file (recorded next to it, see :func:`~pitrio.sessions.storage._journal.next_epoch`).
        Every event frame carries it with its ``seq``, which counts from 1 in each epoch."""
        self.owner = owner
        self.id = ""
        self.session: AgentSession
        self.commands: SessionCommands
        self.clients: set[Any] = set()
        """The connections (``_ws_client.Client``) attached to it."""
        self.log: Any = log
        self._idle_timeout = idle_timeout
        self._running = 0
        self._limiter = trio.CapacityLimiter(LONG_COMMANDS_PER_SESSION)
        self._changed = trio.Event()
        self._close = trio.Event()
        self.closed = trio.Event()
        self.dropped = False
        """Closed because another node of the cluster owns the session now (:meth:`drop`)."""
        self._tasks: trio.Nursery | None = None
        self._load_errors: list[ExtensionErrorEvent] = []
        self.bash_operations: BashOperations | None = None
        """How this session's user ``bash`` commands run (a confined session's sandbox)."""

    async def publish_load_errors(self) -> None:
        """Publish the extensions' load errors as ``extension_error`` events (once: called
        when a client has attached, so the one that created or reopened it sees them)."""
        errors, self._load_errors = self._load_errors, []
        for error in errors:
            await self.session.publish(error)

    @property
    def _exports(self) -> str:
        return self.exports_dir or os.path.join(
            self.request.session_dir, STATE_FOLDER, EXPORTS_FOLDER
        )

    @property
    def is_idle(self) -> bool:
        """No client, no long command running, no run."""
        return not self.clients and not self._running and not self.session.is_streaming

    def touch(self) -> None:
        """Something the idle watch looks at changed (a client, a command)."""
        self._changed.set()
        self._changed = trio.Event()

    async def run(
        self,
        factory: SessionFactory,
        on_closed: Callable[[LiveSession], None],
        *,
        task_status: trio.TaskStatus[LiveSession] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Open the session and serve it until :meth:`close` or the idle timeout.

        A failure to open is raised to ``nursery.start``'s caller; a failure later is logged
        (one broken session must not end the host).
        """
        started = False
        try:
            async with factory(self.request) as opened:
                self.session = opened.session
                # Module functions bound with partial, not bound methods: the session's
                # commands keep them, and this LiveSession keeps the commands (a cycle would
                # leave a closed session to the cycle collector).
                check_path = functools.partial(
                    check_client_path, self.request.session_dir, self._exports
                )
                services = attrs.evolve(opened.services, check_path=check_path)
                if services.export_html is not None:
                    services = attrs.evolve(
                        services,
                        export_html=functools.partial(
                            export_into,
                            services.export_html,
                            check_path,
                            opened.session.session_id,
                        ),
                    )
                self.bash_operations = opened.bash_operations
                self.commands = SessionCommands(opened.session, services)
                self.id = opened.session.session_id
                self.log = log.bind(session=self.id)
                self._load_errors = list(opened.load_errors)
                new_file = opened.session.session_file
                if self.request.session_file is None and new_file is not None:
                    # A new session's first opening, recorded before any cursor is handed out.
                    await run_file_work(write_epoch, new_file, self.epoch)
                for error in self._load_errors:
                    self.log.warning(
                        "extension_load_failed", extension=error.extension_path, error=error.error
                    )
                async with trio.open_nursery() as tasks:
                    self._tasks = tasks
                    tasks.start_soon(self._idle_watch)
                    journal = None
                    if opened.session.session_file is not None:
                        journal = TurnJournal()
                        tasks.start_soon(journal.follow, opened.session)
                    started = True
                    task_status.started(self)
                    # Not kept while the session lives: it holds the nursery nursery.start
                    # opened for this task (its cancel scope, status, sets; ~1 KB).
                    del task_status
                    await self._close.wait()
                    tasks.cancel_scope.cancel()
                if journal is not None and not self.session.is_streaming and not self.dropped:
                    # Closed with no run (close aborts it first): no answer is in flight,
                    # whether or not the journal saw the last message end.
                    await journal.discard()
        except Exception:
            if not started:
                raise
            log_failure(self.log, "session_failed")
        finally:
            self._tasks = None
            if started:
                on_closed(self)
                self.log.info("session_closed", file=self.request.session_file)
            self.closed.set()

    async def close(self) -> None:
        """Abort what runs, stop the session (its file is written) and wait until it is."""
        if self._tasks is not None and not self._close.is_set():
            await self.session.abort_bash()  # user bash runs outside the run: abort stops runs only
            with trio.move_on_after(DRAIN_GRACE):
                await self.session.abort()
        self._close.set()
        await self.closed.wait()

    def drop(self) -> None:
        """Stop serving the session at once, without aborting its run first: another node of
        the cluster owns it now (its lease lapsed or a newer epoch wrote). Nothing more reaches
        its file, which the new owner writes (not the end of the run its closing cancels). Its
        clients get ``session_closed`` and reopen it, reaching the new owner."""
        self.dropped = True
        self.session.session_manager.stop_writing()
        self._close.set()

    async def wait_idle(self) -> None:
        """Return once no long command and no run is in progress."""
        while self._running or self.session.is_streaming:
            if self._running:
                await self._changed.wait()
            else:
                await self.session.wait_for_idle()

    async def start_long(
        self, command: RpcRequest, respond: Callable[[Any], Any], log_: Any
    ) -> None:
        """Start a long command in the session's nursery; return once it reached the session.

        Its response goes to ``respond`` (which must not block: the session's tasks never
        wait for a client).
        """
        tasks = self._tasks
        if tasks is None:
            raise CommandRefused("unknown_session", f"Session {self.id} is closed")
        # A token of its own: a command is not always hashable (a prompt's images are dicts).
        borrower = object()
        await self._limiter.acquire_on_behalf_of(borrower)
        try:
            await tasks.start(self._run_long, command, respond, log_, borrower)
        except BaseException:
            self._limiter.release_on_behalf_of(borrower)
            raise

    async def _run_long(
        self,
        command: RpcRequest,
        respond: Callable[[Any], Any],
        log_: Any,
        borrower: object,
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        self._running += 1
        self.touch()
        try:
            await self.commands.run(command, respond, task_status)
        except Exception:
            log_failure(log_, "command_failed")
        finally:
            self._running -= 1
            self._limiter.release_on_behalf_of(borrower)
            self.touch()

    async def _idle_watch(self) -> None:
        while True:
            changed = self._changed
            if self.is_idle:
                with trio.move_on_after(self._idle_timeout) as scope:
                    await changed.wait()
                if scope.cancelled_caught and self.is_idle:
                    self.log.info("session_idle", timeout=self._idle_timeout)
                    self._close.set()
                    return
            elif self.session.is_streaming and not self._running:
                # A run no command of ours waits for (a follow-up queued before detaching).
                await self.session.wait_for_idle()
            else:
                await changed.wait()


class GatewayApi(Protocol):
    """What a connection uses of its host's cluster link (a gateway's side of
    :class:`~pitrio.host.ws._cluster.ClusterLink`)."""

    gateway_clients: int

    async def forward(self, session_id: str, request: dict[str, Any]) -> dict[str, Any]: ...

    def read_events(
        self, session_id: str, after: tuple[int, int]
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEntry | None]]: ...

    def relayed(self, stamp: float) -> None: ...


class HostApi(Protocol):
    """What a connection (and a cluster link) uses of its host (:class:`~pitrio.host.Host`)."""

    config: HostConfig
    token: str
    tokens: Tokens
    metrics: HostMetrics
    sessions: dict[str, LiveSession]
    draining: bool

    @property
    def cluster(self) -> GatewayApi | None:
        """The host's cluster link (``pitrio serve --cluster``), else ``None``."""
        ...

    def live_session(self, token: str, session_id: str) -> LiveSession: ...

    def visible_sessions(self, token: str) -> list[LiveSession]: ...

    async def list_sessions(self, token: str) -> list[dict[str, Any]]: ...

    def session_policy_allows(self, token: str, live: LiveSession) -> bool: ...

    async def create_token(
        self, *, expires: float | None = None, tools: tuple[str, ...] | None = None
    ) -> tuple[str, str]: ...

    async def revoke_token(self, key: str) -> bool: ...

    async def grant(self, key: str, session_id: str) -> None: ...

    async def create_session(
        self,
        token: str,
        *,
        cwd: str | None = None,
        model: str | None = None,
        thinking_level: str | None = None,
        ephemeral: bool = False,
    ) -> LiveSession: ...

    async def open_session(self, token: str, session_id: str) -> LiveSession: ...

    async def close_session(self, live: LiveSession) -> None: ...


def log_failure(logger: Any, event: str) -> None:
    """``logger.exception(event)`` that cannot raise.

    It is called where one connection's or session's failure is contained; a logger that
    fails there (a traceback holding a lone surrogate, written to a strict UTF-8 stream by a
    renderer that does not escape it) would otherwise end the host. A failing logger gets a
    best-effort plain line on stderr instead; if even that fails, nothing is written.
    """
    try:
        logger.exception(event)
    except Exception as exc:
        try:
            failure = exc.__context__  # the error being logged
            message = f"pitrio.host: {event} (the log line failed: {exc!r}; error: {failure!r})"
            sys.stderr.write(message.encode("ascii", "backslashreplace").decode("ascii") + "\n")
        except Exception:  # nowhere left to report to
            pass


def resolve_session_cwd(cwd: str, roots: tuple[str, ...], *, anywhere: bool) -> str:
    """The real path of the folder ``cwd`` names, which must lie inside one of ``roots``.

    Blocking (``realpath`` reads the file system): run it in a worker thread.

    Args:
        cwd: absolute, or relative to the first root.
        roots: the allowed folders (at least one).
        anywhere: skip the roots check (the host token with ``allow_any_cwd``).

    Raises:
        CommandRefused: (kind ``cwd_refused``) outside every root, or not a folder;
            (kind ``invalid_command``) a NUL character, which no path can hold.
    """
    if "\x00" in cwd:
        raise CommandRefused(
            "invalid_command", 'Invalid create_session command: "cwd" contains a NUL character'
        )
    real_roots = [os.path.realpath(root) for root in roots]
    # realpath resolves every symlink and "..": what is checked is where tools would run.
    resolved = os.path.realpath(os.path.join(real_roots[0], cwd))
    inside = any(
        resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep) for root in real_roots
    )
    if not inside and not anywhere:
        listed = ", ".join(real_roots)
        raise CommandRefused(
            "cwd_refused",
            f"cwd {cwd!r} resolves to {resolved}, outside the host's roots ({listed}): "
            "a session's folder must be inside a --root",
        )
    if not os.path.isdir(resolved):
        raise CommandRefused("cwd_refused", f"cwd {cwd!r} is not a directory ({resolved})")
    return resolved


async def check_client_path(session_dir: str, exports: str, path: str, kind: PathKind) -> str:
    """The real path of a file a client names (``RpcServices.check_path``).

    A client names files the host opens or writes with its own privileges: session files only
    from the host's session folder; an export only as a name in the host's exports folder (so
    it can overwrite no session, context file or extension).

    Raises:
        UsageError: a session file outside the session folder, or an export path that names no
            file or a session file.
    """
    if kind == "session":
        return await run_file_work(confine_path, path, (session_dir,))
    name = os.path.basename(path.replace("\\", "/").rstrip("/"))
    if name in ("", ".", "..") or "\x00" in name:
        raise UsageError(f"outputPath {path!r} names no file: give a file name")
    if name.endswith(SESSION_SUFFIX):
        raise UsageError(
            f"outputPath {path!r}: export_html may not write a session file ({SESSION_SUFFIX})"
        )
    await run_file_work(functools.partial(os.makedirs, exports, mode=0o700, exist_ok=True))
    return await run_file_work(confine_path, name, (exports,))


async def export_into(
    inner: Callable[[AgentSession, str | None], Awaitable[str]],
    check_path: Callable[[str, PathKind], Awaitable[str]],
    session_id: str,
    session: AgentSession,
    output: str | None,
) -> str:
    """``export_html`` for a host session: without an ``outputPath`` (where the CLI writes in
    the session's cwd) the page goes into the host's exports folder."""
    if output is None:
        output = await check_path(f"pitrio-session-{session_id}.html", "output")
    return await inner(session, output)


def confine_path(path: str, allowed: tuple[str, ...]) -> str:
    """The real path of ``path`` (relative: to the first allowed folder), which must lie
    inside one of ``allowed``.

    Blocking (``realpath`` reads the file system): run it in a worker thread.

    Raises:
        UsageError: it resolves outside every allowed folder.
    """
    real = [os.path.realpath(folder) for folder in allowed]
    resolved = os.path.realpath(os.path.join(real[0], path))
    if any(resolved.startswith(folder.rstrip(os.sep) + os.sep) for folder in real):
        return resolved
    raise UsageError(
        f"path {path!r} resolves to {resolved}, outside the folders this host lets clients "
        f"name ({', '.join(real)})"
    )


def find_session_file(session_dir: str, session_id: str) -> str | None:
    """The file of session ``session_id`` in ``session_dir`` (``<time>_<id>.jsonl``)."""
    if not session_id or any(c in session_id for c in "/\\*?[]") or session_id.startswith("."):
        return None
    matches = sorted(glob.glob(os.path.join(glob.escape(session_dir), f"*_{session_id}.jsonl")))
    return matches[-1] if matches else None


async def locate_session_file(session_dir: str, session_id: str) -> str | None:
    """:func:`find_session_file` in a worker thread."""
    return await run_file_work(find_session_file, session_dir, session_id)
