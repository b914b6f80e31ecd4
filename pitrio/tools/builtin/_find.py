"""The ``find`` tool (pi 0.73.1 ``core/tools/find.ts``), and the gitignore-aware walk it shares
with ``grep``'s fallback.

pi runs ``fd --glob --hidden --no-require-git --max-results N``; this module does the same walk
in Python, so nothing has to be installed or downloaded:

- hidden files are listed (``.git`` too, as fd lists it), directories end in ``/``;
- ``.gitignore`` (up to the repository root), ``.git/info/exclude``, ``.ignore`` and the tool's
  own ignore file (``.fdignore``, ``.rgignore``) are honoured with the precedence of the
  ``ignore`` crate that fd and ripgrep share: per kind the deepest match wins, and a match in
  ``.fdignore`` beats ``.ignore``, which beats ``.gitignore``, which beats ``info/exclude``.
  The user's global git excludes file is not read;
- a pattern without ``/`` is matched against the file name, one with ``/`` against the whole
  absolute path, with ``**/`` put in front of a relative one (as pi does for fd's
  ``--full-path``); ``*`` and ``?`` do not match ``/`` there, ``**`` does;
- case is smart, as fd's: a pattern without capitals matches case-insensitively;
- results are in fd's sorted order (path components compared byte-wise). fd sorts only when it
  finishes within 100 ms and otherwise prints as its threads find entries; the walk here is
  always sorted, and with a limit the first results in that order are kept.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from typing import Any, Final

import attrs
import pathspec

from pitrio.providers import TextContent
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback, text_result
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._io import run_sync
from pitrio.tools.builtin._paths import resolve_to_cwd
from pitrio.tools.builtin._read import js_number
from pitrio.tools.builtin._truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

JS_MAX_SAFE_INTEGER: Final = 2**53 - 1
"""``Number.MAX_SAFE_INTEGER``: pi's "no line limit" when it truncates by bytes only."""
DEFAULT_FIND_LIMIT: Final = 1000
"""Paths ``find`` returns unless told otherwise (pi's ``DEFAULT_LIMIT``)."""

FIND_DESCRIPTION: Final = (
    "Search for files by glob pattern. Returns matching file paths relative to the search "
    "directory. Respects .gitignore. Output is truncated to "
    f"{DEFAULT_FIND_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
)
FIND_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": (
                "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"
            ),
        },
        "path": {
            "type": "string",
            "description": "Directory to search in (default: current directory)",
        },
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    },
    "required": ["pattern"],
}


# ---------------------------------------------------------------------------------------------
# Ignore rules


def _read_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


@attrs.frozen
class DirRules:
    """The ignore files of one directory."""

    path: str
    has_git: bool
    custom: pathspec.GitIgnoreSpec | None
    ignore: pathspec.GitIgnoreSpec | None
    git: pathspec.GitIgnoreSpec | None
    exclude: pathspec.GitIgnoreSpec | None

    @classmethod
    def load(cls, directory: str, custom_name: str) -> DirRules:
        """Read ``directory``'s ignore files (blocking)."""
        has_git = os.path.exists(os.path.join(directory, ".git"))
        return cls(
            path=directory,
            has_git=has_git,
            custom=_read_spec(os.path.join(directory, custom_name)),
            ignore=_read_spec(os.path.join(directory, ".ignore")),
            git=_read_spec(os.path.join(directory, ".gitignore")),
            exclude=_read_spec(os.path.join(directory, ".git", "info", "exclude"))
            if has_git
            else None,
        )


