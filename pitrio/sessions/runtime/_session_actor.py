"""``SessionActor``: the task that owns an AgentSession's state and executes its commands.

Kept in one module: the actor's command handlers share its state; tree, compaction
and bash handlers live in mixins.

::

    AgentSession.run (the session's nursery: opened by the first command, or at start when
     |                the session has a Persistence of its own; a session never used has none)
     |- Persistence       one writer per session file (unless the manager already has one;
     |                    none in memory); its task starts with the first entry to write
     |- Agent.run         the agent's nursery: its command task and one task per run (started
     |                    by the first run: an idle session keeps only its own task)
     |- SessionActor      this module: the command inbox (SESSION_INBOX), state, events
     `- jobs              prompts (run, retry backoffs, compaction after), manual compaction and
                          moves between sessions: one task each, in the session's nursery,
                          inside the job's own cancel scope

Every public method of the facade sends a command (:mod:`._session_commands`) and awaits its
reply; RPC mode, the websocket host and extensions send the same commands. The session's state
changes only in this task and in its jobs; its Agent is changed only through the agent's own
commands (``await agent.set_model(...)`` ...), which the agent's task applies in order with its
runs. Commands that only change state (``steer``, ``set_model``, ``set_thinking_level``,
``clear_queue`` ...) are executed in this task: the state changes, the reply goes out, and then
the events and hooks follow. Replying before publishing is what lets a listener await such a
command while the run that called it is delivering an event: the publish waits for that event's
delivery to finish, the listener does not wait for the publish. Commands that take time
(``prompt``, ``compact``, ``new_session``, ``switch_session``, ``fork``, ``navigate_tree``)
start a *job*; while one runs the session is busy, a new prompt follows the busy policy, and the
exclusive commands abort it first.

Abort cancels: the agent's run scope (its epilogue emits the closing events), the retry backoff
(a sleep in the prompt's job, in a cancel scope of its own), the compaction, the branch summary,
and the job's own scope after ``ABORT_GRACE`` for whatever else the job waits on (a hook, a
listener), so abort reaches quiet in well under 100 ms. ``Abort``, ``AbortRetry``,
``AbortCompaction`` and ``AbortBranchSummary`` are commands like the others: the cancelling is
done by this task, from the inbox.

Persist, then publish, then number: the agent records each finished message into the
:class:`SessionManager` (and so the Persistence actor) before any subscriber sees its
``message_end``; every session event then goes through an :class:`~pitrio.channels.EventLog`,
which gives it the session's next ``seq`` and keeps it for replay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from re import Pattern
from typing import Any, Final, Literal, NoReturn, Self

import attrs
import structlog
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError, unwrap_group
from pitrio.actors import (
    Agent,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StreamFn,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    merge_agent_events,
)
from pitrio.channels import EventLog, Latch, Mailbox, Reply, close_inbox
from pitrio.providers import (
    AssistantMessage,
    Context,
    Message,
    Model,
    ModelThinkingLevel,
    ProviderRegistry,
    ProviderResponse,
    StreamOptions,
    ToolResultMessage,
    UserMessage,
    complete_simple,
    default_catalogue,
    models_are_equal,
)
from pitrio.sessions.compaction._compaction import CompactionError
from pitrio.sessions.context._messages import convert_to_llm
from pitrio.sessions.runtime import _agent_session_tree as _tree
from pitrio.sessions.runtime import _session_commands as cmd
from pitrio.sessions.runtime._agent_session_compaction import COMPACTION_CANCELLED, SessionCompactor
from pitrio.sessions.runtime._agent_session_tree import user_text
from pitrio.sessions.runtime._agent_session_types import (
    AgentSessionEvent,
    CompactionEventStyle,
    QueueUpdateEvent,
    ScopedModel,
    SessionHooks,
    SessionInfoChangedEvent,
    SessionSnapshot,
    SessionStartReason,
)
from pitrio.sessions.runtime._context_engine import install_context_engine
from pitrio.sessions.runtime._events_codec import EVENTS_CODEC
from pitrio.sessions.runtime._retry import RETRYABLE_ERROR_PATTERN, Retry
from pitrio.sessions.runtime._session_models import ModelCommands, ack
from pitrio.sessions.runtime._session_prompting import PromptCommands
from pitrio.sessions.runtime._user_bash import UserBashCommands
from pitrio.sessions.settings._settings import SettingsManager
from pitrio.sessions.storage._entries import CustomMessage
from pitrio.sessions.storage._manager import SessionManager
from pitrio.sessions.storage._persistence import Persistence
from pitrio.tools import AgentTool

__all__ = [
    "ABORT_GRACE",
    "CLOSE_GRACE",
    "SESSION_INBOX",
    "SessionActor",
]

log = structlog.get_logger(__name__)

CLOSE_GRACE: Final = 5.0
"""Seconds a closing session gives an aborted run to emit its last events."""
ABORT_GRACE: Final = 0.05
"""Seconds after an abort before the job's own scope is cancelled too: the agent run, the retry
backoff and the compaction stop at once and emit their closing events within this bound; only
something else the job waits on (a hook, a stalled listener) waits for it to expire."""
SESSION_INBOX: Final = 64
"""Commands waiting for the session's task. Commands execute without waiting on the network or
the model, so the inbox drains as fast as it fills; 64 absorbs a burst of RPC lines, and a
sender beyond that waits (backpressure) instead of growing a queue."""


_DEFAULT_HOOKS: Final = SessionHooks()
"""The hooks of every session given none (SessionHooks keeps no state: shared)."""
_ENCODE: Final = EVENTS_CODEC.dumps
"""The event log's encoder, one bound method for every session."""

