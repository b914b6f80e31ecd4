"""The ``read`` tool (pi 0.73.1 ``core/tools/read.ts``).

Text comes back from line ``offset`` (1-based) for at most ``limit`` lines, then cut to
:data:`~pitrio.tools.builtin._truncate.DEFAULT_MAX_LINES` lines or
:data:`~pitrio.tools.builtin._truncate.DEFAULT_MAX_BYTES` bytes with a note that says which
``offset`` continues. Bytes that are not UTF-8 become U+FFFD, as Node's decoder makes them: pi
has no separate binary check. PNG, JPEG, GIF and WebP files come back as image content, rescaled
to pi's limits (see :mod:`pitrio.tools.builtin._images`).
"""

from __future__ import annotations

import base64
import os
from typing import Any, Final

import attrs

from pitrio.providers import ImageContent, TextContent
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._images import (
    SNIFF_BYTES,
    detect_image_mime_type,
    dimension_note,
    fit_image,
)
from pitrio.tools.builtin._io import fs_error, run_sync
from pitrio.tools.builtin._paths import resolve_read_path
from pitrio.tools.builtin._truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    format_size,
    truncate_head,
    utf8_len,
)

READ_DESCRIPTION: Final = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images "
    f"are sent as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines "
    f"or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Use offset/limit for large "
    "files. When you need the full file, continue with offset until complete."
)

READ_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to read (relative or absolute)",
        },
        "offset": {
            "type": "number",
            "description": "Line number to start reading from (1-indexed)",
        },
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
    "required": ["path"],
}


def js_number(value: float) -> str:
    """Format a number as JavaScript's ``String(n)`` does for the values a tool meets."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@attrs.frozen(kw_only=True)
class _Text:
    text: str


@attrs.frozen(kw_only=True)
class _Image:
    mime_type: str
    data: bytes


def _load(absolute_path: str) -> _Text | _Image:
    """Read a file as pi does, raising Node's errors (runs in a worker thread)."""
    if not os.access(absolute_path, os.R_OK):
        try:
            os.stat(absolute_path)
        except OSError as exc:
            raise fs_error("read", exc, "access", absolute_path) from exc
        raise fs_error("read", PermissionError(13, "denied"), "access", absolute_path)
    try:
        with open(absolute_path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
            mime_type = detect_image_mime_type(head)
            data = head + handle.read()
    except IsADirectoryError as exc:
        # Node opens a directory fine and fails on the first read of it.
        raise fs_error("read", exc, "read", None) from exc
    except OSError as exc:
        raise fs_error("read", exc, "open", absolute_path) from exc
    if mime_type is not None:
        return _Image(mime_type=mime_type, data=data)
    return _Text(text=data.decode("utf-8", "replace"))


def _image_result(data: str, mime_type: str, note: str | None) -> AgentToolResult:
    text = f"Read image file [{mime_type}]"
    if note is not None:
        text += f"\n{note}"
    return AgentToolResult(
        content=(TextContent(text=text), ImageContent(data=data, mime_type=mime_type)),
        details=None,
    )


def _omitted_image_result(mime_type: str) -> AgentToolResult:
    """pi's answer for an image it cannot decode or get under the size limit."""
    text = (
        f"Read image file [{mime_type}]\n"
        "[Image omitted: could not be resized below the inline image size limit.]"
    )
    return AgentToolResult(content=(TextContent(text=text),), details=None)


def _text_result(
    text: str, path: str, offset: float | None, limit: float | None
) -> AgentToolResult:
    all_lines = text.split("\n")
    total = len(all_lines)
    start = max(0, int(offset) - 1) if offset else 0
    start_display = start + 1
    if start >= total:
        shown = js_number(offset) if offset is not None else "undefined"
        raise FileToolError(
            f"Offset {shown} is beyond end of file ({total} lines total)",
            tool_name="read",
            path=path,
        )
    user_limited: int | None = None
    if limit is not None:
        end = min(start + int(limit), total)
        selected = "\n".join(all_lines[start:end])
        user_limited = end - start
    else:
        selected = "\n".join(all_lines[start:])

    truncation = truncate_head(selected)
    details: dict[str, Any] | None = None
    if truncation.first_line_exceeds_limit:
        line_size = format_size(utf8_len(all_lines[start]))
        output = (
            f"[Line {start_display} is {line_size}, exceeds {format_size(DEFAULT_MAX_BYTES)} "
            f"limit. Use bash: sed -n '{start_display}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": truncation.to_details()}
    elif truncation.truncated:
        end_display = start_display + truncation.output_lines - 1
        next_offset = end_display + 1
        output = truncation.content
        if truncation.truncated_by == "lines":
            output += (
                f"\n\n[Showing lines {start_display}-{end_display} of {total}. "
                f"Use offset={next_offset} to continue.]"
            )
        else:
            output += (
                f"\n\n[Showing lines {start_display}-{end_display} of {total} "
                f"({format_size(DEFAULT_MAX_BYTES)} limit). Use offset={next_offset} to continue.]"
            )
        details = {"truncation": truncation.to_details()}
    elif user_limited is not None and start + user_limited < total:
        remaining = total - (start + user_limited)
        next_offset = start + user_limited + 1
        output = (
            f"{truncation.content}\n\n[{remaining} more lines in file. "
            f"Use offset={next_offset} to continue.]"
        )
    else:
        output = truncation.content
    return AgentToolResult(content=(TextContent(text=output),), details=details)


@attrs.frozen(kw_only=True, eq=False)
class ReadTool(AgentTool):
    """pi's ``read`` tool, reading paths relative to :attr:`cwd`."""

    cwd: str
    """Directory that relative paths are resolved against."""
    auto_resize_images: bool = True
    """Rescale images to pi's size limits (see :mod:`pitrio.tools.builtin._images`); when
    false, images are sent as they are, as pi's ``autoResizeImages: false``."""
    name: str = "read"
    label: str = "read"
    description: str = READ_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(READ_PARAMETERS))
    execution_mode: None = None

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Read the file at ``params["path"]``; see the module docstring."""
        path: str = params["path"]
        absolute = await run_sync(resolve_read_path, path, self.cwd)
        loaded = await run_sync(_load, absolute)
        if isinstance(loaded, _Image):
            if not self.auto_resize_images:
                encoded = base64.b64encode(loaded.data).decode("ascii")
                return _image_result(encoded, loaded.mime_type, None)
            # Decoding and encoding are CPU work; a worker thread keeps the Trio loop free.
            fitted = await run_sync(fit_image, loaded.data, loaded.mime_type)
            if fitted is None:
                return _omitted_image_result(loaded.mime_type)
            return _image_result(fitted.data, fitted.mime_type, dimension_note(fitted))
        return _text_result(loaded.text, path, params.get("offset"), params.get("limit"))


def create_read_tool(cwd: str, *, auto_resize_images: bool = True) -> ReadTool:
    """Return a ``read`` tool for ``cwd`` (pi's ``createReadTool``)."""
    return ReadTool(cwd=cwd, auto_resize_images=auto_resize_images)
