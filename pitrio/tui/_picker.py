"""``-r`` on a terminal: the ``/resume`` selector, full screen, before the session opens.

pi shows its session selector for ``--resume`` before the chat starts; this is the same list as
``/resume`` (:func:`session_choices`, searchable), drawn with the app's renderer on a terminal in
raw mode, and erased once answered so the chat starts where it stood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from pitrio.tui._dialogs import SelectDialog
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import ESCAPE_TIMEOUT, KeyParser
from pitrio.tui._render import Renderer
from pitrio.tui._terminal import Terminal
from pitrio.tui._theme import Theme

__all__ = ["pick_session", "session_choices"]


def session_choices(sessions: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Labels (the name, else the first message) and details (when, how many messages) of
    ``sessions`` (:class:`~pitrio.sessions.SessionInfo`), as the selectors show them."""
    labels = [(s.name or s.first_message or s.id).replace("\n", " ")[:200] for s in sessions]
    details = [f"{s.modified:%Y-%m-%d %H:%M} · {s.message_count} messages" for s in sessions]
    return labels, details


async def pick_session(
    sessions: Sequence[Any], terminal: Terminal, theme: Theme, keys: Keybindings
) -> Any | None:
    """The session the user chose on ``terminal`` (``None``: cancelled, or end of input)."""
    labels, details = session_choices(sessions)
    dialog = SelectDialog(theme, keys, "Resume session", labels, descriptions=details)
    renderer = Renderer()
    parser = KeyParser()

    def draw() -> None:
        width, height = terminal.size()
        terminal.write_now(renderer.frame(dialog.render(width), width, height).data)

    try:
        draw()
        while not dialog.done.is_set():
            data: bytes | None = None
            if parser.pending:
                with trio.move_on_after(ESCAPE_TIMEOUT):
                    data = await terminal.read()
                events = parser.flush() if data is None else parser.feed(data)
            else:
                data = await terminal.read()
                if not data:
                    return None
                events = parser.feed(data)
            for event in events:
                dialog.handle(event)
                if dialog.done.is_set():
                    break
            draw()
    finally:
        width, height = terminal.size()
        terminal.write_now(renderer.frame([], width, height).data)
    index = dialog.result
    return sessions[index] if isinstance(index, int) else None
