"""Dialogs that take the editor's place: a searchable list, a text input, a confirmation.

A dialog handles the keys while it is shown and sets :attr:`Dialog.done` with its answer
(``None``: cancelled). The app awaits ``done`` in the task that asked (a command, an
extension's ``ctx.ui`` call), so the input loop never waits for an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import trio

from pitrio.tui._editor import Editor
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Key, Paste, TermEvent
from pitrio.tui._text import truncate, visible_width
from pitrio.tui._theme import Theme

__all__ = [
    "ConfirmDialog",
    "Dialog",
    "EditorDialog",
    "InputDialog",
    "ScopedModelsDialog",
    "SelectDialog",
    "fuzzy_score",
]

VISIBLE_ITEMS: Final = 10


def fuzzy_score(query: str, text: str) -> int | None:
    """A score for ``text`` matching ``query`` (its characters in order, case-insensitive);
    lower is better, ``None`` when it does not match. Each word of the query must match."""
    total = 0
    lowered = text.lower()
    for word in query.lower().split():
        at = lowered.find(word)
        if at >= 0:
            total += at
            continue
        position, gaps = -1, 0
        for char in word:
            found = lowered.find(char, position + 1)
            if found < 0:
                return None
            gaps += found - position - 1
            position = found
        total += 100 + gaps
    return total


class Dialog:
    """Base: a title, keys, and an answer."""

    def __init__(self, theme: Theme, keys: Keybindings, title: str) -> None:
        self.theme = theme
        self.keys = keys
        self.title = title
        self.done = trio.Event()
        self.result: Any = None

    def finish(self, result: Any) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()

    def handle(self, event: TermEvent) -> None:
        raise NotImplementedError

    def render(self, width: int) -> list[str]:
        raise NotImplementedError

    def _frame(self, width: int, body: list[str], hint: str) -> list[str]:
        border = self.theme.fg("border", "─" * width)
        title = self.theme.fg("accent", self.theme.bold(truncate(self.title, width)))
        return [border, title, *body, self.theme.fg("dim", truncate(hint, width)), border]


class _Field:
    """A one-line text field."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.col = len(text)

    def handle(self, event: TermEvent, keys: Keybindings) -> bool:
        """Apply a key; False when the field does not use it."""
        if isinstance(event, Paste):
            self.insert(event.text.replace("\n", " "))
            return True
        name = event.name
        if keys.matches(name, "tui.editor.deleteCharBackward"):
            if self.col > 0:
                self.text = self.text[: self.col - 1] + self.text[self.col :]
                self.col -= 1
        elif keys.matches(name, "tui.editor.cursorLeft"):
            self.col = max(0, self.col - 1)
        elif keys.matches(name, "tui.editor.cursorRight"):
            self.col = min(len(self.text), self.col + 1)
        elif keys.matches(name, "tui.editor.cursorLineStart"):
            self.col = 0
        elif keys.matches(name, "tui.editor.cursorLineEnd"):
            self.col = len(self.text)
        elif keys.matches(name, "tui.editor.deleteToLineStart"):
            self.text, self.col = self.text[self.col :], 0
        elif keys.matches(name, "tui.editor.deleteWordBackward"):
            head = self.text[: self.col].rstrip()
            cut = head.rfind(" ") + 1
            self.text, self.col = self.text[:cut] + self.text[self.col :], cut
        elif event.text is not None:
            self.insert(event.text)
        else:
            return False
        return True

    def insert(self, text: str) -> None:
        self.text = self.text[: self.col] + text + self.text[self.col :]
        self.col += len(text)

    def render(self, width: int, placeholder: str = "") -> str:
        if not self.text and placeholder:
            return "\x1b[7m \x1b[27m" + f"\x1b[2m{truncate(placeholder, width - 1)}\x1b[22m"
        at = self.text[self.col] if self.col < len(self.text) else " "
        line = self.text[: self.col] + f"\x1b[7m{at}\x1b[27m" + self.text[self.col + 1 :]
        return truncate(line, width)


