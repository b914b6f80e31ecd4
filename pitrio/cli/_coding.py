"""What makes the command a coding agent: its tools, the settings that shape them, the
resources the system prompt is built from, and the expansion of what the user types.

* **Tools** (pi 0.73.1's ``buildSessionOptions`` / ``createAgentSession``): read, bash, edit
  and write unless ``--tools`` names others; ``--no-tools`` and ``--no-builtin-tools`` start
  with no built-in active. ``--tools`` wins over
  both, in the order given. The other built-ins (grep, find, ls by default) are built too and
  handed to the extensions as available tools (:func:`available_tool_names`), so that
  ``pi.set_active_tools`` can turn them on, as pi's tool registry allows. Tools work in the
  session's cwd; ``shellCommandPrefix`` and ``shellPath`` shape bash, ``images.autoResize``
  the read tool.
* **Resources**: :func:`~pitrio.sessions.resources.load_resources` from the resource dir
  (:func:`resource_dir`), run in a worker thread.
* **Prompts**: the loaded skills and prompt templates go to the session
  (:func:`prompt_resources`), whose ``prompt`` expands ``/skill:name args`` then
  ``/template args`` after the ``input`` hook, as pi's ``AgentSession.prompt`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from pitrio.sessions import FileSettingsStorage, SettingsManager, run_file_work
from pitrio.sessions.resources import (
    AgentDirs,
    Resources,
    load_resources,
)
from pitrio.sessions.settings._settings import SettingsScope
from pitrio.tools import AgentTool
from pitrio.tools.builtin import (
    BashOperations,
    builtin_tool_names,
    create_bash_tool,
    create_read_tool,
    create_tool,
)

DEFAULT_TOOL_NAMES: Final = ("read", "bash", "edit", "write")
"""pi's default active tools."""
SETTINGS_FILE: Final = "settings.json"


# --------------------------------------------------------------------------- settings


class AgentDirSettingsStorage(FileSettingsStorage):
    """The settings files, with the global one read from pi's agent dir while pitrio's has
    none; writes always go to pitrio's (so pitrio never writes into pi's directory)."""

    def __init__(self, cwd: str, dirs: AgentDirs) -> None:
        super().__init__(cwd, dirs.write_dir)
        self._dirs = dirs

    def global_read_path(self) -> str:
        """Where the global settings are read from now."""
        return self._dirs.config_file(SETTINGS_FILE)

    def read(self, scope: SettingsScope) -> str | None:
        if scope != "global":
            return super().read(scope)
        try:
            return Path(self.global_read_path()).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def describe(self, scope: SettingsScope) -> str:
        return self.global_read_path() if scope == "global" else super().describe(scope)


def setting_value(
    settings: SettingsManager,
    key: str,
    kind: type[str] | type[bool] | type[list[Any]],
    warn: Callable[[str], None],
) -> Any:
    """A setting this module reads, ``None`` when unset or (with a warning) of the wrong type.

    Args:
        key: a top-level key, or ``section.key``.
    """
    section, _, name = key.rpartition(".")
    document: Any = settings.get(section) if section else settings.settings
    value = document.get(name) if isinstance(document, dict) else None
    if value is None:
        return None
    wrong = not isinstance(value, kind) or (
        isinstance(value, list) and not all(isinstance(v, str) for v in value)
    )
    if wrong:
        expected = {str: "a string", bool: "a boolean", list: "a list of strings"}[kind]
        warn(f"Invalid setting {key}: expected {expected}; using the default")
        return None
    return value


# --------------------------------------------------------------------------- tools


def select_tool_names(
    tools: Sequence[str] | None,
    *,
    no_tools: bool = False,
    no_builtin_tools: bool = False,
    warn: Callable[[str], None] = lambda message: None,
) -> list[str]:
    """The tools a session starts with (see the module docstring).

    Names that are not built-in tools are dropped with a warning (pi drops them silently; here
    a typo would otherwise leave the model without the tool and the user without a clue).
    """
    if tools is None:
        return [] if no_tools or no_builtin_tools else list(DEFAULT_TOOL_NAMES)
    known = builtin_tool_names()
    names: list[str] = []
    for name in tools:
        if name not in known:
            warn(f"Unknown tool {name!r} ignored (built-in tools: {', '.join(known)})")
        elif name not in names:
            names.append(name)
    return names


def available_tool_names(
    tools: Sequence[str] | None, active: Sequence[str], *, no_tools: bool = False
) -> list[str]:
    """The built-in tools a session starts without but extensions may activate
    (``pi.set_active_tools``), in the built-ins' order.

    As pi 0.73.1's tool allow-list: with ``--tools`` only the named tools exist, with
    ``--no-tools`` none; otherwise (``--no-builtin-tools`` too) every built-in does.
    """
    if tools is not None or no_tools:
        return []
    return [name for name in builtin_tool_names() if name not in active]


