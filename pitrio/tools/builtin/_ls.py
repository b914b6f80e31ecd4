"""The ``ls`` tool (pi 0.73.1 ``core/tools/ls.ts``): list one directory.

Entries are sorted case-insensitively, directories get a ``/``, dotfiles are included, and the
listing stops at ``limit`` entries (500 by default) and 50KB, with a note saying which.

pi sorts with ``a.toLowerCase().localeCompare(b.toLowerCase())``, ICU's root collation, in
which punctuation sorts before digits and letters (``_`` before ``-`` before ``.``) and accents
count only after the letters. :func:`collation_key` reproduces that order for ASCII names and
approximates it for others (base letter first, then the accents, then the code points).
"""

from __future__ import annotations

import os
import stat
import unicodedata
from typing import Any, Final

import attrs

from pitrio.tools._result import AgentToolResult, ToolUpdateCallback, text_result
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._io import error_code, node_error_message, run_sync
from pitrio.tools.builtin._paths import resolve_to_cwd
from pitrio.tools.builtin._read import js_number
from pitrio.tools.builtin._truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

DEFAULT_LS_LIMIT: Final = 500
"""Entries ``ls`` lists unless told otherwise (pi's ``DEFAULT_LIMIT``)."""
_JS_MAX_SAFE_INTEGER: Final = 2**53 - 1

LS_DESCRIPTION: Final = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for "
    "directories. Includes dotfiles. Output is truncated to "
    f"{DEFAULT_LS_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
)

LS_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Directory to list (default: current directory)",
        },
        "limit": {
            "type": "number",
            "description": "Maximum number of entries to return (default: 500)",
        },
    },
}

# ICU root collation order of printable ASCII after lowercasing: spaces and punctuation, then
# symbols, then digits, then letters (checked against Node's localeCompare).
_ASCII_ORDER: Final = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_ASCII_WEIGHT: Final = {ch: index + 1 for index, ch in enumerate(_ASCII_ORDER)}


def collation_key(name: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Return a sort key that orders lowercased names as ICU's root collation does."""
    primary: list[int] = []
    secondary: list[int] = []
    for ch in name:
        decomposed = unicodedata.normalize("NFD", ch)
        base = decomposed[0]
        weight = _ASCII_WEIGHT.get(base)
        primary.append(weight if weight is not None else 0x1000 + ord(base))
        secondary.append(sum(ord(mark) for mark in decomposed[1:]))
    return tuple(primary), tuple(secondary), tuple(ord(ch) for ch in name)


def _list(dir_path: str, limit: int) -> tuple[list[str], bool]:
    """List ``dir_path`` as pi does (runs in a worker thread)."""
    if not os.path.exists(dir_path):
        raise FileToolError(f"Path not found: {dir_path}", tool_name="ls", path=dir_path)
    if not os.path.isdir(dir_path):
        raise FileToolError(f"Not a directory: {dir_path}", tool_name="ls", path=dir_path)
    try:
        # libuv returns entries in strcmp order; the stable sort below keeps it between names
        # that compare equal.
        entries = sorted(os.listdir(dir_path), key=lambda n: n.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise FileToolError(
            f"Cannot read directory: {node_error_message(exc, 'scandir', dir_path)}",
            tool_name="ls",
            path=dir_path,
            code=error_code(exc),
        ) from exc
    entries.sort(key=lambda n: collation_key(n.lower()))
    results: list[str] = []
    limit_reached = False
    for entry in entries:
        if len(results) >= limit:
            limit_reached = True
            break
        try:
            mode = os.stat(os.path.join(dir_path, entry)).st_mode
        except OSError:
            continue  # pi skips what it cannot stat, e.g. a dangling symlink
        results.append(entry + ("/" if stat.S_ISDIR(mode) else ""))
    return results, limit_reached


@attrs.frozen(kw_only=True, eq=False)
class LsTool(AgentTool):
    """pi's ``ls`` tool, listing paths relative to :attr:`cwd`."""

    cwd: str
    """Directory that relative paths are resolved against."""
    name: str = "ls"
    label: str = "ls"
    description: str = LS_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(LS_PARAMETERS))
    execution_mode: None = None

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """List ``params["path"]`` (default ``.``)."""
        dir_path = resolve_to_cwd(params.get("path") or ".", self.cwd)
        raw_limit = params.get("limit")
        limit = DEFAULT_LS_LIMIT if raw_limit is None else raw_limit
        results, limit_reached = await run_sync(_list, dir_path, limit)
        if not results:
            return text_result("(empty directory)")
        truncation = truncate_head("\n".join(results), max_lines=_JS_MAX_SAFE_INTEGER)
        output = truncation.content
        details: dict[str, Any] = {}
        notices: list[str] = []
        if limit_reached:
            shown, doubled = js_number(limit), js_number(limit * 2)
            notices.append(f"{shown} entries limit reached. Use limit={doubled} for more")
            details["entryLimitReached"] = limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.to_details()
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        return text_result(output, details or None)


def create_ls_tool(cwd: str) -> LsTool:
    """Return an ``ls`` tool for ``cwd`` (pi's ``createLsTool``)."""
    return LsTool(cwd=cwd)
