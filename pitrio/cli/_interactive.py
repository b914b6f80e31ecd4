"""The interactive mode: pi's terminal UI on a session (``pitrio`` on a terminal).

Chosen as pi chooses it: no ``-p``, no ``--mode``, and a terminal on stdin and stdout. The
messages given on the command line (and the ``@file`` text) are sent first, in order; then the
user types. Start-up is print mode's (extensions, runtime, resources, session), with
``ctx.ui`` answered by the UI (:class:`~pitrio.tui.TuiExtensionUI`) and no API key required
up front (a prompt without one is refused in the chat, as pi does).

While the UI is up, nothing else may write to the terminal: extension error reports and log
lines that would go to stderr are held back and written after the terminal is restored
(extension errors are also shown in the chat, from their ``extension_error`` events).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import attrs
import trio

import pitrio

if TYPE_CHECKING:
    from pitrio.cli._sessions_cli import PickSession
    from pitrio.cli._setup import CliArgs

__all__ = [
    "HeldStderr",
    "run_interactive_command",
    "run_interactive_session",
    "stdout_is_terminal",
]


class HeldStderr:
    """A text stream that writes through to ``target`` until :meth:`hold`, then keeps what it
    is given until :meth:`release` writes it out."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._held: list[str] | None = None

    def hold(self) -> None:
        self._held = []

    def release(self) -> None:
        held, self._held = self._held, None
        if held:
            self._target.write("".join(held))
            self._target.flush()

    def write(self, text: str) -> int:
        if self._held is not None:
            self._held.append(text)
        else:
            self._target.write(text)
        return len(text)

    def flush(self) -> None:
        if self._held is None:
            self._target.flush()


def run_interactive_command(
    args: CliArgs,
    *,
    err: TextIO,
    env: Mapping[str, str],
    cwd: str,
    pick: PickSession | None = None,
    fd_in: int = 0,
    fd_out: int = 1,
) -> int:
    """Build the runtime the flags describe and run the UI on ``fd_in`` / ``fd_out``; returns
    the exit status."""
    import structlog

    from pitrio.cli._errors import session_failure
    from pitrio.cli._extensions import load_cli_extensions
    from pitrio.cli._setup import CliError, build_runtime
    from pitrio.tui import TuiExtensionUI

    stderr = HeldStderr(err)
    # Log lines must not land in the middle of the screen.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(stderr))  # type: ignore[arg-type]

    def warn(message: str) -> None:
        err.write(f"Warning: {message}\n")

    ui = TuiExtensionUI()
    if args.resume:
        # pi's -r on a terminal: the session selector on the screen, not a numbered list.
        pick = terminal_picker(env, fd_in, fd_out)
    try:
        runner, args = load_cli_extensions(args, cwd=cwd, env=env, err=stderr, ui=ui)  # type: ignore[arg-type]
        runtime = build_runtime(
            args, cwd=cwd, env=env, warn=warn, require_auth=False, notice=warn, pick=pick
        )
    except CliError as exc:
        err.write(f"{exc}\n")
        return exc.exit_code
    runtime = attrs.evolve(runtime, extensions=runner)

    async def run() -> int:
        return await run_interactive_session(
            runtime,
            args=args,
            ui=ui,
            cwd=cwd,
            fd_in=fd_in,
            fd_out=fd_out,
            before_screen=stderr.hold,
            err=err,
        )

    try:
        return trio.run(run)
    except BaseException as exc:
        failure = session_failure(exc)
        if failure is None:
            raise
        err.write(f"Error: {' '.join(str(failure).split())}\n")
        return 1
    finally:
        stderr.release()


def terminal_picker(env: Mapping[str, str], fd_in: int, fd_out: int) -> PickSession:
    """``-r``'s chooser: :func:`~pitrio.tui.pick_session` on the terminal, in a Trio run of
    its own (the session is opened after the choice, before the chat's run). The keys are the
    user's ``keybindings.json``; the theme is the dark one (the settings are not read yet)."""
    from pitrio.sessions.resources import resolve_agent_dirs
    from pitrio.tui import Keybindings, Theme, open_terminal, pick_session

    def pick(sessions: Sequence[Any]) -> Any:
        dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
        keys = Keybindings.load((dirs.config_file("keybindings.json"),))

        async def choose() -> Any:
            with open_terminal(fd_in, fd_out) as terminal:
                return await pick_session(sessions, terminal, Theme.builtin("dark"), keys)

        return trio.run(choose)

    return pick


