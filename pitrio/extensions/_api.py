"""``ExtensionAPI``: what an extension's ``register(pi)`` receives (seed 003, pi 0.73.1).

Kept in one module: ExtensionAPI is pi's one object with every registration method
an extension calls.

One :class:`ExtensionAPI` per loaded extension, all sharing one
:class:`~pitrio.extensions.ExtensionRunner` (the runtime): registrations land in the
extension's :class:`Extension` record, actions (``send_message``, ``append_entry`` ...) go to the
session the runner is attached to. Names are pi's in snake_case (``registerTool`` ->
``register_tool``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs
import structlog
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError
from pitrio.extensions._events import EVENT_NAMES
from pitrio.providers import ImageContent, Model, TextContent
from pitrio.sessions.commands import SetLabel
from pitrio.tools import AgentTool, AgentToolResult, ToolUpdateCallback, text_result


class ExtensionRuntime(Protocol):
    """What the API and the context need of the runner (the
    :class:`~pitrio.extensions.ExtensionRunner`; a protocol, so this module need not import it)."""

    cwd: str
    ui: Any
    session: Any
    events: EventBus
    flag_values: dict[str, bool | str]

    def require_session(self) -> Any: ...

    def spawn(self, work: Callable[[Any], Awaitable[Any]]) -> None: ...

    def request_shutdown(self) -> None: ...

    async def reload(self) -> None: ...

    def all_tools(self) -> list[ToolInfo]: ...

    def set_active_tools(self, names: Sequence[str]) -> None: ...
    def active_tools(self) -> list[str]: ...

    def register_provider(
        self,
        name: str,
        *,
        models: Sequence[Model],
        stream: Callable[..., Any] | None,
        api: str | None,
        extension_path: str,
    ) -> None: ...


__all__ = [
    "EventBus",
    "ExecResult",
    "Extension",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionRuntime",
    "ExtensionTool",
    "ModelRegistryView",
    "RegisteredCommand",
    "RegisteredFlag",
    "RegisteredShortcut",
    "ToolInfo",
]

log = structlog.get_logger(__name__)

Handler = Callable[[Any, Any], Any]
"""``handler(event, ctx)``, sync or async; returns the event's result or ``None``."""


@attrs.define(eq=False)
class RegisteredCommand:
    """A ``/name`` command: ``handler(args, ctx)`` runs instead of a prompt."""

    name: str
    handler: Callable[[str, ExtensionContext], Any]
    description: str | None = None
    extension_path: str = ""


@attrs.define(eq=False)
class RegisteredFlag:
    """A ``--name`` CLI flag (``type`` ``"boolean"`` or ``"string"``)."""

    name: str
    type: Literal["boolean", "string"] = "boolean"
    default: bool | str | None = None
    description: str | None = None
    extension_path: str = ""


@attrs.define(eq=False)
class RegisteredShortcut:
    """A key binding for the interactive mode (kept; no mode uses it yet)."""

    shortcut: str
    handler: Callable[[ExtensionContext], Any]
    description: str | None = None
    extension_path: str = ""


@attrs.define(eq=False)
class Extension:
    """One loaded extension and what it registered, in registration order."""

    path: str
    handlers: dict[str, list[Handler]] = attrs.Factory(dict)
    tools: dict[str, AgentTool] = attrs.Factory(dict)
    commands: dict[str, RegisteredCommand] = attrs.Factory(dict)
    flags: dict[str, RegisteredFlag] = attrs.Factory(dict)
    shortcuts: dict[str, RegisteredShortcut] = attrs.Factory(dict)
    message_renderers: dict[str, Callable[..., Any]] = attrs.Factory(dict)
    context_transform_renderers: dict[str, Callable[..., Any]] = attrs.Factory(dict)


@attrs.frozen
class ToolInfo:
    """A tool the session can activate (pi's ``ToolInfo``): ``source`` is ``"builtin"`` (given
    to the session) or ``"extension"`` (``source_path`` the extension's path)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    source: Literal["builtin", "extension"] = "builtin"
    source_path: str | None = None


class ModelRegistryView:
    """``ctx.model_registry``: the session's models (pi's ``ModelRegistry``, read side)."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def get_all(self) -> list[Model]:
        """The session's models (its ``models``, extensions' providers' models included)."""
        return list(self._session.available_models)

    def find(self, provider: str, model_id: str) -> Model | None:
        """A model by provider and id: the session's models, then the built-in catalogue."""
        model: Model | None = self._session.find_model(provider, model_id)
        return model