_IDLE: Final = Latch()
"""The latch of a session with no job: set once, shared by every idle session (a set latch's
wait() only checkpoints, so sharing it is safe)."""
_IDLE.set()


@attrs.define(eq=False)
class _Job:
    """One long operation of the session, in its own task and cancel scope."""

    scope: trio.CancelScope = attrs.Factory(trio.CancelScope)
    done: Latch = attrs.Factory(Latch)
    previous: _Job | None = None


_PLAIN_AGENT_EVENTS: Final = frozenset(
    {
        MessageUpdateEvent,
        AgentStartEvent,
        AgentEndEvent,
        TurnStartEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
        ToolExecutionEndEvent,
    }
)
"""The agent events the session only passes on (no bookkeeping in `_on_agent_event`)."""


class SessionActor(ModelCommands, UserBashCommands, PromptCommands):
    """The state of one AgentSession and the task that changes it (see the module docstring).

    Implements :class:`~pitrio.sessions.runtime._session_core.SessionCore` for the tree and
    compaction operations. Constructed by :class:`~pitrio.sessions.AgentSession` with its arguments.
    """

    __slots__ = ()  # the attributes are SessionSlots' slots

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
        tool_execution: Literal["sequential", "parallel"] = "sequential",
        steering_skips_tools: bool = True,
        busy_policy: cmd.BusyPolicy = "reject",
        replay_ring: int | None = None,
        provider_session_id: bool = True,
    ) -> None:
        self.session_manager = session_manager
        self.settings = settings if settings is not None else SettingsManager.in_memory()
        self.hooks = hooks if hooks is not None else _DEFAULT_HOOKS
        # Resolved once: hooks that keep SessionHooks' do-nothing on_agent_event cost the
        # per-token path nothing (no getattr, no coroutine per event).
        self._agent_event_hook = type(self.hooks).on_agent_event is not SessionHooks.on_agent_event
        # Tuples: never changed in place, and a tuple given (or the default) is shared.
        self._models = tuple(models)
        self._scoped_models = tuple(scoped_models)
        self._registry = registry
        self._complete_fn = complete
        self._has_auth = has_auth
        self.compaction_events: CompactionEventStyle = compaction_events
        self.busy_policy: cmd.BusyPolicy = busy_policy
        self.model_fallback_message: str | None = None
        self.branch_summary_scope: trio.CancelScope | None = None
        self._user_bash = None  # the user-bash state, made by the first user command
        self._compactor = SessionCompactor(self)
        ring = replay_ring if replay_ring is not None else self.settings.replay_ring_size
        self.log: EventLog[AgentSessionEvent] = EventLog(
            encode=_ENCODE,
            merge=merge_agent_events,
            snapshot=self.snapshot,
            ring_size=ring,
            # Until a reader could hold a cursor (a subscription, a read of seq), keeping each
            # token's event alive costs the cyclic collector per token and replays to nobody.
            ring_on_demand=True,
        )
        # Made by the first run's end (_retry_now): a session never prompted holds none.
        self._retry_pattern = retry_pattern
        self._retry: Retry | None = None
        # Tuples, replaced on change (the queues hold a few items at most): an idle session
        # shares the empty tuple instead of holding three empty lists.
        self._steering_texts: tuple[str, ...] = ()
        self._follow_up_texts: tuple[str, ...] = ()
        self._pending_next_turn: tuple[AgentMessage, ...] = ()
        self._last_assistant: AssistantMessage | None = None
        self._job: _Job | None = None
        self._idle = _IDLE  # replaced by a fresh Latch when a job starts
        self._nursery: trio.Nursery | None = None
        self._inbox: Mailbox[cmd.SessionCommand] | None = None
        self._closed = False
        self._base_system_prompt = system_prompt
        restored = _tree.restored_state(self, model, thinking_level, None)
        self.agent = Agent(
            model=restored.model,
            thinking_level=restored.thinking_level,
            messages=restored.messages,
            system_prompt=system_prompt,
            tools=tools,
            convert_to_llm=self._convert_to_llm,
            get_api_key=get_api_key,
            stream_fn=stream_fn,
            session_id=restored.session_id if provider_session_id else None,
            max_retry_delay_ms=self.settings.provider_retry_settings().max_retry_delay_ms,
            stall_timeout_ms=self.settings.stream_stall_timeout_ms,
            steering_mode=self.settings.steering_mode,
            follow_up_mode=self.settings.follow_up_mode,
            tool_execution=tool_execution,
            steering_skips_tools=steering_skips_tools,
            registry=registry,
            record_event=self._record,
            # The extension points of seeds 003/004 that run inside the agent's run (and so
            # under its cancel scope): tool_call, tool_result, before_provider_request.
            before_tool_call=self.hooks.tool_call if hooks is not None else None,
            after_tool_call=self.hooks.tool_result if hooks is not None else None,
            on_payload=self.hooks.before_provider_request if hooks is not None else None,
        )
        if hooks is not None:
            self.agent.stream_fn = self._with_on_response(self.agent.stream_fn)
        self._pending_entries: Sequence[tuple[str, Any]] = restored.pending
        self.agent.subscribe(self._deliver_agent_event)
        self.context = install_context_engine(self)  # seed 001's envelope and hooks

    def _with_on_response(self, stream_fn: StreamFn) -> StreamFn:
        """``stream_fn`` with the ``after_provider_response`` hook as the requests'
        ``on_response`` (it runs in the run's task, under its cancel scope, like
        ``before_provider_request``)."""

        async def on_response(response: ProviderResponse, model: Model) -> None:
            await self.hook("after_provider_response", response.status, dict(response.headers))

        def stream(nursery: trio.Nursery, model: Model, context: Any, options: Any) -> Any:
            return stream_fn(
                nursery, model, context, attrs.evolve(options, on_response=on_response)
            )

        return stream

    # ------------------------------------------------------------------ lifecycle

    async def run(
        self, *, task_status: trio.TaskStatus[Self] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Serve the session until cancelled (see the module docstring for the task tree)."""
        # A Mailbox, not a memory channel: an idle session waits on an empty inbox, and an
        # empty Mailbox costs a few hundred bytes against a channel's 1.8 KB plus its waiter.
        inbox = Mailbox[cmd.SessionCommand](max_size=SESSION_INBOX)
        persistence: Persistence | None = None
        manager = self.session_manager
        if manager.persistence is None and manager.is_persisted():
            persistence = Persistence(manager)
            persistence.attach()  # a locked file is refused here, as itself
        try:
            self._inbox = inbox
            if persistence is None:
                # Nothing to write from this session's own tasks: the nursery (its cancel
                # scope, status, sets: ~1.2 KB of trio's objects) is opened by the first
                # command, so a session never used holds none.
                await self._started(task_status)
                task_status = trio.TASK_STATUS_IGNORED  # the starter's, done with: let go
                await inbox.wait_nonempty()
            async with trio.open_nursery() as nursery:
                # The agent's task starts with the first run (_drive): an idle session keeps
                # only this task.
                self._nursery = nursery
                if persistence is not None:
                    # Its task starts with the first entry to write (an idle session has none).
                    persistence.start_on_demand(nursery)
                    await self._started(task_status)
                await self._serve(inbox)
        finally:
            self._inbox = None
            self._nursery = None
            self._closed = True
            close_inbox(inbox, UsageError("AgentSession is closed"))
            self.agent.close()
            if persistence is not None:
                persistence.detach()
            self.log.close()
            self._release_cycles()
        raise AssertionError("unreachable")  # pragma: no cover

    def _release_cycles(self) -> None:
        """Break the reference cycles through this actor, once it is closed: its agent's
        callbacks (let go by ``agent.close``), its log's snapshot (``log.close``), its retry's
        ``emit``, its compactor's and context's back references. A closed session is then
        freed by reference counting when its owner drops it, not left to the cycle collector
        (which a host with spaced-out collections runs rarely)."""
        self._retry = None
        self._job = None
        self._compactor.release()
        self.context.release()

    async def _started(self, task_status: trio.TaskStatus[Self]) -> None:
        self._write_pending_entries()
        await self.hook("session_start", "startup", None)
        task_status.started(self)

    async def aclose(self) -> None:
        """Abort what runs, tell the hooks, and stop (the owner's nursery then cancels run).

        Run by the owner closing the session, in its task: the abort is the ``Abort`` command;
        the closed flag set here only makes a late sender's error say "closed" (the inbox
        itself is closed by :meth:`run`'s end).
        """
        if self._closed:
            return
        self._closed = True
        with trio.move_on_after(CLOSE_GRACE, shield=True):
            await self.abort()
            await self.hook("session_shutdown", "quit")

    async def send(self, command: cmd.SessionCommand) -> None:
        """Put ``command`` into the inbox (waiting while it is full).

        Raises:
            UsageError: the session is not running, or closed.
        """
        inbox = self._inbox
        if inbox is None:
            raise UsageError(
                "AgentSession is not running: use `async with open_agent_session(...)` first"
                if not self._closed
                else "AgentSession is closed"
            )
        try:
            await inbox.put(command)
        except trio.ClosedResourceError:
            raise UsageError("AgentSession is closed") from None

    def send_nowait(self, command: cmd.SessionCommand) -> None:
        """Put ``command`` into the inbox without waiting (for synchronous senders).

        Raises:
            trio.WouldBlock: the inbox is full.
            UsageError: the session is not running, or closed.
        """
        inbox = self._inbox
        if inbox is None:
            raise UsageError(
                "AgentSession is not running" if not self._closed else "AgentSession is closed"
            )
        try:
            inbox.put_nowait(command)
        except trio.ClosedResourceError:
            raise UsageError("AgentSession is closed") from None

    async def _serve(self, inbox: Mailbox[cmd.SessionCommand]) -> NoReturn:
        command: cmd.SessionCommand | None = None
        while True:
            await inbox.wait_nonempty()  # only the session's finally closes the inbox
            for command in inbox.drain():  # one at a time: what is left is failed on close
                try:
                    await self._execute(command)
                except Exception as exc:
                    command.reply.fail(unwrap_group(exc))
            # Let go of the last command while the session waits: it holds its reply, and
            # through it whatever the command produced.
            command = None

    async def _execute(self, command: cmd.SessionCommand) -> None:
        match command:
            case cmd.Prompt():
                await self._prompt(command)
            case cmd.Steer():
                self._queue_steer(command.message, command.images)
                ack(command.reply)
                await self._emit_queue_update()
                command.reply.set(None)
            case cmd.FollowUp():
                self._queue_follow_up(command.message, command.images)
                ack(command.reply)
                await self._emit_queue_update()
                command.reply.set(None)
            case cmd.Abort():
                self._abort_now()
                self._start_waiter(command.reply)
            case cmd.AbortRetry():
                self.cancel_retry()
                command.reply.set(None)
            case cmd.AbortCompaction():
                self._compactor.abort()
                command.reply.set(None)
            case cmd.AbortBranchSummary():
                if self.branch_summary_scope is not None:
                    self.branch_summary_scope.cancel()
                command.reply.set(None)
            case cmd.ClearQueue():
                texts = (list(self._steering_texts), list(self._follow_up_texts))
                self._steering_texts = self._follow_up_texts = ()
                self.agent.clear_all_queues()
                ack(command.reply, texts)
                await self._emit_queue_update()
                command.reply.set(texts)
            case cmd.SendCustomMessage():
                await self._send_custom_message(command)
            case cmd.SetModel():
                await self._set_model(command)
            case cmd.CycleModel():
                await self._cycle_model(command)
            case cmd.SetThinkingLevel():
                change = await self._apply_thinking_level(command.level)
                ack(command.reply)
                await self._announce_thinking_level(change)
                command.reply.set(None)
            case cmd.CycleThinkingLevel():
                if not self.supports_thinking():
                    command.reply.set(None)
                    return
                levels = self.available_thinking_levels()
                current = self.thinking_level
                index = levels.index(current) if current in levels else -1
                change = await self._apply_thinking_level(levels[(index + 1) % len(levels)])
                level = self.thinking_level
                ack(command.reply, level)
                await self._announce_thinking_level(change)
                command.reply.set(level)
            case cmd.SetSteeringMode():
                await self.agent.set_steering_mode(command.mode)
                command.reply.set(None)
                await self.settings.aset_steering_mode(command.mode)
            case cmd.SetFollowUpMode():
                await self.agent.set_follow_up_mode(command.mode)
                command.reply.set(None)
                await self.settings.aset_follow_up_mode(command.mode)
            case cmd.SetAutoCompaction():
                # In memory at once (the answer reports it), then saved off the event loop.
                self.settings.change_global("compaction", command.enabled, "enabled")
                command.reply.set(None)
                await self.settings.aset_compaction_enabled(command.enabled)
            case cmd.SetAutoRetry():
                self.settings.change_global("retry", command.enabled, "enabled")
                command.reply.set(None)
                await self.settings.aset_retry_enabled(command.enabled)
            case cmd.SetTools():
                # A run in progress keeps the tools it started with (as pi's agent).
                await self.agent.set_tools(command.tools)
                command.reply.set(None)
            case cmd.SetSessionName():
                self.session_manager.append_session_info(command.name)
                ack(command.reply)
                await self.emit(
                    SessionInfoChangedEvent(name=self.session_manager.get_session_name())
                )
                command.reply.set(None)
            case cmd.SetLabel():
                self.session_manager.append_label_change(command.entry_id, command.label)
                command.reply.set(None)
            case cmd.SetSystemPrompt():
                self._base_system_prompt = command.system_prompt
                if not self.is_busy:  # a run in progress keeps its prompt; the next gets this
                    await self.agent.set_system_prompt(command.system_prompt)
                command.reply.set(None)
            case cmd.Compact():
                instructions = command.custom_instructions
                self._start_job(
                    command.reply, lambda: self._compact(instructions), compaction_cancelled()
                )
            case cmd.NewSession():
                parent = command.parent_session
                self._start_job(command.reply, lambda: _tree.new_session(self, parent), False)
            case cmd.SwitchSession():
                path = command.session_path
                self._start_job(command.reply, lambda: _tree.switch_session(self, path), False)
            case cmd.Fork():
                entry_id, position = command.entry_id, command.position
                self._start_job(command.reply, lambda: _tree.fork(self, entry_id, position))
            case cmd.Bash() | cmd.AbortBash() | cmd.RecordBashResult():
                await self.user_bash_command(command)
            case cmd.NavigateTree():
                nav = command
                self._start_job(
                    nav.reply,
                    lambda: _tree.navigate_tree(
                        self,
                        nav.target_id,
                        summarize=nav.summarize,
                        custom_instructions=nav.custom_instructions,
                        replace_instructions=nav.replace_instructions,
                        label=nav.label,
                    ),
                )

    # ------------------------------------------------------------------ state

    @property
    def is_busy(self) -> bool:
        """Whether a job (a run, its retries and compaction, a move) is in progress."""
        return self._job is not None or self.agent.is_streaming

    @property
    def is_retrying(self) -> bool:
        return self._retry is not None and self._retry.is_waiting

    @property
    def retry_attempt(self) -> int:
        return self._retry.attempt if self._retry is not None else 0

    def _retry_now(self) -> Retry:
        """The session's Retry, made by the first call."""
        retry = self._retry
        if retry is None:
            retry = Retry(self.settings.retry_settings, self.emit, pattern=self._retry_pattern)
            self._retry = retry
        return retry

    def cancel_retry(self) -> None:
        """End a retry backoff in progress (none before the first run ended)."""
        if self._retry is not None:
            self._retry.cancel()

    @property
    def is_compacting(self) -> bool:
        return self._compactor.is_running or self.branch_summary_scope is not None

    @property
    def steering_texts(self) -> list[str]:
        return list(self._steering_texts)

    @property
    def follow_up_texts(self) -> list[str]:
        return list(self._follow_up_texts)

    @property
    def available_models(self) -> list[Model]:
        return list(self._models)

    @property
    def scoped_models(self) -> list[ScopedModel]:
        return list(self._scoped_models)

    def find_model(self, provider: str, model_id: str) -> Model | None:
        for model in self._models:
            if model.provider == provider and model.id == model_id:
                return model
        return default_catalogue.get(provider, model_id)

    def snapshot(self) -> SessionSnapshot:
        """The session's state now, for a client rebuilding instead of replaying."""
        manager = self.session_manager
        return SessionSnapshot(
            seq=self.log.seq,
            session_id=manager.get_session_id(),
            session_file=manager.get_session_file(),
            messages=self.agent.messages,
            model=self.model,
            thinking_level=self.thinking_level,
            is_streaming=self.is_busy,
            steering=tuple(self._steering_texts),
            follow_up=tuple(self._follow_up_texts),
        )

    # ------------------------------------------------------------------ events and hooks

    async def emit(self, event: AgentSessionEvent) -> None:
        if not self.log.closed:
            await self.log.publish(event)

    async def hook(self, name: str, *args: Any) -> Any:
        try:
            return await getattr(self.hooks, name)(*args)
        except Exception:
            log.exception("session_hook_failed", hook=name)
            return None

    async def _emit_queue_update(self) -> None:
        await self.emit(
            QueueUpdateEvent(steering=self._steering_texts, follow_up=self._follow_up_texts)
        )

    def _record(self, event: AgentEvent) -> None:
        # The agent's record_event: called before any subscriber sees the event, also for the
        # closing events of an aborted run, so the file has the entry first.
        if type(event) is not MessageEndEvent or event.dropped:
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

    def _deliver_agent_event(self, event: AgentEvent) -> Awaitable[Any] | None:
        # The agent's one subscriber. A plain function: an event that needs nothing awaited
        # besides its delivery (a message_update, and with no hook, no queued text, no
        # context engine and no retry under way, every other event of a plain turn) goes to
        # the event log's deliver, which returns None when every listener took it during the
        # call (the agent's bus then has nothing to await: no coroutine per event), else what
        # finishes the delivery, which the bus awaits. The rest: _on_agent_event.
        if self._agent_event_hook:
            return self._on_agent_event(event)
        if type(event) is MessageUpdateEvent:  # the per-token event, tested first
            event_log = self.log
            return None if event_log.closed else event_log.deliver(event)
        if type(event) is MessageStartEvent:
            if isinstance(event.message, UserMessage):
                if self._steering_texts or self._follow_up_texts:
                    return self._on_agent_event(event)
                self._compactor.overflow_recovery_attempted = False
        elif type(event) is MessageEndEvent:
            message = event.message
            if isinstance(message, AssistantMessage) and message.stop_reason != "error":
                retry = self._retry
                if retry is not None and retry.attempt:  # a retry sequence to end
                    return self._on_agent_event(event)
                delivery = self._deliver(event)
                if delivery is not None:
                    return self._after_delivery(delivery)
                self._compactor.overflow_recovery_attempted = False
                return None
        elif type(event) is TurnEndEvent:
            if self.context.active():
                return self._on_agent_event(event)
        elif type(event) not in _PLAIN_AGENT_EVENTS:
            return self._on_agent_event(event)
        return self._deliver(event)

    def _deliver(self, event: AgentEvent) -> Awaitable[Any] | None:
        event_log = self.log
        return None if event_log.closed else event_log.deliver(event)

    async def _after_delivery(self, delivery: Awaitable[Any]) -> None:
        # An assistant message's end whose delivery had to wait: the flag after it, as in
        # _on_agent_event.
        await delivery
        self._compactor.overflow_recovery_attempted = False

    async def _on_agent_event(self, event: AgentEvent) -> None:
        # pi's _processAgentEvent: queue bookkeeping, hooks, listeners (persistence came first).
        if type(event) is MessageUpdateEvent:
            # The per-token event: none of the bookkeeping below concerns it.
            if self._agent_event_hook:
                await self.hook("on_agent_event", event)
            event_log = self.log
            if not event_log.closed:
                await event_log.publish(event)
            return
        if isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage):
            self._compactor.overflow_recovery_attempted = False
            text = user_text(event.message)
            if text in self._steering_texts:
                self._steering_texts = _without(self._steering_texts, text)
                await self._emit_queue_update()
            elif text in self._follow_up_texts:
                self._follow_up_texts = _without(self._follow_up_texts, text)
                await self._emit_queue_update()
        if self._agent_event_hook:
            await self.hook("on_agent_event", event)
        await self.emit(event)
        if type(event) is TurnEndEvent and self.context.active():
            await self.context.engine.turn_end()
        message = event.message if isinstance(event, MessageEndEvent) else None
        if isinstance(message, AssistantMessage) and message.stop_reason != "error":
            self._compactor.overflow_recovery_attempted = False
            if self._retry is not None:  # else no retry sequence ever began
                await self._retry.succeeded()

    def _convert_to_llm(self, messages: Sequence[AgentMessage]) -> list[Message]:
        images = self.settings.get("images")
        blocked = isinstance(images, dict) and images.get("blockImages") is True
        return convert_to_llm(messages, block_images=blocked)

    # ------------------------------------------------------------------ session moves

    def _write_pending_entries(self) -> None:
        for kind, value in self._pending_entries:
            if kind == "model":
                self.session_manager.append_model_change(value.provider, value.id)
            else:
                self.session_manager.append_thinking_level_change(value)
        self._pending_entries = ()

    async def replace_session(self, reason: SessionStartReason, previous: str | None) -> None:
        self.agent.clear_all_queues()
        self._steering_texts = self._follow_up_texts = ()
        self._pending_next_turn = ()
        if self._retry is not None:
            self._retry.reset()
        self._last_assistant = None
        self._compactor.overflow_recovery_attempted = False
        before = self.agent.model
        self._pending_entries = await _tree.restore_state(self, None, None)
        self._write_pending_entries()
        await self.hook("session_start", reason, previous)
        after = self.agent.model
        if after is not None and not models_are_equal(before, after):
            # Seed 004: model_select with source "restore" when the session brought its model.
            await self.hook("model_select", after, before, "restore")

    async def complete(
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

    async def drop_trailing_assistant(self, *, only_errors: bool = False) -> None:
        messages = self.agent.messages
        last = messages[-1] if messages else None
        if isinstance(last, AssistantMessage) and (not only_errors or last.stop_reason == "error"):
            await self.agent.replace_messages(messages[:-1])

    # ------------------------------------------------------------------ jobs

    def _start_job(
        self,
        reply: Reply[Any],
        work: Callable[[], Awaitable[Any]],
        cancelled: Any = None,
    ) -> _Job:
        """Run ``work`` as the session's newest job; ``reply`` gets its result (or error).

        A job that was cancelled (by an abort, or by a later exclusive job) before it produced
        a result answers ``cancelled`` (an exception instance is raised in the sender).
        """
        assert self._nursery is not None
        job = _Job(previous=self._job)
        self._job = job
        if self._idle.is_set():
            self._idle = Latch()
        self._nursery.start_soon(self._run_job, job, reply, work, cancelled)
        return job

    async def _run_job(
        self, job: _Job, reply: Reply[Any], work: Callable[[], Awaitable[Any]], cancelled: Any
    ) -> None:
        try:
            with job.scope:
                reply.set(await work())
            if not reply.is_set:
                if isinstance(cancelled, BaseException):
                    reply.fail(cancelled)
                else:
                    reply.set(cancelled)
        except Exception as exc:
            reply.fail(unwrap_group(exc))
        finally:
            job.done.set()
            if self._job is job:
                self._job = None
                self._idle.set()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """In a job: abort the jobs before it and wait for them, then hold the session."""
        job = self._job
        previous = job.previous if job is not None else None
        if previous is not None:
            self._abort_components()
            self._abort_jobs(previous)
            while previous is not None:
                await previous.done.wait()
                previous = previous.previous
            if job is not None:
                job.previous = None
        self.agent.abort()
        await self.agent.wait_for_idle()
        yield

    def _abort_now(self) -> None:
        """Abort the run, its backoff, compaction and branch summary, and every job."""
        self._abort_components()
        if self._job is not None:
            self._abort_jobs(self._job)

    def _abort_components(self) -> None:
        # What stops at once and reports itself: the agent's run (its epilogue), the retry
        # backoff (auto_retry_end), the compaction (compaction_end) and the branch summary.
        self.cancel_retry()
        self._compactor.abort()
        if self.branch_summary_scope is not None:
            self.branch_summary_scope.cancel()
        self.agent.abort()

    def _abort_jobs(self, job: _Job | None) -> None:
        deadline = trio.current_time() + ABORT_GRACE
        while job is not None:
            if job.scope.deadline > deadline:
                job.scope.deadline = deadline
            job = job.previous

    def _start_waiter(self, reply: Reply[None]) -> None:
        async def wait() -> None:
            await self.wait_for_idle()
            reply.set(None)

        assert self._nursery is not None
        self._nursery.start_soon(wait)

    async def wait_for_idle(self) -> None:
        """Return once no job (run, retry, compaction, move) is in progress."""
        while not self._idle.is_set():
            await self._idle.wait()
        await self.agent.wait_for_idle()

    async def abort(self) -> None:
        """Send the ``Abort`` command and wait until idle (within ``ABORT_GRACE`` or so); a
        session that stopped serving has nothing running: returns at once."""
        command = cmd.Abort()
        command.reply.eager = self.log.in_callback()
        try:
            await self.send(command)
        except UsageError:
            return
        await command.reply.wait()

    async def _compact(self, custom_instructions: str | None) -> Any:
        async with self.exclusive():
            return await self._compactor.compact(custom_instructions)


def _without(texts: tuple[str, ...], text: str) -> tuple[str, ...]:
    """``texts`` without the first occurrence of ``text`` (which it holds)."""
    index = texts.index(text)
    return texts[:index] + texts[index + 1 :]


def compaction_cancelled() -> CompactionError:
    """The error a compaction job that was aborted answers with."""
    return CompactionError(COMPACTION_CANCELLED)
