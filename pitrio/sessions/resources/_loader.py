"""Everything the system prompt is built from, found as pi 0.73.1's ``DefaultResourceLoader`` does.

Where resources come from, in precedence order (the first skill or template of a name wins):

1. paths in the project's settings (``<cwd>/<config>/settings.json``, ``skills`` / ``prompts``);
2. the project: ``<cwd>/<config>/skills/`` (root ``.md`` files and ``SKILL.md`` folders), then
   ``.agents/skills/`` in ``cwd`` and each parent up to the git root (or the filesystem root
   outside a repo; only ``SKILL.md`` folders); ``<cwd>/<config>/prompts/*.md``;
3. paths in the global settings (``<agent dir>/settings.json``);
4. the user: ``<agent dir>/skills/``, ``~/.agents/skills/``, ``<agent dir>/prompts/*.md``;
5. ``--skill`` / ``--prompt-template`` paths (these also load with ``--no-skills`` /
   ``--no-prompt-templates``).

Settings entries are plain paths (relative to the config folder holding the settings file,
``~`` expanded); pi's ``!``/``+``/``-``/glob filter patterns there are not supported yet and
are skipped. The loading is blocking file work: call :func:`load_resources` in a worker thread
(``pitrio.sessions.storage._files.run_file_work``) from async code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pitrio.sessions.resources._context_files import (
    APPEND_SYSTEM_PROMPT_FILE,
    SYSTEM_PROMPT_FILE,
    ContextFile,
    discover_prompt_file,
    load_project_context_files,
    resolve_prompt_input,
)
from pitrio.sessions.resources._diagnostics import ResourceDiagnostic
from pitrio.sessions.resources._ignore import IgnoreRules, list_dir, relative_posix
from pitrio.sessions.resources._prompt_templates import (
    PromptTemplate,
    collect_prompt_entries,
    dedupe_prompts,
    load_prompt_templates,
)
from pitrio.sessions.resources._skills import (
    Skill,
    collect_skill_entries,
    expand_home,
    load_skills,
)
from pitrio.sessions.resources._system_prompt import build_system_prompt, tool_prompt_parts

DEFAULT_CONFIG_DIR_NAME: Final = ".pitrio"
"""The project config folder (pi: ``.pi``)."""

_PROJECT_SETTINGS, _PROJECT_AUTO, _USER_SETTINGS, _USER_AUTO = range(4)


@attrs.frozen(kw_only=True)
class Resources:
    """What :func:`load_resources` found (pi's resource loader state after ``reload()``)."""

    cwd: str
    agent_dir: str
    skills: tuple[Skill, ...] = ()
    skill_diagnostics: tuple[ResourceDiagnostic, ...] = ()
    prompts: tuple[PromptTemplate, ...] = ()
    prompt_diagnostics: tuple[ResourceDiagnostic, ...] = ()
    context_files: tuple[ContextFile, ...] = ()
    system_prompt: str | None = None
    """A ``SYSTEM.md`` (or ``--system-prompt``) text replacing the default prompt."""
    append_system_prompt: tuple[str, ...] = ()
    """``APPEND_SYSTEM.md`` (or ``--append-system-prompt``) texts, joined by a blank line."""

    def build_system_prompt(
        self,
        tool_names: Sequence[str] | None = None,
        *,
        tool_snippets: Mapping[str, str] | None = None,
        prompt_guidelines: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> str:
        """The system prompt for these resources and the active ``tool_names``.

        Snippets and guidelines default to the built-in tools' (as pi's session collects them
        from the active tools); ``kwargs`` go to :func:`build_system_prompt` (``today``,
        ``docs``).
        """
        names = list(tool_names) if tool_names is not None else None
        if tool_snippets is None or prompt_guidelines is None:
            default_snippets, default_guidelines = tool_prompt_parts(
                names if names is not None else ["read", "bash", "edit", "write"]
            )
            tool_snippets = default_snippets if tool_snippets is None else tool_snippets
            if prompt_guidelines is None:
                prompt_guidelines = default_guidelines
        return build_system_prompt(
            cwd=self.cwd,
            selected_tools=names,
            tool_snippets=tool_snippets,
            prompt_guidelines=prompt_guidelines,
            custom_prompt=self.system_prompt,
            append_system_prompt="\n\n".join(self.append_system_prompt) or None,
            context_files=self.context_files,
            skills=self.skills,
            **kwargs,
        )


def _settings_list(settings: Mapping[str, Any] | None, key: str) -> list[str]:
    value = (settings or {}).get(key)
    if not isinstance(value, list):
        return []
    # Filter patterns (!x, +x, -x, globs) are pi package-manager features not ported yet.
    return [
        v
        for v in value
        if isinstance(v, str)
        and not v.startswith(("!", "+", "-"))
        and "*" not in v
        and "?" not in v
    ]


def _resolve_from_base(entry: str, base: str) -> str:
    return os.path.abspath(os.path.join(base, expand_home(entry)))


def _collect_markdown(directory: str) -> list[str]:
    # pi's collectFiles for prompts given as a folder in settings: recursive, ignore-aware.
    found: list[str] = []
    rules = IgnoreRules()

    def walk(folder: str) -> None:
        rules.add_dir(folder, directory)
        for entry in list_dir(folder):
            if entry.name.startswith(".") or entry.name == "node_modules":
                continue
            relative = relative_posix(entry.path, directory)
            if rules.ignores(f"{relative}/" if entry.is_dir else relative):
                continue
            if entry.is_dir:
                walk(entry.path)
            elif entry.is_file and entry.name.endswith(".md"):
                found.append(entry.path)

    if os.path.exists(directory):
        walk(directory)
    return found


def _settings_files(entries: list[str], base: str, kind: str) -> list[str]:
    files: list[str] = []
    for entry in entries:
        path = _resolve_from_base(entry, base)
        if os.path.isfile(path):
            files.append(path)
        elif os.path.isdir(path):
            files.extend(
                collect_skill_entries(path, "pi") if kind == "skills" else _collect_markdown(path)
            )
    return files


def _git_root(start: str) -> str | None:
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _ancestor_agents_skill_dirs(cwd: str) -> list[str]:
    start = os.path.abspath(cwd)
    root = _git_root(start)
    dirs = []
    current = start
    while True:
        dirs.append(os.path.join(current, ".agents", "skills"))
        if root is not None and current == root:
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return dirs


def _ranked(candidates: list[tuple[int, str]]) -> list[str]:
    # pi: first entry per path keeps its rank, a stable sort by rank, then one per real path.
    first: dict[str, int] = {}
    for rank, path in candidates:
        first.setdefault(path, rank)
    ordered = sorted(first.items(), key=lambda item: item[1])
    seen: set[str] = set()
    result = []
    for path, _rank in ordered:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            result.append(path)
    return result


def _merge_paths(primary: list[str], additional: Sequence[str], cwd: str) -> list[str]:
    merged: list[str] = []
    seen: set[str] = set()
    for path in [*primary, *additional]:
        resolved = _resolve_from_base(path, cwd)
        real = os.path.realpath(resolved)
        if real not in seen:
            seen.add(real)
            merged.append(resolved)
    return merged


def discover_skill_paths(
    *,
    cwd: str,
    agent_dir: str,
    config_dir_name: str = DEFAULT_CONFIG_DIR_NAME,
    global_settings: Mapping[str, Any] | None = None,
    project_settings: Mapping[str, Any] | None = None,
    home: str | None = None,
) -> list[str]:
    """The skill files of the default locations and the settings, in precedence order."""
    project_base = os.path.join(cwd, config_dir_name)
    user_agents = os.path.join(home or os.path.expanduser("~"), ".agents", "skills")
    candidates: list[tuple[int, str]] = []
    candidates += [
        (_PROJECT_SETTINGS, p)
        for p in _settings_files(_settings_list(project_settings, "skills"), project_base, "skills")
    ]
    candidates += [
        (_USER_SETTINGS, p)
        for p in _settings_files(_settings_list(global_settings, "skills"), agent_dir, "skills")
    ]
    project_auto = collect_skill_entries(os.path.join(project_base, "skills"), "pi")
    for directory in _ancestor_agents_skill_dirs(cwd):
        if os.path.abspath(directory) != os.path.abspath(user_agents):
            project_auto += collect_skill_entries(directory, "agents")
    candidates += [(_PROJECT_AUTO, p) for p in project_auto]
    user_auto = collect_skill_entries(os.path.join(agent_dir, "skills"), "pi")
    user_auto += collect_skill_entries(user_agents, "agents")
    candidates += [(_USER_AUTO, p) for p in user_auto]
    return _ranked(candidates)


def discover_prompt_paths(
    *,
    cwd: str,
    agent_dir: str,
    config_dir_name: str = DEFAULT_CONFIG_DIR_NAME,
    global_settings: Mapping[str, Any] | None = None,
    project_settings: Mapping[str, Any] | None = None,
) -> list[str]:
    """The template files of the default locations and the settings, in precedence order."""
    project_base = os.path.join(cwd, config_dir_name)
    candidates: list[tuple[int, str]] = []
    candidates += [
        (_PROJECT_SETTINGS, p)
        for p in _settings_files(_settings_list(project_settings, "prompts"), project_base, "p")
    ]
    candidates += [
        (_USER_SETTINGS, p)
        for p in _settings_files(_settings_list(global_settings, "prompts"), agent_dir, "p")
    ]
    candidates += [
        (_PROJECT_AUTO, p) for p in collect_prompt_entries(os.path.join(project_base, "prompts"))
    ]
    candidates += [
        (_USER_AUTO, p) for p in collect_prompt_entries(os.path.join(agent_dir, "prompts"))
    ]
    return _ranked(candidates)


def _missing(
    paths: Sequence[str], cwd: str, diagnostics: list[ResourceDiagnostic], what: str
) -> None:
    for raw in paths:
        if os.path.exists(_resolve_from_base(raw, cwd)):
            continue
        if any(d.path == raw for d in diagnostics):
            continue
        diagnostics.append(
            ResourceDiagnostic(type="error", message=f"{what} path does not exist", path=raw)
        )


def load_resources(
    cwd: str,
    agent_dir: str,
    *,
    config_dir_name: str = DEFAULT_CONFIG_DIR_NAME,
    global_settings: Mapping[str, Any] | None = None,
    project_settings: Mapping[str, Any] | None = None,
    skill_paths: Sequence[str] = (),
    prompt_template_paths: Sequence[str] = (),
    no_skills: bool = False,
    no_prompt_templates: bool = False,
    no_context_files: bool = False,
    system_prompt: str | None = None,
    append_system_prompt: Sequence[str] | None = None,
    home: str | None = None,
) -> Resources:
    """Find and load the skills, templates, context files and prompt files for ``cwd``.

    Args:
        cwd: the working directory (absolute).
        agent_dir: the global agent dir whose ``skills/``, ``prompts/``, ``AGENTS.md``,
            ``SYSTEM.md`` and ``APPEND_SYSTEM.md`` are used.
        config_dir_name: the project config folder name.
        global_settings / project_settings: the parsed settings files (for ``skills`` and
            ``prompts`` entries).
        skill_paths / prompt_template_paths: ``--skill`` / ``--prompt-template`` paths
            (relative to ``cwd``).
        no_skills / no_prompt_templates / no_context_files: turn discovery off.
        system_prompt: ``--system-prompt`` (a path that exists, or the text); replaces
            ``SYSTEM.md`` discovery.
        append_system_prompt: ``--append-system-prompt`` values; replace ``APPEND_SYSTEM.md``
            discovery.
        home: the home directory for ``~/.agents/skills`` (default: the user's).
    """
    cwd = os.path.abspath(cwd)
    discovered_skills = (
        []
        if no_skills
        else discover_skill_paths(
            cwd=cwd,
            agent_dir=agent_dir,
            config_dir_name=config_dir_name,
            global_settings=global_settings,
            project_settings=project_settings,
            home=home,
        )
    )
    all_skill_paths = _merge_paths(discovered_skills, skill_paths, cwd)
    if no_skills and not all_skill_paths:
        skills: list[Skill] = []
        skill_diagnostics: list[ResourceDiagnostic] = []
    else:
        skills, skill_diagnostics = load_skills(
            all_skill_paths, cwd=cwd, agent_dir=agent_dir, config_dir_name=config_dir_name
        )
    _missing(skill_paths, cwd, skill_diagnostics, "Skill")

    discovered_prompts = (
        []
        if no_prompt_templates
        else discover_prompt_paths(
            cwd=cwd,
            agent_dir=agent_dir,
            config_dir_name=config_dir_name,
            global_settings=global_settings,
            project_settings=project_settings,
        )
    )
    all_prompt_paths = _merge_paths(discovered_prompts, prompt_template_paths, cwd)
    prompts, prompt_diagnostics = dedupe_prompts(load_prompt_templates(all_prompt_paths, cwd=cwd))
    _missing(prompt_template_paths, cwd, prompt_diagnostics, "Prompt template")

    context_files = (
        [] if no_context_files else load_project_context_files(cwd=cwd, agent_dir=agent_dir)
    )

    def discover(name: str) -> str | None:
        return discover_prompt_file(
            name, cwd=cwd, agent_dir=agent_dir, config_dir_name=config_dir_name
        )

    custom = resolve_prompt_input(
        system_prompt if system_prompt is not None else discover(SYSTEM_PROMPT_FILE)
    )
    if append_system_prompt is None:
        found = discover(APPEND_SYSTEM_PROMPT_FILE)
        append_system_prompt = [found] if found else []
    appends = tuple(t for t in map(resolve_prompt_input, append_system_prompt) if t is not None)
    return Resources(
        cwd=cwd,
        agent_dir=agent_dir,
        skills=tuple(skills),
        skill_diagnostics=tuple(skill_diagnostics),
        prompts=tuple(prompts),
        prompt_diagnostics=tuple(prompt_diagnostics),
        context_files=tuple(context_files),
        system_prompt=custom,
        append_system_prompt=appends,
    )
