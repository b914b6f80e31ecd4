"""``/tree``'s selector: the session's entries as a tree, with pi's filters and labels.

pi 0.73.1's tree selector (docs/sessions.md "Tree Controls", docs/keybindings.md ``app.tree.*``):
filter modes ``default`` (bookkeeping entries hidden: labels, custom entries, model and thinking
level changes, session info), ``no-tools`` (also tool results), ``user-only``, ``labeled-only``
and ``all``; each filter key toggles its mode with ``default``, Ctrl+O cycles. Assistant
messages made of tool calls only are hidden (unless an error, or the current position).
Shift+L edits the label of the selected entry in place (an empty label clears it); Shift+T
shows when each label was set. Typing searches.

Folding, as pi's (``app.tree.foldOrUp``, Ctrl+Left / Alt+Left, and ``app.tree.unfoldOrDown``,
Ctrl+Right / Alt+Right): a root or a segment start (the first entry of a branch, where its
shown parent has more than one shown child) with shown children is foldable. Fold on a
foldable, unfolded entry hides everything below it (``⊞`` marks it; ``⊟`` marks a foldable
segment start); otherwise it jumps up to the start of the segment the cursor is in (or of the
one above). Unfold on a folded entry shows its entries again; otherwise it jumps down, along
first children, to the next branch point's first child, or to the branch's end. Changing the
filter or the search unfolds everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from pitrio.tui._dialogs import VISIBLE_ITEMS, Dialog, _Field
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Key, TermEvent
from pitrio.tui._text import truncate
from pitrio.tui._theme import Theme

__all__ = ["FILTER_MODES", "TreeDialog", "TreeRow", "tree_rows"]

FILTER_MODES: Final = ("default", "no-tools", "user-only", "labeled-only", "all")
_MODE_TAGS: Final = {"no-tools": "[no-tools]", "user-only": "[user]", "labeled-only": "[labeled]"}
_MODE_TAGS_ALL: Final = {**_MODE_TAGS, "all": "[all]"}
_FILTER_KEYS: Final = {
    "app.tree.filter.noTools": "no-tools",
    "app.tree.filter.userOnly": "user-only",
    "app.tree.filter.labeledOnly": "labeled-only",
    "app.tree.filter.all": "all",
}
_BOOKKEEPING: Final = frozenset(
    {"label", "custom", "model_change", "thinking_level_change", "session_info"}
)


@attrs.define
class TreeRow:
    """One entry of the tree, flattened (depth-first, oldest first)."""

    entry_id: str
    parent_id: str | None
    depth: int
    text: str
    kind: str
    """The entry's ``type``."""
    role: str | None
    label: str | None
    label_timestamp: str | None
    current: bool
    """The session's current position (its leaf)."""
    tool_calls_only: bool
    """An assistant message without text that did not end in an error."""


def _text_of(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content if getattr(b, "type", "") == "text")


def _describe(entry: Any) -> str:
    message = getattr(entry, "message", None)
    kind = getattr(entry, "type", "")
    if message is None:
        match kind:
            case "compaction":
                return "[compaction]"
            case "branch_summary":
                return "[branch summary]"
            case "model_change":
                return f"[model: {entry.provider}/{entry.model_id}]"
            case "thinking_level_change":
                return f"[thinking: {entry.thinking_level}]"
            case "label":
                return f"[label: {getattr(entry, 'label', None) or '(cleared)'}]"
            case "session_info":
                return f"[name: {getattr(entry, 'name', '')}]"
        return f"[{kind}]"
    role = getattr(message, "role", "")
    if role == "user":
        return "user: " + _text_of(message).replace("\n", " ")
    if role == "assistant":
        text = _text_of(message).replace("\n", " ")
        calls = [b.name for b in message.content if getattr(b, "type", "") == "toolCall"]
        return "assistant: " + (text or ", ".join(f"[{c}]" for c in calls) or "(empty)")
    if role == "toolResult":
        return f"[{message.tool_name} result]"
    if role == "bashExecution":
        return f"! {message.command}"
    return f"[{role}]"


def tree_rows(roots: Sequence[Any], leaf: str | None) -> list[TreeRow]:
    """The rows of ``roots`` (a session manager's ``get_tree()``), depth-first; a level is
    indented where the tree branches."""
    rows: list[TreeRow] = []
    stack: list[tuple[Any, int]] = [(node, 0) for node in reversed(roots)]
    siblings = {id(node): len(roots) for node in roots}
    while stack:
        node, depth = stack.pop()
        entry = node.entry
        message = getattr(entry, "message", None)
        role = getattr(message, "role", None)
        tool_calls_only = (
            role == "assistant"
            and not _text_of(message).strip()
            and getattr(message, "stop_reason", "stop") in ("stop", "toolUse", "tool_use")
        )
        rows.append(
            TreeRow(
                entry_id=entry.id,
                parent_id=getattr(entry, "parent_id", None),
                depth=depth,
                text=_describe(entry)[:200],
                kind=getattr(entry, "type", ""),
                role=role,
                label=node.label,
                label_timestamp=node.label_timestamp,
                current=entry.id == leaf,
                tool_calls_only=tool_calls_only,
            )
        )
        child_depth = depth + (1 if siblings.get(id(node), 1) > 1 else 0)
        for child in reversed(node.children):
            siblings[id(child)] = len(node.children)
            stack.append((child, child_depth))
    return rows


