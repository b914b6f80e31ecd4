"""Skills: ``SKILL.md`` folders listed in the system prompt and expanded by ``/skill:name``.

Ported from pi 0.73.1 ``core/skills.ts`` (loading, the Agent Skills validation and the prompt
format) and the skill half of ``core/package-manager.ts`` (which folders are searched). A skill
is a markdown file with ``name`` and ``description`` in its frontmatter; problems are reported as
:class:`ResourceDiagnostic` warnings and the skill still loads unless its description is missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import attrs
import yaml

from pitrio.sessions.resources._diagnostics import ResourceCollision, ResourceDiagnostic
from pitrio.sessions.resources._frontmatter import parse_frontmatter, strip_frontmatter
from pitrio.sessions.resources._ignore import IgnoreRules, list_dir, relative_posix

MAX_NAME_LENGTH: Final = 64
"""Longest skill name the Agent Skills specification allows."""
MAX_DESCRIPTION_LENGTH: Final = 1024
"""Longest skill description the specification allows."""
SKILL_FILE: Final = "SKILL.md"
SKILL_COMMAND_PREFIX: Final = "/skill:"

SkillSource = Literal["user", "project", "path"]
DiscoveryMode = Literal["pi", "agents"]
"""``pi``: a folder's root ``.md`` files are skills too; ``agents``: only ``SKILL.md`` folders."""

_NAME_CHARS: Final = re.compile(r"^[a-z0-9-]+$")


@attrs.frozen(kw_only=True)
class Skill:
    """A loaded skill (pi's ``Skill``, without the source bookkeeping of packages)."""

    name: str
    description: str
    file_path: str
    base_dir: str
    """The skill's folder: relative paths in the skill resolve against it."""
    source: SkillSource = "path"
    disable_model_invocation: bool = False
    """Hidden from the system prompt; only ``/skill:name`` uses it."""


