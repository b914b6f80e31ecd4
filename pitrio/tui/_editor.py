"""The prompt editor: multi-line text with pi's editing keys.

It keeps the text as lines and a cursor (line, column in characters), and offers what pi's
editor offers: movement by character, word and line; deletion by character, word and to the
line's ends; a kill ring (Ctrl+K/U/W and Alt+D kill, Ctrl+Y yanks, Alt+Y cycles); undo
(consecutive typing undoes as one step); history of submitted prompts (Up on the first line,
Down on the last); pastes of more than :data:`PASTE_MARKER_LINES` lines or
:data:`PASTE_MARKER_CHARS` characters shown as a ``[paste #N +L lines]`` marker and expanded
on submit.

:meth:`Editor.handle_key` returns what the key meant to the editor's owner: ``"submit"``
(Enter), ``None`` (handled) or ``"unhandled"``.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Key
from pitrio.tui._text import char_width, visible_width
from pitrio.tui._theme import Theme

__all__ = ["PASTE_MARKER_CHARS", "PASTE_MARKER_LINES", "Editor"]

PASTE_MARKER_LINES: Final = 10
PASTE_MARKER_CHARS: Final = 1000
HISTORY_SIZE: Final = 100
KILL_RING_SIZE: Final = 30
UNDO_DEPTH: Final = 200
MAX_VISIBLE_LINES: Final = 12
_MARKER: Final = re.compile(r"\[paste #(\d+) (?:\+\d+ lines|\d+ chars)\]")

EditorResult = Literal["submit", "unhandled"] | None


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


class Editor:
    """Multi-line text input (module docstring)."""

    def __init__(self, theme: Theme, keybindings: Keybindings) -> None:
        self.theme = theme
        self.keys = keybindings
        self.lines: list[str] = [""]
        self.row = 0
        self.col = 0
        self.history: list[str] = []
        self._history_index: int | None = None
        self._draft = ""
        self._kill_ring: list[str] = []
        self._last_was_kill = False
        self._yank: tuple[int, int, int] | None = None  # (row, start col, ring index)
        self._undo: list[tuple[list[str], int, int]] = []
        self._typing = False
        self._pastes: dict[int, str] = {}
        self._paste_count = 0
        self.border_token = "borderMuted"
        self.focused = True
        self.scroll = 0

    # ------------------------------------------------------------------ text

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def set_text(self, text: str) -> None:
        """Replace the text (undoable); the cursor goes to its end."""
        self._snapshot()
        self._set(text)

    def _set(self, text: str) -> None:
        self.lines = text.split("\n") or [""]
        self.row = len(self.lines) - 1
        self.col = len(self.lines[-1])

    def replace_line(self, line: str) -> None:
        """Replace the cursor's line (undoable; the cursor column is kept where possible)."""
        self._snapshot()
        self.lines[self.row] = line
        self.col = min(self.col, len(line))

    def expanded_text(self) -> str:
        """The text with paste markers replaced by what was pasted."""

        def expand(match: re.Match[str]) -> str:
            return self._pastes.get(int(match.group(1)), match.group())

        return _MARKER.sub(expand, self.text)

    def take(self) -> str:
        """Clear the editor and return its expanded text, adding it to the history."""
        text = self.expanded_text()
        if text.strip() and (not self.history or self.history[-1] != text):
            self.history.append(text)
            del self.history[:-HISTORY_SIZE]
        self.lines, self.row, self.col = [""], 0, 0
        self._pastes.clear()
        self._history_index = None
        self._undo.clear()
        return text

    def is_empty(self) -> bool:
        return self.lines == [""]

    def insert(self, text: str) -> None:
        """Insert ``text`` (may hold newlines) at the cursor."""
        line = self.lines[self.row]
        before, after = line[: self.col], line[self.col :]
        parts = text.split("\n")
        if len(parts) == 1:
            self.lines[self.row] = before + text + after
            self.col += len(text)
            return
        self.lines[self.row : self.row + 1] = [before + parts[0], *parts[1:-1], parts[-1] + after]
        self.row += len(parts) - 1
        self.col = len(parts[-1])

    def paste(self, text: str) -> None:
        """A bracketed paste: inserted as is, or as a marker when large."""
        self._snapshot()
        text = text.replace("\t", "    ")
        line_count = text.count("\n") + 1
        if line_count > PASTE_MARKER_LINES or len(text) > PASTE_MARKER_CHARS:
            self._paste_count += 1
            self._pastes[self._paste_count] = text
            label = f"+{line_count} lines" if line_count > 1 else f"{len(text)} chars"
            self.insert(f"[paste #{self._paste_count} {label}]")
        else:
            self.insert(text)

    # ------------------------------------------------------------------ undo

    def _snapshot(self, *, typing: bool = False) -> None:
        if typing and self._typing:
            return  # consecutive typing is one undo step
        self._typing = typing
        self._undo.append((list(self.lines), self.row, self.col))
        del self._undo[:-UNDO_DEPTH]

    def undo(self) -> None:
        if self._undo:
            self.lines, self.row, self.col = self._undo.pop()
        self._typing = False

    # ------------------------------------------------------------------ kill ring

    def _kill(self, text: str, *, backward: bool) -> None:
        if not text:
            return
        if self._last_was_kill and self._kill_ring:
            self._kill_ring[-1] = (
                text + self._kill_ring[-1] if backward else self._kill_ring[-1] + text
            )
        else:
            self._kill_ring.append(text)
            del self._kill_ring[:-KILL_RING_SIZE]

    def _yank_text(self) -> None:
        if not self._kill_ring:
            return
        self._snapshot()
        start_row, start = self.row, self.col
        self.insert(self._kill_ring[-1])
        self._yank = (start_row, start, len(self._kill_ring) - 1)

    def _yank_pop(self) -> None:
        if self._yank is None or len(self._kill_ring) < 2:
            return
        row, start, index = self._yank
        previous = self._kill_ring[index]
        # Remove what the last yank inserted, then insert the next older kill.
        text = self.text
        offset = sum(len(line) + 1 for line in self.lines[:row]) + start
        if text[offset : offset + len(previous)] != previous:
            return
        index = (index - 1) % len(self._kill_ring)
        replacement = self._kill_ring[index]
        new = text[:offset] + replacement + text[offset + len(previous) :]
        self.lines = new.split("\n")
        end = offset + len(replacement)
        self.row = new[:end].count("\n")
        self.col = end - (new.rfind("\n", 0, end) + 1)
        self._yank = (row, start, index)

    # ------------------------------------------------------------------ movement

    def _word_left(self) -> None:
        if self.col == 0:
            if self.row > 0:
                self.row -= 1
                self.col = len(self.lines[self.row])
            return
        line = self.lines[self.row]
        col = self.col
        while col > 0 and not _is_word(line[col - 1]):
            col -= 1
        while col > 0 and _is_word(line[col - 1]):
            col -= 1
        self.col = col

    def _word_right(self) -> None:
        line = self.lines[self.row]
        if self.col >= len(line):
            if self.row < len(self.lines) - 1:
                self.row += 1
                self.col = 0
            return
        col = self.col
        while col < len(line) and not _is_word(line[col]):
            col += 1
        while col < len(line) and _is_word(line[col]):
            col += 1
        self.col = col

    def _history_move(self, step: int) -> None:
        if not self.history:
            return
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.history) - 1
        else:
            index = self._history_index + step
        if index >= len(self.history):
            self._history_index = None
            self._set(self._draft)
            return
        index = max(0, index)
        self._history_index = index
        self._set(self.history[index])

    # ------------------------------------------------------------------ keys

    def handle_key(self, key: Key) -> EditorResult:
        """Apply ``key`` (module docstring)."""
        actions = self.keys.actions(key.name)
        was_kill, self._last_was_kill = self._last_was_kill, False
        yanking = self._yank
        self._yank = None
        for action in actions:
            result = self._action(action, was_kill=was_kill, yanking=yanking)
            if result != "unhandled":
                return result
        if key.text is not None and not actions:
            self._snapshot(typing=True)
            self.insert(key.text)
            self._history_index = None
            return None
        return "unhandled"

    def _action(
        self, action: str, *, was_kill: bool, yanking: tuple[int, int, int] | None
    ) -> EditorResult:
        line = self.lines[self.row]
        if action != "tui.editor.undo":
            self._typing = False
        match action:
            case "tui.input.submit":
                return "submit"
            case "tui.input.newLine":
                self._snapshot()
                self.insert("\n")
            case "tui.editor.cursorLeft":
                if self.col > 0:
                    self.col -= 1
                elif self.row > 0:
                    self.row -= 1
                    self.col = len(self.lines[self.row])
            case "tui.editor.cursorRight":
                if self.col < len(line):
                    self.col += 1
                elif self.row < len(self.lines) - 1:
                    self.row += 1
                    self.col = 0
            case "tui.editor.cursorUp":
                if self.row == 0 or self._history_index is not None:
                    if self.row == 0 and (self.is_empty() or self._history_index is not None):
                        self._history_move(-1)
                    elif self.row == 0:
                        self.col = 0
                    else:
                        self.row -= 1
                        self.col = min(self.col, len(self.lines[self.row]))
                else:
                    self.row -= 1
                    self.col = min(self.col, len(self.lines[self.row]))
            case "tui.editor.cursorDown":
                if self.row == len(self.lines) - 1:
                    if self._history_index is not None:
                        self._history_move(1)
                    else:
                        self.col = len(line)
                else:
                    self.row += 1
                    self.col = min(self.col, len(self.lines[self.row]))
            case "tui.editor.cursorWordLeft":
                self._word_left()
            case "tui.editor.cursorWordRight":
                self._word_right()
            case "tui.editor.cursorLineStart":
                self.col = 0
            case "tui.editor.cursorLineEnd":
                self.col = len(line)
            case "tui.editor.deleteCharBackward":
                self._snapshot()
                if self.col > 0:
                    self.lines[self.row] = line[: self.col - 1] + line[self.col :]
                    self.col -= 1
                elif self.row > 0:
                    previous = self.lines[self.row - 1]
                    self.lines[self.row - 1 : self.row + 1] = [previous + line]
                    self.row -= 1
                    self.col = len(previous)
            case "tui.editor.deleteCharForward":
                if self.is_empty():
                    return "unhandled"  # ctrl+d on an empty editor: the app's exit
                self._snapshot()
                if self.col < len(line):
                    self.lines[self.row] = line[: self.col] + line[self.col + 1 :]
                elif self.row < len(self.lines) - 1:
                    self.lines[self.row : self.row + 2] = [line + self.lines[self.row + 1]]
            case "tui.editor.deleteWordBackward":
                self._snapshot()
                end = self.col
                if end == 0 and self.row > 0:
                    return self._action(
                        "tui.editor.deleteCharBackward", was_kill=was_kill, yanking=None
                    )
                self._word_left()
                self._last_was_kill = was_kill
                self._kill(line[self.col : end], backward=True)
                self._last_was_kill = True
                self.lines[self.row] = line[: self.col] + line[end:]
            case "tui.editor.deleteWordForward":
                self._snapshot()
                end = self.col
                while end < len(line) and not _is_word(line[end]):
                    end += 1
                while end < len(line) and _is_word(line[end]):
                    end += 1
                self._last_was_kill = was_kill
                self._kill(line[self.col : end], backward=False)
                self._last_was_kill = True
                self.lines[self.row] = line[: self.col] + line[end:]
            case "tui.editor.deleteToLineStart":
                self._snapshot()
                self._last_was_kill = was_kill
                self._kill(line[: self.col], backward=True)
                self._last_was_kill = True
                self.lines[self.row] = line[self.col :]
                self.col = 0
            case "tui.editor.deleteToLineEnd":
                self._snapshot()
                self._last_was_kill = was_kill
                if self.col == len(line) and self.row < len(self.lines) - 1:
                    self._kill("\n", backward=False)
                    self.lines[self.row : self.row + 2] = [line + self.lines[self.row + 1]]
                else:
                    self._kill(line[self.col :], backward=False)
                    self.lines[self.row] = line[: self.col]
                self._last_was_kill = True
            case "tui.editor.yank":
                self._yank_text()
            case "tui.editor.yankPop":
                self._yank = yanking
                self._yank_pop()
            case "tui.editor.undo":
                self.undo()
            case _:
                return "unhandled"
        return None

    # ------------------------------------------------------------------ render

    def render(self, width: int) -> list[str]:
        border = self.theme.fg(self.border_token, "─" * width)
        inner = max(1, width)
        rows: list[str] = []
        cursor_row = 0
        for index, line in enumerate(self.lines):
            pieces = _wrap_plain(line, inner)
            for number, (start, piece) in enumerate(pieces):
                at_cursor = index == self.row and start <= self.col <= start + len(piece)
                is_last_piece = number == len(pieces) - 1
                if at_cursor and (self.col < start + len(piece) or is_last_piece):
                    cursor_row = len(rows)
                    rows.append(self._with_cursor(piece, self.col - start, inner))
                else:
                    rows.append(piece)
        if len(rows) > MAX_VISIBLE_LINES:
            if cursor_row < self.scroll:
                self.scroll = cursor_row
            elif cursor_row >= self.scroll + MAX_VISIBLE_LINES:
                self.scroll = cursor_row - MAX_VISIBLE_LINES + 1
            self.scroll = min(self.scroll, len(rows) - MAX_VISIBLE_LINES)
            hidden_above, hidden_below = self.scroll, len(rows) - self.scroll - MAX_VISIBLE_LINES
            rows = rows[self.scroll : self.scroll + MAX_VISIBLE_LINES]
            top = _border_note(border, self.theme, f"↑ {hidden_above} more", width, hidden_above)
            bottom = _border_note(border, self.theme, f"↓ {hidden_below} more", width, hidden_below)
            return [top, *rows, bottom]
        self.scroll = 0
        return [border, *rows, border]

    def _with_cursor(self, piece: str, col: int, width: int) -> str:
        if not self.focused:
            return piece
        at = piece[col] if col < len(piece) else " "
        if col >= len(piece) and visible_width(piece) >= width:
            return piece  # no cell left for the cursor at the end of a full row
        return piece[:col] + f"\x1b[7m{at}\x1b[27m" + piece[col + 1 :]


def _border_note(border: str, theme: Theme, note: str, width: int, count: int) -> str:
    if count <= 0:
        return border
    text = f"─── {note} "
    return theme.fg("borderMuted", text + "─" * max(0, width - visible_width(text)))


def _wrap_plain(line: str, width: int) -> list[tuple[int, str]]:
    """``line`` cut into rows of at most ``width`` cells, keeping a cell for the cursor at the
    end; each row with the index of its first character."""
    if not line:
        return [(0, "")]
    rows: list[tuple[int, str]] = []
    start = 0
    used = 0
    for index, char in enumerate(line):
        w = char_width(char)
        if used + w > width:
            rows.append((start, line[start:index]))
            start, used = index, 0
        used += w
    rows.append((start, line[start:]))
    if used >= width:
        rows.append((len(line), ""))  # the cursor's cell after a full last row
    return rows
