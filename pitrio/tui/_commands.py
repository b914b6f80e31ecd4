"""The interactive mode's ``/`` commands (pi 0.73.1's, docs/usage.md).

Each runs in a task of its own (the app's ``spawn``), shows its dialogs in the editor's place
and reports in the chat. Commands the app does not know go to the session as prompts (which
answers ``/context``, runs extension commands and expands skills and templates).
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from pitrio._exceptions import PitrioError
from pitrio.providers import AssistantMessage, TextContent, UserMessage
from pitrio.tui._components import format_tokens
from pitrio.tui._dialogs import InputDialog, ScopedModelsDialog, SelectDialog
from pitrio.tui._host import AppHost
from pitrio.tui._picker import session_choices
from pitrio.tui._theme import Theme
from pitrio.tui._tools import Unavailable, create_secret_gist, gh_ready
from pitrio.tui._tree import TreeDialog, tree_rows

__all__ = ["COMMANDS", "CommandRunner"]

COMMANDS: Final = {
    "quit": "Quit pitrio",
    "new": "Start a new session",
    "model": "Switch models",
    "scoped-models": "Enable/disable models for Ctrl+P cycling",
    "thinking": "Set the thinking level",
    "name": "Set the session's display name",
    "session": "Show the session file, ID, messages, tokens and cost",
    "compact": "Compact the context, optionally with custom instructions",
    "export": "Export the session to HTML",
    "share": "Share the session as a secret GitHub gist (needs gh)",
    "copy": "Copy the last assistant message to the clipboard",
    "resume": "Pick a previous session to resume",
    "tree": "Jump to any point of the session and continue from there",
    "fork": "Create a new session from a previous user message",
    "clone": "Duplicate the current branch into a new session",
    "hotkeys": "Show all keyboard shortcuts",
    "changelog": "Show the changelog",
    "settings": "Thinking level, theme, message delivery",
    "reload": "Reload keybindings, extensions, skills, prompts and context files",
    "login": "Manage credentials",
    "logout": "Manage credentials",
}
_ALIASES: Final = {"exit": "quit"}
THINKING_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh")
SHARE_VIEWER_ENV: Final = "PITRIO_SHARE_VIEWER_URL"
"""A page that shows a shared session from its gist id (``<url>#<gist id>``, as pi's
``PI_SHARE_VIEWER_URL``); unset, ``/share`` gives the gist's own URL."""
CHANGELOG_NAME: Final = "CHANGELOG.md"


