"""Components and the differential renderer (pi-tui's model, in the normal screen).

A :class:`Component` renders to a list of lines for a width (each line at most ``width``
cells, escapes allowed) and caches what it can. The :class:`Renderer` keeps what it last
wrote and turns the next render into the shortest write that makes the terminal show it:

* nothing changed: nothing is written;
* only lines were added at the end: they are printed (earlier output scrolls into the
  terminal's scrollback, where it stays);
* a line changed: the cursor goes up to the first changed line, the screen is cleared from
  there down and the rest is written again;
* the first changed line has already scrolled out of reach (above the top of the screen), or
  the width changed (every line wraps differently): everything is written again after
  clearing the screen and the scrollback.

Every write is one string wrapped in synchronized-output markers (``CSI ?2026h`` ...
``CSI ?2026l``), so a terminal that supports them shows a frame whole, never half drawn. The
hardware cursor stays hidden and is left on the last line written; components draw their own
cursor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Protocol

import attrs

from pitrio.tui._text import RESET, truncate, visible_width

__all__ = [
    "SYNC_END",
    "SYNC_START",
    "Component",
    "Container",
    "Frame",
    "Renderer",
]

SYNC_START: Final = "\x1b[?2026h"
SYNC_END: Final = "\x1b[?2026l"
CLEAR_ALL: Final = "\x1b[3J\x1b[2J\x1b[H"
FIT_CACHE: Final = 50_000
"""Lines whose fitted form is remembered (most lines are the same from frame to frame)."""
"""Clear the scrollback, the screen, and go home."""


class Component(Protocol):
    """Anything that renders to lines (pi's ``render(width) -> lines`` contract)."""

    def render(self, width: int) -> list[str]:
        """The component's lines at ``width`` cells (each line at most ``width`` wide)."""
        ...


class Container:
    """Children rendered one after the other."""

    def __init__(self, children: Iterable[Component] = ()) -> None:
        self.children: list[Component] = list(children)

    def add(self, child: Component) -> None:
        self.children.append(child)

    def remove(self, child: Component) -> None:
        if child in self.children:
            self.children.remove(child)

    def clear(self) -> None:
        self.children.clear()

    def render(self, width: int) -> list[str]:
        lines: list[str] = []
        for child in self.children:
            lines.extend(child.render(width))
        return lines


@attrs.frozen
class Frame:
    """What one render decided: the text to write (empty: nothing changed) and how."""

    data: str
    kind: str
    """``"none"``, ``"append"``, ``"partial"`` or ``"full"``."""
    first_changed: int


class Renderer:
    """Diffs each render against the last one written (module docstring).

    The renderer assumes it alone writes to the terminal between frames; after anything else
    wrote (a suspended process resumed, a shell command printed), call :meth:`reset` so the
    next frame is written in full.
    """

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._width = 0
        self._height = 0
        self._cursor = 0  # the line the cursor is on
        self._fresh = True
        self._fit_cache: dict[str, str] = {}
        self._fit_width = 0
        self.frames = 0
        self.full_frames = 0

    @property
    def lines(self) -> Sequence[str]:
        """The lines last written."""
        return self._lines

    def reset(self, *, clear: bool = True) -> None:
        """Forget what was written: the next frame is written in full (after clearing the
        screen and scrollback when ``clear``, else below the cursor's line)."""
        self._lines = []
        self._cursor = 0
        self._fresh = not clear
        self._width = 0 if clear else self._width

    def frame(self, lines: Sequence[str], width: int, height: int) -> Frame:
        """The write that shows ``lines`` on a ``width`` x ``height`` terminal; afterwards
        the renderer assumes it was written."""
        if width != self._fit_width or len(self._fit_cache) > FIT_CACHE:
            self._fit_cache, self._fit_width = {}, width
        cache = self._fit_cache
        fitted: list[str] = []
        for line in lines:
            done = cache.get(line)
            if done is None:
                done = cache[line] = _fit(line, width)
            fitted.append(done)
        lines = fitted
        previous = self._lines
        if self._fresh:
            self._fresh = False
            return self._commit(lines, width, height, "\r\n".join(lines), "append", 0)
        if width != self._width:
            return self._full(lines, width, height)
        first = _first_difference(previous, lines)
        if first == len(previous) == len(lines):
            self._height = height
            return Frame("", "none", first)
        top = max(0, len(previous) - height)  # the first line still on the screen
        if first < top or (lines and len(lines) <= top):
            # The change, or the new last line (the content shrank), is in the scrollback,
            # which the cursor cannot reach.
            return self._full(lines, width, height)
        parts: list[str] = []
        if first >= len(previous):
            if previous:
                parts.append("\r\n")
            parts.append("\r\n".join(lines[len(previous) :]))
            kind = "append"
        else:
            up = self._cursor - first
            if up > 0:
                parts.append(f"\x1b[{up}A")
            parts.append("\r\x1b[J")
            parts.append("\r\n".join(lines[first:]))
            if first == len(lines) and first > 0:
                parts.append("\x1b[1A")  # only lines were removed: back onto the last one
            kind = "partial"
        return self._commit(lines, width, height, "".join(parts), kind, first)

    def _full(self, lines: list[str], width: int, height: int) -> Frame:
        self.full_frames += 1
        return self._commit(lines, width, height, CLEAR_ALL + "\r\n".join(lines), "full", 0)

    def _commit(
        self, lines: list[str], width: int, height: int, body: str, kind: str, first: int
    ) -> Frame:
        self._lines = lines
        self._cursor = max(0, len(lines) - 1)
        self._width = width
        self._height = height
        self.frames += 1
        return Frame(SYNC_START + body + SYNC_END, kind, first)


def _fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` and, when styled, ended with a reset (styles never carry over
    to the next line, as pi-tui promises components)."""
    if visible_width(line) > width:
        line = truncate(line, width)
    return line + RESET if "\x1b[" in line and not line.endswith(RESET) else line


def _first_difference(old: Sequence[str], new: Sequence[str]) -> int:
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return index
    return min(len(old), len(new)) if len(old) != len(new) else len(old)
