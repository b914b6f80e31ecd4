"""``pitrio serve``: the websocket host (docs/host-protocol.md, :mod:`pitrio.host`).

Each session the host opens is built as ``pitrio --mode rpc`` builds its one session
(:func:`~pitrio.cli._setup.build_runtime`: models, keys, settings, tools, resources), in the
host's session folder. The host token comes from ``--token``, ``$PITRIO_HOST_TOKEN`` or the
``host.token`` setting, else it is generated; it is printed on stderr with the address::

    pitrio serve: listening on http://127.0.0.1:8765/ token=... page=http://127.0.0.1:8765/#token=...

``SIGTERM`` or ``SIGINT`` drains the host (see :meth:`~pitrio.host.Host.drain`) and the
process exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TextIO

import attrs

if TYPE_CHECKING:
    from pitrio.host import (
        Confinement,
        HostConfig,
        OpenedSession,
        SessionFactory,
        SessionRequest,
    )
    from pitrio.tools.builtin import BashOperations

TOKEN_ENV: Final = "PITRIO_HOST_TOKEN"
"""Environment variable holding the host token."""
TOKEN_SETTING: Final = "host.token"

DESCRIPTION = """\
Serve many sessions in one process over websockets, with a browser page at / (see
docs/host-protocol.md). Every websocket frame is one of pitrio --mode rpc's JSON commands with
a "session" field, plus create_session, open_session, close_session, detach_session,
list_sessions, create_token and grant. A bearer token is required (Authorization header or
?token=); the page's address with the token is printed at start."""


def _parser() -> argparse.ArgumentParser:
    from pitrio.host import DEFAULT_PORT, DRAIN_GRACE, IDLE_TIMEOUT, MAX_SESSIONS_PER_TOKEN

    parser = argparse.ArgumentParser(prog="pitrio serve", description=DESCRIPTION)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="port (0: any free one; default: %(default)s)",
    )
    parser.add_argument(
        "--token",
        help=f"the host token (default: ${TOKEN_ENV}, the "
        f"{TOKEN_SETTING} setting, else a generated one)",
    )
    parser.add_argument(
        "--session-dir",
        help="where sessions are created and reopened from "
        "(default: this directory's sessions folder)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT,
        help="close a session after this many seconds with no client and no run "
        "(default: %(default)g)",
    )
    parser.add_argument(
        "--drain-grace",
        type=float,
        default=DRAIN_GRACE,
        help="seconds running turns get on SIGTERM before they are aborted (default: %(default)g)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed besides the host's own (repeatable)",
    )
    parser.add_argument(
        "--max-sessions-per-token",
        type=int,
        default=MAX_SESSIONS_PER_TOKEN,
        help="live sessions a client token may create (default: %(default)s)",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder sessions may run in: a create_session cwd must resolve inside one "
        "(repeatable; default: this directory)",
    )
    parser.add_argument(
        "--allow-any-cwd",
        action="store_true",
        help="let the host token (never a client token) create sessions in any folder",
    )
    parser.add_argument(
        "-e",
        "--extension",
        action="append",
        default=[],
        dest="extensions",
        metavar="PATH",
        help="an extension loaded into every session (repeatable)",
    )
    parser.add_argument(
        "--no-extensions",
        action="store_true",
        help="load only the -e extensions, not the project's, global or installed ones",
    )
    parser.add_argument(
        "--state-dir",
        help="where the host keeps client tokens (tokens.json) and export_html's files "
        "(exports/) (default: the session directory's .host folder)",
    )
    parser.add_argument(
        "--client-tools",
        metavar="NAMES",
        help="comma-separated built-in tools a client token's sessions get unless its "
        "create_token grant names others (default: read,grep,find,ls)",
    )
    parser.add_argument(
        "--cluster",
        metavar="redis://HOST:PORT",
        help="join the cluster of hosts sharing this Redis (needs pitrio[cluster]; every node "
        "must reach the same --session-dir and use the same --token): any node serves any "
        "session, a dead node's sessions move to the others (README, Scaling out)",
    )
    parser.add_argument("--node-id", help="this node's name in the cluster (default: a random one)")
    parser.add_argument(
        "--advertise",
        metavar="ws://HOST:PORT",
        help="the address other nodes and clients reach this one at (default: the address "
        "it listens on)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=5.0,
        help="seconds a silent node keeps its sessions before another takes them over "
        "(--cluster; default: %(default)g)",
    )
    parser.add_argument(
        "--stall-limit",
        type=float,
        default=30.0,
        help="seconds this node's event loop may be unresponsive before it stops renewing its "
        "leases and lets other nodes take its sessions over; above --lease-ttl "
        "(--cluster; default: %(default)g)",
    )
    parser.add_argument("--provider", help="the sessions' provider (as pitrio --provider)")
    parser.add_argument("--model", help="the sessions' model (as pitrio --model)")
    parser.add_argument("--thinking", help="the sessions' thinking level")
    return parser