class SelectDialog(Dialog):
    """Choose one of ``options`` (typing filters them, fuzzily). The answer is the option's
    index in ``options``."""

    def __init__(
        self,
        theme: Theme,
        keys: Keybindings,
        title: str,
        options: Sequence[str],
        *,
        descriptions: Sequence[str] | None = None,
        selected: int = 0,
        searchable: bool = True,
    ) -> None:
        super().__init__(theme, keys, title)
        self.options = list(options)
        self.descriptions = list(descriptions) if descriptions else [""] * len(self.options)
        self.searchable = searchable
        self.search = _Field()
        self._matches = list(range(len(self.options)))
        self.cursor = min(max(0, selected), max(0, len(self.options) - 1))

    def _filter(self) -> None:
        query = self.search.text.strip()
        if not query:
            self._matches = list(range(len(self.options)))
        else:
            scored = []
            for index, option in enumerate(self.options):
                score = fuzzy_score(query, f"{option} {self.descriptions[index]}")
                if score is not None:
                    scored.append((score, index))
            self._matches = [index for _, index in sorted(scored)]
        self.cursor = 0

    def handle(self, event: TermEvent) -> None:
        keys = self.keys
        if isinstance(event, Key):
            name = event.name
            if keys.matches(name, "tui.select.cancel"):
                self.finish(None)
                return
            if keys.matches(name, "tui.select.confirm"):
                if self._matches:
                    self.finish(self._matches[self.cursor])
                return
            if keys.matches(name, "tui.select.up"):
                if self._matches:
                    self.cursor = (self.cursor - 1) % len(self._matches)
                return
            if keys.matches(name, "tui.select.down"):
                if self._matches:
                    self.cursor = (self.cursor + 1) % len(self._matches)
                return
            if keys.matches(name, "tui.select.pageUp"):
                self.cursor = max(0, self.cursor - VISIBLE_ITEMS)
                return
            if keys.matches(name, "tui.select.pageDown"):
                self.cursor = min(max(0, len(self._matches) - 1), self.cursor + VISIBLE_ITEMS)
                return
        if self.searchable and self.search.handle(event, keys):
            self._filter()

    def render(self, width: int) -> list[str]:
        theme = self.theme
        body: list[str] = []
        if self.searchable:
            body.append(theme.fg("muted", "Search: ") + self.search.render(width - 8))
        start = max(0, min(self.cursor - VISIBLE_ITEMS // 2, len(self._matches) - VISIBLE_ITEMS))
        for position in range(start, min(len(self._matches), start + VISIBLE_ITEMS)):
            index = self._matches[position]
            chosen = position == self.cursor
            label = ("→ " if chosen else "  ") + self.options[index]
            description = self.descriptions[index]
            if description:
                room = width - visible_width(label) - 3
                if room > 8:
                    label += "  " + theme.fg("muted", truncate(description, room))
            line = truncate(label, width)
            body.append(theme.fg("accent", line) if chosen else line)
        if not self._matches:
            body.append(theme.fg("muted", "  (no matches)"))
        elif len(self._matches) > VISIBLE_ITEMS:
            body.append(theme.fg("dim", f"  ({self.cursor + 1}/{len(self._matches)})"))
        hint = "↑↓ navigate · enter select · esc cancel"
        return self._frame(width, body, hint)


class InputDialog(Dialog):
    """A line of text (the answer), with an optional placeholder."""

    def __init__(
        self,
        theme: Theme,
        keys: Keybindings,
        title: str,
        placeholder: str | None = None,
        prefill: str = "",
    ) -> None:
        super().__init__(theme, keys, title)
        self.placeholder = placeholder or ""
        self.field = _Field(prefill)

    def handle(self, event: TermEvent) -> None:
        if isinstance(event, Key):
            if self.keys.matches(event.name, "tui.select.cancel"):
                self.finish(None)
                return
            if self.keys.matches(event.name, "tui.input.submit"):
                self.finish(self.field.text)
                return
        self.field.handle(event, self.keys)

    def render(self, width: int) -> list[str]:
        body = [self.field.render(width, self.placeholder)]
        return self._frame(width, body, "enter submit · esc cancel")


class ConfirmDialog(Dialog):
    """Yes or no (``y``/``n``, arrows and Enter); cancelling answers no."""

    def __init__(self, theme: Theme, keys: Keybindings, title: str, message: str) -> None:
        super().__init__(theme, keys, title)
        self.message = message
        self.yes = True

    def handle(self, event: TermEvent) -> None:
        if not isinstance(event, Key):
            return
        name = event.name
        if name in ("y", "shift+y"):
            self.finish(True)
        elif name in ("n", "shift+n") or self.keys.matches(name, "tui.select.cancel"):
            self.finish(False)
        elif self.keys.matches(name, "tui.select.confirm"):
            self.finish(self.yes)
        elif name in ("left", "right", "tab", "up", "down"):
            self.yes = not self.yes

    def render(self, width: int) -> list[str]:
        theme = self.theme
        body = [line for line in self.message.split("\n")] if self.message else []
        yes = theme.inverse(" Yes ") if self.yes else " Yes "
        no = theme.inverse(" No ") if not self.yes else " No "
        body.append(f"{yes}  {no}")
        return self._frame(width, [truncate(b, width) for b in body], "y/n · enter confirm")


class EditorDialog(Dialog):
    """Multi-line text (``ctx.ui.editor``): Enter submits, Shift+Enter starts a new line."""

    def __init__(self, theme: Theme, keys: Keybindings, title: str, prefill: str = "") -> None:
        super().__init__(theme, keys, title)
        self.editor = Editor(theme, keys)
        if prefill:
            self.editor.set_text(prefill)

    def handle(self, event: TermEvent) -> None:
        if isinstance(event, Paste):
            self.editor.paste(event.text)
            return
        if self.keys.matches(event.name, "tui.select.cancel"):
            self.finish(None)
            return
        if self.editor.handle_key(event) == "submit":
            self.finish(self.editor.expanded_text())

    def render(self, width: int) -> list[str]:
        body = self.editor.render(width)[1:-1]
        return self._frame(width, body, "enter submit · shift+enter new line · esc cancel")


class ScopedModelsDialog(Dialog):
    """pi's ``/scoped-models``: choose the models Ctrl+P cycles through, in order.

    Enter toggles the model under the cursor; the ``app.models.*`` keys enable or clear every
    (matching) model, toggle the cursor's provider, move a model in the cycle order, and save.
    The answer is ``(enabled names in cycle order, saved)``; Esc answers with ``saved`` False
    (the scope holds for this run only), Ctrl+S with True (it goes to ``enabledModels``).
    No model enabled means no scope: Ctrl+P cycles through every available model.
    """

    def __init__(
        self, theme: Theme, keys: Keybindings, names: Sequence[str], enabled: Sequence[str]
    ) -> None:
        super().__init__(theme, keys, "Scoped models (Ctrl+P cycles through the enabled ones)")
        self.enabled = [name for name in enabled if name in names]
        # Enabled models first, in their cycle order; then the others as listed.
        self.names = [*self.enabled, *(n for n in names if n not in self.enabled)]
        self.search = _Field()
        self.cursor = 0
        self._matches = list(range(len(self.names)))

    def _filter(self) -> None:
        query = self.search.text.strip()
        if not query:
            self._matches = list(range(len(self.names)))
        else:
            scored = [
                (score, index)
                for index, name in enumerate(self.names)
                if (score := fuzzy_score(query, name)) is not None
            ]
            self._matches = [index for _, index in sorted(scored)]
        self.cursor = min(self.cursor, max(0, len(self._matches) - 1))

    def _current(self) -> str | None:
        return self.names[self._matches[self.cursor]] if self._matches else None

    def _set(self, names: Sequence[str], on: bool) -> None:
        for name in names:
            if on and name not in self.enabled:
                self.enabled.append(name)
            elif not on and name in self.enabled:
                self.enabled.remove(name)

    def _move(self, step: int) -> None:
        name = self._current()
        if name is None or name not in self.enabled or self.search.text.strip():
            return
        at = self.enabled.index(name)
        to = at + step
        if not 0 <= to < len(self.enabled):
            return
        self.enabled[at], self.enabled[to] = self.enabled[to], self.enabled[at]
        self.names = [*self.enabled, *(n for n in self.names if n not in self.enabled)]
        self.cursor = to

    def handle(self, event: TermEvent) -> None:
        keys = self.keys
        if isinstance(event, Key):
            name = event.name
            matching = [self.names[i] for i in self._matches]
            current = self._current()
            if keys.matches(name, "tui.select.cancel"):
                self.finish((list(self.enabled), False))
            elif keys.matches(name, "app.models.save"):
                self.finish((list(self.enabled), True))
            elif keys.matches(name, "tui.select.confirm"):
                if current is not None:
                    self._set([current], current not in self.enabled)
            elif keys.matches(name, "app.models.enableAll"):
                self._set(matching, True)
            elif keys.matches(name, "app.models.clearAll"):
                self._set(matching, False)
            elif keys.matches(name, "app.models.toggleProvider"):
                if current is not None:
                    provider = current.split("/", 1)[0] + "/"
                    group = [n for n in self.names if n.startswith(provider)]
                    self._set(group, not all(n in self.enabled for n in group))
            elif keys.matches(name, "app.models.reorderUp"):
                self._move(-1)
            elif keys.matches(name, "app.models.reorderDown"):
                self._move(1)
            elif keys.matches(name, "tui.select.up"):
                if self._matches:
                    self.cursor = (self.cursor - 1) % len(self._matches)
            elif keys.matches(name, "tui.select.down"):
                if self._matches:
                    self.cursor = (self.cursor + 1) % len(self._matches)
            elif self.search.handle(event, keys):
                self._filter()
            return
        if self.search.handle(event, keys):
            self._filter()

    def render(self, width: int) -> list[str]:
        theme = self.theme
        body = [theme.fg("muted", "Search: ") + self.search.render(width - 8)]
        start = max(0, min(self.cursor - VISIBLE_ITEMS // 2, len(self._matches) - VISIBLE_ITEMS))
        for position in range(start, min(len(self._matches), start + VISIBLE_ITEMS)):
            name = self.names[self._matches[position]]
            chosen = position == self.cursor
            mark = f"[{self.enabled.index(name) + 1}]" if name in self.enabled else "[ ]"
            line = truncate(("→ " if chosen else "  ") + f"{mark} {name}", width)
            body.append(theme.fg("accent", line) if chosen else line)
        if not self._matches:
            body.append(theme.fg("muted", "  (no matches)"))
        count = len(self.enabled)
        body.append(theme.fg("muted", f"  {count} enabled" if count else "  all models cycle"))
        hint = (
            "enter toggle · ctrl+a all · ctrl+x none · ctrl+p provider · alt+↑↓ order"
            " · ctrl+s save · esc close"
        )
        return self._frame(width, body, hint)
