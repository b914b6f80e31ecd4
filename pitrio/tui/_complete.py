"""Completion for the editor: ``/`` commands, ``@`` file references and Tab paths."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

import attrs

from pitrio.tui._dialogs import fuzzy_score

__all__ = [
    "Completion",
    "CompletionList",
    "complete_command",
    "complete_file_reference",
    "complete_path",
    "list_project_files",
]

MAX_FILES: Final = 20000
MAX_ITEMS: Final = 8
_SKIP_DIRS: Final = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache"}
)


@attrs.frozen
class Completion:
    """A choice: what the token becomes (``value``), what the list shows and a description."""

    value: str
    label: str
    description: str = ""


@attrs.define
class CompletionList:
    """The choices for the token ending at the cursor (``start``: where the token begins on
    the cursor's line)."""

    items: list[Completion]
    start: int
    selected: int = 0


def complete_command(line: str, commands: Sequence[tuple[str, str]]) -> CompletionList | None:
    """Commands for a line that is ``/`` and a name being typed (no space yet)."""
    if not line.startswith("/") or " " in line:
        return None
    query = line[1:]
    scored: list[tuple[int, str, str]] = []
    for name, description in commands:
        if name.startswith(query):
            scored.append((0, name, description))
        elif query:
            score = fuzzy_score(query, name)
            if score is not None:
                scored.append((1 + score, name, description))
    scored.sort(key=lambda item: (item[0], item[1]))
    items = [Completion(f"/{name}", f"/{name}", description) for _, name, description in scored]
    return CompletionList(items[:MAX_ITEMS], 0) if items else None


def list_project_files(root: str) -> list[str]:
    """Files and folders under ``root`` (relative, folders ending in ``/``), skipping version
    control and dependency folders; at most :data:`MAX_FILES`. Blocking: run in a thread."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative + "/"
        if prefix:
            found.append(prefix)
        found.extend(prefix + name for name in sorted(files))
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def _token_start(line: str, col: int) -> int:
    start = col
    while start > 0 and not line[start - 1].isspace():
        start -= 1
    return start


def complete_file_reference(line: str, col: int, files: Sequence[str]) -> CompletionList | None:
    """Files for an ``@`` token before the cursor, fuzzily matched on its path."""
    start = _token_start(line, col)
    token = line[start:col]
    if not token.startswith("@"):
        return None
    query = token[1:]
    scored: list[tuple[int, str]] = []
    for path in files:
        score = fuzzy_score(query, path) if query else 0
        if score is not None:
            # Prefer matches in the file's name, then shorter paths.
            name = path.rstrip("/").rsplit("/", 1)[-1]
            bonus = 0 if query and query.lower() in name.lower() else 50
            scored.append((score + bonus + len(path) // 8, path))
    scored.sort()
    items = [Completion(f"@{path}", path) for _, path in scored[:MAX_ITEMS]]
    return CompletionList(items, start) if items else None


def complete_path(line: str, col: int, cwd: str) -> CompletionList | None:
    """Entries of the folder the token before the cursor names, that start with its last
    part (Tab). Blocking (reads a folder): run in a thread."""
    start = _token_start(line, col)
    token = line[start:col]
    at = token.startswith("@")
    if at:
        token = token[1:]
    folder, _, prefix = token.rpartition("/")
    base = os.path.expanduser(folder) if folder else "."
    if folder == "" and token.startswith("/"):
        base = "/"
    directory = base if os.path.isabs(base) else os.path.join(cwd, base)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    head = f"{folder}/" if folder or token.startswith("/") else ""
    items: list[Completion] = []
    for name in names:
        if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
            continue
        is_dir = os.path.isdir(os.path.join(directory, name))
        value = head + name + ("/" if is_dir else "")
        items.append(Completion(("@" if at else "") + value, name + ("/" if is_dir else "")))
    return CompletionList(items[: MAX_ITEMS * 4], start) if items else None
