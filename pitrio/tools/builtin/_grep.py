"""The ``grep`` tool (pi 0.73.1 ``core/tools/grep.ts``).

As pi, it runs ripgrep (``rg --json --line-number --color=never --hidden``), stops it once the
match limit is reached, and formats the matches itself: ``path:line: text`` for a match,
``path-line- text`` for a context line (read from the file, one block per match, so blocks of
nearby matches overlap as in pi), lines cut to :data:`GREP_MAX_LINE_LENGTH` characters, the
whole cut to 50KB, and pi's notices. The ``rg`` binary comes from the ``ripgrep`` package (a
dependency) or ``PATH``.

Without ``rg`` a Python search gives the same output format: the walk of the ``find`` tool
(``.gitignore`` inside git repositories, ``.ignore``, ``.rgignore``; hidden files included),
Python's ``re`` instead of Rust's regex syntax, ``--glob`` as a gitignore-style pattern, and
files with a NUL byte skipped as binary. ripgrep prints files in the order its threads reach
them; the fallback's order is sorted.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import orjson
import pathspec
import trio

from pitrio.providers import TextContent
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback, text_result
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._find import JS_MAX_SAFE_INTEGER, walk
from pitrio.tools.builtin._io import run_sync
from pitrio.tools.builtin._paths import resolve_to_cwd
from pitrio.tools.builtin._read import js_number
from pitrio.tools.builtin._truncate import (
    DEFAULT_MAX_BYTES,
    GREP_MAX_LINE_LENGTH,
    format_size,
    truncate_head,
    truncate_line,
)

DEFAULT_GREP_LIMIT: Final = 100
"""Matches ``grep`` returns unless told otherwise (pi's ``DEFAULT_LIMIT``)."""
STDERR_KEEP: Final = 64 * 1024
"""Bytes of ripgrep's error output kept for the error message."""
READ_CHUNK: Final = 65536

GREP_DESCRIPTION: Final = (
    "Search file contents for a pattern. Returns matching lines with file paths and line "
    "numbers. Respects .gitignore. Output is truncated to "
    f"{DEFAULT_GREP_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
    f"Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)
GREP_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {
            "type": "string",
            "description": "Directory or file to search (default: current directory)",
        },
        "glob": {
            "type": "string",
            "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
        },
        "ignoreCase": {
            "type": "boolean",
            "description": "Case-insensitive search (default: false)",
        },
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {
            "type": "number",
            "description": "Maximum number of matches to return (default: 100)",
        },
    },
    "required": ["pattern"],
}


def find_rg() -> str | None:
    """Return the ``rg`` of the ``ripgrep`` package (next to this Python), else the one on
    ``PATH``, else ``None``."""
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, "rg")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


@attrs.frozen
class _Match:
    path: str
    line_number: int
    line_text: str | None


@attrs.frozen(kw_only=True)
class _Search:
    pattern: str
    search_path: str
    glob: str | None
    ignore_case: bool
    literal: bool
    limit: float


@attrs.define
class _Found:
    matches: list[_Match] = attrs.field(factory=list)
    count: int = 0
    limit_reached: bool = False


# ---------------------------------------------------------------------------------------------
# ripgrep


async def _search_rg(rg: str, search: _Search) -> _Found:
    args = [rg, "--json", "--line-number", "--color=never", "--hidden"]
    if search.ignore_case:
        args.append("--ignore-case")
    if search.literal:
        args.append("--fixed-strings")
    if search.glob:
        args += ["--glob", search.glob]
    args += ["--", search.pattern, search.search_path]
    try:
        process = await trio.lowlevel.open_process(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise FileToolError(f"Failed to run ripgrep: {exc}", tool_name="grep") from exc
    found = _Found()
    stderr = bytearray()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_collect_stderr, process, stderr)
            await _read_events(process, found, search.limit)
        code = await process.wait()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
    if not found.limit_reached and code not in (0, 1):
        message = stderr.decode("utf-8", "replace").strip()
        raise FileToolError(message or f"ripgrep exited with code {code}", tool_name="grep")
    return found


async def _collect_stderr(process: trio.Process, keep: bytearray) -> None:
    assert process.stderr is not None
    while chunk := await process.stderr.receive_some(READ_CHUNK):
        keep += chunk[: max(0, STDERR_KEEP - len(keep))]


async def _read_events(process: trio.Process, found: _Found, limit: float) -> None:
    assert process.stdout is not None
    pending = b""
    while chunk := await process.stdout.receive_some(READ_CHUNK):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            _take_event(line, found, limit)
            if found.limit_reached:
                # Enough: stop ripgrep as pi does (SIGTERM) and ignore the rest.
                process.terminate()
                return
    if pending:
        _take_event(pending, found, limit)


def _take_event(line: bytes, found: _Found, limit: float) -> None:
    if not line.strip() or found.count >= limit:
        return
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(event, dict) or event.get("type") != "match":
        return
    found.count += 1
    data = event.get("data") or {}
    path = (data.get("path") or {}).get("text")
    line_number = data.get("line_number")
    line_text = (data.get("lines") or {}).get("text")
    if path and isinstance(line_number, int):
        found.matches.append(_Match(path, line_number, line_text))
    if found.count >= limit:
        found.limit_reached = True


# ---------------------------------------------------------------------------------------------
# Python fallback (blocking: runs in a worker thread)


