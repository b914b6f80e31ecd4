"""``AgentSession``: an Agent bound to a session file, with retry and compaction (seed 002 s.1).

::

    async with open_agent_session(model=model, session_manager=SessionManager.create(cwd)) as s:
        s.subscribe(print)
        await s.prompt("Hello")

The session wraps a :class:`~pitrio.actors.Agent` and adds, as pi-coding-agent's AgentSession:

* persistence: every message is appended to the :class:`SessionManager` as its ``message_end``
  event arrives and written by a :class:`Persistence` actor (lazy first flush);
* the prompt pipeline of seed 002 s.1.7 (input hook, steer / follow-up while streaming, model
  check, pre-prompt compaction check, ``before_agent_start`` hook);
* after every run: retry of transient errors with exponential backoff (:class:`Retry`), then
  the compaction check, overflow (compact, then retry once) or threshold (compact);
* model and thinking-level changes recorded as entries; new, resumed and forked sessions; tree
  navigation with branch summaries; manual compaction.

Whoever starts a run (``prompt``, ``send_custom_message(trigger_turn=True)``) drives it: the
call returns once the run, its retries and the compaction that followed are over, so there is no
background timer. ``abort()`` from any task ends the run, the backoff or both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from re import Pattern
from typing import Any, Final, Literal, NoReturn, Self, cast

import attrs
import structlog
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError
from pitrio.actors import (
    Agent,
    AgentEvent,
    AgentMessage,
    MessageEndEvent,
    MessageStartEvent,
    StreamFn,
)
from pitrio.channels import (
    SUBSCRIPTION_BUFFER,
    Broadcast,
    SlowSubscriberPolicy,
    Subscription,
    open_body_nursery,
)
from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    ModelThinkingLevel,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
    clamp_thinking_level,
    complete_simple,
    default_catalogue,
    models_are_equal,
    now_ms,
    supported_thinking_levels,
)
from pitrio.sessions import _agent_session_tree as _tree
from pitrio.sessions._agent_session_compaction import SessionCompactor
from pitrio.sessions._agent_session_tree import DEFAULT_THINKING_LEVEL, user_text
from pitrio.sessions._agent_session_types import (
    AgentSessionEvent,
    CompactionEventStyle,
    ForkResult,
    InputSource,
    ModelCycleResult,
    NavigateTreeResult,
    QueueUpdateEvent,
    ScopedModel,
    SessionHooks,
    SessionInfoChangedEvent,
    SessionStartReason,
    ThinkingLevelChangedEvent,
)
from pitrio.sessions._compaction import (
    CompactionResult,
    calculate_context_tokens,
    estimate_context_tokens,
)
from pitrio.sessions._context import get_latest_compaction_entry
from pitrio.sessions._entries import (
    CustomMessage,
)
from pitrio.sessions._manager import SessionManager
from pitrio.sessions._messages import convert_to_llm
from pitrio.sessions._persistence import Persistence
from pitrio.sessions._retry import RETRYABLE_ERROR_PATTERN, Retry
from pitrio.sessions._settings import SettingsManager
from pitrio.tools import AgentTool

__all__ = [
    "CLOSE_GRACE",
    "DEFAULT_THINKING_LEVEL",
    "AgentSession",
    "ContextUsage",
    "open_agent_session",
]

log = structlog.get_logger(__name__)

CLOSE_GRACE: Final = 5.0
"""Seconds a closing session gives an aborted run to emit its last events."""
THINKING_LEVELS: Final[tuple[ModelThinkingLevel, ...]] = ("off", "minimal", "low", "medium", "high")

STREAMING_NEEDS_BEHAVIOR: Final = (
    "Agent is already processing. Specify streaming_behavior ('steer' or 'follow_up') to queue "
    "the message."
)
NO_MODEL_SELECTED: Final = "No model selected. Select a model (set_model) before prompting."
StreamingBehavior = Literal["steer", "follow_up"]
ToolExecution = Literal["sequential", "parallel"]
Subscriber = Callable[[AgentSessionEvent], "Awaitable[None] | None"]


@attrs.frozen
class ContextUsage:
    """How full the context window is (``tokens`` ``None`` right after a compaction)."""

    tokens: int | None
    context_window: int
    percent: float | None


class AgentSession:
    """An Agent bound to a session: persistence, retry, compaction, models, branching.

    Construct it and serve it under a nursery (``async with open_agent_session(...)`` or
    ``await nursery.start(session.run)``). State restored from the session (messages, model,
    thinking level) is in place after construction.

    Args:
        session_manager: the session (file-backed or in memory).
        settings: the settings (default: empty, in memory).
        model: the model; default: the session's last model, else the settings default, else
            the first of ``models``.
        thinking_level: default: the session's, else the settings default, else ``"medium"``;
            always clamped to what the model supports.
        tools, system_prompt: as for :class:`~pitrio.actors.Agent`.
        models: models available for :meth:`cycle_model` and for restoring a session's model
            (the built-in catalogue is searched too).
        scoped_models: if given, :meth:`cycle_model` cycles through these instead.
        registry: the provider registry for the agent and the summarising calls.
        get_api_key, stream_fn, tool_execution, steering_skips_tools: passed to the Agent.
        complete: runs summarising requests (default: ``complete_simple`` on ``registry``).
        has_auth: if given, a prompt with a model for which it returns False fails (pi's API
            key check; may be async).
        hooks: the extension points (:class:`SessionHooks`).
        compaction_events: which compaction events to emit (:data:`CompactionEventStyle`).
        retry_pattern: which error messages are transient (default: seed 002's pattern).

    Resource handling:
        :meth:`run` owns the Agent and, unless the manager already has one, a
        :class:`Persistence` actor; both stop when it is cancelled, after whatever was appended
        has been written.
    """

    def __init__(
        self,
        *,
        session_manager: SessionManager,
        settings: SettingsManager | None = None,
        model: Model | None = None,
        thinking_level: ModelThinkingLevel | None = None,
        tools: Iterable[AgentTool] = (),
        system_prompt: str = "",
        models: Sequence[Model] = (),
        scoped_models: Sequence[ScopedModel] = (),
        registry: ProviderRegistry | None = None,
        get_api_key: Callable[[str], Any] | None = None,
        stream_fn: StreamFn | None = None,
        complete: Callable[[Model, Context, StreamOptions], Awaitable[AssistantMessage]]
        | None = None,
        has_auth: Callable[[Model], Any] | None = None,
        hooks: SessionHooks | None = None,
        compaction_events: CompactionEventStyle = "both",
        retry_pattern: Pattern[str] = RETRYABLE_ERROR_PATTERN,
        tool_execution: ToolExecution = "sequential",
        steering_skips_tools: bool = True,
    ) -> None:
        self.session_manager = session_manager
        self.settings = settings if settings is not None else SettingsManager.in_memory()
        self.hooks = hooks if hooks is not None else SessionHooks()
        self._models = list(models)
        self._scoped_models = list(scoped_models)
        self._registry = registry
        self._complete_fn = complete
        self._has_auth = has_auth
        self.compaction_events: CompactionEventStyle = compaction_events
        """Which compaction events this session emits."""
        self._compactor = SessionCompactor(self)
        self._bus: Broadcast[AgentSessionEvent] = Broadcast()
        self._retry = Retry(self.settings.retry_settings, self._emit, pattern=retry_pattern)
        self._steering_texts: list[str] = []
        self._follow_up_texts: list[str] = []
        self._pending_next_turn: list[AgentMessage] = []
        self._last_assistant: AssistantMessage | None = None
        self._busy = False
        self._idle = trio.Event()
        self._idle.set()
        self._branch_summary_scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self.model_fallback_message: str | None = None
        """Why the session's model could not be restored, if it could not."""
        self._base_system_prompt = system_prompt
        self.agent = Agent(
            system_prompt=system_prompt,
            tools=tools,
            convert_to_llm=self._convert_to_llm,
            transform_context=self._transform_context if hooks is not None else None,
            get_api_key=get_api_key,
            stream_fn=stream_fn,
            session_id=session_manager.get_session_id(),
            max_retry_delay_ms=self.settings.provider_retry_settings().max_retry_delay_ms,
            steering_mode=self.settings.steering_mode,
            follow_up_mode=self.settings.follow_up_mode,
            tool_execution=tool_execution,
            steering_skips_tools=steering_skips_tools,
            registry=registry,
        )
        self._pending_entries = _tree.restore_state(self, model, thinking_level)
        self.agent.subscribe(self._on_agent_event)

    # ------------------------------------------------------------------ lifecycle

    async def run(
        self, *, task_status: trio.TaskStatus[Self] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Serve the session until cancelled: ``session = await nursery.start(session.run)``."""
        try:
            async with trio.open_nursery() as nursery:
                if self.session_manager.persistence is None:
                    await nursery.start(Persistence(self.session_manager).run)
                await nursery.start(self.agent.run)
                self._nursery = nursery
                self._write_pending_entries()
                await self._hook("session_start", "startup", None)
                task_status.started(self)
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._closed = True
            self._bus.close()
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Abort what runs, tell the hooks, and stop (the owner's nursery then cancels run)."""
        if self._closed:
            return
        self._closed = True
        with trio.move_on_after(CLOSE_GRACE, shield=True):
            await self.abort()
            await self._hook("session_shutdown", "quit")

    # ------------------------------------------------------------------ state

    @property
    def model(self) -> Model | None:
        """The current model."""
        return self.agent.model

    @property
    def thinking_level(self) -> ModelThinkingLevel:
        """The current thinking level."""
        return self.agent.thinking_level

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        """The agent's transcript (what the next LLM call sees, before conversion)."""
        return self.agent.messages

    @property
    def is_streaming(self) -> bool:
        """Whether a run, its retry backoff or its compaction is in progress."""
        return self._busy or self.agent.is_streaming

    @property
    def is_retrying(self) -> bool:
        """Whether a retry backoff is scheduled or running."""
        return self._retry.is_waiting

    @property
    def retry_attempt(self) -> int:
        """The current retry attempt (0 when not retrying)."""
        return self._retry.attempt

    @property
    def is_compacting(self) -> bool:
        """Whether a compaction or branch summary is being written."""
        return self._compactor.is_running or self._branch_summary_scope is not None

    @property
    def session_id(self) -> str:
        """The session's id (a UUID)."""
        return self.session_manager.get_session_id()

    @property
    def session_file(self) -> str | None:
        """The session file (``None`` in memory)."""
        return self.session_manager.get_session_file()

    @property
    def session_name(self) -> str | None:
        """The display name set with :meth:`set_session_name`, if any."""
        return self.session_manager.get_session_name()

    @property
    def system_prompt(self) -> str:
        """The system prompt of the current (or next) run."""
        return self.agent.system_prompt

    @property
    def steering_mode(self) -> str:
        """How steering messages are delivered: ``"one-at-a-time"`` or ``"all"``."""
        return self.agent.steering_mode

    @property
    def follow_up_mode(self) -> str:
        """How follow-up messages are delivered: ``"one-at-a-time"`` or ``"all"``."""
        return self.agent.follow_up_mode

    @property
    def pending_message_count(self) -> int:
        """Queued steering plus follow-up messages."""
        return len(self._steering_texts) + len(self._follow_up_texts)

    def get_steering_messages(self) -> list[str]:
        """The texts of the queued steering messages."""
        return list(self._steering_texts)

    def get_follow_up_messages(self) -> list[str]:
        """The texts of the queued follow-up messages."""
        return list(self._follow_up_texts)

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every session event, in order (as Agent.subscribe)."""
        return self._bus.subscribe(callback)

    @asynccontextmanager
    async def events(
        self, *, max_buffer: int = SUBSCRIPTION_BUFFER, policy: SlowSubscriberPolicy = "block"
    ) -> AsyncIterator[Subscription[AgentSessionEvent]]:
        """Open a bounded async iterator of session events (as :meth:`Agent.events`)."""
        async with self._bus.open_subscription(max_buffer=max_buffer, policy=policy) as sub:
            yield sub

    async def _emit(self, event: AgentSessionEvent) -> None:
        if not self._bus.closed:
            await self._bus.publish(event)

    async def _hook(self, name: str, *args: Any) -> Any:
        try:
            return await getattr(self.hooks, name)(*args)
        except Exception:
            log.exception("session_hook_failed", hook=name)
            return None

    async def _emit_queue_update(self) -> None:
        await self._emit(
            QueueUpdateEvent(steering=self._steering_texts, follow_up=self._follow_up_texts)
        )

    async def _on_agent_event(self, event: AgentEvent) -> None:
        # pi's _processAgentEvent: queue bookkeeping, hooks, listeners, then persistence.
        if isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage):
            self._compactor.overflow_recovery_attempted = False
            text = user_text(event.message)
            if text in self._steering_texts:
                self._steering_texts.remove(text)
                await self._emit_queue_update()
            elif text in self._follow_up_texts:
                self._follow_up_texts.remove(text)
                await self._emit_queue_update()
        await self._hook("on_agent_event", event)
        await self._emit(event)
        if not isinstance(event, MessageEndEvent):
            return
        message = event.message
        manager = self.session_manager
        if isinstance(message, CustomMessage):
            manager.append_custom_message_entry(
                message.custom_type, message.content, message.display, message.details
            )
        elif isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
            manager.append_message(message)
        # bashExecution and summary messages are saved by the flows that create them.
        if isinstance(message, AssistantMessage):
            self._last_assistant = message
            if message.stop_reason != "error":
                self._compactor.overflow_recovery_attempted = False
                await self._retry.succeeded()

    def _convert_to_llm(self, messages: Sequence[AgentMessage]) -> list[Message]:
        images = self.settings.get("images")
        blocked = isinstance(images, dict) and images.get("blockImages") is True
        return convert_to_llm(messages, block_images=blocked)

    async def _transform_context(self, messages: Sequence[AgentMessage]) -> list[AgentMessage]:
        changed = await self._hook("context", list(messages))
        return list(messages) if changed is None else cast(list[AgentMessage], changed)

    # ------------------------------------------------------------------ restoring state

    @property
    def available_models(self) -> list[Model]:
        """The models given as ``models`` (what :meth:`cycle_model` cycles through)."""
        return list(self._models)

    def find_model(self, provider: str, model_id: str) -> Model | None:
        """Look a model up in ``models``, then in the built-in catalogue."""
        for model in self._models:
            if model.provider == provider and model.id == model_id:
                return model
        return default_catalogue.get(provider, model_id)

    def _write_pending_entries(self) -> None:
        for kind, value in self._pending_entries:
            if kind == "model":
                self.session_manager.append_model_change(value.provider, value.id)
            else:
                self.session_manager.append_thinking_level_change(value)
        self._pending_entries = []

    async def _replace_session(self, reason: SessionStartReason, previous: str | None) -> None:
        """After the manager switched to another session: reset the runtime state to it."""
        self.agent.clear_all_queues()
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self._pending_next_turn.clear()
        self._retry.reset()
        self._last_assistant = None
        self._compactor.overflow_recovery_attempted = False
        self._pending_entries = _tree.restore_state(self, None, None)
        self._write_pending_entries()
        await self._hook("session_start", reason, previous)

    # ------------------------------------------------------------------ driving runs

    def _claim(self) -> None:
        if self._busy:
            raise UsageError(STREAMING_NEEDS_BEHAVIOR)
        if self._nursery is None:
            raise UsageError(
                "AgentSession is not running: use `async with open_agent_session(...)` first"
                if not self._closed
                else "AgentSession is closed"
            )
        self._busy = True
        self._idle = trio.Event()

    def _release(self) -> None:
        self._busy = False
        self._idle.set()

    async def _drive(self, start: Callable[[], Awaitable[None]]) -> None:
        """Run the agent, then retry / compact / continue until the session settles.

        The caller has claimed the session (``_claim``); this releases it.
        """
        try:
            self._last_assistant = None
            await start()
            while True:
                message, self._last_assistant = self._last_assistant, None
                if message is None or not await self._after_run(message):
                    break
                try:
                    await self.agent.continue_()
                except UsageError as exc:
                    log.warning("continue_failed", error=str(exc))
                    break
        finally:
            self._release()

    async def _after_run(self, message: AssistantMessage) -> bool:
        """pi's agent_end handling: retry a transient error, else check compaction.

        Returns whether the agent should continue (a retry, an overflow recovery, or queued
        messages after a compaction).
        """
        window = self.model.context_window if self.model is not None else 0
        if self._retry.is_retryable(message, window):
            delay = await self._retry.schedule(message)
            if delay is not None:
                # The failed response stays in the session file but leaves the context.
                self._drop_trailing_assistant()
                if await self._retry.wait(delay):
                    return True
        return await self._compactor.check(message)

    def _drop_trailing_assistant(self, *, only_errors: bool = False) -> None:
        messages = self.agent.messages
        last = messages[-1] if messages else None
        if isinstance(last, AssistantMessage) and (not only_errors or last.stop_reason == "error"):
            self.agent.replace_messages(messages[:-1])

    @asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """Abort what runs and hold the session for the block (a compaction, a move between
        sessions): a prompt meanwhile is queued as steering or follow-up, not run."""
        await self.abort()
        self._claim()
        try:
            yield
        finally:
            self._release()

    async def wait_for_idle(self) -> None:
        """Return once no run, retry or automatic compaction is in progress."""
        await self._idle.wait()
        await self.agent.wait_for_idle()

    async def abort(self) -> None:
        """Abort the run, a retry backoff and an automatic compaction; wait until idle.

        (pi's abort leaves an automatic compaction running in the background; here the task
        that prompted is still driving it, so it is cancelled too.)
        """
        self._retry.cancel()
        self._compactor.abort()
        self.agent.abort()
        await self.wait_for_idle()

    def abort_retry(self) -> None:
        """Cancel a retry backoff (the run then ends with the error)."""
        self._retry.cancel()

    def abort_compaction(self) -> None:
        """Cancel a compaction in progress (manual or automatic)."""
        self._compactor.abort()

    def abort_branch_summary(self) -> None:
        """Cancel a branch summary in progress."""
        if self._branch_summary_scope is not None:
            self._branch_summary_scope.cancel()

    # ------------------------------------------------------------------ prompting

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        source: InputSource = "interactive",
    ) -> None:
        """Send a prompt and drive the run to its end (seed 002 s.1.7).

        While the session is streaming the text is queued instead, as a steering or follow-up
        message according to ``streaming_behavior``.

        Raises:
            UsageError: streaming without ``streaming_behavior``; no model; no API key (when
                ``has_auth`` was given).
        """
        image_blocks = tuple(images) if images else None
        result = await self._hook("input", text, image_blocks, source)
        if result is not None:
            if result.action == "handled":
                return
            if result.action == "transform":
                text = result.text if result.text is not None else text
                image_blocks = result.images if result.images is not None else image_blocks
        if self.is_streaming:
            if streaming_behavior is None:
                raise UsageError(STREAMING_NEEDS_BEHAVIOR)
            if streaming_behavior == "follow_up":
                await self._queue_follow_up(text, image_blocks)
            else:
                await self._queue_steer(text, image_blocks)
            return
        model = self.model
        if model is None:
            raise UsageError(NO_MODEL_SELECTED)
        if self._has_auth is not None and not await maybe_await(self._has_auth(model)):
            raise UsageError(f"No API key found for {model.provider}.")
        self._claim()
        try:
            last = self._last_assistant_in_context()
            if last is not None:
                await self._compactor.check(last, skip_aborted_check=False)
            content: list[TextContent | ImageContent] = [TextContent(text=text)]
            content.extend(image_blocks or ())
            messages: list[AgentMessage] = [UserMessage(content=content, timestamp=now_ms())]
            messages.extend(self._pending_next_turn)
            self._pending_next_turn.clear()
            start = await self._hook(
                "before_agent_start", text, image_blocks, self._base_system_prompt
            )
            if start is not None:
                messages.extend(start.messages)
            system_prompt = start.system_prompt if start is not None else None
            self.agent.set_system_prompt(system_prompt or self._base_system_prompt)
        except BaseException:
            self._release()
            raise
        await self._drive(lambda: self.agent.prompt(messages))

    def _last_assistant_in_context(self) -> AssistantMessage | None:
        for message in reversed(self.agent.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    async def steer(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a message for the next turn (delivered after the running tool calls)."""
        await self._queue_steer(text, tuple(images) if images else None)

    async def follow_up(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a message for when the agent would otherwise stop."""
        await self._queue_follow_up(text, tuple(images) if images else None)

    def _user_message(self, text: str, images: tuple[ImageContent, ...] | None) -> UserMessage:
        content: list[TextContent | ImageContent] = [TextContent(text=text)]
        content.extend(images or ())
        return UserMessage(content=content, timestamp=now_ms())

    async def _queue_steer(self, text: str, images: tuple[ImageContent, ...] | None) -> None:
        self.agent.steer(self._user_message(text, images))
        self._steering_texts.append(text)
        await self._emit_queue_update()

    async def _queue_follow_up(self, text: str, images: tuple[ImageContent, ...] | None) -> None:
        self.agent.follow_up(self._user_message(text, images))
        self._follow_up_texts.append(text)
        await self._emit_queue_update()

    async def clear_queue(self) -> tuple[list[str], list[str]]:
        """Drop the queued messages; return the steering and follow-up texts."""
        steering, follow_up = list(self._steering_texts), list(self._follow_up_texts)
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self.agent.clear_all_queues()
        await self._emit_queue_update()
        return steering, follow_up

    async def send_custom_message(
        self,
        custom_type: str,
        content: str | Sequence[TextContent | ImageContent],
        *,
        display: bool = True,
        details: Any = None,
        trigger_turn: bool = False,
        deliver_as: Literal["steer", "follow_up", "next_turn"] | None = None,
    ) -> None:
        """Add an extension message (a ``custom_message`` entry; the LLM sees it as user text).

        ``deliver_as="next_turn"`` keeps it for the next prompt. While streaming it is queued
        (steering unless ``deliver_as="follow_up"``). Otherwise it is appended, and with
        ``trigger_turn`` a run starts from it.
        """
        message = CustomMessage(
            custom_type=custom_type,
            content=content if isinstance(content, str) else tuple(content),
            display=display,
            details=details,
            timestamp=now_ms(),
        )
        if deliver_as == "next_turn":
            self._pending_next_turn.append(message)
        elif self.is_streaming:
            if deliver_as == "follow_up":
                self.agent.follow_up(message)
            else:
                self.agent.steer(message)
        elif trigger_turn:
            self._claim()
            await self._drive(lambda: self.agent.prompt(message))
        else:
            self.agent.append_message(message)
            self.session_manager.append_custom_message_entry(
                custom_type, message.content, display, details
            )
            await self._emit(MessageStartEvent(message=message))
            await self._emit(MessageEndEvent(message=message))

    async def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: StreamingBehavior | None = None,
    ) -> None:
        """Prompt with ``content`` as an extension would (``source="extension"``)."""
        if isinstance(content, str):
            text, images = content, None
        else:
            text = "\n".join(b.text for b in content if isinstance(b, TextContent))
            images = [b for b in content if isinstance(b, ImageContent)] or None
        await self.prompt(text, images=images, streaming_behavior=deliver_as, source="extension")

    # ------------------------------------------------------------------ models, thinking

    async def set_model(self, model: Model) -> None:
        """Switch the model: recorded in the session and as the settings default; the thinking
        level is re-clamped to the new model.

        Raises:
            UsageError: ``has_auth`` says there is no API key for the model.
        """
        if self._has_auth is not None and not await maybe_await(self._has_auth(model)):
            raise UsageError(f"No API key for {model.provider}/{model.id}")
        previous = self.model
        level = self._thinking_level_for_switch()
        self.agent.set_model(model)
        self.session_manager.append_model_change(model.provider, model.id)
        self.settings.set_default_model_and_provider(model.provider, model.id)
        await self.set_thinking_level(level)
        if not models_are_equal(previous, model):
            await self._hook("model_select", model, previous, "set")

    async def cycle_model(
        self, direction: Literal["forward", "backward"] = "forward"
    ) -> ModelCycleResult | None:
        """Switch to the next (or previous) scoped model, else the next available model.

        Models ``has_auth`` rejects are skipped. Returns ``None`` when there is only one model
        to cycle through.
        """
        scoped = bool(self._scoped_models)
        candidates = self._scoped_models or [ScopedModel(model=m) for m in self._models]
        if self._has_auth is not None:
            candidates = [c for c in candidates if await maybe_await(self._has_auth(c.model))]
        if len(candidates) <= 1:
            return None
        current = self.model
        index = next((i for i, c in enumerate(candidates) if models_are_equal(c.model, current)), 0)
        step = 1 if direction == "forward" else -1
        chosen = candidates[(index + step) % len(candidates)]
        level = self._thinking_level_for_switch(chosen.thinking_level)
        self.agent.set_model(chosen.model)
        self.session_manager.append_model_change(chosen.model.provider, chosen.model.id)
        self.settings.set_default_model_and_provider(chosen.model.provider, chosen.model.id)
        await self.set_thinking_level(level)
        await self._hook("model_select", chosen.model, current, "cycle")
        return ModelCycleResult(
            model=chosen.model, thinking_level=self.thinking_level, is_scoped=scoped
        )

    def supports_thinking(self) -> bool:
        """Whether the current model reasons."""
        return bool(self.model is not None and self.model.reasoning)

    def available_thinking_levels(self) -> list[ModelThinkingLevel]:
        """The levels the current model supports."""
        if self.model is None:
            return list(THINKING_LEVELS)
        return supported_thinking_levels(self.model)

    def _thinking_level_for_switch(
        self, explicit: ModelThinkingLevel | None = None
    ) -> ModelThinkingLevel:
        if explicit is not None:
            return explicit
        if not self.supports_thinking():
            default = self.settings.default_thinking_level or DEFAULT_THINKING_LEVEL
            return cast(ModelThinkingLevel, default)
        return self.thinking_level

    async def set_thinking_level(self, level: ModelThinkingLevel) -> None:
        """Set the thinking level, clamped to the model; a change is recorded in the session
        and the settings and announced with ``thinking_level_changed``."""
        available = self.available_thinking_levels()
        if level in available:
            effective = level
        else:
            effective = clamp_thinking_level(self.model, level) if self.model else "off"
        previous = self.thinking_level
        self.agent.set_thinking_level(effective)
        if effective == previous:
            return
        self.session_manager.append_thinking_level_change(effective)
        if self.supports_thinking() or effective != "off":
            self.settings.set_default_thinking_level(effective)
        await self._emit(ThinkingLevelChangedEvent(level=effective))
        await self._hook("thinking_level_select", effective, previous)

    async def cycle_thinking_level(self) -> ModelThinkingLevel | None:
        """Move to the next supported level; ``None`` if the model does not reason."""
        if not self.supports_thinking():
            return None
        levels = self.available_thinking_levels()
        current = levels.index(self.thinking_level) if self.thinking_level in levels else -1
        await self.set_thinking_level(levels[(current + 1) % len(levels)])
        return self.thinking_level

    def set_steering_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        """Set (and remember in the settings) how steering messages are delivered."""
        self.agent.steering_mode = mode
        self.settings.set_steering_mode(mode)

    def set_follow_up_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        """Set (and remember in the settings) how follow-up messages are delivered."""
        self.agent.follow_up_mode = mode
        self.settings.set_follow_up_mode(mode)

    async def set_session_name(self, name: str) -> None:
        """Name the session (a ``session_info`` entry)."""
        self.session_manager.append_session_info(name)
        await self._emit(SessionInfoChangedEvent(name=self.session_manager.get_session_name()))

    # ------------------------------------------------------------------ compaction

    @property
    def auto_compaction_enabled(self) -> bool:
        """Whether compaction runs automatically (``compaction.enabled``)."""
        return self.settings.compaction_settings().enabled

    def set_auto_compaction_enabled(self, enabled: bool) -> None:
        """Turn automatic compaction on or off (saved in the settings)."""
        self.settings.set_compaction_enabled(enabled)

    @property
    def auto_retry_enabled(self) -> bool:
        """Whether transient errors are retried (``retry.enabled``)."""
        return self.settings.retry_settings().enabled

    def set_auto_retry_enabled(self, enabled: bool) -> None:
        """Turn auto-retry on or off (saved in the settings)."""
        self.settings.set_retry_enabled(enabled)

    async def _complete(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessage:
        if options.api_key is None:
            get = self.agent.get_api_key
            key = await maybe_await(get(model.provider)) if get is not None else None
            if isinstance(key, str) and key:
                options = attrs.evolve(options, api_key=key)
        if self._complete_fn is not None:
            return await self._complete_fn(model, context, options)
        return await complete_simple(model, context, options, registry=self._registry)

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Compact the session now (aborting a run in progress first).

        Raises:
            UsageError: no model.
            CompactionError: nothing to compact, already compacted, cancelled (by a hook or
                :meth:`abort_compaction`), or the summary request failed.
        """
        async with self._exclusive():
            return await self._compactor.compact(custom_instructions)

    # ------------------------------------------------------------------ sessions

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        """Start a new, empty session (the current file stays). False if a hook cancelled."""
        return await _tree.new_session(self, parent_session)

    async def switch_session(self, session_path: str) -> bool:
        """Resume another session file. False if a hook cancelled.

        Raises:
            SessionFileCorrupt: the file is damaged (the current session is kept).
        """
        return await _tree.switch_session(self, session_path)

    async def fork(
        self, entry_id: str, *, position: Literal["before", "at"] = "before"
    ) -> ForkResult:
        """Continue in a new session holding the path to an entry (pi's ``/fork``).

        ``position="before"`` (the default) forks before a user message, whose text is
        returned for the editor; ``"at"`` keeps the entry itself.

        Raises:
            UsageError: no such entry, or (``"before"``) it is not a user message.
        """
        return await _tree.fork(self, entry_id, position)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> NavigateTreeResult:
        """Move to another entry of this session's tree (pi's ``/tree``), optionally leaving a
        summary of the abandoned branch where the conversation continues.

        Navigating to a user (or custom) message moves to its parent and returns its text for
        the editor; to any other entry, moves to that entry. A run in progress is aborted.

        Args:
            summarize: have the model summarise the branch being left.
            custom_instructions: added to the summary prompt (or replacing it with
                ``replace_instructions``).
            label: a label for the summary entry (or, without a summary, the target).

        Raises:
            SessionEntryNotFound: no entry ``target_id``.
            UsageError: ``summarize`` without a model.
            CompactionError: the summary request failed.
        """
        return await _tree.navigate_tree(
            self,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    # ------------------------------------------------------------------ information

    def get_context_usage(self) -> ContextUsage | None:
        """The context window use (``tokens`` ``None`` until a response after a compaction)."""
        model = self.model
        if model is None or model.context_window <= 0:
            return None
        window = model.context_window
        branch = self.session_manager.get_branch()
        latest = get_latest_compaction_entry(branch)
        if latest is not None:
            fresh = False
            for entry in reversed(branch[branch.index(latest) + 1 :]):
                message = getattr(entry, "message", None)
                if isinstance(message, AssistantMessage) and message.stop_reason not in (
                    "aborted",
                    "error",
                ):
                    fresh = calculate_context_tokens(message.usage) > 0
                    break
            if not fresh:
                return ContextUsage(None, window, None)
        tokens = estimate_context_tokens(self.messages).tokens
        return ContextUsage(tokens, window, tokens / window * 100)

    def get_last_assistant_text(self) -> str | None:
        """The text of the last assistant message (skipping empty aborted ones)."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                if message.stop_reason == "aborted" and not message.content:
                    continue
                return message.text().strip() or None
        return None


@asynccontextmanager
async def open_agent_session(**options: Any) -> AsyncIterator[AgentSession]:
    """Create an :class:`AgentSession` (keyword arguments as its constructor) and serve it.

    Leaving the block aborts what runs (with ``CLOSE_GRACE`` seconds to finish its events),
    writes what the session appended and stops every task it started.
    """
    session = AgentSession(**options)
    async with open_body_nursery() as nursery:
        await nursery.start(session.run)
        try:
            yield session
        finally:
            await session.aclose()
            nursery.cancel_scope.cancel()
