"""Walking resource folders as pi does: sorted names and ``.gitignore``-style ignore files.

pi reads directories with Node's ``readdirSync``, whose entries come sorted by byte value;
``sorted()`` on names gives the same order. Ignore files found on the way down apply below
their folder, their patterns prefixed with the folder's path relative to the walk's root.
"""

from __future__ import annotations

import os
import stat
from typing import Final

import attrs
import pathspec

IGNORE_FILE_NAMES: Final = (".gitignore", ".ignore", ".fdignore")


def _prefix_pattern(line: str, prefix: str) -> str | None:
    trimmed = line.strip()
    if not trimmed:
        return None
    if trimmed.startswith("#") and not trimmed.startswith("\\#"):
        return None
    pattern = line
    negated = False
    if pattern.startswith("!"):
        negated = True
        pattern = pattern[1:]
    elif pattern.startswith("\\!"):
        pattern = pattern[1:]
    if pattern.startswith("/"):
        pattern = pattern[1:]
    prefixed = f"{prefix}{pattern}" if prefix else pattern
    return f"!{prefixed}" if negated else prefixed


@attrs.define
class IgnoreRules:
    """The ignore patterns collected so far in one walk (pi's ``ignore()`` instance)."""

    patterns: list[str] = attrs.field(factory=list)
    _spec: pathspec.GitIgnoreSpec | None = None

    def add_dir(self, directory: str, root: str) -> None:
        """Add the ignore files of ``directory`` (a folder inside the walk rooted at ``root``)."""
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        added = False
        for name in IGNORE_FILE_NAMES:
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as file:
                    lines = file.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                pattern = _prefix_pattern(line, prefix)
                if pattern:
                    self.patterns.append(pattern)
                    added = True
        if added:
            self._spec = None

    def ignores(self, relative_path: str) -> bool:
        """True if ``relative_path`` (``/``-separated, ``dir/`` for folders) is ignored."""
        if not self.patterns:
            return False
        if self._spec is None:
            self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)
        return self._spec.match_file(relative_path)


@attrs.frozen
class DirEntry:
    """One folder entry with symlinks followed (a broken link is left out)."""

    name: str
    path: str
    is_dir: bool
    is_file: bool


def list_dir(directory: str) -> list[DirEntry]:
    """The entries of ``directory`` sorted by name; ``[]`` if it cannot be read."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    entries = []
    for name in names:
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)  # follows symlinks, as pi's statSync
        except OSError:
            continue
        entries.append(DirEntry(name, full, stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)))
    return entries


def relative_posix(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators."""
    return os.path.relpath(path, root).replace(os.sep, "/")
