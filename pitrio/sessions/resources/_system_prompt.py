"""The coding agent's system prompt, built as pi 0.73.1 ``core/system-prompt.ts`` builds it.

The default prompt names the product and points at its documentation. pitrio says "pitrio"
where pi says "pi" (and "Pitrio documentation" for "Pi documentation") and points at its own
README, ``docs/`` and ``examples/`` (see :func:`documentation_paths`); everything else,
including the topic list after "When asked about", is pi's text, so a model that knows pi's
prompt sees the same prompt.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import attrs

from pitrio.sessions.resources._context_files import ContextFile
from pitrio.sessions.resources._skills import Skill, format_skills_for_prompt

PRODUCT_NAME: Final = "pitrio"
PACKAGE_DIR_ENV: Final = "PITRIO_PACKAGE_DIR"
"""Overrides where the documentation the prompt points at lives (pi: ``PI_PACKAGE_DIR``)."""

DEFAULT_TOOL_NAMES: Final = ("read", "bash", "edit", "write")
"""The tools pi enables when no tool list is given."""


@attrs.frozen
class ToolPrompt:
    """What a tool adds to the default prompt: one line in "Available tools", and guidelines."""

    snippet: str | None = None
    guidelines: tuple[str, ...] = ()


BUILTIN_TOOL_PROMPTS: Final[Mapping[str, ToolPrompt]] = {
    "read": ToolPrompt("Read file contents", ("Use read to examine files instead of cat or sed.",)),
    "bash": ToolPrompt("Execute bash commands (ls, grep, find, etc.)"),
    "edit": ToolPrompt(
        "Make precise file edits with exact text replacement, including multiple disjoint"
        " edits in one call",
        (
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with"
            " multiple entries in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits"
            " are applied. Do not emit overlapping or nested edits. Merge nearby changes into"
            " one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do"
            " not pad with large unchanged regions.",
        ),
    ),
    "write": ToolPrompt(
        "Create or overwrite files", ("Use write only for new files or complete rewrites.",)
    ),
    "grep": ToolPrompt("Search file contents for patterns (respects .gitignore)"),
    "find": ToolPrompt("Find files by glob pattern (respects .gitignore)"),
    "ls": ToolPrompt("List directory contents"),
}
"""pi 0.73.1's ``promptSnippet`` / ``promptGuidelines`` of the seven built-in tools."""


def normalize_snippet(text: str | None) -> str | None:
    """A snippet on one line with single spaces, or ``None`` if empty (pi's normalisation)."""
    if not text:
        return None
    one_line = " ".join(text.split())
    return one_line or None


def tool_prompt_parts(
    tool_names: Sequence[str], prompts: Mapping[str, ToolPrompt] = BUILTIN_TOOL_PROMPTS
) -> tuple[dict[str, str], list[str]]:
    """The snippets and guidelines of ``tool_names`` in order, as pi's session collects them."""
    snippets: dict[str, str] = {}
    guidelines: list[str] = []
    for name in tool_names:
        prompt = prompts.get(name)
        if prompt is None:
            continue
        snippet = normalize_snippet(prompt.snippet)
        if snippet:
            snippets[name] = snippet
        unique = dict.fromkeys(g.strip() for g in prompt.guidelines if g.strip())
        guidelines.extend(unique)
    return snippets, guidelines


def documentation_paths() -> tuple[str, str, str]:
    """``(readme, docs dir, examples dir)`` that the default prompt points at.

    ``$PITRIO_PACKAGE_DIR`` if set; else the source checkout holding the ``pitrio`` package
    (its README.md, docs/ and examples/), which is also where an editable install finds them.
    """
    configured = os.environ.get(PACKAGE_DIR_ENV)
    if configured:
        base = os.path.expanduser(configured)
    else:
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        base = os.path.dirname(package)
    base = os.path.abspath(base)
    return (
        os.path.join(base, "README.md"),
        os.path.join(base, "docs"),
        os.path.join(base, "examples"),
    )


def _project_context(context_files: Iterable[ContextFile]) -> str:
    files = list(context_files)
    if not files:
        return ""
    text = "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"
    for file in files:
        text += f"## {file.path}\n\n{file.content}\n\n"
    return text


