"""``ctx.ui``: how an extension talks to whoever drives the session (seed 003, pi 0.73.1).

:class:`ExtensionUI` is the protocol. Dialogs (``select``, ``confirm``, ``input``, ``editor``)
are awaited; the rest (``notify``, ``set_status``, ``set_widget``, ``set_title``,
``set_editor_text``) return at once. The methods that need a terminal (``custom``,
``set_footer``, ``set_header``, ``set_editor_component``, ``paste_to_editor``, the working
message, the tools-expanded state) exist
in every mode: without a terminal they do what pi's do there (nothing, or the empty answer).

* :class:`HeadlessUI` answers what pi 0.73.1's no-UI context answers in print and json modes
  (``confirm`` -> ``False``, ``select`` / ``input`` / ``editor`` / ``custom`` -> ``None``,
  ``get_editor_text`` -> ``""``, the rest do nothing); ``notify`` writes one line to stderr
  (pi drops it), so a headless run still shows what extensions report.
* :class:`UiBridge` speaks pi's extension-UI sub-protocol of RPC mode (docs/rpc.md):
  every call becomes an ``extension_ui_request`` record; a dialog waits for the
  ``extension_ui_response`` with its ``id`` (given to :meth:`UiBridge.feed`) or for its
  ``timeout_ms`` (then it answers the default, as pi). What pi's RPC mode does not forward
  is answered as there: ``custom`` -> ``None``, ``get_editor_text`` -> ``""`` (a client keeps
  its own editor state), ``set_footer`` / ``set_header`` / ``set_editor_component`` /
  ``set_working_message`` do nothing,
  ``paste_to_editor`` is ``set_editor_text``; ``set_widget`` with a component factory instead
  of lines is ignored.
"""

from __future__ import annotations

import math
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, NoReturn, Protocol, TextIO

import attrs
import structlog
import trio

__all__ = ["UI_OUTBOX", "ExtensionUI", "HeadlessUI", "UiBridge"]

log = structlog.get_logger(__name__)

NotifyType = Literal["info", "warning", "error"]

UI_OUTBOX: Final = 64
"""UI requests waiting for the RPC writer. Dialogs wait for room (backpressure); the
fire-and-forget calls, which cannot wait, are dropped (and logged) when 64 are already
waiting: they are display hints, newer ones supersede older ones."""


class ExtensionUI(Protocol):
    """What ``ctx.ui`` offers (the subset of pi's ``ExtensionUIContext`` without a TUI)."""

    @property
    def has_ui(self) -> bool:
        """Whether someone answers dialogs (pi's ``ctx.hasUI``)."""
        ...

    async def select(
        self, title: str, options: Sequence[str], *, timeout_ms: float | None = None
    ) -> str | None: ...

    async def confirm(
        self, title: str, message: str, *, timeout_ms: float | None = None
    ) -> bool: ...

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout_ms: float | None = None
    ) -> str | None: ...

    async def editor(self, title: str, prefill: str | None = None) -> str | None: ...

    def notify(self, message: str, type: NotifyType = "info") -> None: ...

    def set_status(self, key: str, text: str | None) -> None: ...

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | Callable[..., Any] | None,
        *,
        placement: str | None = None,
    ) -> None:
        """Lines (or, on a terminal, a component factory ``factory(tui, theme)``) above or
        below the editor (``placement="belowEditor"``); ``None`` removes them."""
        ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def get_editor_text(self) -> str:
        """The editor's text (``""`` where the front end keeps no editor)."""
        ...

    def paste_to_editor(self, text: str) -> None:
        """Paste into the editor (a large paste shows as a marker, as a user's would)."""
        ...

    async def custom(self, factory: Callable[..., Any], options: Any = None) -> Any:
        """Show the component ``factory(tui, theme, keybindings, done)`` makes until it calls
        ``done(value)``; returns ``value`` (``None`` without a terminal)."""
        ...

    def set_footer(self, factory: Callable[..., Any] | None) -> None:
        """Replace the footer with ``factory(tui, theme)``'s component (``None``: built-in)."""
        ...

    def set_editor_component(self, factory: Callable[..., Any] | None) -> None:
        """Replace the editor with ``factory(tui, theme, keybindings)``'s component (``None``:
        the built-in editor again)."""
        ...

    def get_editor_component(self) -> Callable[..., Any] | None:
        """The factory given to :meth:`set_editor_component` (``None``: the built-in one)."""
        ...

    def get_tools_expanded(self) -> bool:
        """Whether tool output is shown whole (Ctrl+O)."""
        ...

    def set_tools_expanded(self, expanded: bool) -> None: ...

    def set_header(self, factory: Callable[..., Any] | None) -> None:
        """Replace the start-up header with ``factory(tui, theme)``'s component (``None``:
        the built-in header)."""
        ...

    def set_working_message(self, message: str | None = None) -> None:
        """The text of the working indicator while the agent works (``None``: the default)."""
        ...


class _NoTerminal:
    """What the modes without a terminal answer to the terminal-only calls (pi's no-op UI)."""

    async def custom(self, factory: Callable[..., Any], options: Any = None) -> Any:
        return None

    def set_footer(self, factory: Callable[..., Any] | None) -> None:
        pass

    def set_editor_component(self, factory: Callable[..., Any] | None) -> None:
        pass

    def get_editor_component(self) -> Callable[..., Any] | None:
        return None

    def get_editor_text(self) -> str:
        return ""

    def get_tools_expanded(self) -> bool:
        return False

    def set_tools_expanded(self, expanded: bool) -> None:
        pass

    def set_header(self, factory: Callable[..., Any] | None) -> None:
        pass

    def set_working_message(self, message: str | None = None) -> None:
        pass


