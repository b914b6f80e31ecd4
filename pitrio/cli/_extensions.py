"""The command's extensions: load them, read their flags, and let them choose the session dir
and add resources (seeds 003/004).

Order at start-up: load (project, global, entry points, ``-e``; ``--no-extensions`` keeps only
``-e``) -> the extensions' ``--flags`` -> ``session_directory`` (unless ``--session-dir``) ->
the runtime is built -> ``resources_discover`` adds skill and prompt paths -> the session opens
with the runner as its hooks (``session_start``).

Error handling:
    An extension that fails to load is reported on stderr (``Failed to load extension PATH:
    ERROR``) and skipped; a handler error during the session is reported on stderr in print
    and json modes (pi's ``Extension error (PATH): ERROR``) and as an ``extension_error``
    event.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TextIO

import attrs
import structlog
import trio

from pitrio.cli._coding import load_session_resources, resource_warnings
from pitrio.cli._errors import CliError
from pitrio.cli._setup import CliArgs, Runtime
from pitrio.extensions import (
    ExtensionRunner,
    ExtensionUI,
    HeadlessUI,
    load_extensions,
    open_extension_session,
)
from pitrio.sessions import AgentSession, ExtensionErrorEvent, open_agent_session
from pitrio.sessions.resources import resolve_agent_dirs

__all__ = ["discover_resources", "load_cli_extensions", "open_cli_session"]

log = structlog.get_logger(__name__)


def load_cli_extensions(
    args: CliArgs,
    *,
    cwd: str,
    env: Mapping[str, str],
    err: TextIO,
    ui: ExtensionUI | None = None,
) -> tuple[ExtensionRunner, CliArgs]:
    """Load the extensions the flags select; returns the runner and the args with the session
    dir an extension chose.

    Raises:
        CliError: an option no extension registered (exit status 2, as a usage error).
    """
    dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
    runner = ExtensionRunner(cwd=cwd, ui=ui if ui is not None else HeadlessUI(err))

    messages = args.messages

    async def load() -> str | None:
        nonlocal messages
        await load_extensions(
            runner,
            agent_dir=dirs.write_dir,
            explicit=args.extensions,
            no_extensions=args.no_extensions,
        )
        for error in runner.load_errors:
            err.write(f"Failed to load extension {error.path}: {error.error}\n")
        messages = _parse_flags(runner, args)
        if args.session_dir is not None:
            return None
        return await runner.session_directory(cwd)

    session_dir = trio.run(load)
    args = attrs.evolve(args, messages=messages)

    def report(error: ExtensionErrorEvent) -> None:
        err.write(f"Extension error ({error.extension_path}): {error.error}\n")

    runner.on_error(report)
    if session_dir is not None:
        args = attrs.evolve(args, session_dir=session_dir)
    return runner, args


def _parse_flags(runner: ExtensionRunner, args: CliArgs) -> tuple[str, ...]:
    """Set the extensions' flag values from ``args``; returns the messages without the words
    string flags took as their values (``--name value``)."""
    flags = runner.flags()
    following = dict(args.extension_flag_values)
    taken: set[int] = set()
    for index, arg in enumerate(args.extension_flags):
        name, has_value, value = arg[2:].partition("=")
        flag = flags.get(name)
        if flag is None:
            raise CliError(f"pitrio: error: unrecognized arguments: {arg}", exit_code=2)
        if flag.type == "boolean":
            runner.flag_values[name] = (
                value.lower() not in ("false", "0", "no") if has_value else True
            )
        elif has_value:
            runner.flag_values[name] = value
        elif index in following:
            runner.flag_values[name] = args.messages[following[index]]
            taken.add(following[index])
        else:
            raise CliError(f"pitrio: error: --{name} needs a value (--{name} VALUE)", exit_code=2)
    return tuple(m for i, m in enumerate(args.messages) if i not in taken)


async def discover_resources(runtime: Runtime) -> Runtime:
    """Run ``resources_discover`` and add the skill and prompt paths it returned."""
    runner = runtime.extensions
    if runner is None:
        return runtime
    found = await runner.resources_discover(runtime.resources.cwd, "startup")
    if not found.skill_paths and not found.prompt_paths:
        return runtime
    resources = attrs.evolve(
        runtime.resources,
        skill_paths=(*runtime.resources.skill_paths, *found.skill_paths),
        prompt_template_paths=(*runtime.resources.prompt_template_paths, *found.prompt_paths),
    )
    return attrs.evolve(runtime, resources=resources, base_resources=runtime.resources)


def open_cli_session(
    runtime: Runtime, options: dict[str, Any]
) -> AbstractAsyncContextManager[AgentSession]:
    """Open the session ``options`` describe (``Runtime.session_options`` and the prompt
    resources), with the runtime's extensions when it has them.

    With extensions, the built-in tools the session starts without are available to
    ``pi.set_active_tools`` (``Runtime.available_tools``), and ``ctx.reload()`` loads the
    resources of :attr:`Runtime.base_resources` again (plus the paths ``resources_discover``
    returns on reload), rebuilds the system prompt for the active tools and hands both to the
    session (:meth:`~pitrio.sessions.AgentSession.set_resources`).
    """
    runner = runtime.extensions
    if runner is None:
        return open_agent_session(**options)

    # The runner keeps this function: it refers to neither the runner (weakly) nor the runtime
    # (which holds the runner), else every closed session's runner would be a cycle left to
    # the cycle collector.
    runner_ref = weakref.ref(runner)
    base = runtime.base_resources or runtime.resources

    async def reload_resources(skill_paths: Sequence[str], prompt_paths: Sequence[str]) -> None:
        request = attrs.evolve(
            base,
            skill_paths=(*base.skill_paths, *skill_paths),
            prompt_template_paths=(*base.prompt_template_paths, *prompt_paths),
        )
        resources = await load_session_resources(request)
        for warning in resource_warnings(resources):
            log.warning("reload_resource_warning", warning=warning)
        owner = runner_ref()
        if owner is None:
            return  # the runner (and its session) is gone: nothing to reload
        session = owner.require_session()
        active = [tool.name for tool in session.agent.tools]
        await session.set_resources(
            system_prompt=resources.build_system_prompt(active),
            skills=resources.skills,
            prompt_templates=resources.prompts,
        )

    runner.set_resource_reloader(reload_resources)
    return open_extension_session(runner, available_tools=runtime.available_tools, **options)
