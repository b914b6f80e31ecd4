"""pi's keybinding action ids, their default keys, and ``keybindings.json``.

The file maps an action id to a key or a list of keys (``"ctrl+p"``, ``["up", "alt+k"]``); the
keys it names replace the action's defaults. Older, unnamespaced ids (``cursorUp``) are read
as pi migrates them (``tui.editor.cursorUp``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from pitrio.tui._keys import normalize_key

__all__ = ["DEFAULT_BINDINGS", "Keybindings"]

DEFAULT_BINDINGS: Final[Mapping[str, tuple[str, ...]]] = {
    "tui.editor.cursorUp": ("up",),
    "tui.editor.cursorDown": ("down",),
    "tui.editor.cursorLeft": ("left", "ctrl+b"),
    "tui.editor.cursorRight": ("right", "ctrl+f"),
    "tui.editor.cursorWordLeft": ("alt+left", "ctrl+left", "alt+b"),
    "tui.editor.cursorWordRight": ("alt+right", "ctrl+right", "alt+f"),
    "tui.editor.cursorLineStart": ("home", "ctrl+a"),
    "tui.editor.cursorLineEnd": ("end", "ctrl+e"),
    "tui.editor.pageUp": ("pageUp",),
    "tui.editor.pageDown": ("pageDown",),
    "tui.editor.deleteCharBackward": ("backspace",),
    "tui.editor.deleteCharForward": ("delete", "ctrl+d"),
    "tui.editor.deleteWordBackward": ("ctrl+w", "alt+backspace"),
    "tui.editor.deleteWordForward": ("alt+d", "alt+delete"),
    "tui.editor.deleteToLineStart": ("ctrl+u",),
    "tui.editor.deleteToLineEnd": ("ctrl+k",),
    "tui.input.newLine": ("shift+enter",),
    "tui.input.submit": ("enter",),
    "tui.input.tab": ("tab",),
    "tui.editor.yank": ("ctrl+y",),
    "tui.editor.yankPop": ("alt+y",),
    "tui.editor.undo": ("ctrl+-",),
    "tui.input.copy": ("ctrl+c",),
    "tui.select.up": ("up",),
    "tui.select.down": ("down",),
    "tui.select.pageUp": ("pageUp",),
    "tui.select.pageDown": ("pageDown",),
    "tui.select.confirm": ("enter",),
    "tui.select.cancel": ("escape", "ctrl+c"),
    "app.interrupt": ("escape",),
    "app.clear": ("ctrl+c",),
    "app.exit": ("ctrl+d",),
    "app.suspend": ("ctrl+z",),
    "app.editor.external": ("ctrl+g",),
    "app.clipboard.pasteImage": ("ctrl+v",),
    "app.session.new": (),
    "app.session.tree": (),
    "app.session.fork": (),
    "app.session.resume": (),
    "app.model.select": ("ctrl+l",),
    "app.model.cycleForward": ("ctrl+p",),
    "app.model.cycleBackward": ("ctrl+shift+p",),
    "app.thinking.cycle": ("shift+tab",),
    "app.thinking.toggle": ("ctrl+t",),
    "app.tools.expand": ("ctrl+o",),
    "app.message.followUp": ("alt+enter",),
    "app.message.dequeue": ("alt+up",),
    "app.tree.foldOrUp": ("ctrl+left", "alt+left"),
    "app.tree.unfoldOrDown": ("ctrl+right", "alt+right"),
    "app.tree.editLabel": ("shift+l",),
    "app.tree.toggleLabelTimestamp": ("shift+t",),
    "app.tree.filter.default": ("ctrl+d",),
    "app.tree.filter.noTools": ("ctrl+t",),
    "app.tree.filter.userOnly": ("ctrl+u",),
    "app.tree.filter.labeledOnly": ("ctrl+l",),
    "app.tree.filter.all": ("ctrl+a",),
    "app.tree.filter.cycleForward": ("ctrl+o",),
    "app.tree.filter.cycleBackward": ("ctrl+shift+o",),
    "app.models.save": ("ctrl+s",),
    "app.models.enableAll": ("ctrl+a",),
    "app.models.clearAll": ("ctrl+x",),
    "app.models.toggleProvider": ("ctrl+p",),
    "app.models.reorderUp": ("alt+up",),
    "app.models.reorderDown": ("alt+down",),
}

_DESCRIPTIONS: Final = {
    "tui.editor.cursorWordLeft": "Move cursor word left",
    "tui.editor.cursorWordRight": "Move cursor word right",
    "tui.editor.cursorLineStart": "Move to line start",
    "tui.editor.cursorLineEnd": "Move to line end",
    "tui.editor.deleteWordBackward": "Delete word backward",
    "tui.editor.deleteToLineStart": "Delete to line start",
    "tui.editor.deleteToLineEnd": "Delete to line end",
    "tui.input.newLine": "Insert new line",
    "tui.editor.yank": "Paste most recently deleted text",
    "tui.editor.yankPop": "Cycle through deleted text after yank",
    "tui.editor.undo": "Undo last edit",
    "app.interrupt": "Cancel / abort",
    "app.clear": "Clear editor (twice: exit)",
    "app.exit": "Exit (when editor empty)",
    "app.suspend": "Suspend to background",
    "app.model.select": "Open model selector",
    "app.model.cycleForward": "Cycle to next model",
    "app.model.cycleBackward": "Cycle to previous model",
    "app.thinking.cycle": "Cycle thinking level",
    "app.thinking.toggle": "Collapse or expand thinking blocks",
    "app.tools.expand": "Collapse or expand tool output",
    "app.message.followUp": "Queue follow-up message",
    "app.message.dequeue": "Restore queued messages to editor",
    "app.tree.foldOrUp": "Fold the branch segment, or jump to the segment start (in /tree)",
    "app.tree.unfoldOrDown": "Unfold the branch segment, or jump to the next segment (in /tree)",
    "app.tree.editLabel": "Edit the label on the selected tree node (in /tree)",
    "app.tree.toggleLabelTimestamp": "Toggle label timestamps (in /tree)",
    "app.tree.filter.cycleForward": "Cycle the tree filter (in /tree)",
    "app.models.save": "Save the scoped models to settings (in /scoped-models)",
    "app.models.enableAll": "Enable all (matching) models (in /scoped-models)",
    "app.models.clearAll": "Clear all (matching) models (in /scoped-models)",
    "app.models.toggleProvider": "Toggle the provider's models (in /scoped-models)",
    "app.models.reorderUp": "Move the model up in the cycle order (in /scoped-models)",
    "app.models.reorderDown": "Move the model down in the cycle order (in /scoped-models)",
}


class Keybindings:
    """Which keys trigger which action."""

    def __init__(self, overrides: Mapping[str, Sequence[str]] | None = None) -> None:
        self._keys: dict[str, tuple[str, ...]] = dict(DEFAULT_BINDINGS)
        for action, keys in (overrides or {}).items():
            self._keys[action] = tuple(normalize_key(k) for k in keys)
        self._by_key: dict[str, list[str]] = {}
        for action, keys in self._keys.items():
            for key in keys:
                self._by_key.setdefault(key, []).append(action)
        self.errors: list[str] = []

    @classmethod
    def load(cls, paths: Sequence[str]) -> Keybindings:
        """The bindings of the first of ``paths`` that exists (defaults when none does);
        problems with the file are kept in :attr:`errors` and the defaults used."""
        for path in paths:
            file = Path(path)
            if not file.is_file():
                continue
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                overrides: dict[str, list[str]] = {}
                for action, keys in data.items():
                    action_id = action if "." in action else _migrate(action)
                    overrides[action_id] = [keys] if isinstance(keys, str) else list(keys)
                return cls(overrides)
            except (OSError, ValueError, TypeError) as exc:
                bindings = cls()
                bindings.errors.append(f"{path}: {exc}")
                return bindings
        return cls()

    def matches(self, key: str, action: str) -> bool:
        return key in self._keys.get(action, ())

    def actions(self, key: str) -> list[str]:
        return self._by_key.get(key, [])

    def keys(self, action: str) -> tuple[str, ...]:
        return self._keys.get(action, ())

    def describe(self) -> list[tuple[str, str, str]]:
        """(keys, action id, description) for ``/hotkeys``."""
        rows = []
        for action, keys in self._keys.items():
            if keys:
                rows.append((", ".join(keys), action, _DESCRIPTIONS.get(action, "")))
        return rows


def _migrate(old: str) -> str:
    """pi's pre-namespaced ids (``cursorUp``) -> the namespaced ones."""
    for action in DEFAULT_BINDINGS:
        if action.rsplit(".", 1)[-1] == old:
            return action
    legacy = {"expandTools": "app.tools.expand", "toggleThinking": "app.thinking.toggle"}
    return legacy.get(old, old)
