"""The components of the chat screen: messages, tools, notices, the header and the footer.

Each renders ``width -> lines`` and caches its lines per width until its content changes
(a finished message renders once). Views of a streaming message hold the message object and
read it when rendered, so a burst of deltas between two frames costs one render.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Final

from pitrio.providers import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
)
from pitrio.tui._markdown import MarkdownRenderer, MarkdownView
from pitrio.tui._text import truncate, visible_width, wrap
from pitrio.tui._theme import Theme

__all__ = [
    "AssistantView",
    "BashView",
    "Lines",
    "NoticeView",
    "Spacer",
    "SummaryView",
    "ToolView",
    "UserView",
    "format_tokens",
    "wrap_text",
]

TOOL_PREVIEW_LINES: Final = 5
"""Lines of tool output shown while collapsed (Ctrl+O expands)."""
SPINNER: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def wrap_text(text: str, width: int) -> list[str]:
    """Plain or styled text wrapped to ``width``, paragraph by paragraph."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(wrap(paragraph.replace("\t", "    "), max(1, width)))
    return lines


def _pad(line: str, width: int) -> str:
    return line + " " * max(0, width - visible_width(line))


def format_tokens(count: float) -> str:
    """pi's compact token counts: 999, 1.2k, 45k, 1.3M."""
    if count < 1000:
        return str(int(count))
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M"


class Spacer:
    def __init__(self, lines: int = 1) -> None:
        self.lines = lines

    def render(self, width: int) -> list[str]:
        return [""] * self.lines


class Lines:
    """Lines computed by a function (re-run each frame: for small, changing things)."""

    def __init__(self, make: Callable[[int], list[str]]) -> None:
        self._make = make

    def render(self, width: int) -> list[str]:
        return self._make(width)


class _Cached:
    """Base of views whose lines depend only on their state and the width."""

    def __init__(self) -> None:
        self._cache: tuple[int, list[str]] | None = None

    def invalidate(self) -> None:
        self._cache = None

    def render(self, width: int) -> list[str]:
        if self._cache is None or self._cache[0] != width:
            self._cache = (width, self._render(width))
        return self._cache[1]

    def _render(self, width: int) -> list[str]:
        raise NotImplementedError


class UserView(_Cached):
    """A user message on its background, with a blank line above."""

    def __init__(self, theme: Theme, text: str, images: int = 0) -> None:
        super().__init__()
        self.theme = theme
        self.text = text + (f"\n[{images} image(s)]" if images else "")

    def _render(self, width: int) -> list[str]:
        inner = max(1, width - 2)
        rows = [" " + _pad(line, inner) + " " for line in wrap_text(self.text, inner)]
        return ["", *(self.theme.bg("userMessageBg", row) for row in rows)]


class NoticeView(_Cached):
    """A line of status, warning or error text in the chat."""

    def __init__(self, theme: Theme, text: str, token: str = "muted") -> None:
        super().__init__()
        self.theme = theme
        self.text = text
        self.token = token

    def _render(self, width: int) -> list[str]:
        return ["", *(self.theme.fg(self.token, line) for line in wrap_text(self.text, width))]


class SummaryView(_Cached):
    """A compaction or branch summary (the label, then the text when expanded)."""

    def __init__(self, theme: Theme, label: str, summary: str) -> None:
        super().__init__()
        self.theme = theme
        self.label = label
        self.summary = summary
        self.expanded = False

    def _render(self, width: int) -> list[str]:
        inner = max(1, width - 2)
        title = self.theme.fg("customMessageLabel", self.theme.bold(self.label))
        rows = [title]
        if self.expanded:
            rows += wrap_text(self.summary, inner)
        else:
            rows.append(self.theme.fg("muted", "(ctrl+o to expand)"))
        return ["", *(self.theme.bg("customMessageBg", " " + _pad(r, inner) + " ") for r in rows)]