def make_session_factory(
    *,
    cwd: str,
    env: Mapping[str, str],
    provider: str | None = None,
    model: str | None = None,
    thinking: str | None = None,
    warn: Callable[[str], None] = lambda message: None,
    extensions: Sequence[str] = (),
    no_extensions: bool = False,
) -> SessionFactory:
    """A :data:`~pitrio.host.SessionFactory` building sessions as ``pitrio --mode rpc`` does.

    Args:
        cwd: the working directory of sessions created without one.
        env: the environment (keys, agent dir, ``PITRIO_FAUX_SCRIPT``).
        provider, model, thinking: the defaults of ``--provider``/``--model``/``--thinking``;
            a ``create_session`` naming a model replaces them.
        warn: told each warning found while building a session.
        extensions: ``-e`` paths (relative to ``cwd``), loaded into every session.
        no_extensions: load only ``extensions``, not the project's, global or entry points.

    Each session gets its own :class:`~pitrio.extensions.ExtensionRunner` (extensions keep
    per-session state) loaded for that session's cwd, with :class:`~pitrio.extensions.HeadlessUI`
    (dialogs answer their defaults). An extension that fails to load is skipped and reported
    in :attr:`~pitrio.host.OpenedSession.load_errors`.
    """
    import attrs
    import trio

    from pitrio.cli._coding import load_session_resources, prompt_resources
    from pitrio.cli._extensions import discover_resources, open_cli_session
    from pitrio.cli._rpc_mode import _export_html, list_commands
    from pitrio.cli._setup import CliArgs, CliError, build_runtime
    from pitrio.extensions import (
        ExtensionRunner,
        HeadlessUI,
        find_entry_points,
        load_extensions,
    )
    from pitrio.host import OpenedSession, RpcServices
    from pitrio.sessions import ExtensionErrorEvent

    explicit = tuple(os.path.join(cwd, path) for path in extensions)
    # Finding entry points reads every installed package's metadata (~5 ms): once per host.
    entry_points: list[Any] = []
    found_entry_points = False

    @asynccontextmanager
    async def factory(request: SessionRequest) -> AsyncIterator[OpenedSession]:
        session_cwd = os.path.join(cwd, request.cwd) if request.cwd else cwd
        if not await trio.to_thread.run_sync(os.path.isdir, session_cwd):
            raise CliError(f"No such directory: {session_cwd}")
        args = CliArgs(
            provider=None if request.model else provider,
            model=request.model or model,
            thinking=request.thinking_level or thinking,
            session=request.session_file,
            session_dir=request.session_dir,
            no_session=request.ephemeral,
            tools=request.tools,
        )
        build = functools.partial(
            build_runtime,
            args,
            cwd=session_cwd,
            env=env,
            warn=warn,
            require_auth=False,
            notice=warn,
        )
        runtime = await trio.to_thread.run_sync(build)
        bash_operations = None
        try:
            if request.confinement is not None:
                runtime, bash_operations = _confine(runtime, request.confinement, warn)
            if request.model and not _known_model(runtime):
                raise CliError(
                    f'Unknown model "{request.model}": not in the host\'s model registry '
                    "(pitrio --list-models shows them)"
                )
            nonlocal found_entry_points
            if not found_entry_points and not no_extensions:
                entry_points[:] = await trio.to_thread.run_sync(find_entry_points)
                found_entry_points = True
            runner = ExtensionRunner(cwd=runtime.resources.cwd, ui=HeadlessUI())
            await load_extensions(
                runner,
                agent_dir=runtime.dirs.write_dir,
                explicit=explicit,
                no_extensions=no_extensions,
                entry_points=entry_points,
            )
            runtime = await discover_resources(attrs.evolve(runtime, extensions=runner))
            resources = await load_session_resources(runtime.resources)
            if not request.ephemeral:
                # On disk from create_session on (pi's lazy file stays the CLI's): a session
                # whose first answer a crash cut short is found again by open_session. Last,
                # so a session that fails to build leaves no file behind.
                await trio.to_thread.run_sync(runtime.session_manager.write_at_once)
        except BaseException:
            runtime.session_manager.close()
            raise
        load_errors = tuple(
            ExtensionErrorEvent(extension_path=error.path, event="load", error=error.error)
            for error in runner.load_errors
        )
        system_prompt = resources.build_system_prompt(list(runtime.tool_names))
        services = RpcServices(
            list_commands=functools.partial(list_commands, resources, runtime.resources.cwd),
            export_html=_export_html,
        )
        options = {**runtime.session_options(system_prompt), **prompt_resources(resources)}
        async with open_cli_session(runtime, options) as session:
            yield OpenedSession(session, services, load_errors, bash_operations)

    return factory