def _search_python(search: _Search, is_directory: bool) -> _Found:
    source = re.escape(search.pattern) if search.literal else search.pattern
    try:
        regex = re.compile(source, re.IGNORECASE if search.ignore_case else 0)
    except re.error as exc:
        raise FileToolError(f"regex parse error: {exc}", tool_name="grep") from exc
    keep = _glob_filter(search.glob, search.search_path)
    files: Iterator[str] = iter([search.search_path])
    if is_directory:
        entries = walk(search.search_path, custom_ignore=".rgignore", require_git=True)
        files = (path for path, is_dir in entries if not is_dir and keep(path))
    found = _Found()
    for path in files:
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            continue
        if b"\0" in data:
            continue  # binary, as ripgrep skips it
        lines = data.decode("utf-8", "replace").split("\n")
        if lines[-1] == "":
            lines.pop()  # the end of the last line, not a line of its own
        for index, line in enumerate(lines, start=1):
            if regex.search(line) is None:
                continue
            found.count += 1
            found.matches.append(_Match(path, index, line + "\n"))
            if found.count >= search.limit:
                found.limit_reached = True
                return found
    return found


def _glob_filter(glob: str | None, root: str) -> Callable[[str], bool]:
    if not glob:
        return lambda _path: True
    spec = pathspec.GitIgnoreSpec.from_lines([glob])
    negated = glob.startswith("!")

    def keep(path: str) -> bool:
        include = spec.check_file(os.path.relpath(path, root)).include
        return include is not False if negated else include is True

    return keep


# ---------------------------------------------------------------------------------------------
# Formatting (blocking: reads files for context lines)


def _format(
    found: _Found, search_path: str, is_directory: bool, context: float
) -> tuple[list[str], bool]:
    cache: dict[str, list[str]] = {}
    lines_truncated = False

    def display(path: str) -> str:
        if is_directory:
            relative = os.path.relpath(path, search_path)
            if relative and relative != "." and not relative.startswith(".."):
                return relative.replace(os.sep, "/")
        return os.path.basename(path)

    def file_lines(path: str) -> list[str]:
        if path not in cache:
            try:
                with open(path, "rb") as file:
                    content = file.read().decode("utf-8", "replace")
                cache[path] = content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            except OSError:
                cache[path] = []
        return cache[path]

    def cut(text: str) -> str:
        nonlocal lines_truncated
        kept, was_cut = truncate_line(text)
        lines_truncated = lines_truncated or was_cut
        return kept

    output: list[str] = []
    for match in found.matches:
        shown = display(match.path)
        if context == 0 and match.line_text is not None:
            text = match.line_text.replace("\r\n", "\n").replace("\r", "")
            text = text.removesuffix("\n")
            output.append(f"{shown}:{match.line_number}: {cut(text)}")
            continue
        lines = file_lines(match.path)
        if not lines:
            output.append(f"{shown}:{match.line_number}: (unable to read file)")
            continue
        start: float = max(1, match.line_number - context) if context > 0 else match.line_number
        end: float = min(len(lines), match.line_number + context) if context > 0 else start
        current = start
        while current <= end:
            index = int(current) - 1
            # A fractional context makes JavaScript index with a fraction, which reads nothing.
            text = lines[index] if current == int(current) and 0 <= index < len(lines) else ""
            text = cut(text.replace("\r", ""))
            if current == match.line_number:
                output.append(f"{shown}:{js_number(current)}: {text}")
            else:
                output.append(f"{shown}-{js_number(current)}- {text}")
            current += 1
    return output, lines_truncated


@attrs.frozen(kw_only=True, eq=False)
class GrepTool(AgentTool):
    """pi's ``grep`` tool: matching lines under a directory or in a file."""

    cwd: str
    """Directory that relative paths are resolved against."""
    rg_path: str | None = attrs.field(factory=find_rg)
    """The ripgrep binary; ``None`` searches in Python."""
    name: str = "grep"
    label: str = "grep"
    description: str = GREP_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(GREP_PARAMETERS))

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Search; see the module docstring for the output."""
        search_path = resolve_to_cwd(params.get("path") or ".", self.cwd)
        try:
            is_directory = await run_sync(_is_directory, search_path)
        except OSError as exc:
            raise FileToolError(
                f"Path not found: {search_path}", tool_name="grep", path=search_path
            ) from exc
        raw_context = params.get("context")
        context: float = raw_context if raw_context and raw_context > 0 else 0
        limit = params.get("limit")
        effective_limit = max(1, DEFAULT_GREP_LIMIT if limit is None else limit)
        search = _Search(
            pattern=params["pattern"],
            search_path=search_path,
            glob=params.get("glob") or None,
            ignore_case=bool(params.get("ignoreCase")),
            literal=bool(params.get("literal")),
            limit=effective_limit,
        )
        if self.rg_path is not None:
            found = await _search_rg(self.rg_path, search)
        else:
            found = await run_sync(_search_python, search, is_directory)
        if found.count == 0:
            return text_result("No matches found")
        lines, lines_truncated = await run_sync(_format, found, search_path, is_directory, context)
        truncation = truncate_head("\n".join(lines), max_lines=JS_MAX_SAFE_INTEGER)
        text = truncation.content
        details: dict[str, Any] = {}
        notices: list[str] = []
        if found.limit_reached:
            notices.append(
                f"{js_number(effective_limit)} matches limit reached. "
                f"Use limit={js_number(effective_limit * 2)} for more, or refine pattern"
            )
            details["matchLimitReached"] = effective_limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.to_details()
        if lines_truncated:
            notices.append(
                f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. "
                "Use read tool to see full lines"
            )
            details["linesTruncated"] = True
        if notices:
            text += f"\n\n[{'. '.join(notices)}]"
        return AgentToolResult(content=(TextContent(text=text),), details=details or None)


def _is_directory(path: str) -> bool:
    # statSync as pi: follows links, raises for a missing path.
    return stat.S_ISDIR(os.stat(path).st_mode)


def create_grep_tool(cwd: str) -> GrepTool:
    """Return a ``grep`` tool for ``cwd`` (pi's ``createGrepTool``)."""
    return GrepTool(cwd=cwd)