def create_session_tools(
    names: Sequence[str],
    cwd: str,
    *,
    command_prefix: str | None = None,
    shell_path: str | None = None,
    auto_resize_images: bool = True,
    bash_operations: BashOperations | None = None,
) -> list[AgentTool]:
    """The built-in tools ``names`` for ``cwd``, in that order.

    Args:
        command_prefix: pi's ``shellCommandPrefix``: a line run before every bash command.
        shell_path: pi's ``shellPath``: the shell bash runs.
        auto_resize_images: pi's ``images.autoResize`` for the read tool.
        bash_operations: how bash runs commands (the seam a host replaces to confine them).
    """
    tools: list[AgentTool] = []
    for name in names:
        if name == "bash":
            tools.append(
                create_bash_tool(
                    cwd,
                    operations=bash_operations,
                    shell_path=shell_path,
                    command_prefix=command_prefix,
                )
            )
        elif name == "read":
            tools.append(create_read_tool(cwd, auto_resize_images=auto_resize_images))
        else:
            tools.append(create_tool(name, cwd))
    return tools


# --------------------------------------------------------------------------- resources

RESOURCE_NAMES: Final = (
    "AGENTS.md",
    "CLAUDE.md",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
    "skills",
    "prompts",
)
"""What an agent dir may hold for the system prompt."""


def resource_dir(dirs: AgentDirs) -> str:
    """The agent dir the context files, skills and templates come from: pitrio's when it holds
    any of :data:`RESOURCE_NAMES`, else pi's (when there is one), else pitrio's.

    Deciding by contents rather than by whether pitrio's dir exists keeps a pi user's
    resources after the first saved session has created ``~/.pitrio/agent``.
    """
    if any(os.path.exists(os.path.join(dirs.write_dir, name)) for name in RESOURCE_NAMES):
        return dirs.write_dir
    return next((d for d in dirs.fallback_dirs if os.path.isdir(d)), dirs.write_dir)


@attrs.frozen(kw_only=True)
class ResourceRequest:
    """What :func:`load_session_resources` loads: the flags and settings that select resources."""

    cwd: str
    resource_dir: str
    global_settings: Mapping[str, Any] = attrs.field(factory=dict)
    project_settings: Mapping[str, Any] = attrs.field(factory=dict)
    skill_paths: tuple[str, ...] = ()
    prompt_template_paths: tuple[str, ...] = ()
    no_skills: bool = False
    no_prompt_templates: bool = False
    no_context_files: bool = False
    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] | None = None
    """``None``: discover ``APPEND_SYSTEM.md`` (no ``--append-system-prompt`` was given)."""

    def load(self) -> Resources:
        """Load the resources (blocking file work)."""
        return load_resources(
            self.cwd,
            self.resource_dir,
            global_settings=self.global_settings,
            project_settings=self.project_settings,
            skill_paths=self.skill_paths,
            prompt_template_paths=self.prompt_template_paths,
            no_skills=self.no_skills,
            no_prompt_templates=self.no_prompt_templates,
            no_context_files=self.no_context_files,
            system_prompt=self.system_prompt,
            append_system_prompt=self.append_system_prompt,
        )


async def load_session_resources(request: ResourceRequest) -> Resources:
    """:meth:`ResourceRequest.load` in a worker thread under the shared file limiter."""
    return await run_file_work(request.load)


def resource_warnings(resources: Resources) -> list[str]:
    """One line per problem the loaders reported (collisions name both files)."""
    lines = []
    for diagnostic in (*resources.skill_diagnostics, *resources.prompt_diagnostics):
        where = f" ({diagnostic.path})" if diagnostic.path else ""
        if diagnostic.collision is not None:
            collision = diagnostic.collision
            where = f" ({collision.loser_path}; using {collision.winner_path})"
        lines.append(f"{diagnostic.message}{where}")
    return lines


def prompt_resources(resources: Resources) -> dict[str, Any]:
    """The session options that let ``AgentSession.prompt`` expand ``/skill:name`` and
    ``/template`` commands with ``resources``' skills and prompt templates."""
    return {"skills": resources.skills, "prompt_templates": resources.prompts}


def describe_resources(resources: Resources, tool_names: Sequence[str]) -> list[str]:
    """The ``--verbose`` lines: tools, context files, skills, templates, prompt files."""
    lines = [f"Tools: {', '.join(tool_names) or '(none)'}"]
    lines += [f"Context file: {f.path}" for f in resources.context_files]
    lines += [f"Skill: {s.name} ({s.file_path})" for s in resources.skills]
    lines += [f"Prompt template: /{p.name} ({p.file_path})" for p in resources.prompts]
    if resources.system_prompt is not None:
        lines.append("System prompt: replaced (SYSTEM.md or --system-prompt)")
    if resources.append_system_prompt:
        lines.append(f"System prompt: {len(resources.append_system_prompt)} appended part(s)")
    return lines