class AssistantView:
    """An assistant message: thinking (collapsed unless shown), text as Markdown, and its
    error or abort notice. Tool calls are shown by their own :class:`ToolView`."""

    def __init__(self, theme: Theme, markdown: MarkdownRenderer, message: Any) -> None:
        self.theme = theme
        self._markdown = markdown
        self.message = message
        self.show_thinking = False
        self._views: dict[int, MarkdownView] = {}
        self._final: tuple[int, bool, list[str]] | None = None
        self.done = isinstance(message, AssistantMessage)

    def update(self, message: Any) -> None:
        self.message = message
        self._final = None
        self.done = isinstance(message, AssistantMessage)

    def invalidate(self) -> None:
        self._final = None

    def render(self, width: int) -> list[str]:
        if self._final is not None and self._final[:2] == (width, self.show_thinking):
            return self._final[2]
        lines = self._render(width)
        if self.done:
            self._final = (width, self.show_thinking, lines)
        return lines

    def _render(self, width: int) -> list[str]:
        theme = self.theme
        message = self.message
        lines: list[str] = []
        inner = max(1, width - 1)
        for index, block in enumerate(message.content):
            if isinstance(block, TextContent):
                if not block.text.strip():
                    continue
                view = self._views.get(index)
                if view is None:
                    view = self._views[index] = MarkdownView(self._markdown)
                view.set_text(block.text.strip())
                lines.append("")
                lines.extend(" " + line for line in view.render(inner))
            elif isinstance(block, ThinkingContent):
                if not block.thinking.strip():
                    continue
                lines.append("")
                if self.show_thinking:
                    for line in wrap_text(block.thinking.strip(), inner):
                        lines.append(" " + theme.fg("thinkingText", theme.italic(line)))
                else:
                    lines.append(" " + theme.fg("thinkingText", theme.italic("Thinking...")))
        stop = getattr(message, "stop_reason", None) if self.done else None
        if stop == "aborted":
            lines += ["", " " + theme.fg("error", "Operation aborted")]
        elif stop == "error":
            error = getattr(message, "error_message", None) or "Unknown error"
            lines.append("")
            lines.extend(
                " " + theme.fg("error", row) for row in wrap_text(f"Error: {error}", inner)
            )
        return lines


def _tool_title(name: str, args: Any) -> str:
    if not isinstance(args, dict):
        return name
    if name == "bash" and "command" in args:
        return f"$ {args['command']}"
    path = args.get("path") or args.get("file_path")
    if name in ("read", "write", "edit", "ls") and path:
        extra = ""
        if name == "read" and (args.get("offset") or args.get("limit")):
            start = int(args.get("offset") or 1)
            end = f"{start + int(args['limit']) - 1}" if args.get("limit") else ""
            extra = f":{start}-{end}"
        return f"{name} {path}{extra}"
    if name in ("grep", "find") and "pattern" in args:
        where = f" in {args['path']}" if args.get("path") else ""
        return f"{name} {args['pattern']}{where}"
    try:
        return f"{name} {json.dumps(args, ensure_ascii=False)}"
    except (TypeError, ValueError):
        return name


def _result_text(result: Any) -> str:
    content = getattr(result, "content", None)
    if content is None and isinstance(result, dict):
        content = result.get("content")
    parts: list[str] = []
    for block in content or ():
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}]")
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


