"""Context files (``AGENTS.md`` / ``CLAUDE.md``) and the ``SYSTEM.md`` / ``APPEND_SYSTEM.md`` files.

Ported from pi 0.73.1 ``core/resource-loader.ts``. The context files are the global one in the
agent dir first, then one per directory from the filesystem root down to ``cwd`` (the first of
``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``, ``CLAUDE.MD`` that exists in each), each file once.
``SYSTEM.md`` and ``APPEND_SYSTEM.md`` are looked up in the project config folder first, then in
the agent dir; the first found is used.
"""

from __future__ import annotations

import os
from typing import Final

import attrs

CONTEXT_FILE_NAMES: Final = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
"""Candidates per directory, in pi's order; the first that exists is that directory's file."""
SYSTEM_PROMPT_FILE: Final = "SYSTEM.md"
APPEND_SYSTEM_PROMPT_FILE: Final = "APPEND_SYSTEM.md"


@attrs.frozen
class ContextFile:
    """A context file: its path and its text."""

    path: str
    content: str


def load_context_file_from_dir(directory: str) -> ContextFile | None:
    """The context file of one directory, or ``None``.

    A candidate that exists but cannot be read is skipped (pi warns on stderr and tries the
    next name).
    """
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                return ContextFile(path, file.read())
        except OSError:
            continue
    return None


def load_project_context_files(*, cwd: str, agent_dir: str) -> list[ContextFile]:
    """The global context file, then those from the root down to ``cwd`` (pi's order)."""
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = load_context_file_from_dir(agent_dir)
    if global_file is not None:
        files.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    current = os.path.abspath(cwd)
    while True:
        found = load_context_file_from_dir(current)
        if found is not None and found.path not in seen:
            ancestors.insert(0, found)
            seen.add(found.path)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return files + ancestors


def discover_prompt_file(
    name: str, *, cwd: str, agent_dir: str, config_dir_name: str
) -> str | None:
    """The project's ``<config dir>/<name>`` if it exists, else the agent dir's, else ``None``."""
    for path in (os.path.join(cwd, config_dir_name, name), os.path.join(agent_dir, name)):
        if os.path.exists(path):
            return path
    return None


def resolve_prompt_input(value: str | None) -> str | None:
    """pi's ``--system-prompt`` / ``--append-system-prompt`` rule: a path that exists is read,
    anything else is the text itself (also when the file cannot be read)."""
    if not value:
        return None
    if os.path.exists(value):
        try:
            with open(value, encoding="utf-8", errors="replace") as file:
                return file.read()
        except OSError:
            return value
    return value
