"""What commands and ``ctx.ui`` need of the app (a protocol, so that they do not import the
app module that imports them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pitrio.tui._dialogs import Dialog
from pitrio.tui._editor import Editor
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._render import Renderer
from pitrio.tui._terminal import Terminal
from pitrio.tui._theme import Theme

__all__ = ["AppHost"]


class AppHost(Protocol):
    """The :class:`~pitrio.tui.InteractiveApp` as its commands and ``ctx.ui`` see it."""

    session: Any
    terminal: Terminal
    config: Any
    theme: Theme
    keys: Keybindings
    editor: Editor
    renderer: Renderer
    statuses: dict[str, str]
    widgets: dict[str, tuple[Any, str]]
    """Extension widgets by key: (lines or a component, placement)."""
    working_message: str | None
    header_component: Any

    def set_header_component(self, component: Any) -> None: ...

    title: str | None
    status_text: str | None
    footer: Any
    """An extension's footer component (``ctx.ui.set_footer``), or ``None``."""
    editor_component: Any
    """An extension's editor (``ctx.ui.set_editor_component``), or ``None``."""
    expand_tools: bool

    def set_editor_component(self, component: Any) -> None: ...

    def default_input(self, key: str) -> None: ...

    def default_paste(self, text: str) -> None: ...

    def toggle_tools_expanded(self) -> None: ...

    def notify(self, message: str, kind: str = "info") -> None: ...

    def show_markdown(self, title: str, text: str) -> None: ...

    def request_render(self) -> None: ...

    def rebuild_chat(self) -> None: ...

    def quit(self, code: int = 0) -> None: ...

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None: ...

    def set_theme(self, theme: Theme) -> None: ...

    async def reload_keybindings(self) -> None: ...

    async def show_dialog(self, dialog: Dialog, time_limit: float | None = None) -> Any: ...