def build_system_prompt(
    *,
    cwd: str,
    selected_tools: Sequence[str] | None = None,
    tool_snippets: Mapping[str, str] | None = None,
    prompt_guidelines: Iterable[str] = (),
    custom_prompt: str | None = None,
    append_system_prompt: str | None = None,
    context_files: Iterable[ContextFile] = (),
    skills: Iterable[Skill] = (),
    today: _dt.date | None = None,
    docs: tuple[str, str, str] | None = None,
) -> str:
    """Build the system prompt (pi's ``buildSystemPrompt``).

    Args:
        cwd: the working directory named at the end (backslashes shown as ``/``).
        selected_tools: the active tools' names; ``None`` means pi's default four.
        tool_snippets: one line per tool for "Available tools"; a tool without one is not
            listed (use :func:`tool_prompt_parts` for the built-ins).
        prompt_guidelines: the tools' guidelines, added after the file-exploration one.
        custom_prompt: a ``SYSTEM.md`` text that replaces the default prompt.
        append_system_prompt: ``APPEND_SYSTEM.md`` text, after the prompt.
        context_files: the ``AGENTS.md`` / ``CLAUDE.md`` files, under "# Project Context".
        skills: listed only when the read tool is active (a custom prompt with no tool list
            counts as having it).
        today: the date shown (default: today, local time).
        docs: ``(readme, docs, examples)`` paths (default: :func:`documentation_paths`).
    """
    date = (today or _dt.date.today()).isoformat()
    prompt_cwd = cwd.replace("\\", "/")
    append = f"\n\n{append_system_prompt}" if append_system_prompt else ""
    skills = list(skills)
    if custom_prompt:
        prompt = custom_prompt + append + _project_context(context_files)
        if selected_tools is None or "read" in selected_tools:
            prompt += format_skills_for_prompt(skills)
        return prompt + f"\nCurrent date: {date}\nCurrent working directory: {prompt_cwd}"

    readme, docs_dir, examples = docs if docs is not None else documentation_paths()
    tools = list(selected_tools) if selected_tools is not None else list(DEFAULT_TOOL_NAMES)
    snippets = tool_snippets or {}
    visible = [name for name in tools if snippets.get(name)]
    tools_list = "\n".join(f"- {n}: {snippets[n]}" for n in visible) if visible else "(none)"

    guidelines: dict[str, None] = {}
    has_bash = "bash" in tools
    has_explorer = any(name in tools for name in ("grep", "find", "ls"))
    if has_bash and not has_explorer:
        guidelines["Use bash for file operations like ls, rg, find"] = None
    elif has_bash and has_explorer:
        guidelines[
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)"
        ] = None
    for guideline in prompt_guidelines:
        if guideline.strip():
            guidelines.setdefault(guideline.strip(), None)
    guidelines.setdefault("Be concise in your responses", None)
    guidelines.setdefault("Show file paths clearly when working with files", None)
    guidelines_text = "\n".join(f"- {g}" for g in guidelines)

    name = PRODUCT_NAME
    title = name[0].upper() + name[1:]
    prompt = f"""You are an expert coding assistant operating inside {name}, a coding agent \
harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
{tools_list}

In addition to the tools above, you may have access to other custom tools depending on the \
project.

Guidelines:
{guidelines_text}

{title} documentation (read only when the user asks about {name} itself, its SDK, extensions, \
themes, skills, or TUI):
- Main documentation: {readme}
- Additional docs: {docs_dir}
- Examples: {examples} (extensions, custom tools, SDK)
- When asked about: extensions (docs/extensions.md, examples/extensions/), themes \
(docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), TUI \
components (docs/tui.md), keybindings (docs/keybindings.md), SDK integrations (docs/sdk.md), \
custom providers (docs/custom-provider.md), adding models (docs/models.md), {name} packages \
(docs/packages.md)
- When working on {name} topics, read the docs and examples, and follow .md cross-references \
before implementing
- Always read {name} .md files completely and follow links to related docs (e.g., tui.md for \
TUI API details)"""
    prompt += append + _project_context(context_files)
    if "read" in tools:
        prompt += format_skills_for_prompt(skills)
    return prompt + f"\nCurrent date: {date}\nCurrent working directory: {prompt_cwd}"


SYSTEM_PART_NAMES: Final = ("base", "project_context", "skills", "runtime")
"""The system prompt's parts in the envelope (seed 001), in order."""

_PROJECT_MARK: Final = "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"
_SKILLS_MARK: Final = (
    "\n\nThe following skills provide specialized instructions for specific tasks."
)
_RUNTIME_MARK: Final = "\nCurrent date: "


def split_system_prompt(prompt: str) -> list[tuple[str, str]]:
    """Split a prompt :func:`build_system_prompt` made into ``base``, ``project_context``,
    ``skills`` and ``runtime`` (the date and working directory).

    The parts are slices of ``prompt``, so their concatenation is ``prompt`` byte for byte,
    whatever it holds; a section that is missing is an empty part.
    """
    end = len(prompt)
    runtime = prompt.rfind(_RUNTIME_MARK)
    if runtime < 0 or "\nCurrent working directory: " not in prompt[runtime:]:
        runtime = end
    project = prompt.find(_PROJECT_MARK, 0, runtime)
    skills = prompt.rfind(_SKILLS_MARK, 0 if project < 0 else project, runtime)
    if skills < 0:
        skills = runtime
    if project < 0:
        project = skills
    return [
        ("base", prompt[:project]),
        ("project_context", prompt[project:skills]),
        ("skills", prompt[skills:runtime]),
        ("runtime", prompt[runtime:]),
    ]
