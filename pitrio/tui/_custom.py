"""Extensions' own components (``ctx.ui.custom``, ``ctx.ui.set_footer``), pi's contract.

A component is any object with ``render(width) -> list of lines`` (each line at most
``width`` columns wide; longer lines are cut). For ``ctx.ui.custom`` it may also have
``handle_input(key)``: every key goes to it while it is shown, named as pi's keybindings name
them (``"escape"``, ``"enter"``, ``"up"``, ``"ctrl+c"``, ``"a"``, ``"shift+a"``), and
``handle_paste(text)`` for a bracketed paste. ``invalidate()``, when present, is called when
the theme changes.

The factory is called as pi's: ``factory(tui, theme, keybindings, done)`` for ``custom``
(``done(value)`` closes the component; ``await ctx.ui.custom(...)`` returns ``value``) and
``factory(tui, theme)`` for a footer; it may be a coroutine function. ``tui`` is a
:class:`ComponentHost`.

``ctx.ui.set_editor_component(factory)`` puts ``factory(tui, theme, keybindings)``'s component
in the editor's place (pi's ``EditorComponent``): it gets every key (``handle_input``) and
paste (``handle_paste``) while no dialog is up; ``get_text()`` / ``set_text(text)`` are what
``ctx.ui.get_editor_text`` / ``set_editor_text`` use, and an ``on_submit`` attribute is set to
the app's submit (``on_submit(text)`` sends ``text`` as Enter does). Subclassing
:class:`CustomEditor` (pi's) gives the built-in editor's text editing and the app's keys: a
subclass handles the keys it wants and passes the rest on with
``super().handle_input(key)``. Here ``tui`` is an :class:`EditorHost`.

A component that raises (in ``render`` or ``handle_input``) is closed: ``custom`` answers
``None``, a footer or an editor goes back to the built-in one; the error is shown in the chat
and logged, and the screen keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from pitrio.tui._dialogs import Dialog
from pitrio.tui._editor import Editor
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Paste, TermEvent
from pitrio.tui._text import truncate
from pitrio.tui._theme import Theme

__all__ = ["ComponentHost", "CustomDialog", "CustomEditor", "EditorHost", "render_component"]

log = structlog.get_logger(__name__)


class ComponentHost:
    """The ``tui`` a component's factory gets: ask for a new frame, read the screen's size."""

    def __init__(self, request_render: Callable[[], None], size: Callable[[], tuple[int, int]]):
        self._request_render = request_render
        self._size = size

    def request_render(self) -> None:
        """Draw again (after the component's state changed on its own, e.g. a timer)."""
        self._request_render()

    @property
    def columns(self) -> int:
        return self._size()[0]

    @property
    def rows(self) -> int:
        return self._size()[1]


class EditorHost(ComponentHost):
    """The ``tui`` an editor factory gets: a :class:`ComponentHost` with the built-in editor
    and its default key handling."""

    def __init__(
        self,
        request_render: Callable[[], None],
        size: Callable[[], tuple[int, int]],
        editor: Editor,
        default_input: Callable[[str], None],
        default_paste: Callable[[str], None],
    ):
        super().__init__(request_render, size)
        self.editor = editor
        self.default_input = default_input
        """What the app and the built-in editor do with a key."""
        self.default_paste = default_paste


class CustomEditor:
    """pi's ``CustomEditor``: the built-in editor, for an extension to subclass.

    Every method does what the built-in editor does; a subclass overrides ``handle_input``
    for the keys it wants and calls ``super().handle_input(key)`` for the rest (the app's
    keys, Enter to send, text editing), and ``render`` to change the look.
    """

    def __init__(self, tui: EditorHost, theme: Theme, keybindings: Keybindings) -> None:
        self.tui = tui
        self.theme = theme
        self.keybindings = keybindings

    def render(self, width: int) -> list[str]:
        return self.tui.editor.render(width)

    def handle_input(self, key: str) -> None:
        self.tui.default_input(key)

    def handle_paste(self, text: str) -> None:
        self.tui.default_paste(text)

    def get_text(self) -> str:
        return self.tui.editor.text

    def set_text(self, text: str) -> None:
        self.tui.editor.set_text(text)


def render_component(component: Any, width: int) -> list[str]:
    """``component.render(width)`` with every line cut to ``width`` (errors propagate)."""
    lines = component.render(width)
    return [truncate(str(line), width) for line in lines]


class CustomDialog(Dialog):
    """An extension's component in the editor's place (module docstring). ``on_error`` is
    told what the component raised (it is then closed with ``None``)."""

    def __init__(
        self, theme: Theme, keys: Keybindings, on_error: Callable[[BaseException], None]
    ) -> None:
        super().__init__(theme, keys, "")
        self.component: Any = None
        self.on_error = on_error

    def _failed(self, exc: Exception) -> None:
        log.exception("extension_component_failed")
        self.finish(None)
        self.on_error(exc)

    def handle(self, event: TermEvent) -> None:
        component = self.component
        if component is None or self.done.is_set():
            return
        try:
            if isinstance(event, Paste):
                handler = getattr(component, "handle_paste", None)
                if handler is not None:
                    handler(event.text)
                return
            handler = getattr(component, "handle_input", None)
            if handler is not None:
                handler(event.name)
        except Exception as exc:
            self._failed(exc)

    def render(self, width: int) -> list[str]:
        if self.component is None or self.done.is_set():
            return []
        try:
            return render_component(self.component, width)
        except Exception as exc:
            self._failed(exc)
            return []