@attrs.define
class HeadlessUI(_NoTerminal):
    """The UI of print and json modes: dialogs answer their defaults at once."""

    err: TextIO | None = None
    """Where ``notify`` writes (default: ``sys.stderr`` at the time of the call)."""

    @property
    def has_ui(self) -> bool:
        return False

    async def select(
        self, title: str, options: Sequence[str], *, timeout_ms: float | None = None
    ) -> str | None:
        return None

    async def confirm(self, title: str, message: str, *, timeout_ms: float | None = None) -> bool:
        return False

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout_ms: float | None = None
    ) -> str | None:
        return None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return None

    def notify(self, message: str, type: NotifyType = "info") -> None:
        err = self.err if self.err is not None else sys.stderr
        prefix = "" if type == "info" else f"{type.capitalize()}: "
        err.write(f"{prefix}{message}\n")

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | Callable[..., Any] | None,
        *,
        placement: str | None = None,
    ) -> None:
        pass

    def set_title(self, title: str) -> None:
        pass

    def set_editor_text(self, text: str) -> None:
        pass

    def paste_to_editor(self, text: str) -> None:
        pass


Send = Callable[[dict[str, Any]], Awaitable[None]]


class UiBridge(_NoTerminal):
    """``ctx.ui`` over RPC: ``extension_ui_request`` out, ``extension_ui_response`` in.

    Args:
        send: writes one record (a JSON object) to the client, e.g. the RPC server's output.

    Resource handling:
        :meth:`run` owns the outbox: start it in the RPC mode's nursery
        (``nursery.start_soon(bridge.run)``); it forwards requests to ``send`` until cancelled.
        A dialog waits under its caller's cancel scope (an abort ends the wait), and forgets
        its id when it returns, so a late response is dropped.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self._outbox_send, self._outbox = trio.open_memory_channel[dict[str, Any]](UI_OUTBOX)
        self._pending: dict[str, _Pending] = {}

    @property
    def has_ui(self) -> bool:
        return True

    async def run(self) -> NoReturn:
        """Forward queued requests to ``send`` until cancelled."""
        async for record in self._outbox:
            await self._send(record)
        raise AssertionError("unreachable")  # pragma: no cover

    def feed(self, response: Mapping[str, Any]) -> bool:
        """Deliver an ``extension_ui_response``; False when its id matches no open dialog."""
        pending = self._pending.pop(str(response.get("id")), None)
        if pending is None:
            return False
        pending.response = dict(response)
        pending.done.set()
        return True

    async def _dialog(
        self, method: str, fields: dict[str, Any], timeout_ms: float | None
    ) -> dict[str, Any] | None:
        request_id = str(uuid.uuid4())
        record = {"type": "extension_ui_request", "id": request_id, "method": method, **fields}
        if timeout_ms is not None:
            record["timeout"] = timeout_ms
        pending = _Pending()
        self._pending[request_id] = pending
        try:
            await self._outbox_send.send(record)
            # pi's timeout is in milliseconds; an unanswered dialog then answers its default.
            with trio.move_on_after(timeout_ms / 1000 if timeout_ms is not None else math.inf):
                await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        response = pending.response
        if response is None or response.get("cancelled"):
            return None
        return response

    def _fire(self, method: str, fields: dict[str, Any]) -> None:
        record = {
            "type": "extension_ui_request",
            "id": str(uuid.uuid4()),
            "method": method,
            **{k: v for k, v in fields.items() if v is not None},
        }
        try:
            self._outbox_send.send_nowait(record)
        except trio.WouldBlock:
            log.warning("extension_ui_request_dropped", method=method)

    async def select(
        self, title: str, options: Sequence[str], *, timeout_ms: float | None = None
    ) -> str | None:
        fields = {"title": title, "options": list(options)}
        response = await self._dialog("select", fields, timeout_ms)
        value = response.get("value") if response is not None else None
        return value if isinstance(value, str) else None

    async def confirm(self, title: str, message: str, *, timeout_ms: float | None = None) -> bool:
        fields = {"title": title, "message": message}
        response = await self._dialog("confirm", fields, timeout_ms)
        return bool(response.get("confirmed")) if response is not None else False

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout_ms: float | None = None
    ) -> str | None:
        fields: dict[str, Any] = {"title": title}
        if placeholder is not None:
            fields["placeholder"] = placeholder
        response = await self._dialog("input", fields, timeout_ms)
        value = response.get("value") if response is not None else None
        return value if isinstance(value, str) else None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        fields: dict[str, Any] = {"title": title}
        if prefill is not None:
            fields["prefill"] = prefill
        response = await self._dialog("editor", fields, None)
        value = response.get("value") if response is not None else None
        return value if isinstance(value, str) else None

    def notify(self, message: str, type: NotifyType = "info") -> None:
        self._fire("notify", {"message": message, "notifyType": type})

    def set_status(self, key: str, text: str | None) -> None:
        self._fire("setStatus", {"statusKey": key, "statusText": text})

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | Callable[..., Any] | None,
        *,
        placement: str | None = None,
    ) -> None:
        if lines is not None and not isinstance(lines, Sequence):
            return  # a component factory: RPC carries lines only (as pi)
        self._fire(
            "setWidget",
            {
                "widgetKey": key,
                "widgetLines": list(lines) if lines is not None else None,
                "widgetPlacement": placement,
            },
        )

    def set_title(self, title: str) -> None:
        self._fire("setTitle", {"title": title})

    def set_editor_text(self, text: str) -> None:
        self._fire("set_editor_text", {"text": text})

    def paste_to_editor(self, text: str) -> None:
        self.set_editor_text(text)


@attrs.define(eq=False)
class _Pending:
    done: trio.Event = attrs.Factory(trio.Event)
    response: dict[str, Any] | None = None