class ToolView(_Cached):
    """A tool call: its title (the arguments), then its output, collapsed to the last
    :data:`TOOL_PREVIEW_LINES` lines unless expanded; the background says pending, done or
    failed."""

    def __init__(self, theme: Theme, call_id: str, name: str, args: Any) -> None:
        super().__init__()
        self.theme = theme
        self.call_id = call_id
        self.name = name
        self.args = args
        self.output = ""
        self.status = "pending"  # "pending", "running", "success", "error"
        self.expanded = False

    def set_args(self, args: Any) -> None:
        if args != self.args:
            self.args = args
            self.invalidate()

    def set_result(self, result: Any, *, is_error: bool | None, partial: bool = False) -> None:
        self.output = _result_text(result)
        if not partial:
            self.status = "error" if is_error else "success"
        else:
            self.status = "running"
        self.invalidate()

    def _render(self, width: int) -> list[str]:
        theme = self.theme
        bg = {"error": "toolErrorBg", "success": "toolSuccessBg"}.get(self.status, "toolPendingBg")
        inner = max(1, width - 2)
        rows = [theme.bold(line) for line in wrap_text(_tool_title(self.name, self.args), inner)]
        if self.output.strip():
            out_lines = self.output.rstrip("\n").split("\n")
            shown = out_lines if self.expanded else out_lines[-TOOL_PREVIEW_LINES:]
            rows.append("")
            if len(shown) < len(out_lines):
                hidden = len(out_lines) - len(shown)
                note = f"... ({hidden} earlier lines, ctrl+o to expand)"
                rows.append(theme.fg("muted", note))
            token = "error" if self.status == "error" else "toolOutput"
            for line in shown:
                for row in wrap_text(line, inner) if self.expanded else [truncate(line, inner)]:
                    rows.append(theme.fg(token, row))
        return ["", *(theme.bg(bg, " " + _pad(row, inner) + " ") for row in rows)]


class BashView(_Cached):
    """A ``!cmd`` the user ran: the command, then its output (collapsed as a tool's)."""

    def __init__(self, theme: Theme, command: str, *, excluded: bool) -> None:
        super().__init__()
        self.theme = theme
        self.command = command
        self.excluded = excluded
        self.output = ""
        self.exit_code: int | None = None
        self.cancelled = False
        self.done = False
        self.expanded = False

    def append(self, chunk: str) -> None:
        self.output += chunk
        self.invalidate()

    def finish(self, output: str, exit_code: int | None, *, cancelled: bool) -> None:
        self.output, self.exit_code, self.cancelled, self.done = output, exit_code, cancelled, True
        self.invalidate()

    def _render(self, width: int) -> list[str]:
        theme = self.theme
        inner = max(1, width - 2)
        prefix = "!!" if self.excluded else "!"
        rows = [theme.fg("bashMode", theme.bold(f"{prefix} {self.command}"))]
        out_lines = self.output.rstrip("\n").split("\n") if self.output.strip() else []
        shown = out_lines if self.expanded else out_lines[-TOOL_PREVIEW_LINES:]
        if len(shown) < len(out_lines):
            note = f"... ({len(out_lines) - len(shown)} earlier lines, ctrl+o to expand)"
            rows.append(theme.fg("muted", note))
        rows += [theme.fg("toolOutput", truncate(line, inner)) for line in shown]
        if self.cancelled:
            rows.append(theme.fg("warning", "(cancelled)"))
        elif self.done and self.exit_code not in (0, None):
            rows.append(theme.fg("error", f"(exit {self.exit_code})"))
        elif not self.done:
            rows.append(theme.fg("muted", "running... (esc to cancel)"))
        return ["", *(" " + row for row in rows)]


def short_cwd(cwd: str) -> str:
    home = os.path.expanduser("~")
    if home and home != "/" and (cwd == home or cwd.startswith(home + os.sep)):
        return "~" + cwd[len(home) :]
    return cwd


def header_lines(
    theme: Theme, version: str, keys: Sequence[tuple[str, str]], loaded: Sequence[tuple[str, str]]
) -> list[str]:
    """The start-up header: name and version, the main keys, then what was loaded."""
    lines = [theme.fg("accent", theme.bold("pitrio")) + theme.fg("dim", f" v{version}")]
    lines += [theme.fg("dim", f"{key}") + theme.fg("muted", f" {what}") for key, what in keys]
    for label, items in loaded:
        lines += ["", theme.fg("mdHeading", f"[{label}]"), theme.fg("dim", f"  {items}")]
    return lines
