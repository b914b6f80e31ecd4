"""``ctx.ui`` answered by the terminal UI (the :class:`~pitrio.extensions.ExtensionUI`
protocol).

The object exists before the app (extensions load, and may call ``ctx.ui``, before the
screen is up): until :meth:`TuiExtensionUI.attach` gives it the app, dialogs answer their
defaults at once (as print mode's) and the fire-and-forget calls are kept and applied once
attached. Dialogs take the editor's place one at a time; ``timeout_ms`` answers the default
when nobody answered in time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from pitrio.tui._custom import ComponentHost, CustomDialog, EditorHost
from pitrio.tui._dialogs import ConfirmDialog, EditorDialog, InputDialog, SelectDialog
from pitrio.tui._host import AppHost

__all__ = ["TuiExtensionUI"]


class TuiExtensionUI:
    """``ctx.ui`` for the interactive mode (module docstring)."""

    def __init__(self) -> None:
        self._app: AppHost | None = None
        self._pending: list[Callable[[AppHost], None]] = []
        self._editor_factory: Callable[..., Any] | None = None

    @property
    def app(self) -> AppHost | None:
        """The app answering, if it is up."""
        return self._app

    def attach(self, app: AppHost | None) -> None:
        """Answer through ``app`` from now on (``None``: the app is gone)."""
        self._app = app
        if app is not None:
            pending, self._pending = self._pending, []
            for apply in pending:
                apply(app)

    def _apply(self, change: Callable[[AppHost], None]) -> None:
        if self._app is None:
            self._pending.append(change)
            return
        change(self._app)
        self._app.request_render()

    @property
    def has_ui(self) -> bool:
        return True

    async def select(
        self, title: str, options: Sequence[str], *, timeout_ms: float | None = None
    ) -> str | None:
        app = self._app
        if app is None or not options:
            return None
        dialog = SelectDialog(app.theme, app.keys, title, list(options))
        index = await app.show_dialog(dialog, _seconds(timeout_ms))
        return options[index] if isinstance(index, int) else None

    async def confirm(self, title: str, message: str, *, timeout_ms: float | None = None) -> bool:
        app = self._app
        if app is None:
            return False
        answer = await app.show_dialog(
            ConfirmDialog(app.theme, app.keys, title, message), _seconds(timeout_ms)
        )
        return bool(answer)

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout_ms: float | None = None
    ) -> str | None:
        app = self._app
        if app is None:
            return None
        answer = await app.show_dialog(
            InputDialog(app.theme, app.keys, title, placeholder), _seconds(timeout_ms)
        )
        return answer if isinstance(answer, str) else None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        app = self._app
        if app is None:
            return None
        answer = await app.show_dialog(EditorDialog(app.theme, app.keys, title, prefill or ""))
        return answer if isinstance(answer, str) else None

    async def custom(self, factory: Callable[..., Any], options: Any = None) -> Any:
        """pi's ``ctx.ui.custom``: the component ``factory(tui, theme, keybindings, done)``
        makes takes the editor's place and gets the keys until it calls ``done(value)``;
        returns ``value`` (``None`` without the app, or when the component failed). pi's
        overlay ``options`` are accepted; the component is shown in the editor's place.
        See :mod:`pitrio.tui._custom` for the component contract."""
        app = self._app
        if app is None:
            return None

        def failed(exc: BaseException) -> None:
            app.notify(f"Extension component failed: {type(exc).__name__}: {exc}", "error")

        dialog = CustomDialog(app.theme, app.keys, failed)

        def done(value: Any = None) -> None:
            dialog.finish(value)
            app.request_render()

        component = factory(self._host(app), app.theme, app.keys, done)
        if inspect.isawaitable(component):
            component = await component
        dialog.component = component
        return await app.show_dialog(dialog)

    def set_footer(self, factory: Callable[..., Any] | None) -> None:
        """pi's ``ctx.ui.setFooter``: the component ``factory(tui, theme)`` makes replaces the
        footer (``None``: the built-in footer again)."""

        def change(app: AppHost) -> None:
            app.footer = None if factory is None else factory(self._host(app), app.theme)

        self._apply(change)

    def set_editor_component(self, factory: Callable[..., Any] | None) -> None:
        """pi's ``ctx.ui.setEditorComponent``: the component ``factory(tui, theme,
        keybindings)`` makes takes the editor's place (``None``: the built-in editor again).
        See :mod:`pitrio.tui._custom` for the contract."""
        self._editor_factory = factory

        def change(app: AppHost) -> None:
            if factory is None:
                app.set_editor_component(None)
                return
            host = EditorHost(
                app.request_render,
                app.terminal.size,
                app.editor,
                app.default_input,
                app.default_paste,
            )
            try:
                component = factory(host, app.theme, app.keys)
            except Exception as exc:
                app.notify(f"Extension editor failed: {type(exc).__name__}: {exc}", "error")
                return
            app.set_editor_component(component)

        self._apply(change)

    def get_editor_component(self) -> Callable[..., Any] | None:
        """The factory last given to :meth:`set_editor_component` (``None``: built-in)."""
        return self._editor_factory

    def get_editor_text(self) -> str:
        """pi's ``ctx.ui.getEditorText`` (empty before the app is up)."""
        app = self._app
        if app is None:
            return ""
        get_text = getattr(app.editor_component, "get_text", None)
        return str(get_text()) if get_text is not None else app.editor.text

    def paste_to_editor(self, text: str) -> None:
        """pi's ``ctx.ui.pasteToEditor``: as if the user pasted ``text``."""
        self._apply(lambda app: app.default_paste(text))

    def get_tools_expanded(self) -> bool:
        """Whether tool output is shown whole (Ctrl+O)."""
        return self._app.expand_tools if self._app is not None else False

    def set_tools_expanded(self, expanded: bool) -> None:
        def change(app: AppHost) -> None:
            if app.expand_tools != expanded:
                app.toggle_tools_expanded()

        self._apply(change)

    @staticmethod
    def _host(app: AppHost) -> ComponentHost:
        return ComponentHost(app.request_render, app.terminal.size)

    def notify(self, message: str, type: str = "info") -> None:
        self._apply(lambda app: app.notify(message, type))

    def set_status(self, key: str, text: str | None) -> None:
        def change(app: AppHost) -> None:
            if text:
                app.statuses[key] = text
            else:
                app.statuses.pop(key, None)

        self._apply(change)

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | Callable[..., Any] | None,
        *,
        placement: str | None = None,
    ) -> None:
        """pi's ``ctx.ui.setWidget``: lines, or the component ``factory(tui, theme)`` makes,
        above (or with ``placement="belowEditor"`` below) the editor; ``None`` removes it."""

        def change(app: AppHost) -> None:
            if lines is None:
                app.widgets.pop(key, None)
            elif callable(lines):
                try:
                    component = lines(self._host(app), app.theme)
                except Exception as exc:
                    app.notify(f"Extension widget failed: {type(exc).__name__}: {exc}", "error")
                    return
                app.widgets[key] = (component, placement or "aboveEditor")
            else:
                app.widgets[key] = (list(lines), placement or "aboveEditor")

        self._apply(change)

    def set_header(self, factory: Callable[..., Any] | None) -> None:
        """pi's ``ctx.ui.setHeader``: the component ``factory(tui, theme)`` makes replaces the
        start-up header (``None``: the built-in header again)."""

        def change(app: AppHost) -> None:
            if factory is None:
                app.set_header_component(None)
                return
            try:
                component = factory(self._host(app), app.theme)
            except Exception as exc:
                app.notify(f"Extension header failed: {type(exc).__name__}: {exc}", "error")
                return
            app.set_header_component(component)

        self._apply(change)

    def set_working_message(self, message: str | None = None) -> None:
        """pi's ``ctx.ui.setWorkingMessage``: the working indicator's text while the agent
        works (``None``: the default)."""

        def change(app: AppHost) -> None:
            app.working_message = message

        self._apply(change)

    def set_title(self, title: str) -> None:
        def change(app: AppHost) -> None:
            app.title = title

        self._apply(change)

    def set_editor_text(self, text: str) -> None:
        def change(app: AppHost) -> None:
            set_text = getattr(app.editor_component, "set_text", None)
            if set_text is not None:
                set_text(text)
            else:
                app.editor.set_text(text)

        self._apply(change)


def _seconds(timeout_ms: float | None) -> float | None:
    return timeout_ms / 1000 if timeout_ms is not None else None
