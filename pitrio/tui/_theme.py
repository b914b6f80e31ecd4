"""Themes: pi's colour tokens (docs/themes.md) as terminal colours.

A theme maps each token (``accent``, ``border``, ``userMessageBg``, ``mdHeading`` ...) to a
colour: ``"#rrggbb"``, an xterm 256-colour index, the name of one of the theme's ``vars``, or
``""`` for the terminal's default. ``dark`` and ``light`` are built in; a custom theme is a
JSON file in pi's format (``{"name", "vars", "colors"}``), its missing tokens taken from the
built-in theme of the same brightness (``dark`` unless its name says ``light``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["BUILTIN_THEMES", "Theme", "ThemeError", "load_theme"]


class ThemeError(ValueError):
    """A theme file that cannot be read or names an unknown colour."""


_DARK: Final[dict[str, str | int]] = {
    "accent": "#7fb8b0",
    "border": "#6a8cff",
    "borderAccent": "#22d3ee",
    "borderMuted": "#4a4a4a",
    "success": "#a8c46a",
    "error": "#d96c6c",
    "warning": "#f0d000",
    "muted": "#8a8a8a",
    "dim": "#6a6a6a",
    "text": "",
    "thinkingText": "#8a8a8a",
    "selectedBg": "#383848",
    "userMessageBg": "#33343f",
    "userMessageText": "",
    "customMessageBg": "#2c2838",
    "customMessageText": "",
    "customMessageLabel": "#9a7ad0",
    "toolPendingBg": "#27272f",
    "toolSuccessBg": "#263026",
    "toolErrorBg": "#3a2727",
    "toolTitle": "",
    "toolOutput": "#8a8a8a",
    "mdHeading": "#eec57a",
    "mdLink": "#86a6c4",
    "mdLinkUrl": "#6a6a6a",
    "mdCode": "#7fb8b0",
    "mdCodeBlock": "#a8c46a",
    "mdCodeBlockBorder": "#8a8a8a",
    "mdQuote": "#8a8a8a",
    "mdQuoteBorder": "#8a8a8a",
    "mdHr": "#8a8a8a",
    "mdListBullet": "#7fb8b0",
    "toolDiffAdded": "#a8c46a",
    "toolDiffRemoved": "#d96c6c",
    "toolDiffContext": "#8a8a8a",
    "thinkingOff": "#4a4a4a",
    "thinkingMinimal": "#707070",
    "thinkingLow": "#5c86b0",
    "thinkingMedium": "#86a6c4",
    "thinkingHigh": "#b497c0",
    "thinkingXhigh": "#cf86e6",
    "bashMode": "#a8c46a",
}
_LIGHT: Final[dict[str, str | int]] = {
    **_DARK,
    "accent": "#2f7d74",
    "border": "#3a5fcf",
    "borderAccent": "#0e7490",
    "borderMuted": "#b0b0b0",
    "success": "#4d7a1a",
    "error": "#b02a2a",
    "warning": "#9a6a00",
    "muted": "#6a6a6a",
    "dim": "#8a8a8a",
    "thinkingText": "#6a6a6a",
    "selectedBg": "#dcdcec",
    "userMessageBg": "#e8e8ee",
    "customMessageBg": "#eee8f6",
    "toolPendingBg": "#eeeef4",
    "toolSuccessBg": "#e6f2e6",
    "toolErrorBg": "#f6e4e4",
    "toolOutput": "#5a5a5a",
    "mdHeading": "#8a5a00",
    "mdLink": "#2a5a9a",
    "mdCode": "#2f7d74",
    "mdCodeBlock": "#4d7a1a",
    "mdListBullet": "#2f7d74",
    "bashMode": "#4d7a1a",
}
BUILTIN_THEMES: Final = {"dark": _DARK, "light": _LIGHT}


def _rgb(
    value: str | int, vars: Mapping[str, Any], token: str
) -> tuple[int, int, int] | int | None:
    seen = 0
    while isinstance(value, str) and value in vars and seen < 16:
        value, seen = vars[value], seen + 1
    if value == "":
        return None
    if isinstance(value, int) and 0 <= value <= 255:
        return value
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)
        except ValueError:
            pass
    raise ThemeError(f"invalid colour for {token}: {value!r}")


def _sgr(colour: tuple[int, int, int] | int | None, *, background: bool) -> str:
    if colour is None:
        return ""
    if isinstance(colour, int):
        return f"\x1b[{48 if background else 38};5;{colour}m"
    r, g, b = colour
    return f"\x1b[{48 if background else 38};2;{r};{g};{b}m"


class Theme:
    """Colour tokens turned into escape sequences."""

    def __init__(
        self, name: str, colors: Mapping[str, str | int], vars: Mapping[str, Any] | None = None
    ) -> None:
        self.name = name
        self.is_light = "light" in name.lower()
        base = BUILTIN_THEMES["light" if self.is_light else "dark"]
        merged = {**base, **colors}
        self._fg = {k: _sgr(_rgb(v, vars or {}, k), background=False) for k, v in merged.items()}
        self._bg = {k: _sgr(_rgb(v, vars or {}, k), background=True) for k, v in merged.items()}

    @classmethod
    def builtin(cls, name: str) -> Theme:
        return cls(name, BUILTIN_THEMES[name])

    def fg(self, token: str, text: str) -> str:
        """``text`` in the token's colour (the foreground reset after it)."""
        code = self._fg.get(token, "")
        return f"{code}{text}\x1b[39m" if code else text

    def bg(self, token: str, text: str) -> str:
        code = self._bg.get(token, "")
        return f"{code}{text}\x1b[49m" if code else text

    def fg_code(self, token: str) -> str:
        return self._fg.get(token, "")

    def bg_code(self, token: str) -> str:
        return self._bg.get(token, "")

    def hex(self, token: str) -> str | None:
        """The token's colour as ``#rrggbb`` (for Rich), ``None`` for the default."""
        code = self._fg.get(token, "")
        if ";2;" not in code:
            return None
        r, g, b = (int(part) for part in code[:-1].split(";")[2:5])
        return f"#{r:02x}{g:02x}{b:02x}"

    @staticmethod
    def bold(text: str) -> str:
        return f"\x1b[1m{text}\x1b[22m"

    @staticmethod
    def italic(text: str) -> str:
        return f"\x1b[3m{text}\x1b[23m"

    @staticmethod
    def inverse(text: str) -> str:
        return f"\x1b[7m{text}\x1b[27m"


def load_theme(name_or_path: str, search_dirs: tuple[str, ...] = ()) -> Theme:
    """The built-in theme ``name_or_path``, or a theme JSON file (a path, or ``NAME.json`` in
    one of ``search_dirs``).

    Raises:
        ThemeError: no such theme, or the file is not a valid theme.
    """
    if name_or_path in BUILTIN_THEMES:
        return Theme.builtin(name_or_path)
    candidates = [Path(name_or_path)] + [Path(d) / f"{name_or_path}.json" for d in search_dirs]
    for path in candidates:
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ThemeError(f"cannot read theme {path}: {exc}") from exc
            if not isinstance(data, dict) or not isinstance(data.get("colors", {}), dict):
                raise ThemeError(f"not a theme: {path}")
            return Theme(str(data.get("name", path.stem)), data.get("colors", {}), data.get("vars"))
    raise ThemeError(f"theme not found: {name_or_path}")