def _check(spec: pathspec.GitIgnoreSpec | None, base: str, path: str, is_dir: bool) -> bool | None:
    if spec is None:
        return None
    relative = os.path.relpath(path, base)
    if relative.startswith(".."):
        return None
    if is_dir:
        relative += "/"
    # The ignore crate matches a path itself, never through its parent directories: those are
    # pruned by the walk before their contents are seen. pathspec also reports a path under a
    # matching directory (``build/a.txt`` for ``build/``), which would hide the contents of a
    # search root that a parent's .gitignore ignores; fd and ripgrep list them. So a match
    # that ends at a ``/`` before the end of the path (the pattern matched a parent) is skipped,
    # and the last pattern matching the path itself decides.
    for pattern in reversed(spec.patterns):
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or regex is None:
            continue
        match = regex.match(relative)
        if match is None:
            continue
        if match.end() < len(relative) and match.group().endswith("/"):
            continue
        include: bool = pattern.include
        return include
    return None


def is_ignored(chain: list[DirRules], path: str, is_dir: bool, *, require_git: bool) -> bool:
    """Whether ``path`` is ignored by the rules of its ancestors ``chain`` (outermost first)."""
    any_git = not require_git or any(rules.has_git for rules in chain)
    found: list[bool | None] = [None, None, None, None]
    saw_git = False
    for rules in reversed(chain):
        if found[0] is None:
            found[0] = _check(rules.custom, rules.path, path, is_dir)
        if found[1] is None:
            found[1] = _check(rules.ignore, rules.path, path, is_dir)
        if any_git and not saw_git:
            if found[2] is None:
                found[2] = _check(rules.git, rules.path, path, is_dir)
            if found[3] is None:
                found[3] = _check(rules.exclude, rules.path, path, is_dir)
        saw_git = saw_git or rules.has_git
    return next((verdict for verdict in found if verdict is not None), False)


def _ancestors(directory: str) -> list[str]:
    chain = []
    current = directory
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            break
        chain.append(parent)
        current = parent
    return chain[::-1]


def walk(root: str, *, custom_ignore: str, require_git: bool) -> Iterator[tuple[str, bool]]:
    """Yield ``(path, is_dir)`` for everything under ``root`` that is not ignored, in sorted
    depth-first order (blocking: run it in a worker thread).

    Symbolic links are listed, not followed; unreadable directories are skipped.
    """
    chain = [DirRules.load(parent, custom_ignore) for parent in _ancestors(root)]
    yield from _walk_dir(root, chain, custom_ignore, require_git)


def _walk_dir(
    directory: str, chain: list[DirRules], custom_ignore: str, require_git: bool
) -> Iterator[tuple[str, bool]]:
    chain = [*chain, DirRules.load(directory, custom_ignore)]
    try:
        with os.scandir(directory) as entries:
            listing = sorted((entry.name, entry) for entry in entries)
    except OSError:
        return
    for _, entry in listing:
        try:
            is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
        except OSError:
            continue
        if is_ignored(chain, entry.path, is_dir, require_git=require_git):
            continue
        yield entry.path, is_dir
        if is_dir:
            yield from _walk_dir(entry.path, chain, custom_ignore, require_git)


# ---------------------------------------------------------------------------------------------
# Globs


def glob_to_regex(pattern: str, *, literal_separator: bool) -> str:
    """Translate a glob (globset syntax: ``*``, ``?``, ``**``, ``[...]``, ``{a,b}``) to a regex."""
    star = "[^/]*" if literal_separator else ".*"
    one = "[^/]" if literal_separator else "."
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                whole_start = i == 0 or pattern[i - 1] == "/"
                end = i + 2
                if whole_start and end == n:
                    out.append(".*")
                    i = end
                    continue
                if whole_start and pattern[end] == "/":
                    out.append("(?:.*/)?")
                    i = end + 1
                    continue
                out.append(star)
                i = end
                continue
            out.append(star)
        elif ch == "?":
            out.append(one)
        elif ch == "[":
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : close]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = close
        elif ch == "{":
            close, alternatives = _split_braces(pattern, i)
            if close == -1:
                out.append(re.escape(ch))
            else:
                translated = [
                    glob_to_regex(alt, literal_separator=literal_separator) for alt in alternatives
                ]
                out.append("(?:" + "|".join(translated) + ")")
                i = close
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _split_braces(pattern: str, start: int) -> tuple[int, list[str]]:
    depth = 0
    parts: list[str] = []
    current = start + 1
    for index in range(start, len(pattern)):
        ch = pattern[index]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                parts.append(pattern[current:index])
                return index, parts
        elif ch == "," and depth == 1:
            parts.append(pattern[current:index])
            current = index + 1
    return -1, []