def find_changelog() -> str | None:
    """pitrio's changelog: in the package, else at the top of its source checkout."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in (package, os.path.dirname(package)):
        path = os.path.join(folder, CHANGELOG_NAME)
        if os.path.isfile(path):
            return path
    return None


def _read_changelog() -> str | None:
    path = find_changelog()
    if path is None:
        return None
    with open(path, encoding="utf-8") as file:
        return file.read()


def _text_of(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


class CommandRunner:
    """Runs the app's commands (module docstring)."""

    def __init__(self, app: AppHost) -> None:
        self.app = app
        self._handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            name: getattr(self, "_" + name.replace("-", "_")) for name in COMMANDS
        }
        self._scope: list[Any] | None = None
        """The models ``/scoped-models`` chose for Ctrl+P (``None``: the session's own
        scope, from ``--models`` or ``enabledModels``)."""

    def handles(self, name: str) -> bool:
        return _ALIASES.get(name, name) in self._handlers

    def descriptions(self) -> list[tuple[str, str]]:
        return list(COMMANDS.items())

    async def run(self, name: str, args: str) -> None:
        handler = self._handlers[_ALIASES.get(name, name)]
        try:
            await handler(args)
        except PitrioError as exc:
            self.app.notify(str(exc), "error")

    # ------------------------------------------------------------------ helpers

    @property
    def session(self) -> Any:
        return self.app.session

    def _info(self, text: str) -> None:
        self.app.notify(text)

    async def _select(
        self,
        title: str,
        options: list[str],
        descriptions: list[str] | None = None,
        selected: int = 0,
    ) -> int | None:
        app = self.app
        dialog = SelectDialog(
            app.theme, app.keys, title, options, descriptions=descriptions, selected=selected
        )
        result: int | None = await app.show_dialog(dialog)
        return result

    async def _ask(
        self, title: str, placeholder: str | None = None, prefill: str = ""
    ) -> str | None:
        app = self.app
        result: str | None = await app.show_dialog(
            InputDialog(app.theme, app.keys, title, placeholder, prefill)
        )
        return result

    def _after_switch(self, editor_text: str | None = None) -> None:
        app = self.app
        app.rebuild_chat()
        app.renderer.reset()
        if editor_text:
            app.editor.set_text(editor_text)
        app.request_render()

    # ------------------------------------------------------------------ commands

    async def _quit(self, args: str) -> None:
        self.app.quit()

    async def _new(self, args: str) -> None:
        if await self.session.new_session():
            self._after_switch()
            self._info("New session started")

    async def _model(self, args: str) -> None:
        models = list(self.session.available_models)
        if not models:
            self.app.notify("No models available (set a provider's API key)", "warning")
            return
        names = [f"{m.provider}/{m.id}" for m in models]
        current = self.session.model
        selected = 0
        if current is not None:
            key = f"{current.provider}/{current.id}"
            selected = names.index(key) if key in names else 0
        dialog = SelectDialog(
            self.app.theme,
            self.app.keys,
            "Select model",
            names,
            descriptions=[getattr(m, "name", "") or "" for m in models],
            selected=selected,
        )
        if args:
            dialog.search.insert(args)
            dialog._filter()
        index = await self.app.show_dialog(dialog)
        if index is None:
            return
        await self.session.set_model(models[index])
        self._info(f"Model: {names[index]}")

    async def _scoped_models(self, args: str) -> None:
        models = list(self.session.available_models)
        if not models:
            self.app.notify("No models available (set a provider's API key)", "warning")
            return
        names = [f"{m.provider}/{m.id}" for m in models]
        if self._scope is not None:
            enabled = [f"{m.provider}/{m.id}" for m in self._scope]
        else:
            enabled = list(self.app.config.scoped_models)
        answer = await self.app.show_dialog(
            ScopedModelsDialog(self.app.theme, self.app.keys, names, enabled)
        )
        if answer is None:
            return
        chosen, save = answer
        by_name = dict(zip(names, models, strict=True))
        self._scope = [by_name[name] for name in chosen]
        if save:
            await self.session.settings.aset_global("enabledModels", chosen or None)
            self._info(
                f"Saved {len(chosen)} scoped models to settings"
                if chosen
                else "Cleared the scoped models in settings"
            )
        else:
            self._info(
                f"Scoped models: {', '.join(chosen)}"
                if chosen
                else "Scoped models: all (this session)"
            )

    async def cycle_model(self, direction: str) -> None:
        if self._scope:
            await self._cycle_scope(self._scope, direction)
            return
        try:
            result = await self.session.cycle_model(direction)
        except PitrioError as exc:
            self.app.notify(str(exc), "error")
            return
        if result is None:
            self._info("Only one model available")
        else:
            self._info(f"Model: {result.model.provider}/{result.model.id}")

    async def _cycle_scope(self, scope: list[Any], direction: str) -> None:
        """Ctrl+P over the models ``/scoped-models`` chose, in their order."""
        current = self.session.model
        index = next(
            (
                i
                for i, m in enumerate(scope)
                if current is not None and (m.provider, m.id) == (current.provider, current.id)
            ),
            -1 if direction == "forward" else 0,
        )
        if len(scope) == 1 and index == 0:
            self._info("Only one model in scope")
            return
        step = 1 if direction == "forward" else -1
        chosen = scope[(index + step) % len(scope)]
        await self.session.set_model(chosen)
        self._info(f"Model: {chosen.provider}/{chosen.id}")

    async def cycle_thinking(self) -> None:
        level = await self.session.cycle_thinking_level()
        if level is None:
            self._info("The current model does not support thinking")
        self.app.request_render()

    async def _thinking(self, args: str) -> None:
        levels = list(self.session.available_thinking_levels())
        if not levels or not self.session.supports_thinking():
            self._info("The current model does not support thinking")
            return
        if args:
            if args not in THINKING_LEVELS:
                self.app.notify(f"Unknown thinking level: {args}", "error")
                return
            await self.session.set_thinking_level(args)
        else:
            current = str(self.session.thinking_level)
            index = await self._select(
                "Thinking level", levels, selected=levels.index(current) if current in levels else 0
            )
            if index is None:
                return
            await self.session.set_thinking_level(levels[index])
        self._info(f"Thinking level: {self.session.thinking_level}")

    async def _name(self, args: str) -> None:
        name = args or await self._ask("Session name", prefill=self.session.session_name or "")
        if not name:
            current = self.session.session_name
            self._info(f"Session name: {current}" if current else "Usage: /name <name>")
            return
        await self.session.set_session_name(name)
        self._info(f"Session name: {name}")

    async def _session(self, args: str) -> None:
        session = self.session
        user = assistant = tools = 0
        inp = out = cache_read = cache_write = 0
        cost = 0.0
        for entry in session.session_manager.get_entries():
            message = getattr(entry, "message", None)
            if isinstance(message, UserMessage):
                user += 1
            elif isinstance(message, AssistantMessage):
                assistant += 1
                usage = message.usage
                inp, out = inp + usage.input, out + usage.output
                cache_read, cache_write = (
                    cache_read + usage.cache_read,
                    cache_write + usage.cache_write,
                )
                cost += usage.cost.total
            elif getattr(message, "role", None) == "toolResult":
                tools += 1
        lines = [
            "Session info",
            f"  File: {session.session_file or '(not saved)'}",
            f"  ID: {session.session_id}",
        ]
        if session.session_name:
            lines.append(f"  Name: {session.session_name}")
        lines += [
            f"  Messages: {user} user, {assistant} assistant, {tools} tool results",
            f"  Tokens: {format_tokens(inp)} in, {format_tokens(out)} out, "
            f"{format_tokens(cache_read)} cache read, {format_tokens(cache_write)} cache write",
            f"  Cost: ${cost:.4f}",
        ]
        self._info("\n".join(lines))

    async def _compact(self, args: str) -> None:
        # The chat is rebuilt and the result told on the compaction_end event.
        await self.session.compact(args or None)

    async def _export(self, args: str) -> None:
        exporter = self.app.config.exporter
        if exporter is None:
            self.app.notify("Export is not available", "error")
            return
        try:
            written = await trio.to_thread.run_sync(exporter, args or None)
        except (OSError, ValueError, PitrioError) as exc:
            self.app.notify(f"Export failed: {exc}", "error")
            return
        self._info(f"Exported to: {written}")

    async def _share(self, args: str) -> None:
        """pi's ``/share``: the HTML export uploaded as a secret gist with ``gh``."""
        app = self.app
        gh = gh_ready()
        if isinstance(gh, Unavailable):
            app.notify(gh.message, "error")
            return
        exporter = app.config.exporter
        if exporter is None:
            app.notify("Export is not available", "error")
            return
        folder = await trio.to_thread.run_sync(tempfile.mkdtemp, None, "pitrio-share-")
        try:
            target = os.path.join(folder, "session.html")
            try:
                written = await trio.to_thread.run_sync(exporter, target)
            except (OSError, ValueError, PitrioError) as exc:
                app.notify(f"Failed to export session: {exc}", "error")
                return
            app.status_text = "Creating gist..."
            app.request_render()
            try:
                url = await create_secret_gist(gh, written)
            finally:
                app.status_text = None
                app.request_render()
        finally:
            await trio.to_thread.run_sync(shutil.rmtree, folder, True)
        if isinstance(url, Unavailable):
            app.notify(url.message, "error")
            return
        viewer = os.environ.get(SHARE_VIEWER_ENV)
        if viewer:
            self._info(f"Share URL: {viewer}#{url.rsplit('/', 1)[-1]}\nGist: {url}")
        else:
            self._info(f"Share URL: {url}")

    async def _changelog(self, args: str) -> None:
        """pi's ``/changelog``: the changelog as Markdown in the chat."""
        text = await trio.to_thread.run_sync(_read_changelog)
        if text is None:
            self._info(
                f"pitrio ships no {CHANGELOG_NAME} (version {self.app.config.version}); "
                "the history is the git log of its repository"
            )
            return
        self.app.show_markdown("What's New", text)

    async def _copy(self, args: str) -> None:
        text = self.session.get_last_assistant_text()
        if not text:
            self.app.notify("No assistant message to copy", "warning")
            return
        payload = base64.b64encode(text.encode()).decode()
        await self.app.terminal.write(f"\x1b]52;c;{payload}\x07")
        self._info("Copied the last assistant message to the clipboard")

    async def _resume(self, args: str) -> None:
        from pitrio.sessions import SessionManager

        cwd = self.app.config.cwd
        session_dir = self.app.config.session_dir
        sessions = await trio.to_thread.run_sync(SessionManager.list_sessions, cwd, session_dir)
        current = self.session.session_file
        sessions = [s for s in sessions if s.path != current]
        if not sessions:
            self._info("No other sessions in this directory")
            return
        labels, details = session_choices(sessions)
        index = await self._select("Resume session", labels, details)
        if index is None:
            return
        if await self.session.switch_session(sessions[index].path):
            self._after_switch()
            self._info(f"Resumed {os.path.basename(sessions[index].path)}")

    async def _tree(self, args: str) -> None:
        manager = self.session.session_manager
        rows = tree_rows(manager.get_tree(), manager.get_leaf_id())
        if not rows:
            self._info("The session is empty")
            return
        app = self.app

        def on_label(entry_id: str, label: str | None) -> None:
            app.spawn(lambda: self.session.set_label(entry_id, label))

        target = await app.show_dialog(TreeDialog(app.theme, app.keys, rows, on_label))
        if target is None:
            return
        choice = await self._select(
            "Summarize the branch you leave?",
            ["No summary", "Summarize", "Summarize with custom prompt"],
        )
        if choice is None:
            return
        instructions = None
        if choice == 2:
            instructions = await self._ask("Custom summary instructions")
            if instructions is None:
                return
        if choice:
            self.app.status_text = "Summarizing branch... (esc to cancel)"
            self.app.request_render()
        try:
            result = await self.session.navigate_tree(
                target, summarize=choice > 0, custom_instructions=instructions
            )
        finally:
            self.app.status_text = None
        if result.cancelled:
            self._info("Navigation cancelled")
            return
        self._after_switch(result.editor_text)

    async def _fork(self, args: str) -> None:
        branch = self.session.session_manager.get_branch()
        users = [e for e in branch if isinstance(getattr(e, "message", None), UserMessage)]
        if not users:
            self._info("No user messages to fork from")
            return
        labels = [_text_of(e.message).replace("\n", " ")[:200] for e in users]
        index = await self._select("Fork from message", labels, selected=len(labels) - 1)
        if index is None:
            return
        result = await self.session.fork(users[index].id)
        if result.cancelled:
            self._info("Fork cancelled")
            return
        self._after_switch(result.selected_text)
        self._info("Forked to a new session")

    async def _clone(self, args: str) -> None:
        leaf = self.session.session_manager.get_leaf_id()
        if leaf is None:
            self._info("Nothing to clone")
            return
        result = await self.session.fork(leaf, position="at")
        if not result.cancelled:
            self._after_switch()
            self._info("Cloned into a new session")

    async def _hotkeys(self, args: str) -> None:
        rows = self.app.keys.describe()
        width = max(len(keys) for keys, _, _ in rows)
        lines = ["Keyboard shortcuts"]
        lines += [f"  {keys.ljust(width)}  {desc or action}" for keys, action, desc in rows]
        self._info("\n".join(lines))

    async def _settings(self, args: str) -> None:
        session = self.session
        items = [
            ("Thinking level", str(session.thinking_level)),
            ("Steering mode", session.steering_mode),
            ("Follow-up mode", session.follow_up_mode),
            ("Auto-compaction", "on" if session.auto_compaction_enabled else "off"),
            ("Auto-retry", "on" if session.auto_retry_enabled else "off"),
            ("Theme", self.app.theme.name),
        ]
        index = await self._select(
            "Settings", [name for name, _ in items], [value for _, value in items]
        )
        if index is None:
            return
        name = items[index][0]
        if name == "Thinking level":
            await self._thinking("")
        elif name in ("Steering mode", "Follow-up mode"):
            modes = ["all", "one-at-a-time"]
            choice = await self._select(name, modes)
            if choice is not None:
                if name == "Steering mode":
                    session.set_steering_mode(modes[choice])
                else:
                    session.set_follow_up_mode(modes[choice])
        elif name == "Auto-compaction":
            session.set_auto_compaction_enabled(not session.auto_compaction_enabled)
        elif name == "Auto-retry":
            session.set_auto_retry_enabled(not session.auto_retry_enabled)
        elif name == "Theme":
            choice = await self._select("Theme", ["dark", "light"])
            if choice is not None:
                self.app.set_theme(Theme.builtin(["dark", "light"][choice]))
        self._info(f"{name} updated")

    async def _reload(self, args: str) -> None:
        reloader = self.app.config.reloader
        if reloader is not None:
            await reloader()
        await self.app.reload_keybindings()
        self._info("Reloaded keybindings, extensions, skills, prompts and context files")

    async def _login(self, args: str) -> None:
        self.app.notify(
            "Sign in from a shell: `pitrio auth login` (OpenAI Codex), `pitrio auth status` and "
            "`pitrio auth logout`; API keys also come from the environment or --api-key",
            "warning",
        )

    async def _logout(self, args: str) -> None:
        await self._login(args)