async def run_interactive_session(
    runtime: Any,
    *,
    args: CliArgs,
    ui: Any,
    cwd: str,
    fd_in: int,
    fd_out: int,
    err: TextIO,
    before_screen: Callable[[], None] = lambda: None,
    initial: Sequence[str] | None = None,
) -> int:
    """Open the session ``runtime`` describes and run the UI until the user quits.

    ``initial`` (default: the command line's messages, with the ``@file`` text joined to the
    first) is sent first.
    """
    from pitrio.cli._coding import load_session_resources, prompt_resources, resource_warnings
    from pitrio.cli._extensions import discover_resources, open_cli_session
    from pitrio.providers import open_http_client
    from pitrio.sessions import run_file_work
    from pitrio.sessions.resources import FileArgumentError, process_file_arguments
    from pitrio.tui import AppConfig, InteractiveApp, Keybindings, open_terminal

    runtime = await discover_resources(runtime)
    file_text: str = ""
    images: tuple[Any, ...] = ()
    if args.file_args:
        try:
            files = await run_file_work(
                functools.partial(
                    process_file_arguments,
                    args.file_args,
                    cwd=cwd,
                    auto_resize_images=runtime.auto_resize_images,
                )
            )
        except FileArgumentError as exc:
            runtime.session_manager.close()
            err.write(f"Error: {exc}\n")
            return 1
        file_text, images = files.text, files.images
    if initial is None:
        messages = list(args.messages)
        first = file_text + (messages[0] if messages else "")
        initial = ([first] if first else []) + messages[1:]
    resources = await load_session_resources(runtime.resources)
    warnings = resource_warnings(resources)
    system_prompt = resources.build_system_prompt(list(runtime.tool_names))
    options = {**runtime.session_options(system_prompt), **prompt_resources(resources)}
    keybinding_paths = (runtime.dirs.config_file("keybindings.json"),)
    keybindings = await trio.to_thread.run_sync(Keybindings.load, keybinding_paths)
    theme = await trio.to_thread.run_sync(_theme, runtime, cwd, warnings, args)
    runner = runtime.extensions
    loaded = _loaded(resources, runner)

    def extension_commands() -> list[tuple[str, str]]:
        if runner is None:
            return []
        return [(name, c.description or "") for name, c in runner.commands().items()]

    def extension_shortcuts() -> dict[str, Callable[[], Awaitable[None]]]:
        if runner is None:
            return {}
        from pitrio._awaitable import maybe_await
        from pitrio.extensions import ExtensionContext
        from pitrio.tui import normalize_key

        def bind(handler: Any) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                await maybe_await(handler(ExtensionContext(runner)))

            return run

        return {
            normalize_key(key): bind(shortcut.handler)
            for key, shortcut in runner.shortcuts().items()
        }

    def exporter(output: str | None) -> str:
        from pitrio.cli._export_html import export_session_file

        path = runtime.session_manager.get_session_file()
        if path is None or not os.path.exists(path):
            raise ValueError("the session is not saved yet (nothing to export)")
        return export_session_file(path, output, cwd=cwd)

    config = AppConfig(
        cwd=cwd,
        version=pitrio.__version__,
        theme=theme,
        keybindings=keybindings,
        loaded=tuple(loaded),
        extension_commands=extension_commands,
        extension_shortcuts=extension_shortcuts,
        exporter=exporter,
        reloader=runner.reload if runner is not None and runner.extensions else None,
        session_dir=runtime.session_manager.get_session_dir(),
        keybinding_paths=keybinding_paths,
        scoped_models=tuple(f"{s.model.provider}/{s.model.id}" for s in runtime.scoped_models),
    )
    async with open_http_client(), open_cli_session(runtime, options) as session:
        before_screen()
        with open_terminal(fd_in, fd_out) as terminal:
            app = InteractiveApp(session, terminal, config)
            ui.attach(app)
            for warning in [*warnings, *keybindings.errors]:
                app.notify(warning, "warning")
            fallback = session.model_fallback_message
            if fallback:
                app.notify(fallback, "warning")
            try:
                return await app.run(initial, images)
            finally:
                ui.attach(None)


def _theme(runtime: Any, cwd: str, warnings: list[str], args: CliArgs) -> Any:
    """The theme to draw with: the ``theme`` setting when it names a theme (built-in, given
    with ``--theme``, or a ``NAME.json`` in a themes folder), else the last ``--theme``, else
    dark. ``--theme`` takes a built-in name, a file's path, or a name found in the themes
    folders; ``--no-themes`` searches no folder (built-ins and ``--theme`` paths only)."""
    from pitrio.tui import Theme, ThemeError, load_theme

    dirs: tuple[str, ...] = ()
    if not args.no_themes:
        dirs = (
            os.path.join(runtime.agent_dir, "themes"),
            *(os.path.join(d, "themes") for d in runtime.dirs.fallback_dirs),
            os.path.join(cwd, ".pi", "themes"),
        )
    given = []
    for value in args.themes:
        try:
            given.append(load_theme(value, dirs))
        except ThemeError as exc:
            warnings.append(f"--theme {value}: {exc}")
    fallback = given[-1] if given else Theme.builtin("dark")
    name = runtime.settings.get("theme") if hasattr(runtime.settings, "get") else None
    if not isinstance(name, str) or not name:
        return fallback
    for theme in given:
        if theme.name == name:
            return theme
    try:
        return load_theme(name, dirs)
    except ThemeError as exc:
        warnings.append(f"{exc}; using the {fallback.name} theme")
        return fallback


def _loaded(resources: Any, runner: Any) -> list[tuple[str, str]]:
    sections: list[tuple[str, str]] = []
    home = os.path.expanduser("~")

    def short(path: str) -> str:
        return "~" + path[len(home) :] if home and path.startswith(home + os.sep) else path

    if resources.context_files:
        sections.append(("Context", ", ".join(short(f.path) for f in resources.context_files)))
    if resources.skills:
        sections.append(("Skills", ", ".join(s.name for s in resources.skills)))
    if resources.prompts:
        sections.append(("Prompts", ", ".join(f"/{p.name}" for p in resources.prompts)))
    if runner is not None and runner.extensions:
        sections.append(("Extensions", ", ".join(short(e.path) for e in runner.extensions)))
    return sections


def stdout_is_terminal(out: Any) -> bool:
    """Whether ``out`` (a binary stream) is a terminal."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False