def _confine(
    runtime: Any, confinement: Confinement, warn: Callable[[str], None]
) -> tuple[Any, BashOperations | None]:
    """``runtime`` for a client token's session: its file tools confined (the agent dirs
    hidden too), bash run under the ``sandboxCommand`` setting, no tool an extension could
    turn on later; and the operations its user ``bash`` commands run with."""
    import attrs

    from pitrio.cli._coding import setting_value
    from pitrio.host import build_tools, sandbox_command

    settings = runtime.settings
    hidden = (*confinement.hidden, runtime.dirs.write_dir, *runtime.dirs.fallback_dirs)
    sandbox = sandbox_command(settings.settings.get("sandboxCommand"))
    confinement = attrs.evolve(confinement, hidden=hidden, sandbox=sandbox)
    tools, user_bash = build_tools(
        runtime.tool_names,
        runtime.resources.cwd,
        confinement=confinement,
        shell_path=setting_value(settings, "shellPath", str, warn),
        command_prefix=setting_value(settings, "shellCommandPrefix", str, warn),
        auto_resize_images=runtime.auto_resize_images,
    )
    return attrs.evolve(runtime, tools=tools, available_tools=()), user_bash


def _known_model(runtime: Any) -> bool:
    """Whether the runtime's model is one of the registry's (pi's CLI would make up a model
    for an unknown id of a known provider; a host client may not)."""
    model = runtime.model
    return any(m.provider == model.provider and m.id == model.id for m in runtime.setup.models)


def host_token(flag: str | None, env: Mapping[str, str], cwd: str) -> str | None:
    """``--token``, else ``$PITRIO_HOST_TOKEN``, else the ``host.token`` setting."""
    if flag:
        return flag
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    from pitrio.cli._coding import AgentDirSettingsStorage, setting_value
    from pitrio.sessions import SettingsManager
    from pitrio.sessions.resources import resolve_agent_dirs

    dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
    settings = SettingsManager.from_storage(AgentDirSettingsStorage(cwd, dirs))
    value = setting_value(settings, TOKEN_SETTING, str, lambda message: None)
    return value or None