@attrs.define(eq=False)
class _StartRun:
    """What ``ctx.inject`` and ``ctx.modify_system_prompt`` build up in one
    ``before_agent_start`` (the runner reads it after each handler)."""

    system_prompt: str
    modified: bool = False
    messages: list[Any] = attrs.Factory(list)


@attrs.frozen
class ExecResult:
    """What :meth:`ExtensionAPI.exec` returns."""

    stdout: str
    stderr: str
    code: int
    killed: bool = False


class EventBus:
    """A shared in-process bus between extensions (``pi.events``): ``on(name, handler)`` and
    ``await emit(name, data)``; handlers run in order, one's exception is logged and skipped."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[Callable[[Any], Any]]] = {}

    def on(self, name: str, handler: Callable[[Any], Any]) -> Callable[[], None]:
        """Subscribe; returns a function that unsubscribes."""
        handlers = self._handlers.setdefault(name, [])
        handlers.append(handler)

        def off() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return off

    async def emit(self, name: str, data: Any = None) -> None:
        for handler in list(self._handlers.get(name, ())):
            try:
                await maybe_await(handler(data))
            except Exception:
                log.exception("extension_bus_handler_failed", event=name)


class ExtensionContext:
    """``ctx``: the session as a handler sees it (pi's ``ExtensionContext``; a command's ctx
    adds ``wait_for_idle``, ``new_session``, ``fork``, ``navigate_tree``, ``switch_session``,
    ``reload``)."""

    def __init__(self, runner: ExtensionRuntime, start: _StartRun | None = None) -> None:
        self._runner = runner
        self._start = start

    @property
    def ui(self) -> Any:
        """The :class:`~pitrio.extensions.ExtensionUI` of the front end."""
        return self._runner.ui

    @property
    def has_ui(self) -> bool:
        return bool(self._runner.ui.has_ui)

    @property
    def cwd(self) -> str:
        return self._runner.cwd

    @property
    def session(self) -> Any:
        """The :class:`~pitrio.sessions.AgentSession` (``None`` before one is attached)."""
        return self._runner.session

    @property
    def session_manager(self) -> Any:
        session = self._runner.session
        return session.session_manager if session is not None else None

    @property
    def model(self) -> Model | None:
        session = self._runner.session
        return session.model if session is not None else None

    def is_idle(self) -> bool:
        session = self._runner.session
        return session is None or not session.is_streaming

    def has_pending_messages(self) -> bool:
        session = self._runner.session
        return session is not None and session.pending_message_count > 0

    @property
    def model_registry(self) -> ModelRegistryView | None:
        """The session's models (``None`` before a session is attached)."""
        session = self._runner.session
        return ModelRegistryView(session) if session is not None else None

    def get_context_usage(self) -> Any:
        """pi's ``{tokens, contextWindow, percent}`` as a
        :class:`~pitrio.sessions.ContextUsage` (``None``: no model or no session)."""
        session = self._runner.session
        return session.get_context_usage() if session is not None else None

    def get_system_prompt(self) -> str:
        """The system prompt (in ``before_agent_start``: as chained so far, this handler's
        ``modify_system_prompt`` calls included)."""
        if self._start is not None:
            return self._start.system_prompt
        session = self._runner.session
        return session.system_prompt if session is not None else ""

    # -- before_agent_start only (seed 003's helpers; returning the fields works as well)

    def _start_run(self, what: str) -> _StartRun:
        if self._start is None:
            raise UsageError(f"ctx.{what}() works in a before_agent_start handler only")
        return self._start

    def inject(self, message: Any) -> None:
        """Add a ``custom`` message after this run's user message (as returning ``message``
        does; ``custom_type`` defaults to ``"extension"``).

        Raises:
            UsageError: outside a ``before_agent_start`` handler.
        """
        self._start_run("inject").messages.append(message)

    def modify_system_prompt(self, text: str) -> None:
        """Append ``text`` (after a blank line) to this run's system prompt; later handlers see
        the result in ``event.system_prompt``.

        Raises:
            UsageError: outside a ``before_agent_start`` handler.
        """
        start = self._start_run("modify_system_prompt")
        start.system_prompt = f"{start.system_prompt}\n\n{text}" if start.system_prompt else text
        start.modified = True

    def abort(self) -> None:
        """Abort the run (in the background: a handler cannot wait for its own run's end)."""
        self._runner.spawn(lambda session: session.abort())

    def shutdown(self) -> None:
        """Ask the front end to stop after the current work (pi's ``ctx.shutdown()``)."""
        self._runner.request_shutdown()

    def compact(
        self,
        custom_instructions: str | None = None,
        *,
        on_complete: Callable[[Any], Any] | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None:
        """Start a compaction in the background (as pi, this does not wait for it)."""

        async def run(session: Any) -> None:
            try:
                result = await session.compact(custom_instructions)
            except Exception as exc:
                if on_error is not None:
                    await maybe_await(on_error(exc))
                return
            if on_complete is not None:
                await maybe_await(on_complete(result))

        self._runner.spawn(run)

    # -- command context (pi's ExtensionCommandContext); deadlock if awaited from a run's hook

    async def wait_for_idle(self) -> None:
        await self._runner.require_session().wait_for_idle()

    async def new_session(self, *, parent_session: str | None = None) -> dict[str, bool]:
        done = await self._runner.require_session().new_session(parent_session=parent_session)
        return {"cancelled": not done}

    async def switch_session(self, session_path: str) -> dict[str, bool]:
        done = await self._runner.require_session().switch_session(session_path)
        return {"cancelled": not done}

    async def fork(self, entry_id: str, *, position: str = "before") -> dict[str, bool]:
        result = await self._runner.require_session().fork(entry_id, position=position)
        return {"cancelled": bool(result.cancelled)}

    async def navigate_tree(self, target_id: str, **options: Any) -> dict[str, bool]:
        result = await self._runner.require_session().navigate_tree(target_id, **options)
        return {"cancelled": bool(result.cancelled)}

    async def reload(self) -> None:
        """pi's ``ctx.reload()``: ``session_shutdown`` and ``session_start`` with reason
        ``"reload"``, the resources (skills, prompt templates, context files) loaded again and
        the system prompt rebuilt, ``resources_discover`` with reason ``"reload"``
        (:meth:`~pitrio.extensions.ExtensionRunner.reload`). Call it from a command handler
        and return right after (``await ctx.reload(); return``), as pi advises."""
        await self._runner.reload()


@attrs.frozen(kw_only=True, eq=False)
class ExtensionTool(AgentTool):
    """A tool registered by an extension: its ``execute(call_id, params, on_update, ctx)``
    (``ctx`` optional) gets the extension context; it may return an ``AgentToolResult``, a
    ``{"content", "details"}`` mapping or a string."""

    name: str
    label: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[..., Any]
    runner: ExtensionRuntime
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    execution_mode: Any = None

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        args: list[Any] = [call_id, params, on_update]
        if _positional_count(self.run) >= 4:
            args.append(ExtensionContext(self.runner))
        outcome = await maybe_await(self.run(*args))
        await trio.lowlevel.checkpoint()
        return _tool_result(self.name, outcome)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 4
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def _tool_result(name: str, outcome: Any) -> AgentToolResult:
    if isinstance(outcome, AgentToolResult):
        return outcome
    if isinstance(outcome, str):
        return text_result(outcome)
    if isinstance(outcome, Mapping) and "content" in outcome:
        content = [_block(block) for block in outcome["content"]]
        return AgentToolResult(content=content, details=outcome.get("details"))
    raise TypeError(f"tool {name!r} returned {type(outcome).__name__}, expected a tool result")


def _block(block: Any) -> TextContent | ImageContent:
    if isinstance(block, TextContent | ImageContent):
        return block
    if isinstance(block, Mapping) and block.get("type") == "image":
        return ImageContent(data=block["data"], mime_type=block.get("mimeType", "image/png"))
    if isinstance(block, Mapping):
        return TextContent(text=str(block.get("text", "")))
    return TextContent(text=str(block))


def _get(definition: Any, name: str, default: Any = None) -> Any:
    if isinstance(definition, Mapping):
        from pitrio.codec import camel

        return definition.get(name, definition.get(camel(name), default))
    return getattr(definition, name, default)


class ExtensionAPI:
    """``pi``: registrations and actions of one extension (see the module docstring)."""

    def __init__(self, extension: Extension, runner: ExtensionRuntime) -> None:
        self.extension = extension
        self._runner = runner

    @property
    def events(self) -> EventBus:
        """The bus shared by every extension of this runner."""
        return self._runner.events

    # ------------------------------------------------------------------ registrations

    def on(self, event: str, handler: Handler) -> None:
        """Call ``handler(event, ctx)`` (sync or async) for every ``event``.

        Raises:
            ValueError: ``event`` is not an event name of seeds 003/004 or pi 0.73.1.
        """
        if event not in EVENT_NAMES:
            known = ", ".join(sorted(EVENT_NAMES))
            raise ValueError(f"unknown extension event {event!r}; known events: {known}")
        self.extension.handlers.setdefault(event, []).append(handler)

    def register_tool(self, tool: Any) -> None:
        """Add a tool the model may call (one with a built-in's name replaces it).

        ``tool`` is an :class:`~pitrio.tools.AgentTool`, or a mapping or object with ``name``,
        ``description``, ``parameters`` (JSON schema), ``execute`` and optionally ``label``,
        ``prompt_snippet``, ``prompt_guidelines``.
        """
        if not isinstance(tool, AgentTool):
            run = _get(tool, "execute")
            if not callable(run):
                raise ValueError("register_tool: the definition needs an execute function")
            name = str(_get(tool, "name"))
            tool = ExtensionTool(
                name=name,
                label=str(_get(tool, "label", name)),
                description=str(_get(tool, "description", "")),
                parameters=_get(tool, "parameters") or {"type": "object", "properties": {}},
                run=run,
                runner=self._runner,
                prompt_snippet=_get(tool, "prompt_snippet"),
                prompt_guidelines=tuple(_get(tool, "prompt_guidelines") or ()),
                execution_mode=_get(tool, "execution_mode"),
            )
        self.extension.tools[tool.name] = tool

    def register_command(
        self,
        name: str,
        handler: Callable[[str, ExtensionContext], Any] | None = None,
        *,
        description: str | None = None,
    ) -> None:
        """Add ``/name``: ``handler(args, ctx)`` runs instead of sending the text as a prompt."""
        if handler is None:
            raise ValueError(f"register_command({name!r}): a handler is required")
        self.extension.commands[name] = RegisteredCommand(
            name=name, handler=handler, description=description, extension_path=self.extension.path
        )

    def register_flag(
        self,
        name: str,
        *,
        type: Literal["boolean", "string"] = "boolean",
        default: bool | str | None = None,
        description: str | None = None,
    ) -> None:
        """Add a ``--name`` CLI flag; read its value with :meth:`get_flag`."""
        self.extension.flags[name] = RegisteredFlag(
            name=name,
            type=type,
            default=default,
            description=description,
            extension_path=self.extension.path,
        )

    def get_flag(self, name: str) -> bool | str | None:
        """The flag's value from the command line, else its default (``None``: not registered
        by this extension)."""
        flag = self.extension.flags.get(name)
        if flag is None:
            return None
        return self._runner.flag_values.get(name, flag.default)

    def register_shortcut(
        self,
        shortcut: str,
        handler: Callable[[ExtensionContext], Any],
        *,
        description: str | None = None,
    ) -> None:
        """Add a key binding (for the interactive mode; kept, not used by print or RPC)."""
        self.extension.shortcuts[shortcut] = RegisteredShortcut(
            shortcut=shortcut,
            handler=handler,
            description=description,
            extension_path=self.extension.path,
        )

    def register_message_renderer(self, custom_type: str, renderer: Callable[..., Any]) -> None:
        """Keep a renderer for ``custom`` messages of ``custom_type`` (for front ends)."""
        self.extension.message_renderers[custom_type] = renderer

    def register_context_transform_renderer(
        self, renderer_id: str, renderer: Callable[..., Any]
    ) -> None:
        """Render persisted context transforms whose ``display.rendererId`` is
        ``renderer_id`` in ``/context`` (seed 001): ``renderer(transform, options) -> str``,
        ``transform`` the ``context_transform`` entry, ``options`` a dict (``full``)."""
        self.extension.context_transform_renderers[renderer_id] = renderer

    def register_provider(
        self,
        name: str,
        *,
        models: Sequence[Model] = (),
        stream: Callable[..., Any] | None = None,
        api: str | None = None,
    ) -> None:
        """Add models, served by ``stream`` (a :class:`~pitrio.providers.ProviderStreamFn`
        registered under ``api``, default ``name``), to the session's provider registry."""
        self._runner.register_provider(
            name, models=models, stream=stream, api=api, extension_path=self.extension.path
        )

    # ------------------------------------------------------------------ actions

    async def send_message(
        self,
        message: Any,
        *,
        trigger_turn: bool = False,
        deliver_as: Literal["steer", "follow_up", "next_turn"] | None = None,
    ) -> None:
        """Add a ``custom`` message (``custom_type``, ``content``, ``display``, ``details``)."""
        session = self._runner.require_session()
        await session.send_custom_message(
            _get(message, "custom_type"),
            _get(message, "content", ""),
            display=bool(_get(message, "display", True)),
            details=_get(message, "details"),
            trigger_turn=trigger_turn,
            deliver_as=deliver_as,
        )

    def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: Literal["steer", "follow_up"] | None = None,
    ) -> None:
        """Prompt as the user would, with ``source="extension"`` (runs in the background, as
        pi's ``sendUserMessage`` does not wait for the run: a handler cannot await its own
        session's next run)."""

        async def run(session: Any) -> None:
            await session.send_user_message(content, deliver_as=deliver_as)

        self._runner.spawn(run)

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Save extension state as a ``custom`` session entry (the model never sees it).

        Synchronous, and appended here rather than by the session's task, so that the entry's
        id can be returned: a manager append is atomic (no checkpoint) and hands the line to
        the session's Persistence actor, as the session's own appends do.
        """
        manager = self._runner.require_session().session_manager
        entry_id: str = manager.append_custom_entry(custom_type, data)
        return entry_id

    async def set_session_name(self, name: str) -> None:
        await self._runner.require_session().set_session_name(name)

    def get_session_name(self) -> str | None:
        session = self._runner.session
        return session.session_name if session is not None else None

    def set_label(self, entry_id: str, label: str | None) -> None:
        """Label (or unlabel) a session entry (a ``label`` entry): the session's ``SetLabel``
        command, sent without waiting (pi's ``setLabel`` is synchronous)."""
        self._runner.require_session().send_nowait(SetLabel(entry_id=entry_id, label=label))

    async def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        timeout_ms: float | None = None,
    ) -> ExecResult:
        """Run ``command args...`` (no shell) via :func:`trio.run_process` and collect its
        output; past ``timeout_ms`` (pi's ``timeout``) it is killed (``killed=True``)."""
        argv = [command, *args]
        killed = False
        result: Any = None
        limit = timeout_ms / 1000 if timeout_ms is not None else math.inf
        with trio.move_on_after(limit) as scope:
            result = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False,
                cwd=cwd or self._runner.cwd,
            )  # fmt: skip
        if scope.cancelled_caught or result is None:
            killed = True
            return ExecResult(stdout="", stderr="", code=-1, killed=killed)
        return ExecResult(
            stdout=result.stdout.decode("utf-8", "replace"),
            stderr=result.stderr.decode("utf-8", "replace"),
            code=result.returncode,
        )

    def get_active_tools(self) -> list[str]:
        """The names of the tools the model sees (pi's ``getActiveTools``)."""
        return self._runner.active_tools()

    def get_all_tools(self) -> list[ToolInfo]:
        """Every tool :meth:`set_active_tools` can choose from (pi's ``getAllTools``): the
        session's tools (plus ``available_tools`` given to
        :func:`~pitrio.extensions.open_extension_session`) and the extensions' tools."""
        return self._runner.all_tools()

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Make ``names`` (in that order) the tools the model sees (pi's ``setActiveTools``):
        names not in :meth:`get_all_tools` are ignored, as pi does; a repeated name counts
        once. As in pi, a run in progress keeps the tools it started with (its requests all
        send the same list); the next run (prompt, follow-up run) sends the new one."""
        self._runner.set_active_tools(list(names))

    def get_thinking_level(self) -> str | None:
        session = self._runner.session
        return session.thinking_level if session is not None else None

    async def set_model(self, model: Model) -> bool:
        try:
            await self._runner.require_session().set_model(model)
        except UsageError:
            return False
        return True

    async def set_thinking_level(self, level: Any) -> None:
        await self._runner.require_session().set_thinking_level(level)
