"""``ExtensionRunner``: the session's hooks, dispatched to every loaded extension (seed 004).

Kept in one module: every hook of seed 004 with its chaining rule, side by side so
the rules read as one table.

The runner is a :class:`~pitrio.sessions.SessionHooks`: the session awaits its methods at the
moments seed 004 names, and each method runs the handlers of every extension in load order
(within an extension, in registration order) with that event's chaining rule:

=========================  ==================================================================
``input``                  transform chain (each sees the text before it); first ``handled``
                           stops the chain and the prompt; registered ``/commands`` are
                           matched first and never reach ``input``
``before_agent_start``     ``system_prompt`` chains; ``message`` results accumulate
``context``                once per reason; patches chain (each handler sees the
                           envelope as patched before it); seed 004's messages too
``before_provider_request``payload chain (a non-``None`` return replaces the payload)
``after_provider_response`` informational (status and headers, once per HTTP request)
``tool_call``              first ``block`` wins, the rest are skipped; an exception blocks too
``tool_result``            ``content`` / ``details`` / ``is_error`` changes accumulate
``message_end``            replacement chain; ``{"message": None}`` drops and stops
``user_bash``              the first result wins
``session_before_*``       the first ``cancel`` wins; otherwise the last result counts
``resources_discover``     every handler's paths are collected
everything else            informational: every handler runs, results are ignored
=========================  ==================================================================

Error handling:
    A handler that raises is reported as an ``extension_error`` (pi 0.73.1's
    ``{extensionPath, event, error}``): to the runner's error listeners and, once a session is
    attached, as an :class:`~pitrio.sessions.ExtensionErrorEvent` to the session's
    subscribers. The chain continues as if it had returned ``None`` (``tool_call`` excepted:
    as in pi, a failing gate blocks the call).

Cancellation:
    Handlers run in the task of the hook's caller, under its cancel scope (the run's, for
    every hook inside a run): an abort cancels a slow handler like anything else the run
    awaits. Nothing here shields a handler.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import structlog
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError
from pitrio.actors import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    BeforeToolCallContext,
    BeforeToolCallResult,
    MessageEndEvent,
)
from pitrio.actors import TurnEndEvent as AgentTurnEndEvent
from pitrio.actors import TurnStartEvent as AgentTurnStartEvent
from pitrio.extensions import _events as ev
from pitrio.extensions._api import EventBus, Extension, ExtensionContext, ToolInfo, _StartRun
from pitrio.extensions._ui import ExtensionUI, HeadlessUI
from pitrio.providers import ApiProvider, ImageContent, Model, ProviderRegistry, now_ms
from pitrio.sessions import (
    BeforeAgentStartResult,
    BeforeCompactResult,
    BeforeForkResult,
    BeforeTreeResult,
    BranchSummaryEntry,
    CompactionEntry,
    CompactionPreparation,
    CompactionResult,
    CustomMessage,
    ExtensionErrorEvent,
    InputResult,
    SessionEntry,
    SessionHooks,
    TreePreparation,
    UserBashResult,
    open_agent_session,
)
from pitrio.sessions.commands import SetTools
from pitrio.sessions.envelope import (
    ContextEnvelope,
    ContextReason,
    ContextResult,
    MessageEndResult,
    apply_patch,
    decode_context_result,
    decode_patch,
    replace_messages,
)

__all__ = ["ExtensionRunner", "LoadError", "open_extension_session"]

log = structlog.get_logger(__name__)


@attrs.frozen
class LoadError:
    """An extension that could not be loaded (``path``) and why (``error``)."""

    path: str
    error: str


@attrs.define(eq=False)
class _Provider:
    name: str
    models: tuple[Model, ...]
    stream: Callable[..., Any] | None
    api: str | None
    extension_path: str


ErrorListener = Callable[[ExtensionErrorEvent], None]

ResourceReloader = Callable[[Sequence[str], Sequence[str]], Awaitable[None]]
"""``reload(skill_paths, prompt_paths)``: load the session's resources again from disk, with
these extra paths (from ``resources_discover``), and give them to the session (the front end
that built the session supplies it: :meth:`ExtensionRunner.set_resource_reloader`)."""


class ExtensionRunner(SessionHooks):
    """The loaded extensions as one :class:`~pitrio.sessions.SessionHooks` (module docstring).

    Args:
        cwd: the session's working directory (``ctx.cwd``).
        ui: ``ctx.ui`` (default: :class:`HeadlessUI`).
        flag_values: values of the extensions' flags from the command line.

    Build it empty and load into it (:func:`~pitrio.extensions.load_extensions`), then hand it
    to the session as ``hooks=`` (the session attaches itself) and open both with
    :func:`open_extension_session`, which also gives the runner the nursery for the work
    extensions start in the background (``pi.send_user_message``, ``ctx.compact``).
    """

    def __init__(
        self,
        *,
        cwd: str,
        ui: ExtensionUI | None = None,
        flag_values: dict[str, bool | str] | None = None,
    ) -> None:
        self.cwd = cwd
        self.ui: ExtensionUI = ui if ui is not None else HeadlessUI()
        self.flag_values: dict[str, bool | str] = dict(flag_values or {})
        self.extensions: list[Extension] = []
        self.load_errors: list[LoadError] = []
        self.events = EventBus()
        self.session: Any = None
        self.errors: list[ExtensionErrorEvent] = []
        """Every error reported so far (load errors are in :attr:`load_errors`)."""
        self.shutdown_requested = trio.Event() if _in_trio() else None
        self._listeners: list[ErrorListener] = []
        self._providers: list[_Provider] = []
        self._nursery: trio.Nursery | None = None
        self._turn_index = 0
        self._ended_messages: set[int] = set()
        # Every tool set_active_tools may choose from, by name (filled by open_extension_session).
        self._tool_registry: dict[str, tuple[Any, ToolInfo]] = {}
        # The names set_active_tools last sent (None before): what get_active_tools answers,
        # also before the session's task has applied the command (pi's setter is synchronous).
        self._active_tools: list[str] | None = None
        self._reload_resources: ResourceReloader | None = None

    # ------------------------------------------------------------------ registry views

    def has_handlers(self, event: str) -> bool:
        return any(event in ext.handlers and ext.handlers[event] for ext in self.extensions)

    def _handlers(self, event: str) -> Iterator[tuple[Extension, Callable[..., Any]]]:
        for ext in self.extensions:
            for handler in list(ext.handlers.get(event, ())):
                yield ext, handler

    def tools(self) -> list[Any]:
        """The tools extensions registered (the first registration of a name wins, as pi)."""
        seen: dict[str, Any] = {}
        for ext in self.extensions:
            for name, tool in ext.tools.items():
                seen.setdefault(name, tool)
        return list(seen.values())

    def merge_tools(self, builtins: Sequence[Any]) -> list[Any]:
        """``builtins`` with the extensions' tools added; one with a built-in's name replaces
        it in place."""
        registered = {tool.name: tool for tool in self.tools()}
        merged = [registered.pop(tool.name, tool) for tool in builtins]
        return merged + list(registered.values())

    def set_tool_registry(self, tools: Sequence[Any], available: Sequence[Any] = ()) -> None:
        """Record the tools ``set_active_tools`` chooses from: ``tools`` (the session's, as
        :meth:`merge_tools` made them) then ``available`` (inactive ones; a name already
        present is skipped)."""
        origin = {id(tool): ext.path for ext in self.extensions for tool in ext.tools.values()}
        registry: dict[str, tuple[Any, ToolInfo]] = {}
        for tool in [*tools, *available]:
            if tool.name in registry:
                continue
            path = origin.get(id(tool))
            info = ToolInfo(
                name=tool.name,
                description=tool.description,
                parameters=tool.parameters,
                source="extension" if path is not None else "builtin",
                source_path=path,
            )
            registry[tool.name] = (tool, info)
        self._tool_registry = registry

    def all_tools(self) -> list[ToolInfo]:
        """pi's ``getAllTools``: every tool the session can activate."""
        return [info for _, info in self._tool_registry.values()]

    def set_active_tools(self, names: Sequence[str]) -> None:
        """pi's ``setActiveTools``: unknown names are ignored; the new list is sent from the
        next run on (as pi's agent, a run copies the tool list when it starts)."""
        session = self.require_session()
        chosen: dict[str, Any] = {}
        for name in names:
            found = self._tool_registry.get(name)
            if found is None:
                log.debug("set_active_tools_unknown", tool=name)
            elif name not in chosen:
                chosen[name] = found[0]
        # A command like any other (in order with the session's commands); synchronous, as
        # pi's setActiveTools: nobody waits for its answer.
        session.send_nowait(SetTools(tools=tuple(chosen.values())))
        self._active_tools = list(chosen)

    def active_tools(self) -> list[str]:
        """pi's ``getActiveTools``: the names :meth:`set_active_tools` last chose, else the
        tools of the session's agent."""
        if self._active_tools is not None:
            return list(self._active_tools)
        session = self.session
        return [tool.name for tool in session.agent.tools] if session is not None else []

    def commands(self) -> dict[str, Any]:
        """Registered commands by name (the first extension's wins on a clash)."""
        found: dict[str, Any] = {}
        for ext in self.extensions:
            for name, command in ext.commands.items():
                found.setdefault(name, command)
        return found

    def flags(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for ext in self.extensions:
            for name, flag in ext.flags.items():
                found.setdefault(name, flag)
        return found

    def context_transform_renderers(self) -> dict[str, Any]:
        """``/context`` renderers by id (the first extension's wins on a clash)."""
        found: dict[str, Any] = {}
        for ext in self.extensions:
            for renderer_id, renderer in ext.context_transform_renderers.items():
                found.setdefault(renderer_id, renderer)
        return found

    def shortcuts(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for ext in self.extensions:
            found.update(ext.shortcuts)
        return found

    # ------------------------------------------------------------------ providers

    def register_provider(
        self,
        name: str,
        *,
        models: Sequence[Model],
        stream: Callable[..., Any] | None,
        api: str | None,
        extension_path: str,
    ) -> None:
        self._providers.append(_Provider(name, tuple(models), stream, api, extension_path))

    def apply_providers(self, registry: ProviderRegistry) -> list[Model]:
        """Register the extensions' stream functions in ``registry``; returns their models."""
        models: list[Model] = []
        for provider in self._providers:
            api = provider.api or (provider.models[0].api if provider.models else provider.name)
            if provider.stream is not None:
                registry.register(
                    ApiProvider(api=api, stream=provider.stream),
                    source_id=f"extension:{provider.extension_path}",
                )
            models.extend(provider.models)
        return models

    # ------------------------------------------------------------------ errors

    def on_error(self, listener: ErrorListener) -> Callable[[], None]:
        """Call ``listener(error)`` for every reported handler error; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def report_error(self, extension_path: str, event: str, error: BaseException) -> None:
        """Report a handler's exception (see the module docstring)."""
        record = ExtensionErrorEvent(
            extension_path=extension_path, event=event, error=str(error) or type(error).__name__
        )
        self.errors.append(record)
        log.warning("extension_error", extension=extension_path, hook=event, error=record.error)
        for listener in list(self._listeners):
            listener(record)
        if self.session is not None:
            await self.session.publish(record)

    async def _call(
        self, ext: Extension, event_name: str, handler: Callable[..., Any], event: Any, ctx: Any
    ) -> Any:
        try:
            return await maybe_await(handler(event, ctx))
        except Exception as exc:
            await self.report_error(ext.path, event_name, exc)
            return None

    async def emit(self, event_name: str, event: Any, ctx: Any = None) -> list[Any]:
        """Run every handler of ``event_name``; returns their non-``None`` results."""
        results = []
        context = ctx if ctx is not None else ExtensionContext(self)
        for ext, handler in self._handlers(event_name):
            result = await self._call(ext, event_name, handler, event, context)
            if result is not None:
                results.append(result)
        return results

    # ------------------------------------------------------------------ session binding

    def attach(self, session: Any) -> None:
        self.session = session

    def require_session(self) -> Any:
        if self.session is None:
            raise UsageError("no session is attached to the extension runner yet")
        return self.session

    def spawn(self, work: Callable[[Any], Awaitable[Any]]) -> None:
        """Run ``work(session)`` in the background (pi's fire-and-forget actions)."""
        session = self.require_session()
        if self._nursery is None:
            raise UsageError("open the session with open_extension_session() for this action")

        async def run() -> None:
            try:
                await work(session)
            except Exception:
                log.exception("extension_background_action_failed")

        self._nursery.start_soon(run)

    def request_shutdown(self) -> None:
        if self.shutdown_requested is not None:
            self.shutdown_requested.set()

    # ------------------------------------------------------------------ reload

    def set_resource_reloader(self, reload: ResourceReloader | None) -> None:
        """How :meth:`reload` loads the session's resources again (``None``: it does not)."""
        self._reload_resources = reload

    async def reload(self) -> None:
        """pi's ``ctx.reload()`` in its order: ``session_shutdown`` (reason ``"reload"``), the
        resources (context files, skills, prompt templates, SYSTEM.md) loaded again from disk
        and the system prompt rebuilt, ``session_start`` (reason ``"reload"``), then
        ``resources_discover`` (reason ``"reload"``) whose paths are added (resources loaded
        once more when it returned any).

        The extensions themselves stay loaded as they are (pi imports them again): their
        handlers see the shutdown and the new start, and should rebuild their state there.

        Raises:
            UsageError: no session is attached.
        """
        self.require_session()
        await self.session_shutdown("reload")
        if self._reload_resources is not None:
            await self._reload_resources((), ())
        await self.session_start("reload", None)
        found = await self.resources_discover(self.cwd, "reload")
        if self._reload_resources is not None and (found.skill_paths or found.prompt_paths):
            await self._reload_resources(found.skill_paths, found.prompt_paths)

    # ------------------------------------------------------------------ input hooks

    async def run_command(self, text: str) -> bool:
        """Run the registered ``/command`` ``text`` names; False when it names none."""
        if not text.startswith("/"):
            return False
        name, _, args = text[1:].partition(" ")
        command = self.commands().get(name)
        if command is None:
            return False
        try:
            await maybe_await(command.handler(args.strip(), ExtensionContext(self)))
        except Exception as exc:
            await self.report_error(command.extension_path, f"command:{name}", exc)
        return True

    async def input(
        self, text: str, images: tuple[ImageContent, ...] | None, source: Any
    ) -> InputResult | None:
        # Seed 004: extension commands are matched before input fires; text an extension
        # sends as the user is never a command (pi's sendUserMessage skips the check).
        if source != "extension" and await self.run_command(text):
            return InputResult(action="handled")
        current_text, current_images = text, images
        ctx = ExtensionContext(self)
        for ext, handler in self._handlers("input"):
            event = ev.InputEvent(text=current_text, images=current_images, source=source)
            result = await self._call(ext, "input", handler, event, ctx)
            action = ev.field_of(result, "action")
            if action == "handled":
                return InputResult(action="handled")
            if action == "transform":
                new_text = ev.field_of(result, "text")
                current_text = new_text if isinstance(new_text, str) else current_text
                new_images = ev.field_of(result, "images")
                if new_images is not None:
                    current_images = tuple(new_images)
        if current_text is not text or current_images is not images:
            return InputResult(action="transform", text=current_text, images=current_images)
        return None

    async def before_agent_start(
        self, prompt: str, images: tuple[ImageContent, ...] | None, system_prompt: str
    ) -> BeforeAgentStartResult | None:
        # ctx.inject / ctx.modify_system_prompt act on `start` while the handler runs; its
        # return value is applied after them (a returned system_prompt replaces the prompt,
        # appended text included; a returned message comes after the injected ones).
        start = _StartRun(system_prompt=system_prompt)
        messages: list[CustomMessage] = []
        for ext, handler in self._handlers("before_agent_start"):
            event = ev.BeforeAgentStartEvent(
                prompt=prompt, images=images, system_prompt=start.system_prompt
            )
            ctx = ExtensionContext(self, start)
            result = await self._call(ext, "before_agent_start", handler, event, ctx)
            messages.extend(_custom_message(message) for message in start.messages)
            start.messages.clear()
            message = ev.field_of(result, "message")
            if message is not None:
                messages.append(_custom_message(message))
            new_prompt = ev.field_of(result, "system_prompt")
            if isinstance(new_prompt, str):
                start.system_prompt, start.modified = new_prompt, True
        if not messages and not start.modified:
            return None
        return BeforeAgentStartResult(
            messages=tuple(messages), system_prompt=start.system_prompt if start.modified else None
        )

    # ------------------------------------------------------------------ per turn

    async def context_envelope(
        self, reason: ContextReason, envelope: ContextEnvelope
    ) -> list[ContextResult]:
        """The ``context`` event (seeds 001 and 004), once per reason: each handler gets
        ``reason``, ``state.envelope`` as the handlers before it patched it, and ``messages``
        (a deep copy of cached then uncached, seed 004's field).

        A handler returns a patch (``{"patch": [...], "transformerName", "display"}`` or a
        :class:`~pitrio.sessions.envelope.ContextResult`) or, as seed 004, ``{"messages":
        [...]}``: for ``before_request`` the messages sent on this request only (pi 0.73.1's
        semantics: not persisted, not replayed), ignored with a debug log for the other
        reasons. A patch that fails to decode or apply (a cached op without
        ``invalidateCacheReason``) is reported as an ``extension_error`` and skipped: the
        request goes out without it.
        """
        if not self.has_handlers("context"):
            return []
        results: list[ContextResult] = []
        ctx = ExtensionContext(self)
        state = envelope
        for ext, handler in self._handlers("context"):
            messages = copy.deepcopy([*state.messages.cached, *state.messages.uncached])
            event = ev.ContextEvent(messages=messages, reason=reason, envelope=state)
            result = await self._call(ext, "context", handler, event, ctx)
            if result is None:
                continue
            try:
                decoded = _context_result(result, ext.path)
                if decoded is None:
                    continue
                if decoded.messages is not None and reason != "before_request":
                    log.debug("context_messages_ignored", extension=ext.path, reason=reason)
                    decoded = attrs.evolve(decoded, messages=None)
                if decoded.messages is not None:
                    state = replace_messages(state, decoded.messages)
                state = apply_patch(state, decoded.patch)
            except Exception as exc:
                await self.report_error(ext.path, "context", exc)
                continue
            if decoded.patch or decoded.messages is not None:
                results.append(decoded)
        return results

    async def message_end(self, message: AgentMessage) -> Any:
        """A finished message: handlers may replace it (same role) or drop it."""
        current = message
        modified = False
        if self.has_handlers("message_end"):
            ctx = ExtensionContext(self)
            for ext, handler in self._handlers("message_end"):
                event = MessageEndEvent(message=current)
                result = await self._call(ext, "message_end", handler, event, ctx)
                if result is None:
                    continue
                if _drops(result):
                    self._ended_messages.discard(id(current))
                    return _message_end_result(None)
                replacement = ev.field_of(result, "message")
                if replacement is None:
                    continue
                if getattr(replacement, "role", None) != getattr(current, "role", None):
                    await self.report_error(
                        ext.path,
                        "message_end",
                        ValueError("message_end handlers must return a message with the same role"),
                    )
                    continue
                current, modified = replacement, True
        # on_agent_event sees this message's message_end next: its handlers have run.
        self._ended_messages.add(id(current))
        return _message_end_result(current) if modified else None

    async def before_provider_request(self, payload: Any, model: Model) -> Any:
        if not self.has_handlers("before_provider_request"):
            return None
        current = payload
        ctx = ExtensionContext(self)
        for ext, handler in self._handlers("before_provider_request"):
            event = ev.BeforeProviderRequestEvent(payload=current, model=model)
            result = await self._call(ext, "before_provider_request", handler, event, ctx)
            if result is not None:
                current = result
        return current if current is not payload else None

    async def after_provider_response(self, status: int, headers: dict[str, str]) -> None:
        if self.has_handlers("after_provider_response"):
            event = ev.AfterProviderResponseEvent(status=status, headers=dict(headers))
            await self.emit("after_provider_response", event)

    async def on_agent_event(self, event: AgentEvent) -> None:
        name = event.type
        if isinstance(event, AgentStartEvent):
            self._turn_index = 0
        if not self.has_handlers(name):
            if isinstance(event, AgentTurnEndEvent):
                self._turn_index += 1
            return
        payload: Any = event
        if isinstance(event, AgentTurnStartEvent):
            payload = ev.TurnStartEvent(turn_index=self._turn_index, timestamp=now_ms())
        elif isinstance(event, AgentTurnEndEvent):
            payload = ev.TurnEndEvent(
                turn_index=self._turn_index, message=event.message, tool_results=event.tool_results
            )
            self._turn_index += 1
        elif isinstance(event, MessageEndEvent) and (
            event.dropped or id(event.message) in self._ended_messages
        ):
            # The session ran the message_end hook for it already (replace / drop): a dropped
            # message's closing event must not run the handlers a second time.
            self._ended_messages.discard(id(event.message))
            return
        await self.emit(name, payload)

    # ------------------------------------------------------------------ tools

    async def tool_call(self, context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        if not self.has_handlers("tool_call"):
            return None
        event = ev.ToolCallEvent(
            tool_call_id=context.tool_call.id,
            tool_name=context.tool_call.name,
            input=context.args,
        )
        ctx = ExtensionContext(self)
        last: BeforeToolCallResult | None = None
        for ext, handler in self._handlers("tool_call"):
            try:
                result = await maybe_await(handler(event, ctx))
            except Exception as exc:
                # As pi: a gate that fails blocks the call (its message is the error result).
                await self.report_error(ext.path, "tool_call", exc)
                raise
            if result is None:
                continue
            reason = ev.field_of(result, "reason")
            last = BeforeToolCallResult(
                block=bool(ev.field_of(result, "block")),
                reason=reason if isinstance(reason, str) else None,
            )
            if last.block:
                return last
        return last

    async def tool_result(self, context: AfterToolCallContext) -> AfterToolCallResult | None:
        if not self.has_handlers("tool_result"):
            return None
        current = ev.ToolResultEvent(
            tool_call_id=context.tool_call.id,
            tool_name=context.tool_call.name,
            input=context.args,
            content=context.result.content,
            details=context.result.details,
            is_error=context.is_error,
        )
        modified = False
        ctx = ExtensionContext(self)
        for ext, handler in self._handlers("tool_result"):
            result = await self._call(ext, "tool_result", handler, current, ctx)
            if result is None:
                continue
            changes: dict[str, Any] = {}
            content = ev.field_of(result, "content")
            if content is not None:
                from pitrio.extensions._api import _block

                changes["content"] = tuple(_block(block) for block in content)
            details = ev.field_of(result, "details")
            if details is not None:
                changes["details"] = details
            is_error = ev.field_of(result, "is_error")
            if is_error is not None:
                changes["is_error"] = bool(is_error)
            if changes:
                current = attrs.evolve(current, **changes)
                modified = True
        if not modified:
            return None
        return AfterToolCallResult(
            content=current.content, details=current.details, is_error=current.is_error
        )

    async def user_bash(
        self, command: str, exclude_from_context: bool, cwd: str
    ) -> UserBashResult | None:
        event = ev.UserBashEvent(
            command=command, exclude_from_context=exclude_from_context, cwd=cwd
        )
        ctx = ExtensionContext(self)
        for ext, handler in self._handlers("user_bash"):
            result = await self._call(ext, "user_bash", handler, event, ctx)
            if result is not None:
                if isinstance(result, UserBashResult):
                    return result
                return UserBashResult(
                    operations=ev.field_of(result, "operations"),
                    result=ev.field_of(result, "result"),
                )
        return None

    # ------------------------------------------------------------------ session

    async def session_directory(self, cwd: str) -> str | None:
        """The CLI's start (seed 003; no ctx): the first ``session_dir`` returned, if any."""
        event = ev.SessionDirectoryEvent(cwd=cwd)
        for ext, handler in self._handlers("session_directory"):
            result = await self._call(ext, "session_directory", handler, event, None)
            directory = ev.field_of(result, "session_dir")
            if isinstance(directory, str) and directory:
                return directory
        return None

    async def resources_discover(
        self, cwd: str, reason: str = "startup"
    ) -> ev.ResourcesDiscoverResult:
        """Every handler's skill, prompt and theme paths, in order."""
        skills: list[str] = []
        prompts: list[str] = []
        themes: list[str] = []
        event = ev.ResourcesDiscoverEvent(cwd=cwd, reason=reason)  # type: ignore[arg-type]
        for result in await self.emit("resources_discover", event):
            skills.extend(ev.field_of(result, "skill_paths") or ())
            prompts.extend(ev.field_of(result, "prompt_paths") or ())
            themes.extend(ev.field_of(result, "theme_paths") or ())
        return ev.ResourcesDiscoverResult(
            skill_paths=skills, prompt_paths=prompts, theme_paths=themes
        )

    async def session_start(self, reason: Any, previous_session_file: str | None) -> None:
        if reason in ("new", "resume"):
            await self.emit(
                "session_switch",
                ev.SessionSwitchEvent(
                    reason=reason,
                    previous_session_file=previous_session_file,
                ),
            )
        elif reason == "fork":
            await self.emit(
                "session_fork", ev.SessionForkEvent(previous_session_file=previous_session_file)
            )
        await self.emit(
            "session_start",
            ev.SessionStartEvent(reason=reason, previous_session_file=previous_session_file),
        )

    async def session_shutdown(self, reason: str) -> None:
        await self.emit("session_shutdown", ev.SessionShutdownEvent(reason=reason))

    async def _before(self, name: str, event: Any) -> Any:
        """pi's session_before_* rule: the first ``cancel`` wins, else the last result."""
        last: Any = None
        ctx = ExtensionContext(self)
        for ext, handler in self._handlers(name):
            result = await self._call(ext, name, handler, event, ctx)
            if result is not None:
                last = result
                if ev.field_of(result, "cancel"):
                    return result
        return last

    async def session_before_switch(self, reason: Any, target_session_file: str | None) -> bool:
        event = ev.SessionBeforeSwitchEvent(reason=reason, target_session_file=target_session_file)
        return bool(ev.field_of(await self._before("session_before_switch", event), "cancel"))

    async def session_before_fork(self, entry_id: str, position: str) -> BeforeForkResult:
        """The first ``cancel`` wins; else the last result's ``skipConversationRestore``."""
        event = ev.SessionBeforeForkEvent(entry_id=entry_id, position=position)
        result = await self._before("session_before_fork", event)
        return BeforeForkResult(
            cancel=bool(ev.field_of(result, "cancel")),
            skip_conversation_restore=bool(ev.field_of(result, "skip_conversation_restore")),
        )

    async def session_before_compact(
        self,
        preparation: CompactionPreparation,
        branch_entries: list[SessionEntry],
        custom_instructions: str | None,
    ) -> BeforeCompactResult | None:
        event = ev.SessionBeforeCompactEvent(
            preparation=preparation,
            branch_entries=branch_entries,
            custom_instructions=custom_instructions,
        )
        result = await self._before("session_before_compact", event)
        if result is None:
            return None
        compaction = ev.field_of(result, "compaction")
        if compaction is not None and not isinstance(compaction, CompactionResult):
            compaction = CompactionResult(
                summary=str(ev.field_of(compaction, "summary")),
                first_kept_entry_id=str(ev.field_of(compaction, "first_kept_entry_id")),
                tokens_before=int(ev.field_of(compaction, "tokens_before") or 0),
                details=ev.field_of(compaction, "details"),
            )
        return BeforeCompactResult(
            cancel=bool(ev.field_of(result, "cancel")), compaction=compaction
        )

    async def session_compact(self, entry: CompactionEntry, from_extension: bool) -> None:
        await self.emit(
            "session_compact",
            ev.SessionCompactEvent(compaction_entry=entry, from_extension=from_extension),
        )

    async def session_before_tree(self, preparation: TreePreparation) -> BeforeTreeResult | None:
        result = await self._before(
            "session_before_tree", ev.SessionBeforeTreeEvent(preparation=preparation)
        )
        if result is None:
            return None
        summary = ev.field_of(result, "summary")
        replace = ev.field_of(result, "replace_instructions")
        return BeforeTreeResult(
            cancel=bool(ev.field_of(result, "cancel")),
            summary=summary if isinstance(summary, str) else ev.field_of(summary, "summary"),
            details=None if isinstance(summary, str) else ev.field_of(summary, "details"),
            custom_instructions=ev.field_of(result, "custom_instructions"),
            replace_instructions=None if replace is None else bool(replace),
            label=ev.field_of(result, "label"),
        )

    async def session_tree(
        self,
        new_leaf_id: str | None,
        old_leaf_id: str | None,
        summary_entry: BranchSummaryEntry | None,
        from_extension: bool | None,
    ) -> None:
        await self.emit(
            "session_tree",
            ev.SessionTreeEvent(
                new_leaf_id=new_leaf_id,
                old_leaf_id=old_leaf_id,
                summary_entry=summary_entry,
                from_extension=from_extension,
            ),
        )

    async def model_select(self, model: Model, previous_model: Model | None, source: str) -> None:
        await self.emit(
            "model_select",
            ev.ModelSelectEvent(model=model, previous_model=previous_model, source=source),
        )

    async def thinking_level_select(self, level: str, previous_level: str) -> None:
        await self.emit(
            "thinking_level_select",
            ev.ThinkingLevelSelectEvent(level=level, previous_level=previous_level),
        )


# --------------------------------------------------------------------------- helpers


def _in_trio() -> bool:
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


def _custom_message(message: Any) -> CustomMessage:
    if isinstance(message, CustomMessage):
        return message
    content = ev.field_of(message, "content")
    return CustomMessage(
        custom_type=str(ev.field_of(message, "custom_type") or "extension"),
        content=content if isinstance(content, str) else tuple(content or ()),
        display=bool(
            ev.field_of(message, "display") if ev.field_of(message, "display") is not None else True
        ),
        details=ev.field_of(message, "details"),
        timestamp=now_ms(),
    )


def _context_result(result: Any, extension_path: str) -> ContextResult | None:
    """A handler's ``context`` result as a :class:`ContextResult` (``None``: nothing to do).
    Ops may be wire dicts (``{"op": "messages_uncached_append", ...}``) or op objects."""
    if isinstance(result, ContextResult):
        return result
    patch = ev.field_of(result, "patch")
    replaced = ev.field_of(result, "messages")
    if patch is None and replaced is None:
        return None
    items = list(patch or ())
    ops = decode_patch(items) if all(isinstance(i, Mapping) for i in items) else items
    display = ev.field_of(result, "display")
    if isinstance(display, Mapping):
        display = decode_context_result({"display": display}).display
    name = ev.field_of(result, "transformer_name")
    return ContextResult(
        patch=ops,
        transformer_name=name if isinstance(name, str) else extension_path,
        display=display,
        messages=None if replaced is None else tuple(replaced),
    )


def _drops(result: Any) -> bool:
    if isinstance(result, dict):
        return "message" in result and result["message"] is None
    return bool(getattr(result, "drop", False))


def _message_end_result(message: AgentMessage | None) -> MessageEndResult:
    return MessageEndResult(message=message)


@asynccontextmanager
async def open_extension_session(
    runner: ExtensionRunner, *, available_tools: Sequence[Any] = (), **options: Any
) -> AsyncIterator[Any]:
    """Open an :class:`~pitrio.sessions.AgentSession` with ``runner`` as its hooks (keyword
    arguments as :func:`~pitrio.sessions.open_agent_session`).

    ``available_tools`` are tools the session starts without that extensions may turn on with
    ``pi.set_active_tools`` (pi keeps every built-in in its registry; ``tools`` are active).

    The extensions' tools join ``tools`` (replacing built-ins of the same name) and their
    providers' models join ``models``. The runner gets a nursery for the background actions of
    extensions, which is cancelled when the block is left.
    """
    options["tools"] = runner.merge_tools(list(options.get("tools", ())))
    runner.set_tool_registry(options["tools"], runner.merge_tools(available_tools))
    registry = options.get("registry")
    if registry is not None:
        extra = runner.apply_providers(registry)
        if extra:
            options["models"] = [*options.get("models", ()), *extra]
    if runner.shutdown_requested is None:
        runner.shutdown_requested = trio.Event()
    async with trio.open_nursery() as nursery:
        runner._nursery = nursery
        try:
            async with open_agent_session(hooks=runner, **options) as session:
                yield session
        finally:
            runner._nursery = None
            nursery.cancel_scope.cancel()
