"""Markdown to terminal lines with Rich, incrementally for a streaming answer.

:class:`MarkdownView` splits its text into top-level blocks (markdown-it's block parse, the
parser Rich uses). A block followed by a blank line and by another block can no longer change
as text is appended: it is *finished*, rendered once per width and cached. Only the text after
the last finished block (the streaming block) is parsed and rendered again on each frame, so
the cost of a frame does not grow with the length of the answer.
"""

from __future__ import annotations

import io
from typing import Final

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Heading, Markdown
from rich.theme import Theme as RichTheme

from pitrio.tui._theme import Theme

__all__ = ["MarkdownRenderer", "MarkdownView"]

_PARSER: Final = MarkdownIt("commonmark").enable("table").enable("strikethrough")


class _Heading(Heading):
    """Headings on the left, as pi draws them (Rich centres the first level)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        yield text


class _Markdown(Markdown):
    elements = {**Markdown.elements, "heading_open": _Heading}


class MarkdownRenderer:
    """Renders Markdown source to lines with a theme's colours (one per theme)."""

    def __init__(self, theme: Theme) -> None:
        self.theme = theme
        styles: dict[str, str] = {}
        for rich_name, token in (
            ("markdown.h1", "mdHeading"),
            ("markdown.h2", "mdHeading"),
            ("markdown.h3", "mdHeading"),
            ("markdown.h4", "mdHeading"),
            ("markdown.h5", "mdHeading"),
            ("markdown.h6", "mdHeading"),
            ("markdown.link", "mdLink"),
            ("markdown.link_url", "mdLinkUrl"),
            ("markdown.code", "mdCode"),
            ("markdown.block_quote", "mdQuote"),
            ("markdown.hr", "mdHr"),
            ("markdown.item.bullet", "mdListBullet"),
            ("markdown.item.number", "mdListBullet"),
        ):
            colour = theme.hex(token)
            bold = "bold " if rich_name.startswith("markdown.h") else ""
            styles[rich_name] = f"{bold}{colour}" if colour else bold.strip() or "none"
        self._rich_theme = RichTheme(styles)
        self._code_theme = "friendly" if theme.is_light else "monokai"
        self._consoles: dict[int, tuple[Console, io.StringIO]] = {}

    def render(self, source: str, width: int) -> list[str]:
        """``source`` as lines of at most ``width`` cells (no trailing blank lines)."""
        if not source.strip():
            return []
        console, buffer = self._console(width)
        buffer.seek(0)
        buffer.truncate()
        console.print(
            # No OSC 8 hyperlinks: Rich gives each a new random id, so the same text would
            # render differently each time (and the renderer would redraw it).
            _Markdown(
                source,
                code_theme=self._code_theme,
                inline_code_theme=self._code_theme,
                hyperlinks=False,
            )
        )
        lines = buffer.getvalue().split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        return [line.rstrip(" ") if "\x1b" not in line else line for line in lines]

    def _console(self, width: int) -> tuple[Console, io.StringIO]:
        found = self._consoles.get(width)
        if found is None:
            buffer = io.StringIO()
            console = Console(
                file=buffer,
                width=width,
                force_terminal=True,
                color_system="truecolor",
                theme=self._rich_theme,
                legacy_windows=False,
                emoji=False,
                highlight=False,
            )
            found = self._consoles[width] = (console, buffer)
        return found


def finished_prefix(text: str) -> int:
    """How many characters at the start of ``text`` are whole blocks that appending text can
    no longer change (0 when none)."""
    tokens = _PARSER.parse(text)
    starts = [t.map for t in tokens if t.level == 0 and t.nesting >= 0 and t.map is not None]
    starts = [m for m in starts if m is not None]
    if len(starts) < 2:
        return 0
    last_start, previous_end = starts[-1][0], starts[-2][1]
    if last_start <= previous_end:
        return 0  # no blank line between: the last block may still join the previous one
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[:last_start])


class MarkdownView:
    """A Markdown text that may grow (streaming), rendered with finished blocks cached."""

    def __init__(self, renderer: MarkdownRenderer, text: str = "") -> None:
        self._renderer = renderer
        self._text = ""
        self._finished: list[str] = []  # sources of finished blocks (groups of blocks)
        self._finished_len = 0
        self._cache: dict[tuple[int, int], list[str]] = {}
        self._tail_cache: tuple[str, int, list[str]] | None = None
        self.set_text(text)

    @property
    def text(self) -> str:
        return self._text

    def set_text(self, text: str) -> None:
        """Show ``text`` (usually the old text with more appended)."""
        if text == self._text:
            return
        if not text.startswith(self._text[: self._finished_len]):
            self._finished, self._finished_len, self._cache = [], 0, {}
        self._text = text
        tail = text[self._finished_len :]
        cut = finished_prefix(tail) if "\n\n" in tail else 0
        if cut:
            self._finished.append(tail[:cut])
            self._finished_len += cut

    def render(self, width: int) -> list[str]:
        lines: list[str] = []
        for index, source in enumerate(self._finished):
            cached = self._cache.get((index, width))
            if cached is None:
                cached = self._cache[(index, width)] = self._renderer.render(source, width)
            if cached:
                if lines:
                    lines.append("")
                lines.extend(cached)
        tail = self._text[self._finished_len :]
        if tail.strip():
            if self._tail_cache is not None and self._tail_cache[:2] == (tail, width):
                rendered = self._tail_cache[2]
            else:
                rendered = self._renderer.render(tail, width)
                self._tail_cache = (tail, width, rendered)
            if lines and rendered:
                lines.append("")
            lines.extend(rendered)
        return lines
