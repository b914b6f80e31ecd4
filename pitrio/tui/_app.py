"""The interactive app: one more reader of a session's events and sender of its commands.

Kept in one module: the app's event handlers and commands share the screen's state;
components live elsewhere.

Layout, top to bottom: the start-up header, the chat (messages, tools, notices), the working
indicator, the queued messages, extension widgets, the editor (or a dialog in its place), the
completion list, and the footer.

Tasks (one nursery, :meth:`InteractiveApp.run`):

* the **event reader** turns session events into views (:mod:`._chat`): cheap updates only
  (a streaming message's view keeps the message object and reads it when rendered);
* the **input reader** parses the terminal's bytes into keys and pastes and applies them;
* the **render loop** renders at most once per :data:`FRAME_INTERVAL`: every change between
  two frames only marks the screen dirty, so a fast stream costs one render per frame. After
  a render that took long, it pauses as long (at most :data:`MAX_PAUSE`) so the stream keeps
  its share of the time; the last change is on screen one interval, or one such pause and
  a render, later;
* the **signal reader** (SIGWINCH: re-render at the new size; SIGTERM / SIGHUP: quit;
  SIGTSTP / SIGCONT: suspend and resume);
* prompts, commands and shell commands run in tasks of their own, so the input stays live.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import shlex
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import structlog
import trio

from pitrio._exceptions import PitrioError
from pitrio.providers import ImageContent
from pitrio.tui._chat import ChatEvents
from pitrio.tui._complete import (
    CompletionList,
    complete_command,
    complete_file_reference,
    complete_path,
    list_project_files,
)
from pitrio.tui._components import (
    SPINNER,
    AssistantView,
    BashView,
    Lines,
    NoticeView,
    SummaryView,
    ToolView,
    format_tokens,
    short_cwd,
)
from pitrio.tui._custom import render_component
from pitrio.tui._dialogs import Dialog
from pitrio.tui._editor import Editor
from pitrio.tui._keybindings import Keybindings
from pitrio.tui._keys import ESCAPE_TIMEOUT, Key, KeyParser, Paste, TermEvent
from pitrio.tui._markdown import MarkdownRenderer, MarkdownView
from pitrio.tui._render import Container, Renderer
from pitrio.tui._terminal import Terminal
from pitrio.tui._text import truncate, visible_width
from pitrio.tui._theme import Theme
from pitrio.tui._tools import Unavailable, read_clipboard_image

__all__ = ["FRAME_INTERVAL", "AppConfig", "InteractiveApp", "RenderStats"]

log = structlog.get_logger(__name__)

FRAME_INTERVAL: Final = 1 / 60
"""The frame budget: at most one render per interval."""
MAX_PAUSE: Final = 0.1
"""The longest pause after a frame that took long to render (what the next frame may lag)."""
SPINNER_INTERVAL: Final = 0.08
DOUBLE_PRESS: Final = 0.5
"""Seconds within which a second Ctrl+C quits."""
BASH_CHUNKS: Final = 64
"""Output chunks of a ``!cmd`` waiting for the app (more are dropped from the live view; the
final output is shown whole)."""

THINKING_TOKENS: Final = {
    "off": "thinkingOff",
    "minimal": "thinkingMinimal",
    "low": "thinkingLow",
    "medium": "thinkingMedium",
    "high": "thinkingHigh",
    "xhigh": "thinkingXhigh",
}


@attrs.define
class RenderStats:
    """What the render loop did (for the benchmark and tests)."""

    frames: int = 0
    render_seconds: float = 0.0
    max_render_seconds: float = 0.0
    last_frame_at: float = 0.0
    """``trio.current_time()`` when the last frame was written."""


@attrs.frozen(kw_only=True)
class AppConfig:
    """What the app shows and uses besides the session."""

    cwd: str
    version: str
    theme: Theme
    keybindings: Keybindings
    loaded: tuple[tuple[str, str], ...] = ()
    """Header sections: (label, items) for context files, skills, templates, extensions."""
    extension_commands: Callable[[], Sequence[tuple[str, str]]] = lambda: ()
    extension_shortcuts: Callable[[], Mapping[str, Callable[[], Awaitable[None]]]] = lambda: {}
    """Keys extensions bound (``pi.register_shortcut``), as the parser names them."""
    exporter: Callable[[str | None], str] | None = None
    """``/export [file]``: writes the session as HTML, returns where (blocking)."""
    reloader: Callable[[], Awaitable[None]] | None = None
    """``/reload``: loads extensions, skills, prompts and context files again."""
    session_dir: str | None = None
    keybinding_paths: tuple[str, ...] = ()
    """Where ``/reload`` reads ``keybindings.json`` from (the first that exists)."""
    scoped_models: tuple[str, ...] = ()
    """The session's Ctrl+P scope at start (``provider/id``; from ``--models`` or
    ``enabledModels``), what ``/scoped-models`` opens with."""


class InteractiveApp(ChatEvents):
    """The terminal UI for one session (module docstring)."""

    def __init__(self, session: Any, terminal: Terminal, config: AppConfig) -> None:
        self.session = session
        self.terminal = terminal
        self.config = config
        self.theme = config.theme
        self.keys = config.keybindings
        self.markdown = MarkdownRenderer(self.theme)
        self.editor = Editor(self.theme, self.keys)
        self.renderer = Renderer()
        self.stats = RenderStats()
        self.chat = Container()
        self.header = Container()
        self.dialog: Dialog | None = None
        self.completion: CompletionList | None = None
        self.statuses: dict[str, str] = {}
        self.widgets: dict[str, tuple[Any, str]] = {}
        self.working_message: str | None = None
        """``ctx.ui.set_working_message``'s text for the working indicator."""
        self.header_component: Any = None
        """``ctx.ui.set_header``'s component in the start-up header's place."""
        self.title: str | None = None
        self.footer: Any = None
        self.editor_component: Any = None
        self._images: list[tuple[str, ImageContent]] = []
        """Clipboard images pasted since the last send, with their markers in the text."""
        self._event: TermEvent | None = None
        self.working = False
        self.status_text: str | None = None
        self.queue: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self.show_thinking = False
        self.expand_tools = False
        self.exit_code = 0
        self._assistant: AssistantView | None = None
        self._tools: dict[str, ToolView] = {}
        self._live_bash: list[BashView] = []
        self._files: list[str] | None = None
        self._last_ctrl_c = -math.inf
        self._dirty = trio.Event()
        self._quit = trio.Event()
        self._spin = 0
        self._totals = (0, 0, 0, 0, 0.0)
        self._context_usage: Any = None
        self._usage_model: Any = None
        self._dialog_lock = trio.Lock()
        self._input_open = trio.Event()
        self._input_open.set()
        self._input_scope = trio.CancelScope()
        self._nursery: trio.Nursery | None = None
        self._bash_send, self._bash_receive = trio.open_memory_channel[tuple[BashView, str]](
            BASH_CHUNKS
        )
        from pitrio.tui._commands import CommandRunner

        self.commands = CommandRunner(self)
        self.root = Container(
            [
                self.header,
                self.chat,
                Lines(self._render_status),
                Lines(self._render_queue),
                Lines(lambda w: self._render_widgets(w, "aboveEditor")),
                Lines(self._render_input),
                Lines(self._render_completion),
                Lines(lambda w: self._render_widgets(w, "belowEditor")),
                Lines(self._render_footer),
            ]
        )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, initial: Sequence[str] = (), images: Sequence[Any] = ()) -> int:
        """Show the UI until the user quits; ``initial`` prompts are sent first, in order.
        Returns the exit status."""
        self._build_header()
        # Notices given before the run (start-up warnings) stay, after the session's messages.
        early = list(self.chat.children)
        self.rebuild_chat()
        for view in early:
            self.chat.add(view)
        # Rich loads its lexers on first use: here, rather than in the first answer's frame.
        self.markdown.render("```python\npass\n```", 20)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self._event_loop)
                nursery.start_soon(self._render_loop)
                nursery.start_soon(self._input_loop)
                nursery.start_soon(self._signal_loop)
                nursery.start_soon(self._spinner_loop)
                nursery.start_soon(self._bash_output_loop)
                if initial:
                    nursery.start_soon(self._send_initial, list(initial), list(images))
                await self._quit.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            # The last state on screen, and the shell's prompt on a line of its own.
            self.terminal.write_now(self._frame() + "\r\n")
        return self.exit_code

    def quit(self, code: int = 0) -> None:
        self.exit_code = code
        self._quit.set()

    def request_render(self) -> None:
        self._dirty.set()

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in a task of the app's nursery (errors are shown, not raised)."""
        if self._nursery is None:
            return

        async def guarded() -> None:
            try:
                await work()
            except PitrioError as exc:
                self.notify(str(exc), "error")
            except Exception as exc:
                # A command's bug must not take the screen (and the session) down with it:
                # it is shown, and logged with its trace (written once the terminal is back).
                log.exception("interactive_task_failed")
                self.notify(f"{type(exc).__name__}: {exc}", "error")

        self._nursery.start_soon(guarded)

    async def _send_initial(self, prompts: list[str], images: list[Any]) -> None:
        for index, text in enumerate(prompts):
            await self._prompt(text, images=images if index == 0 else None)

    # ------------------------------------------------------------------ rendering

    def _frame(self) -> str:
        started = time.perf_counter()
        width, height = self.terminal.size()
        frame = self.renderer.frame(self.root.render(width), width, height)
        elapsed = time.perf_counter() - started
        if frame.data:
            self.stats.frames += 1
            self.stats.render_seconds += elapsed
            self.stats.max_render_seconds = max(self.stats.max_render_seconds, elapsed)
        return frame.data

    async def _render_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = trio.Event()
            started = trio.current_time()
            data = self._frame()
            if self.title is not None:
                data = f"\x1b]0;{self.title}\x07" + data
                self.title = None
            if data:
                await self.terminal.write(data)
                self.stats.last_frame_at = trio.current_time()
            # At most one frame per interval; after a long render, a pause as long (up to
            # MAX_PAUSE) so that the session's own work (the stream) keeps going.
            elapsed = trio.current_time() - started
            pause = min(elapsed, MAX_PAUSE)
            await trio.sleep_until(started + max(FRAME_INTERVAL, elapsed + pause))

    async def _spinner_loop(self) -> None:
        while True:
            await trio.sleep(SPINNER_INTERVAL)
            if self.working or self.status_text is not None or self._live_bash:
                self._spin = (self._spin + 1) % len(SPINNER)
                self.request_render()

    def _render_status(self, width: int) -> list[str]:
        text = self.status_text
        if text is None and self.working:
            text = self.working_message or "Working... (esc to interrupt)"
        if text is None:
            return []
        spinner = self.theme.fg("accent", SPINNER[self._spin])
        return ["", truncate(f"{spinner} {self.theme.fg('muted', text)}", width)]

    def _render_queue(self, width: int) -> list[str]:
        steering, follow_up = self.queue
        if not steering and not follow_up:
            return []
        lines = [""]
        for label, texts in (("Steering", steering), ("Follow-up", follow_up)):
            for text in texts:
                first = text.split("\n", 1)[0]
                lines.append(truncate(self.theme.fg("dim", f"{label}: {first}"), width))
        lines.append(self.theme.fg("dim", truncate("↳ alt+up to edit all queued messages", width)))
        return lines

    def _render_widgets(self, width: int, placement: str) -> list[str]:
        lines: list[str] = []
        for key, (content, where) in list(self.widgets.items()):
            if where != placement:
                continue
            if isinstance(content, list):
                lines.extend(truncate(line, width) for line in content)
                continue
            try:
                lines.extend(render_component(content, width))
            except Exception as exc:
                # An extension's bug: the widget goes, the screen stays up.
                log.exception("extension_widget_failed")
                self.widgets.pop(key, None)
                self.notify(f"Extension widget failed: {type(exc).__name__}: {exc}", "error")
        return lines

    def set_header_component(self, component: Any) -> None:
        """Show ``component`` in the start-up header's place (``None``: the built-in one)."""
        self.header_component = component
        self._build_header()
        self.request_render()

    def render_header_component(self, width: int) -> list[str]:
        component = self.header_component
        if component is None:
            return []
        try:
            return render_component(component, width)
        except Exception as exc:
            log.exception("extension_header_failed")
            self.header_component = None
            self._build_header()
            self.notify(f"Extension header failed: {type(exc).__name__}: {exc}", "error")
            return []

    def _render_input(self, width: int) -> list[str]:
        lines = [""]
        if self.dialog is not None:
            return lines + self.dialog.render(width)
        if self.editor_component is not None:
            try:
                return lines + render_component(self.editor_component, width)
            except Exception as exc:
                self._editor_component_failed(exc)
        level = str(self.session.thinking_level) if self._supports_thinking() else "off"
        self.editor.border_token = THINKING_TOKENS.get(level, "borderMuted")
        if self.editor.text.startswith("!"):
            self.editor.border_token = "bashMode"
        return lines + self.editor.render(width)

    def _render_completion(self, width: int) -> list[str]:
        if self.completion is None or self.dialog is not None:
            return []
        lines = []
        for index, item in enumerate(self.completion.items):
            label = ("→ " if index == self.completion.selected else "  ") + item.label
            if item.description:
                room = width - visible_width(label) - 2
                if room > 8:
                    label = f"{label}  {self.theme.fg('muted', truncate(item.description, room))}"
            line = truncate(label, width)
            lines.append(
                self.theme.fg("accent", line) if index == self.completion.selected else line
            )
        return lines

    def _supports_thinking(self) -> bool:
        try:
            return bool(self.session.supports_thinking())
        except Exception:
            return False

    def _render_footer(self, width: int) -> list[str]:
        footer = self.footer
        if footer is not None:
            try:
                return render_component(footer, width)
            except Exception as exc:
                # An extension's bug: the built-in footer comes back, the screen stays up.
                log.exception("extension_footer_failed")
                self.footer = None
                self.notify(f"Extension footer failed: {type(exc).__name__}: {exc}", "error")
        theme = self.theme
        session = self.session
        top = short_cwd(self.config.cwd)
        name = session.session_name
        if name:
            top += f" • {name}"
        inp, out, cache_read, cache_write, cost = self._totals
        parts = []
        if inp:
            parts.append(f"↑{format_tokens(inp)}")
        if out:
            parts.append(f"↓{format_tokens(out)}")
        if cache_read:
            parts.append(f"R{format_tokens(cache_read)}")
        if cache_write:
            parts.append(f"W{format_tokens(cache_write)}")
        if cost:
            parts.append(f"${cost:.3f}")
        if self._usage_model is not session.model:
            self._update_totals()  # a new model: a new context window
        usage = self._context_usage
        if usage is not None:
            percent = "?" if usage.percent is None else f"{usage.percent:.1f}%"
            parts.append(f"{percent}/{format_tokens(usage.context_window)}")
        left = " ".join(parts)
        model = session.model
        right = f"({model.provider}) {model.id}" if model is not None else "no model"
        if model is not None and self._supports_thinking():
            right += f" • {session.thinking_level}"
        gap = width - visible_width(left) - visible_width(right)
        second = f"{left}{' ' * gap}{right}" if gap >= 2 else truncate(f"{left}  {right}", width)
        lines = [
            theme.fg("dim", truncate(top, width)),
            theme.fg("dim", second),
        ]
        if self.statuses:
            status = " ".join(text for text in self.statuses.values() if text)
            lines.append(truncate(status, width))
        return lines

    def set_theme(self, theme: Theme) -> None:
        """Draw everything again in ``theme``."""
        self.theme = theme
        self.markdown = MarkdownRenderer(theme)
        self.editor.theme = theme
        for component in (self.footer, getattr(self.dialog, "component", None)):
            invalidate = getattr(component, "invalidate", None)
            if invalidate is not None:
                invalidate()
        self._build_header()
        self.rebuild_chat()
        self.renderer.reset()

    async def reload_keybindings(self) -> None:
        """Read ``keybindings.json`` again (``/reload``)."""
        if self.config.keybinding_paths:
            paths = self.config.keybinding_paths
            self.keys = await trio.to_thread.run_sync(Keybindings.load, paths)
            self.editor.keys = self.keys
            self._build_header()

    # ------------------------------------------------------------------ input

    async def _input_loop(self) -> None:
        parser = KeyParser()
        while True:
            await self._input_open.wait()
            with trio.CancelScope() as self._input_scope:
                await self._read_input(parser)

    def pause_input(self) -> None:
        """Stop reading the terminal (another program reads it) until :meth:`resume_input`."""
        self._input_open = trio.Event()
        self._input_scope.cancel()

    def resume_input(self) -> None:
        self._input_open.set()

    async def _read_input(self, parser: KeyParser) -> None:
        while True:
            data: bytes | None = None
            if parser.pending:
                with trio.move_on_after(ESCAPE_TIMEOUT):
                    data = await self.terminal.read()
                if data is None:
                    for event in parser.flush():
                        self.handle(event)
                    continue
            else:
                data = await self.terminal.read()
            if not data:
                self.quit()
                return
            for event in parser.feed(data):
                self.handle(event)

    def handle(self, event: TermEvent) -> None:
        """Apply a key or a paste: to the dialog shown, else to an extension's editor
        (``ctx.ui.set_editor_component``), else as the built-in editor does."""
        self.request_render()
        if self.dialog is not None:
            self.dialog.handle(event)
            return
        component = self.editor_component
        if component is None:
            self._default_input(event)
            return
        self._event = event
        try:
            if isinstance(event, Paste):
                handler = getattr(component, "handle_paste", None)
            else:
                handler = getattr(component, "handle_input", None)
            if handler is None:
                self._default_input(event)
            else:
                handler(event.text if isinstance(event, Paste) else event.name)
        except Exception as exc:
            self._editor_component_failed(exc)
        finally:
            self._event = None

    def default_input(self, key: str) -> None:
        """What the built-in editor and the app's keys do with ``key`` (named as
        ``keybindings.json`` names keys): an extension's editor passes on the keys it does not
        use (pi's ``CustomEditor``: ``super().handle_input(key)``)."""
        event = self._event
        if not isinstance(event, Key) or event.name != key:
            event = Key(key, key if len(key) == 1 else None)
        self._default_input(event)

    def default_paste(self, text: str) -> None:
        """What the built-in editor does with a paste (large ones show as a marker)."""
        self._default_input(Paste(text))

    def set_editor_component(self, component: Any) -> None:
        """Show ``component`` in the editor's place and give it the keys (``None``: the
        built-in editor again). A component with an ``on_submit`` attribute gets the app's
        submit (``on_submit(text)`` sends ``text`` as Enter would)."""
        self.editor_component = component
        if component is not None and hasattr(component, "on_submit"):
            component.on_submit = self.submit_text
        self.request_render()

    def _editor_component_failed(self, exc: Exception) -> None:
        # An extension's bug: the built-in editor comes back, the screen stays up.
        log.exception("extension_editor_failed")
        self.editor_component = None
        self.notify(f"Extension editor failed: {type(exc).__name__}: {exc}", "error")

    def _default_input(self, event: TermEvent) -> None:
        if isinstance(event, Paste):
            self.editor.paste(event.text)
            self._update_completion()
            return
        if self.completion is not None and self._complete_key(event):
            return
        shortcut = self.config.extension_shortcuts().get(event.name)
        if shortcut is not None:
            self.spawn(shortcut)
            return
        keys = self.keys
        for action in keys.actions(event.name):
            if self._app_action(action):
                return
        result = self.editor.handle_key(event)
        if result == "submit":
            self.submit()
        elif result == "unhandled":
            if keys.matches(event.name, "app.exit") and self.editor.is_empty():
                self.quit()
            elif keys.matches(event.name, "tui.input.tab"):
                self._tab_complete()
            return
        self._update_completion()

    def _app_action(self, action: str) -> bool:
        """Run an app-level action; False when it does not apply now."""
        session = self.session
        match action:
            case "app.interrupt":
                if self._live_bash:
                    session.abort_bash()
                elif self.status_text is not None and session.is_compacting:
                    session.abort_compaction()
                elif self.status_text is not None and session.is_retrying:
                    session.abort_retry()
                elif self.working:
                    self.spawn(self._abort)
                else:
                    return False
                return True
            case "app.clear":
                now = trio.current_time()
                if now - self._last_ctrl_c < DOUBLE_PRESS:
                    self.quit()
                    return True
                self._last_ctrl_c = now
                self.editor.set_text("")
                self.completion = None
                return True
            case "app.suspend":
                self._suspend()
                return True
            case "app.clipboard.pasteImage":
                self.spawn(self._paste_image)
                return True
            case "app.editor.external":
                self.spawn(self._external_editor)
                return True
            case "app.thinking.cycle":
                self.spawn(self.commands.cycle_thinking)
                return True
            case "app.thinking.toggle":
                self.show_thinking = not self.show_thinking
                for child in self.chat.children:
                    if isinstance(child, AssistantView):
                        child.show_thinking = self.show_thinking
                        child.invalidate()
                return True
            case "app.tools.expand":
                self.toggle_tools_expanded()
                return True
            case "app.model.select":
                self.spawn(lambda: self.commands.run("model", ""))
                return True
            case "app.model.cycleForward" | "app.model.cycleBackward":
                direction = "forward" if action.endswith("Forward") else "backward"
                self.spawn(lambda: self.commands.cycle_model(direction))
                return True
            case "app.message.followUp":
                self.submit(follow_up=True)
                return True
            case "app.message.dequeue":
                if not any(self.queue):
                    return False
                self.spawn(self._dequeue)
                return True
            case "app.session.new" | "app.session.tree" | "app.session.fork" | "app.session.resume":
                name = action.rsplit(".", 1)[-1]
                self.spawn(lambda: self.commands.run(name, ""))
                return True
        return False

    def show_markdown(self, title: str, text: str) -> None:
        """Add ``text`` to the chat as Markdown under ``title`` (``/changelog``)."""
        view = MarkdownView(self.markdown, text)
        heading = self.theme.bold(self.theme.fg("accent", title))
        self.chat.add(Lines(lambda width: ["", heading, "", *view.render(width)]))
        self.request_render()

    def toggle_tools_expanded(self) -> None:
        """Ctrl+O: show tool output whole, or its last lines."""
        self.expand_tools = not self.expand_tools
        for child in self.chat.children:
            if isinstance(child, ToolView | BashView | SummaryView):
                child.expanded = self.expand_tools
                child.invalidate()
        self.request_render()

    def _suspend(self) -> None:
        self.terminal.suspend()
        self.renderer.reset()
        self.request_render()

    async def _external_editor(self) -> None:
        """Ctrl+G: edit the editor's text in ``$VISUAL`` (or ``$EDITOR``) on the terminal."""
        command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not command:
            self.notify("Set $VISUAL or $EDITOR to edit in an external editor", "warning")
            return
        text = self.editor.expanded_text()
        path = await trio.to_thread.run_sync(_write_temp, text)
        terminal = self.terminal
        self.pause_input()
        terminal.leave_raw()
        try:
            await trio.run_process(
                [*shlex.split(command), path],
                check=False,
                stdin=terminal.fd_in,
                stdout=terminal.fd_out,
                stderr=terminal.fd_out,
            )
            edited = await trio.to_thread.run_sync(_read_and_remove, path)
        finally:
            terminal.enter_raw()
            self.resume_input()
            self.renderer.reset()
            self.request_render()
        self.editor.set_text(edited.rstrip("\n"))

    async def _paste_image(self) -> None:
        """Ctrl+V: the clipboard's image goes with the next message; ``[image #N]`` in the
        editor shows where (deleting the marker drops the image)."""
        found = await read_clipboard_image()
        if isinstance(found, Unavailable):
            self.notify(found.message, "warning")
            return
        if found is None:
            self.notify("No image in the clipboard", "warning")
            return
        data = base64.b64encode(found.data).decode("ascii")
        marker = f"[image #{len(self._images) + 1}]"
        self._images.append((marker, ImageContent(data=data, mime_type=found.mime_type)))
        self.editor.insert(marker)
        self.request_render()

    async def _abort(self) -> None:
        """Esc while working: abort, and put the queued messages back into the editor."""
        steering, follow_up = await self.session.clear_queue()
        await self.session.abort()
        queued = [*steering, *follow_up]
        if queued:
            current = self.editor.text
            self.editor.set_text("\n\n".join([*queued, *([current] if current else [])]))
        self.request_render()

    async def _dequeue(self) -> None:
        steering, follow_up = await self.session.clear_queue()
        queued = [*steering, *follow_up]
        if queued:
            current = self.editor.text
            self.editor.set_text("\n\n".join([*queued, *([current] if current else [])]))
        self.request_render()

    def submit(self, *, follow_up: bool = False) -> None:
        """Send the editor's text: a command, a shell command, or a prompt (while the agent
        works: a steering message, or with ``follow_up`` a follow-up)."""
        text = self.editor.expanded_text().strip()
        if not text:
            return
        self.editor.take()
        self.submit_text(text, follow_up=follow_up)

    def submit_text(self, text: str, *, follow_up: bool = False) -> None:
        """Send ``text`` as :meth:`submit` sends the editor's (an extension's editor
        submits through this)."""
        text = text.strip()
        if not text:
            return
        self.completion = None
        images = [image for marker, image in self._images if marker in text]
        self._images = []
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            if self.commands.handles(name):
                self.spawn(lambda: self.commands.run(name, args.strip()))
                return
        if text.startswith("!") and not self.working:
            excluded = text.startswith("!!")
            command = text[2:] if excluded else text[1:]
            if command.strip():
                self.spawn(lambda: self._bash(command.strip(), excluded))
                return
        behavior = "follow_up" if follow_up else "steer"
        self.spawn(lambda: self._prompt(text, images=images, behavior=behavior))

    async def _prompt(
        self, text: str, *, images: Sequence[Any] | None = None, behavior: str = "steer"
    ) -> None:
        try:
            answered = await self.session.prompt(
                text, images=images or None, streaming_behavior=behavior
            )
        except PitrioError as exc:
            self.notify(str(exc), "error")
            return
        if answered is not None:
            self.chat.add(NoticeView(self.theme, answered.text.rstrip(), "text"))
            self.request_render()

    async def _bash(self, command: str, excluded: bool) -> None:
        view = BashView(self.theme, command, excluded=excluded)
        view.expanded = self.expand_tools
        self.chat.add(view)
        self._live_bash.append(view)
        self.request_render()
        send = self._bash_send

        def on_chunk(chunk: str) -> None:
            # When the app is behind, the live view skips the chunk; the final output is
            # shown whole.
            with contextlib.suppress(trio.WouldBlock):
                send.send_nowait((view, chunk))

        try:
            result = await self.session.execute_bash(
                command, exclude_from_context=excluded, on_chunk=on_chunk
            )
            view.finish(result.output, result.exit_code, cancelled=result.cancelled)
        finally:
            self._live_bash.remove(view)
            self.request_render()

    async def _bash_output_loop(self) -> None:
        async for view, chunk in self._bash_receive:
            if not view.done:
                view.append(chunk)
                self.request_render()

    # ------------------------------------------------------------------ completion

    def command_list(self) -> list[tuple[str, str]]:
        commands = list(self.commands.descriptions())
        commands.append(("context", "Show the context envelope sent to the model"))
        for name, description in self.config.extension_commands():
            commands.append((name, description))
        for skill in getattr(self.session, "skills", ()):
            commands.append((f"skill:{skill.name}", getattr(skill, "description", "") or ""))
        for template in getattr(self.session, "prompt_templates", ()):
            commands.append((template.name, getattr(template, "description", "") or ""))
        return commands

    def _update_completion(self) -> None:
        editor = self.editor
        line = editor.lines[editor.row]
        if editor.row == 0 and len(editor.lines) == 1 and line.startswith("/"):
            self.completion = complete_command(line[: editor.col], self.command_list())
            return
        before = line[: editor.col]
        token = before.rsplit(None, 1)[-1] if before.strip() else ""
        if token.startswith("@") and not before.endswith(" "):
            if self._files is None:
                self._files = []
                self.spawn(self._load_files)
            self.completion = complete_file_reference(line, editor.col, self._files)
            return
        self.completion = None

    async def _load_files(self) -> None:
        self._files = await trio.to_thread.run_sync(list_project_files, self.config.cwd)
        self._update_completion()
        self.request_render()

    def _tab_complete(self) -> None:
        self.spawn(self._complete_path)

    async def _complete_path(self) -> None:
        editor = self.editor
        line, col = editor.lines[editor.row], editor.col
        found = await trio.to_thread.run_sync(complete_path, line, col, self.config.cwd)
        if found is None or (editor.lines[editor.row], editor.col) != (line, col):
            return  # nothing to complete, or the user typed on meanwhile
        self.completion = found
        if len(found.items) == 1:
            self._accept_completion()
        self.request_render()

    def _complete_key(self, event: Key) -> bool:
        completion = self.completion
        assert completion is not None
        keys = self.keys
        if keys.matches(event.name, "tui.select.up"):
            completion.selected = (completion.selected - 1) % len(completion.items)
        elif keys.matches(event.name, "tui.select.down"):
            completion.selected = (completion.selected + 1) % len(completion.items)
        elif keys.matches(event.name, "tui.input.tab"):
            self._accept_completion()
        elif keys.matches(event.name, "tui.select.confirm"):
            self._accept_completion()
            if self.editor.text.startswith("/"):
                return False  # enter on a command: accept it and submit
        elif event.name == "escape":
            self.completion = None
        else:
            return False
        return True

    def _accept_completion(self) -> None:
        completion = self.completion
        self.completion = None
        if completion is None or not completion.items:
            return
        item = completion.items[completion.selected]
        editor = self.editor
        line = editor.lines[editor.row]
        value = item.value
        suffix = "" if value.endswith("/") else " "
        editor.replace_line(line[: completion.start] + value + suffix + line[editor.col :])
        editor.col = completion.start + len(value) + len(suffix)
        if value.endswith("/"):
            self._update_completion()

    # ------------------------------------------------------------------ dialogs

    async def show_dialog(self, dialog: Dialog, time_limit: float | None = None) -> Any:
        """Show ``dialog`` in the editor's place until it is answered (or ``time_limit``
        seconds pass: ``None``); one dialog at a time."""
        async with self._dialog_lock:
            self.dialog = dialog
            self.request_render()
            try:
                with trio.move_on_after(time_limit if time_limit is not None else math.inf):
                    await dialog.done.wait()
            finally:
                self.dialog = None
                self.request_render()
        return dialog.result

    # ------------------------------------------------------------------ signals

    async def _signal_loop(self) -> None:
        wanted = [signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP, signal.SIGCONT, signal.SIGTSTP]
        with trio.open_signal_receiver(*wanted) as signals:
            async for number in signals:
                if number == signal.SIGWINCH:
                    self.request_render()
                elif number in (signal.SIGTERM, signal.SIGHUP):
                    self.quit(128 + number)
                elif number == signal.SIGTSTP:
                    self._suspend()
                elif number == signal.SIGCONT:
                    self.terminal.enter_raw()
                    self.renderer.reset()
                    self.request_render()


def _write_temp(text: str) -> str:
    handle, path = tempfile.mkstemp(prefix="pitrio-edit-", suffix=".md")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def _read_and_remove(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    finally:
        os.unlink(path)