def validate_name(name: str, parent_dir_name: str) -> list[str]:
    """The Agent Skills name rules pi checks, as warning messages (empty when valid)."""
    errors = []
    if name != parent_dir_name:
        errors.append(f'name "{name}" does not match parent directory "{parent_dir_name}"')
    if len(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not _NAME_CHARS.match(name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def _js_length(text: str) -> int:
    # pi counts UTF-16 code units.
    return len(text.encode("utf-16-le")) // 2


def _js_truthy(value: object) -> bool:
    # Frontmatter values are checked with JavaScript truthiness in pi: [] and {} are true.
    if isinstance(value, list | dict):
        return True
    return bool(value) and value == value  # NaN is false


def validate_description(description: str | None) -> list[str]:
    """The description rules pi checks, as warning messages (empty when valid)."""
    if not description or description.strip() == "":
        return ["description is required"]
    if _js_length(description) > MAX_DESCRIPTION_LENGTH:
        return [
            f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({_js_length(description)})"
        ]
    return []


def load_skill_from_file(
    file_path: str, source: SkillSource = "path"
) -> tuple[Skill | None, list[ResourceDiagnostic]]:
    """Load one skill file; ``None`` when it cannot be read or has no description."""
    diagnostics: list[ResourceDiagnostic] = []

    def warn(message: str) -> None:
        diagnostics.append(ResourceDiagnostic(type="warning", message=message, path=file_path))

    try:
        with open(file_path, encoding="utf-8", errors="replace") as file:
            parsed = parse_frontmatter(file.read())
    except (OSError, yaml.YAMLError) as exc:
        warn(str(exc) or "failed to parse skill file")
        return None, diagnostics
    data = parsed.data
    skill_dir = os.path.dirname(file_path)
    parent_dir_name = os.path.basename(skill_dir)
    description = data.get("description")
    if _js_truthy(description) and not isinstance(description, str):
        # pi calls .trim() on it, and the TypeError ends the file's checks: one warning.
        warn("description must be a string")
        return None, diagnostics
    for message in validate_description(description if isinstance(description, str) else None):
        warn(message)
    raw_name = data.get("name")
    name = str(raw_name) if _js_truthy(raw_name) else parent_dir_name
    for message in validate_name(name, parent_dir_name):
        warn(message)
    if not isinstance(description, str) or not description.strip():
        return None, diagnostics
    return (
        Skill(
            name=name,
            description=description,
            file_path=file_path,
            base_dir=skill_dir,
            source=source,
            disable_model_invocation=data.get("disable-model-invocation") is True,
        ),
        diagnostics,
    )


def load_skills_from_dir(
    directory: str,
    source: SkillSource = "path",
    *,
    include_root_files: bool = True,
    _rules: IgnoreRules | None = None,
    _root: str | None = None,
) -> tuple[list[Skill], list[ResourceDiagnostic]]:
    """Load the skills under ``directory`` (pi's ``loadSkillsFromDir``).

    A folder holding ``SKILL.md`` is one skill and is not searched further; otherwise its
    sub-folders are searched (not hidden ones, not ``node_modules``, not ignored ones) and, at
    the top level when ``include_root_files``, its ``.md`` files are skills too.
    """
    skills: list[Skill] = []
    diagnostics: list[ResourceDiagnostic] = []
    if not os.path.exists(directory):
        return skills, diagnostics
    root = _root if _root is not None else directory
    rules = _rules if _rules is not None else IgnoreRules()
    rules.add_dir(directory, root)
    entries = list_dir(directory)
    for entry in entries:
        if entry.name != SKILL_FILE:
            continue
        if not entry.is_file or rules.ignores(relative_posix(entry.path, root)):
            continue
        skill, found = load_skill_from_file(entry.path, source)
        if skill is not None:
            skills.append(skill)
        diagnostics.extend(found)
        return skills, diagnostics
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        relative = relative_posix(entry.path, root)
        if rules.ignores(f"{relative}/" if entry.is_dir else relative):
            continue
        if entry.is_dir:
            more, found = load_skills_from_dir(
                entry.path, source, include_root_files=False, _rules=rules, _root=root
            )
            skills.extend(more)
            diagnostics.extend(found)
            continue
        if not entry.is_file or not include_root_files or not entry.name.endswith(".md"):
            continue
        skill, found = load_skill_from_file(entry.path, source)
        if skill is not None:
            skills.append(skill)
        diagnostics.extend(found)
    return skills, diagnostics


def collect_skill_entries(
    directory: str,
    mode: DiscoveryMode,
    *,
    _rules: IgnoreRules | None = None,
    _root: str | None = None,
) -> list[str]:
    """The skill files auto-discovery finds under ``directory`` (pi's package manager walk)."""
    found: list[str] = []
    if not os.path.exists(directory):
        return found
    root = _root if _root is not None else directory
    rules = _rules if _rules is not None else IgnoreRules()
    rules.add_dir(directory, root)
    entries = list_dir(directory)
    for entry in entries:
        if (
            entry.name == SKILL_FILE
            and entry.is_file
            and not rules.ignores(relative_posix(entry.path, root))
        ):
            return [entry.path]
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        relative = relative_posix(entry.path, root)
        if (
            mode == "pi"
            and directory == root
            and entry.is_file
            and entry.name.endswith(".md")
            and not rules.ignores(relative)
        ):
            found.append(entry.path)
            continue
        if not entry.is_dir or rules.ignores(f"{relative}/"):
            continue
        found.extend(collect_skill_entries(entry.path, mode, _rules=rules, _root=root))
    return found


def _is_under(target: str, root: str) -> bool:
    root = os.path.abspath(root)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def expand_home(path: str) -> str:
    """pi's ``~`` handling for resource paths (``~``, ``~/x`` and ``~x`` all mean the home)."""
    trimmed = path.strip()
    home = os.path.expanduser("~")
    if trimmed == "~":
        return home
    if trimmed.startswith("~/"):
        return os.path.join(home, trimmed[2:])
    if trimmed.startswith("~"):
        return os.path.join(home, trimmed[1:])
    return trimmed


def load_skills(
    skill_paths: Iterable[str], *, cwd: str, agent_dir: str, config_dir_name: str
) -> tuple[list[Skill], list[ResourceDiagnostic]]:
    """Load skills from files and folders in order; the first skill of a name wins.

    Mirrors pi's ``loadSkills`` with ``includeDefaults: false`` (the resource loader finds the
    default locations itself). A file reached twice through symlinks loads once.
    """
    user_dir = os.path.join(agent_dir, "skills")
    project_dir = os.path.join(cwd, config_dir_name, "skills")
    by_name: dict[str, Skill] = {}
    real_paths: set[str] = set()
    diagnostics: list[ResourceDiagnostic] = []
    collisions: list[ResourceDiagnostic] = []

    def add(skills: Sequence[Skill]) -> None:
        for skill in skills:
            real = os.path.realpath(skill.file_path)
            if real in real_paths:
                continue
            existing = by_name.get(skill.name)
            if existing is not None:
                collisions.append(
                    ResourceDiagnostic(
                        type="collision",
                        message=f'name "{skill.name}" collision',
                        path=skill.file_path,
                        collision=ResourceCollision(
                            resource_type="skill",
                            name=skill.name,
                            winner_path=existing.file_path,
                            loser_path=skill.file_path,
                        ),
                    )
                )
            else:
                by_name[skill.name] = skill
                real_paths.add(real)

    for raw in skill_paths:
        path = os.path.abspath(os.path.join(cwd, expand_home(raw)))
        if not os.path.exists(path):
            diagnostics.append(
                ResourceDiagnostic(type="warning", message="skill path does not exist", path=path)
            )
            continue
        source: SkillSource = (
            "user"
            if _is_under(path, user_dir)
            else "project"
            if _is_under(path, project_dir)
            else "path"
        )
        if os.path.isdir(path):
            skills, found = load_skills_from_dir(path, source)
            diagnostics.extend(found)
            add(skills)
        elif os.path.isfile(path) and path.endswith(".md"):
            skill, found = load_skill_from_file(path, source)
            diagnostics.extend(found)
            if skill is not None:
                add([skill])
        else:
            diagnostics.append(
                ResourceDiagnostic(
                    type="warning", message="skill path is not a markdown file", path=path
                )
            )
    return list(by_name.values()), diagnostics + collisions


def escape_xml(text: str) -> str:
    """Escape the five XML special characters as pi does."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """The ``<available_skills>`` block of the system prompt ('' when no skill is visible).

    Skills with ``disable_model_invocation`` are left out (pi's Agent Skills XML format).
    """
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory"
        " (parent of SKILL.md / dirname of the path) and use that absolute path in tool"
        " commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape_xml(skill.name)}</name>",
            f"    <description>{escape_xml(skill.description)}</description>",
            f"    <location>{escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def expand_skill_command(text: str, skills: Iterable[Skill]) -> str:
    """Expand ``/skill:name args`` into the skill's body in a ``<skill>`` block.

    Text that is not a skill command, or names no loaded skill, comes back unchanged, as does
    a command whose skill file can no longer be read (pi reports that to extensions; the caller
    may check for it with :func:`read_skill_body`). The arguments follow the block after a
    blank line.
    """
    if not text.startswith(SKILL_COMMAND_PREFIX):
        return text
    space = text.find(" ")
    prefix_len = len(SKILL_COMMAND_PREFIX)
    name = text[prefix_len:] if space == -1 else text[prefix_len:space]
    args = "" if space == -1 else text[space + 1 :].strip()
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    try:
        body = read_skill_body(skill)
    except (OSError, yaml.YAMLError):
        return text
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>"
    )
    return f"{block}\n\n{args}" if args else block


def read_skill_body(skill: Skill) -> str:
    """The skill file's text without frontmatter, trimmed.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: its frontmatter is no longer valid YAML.
    """
    with open(skill.file_path, encoding="utf-8", errors="replace") as file:
        return strip_frontmatter(file.read()).strip()