def default_session_dir(flag: str | None, env: Mapping[str, str], cwd: str) -> str:
    """``--session-dir``, else ``$PITRIO_CODING_AGENT_SESSION_DIR``, else the ``sessionDir``
    setting, else this directory's folder under the agent dir's ``sessions``."""
    from pitrio.cli._coding import AgentDirSettingsStorage
    from pitrio.cli._setup import CliArgs, resolve_session_dir
    from pitrio.sessions import SettingsManager, get_default_session_dir
    from pitrio.sessions.resources import resolve_agent_dirs

    dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
    settings = SettingsManager.from_storage(AgentDirSettingsStorage(cwd, dirs))
    chosen = resolve_session_dir(CliArgs(session_dir=flag), env, settings)
    if chosen:
        os.makedirs(chosen, exist_ok=True)
        return os.path.abspath(chosen)
    return get_default_session_dir(cwd, dirs.write_dir)


def host_config(args: argparse.Namespace, *, cwd: str, token: str, session_dir: str) -> HostConfig:
    """The :class:`~pitrio.host.HostConfig` ``pitrio serve``'s flags describe (``--root``
    relative to ``cwd``; none: ``cwd`` itself)."""
    from pitrio.host import HostConfig, HostLimits

    return HostConfig(
        host=args.host,
        port=args.port,
        token=token,
        session_dir=session_dir,
        idle_timeout=args.idle_timeout,
        drain_grace=args.drain_grace,
        allow_origins=tuple(args.allow_origin),
        roots=tuple(os.path.abspath(os.path.join(cwd, root)) for root in args.root) or (cwd,),
        allow_any_cwd=args.allow_any_cwd,
        limits=HostLimits(max_sessions_per_token=args.max_sessions_per_token),
        state_dir=os.path.abspath(os.path.join(cwd, args.state_dir)) if args.state_dir else None,
        **_client_tools(args.client_tools),
    )


def _client_tools(flag: str | None) -> dict[str, Any]:
    """``--client-tools`` as a :class:`~pitrio.host.HostConfig` field (none: its default).

    Raises:
        CliError: a name that is not a built-in tool.
    """
    if flag is None:
        return {}
    from pitrio.cli._setup import CliError
    from pitrio.tools.builtin import builtin_tool_names

    names = tuple(dict.fromkeys(name.strip() for name in flag.split(",") if name.strip()))
    unknown = [name for name in names if name not in builtin_tool_names()]
    if unknown:
        known = ", ".join(builtin_tool_names())
        raise CliError(f"--client-tools: unknown tool {unknown[0]!r} (built-in tools: {known})")
    return {"client_tools": names}


@attrs.frozen(kw_only=True)
class ClusterOptions:
    """``--cluster`` and the flags that go with it."""

    url: str
    node_id: str | None = None
    advertise: str | None = None
    lease_ttl: float = 5.0
    stall_limit: float = 30.0