def _passes(row: TreeRow, mode: str) -> bool:
    if row.tool_calls_only and not row.current:
        return False
    match mode:
        case "user-only":
            return row.kind == "message" and row.role == "user"
        case "no-tools":
            return row.kind not in _BOOKKEEPING and row.role != "toolResult"
        case "labeled-only":
            return row.label is not None
        case "all":
            return True
    return row.kind not in _BOOKKEEPING


class TreeDialog(Dialog):
    """Choose an entry (the answer is its id). ``on_label(entry_id, label)`` is called when
    the user sets (or, with ``None``, clears) a label; the row shows it at once."""

    def __init__(
        self,
        theme: Theme,
        keys: Keybindings,
        rows: Sequence[TreeRow],
        on_label: Callable[[str, str | None], None],
        filter_mode: str = "default",
    ) -> None:
        super().__init__(theme, keys, "Session tree (• current position)")
        self.rows = list(rows)
        self.on_label = on_label
        self.mode = filter_mode if filter_mode in FILTER_MODES else "default"
        self.show_label_times = False
        self.search = _Field()
        self.label_field: _Field | None = None
        self._visible: list[int] = []
        self.folded: set[str] = set()
        self._parent_of = {row.entry_id: row.parent_id for row in self.rows}
        self._shown_parent: dict[str, str | None] = {}
        self._shown_children: dict[str | None, list[str]] = {}
        self.cursor = 0
        self._filter(keep=next((r.entry_id for r in self.rows if r.current), None))

    def _filter(self, keep: str | None = None) -> None:
        """Apply the mode and the search; the cursor stays on ``keep`` (an entry id) when it
        is still shown, else on the current position, else the last row."""
        words = self.search.text.lower().split()
        hidden: set[str] = set()
        for row in self.rows:  # depth-first: a parent comes before its children
            if row.parent_id is not None and (
                row.parent_id in self.folded or row.parent_id in hidden
            ):
                hidden.add(row.entry_id)
        self._visible = [
            index
            for index, row in enumerate(self.rows)
            if _passes(row, self.mode)
            and row.entry_id not in hidden
            and all(w in f"{row.text} {row.label or ''}".lower() for w in words)
        ]
        ids = [self.rows[i].entry_id for i in self._visible]
        self._link(ids)
        current = next((r.entry_id for r in self.rows if r.current), None)
        for wanted in (keep, current):
            if wanted in ids:
                self.cursor = ids.index(wanted)
                return
        self.cursor = max(0, len(ids) - 1)

    def _link(self, ids: list[str]) -> None:
        """Each shown entry's nearest shown ancestor, and each one's shown children."""
        shown = set(ids)
        self._shown_parent = {}
        self._shown_children = {}
        for entry_id in ids:
            parent = self._parent_of.get(entry_id)
            while parent is not None and parent not in shown:
                parent = self._parent_of.get(parent)
            self._shown_parent[entry_id] = parent
            self._shown_children.setdefault(parent, []).append(entry_id)

    def foldable(self, entry_id: str) -> bool:
        """A root or a segment start with shown children (pi's ``isFoldable``)."""
        if not self._shown_children.get(entry_id):
            return False
        parent = self._shown_parent.get(entry_id)
        return parent is None or len(self._shown_children.get(parent, ())) > 1

    def _segment_start(self, direction: str) -> int:
        """pi's ``findBranchSegmentStart``: the row to jump to (module docstring)."""
        row = self.selected()
        if row is None:
            return self.cursor
        index = {self.rows[i].entry_id: n for n, i in enumerate(self._visible)}
        current = row.entry_id
        if direction == "down":
            while True:
                children = self._shown_children.get(current, [])
                if not children:
                    return index[current]
                if len(children) > 1:
                    return index[children[0]]
                current = children[0]
        while True:
            parent = self._shown_parent.get(current)
            if parent is None:
                return index[current]
            if len(self._shown_children.get(parent, ())) > 1 and index[current] < self.cursor:
                return index[current]
            current = parent

    def _fold_or_up(self) -> None:
        row = self.selected()
        if row is not None and self.foldable(row.entry_id) and row.entry_id not in self.folded:
            self.folded.add(row.entry_id)
            self._filter(keep=row.entry_id)
        else:
            self.cursor = self._segment_start("up")

    def _unfold_or_down(self) -> None:
        row = self.selected()
        if row is not None and row.entry_id in self.folded:
            self.folded.discard(row.entry_id)
            self._filter(keep=row.entry_id)
        else:
            self.cursor = self._segment_start("down")

    def selected(self) -> TreeRow | None:
        return self.rows[self._visible[self.cursor]] if self._visible else None

    def _set_mode(self, mode: str) -> None:
        row = self.selected()
        self.mode = mode
        self.folded.clear()
        self._filter(keep=row.entry_id if row else None)

    def handle(self, event: TermEvent) -> None:
        if self.label_field is not None:
            self._handle_label(event)
            return
        keys = self.keys
        if isinstance(event, Key):
            name = event.name
            row = self.selected()
            if keys.matches(name, "tui.select.cancel"):
                self.finish(None)
            elif keys.matches(name, "tui.select.confirm"):
                if row is not None:
                    self.finish(row.entry_id)
            elif keys.matches(name, "tui.select.up"):
                if self._visible:
                    self.cursor = (self.cursor - 1) % len(self._visible)
            elif keys.matches(name, "tui.select.down"):
                if self._visible:
                    self.cursor = (self.cursor + 1) % len(self._visible)
            elif keys.matches(name, "app.tree.foldOrUp"):
                self._fold_or_up()
            elif keys.matches(name, "app.tree.unfoldOrDown"):
                self._unfold_or_down()
            elif name == "left" or keys.matches(name, "tui.select.pageUp"):
                self.cursor = max(0, self.cursor - VISIBLE_ITEMS)
            elif name == "right" or keys.matches(name, "tui.select.pageDown"):
                self.cursor = min(max(0, len(self._visible) - 1), self.cursor + VISIBLE_ITEMS)
            elif keys.matches(name, "app.tree.editLabel"):
                if row is not None:
                    self.label_field = _Field(row.label or "")
            elif keys.matches(name, "app.tree.toggleLabelTimestamp"):
                self.show_label_times = not self.show_label_times
            elif keys.matches(name, "app.tree.filter.default"):
                self._set_mode("default")
            elif keys.matches(name, "app.tree.filter.cycleForward"):
                at = FILTER_MODES.index(self.mode)
                self._set_mode(FILTER_MODES[(at + 1) % len(FILTER_MODES)])
            elif keys.matches(name, "app.tree.filter.cycleBackward"):
                at = FILTER_MODES.index(self.mode)
                self._set_mode(FILTER_MODES[(at - 1) % len(FILTER_MODES)])
            else:
                for action, mode in _FILTER_KEYS.items():
                    if keys.matches(name, action):
                        self._set_mode("default" if self.mode == mode else mode)
                        return
                if self.search.handle(event, keys):
                    self.folded.clear()
                    self._filter(keep=row.entry_id if row else None)
            return
        if self.search.handle(event, self.keys):
            self.folded.clear()
            self._filter()

    def _handle_label(self, event: TermEvent) -> None:
        field = self.label_field
        assert field is not None
        if isinstance(event, Key):
            if self.keys.matches(event.name, "tui.select.cancel"):
                self.label_field = None
                return
            if self.keys.matches(event.name, "tui.input.submit"):
                self.label_field = None
                row = self.selected()
                if row is not None:
                    label = field.text.strip() or None
                    row.label = label
                    self.on_label(row.entry_id, label)
                    self._filter(keep=row.entry_id)
                return
        field.handle(event, self.keys)

    def render(self, width: int) -> list[str]:
        theme = self.theme
        body = [theme.fg("muted", "Search: ") + self.search.render(width - 8)]
        start = max(0, min(self.cursor - VISIBLE_ITEMS // 2, len(self._visible) - VISIBLE_ITEMS))
        for position in range(start, min(len(self._visible), start + VISIBLE_ITEMS)):
            row = self.rows[self._visible[position]]
            chosen = position == self.cursor
            fold = ""
            if row.entry_id in self.folded:
                fold = "⊞ "
            elif self._shown_parent.get(row.entry_id) is not None and self.foldable(row.entry_id):
                fold = "⊟ "
            text = "  " * row.depth + fold + ("• " if row.current else "") + row.text
            if row.label:
                stamp = ""
                if self.show_label_times and row.label_timestamp:
                    stamp = " " + row.label_timestamp[:16].replace("T", " ")
                text = theme.fg("warning", f"[{row.label}{stamp}] ") + text
            line = truncate(("→ " if chosen else "  ") + text, width)
            body.append(theme.fg("accent", line) if chosen else line)
        tags = _MODE_TAGS_ALL.get(self.mode, "")
        if self.show_label_times:
            tags += " [+label time]"
        if not self._visible:
            body.append(theme.fg("muted", "  No entries found"))
        body.append(
            theme.fg("muted", f"  ({self.cursor + 1 if self._visible else 0}/{len(self._visible)})")
            + (" " + tags.strip() if tags else "")
        )
        if self.label_field is not None:
            body.append(
                theme.fg("accent", "Label (empty clears): ") + self.label_field.render(width - 22)
            )
            return self._frame(width, body, "enter set label · esc cancel")
        hint = (
            "↑↓ move · ←→ page · ^←^→ fold/branch · shift+l label · shift+t label time · "
            "^d ^t ^u ^l ^a filters (^o cycle) · enter select · esc cancel"
        )
        return self._frame(width, body, hint)
