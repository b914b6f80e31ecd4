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

A component that raises (in ``render`` or ``handle_input``) is closed: ``custom`` answers
``None``, a footer goes back to the built-in one; the error is shown in the chat and logged,
and the screen keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from pitrio.tui._dialogs import Dialog
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import Paste, TermEvent
from pitrio.tui._text import truncate
from pitrio.tui._theme import Theme

__all__ = ["ComponentHost", "CustomDialog", "render_component"]

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