@attrs.frozen
class FdGlob:
    """A find pattern as fd applies it: to the name, or (with ``/``) to the absolute path."""

    regex: re.Pattern[str]
    full_path: bool

    @classmethod
    def compile(cls, pattern: str) -> FdGlob:
        """Build the matcher for pi's ``find`` pattern."""
        full_path = "/" in pattern
        effective = pattern
        if full_path and not (pattern.startswith(("/", "**/")) or pattern == "**"):
            effective = f"**/{pattern}"
        flags = 0 if any(ch.isupper() for ch in pattern) else re.IGNORECASE
        regex = glob_to_regex(effective, literal_separator=full_path)
        return cls(re.compile(regex, flags | re.DOTALL), full_path)

    def matches(self, path: str) -> bool:
        """Whether the absolute ``path`` matches."""
        target = path if self.full_path else os.path.basename(path)
        return self.regex.fullmatch(target) is not None


def _find(search_path: str, pattern: str, limit: int) -> list[str]:
    """Return matching paths relative to ``search_path`` (blocking)."""
    if not os.path.isdir(search_path):
        raise FileToolError(
            f"[fd error]: Search path '{search_path}' is not a directory.\n"
            "[fd error]: No valid search paths given.",
            tool_name="find",
            path=search_path,
        )
    matcher = FdGlob.compile(pattern)
    results: list[str] = []
    if limit <= 0:
        return results
    for path, is_dir in walk(search_path, custom_ignore=".fdignore", require_git=False):
        if matcher.matches(path):
            relative = os.path.relpath(path, search_path).replace(os.sep, "/")
            results.append(relative + "/" if is_dir else relative)
            if len(results) >= limit:
                break
    return results


@attrs.frozen(kw_only=True, eq=False)
class FindTool(AgentTool):
    """pi's ``find`` tool: paths under a directory that match a glob, gitignore-aware."""

    cwd: str
    """Directory that relative paths are resolved against."""
    name: str = "find"
    label: str = "find"
    description: str = FIND_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(FIND_PARAMETERS))

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Find the files; see the module docstring for the rules."""
        pattern: str = params["pattern"]
        search_path = resolve_to_cwd(params.get("path") or ".", self.cwd)
        limit = params.get("limit")
        effective_limit = DEFAULT_FIND_LIMIT if limit is None else limit
        paths = await run_sync(_find, search_path, pattern, _max_results(effective_limit))
        if not paths:
            return text_result("No files found matching pattern")
        truncation = truncate_head("\n".join(paths), max_lines=JS_MAX_SAFE_INTEGER)
        text = truncation.content
        details: dict[str, Any] = {}
        notices: list[str] = []
        if len(paths) >= effective_limit:
            notices.append(
                f"{js_number(effective_limit)} results limit reached. "
                f"Use limit={js_number(effective_limit * 2)} for more, or refine pattern"
            )
            details["resultLimitReached"] = effective_limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.to_details()
        if notices:
            text += f"\n\n[{'. '.join(notices)}]"
        return AgentToolResult(content=(TextContent(text=text),), details=details or None)


def _max_results(limit: float) -> int:
    # fd counts whole results: a fractional limit of 2.5 stops after 3.
    whole = int(limit)
    return whole if whole == limit else whole + 1


def create_find_tool(cwd: str) -> FindTool:
    """Return a ``find`` tool for ``cwd`` (pi's ``createFindTool``)."""
    return FindTool(cwd=cwd)
