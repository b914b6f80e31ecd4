"""``pitrio --mode rpc``: pi's RPC protocol on stdin/stdout (:mod:`pitrio.host`).

The session is built as in print mode (resources, system prompt, tools, the skills and
templates its ``prompt`` expands); then
:class:`~pitrio.host.RpcServer` serves it on stdin and stdout until stdin ends, or until
``SIGTERM`` / ``SIGHUP`` (exit status 143 / 129, as pi's), after which the session is closed and
what it appended is written. Only protocol records go to stdout; warnings and logs go to stderr.
"""

from __future__ import annotations

import functools
import os
import signal
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TextIO

import attrs
import trio

from pitrio.cli._coding import load_session_resources, prompt_resources, resource_warnings
from pitrio.cli._extensions import discover_resources, open_cli_session
from pitrio.cli._setup import Runtime
from pitrio.codec import dumps
from pitrio.extensions import UiBridge
from pitrio.host import RpcServer, RpcServices
from pitrio.providers import AssistantMessage, open_http_client
from pitrio.sessions import AgentSession, run_file_work
from pitrio.sessions.resources import Resources

if TYPE_CHECKING:
    from pitrio.cli._setup import CliArgs

SIGNAL_EXIT: Final = {signal.SIGTERM: 143, signal.SIGHUP: 129}
"""Exit status per signal that ends RPC mode (128 + the signal's number, as pi exits)."""


def list_commands(resources: Resources, cwd: str) -> list[dict[str, Any]]:
    """``get_commands``: prompt templates, then skills (``skill:<name>``), in pi's shape."""

    def source_info(path: str, scope: str, base_dir: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "path": path,
            "source": "local",
            "scope": scope,
            "origin": "top-level",
        }
        if base_dir is not None:
            info["baseDir"] = base_dir
        return info

    def scope_of(path: str) -> str:
        inside = os.path.abspath(path).startswith(os.path.abspath(cwd) + os.sep)
        return "project" if inside else "user"

    commands: list[dict[str, Any]] = []
    for template in resources.prompts:
        commands.append(
            {
                "name": template.name,
                "description": template.description,
                "source": "prompt",
                "sourceInfo": source_info(template.file_path, scope_of(template.file_path)),
            }
        )
    for skill in resources.skills:
        scope = {"user": "user", "project": "project"}.get(skill.source, "temporary")
        commands.append(
            {
                "name": f"skill:{skill.name}",
                "description": skill.description,
                "source": "skill",
                "sourceInfo": source_info(skill.file_path, scope, skill.base_dir),
            }
        )
    return commands


async def _export_html(session: AgentSession, output_path: str | None) -> str:
    from pitrio.cli._export_html import export_session_file

    source = session.session_file
    # pi's messages (core/export-html exportSessionToHtml). pi writes the file with the first
    # answer and has nothing to export before it; pitrio's host and RPC sessions are on disk
    # from the start, so what counts is whether an answer is there.
    if source is None:
        raise ValueError("Cannot export in-memory session to HTML")
    answered = any(
        isinstance(getattr(entry, "message", None), AssistantMessage)
        for entry in session.session_manager.get_entries()
    )
    if not answered or not await run_file_work(functools.partial(os.path.exists, source)):
        raise ValueError("Nothing to export yet - start a conversation first")
    cwd = session.session_manager.get_cwd()
    return await run_file_work(functools.partial(export_session_file, source, output_path, cwd=cwd))


async def run_rpc_mode(runtime: Runtime, *, err: TextIO) -> int:
    """Serve ``runtime``'s session over stdin/stdout; returns the exit status.

    Resource handling:
        Opens the shared HTTP client and the session for the duration of the call, and
        duplicates fds 0 and 1 for Trio's non-blocking streams (their blocking mode is
        restored when they close).
    """
    runtime = await discover_resources(runtime)
    resources = await load_session_resources(runtime.resources)
    for warning in resource_warnings(resources):
        err.write(f"Warning: {warning}\n")
    err.flush()
    system_prompt = resources.build_system_prompt(list(runtime.tool_names))
    services = RpcServices(
        list_commands=functools.partial(list_commands, resources, runtime.resources.cwd),
        export_html=_export_html,
    )
    status = 0
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    options = {**runtime.session_options(system_prompt), **prompt_resources(resources)}
    runner = runtime.extensions
    async with (
        stdin,
        stdout,
        open_http_client(),
        open_cli_session(runtime, options) as session,
    ):
        with trio.open_signal_receiver(*SIGNAL_EXIT) as signals:
            async with trio.open_nursery() as nursery:

                async def on_signal() -> None:
                    nonlocal status
                    async for received in signals:
                        status = SIGNAL_EXIT[signal.Signals(received)]
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(on_signal)
                server = RpcServer(session, services)
                ui = runner.ui if runner is not None else None
                if isinstance(ui, UiBridge):
                    _UI_OUTPUT[ui] = server.output
                    nursery.start_soon(ui.run)
                await server.serve(stdin, stdout)
                nursery.cancel_scope.cancel()
    return status


def run_rpc_command(args: CliArgs, *, err: TextIO, env: Mapping[str, str], cwd: str) -> int:
    """``pitrio --mode rpc``: build the runtime from the flags and serve it (no key needed to
    start, as pi; a prompt without one fails with pi's error)."""
    from pitrio.cli._errors import session_failure
    from pitrio.cli._setup import CliError, build_runtime

    def warn(message: str) -> None:
        err.write(f"Warning: {message}\n")

    from pitrio.cli._extensions import load_cli_extensions

    # ctx.ui speaks pi's extension-UI records once the server is up (see run_rpc_mode).
    bridge = UiBridge(_forward_ui)
    try:
        runner, args = load_cli_extensions(args, cwd=cwd, env=env, err=err, ui=bridge)
        runtime = build_runtime(
            args, cwd=cwd, env=env, warn=warn, require_auth=False, notice=warn_plain(err)
        )
    except CliError as exc:
        err.write(f"{exc}\n")
        return exc.exit_code
    runtime = attrs.evolve(runtime, extensions=runner)
    try:
        # The session is on disk from the start, and a prompt before its answer (pi's file,
        # and the CLI's, wait for the first answer): a crash mid-answer loses nothing sent.
        runtime.session_manager.write_at_once()
        return trio.run(functools.partial(run_rpc_mode, runtime, err=err))
    except BaseException as exc:
        failure = session_failure(exc)
        if failure is None:
            raise
        err.write(f"Error: {' '.join(str(failure).split())}\n")
        return 1


_UI_OUTPUT: weakref.WeakKeyDictionary[UiBridge, Callable[[bytes], Awaitable[None]]] = (
    weakref.WeakKeyDictionary()
)
"""Each UiBridge's RPC writer (the server exists only once the session is open)."""


async def _forward_ui(record: dict[str, Any]) -> None:
    for output in list(_UI_OUTPUT.values()):
        await output(dumps(record))


def warn_plain(err: TextIO) -> Callable[[str], None]:
    """Notices as plain lines on stderr."""

    def notice(message: str) -> None:
        err.write(f"{message}\n")

    return notice
