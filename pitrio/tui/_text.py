"""Measuring, cutting and wrapping text that holds ANSI escape sequences.

Every component renders lines that may carry SGR (colour) sequences; the renderer and the
components need their *visible* width (wide characters count two cells, escapes none) and
ways to cut them to a width without breaking an escape or leaving a colour open.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from wcwidth import wcwidth

__all__ = [
    "RESET",
    "char_width",
    "strip_ansi",
    "truncate",
    "visible_width",
    "wrap",
]

RESET: Final = "\x1b[0m"
_ANSI: Final = re.compile(r"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_SGR: Final = re.compile(r"\x1b\[[0-9;:]*m")


@lru_cache(maxsize=4096)
def char_width(char: str) -> int:
    """Cells ``char`` takes (control characters and combining marks: 0)."""
    width = wcwidth(char)
    return width if width > 0 else 0


def strip_ansi(text: str) -> str:
    """``text`` without escape sequences."""
    return _ANSI.sub("", text)


def visible_width(text: str) -> int:
    """Cells ``text`` takes on one line of a terminal."""
    plain = strip_ansi(text) if "\x1b" in text else text
    if plain.isascii():
        return len(plain) if plain.isprintable() else sum(1 for c in plain if c >= " ")
    return sum(char_width(c) for c in plain)


def _tokens(text: str) -> list[str]:
    """``text`` split into escape sequences and single characters."""
    out: list[str] = []
    pos = 0
    for match in _ANSI.finditer(text):
        out.extend(text[pos : match.start()])
        out.append(match.group())
        pos = match.end()
    out.extend(text[pos:])
    return out


def truncate(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` cells (with ``ellipsis`` when cut); escapes are kept
    and a reset closes the line when it had any."""
    if visible_width(text) <= width:
        return text
    room = max(0, width - visible_width(ellipsis))
    out: list[str] = []
    used = 0
    for token in _tokens(text):
        if token.startswith("\x1b"):
            out.append(token)
            continue
        w = char_width(token)
        if used + w > room:
            break
        out.append(token)
        used += w
    tail = RESET if "\x1b" in text else ""
    return "".join(out) + tail + (ellipsis if width >= visible_width(ellipsis) else "")


def wrap(text: str, width: int) -> list[str]:
    """``text`` (one paragraph, no newlines) wrapped to ``width`` cells, breaking at spaces
    when it can and inside words when it must. The SGR state open at a break is closed at the
    end of the line and opened again at the start of the next."""
    if width <= 0:
        return [text]
    if visible_width(text) <= width:
        return [text]
    lines: list[str] = []
    line: list[str] = []
    used = 0
    active: list[str] = []  # SGR sequences in effect
    last_space = -1  # index in `line` after the last space
    space_used = 0
    for token in _tokens(text):
        if token.startswith("\x1b"):
            line.append(token)
            if _SGR.fullmatch(token):
                active = [] if token in (RESET, "\x1b[m") else [*active, token]
            continue
        w = char_width(token)
        if used + w > width:
            if token == " ":
                lines.append(_close(line))
                line, used, last_space = list(active), 0, -1
                continue
            if last_space > 0 and space_used < width:
                head, rest = line[:last_space], line[last_space:]
                lines.append(_close(head))
                prefix = _open(head)
                line = [*prefix, *rest]
                used -= space_used
            else:
                lines.append(_close(line))
                line, used = list(active), 0
            last_space = -1
        line.append(token)
        used += w
        if token == " ":
            last_space, space_used = len(line), used
    lines.append("".join(line))
    return lines


def _close(tokens: list[str]) -> str:
    text = "".join(tokens).rstrip(" ")
    return text + RESET if "\x1b[" in text else text


def _open(tokens: list[str]) -> list[str]:
    active: list[str] = []
    for token in tokens:
        if _SGR.fullmatch(token):
            active = [] if token in (RESET, "\x1b[m") else [*active, token]
    return active
