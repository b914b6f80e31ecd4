"""A :data:`~pitrio.host.SessionFactory` for embedders: pi coding-agent sessions built from
parts the embedder holds (models, a provider registry, settings, an agent dir), without the
command line::

    factory = CodingSessionFactory(cwd=work, model=model, models=models, registry=registry,
                                   agent_dir=agent_dir)
    async with open_host(factory, HostConfig(port=0, session_dir=sessions, roots=(work,))):
        ...

Each session gets the tools its request names (:attr:`SessionRequest.tools`; the host token's
sessions: :attr:`CodingSessionFactory.tools`), confined for a client token
(:mod:`~pitrio.host.ws._policy`), the system prompt pi builds for them from the cwd's and the
agent dir's resources (``AGENTS.md``, skills, prompt templates), and optionally its own
extension runner. ``pitrio serve`` builds its sessions as ``pitrio --mode rpc`` does (models
from ``models.json`` and ``auth.json``, settings files, ``-e``), and uses :func:`build_tools`
from here for the tools of confined sessions.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs

from pitrio._exceptions import UsageError
from pitrio.extensions import (
    ExtensionRunner,
    HeadlessUI,
    load_extensions,
    open_extension_session,
)
from pitrio.host.rpc._commands import RpcServices
from pitrio.host.ws._host import OpenedSession, SessionRequest
from pitrio.host.ws._policy import Confinement, confine_tools
from pitrio.providers import Model, ModelThinkingLevel, ProviderRegistry
from pitrio.sessions import (
    AgentSession,
    ExtensionErrorEvent,
    SessionManager,
    SettingsManager,
    open_agent_session,
    run_file_work,
)
from pitrio.sessions.resources import Resources, load_resources
from pitrio.tools import AgentTool
from pitrio.tools.builtin import (
    BashOperations,
    LocalBashOperations,
    create_bash_tool,
    create_read_tool,
    create_tool,
)

__all__ = ["CODING_TOOLS", "CodingSessionFactory", "build_tools"]

CODING_TOOLS: Final = ("read", "bash", "edit", "write")
"""pi's default tools: what the host token's sessions get unless told otherwise."""


def build_tools(
    names: Sequence[str],
    cwd: str,
    *,
    confinement: Confinement | None = None,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    auto_resize_images: bool = True,
    bash_operations: BashOperations | None = None,
) -> tuple[tuple[AgentTool, ...], BashOperations | None]:
    """The built-in tools ``names`` for ``cwd``, and how the session's user ``bash``
    commands run.

    With a ``confinement`` (a client token's session) the file tools are wrapped in
    :class:`~pitrio.host.ConfinedTool` checks and bash (tool and user commands) runs under
    ``confinement.sandbox`` (``bash_operations`` is not used); otherwise bash runs with
    ``bash_operations`` (default: the local shell) and user commands are the session's
    default (``None``).

    Raises:
        ValueError: a name that is not a built-in tool.
    """
    operations = bash_operations
    if confinement is not None:
        operations = LocalBashOperations(shell_path, wrapper=confinement.sandbox)
    tools: list[AgentTool] = []
    for name in names:
        if name == "bash":
            tools.append(
                create_bash_tool(
                    cwd, operations=operations, shell_path=shell_path, command_prefix=command_prefix
                )
            )
        elif name == "read":
            tools.append(create_read_tool(cwd, auto_resize_images=auto_resize_images))
        else:
            tools.append(create_tool(name, cwd))
    if confinement is None:
        return tuple(tools), None
    return confine_tools(tools, confinement, cwd), operations


def _find_model(name: str, models: Sequence[Model]) -> Model:
    provider, _, model_id = name.rpartition("/")
    for model in models:
        if model.id == model_id and (not provider or model.provider == provider):
            return model
    raise UsageError(f'Unknown model "{name}": not one of the host\'s models')


@attrs.frozen(kw_only=True)
class CodingSessionFactory:
    """Opens pi coding-agent sessions for a :class:`~pitrio.host.Host` (a
    :data:`~pitrio.host.SessionFactory`).

    Attributes:
        cwd: the folder of sessions created without a ``cwd``.
        agent_dir: the global agent dir: its ``AGENTS.md``, ``skills/``, ``prompts/`` (and
            ``extensions/`` with ``discover_extensions``) join every session's; a client
            token's file tools may not name it.
        model: the model of new sessions.
        models: the models a ``create_session`` ``model`` (``provider/id``) may name and
            ``set_model`` may pick (default: ``model`` alone).
        registry: the providers that stream them (``None``: the session's default).
        has_auth: whether a model has a key (``get_available_models``).
        thinking_level: the thinking level of new sessions.
        settings: each session's settings for its cwd (default: pi's defaults, in memory);
            ``shellPath`` and ``shellCommandPrefix`` apply to bash.
        tools: the host token's sessions' tools (a client token's come in the request).
        bash_operations: how the host token's bash runs (default: the local shell).
        sandbox_command: the argv a client token's bash runs under when the request's
            confinement names none.
        extensions: extension files loaded into every session (each gets its own runner,
            ``ctx.ui`` headless); ``discover_extensions`` adds the cwd's, the agent dir's
            and installed ones.
        export_html: writes a session as HTML for ``export_html`` (``None``: refused).
    """

    cwd: str
    agent_dir: str
    model: Model
    models: Sequence[Model] = ()
    registry: ProviderRegistry | None = None
    has_auth: Callable[[Model], Any] | None = None
    thinking_level: ModelThinkingLevel | None = None
    settings: Callable[[str], SettingsManager] | None = None
    tools: tuple[str, ...] = CODING_TOOLS
    bash_operations: BashOperations | None = None
    sandbox_command: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    discover_extensions: bool = False
    export_html: Callable[[AgentSession, str | None], Awaitable[str]] | None = None

    @asynccontextmanager
    async def __call__(self, request: SessionRequest) -> AsyncIterator[OpenedSession]:
        """Open the session ``request`` describes (see :data:`~pitrio.host.SessionFactory`).

        Raises:
            UsageError: an unknown model, a missing cwd.
            OSError: the session file cannot be read or written.
        """
        models = tuple(self.models) or (self.model,)
        model = _find_model(request.model, models) if request.model else self.model
        manager = await run_file_work(self._session_manager, request)
        try:
            cwd = manager.get_cwd()
            settings = self.settings(cwd) if self.settings is not None else None
            settings = settings or SettingsManager.in_memory()
            confinement = request.confinement
            if confinement is not None:
                confinement = attrs.evolve(
                    confinement,
                    hidden=(*confinement.hidden, self.agent_dir),
                    sandbox=confinement.sandbox or self.sandbox_command,
                )
            names = request.tools if request.tools is not None else self.tools
            tools, user_bash = build_tools(
                names,
                cwd,
                confinement=confinement,
                shell_path=_string(settings, "shellPath"),
                command_prefix=_string(settings, "shellCommandPrefix"),
                bash_operations=self.bash_operations,
            )
            load = functools.partial(
                load_resources,
                cwd,
                self.agent_dir,
                global_settings=settings.global_settings,
                project_settings=settings.project_settings,
            )
            resources: Resources = await run_file_work(load)
        except BaseException:
            manager.close()
            raise
        options: dict[str, Any] = {
            "session_manager": manager,
            "settings": settings,
            "model": model,
            "thinking_level": request.thinking_level or self.thinking_level,
            "system_prompt": resources.build_system_prompt(list(names)),
            "tools": tools,
            "models": models,
            "registry": self.registry,
            "has_auth": self.has_auth,
            "skills": resources.skills,
            "prompt_templates": resources.prompts,
        }
        services = RpcServices(export_html=self.export_html)
        if not self.extensions and not self.discover_extensions:
            async with open_agent_session(**options) as session:
                yield OpenedSession(session, services, bash_operations=user_bash)
            return
        runner = ExtensionRunner(cwd=cwd, ui=HeadlessUI())
        await load_extensions(
            runner,
            agent_dir=self.agent_dir,
            explicit=tuple(os.path.join(self.cwd, path) for path in self.extensions),
            no_extensions=not self.discover_extensions,
            entry_points=self.discover_extensions,
        )
        errors = tuple(
            ExtensionErrorEvent(extension_path=error.path, event="load", error=error.error)
            for error in runner.load_errors
        )
        async with open_extension_session(runner, **options) as session:
            yield OpenedSession(session, services, errors, user_bash)

    def _session_manager(self, request: SessionRequest) -> SessionManager:
        # Blocking (reads or creates the file): called in a worker thread.
        if request.session_file is not None:
            return SessionManager.open(request.session_file, request.session_dir)
        cwd = request.cwd or self.cwd
        if not os.path.isdir(cwd):
            raise UsageError(f"No such directory: {cwd}")
        if request.ephemeral:
            return SessionManager.in_memory(cwd)
        manager = SessionManager.create(cwd, request.session_dir)
        # On disk from create_session on, as pitrio serve's sessions (docs/host-protocol.md).
        manager.write_at_once()
        return manager


def _string(settings: SettingsManager, key: str) -> str | None:
    value = settings.settings.get(key)
    return value if isinstance(value, str) and value else None