async def run_host(
    factory: SessionFactory,
    config: HostConfig,
    *,
    err: TextIO,
    cluster: ClusterOptions | None = None,
) -> int:
    """Serve until ``SIGTERM``/``SIGINT``, then drain; returns the exit status (0). With
    ``cluster``, the host joins the cluster once it listens (its address is then known)."""
    import trio

    from pitrio.host import Host
    from pitrio.providers import open_http_client

    host = Host(factory, config)
    stopped = trio.Event()

    async def serve(*, task_status: trio.TaskStatus[Host] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await host.run(task_status=task_status)
        finally:
            stopped.set()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with open_http_client(), trio.open_nursery() as nursery:
            await nursery.start(serve)
            # The cluster node is entered after the host listens (its address is known then)
            # and left once the host has stopped: its last appends and lease releases still
            # reach Redis, and no task of the host uses it any more.
            async with contextlib.AsyncExitStack() as stack:
                if cluster is not None:
                    from pitrio.host.ws._cluster_redis import open_redis_node

                    node = await stack.enter_async_context(
                        open_redis_node(
                            cluster.url,
                            node_id=cluster.node_id,
                            address=cluster.advertise or host.ws_url.rsplit("/", 1)[0],
                            lease_ttl=cluster.lease_ttl,
                            stall_limit=cluster.stall_limit,
                        )
                    )
                    await host.join_cluster(node)
                    err.write(
                        f"pitrio serve: node {node.node_id} of the cluster at {cluster.url}\n"
                    )
                err.write(
                    f"pitrio serve: listening on {host.url} token={host.token} "
                    f"page={host.page_url}\n"
                )
                err.flush()
                async for received in signals:
                    err.write(f"pitrio serve: {signal.Signals(received).name}, draining\n")
                    err.flush()
                    break
                await host.drain()
                await stopped.wait()
            nursery.cancel_scope.cancel()
    err.write("pitrio serve: stopped\n")
    err.flush()
    return 0


class _EscapingWriter:
    """A text stream that escapes what its encoding cannot write (``backslashreplace``), so
    a log line holding a lone surrogate is written instead of raising in the host."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._encoding = getattr(stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        safe = text.encode(self._encoding, "backslashreplace").decode(self._encoding)
        return self._stream.write(safe)

    def flush(self) -> None:
        self._stream.flush()


def configure_logging(err: TextIO) -> None:
    """structlog for ``pitrio serve``: lines on ``err`` (JSON unless it is a terminal), with
    anything ``err``'s encoding cannot hold escaped (``errors="backslashreplace"``)."""
    import structlog

    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    if err.isatty():
        processors.append(structlog.dev.ConsoleRenderer())
    else:
        processors += [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    writer: Any = _EscapingWriter(err)
    structlog.configure(processors=processors, logger_factory=structlog.PrintLoggerFactory(writer))


def serve_main(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> int:
    """Run ``pitrio serve``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    err = sys.stderr
    environ = dict(os.environ if env is None else env)
    cwd = os.getcwd()
    configure_logging(err)
    from pitrio.host.ws._tuning import tune_gc_for_many_sessions

    tune_gc_for_many_sessions()

    import trio

    from pitrio.cli._errors import only_failure
    from pitrio.cli._setup import CliError

    def warn(message: str) -> None:
        err.write(f"Warning: {message}\n")

    try:
        token = host_token(args.token, environ, cwd)
        session_dir = default_session_dir(args.session_dir, environ, cwd)
    except CliError as exc:
        err.write(f"{exc}\n")
        return 1
    except OSError as exc:
        # The session folder cannot be created: say which (the errno text alone does not).
        where = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        err.write(
            f"pitrio serve: cannot use the session directory ({where}); name another "
            "with --session-dir\n"
        )
        return 1
    try:
        config = host_config(args, cwd=cwd, token=token or "", session_dir=session_dir)
    except CliError as exc:
        err.write(f"{exc}\n")
        return 1
    cluster = None
    if args.cluster:
        try:
            import coredis  # noqa: F401  (only to say what is missing, before starting)
        except ImportError:
            from pitrio.host.ws._cluster_redis import missing_extra_message

            err.write(f"pitrio serve: {missing_extra_message()}\n")
            return 2
        if not args.stall_limit > args.lease_ttl:
            err.write("pitrio serve: --stall-limit must be above --lease-ttl\n")
            return 2
        cluster = ClusterOptions(
            url=args.cluster,
            node_id=args.node_id,
            advertise=args.advertise,
            lease_ttl=args.lease_ttl,
            stall_limit=args.stall_limit,
        )
    factory = make_session_factory(
        cwd=cwd,
        env=environ,
        provider=args.provider,
        model=args.model,
        thinking=args.thinking,
        warn=warn,
        extensions=args.extensions,
        no_extensions=args.no_extensions,
    )
    try:
        return trio.run(functools.partial(run_host, factory, config, err=err, cluster=cluster))
    except BaseException as exc:
        # The listening socket is bound inside the host's nursery, so a taken port arrives
        # wrapped in an exception group: one line for the user, never a trace.
        failure = only_failure(exc, OSError)
        if failure is None:
            raise
        err.write(f"pitrio serve: {_bind_failure_message(failure, config)}\n")
        return 1


def _bind_failure_message(failure: OSError, config: HostConfig) -> str:
    """What to tell the user when the host cannot start listening."""
    if failure.errno == errno.EADDRINUSE:
        return f"port {config.port} is in use; try --port 0"
    if failure.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {config.host}: {failure.strerror}"
    return str(failure)
