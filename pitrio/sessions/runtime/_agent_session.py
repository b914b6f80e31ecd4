"""``AgentSession``: an Agent bound to a session file, with retry and compaction (seed 002 s.1).

Kept in one module: the facade: one method per pi AgentSession method, each a
command sent to the actor.

::

    async with open_agent_session(model=model, session_manager=SessionManager.create(cwd)) as s:
        s.subscribe(print)
        await s.prompt("Hello")

The session wraps a :class:`~pitrio.actors.Agent` and adds, as pi-coding-agent's AgentSession:

* persistence: every message is appended to the :class:`SessionManager` before any subscriber
  sees its ``message_end``, and written by a :class:`Persistence` actor (lazy first flush);
* the prompt pipeline of seed 002 s.1.7 and seed 004 s.1 (extension commands, the input hook,
  built-in commands such as ``/context``, ``/skill:`` and ``/template`` expansion
  (:mod:`._prompt_pipeline`), the busy policy while streaming, model check, pre-prompt
  compaction check, ``before_agent_start`` hook);
* after every run: retry of transient errors with exponential backoff (the retry actor), then
  the compaction check, overflow (compact, then retry once) or threshold (compact);
* model and thinking-level changes recorded as entries; new, resumed and forked sessions; tree
  navigation with branch summaries; manual compaction;
* the user's own shell commands (pi's ``!cmd`` / ``!!cmd``: :meth:`~AgentSession.execute_bash`),
  recorded as ``bashExecution`` messages (:mod:`._user_bash`);
* events numbered per session (``seq``) and kept in a replay ring, so a client can resume with
  :meth:`AgentSession.events` ``(from_seq=N)``. The ring keeps events from the first moment a
  cursor could exist (the first :meth:`~AgentSession.events` or read of ``seq``): a session
  heard only by callbacks keeps no event alive per token.

This class is the facade: each method that changes state sends a command
(:mod:`pitrio.sessions.commands`, the same types RPC mode decodes pi's JSON commands into) to
the session's actor (:class:`~pitrio.sessions.runtime._session_actor.SessionActor`, which owns the
state) and waits for its reply; :meth:`AgentSession.execute` sends a command built elsewhere.
``await session.prompt(...)`` returns when the run, its retries and the compaction after it
are over; cancelling that await aborts the run. A method called from inside a listener is
queued like any other call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from re import Pattern
from typing import Any, Final, Literal, NoReturn, Self

import attrs
import trio

from pitrio.actors import AgentMessage, AgentStateView, StreamFn
from pitrio.channels import (
    SUBSCRIPTION_BUFFER,
    EventLogPolicy,
    EventLogSubscription,
    open_body_nursery,
)
from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelThinkingLevel,
    ProviderRegistry,
    StreamOptions,
    TextContent,
)
from pitrio.sessions.compaction._compaction import (
    CompactionResult,
    calculate_context_tokens,
    estimate_context_tokens,
)
from pitrio.sessions.resources import PromptTemplate, Skill
from pitrio.sessions.runtime import _session_commands as cmd
from pitrio.sessions.runtime._agent_session_tree import DEFAULT_THINKING_LEVEL
from pitrio.sessions.runtime._agent_session_types import (
    AgentSessionEvent,
    CompactionEventStyle,
    ForkResult,
    InputSource,
    ModelCycleResult,
    NavigateTreeResult,
    ScopedModel,
    SessionHooks,
    SessionSnapshot,
)
from pitrio.sessions.runtime._context_engine import ContextEngine
from pitrio.sessions.runtime._prompt_pipeline import (
    BuiltinCommandResult,
    PromptExpansion,
    run_builtin_command,
)
from pitrio.sessions.runtime._retry import RETRYABLE_ERROR_PATTERN
from pitrio.sessions.runtime._session_actor import CLOSE_GRACE, SessionActor
from pitrio.sessions.runtime._user_bash import UserBashMethods
from pitrio.sessions.settings._settings import SettingsManager
from pitrio.sessions.storage._context import get_latest_compaction_entry
from pitrio.sessions.storage._manager import SessionManager
from pitrio.tools import AgentTool

__all__ = [
    "CLOSE_GRACE",
    "DEFAULT_THINKING_LEVEL",
    "AgentSession",
    "ContextUsage",
    "open_agent_session",
]

StreamingBehavior = cmd.StreamingBehavior
Subscriber = Callable[[AgentSessionEvent], "Awaitable[None] | None"]

_NO_EXPANSION: Final = PromptExpansion()
"""The expansion of every session without skills or templates (frozen: shared)."""


def _expansion(
    skills: Sequence[Skill], prompt_templates: Sequence[PromptTemplate]
) -> PromptExpansion:
    if not skills and not prompt_templates:
        return _NO_EXPANSION
    return PromptExpansion(tuple(skills), tuple(prompt_templates))


@attrs.frozen
class ContextUsage:
    """How full the context window is (``tokens`` ``None`` right after a compaction)."""

    tokens: int | None
    context_window: int
    percent: float | None


class AgentSession(UserBashMethods):
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
        busy_policy: what :meth:`prompt` does while the session is busy and the call names no
            ``streaming_behavior``: ``"reject"`` (pi's error, default), ``"steer"``,
            ``"follow_up"`` or ``"interrupt"`` (abort the run, then run the prompt).
        replay_ring: how many events to keep for :meth:`events` ``(from_seq=...)`` (default:
            the ``replayRingSize`` setting, else :data:`~pitrio.channels.REPLAY_RING`), from
            the first :meth:`events` or read of :attr:`seq` on (before that no reader can
            hold a cursor, and an older cursor gets a snapshot).
        provider_session_id: pass the session's id to the provider (its prompt-cache key;
            default); ``False`` passes none (pi's bench clears ``agent.sessionId``).
        skills, prompt_templates: what ``/skill:name args`` and ``/template args`` expand
            with, in :meth:`prompt`, :meth:`steer` and :meth:`follow_up` (default: none, the
            text is sent as written); the command line passes its loaded resources.

    Resource handling:
        :meth:`run` owns the session actor, the Agent and, unless the manager already has
        one, a :class:`Persistence` actor; all stop when it is cancelled, after
        whatever was appended has been written.
    """

    _actor: SessionActor
    _expansion: PromptExpansion

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
        skills: Sequence[Skill] = (),
        prompt_templates: Sequence[PromptTemplate] = (),
    ) -> None:
        self._actor = SessionActor(
            session_manager=session_manager,
            settings=settings,
            model=model,
            thinking_level=thinking_level,
            tools=tools,
            system_prompt=system_prompt,
            models=models,
            scoped_models=scoped_models,
            registry=registry,
            get_api_key=get_api_key,
            stream_fn=stream_fn,
            complete=complete,
            has_auth=has_auth,
            hooks=hooks,
            compaction_events=compaction_events,
            retry_pattern=retry_pattern,
            tool_execution=tool_execution,
            steering_skips_tools=steering_skips_tools,
            busy_policy=busy_policy,
            replay_ring=replay_ring,
            provider_session_id=provider_session_id,
        )
        self._expansion: PromptExpansion = _expansion(skills, prompt_templates)
        self._actor.hooks.attach(self)

    @property
    def skills(self) -> tuple[Skill, ...]:
        """The skills ``/skill:name`` expands with."""
        return self._expansion.skills

    @property
    def prompt_templates(self) -> tuple[PromptTemplate, ...]:
        """The prompt templates ``/name args`` expands with."""
        return self._expansion.prompt_templates

    # ------------------------------------------------------------------ lifecycle

    async def run(
        self, *, task_status: trio.TaskStatus[Self] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Serve the session until cancelled: ``session = await nursery.start(session.run)``."""
        # nursery.start's status holds the nursery start opened for the starting task (its
        # cancel scope, cancel status, sets and lists: ~1 KB); once started, nothing here keeps
        # it (the _Forward lets go of it too), so an idle session does not.
        run = self._actor.run(task_status=_Forward(task_status, self))
        del task_status
        try:
            await run
        finally:
            # Hooks that keep the session they serve (an extension runner's ``session``) and
            # this facade's actor, which keeps the hooks, would be a cycle: a closed session
            # lets go of hooks still attached to it.
            hooks = self._actor.hooks
            if getattr(hooks, "session", None) is self:
                hooks.attach(None)

    async def aclose(self) -> None:
        """Abort what runs, tell the hooks, and stop (the owner's nursery then cancels run)."""
        await self._actor.aclose()

    async def _call(self, command: Any) -> Any:
        # A listener (awaited by the publish of the event it was called for) gets its answer
        # before the command's own events are published: they wait for it to return.
        command.reply.eager = self._actor.log.in_callback()
        await self._actor.send(command)
        return await command.reply.wait()

    async def execute(self, command: cmd.SessionCommand) -> Any:
        """Send ``command`` (one of :mod:`pitrio.sessions.commands`) and return its answer.

        What every method of this class does with the command it builds: a ``Prompt``,
        ``Steer`` or ``FollowUp`` goes through the prompt pipeline first (:meth:`prompt`,
        :meth:`steer`, :meth:`follow_up`), every other command goes to the session's inbox.
        RPC mode and the websocket host call this with the commands they decode.

        Raises:
            whatever the command raises (:class:`~pitrio.UsageError` for a caller mistake).
        """
        match command:
            case cmd.Prompt():
                return await self._prompt(command)
            case cmd.Steer() | cmd.FollowUp():
                # `/skill:` and `/template` commands are expanded, as pi does (no input hook).
                command.message = await self._expansion.expand(
                    command.message, self._report_skill_error
                )
            case cmd.Bash():
                return await self.execute_bash(
                    command.command,
                    exclude_from_context=command.exclude_from_context,
                    on_chunk=command.on_chunk,
                    operations=command.operations,
                )
        return await self._call(command)

    def send_nowait(self, command: cmd.SessionCommand) -> None:
        """Put ``command`` into the session's inbox without waiting for it or its answer, for
        a synchronous caller (an extension's ``set_active_tools``, a listener that must stop
        the run at once); it is executed in order with the commands sent before it.

        Raises:
            trio.WouldBlock: the inbox is full.
            UsageError: the session is not running.
        """
        self._actor.send_nowait(command)

    # ------------------------------------------------------------------ state

    @property
    def agent(self) -> AgentStateView:
        """A read-only view of the session's Agent (its model, tools, transcript ...): the
        agent is changed only through the session's commands."""
        return AgentStateView(self._actor.agent)

    @property
    def context_engine(self) -> ContextEngine:
        """Seed 001's envelope builder (``/context``: ``build_context_view(engine)``)."""
        return self._actor.context.engine

    @property
    def session_manager(self) -> SessionManager:
        return self._actor.session_manager

    @property
    def settings(self) -> SettingsManager:
        return self._actor.settings

    @property
    def hooks(self) -> Any:
        return self._actor.hooks

    @property
    def compaction_events(self) -> Any:
        return self._actor.compaction_events

    @property
    def model_fallback_message(self) -> str | None:
        """Why the session's model could not be restored, if it could not."""
        return self._actor.model_fallback_message

    @property
    def model(self) -> Model | None:
        """The current model."""
        return self._actor.model

    @property
    def thinking_level(self) -> ModelThinkingLevel:
        """The current thinking level."""
        return self._actor.thinking_level

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        """The agent's transcript (what the next LLM call sees, before conversion)."""
        return self._actor.agent.messages

    @property
    def is_streaming(self) -> bool:
        """Whether a run, its retry backoff or its compaction (or a move) is in progress."""
        return self._actor.is_busy

    @property
    def is_retrying(self) -> bool:
        """Whether a retry backoff is scheduled or running."""
        return self._actor.is_retrying

    @property
    def retry_attempt(self) -> int:
        """The current retry attempt (0 when not retrying)."""
        return self._actor.retry_attempt

    @property
    def is_compacting(self) -> bool:
        """Whether a compaction or branch summary is being written."""
        return self._actor.is_compacting

    @property
    def session_id(self) -> str:
        """The session's id (a UUID)."""
        return self._actor.session_manager.get_session_id()

    @property
    def session_file(self) -> str | None:
        """The session file (``None`` in memory)."""
        return self._actor.session_manager.get_session_file()

    @property
    def session_name(self) -> str | None:
        """The display name set with :meth:`set_session_name`, if any."""
        return self._actor.session_manager.get_session_name()

    @property
    def system_prompt(self) -> str:
        """The system prompt of the current (or next) run."""
        return self._actor.agent.system_prompt

    @property
    def steering_mode(self) -> str:
        """How steering messages are delivered: ``"one-at-a-time"`` or ``"all"``."""
        return self._actor.agent.steering_mode

    @property
    def follow_up_mode(self) -> str:
        """How follow-up messages are delivered: ``"one-at-a-time"`` or ``"all"``."""
        return self._actor.agent.follow_up_mode

    @property
    def pending_message_count(self) -> int:
        """Queued steering plus follow-up messages."""
        return len(self._actor.steering_texts) + len(self._actor.follow_up_texts)

    def get_steering_messages(self) -> list[str]:
        """The texts of the queued steering messages."""
        return self._actor.steering_texts

    def get_follow_up_messages(self) -> list[str]:
        """The texts of the queued follow-up messages."""
        return self._actor.follow_up_texts

    @property
    def available_models(self) -> list[Model]:
        """The models given as ``models`` (what :meth:`cycle_model` cycles through)."""
        return self._actor.available_models

    def find_model(self, provider: str, model_id: str) -> Model | None:
        """Look a model up in ``models``, then in the built-in catalogue."""
        return self._actor.find_model(provider, model_id)

    def supports_thinking(self) -> bool:
        """Whether the current model reasons."""
        return self._actor.supports_thinking()

    def available_thinking_levels(self) -> list[ModelThinkingLevel]:
        """The levels the current model supports."""
        return self._actor.available_thinking_levels()

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every session event, in order (as Agent.subscribe).

        Async callbacks are awaited before the next event, as pi awaits its listeners; an
        abort cancels a callback that is stuck.
        """
        return self._actor.log.subscribe(callback)

    @asynccontextmanager
    async def events(
        self,
        *,
        from_seq: int | None = None,
        max_buffer: int = SUBSCRIPTION_BUFFER,
        policy: EventLogPolicy = "block",
    ) -> AsyncIterator[EventLogSubscription[AgentSessionEvent]]:
        """Open a bounded, resumable iterator of the session's events.

        Each item is a :class:`~pitrio.channels.Sequenced` (``.seq``, ``.event``, and
        ``.wire``, the event's JSON encoded once per session), or first a
        :class:`~pitrio.channels.Snapshot` whose ``state`` is a :class:`SessionSnapshot` when
        ``from_seq`` fell out of the replay ring.

        Args:
            from_seq: resume after this seq (the last one the reader saw); ``None``: from now.
            max_buffer: events that may wait for the reader before the policy applies.
            policy: ``"block"`` (a slow reader slows the session), ``"coalesce"`` (streamed
                deltas merge; structural events are kept) or ``"error"`` (the iterator ends
                with :class:`~pitrio.channels.SubscriberLagged` carrying ``resume_from``).
        """
        async with self._actor.log.open_subscription(
            from_seq=from_seq, max_buffer=max_buffer, policy=policy
        ) as subscription:
            yield subscription

    async def publish(self, event: AgentSessionEvent) -> None:
        """Give ``event`` a seq and deliver it to the subscribers (an extension's
        ``extension_error``, reported by the extension runner)."""
        await self._actor.emit(event)

    @property
    def seq(self) -> int:
        """The seq of the session's last event (0 before the first)."""
        return self._actor.log.seq

    def snapshot(self) -> SessionSnapshot:
        """The session's state now (what a reader whose cursor left the ring rebuilds from)."""
        return self._actor.snapshot()

    # ------------------------------------------------------------------ runs

    async def wait_for_idle(self) -> None:
        """Return once no run, retry, automatic compaction or move is in progress."""
        await self._actor.wait_for_idle()

    async def abort(self) -> None:
        """Abort the run, a retry backoff and a compaction (and a slow hook or listener they
        wait on); return once idle (the ``Abort`` command).

        (pi's abort leaves an automatic compaction running in the background; here it is part
        of the run, so it is cancelled too.)
        """
        await self._call(cmd.Abort())

    async def abort_retry(self) -> None:
        """Cancel a retry backoff (the run then ends with the error): ``AbortRetry``."""
        await self._call(cmd.AbortRetry())

    async def abort_compaction(self) -> None:
        """Cancel a compaction in progress (manual or automatic): ``AbortCompaction``."""
        await self._call(cmd.AbortCompaction())

    async def abort_branch_summary(self) -> None:
        """Cancel a branch summary in progress: ``AbortBranchSummary``."""
        await self._call(cmd.AbortBranchSummary())

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        source: InputSource = "interactive",
        on_accepted: Callable[[], Awaitable[None]] | None = None,
        expand_prompt_templates: bool = True,
    ) -> BuiltinCommandResult | None:
        """Send a prompt and drive the run to its end (seed 002 s.1.7, seed 004 s.1).

        ``text`` is what the user wrote. In order: an extension command it names runs instead
        (the hooks' ``input`` matches commands first), the ``input`` hook sees it and may
        swallow or rewrite it (text and images; images it leaves out are kept), a built-in
        command in the text it left (``/context``) is answered without a run, and
        ``/skill:name`` and ``/template`` commands are expanded (see ``skills`` and
        ``prompt_templates``). ``expand_prompt_templates=False`` (pi's option, used by
        :meth:`send_user_message`) skips the built-in commands and the expansion.

        While the session is busy the prompt follows ``streaming_behavior`` (else the session's
        ``busy_policy``): queued as a steering or follow-up message, run after aborting the
        current run (``"interrupt"``), or refused.

        ``on_accepted`` is awaited once the prompt passed its checks, just before its run
        starts (not for a prompt that was queued, handled by the input hook or answered by a
        built-in command): pi's ``preflightResult``, which RPC mode answers the command from.

        Returns:
            The built-in command's answer when one answered the prompt (the front end shows
            it: print mode writes its text, RPC puts its output in the response), else None.

        Raises:
            UsageError: busy under the ``"reject"`` policy; no model; no API key (when
                ``has_auth`` was given); a built-in command with wrong arguments.
        """
        result: BuiltinCommandResult | None = await self._prompt(
            cmd.Prompt(
                message=text,
                images=tuple(images) if images else None,
                streaming_behavior=streaming_behavior,
                source=source,
                on_accepted=on_accepted,
                expand_prompt_templates=expand_prompt_templates,
            )
        )
        return result

    async def _prompt(self, command: cmd.Prompt) -> BuiltinCommandResult | None:
        """The prompt pipeline (see :meth:`prompt`), then ``command`` to the inbox."""
        text, image_blocks = command.message, command.images
        result = await self._actor.hook("input", text, image_blocks, command.source)
        if result is not None:
            if result.action == "handled":
                return None
            if result.action == "transform":
                text = result.text if result.text is not None else text
                image_blocks = result.images if result.images is not None else image_blocks
        if command.expand_prompt_templates:
            # Seed 004: built-in commands are matched after the input transforms, and the
            # expansion comes last, so input handlers see `/template args` as written.
            answered = await run_builtin_command(self, text)
            if answered is not None:
                return answered
            text = await self._expansion.expand(text, self._report_skill_error)
        command.message, command.images = text, image_blocks
        command.policy = command.streaming_behavior or self._actor.busy_policy
        command.reply.eager = self._actor.log.in_callback()
        await self._actor.send(command)
        try:
            await command.reply.answered()
            command.reply.value_nowait()  # raises an error answer
        except trio.Cancelled:
            # The caller gave up: a prompt not yet executed is dropped, a run it started is
            # aborted, and the caller's cancellation goes on once the session is idle.
            command.abandoned = True
            if not command.reply.is_set:
                with trio.move_on_after(CLOSE_GRACE, shield=True):
                    await self._actor.abort()
            raise
        return None

    async def _report_skill_error(self, skill: Skill, error: Exception) -> None:
        # pi reports an unreadable skill file as an extension error of the skill's path.
        report = getattr(self._actor.hooks, "report_error", None)
        if callable(report):
            await report(skill.file_path, "skill_expansion", error)

    async def steer(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a message for the next turn (a running tool batch skips its unstarted calls);
        ``/skill:`` and ``/template`` commands are expanded, as pi does (no input hook)."""
        await self.execute(cmd.Steer(message=text, images=tuple(images) if images else None))

    async def follow_up(self, text: str, images: Sequence[ImageContent] | None = None) -> None:
        """Queue a message for when the agent would otherwise stop (expanded as :meth:`steer`)."""
        await self.execute(cmd.FollowUp(message=text, images=tuple(images) if images else None))

    async def clear_queue(self) -> tuple[list[str], list[str]]:
        """Drop the queued messages; return the steering and follow-up texts."""
        result: tuple[list[str], list[str]] = await self._call(cmd.ClearQueue())
        return result

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
        await self._call(
            cmd.SendCustomMessage(
                custom_type=custom_type,
                content=content,
                display=display,
                details=details,
                trigger_turn=trigger_turn,
                deliver_as=deliver_as,
            )
        )

    async def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: Literal["steer", "follow_up"] | None = None,
    ) -> None:
        """Prompt with ``content`` as an extension would (``source="extension"``): no built-in
        commands and no expansion, as pi's ``sendUserMessage``."""
        if isinstance(content, str):
            text, images = content, None
        else:
            text = "\n".join(b.text for b in content if isinstance(b, TextContent))
            images = [b for b in content if isinstance(b, ImageContent)] or None
        await self.prompt(
            text,
            images=images,
            streaming_behavior=deliver_as,
            source="extension",
            expand_prompt_templates=False,
        )

    # ------------------------------------------------------------------ models, thinking

    async def set_model(self, model: Model) -> None:
        """Switch the model: recorded in the session and as the settings default; the thinking
        level is re-clamped to the new model.

        Raises:
            UsageError: ``has_auth`` says there is no API key for the model.
        """
        await self._call(cmd.SetModel(model=model))

    async def cycle_model(
        self, direction: Literal["forward", "backward"] = "forward"
    ) -> ModelCycleResult | None:
        """Switch to the next (or previous) scoped model, else the next available model.

        Models ``has_auth`` rejects are skipped. Returns ``None`` when there is only one model
        to cycle through.
        """
        result: ModelCycleResult | None = await self._call(cmd.CycleModel(direction=direction))
        return result

    async def set_thinking_level(self, level: ModelThinkingLevel) -> None:
        """Set the thinking level, clamped to the model; a change is recorded in the session
        and the settings and announced with ``thinking_level_changed``."""
        await self._call(cmd.SetThinkingLevel(level=level))

    async def cycle_thinking_level(self) -> ModelThinkingLevel | None:
        """Move to the next supported level; ``None`` if the model does not reason."""
        result: ModelThinkingLevel | None = await self._call(cmd.CycleThinkingLevel())
        return result

    async def set_steering_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        """Set (and remember in the settings) how steering messages are delivered."""
        await self._call(cmd.SetSteeringMode(mode=mode))

    async def set_follow_up_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        """Set (and remember in the settings) how follow-up messages are delivered."""
        await self._call(cmd.SetFollowUpMode(mode=mode))

    async def set_tools(self, tools: Sequence[AgentTool]) -> None:
        """Offer ``tools`` to the model from the next run on (a run in progress keeps the
        tools it started with, as pi's agent): the ``SetTools`` command."""
        await self._call(cmd.SetTools(tools=tuple(tools)))

    async def set_resources(
        self,
        *,
        system_prompt: str,
        skills: Sequence[Skill],
        prompt_templates: Sequence[PromptTemplate],
    ) -> None:
        """Use resources loaded again (``ctx.reload()``): the base system prompt (from the next
        run on), and the skills and templates that ``/skill:name`` and ``/name`` expand with."""
        await self._call(cmd.SetSystemPrompt(system_prompt=system_prompt))
        self._expansion = _expansion(skills, prompt_templates)

    async def set_session_name(self, name: str) -> None:
        """Name the session (a ``session_info`` entry)."""
        await self._call(cmd.SetSessionName(name=name))

    async def set_label(self, entry_id: str, label: str | None) -> None:
        """Label (or, with ``None``, unlabel) an entry (a ``label`` entry)."""
        await self._call(cmd.SetLabel(entry_id=entry_id, label=label))

    # ------------------------------------------------------------------ compaction

    @property
    def auto_compaction_enabled(self) -> bool:
        """Whether compaction runs automatically (``compaction.enabled``)."""
        return self._actor.settings.compaction_settings().enabled

    async def set_auto_compaction_enabled(self, enabled: bool) -> None:
        """Turn automatic compaction on or off (saved in the settings by the actor)."""
        await self._call(cmd.SetAutoCompaction(enabled=enabled))

    @property
    def auto_retry_enabled(self) -> bool:
        """Whether transient errors are retried (``retry.enabled``)."""
        return self._actor.settings.retry_settings().enabled

    async def set_auto_retry_enabled(self, enabled: bool) -> None:
        """Turn auto-retry on or off (saved in the settings by the actor)."""
        await self._call(cmd.SetAutoRetry(enabled=enabled))

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Compact the session now (aborting a run in progress first).

        Raises:
            UsageError: no model.
            CompactionError: nothing to compact, already compacted, cancelled (by a hook or
                :meth:`abort_compaction`), or the summary request failed.
        """
        result: CompactionResult = await self._call(
            cmd.Compact(custom_instructions=custom_instructions)
        )
        return result

    # ------------------------------------------------------------------ sessions

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        """Start a new, empty session (the current file stays). False if a hook cancelled."""
        result: bool = await self._call(cmd.NewSession(parent_session=parent_session))
        return result

    async def switch_session(self, session_path: str) -> bool:
        """Resume another session file. False if a hook cancelled.

        Raises:
            SessionFileCorrupt: the file is damaged (the current session is kept).
        """
        result: bool = await self._call(cmd.SwitchSession(session_path=session_path))
        return result

    async def fork(
        self, entry_id: str, *, position: Literal["before", "at"] = "before"
    ) -> ForkResult:
        """Continue in a new session holding the path to an entry (pi's ``/fork``).

        ``position="before"`` (the default) forks before a user message, whose text is
        returned for the editor; ``"at"`` keeps the entry itself.

        Raises:
            UsageError: no such entry, or (``"before"``) it is not a user message.
        """
        result: ForkResult = await self._call(cmd.Fork(entry_id=entry_id, position=position))
        return result

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
        result: NavigateTreeResult = await self._call(
            cmd.NavigateTree(
                target_id=target_id,
                summarize=summarize,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                label=label,
            )
        )
        return result

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


class _Forward:
    """Hands the facade (not the actor) to ``nursery.start``'s caller."""

    __slots__ = ("_status", "_value")

    def __init__(self, status: trio.TaskStatus[Any], value: Any) -> None:
        self._status = status
        self._value = value

    def started(self, value: Any = None) -> None:
        status, self._status = self._status, trio.TASK_STATUS_IGNORED
        status.started(self._value)
        self._value = None


@asynccontextmanager
async def open_agent_session(
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
    complete: Callable[[Model, Context, StreamOptions], Awaitable[AssistantMessage]] | None = None,
    has_auth: Callable[[Model], Any] | None = None,
    hooks: SessionHooks | None = None,
    compaction_events: CompactionEventStyle = "both",
    retry_pattern: Pattern[str] = RETRYABLE_ERROR_PATTERN,
    tool_execution: Literal["sequential", "parallel"] = "sequential",
    steering_skips_tools: bool = True,
    busy_policy: cmd.BusyPolicy = "reject",
    replay_ring: int | None = None,
    provider_session_id: bool = True,
    skills: Sequence[Skill] = (),
    prompt_templates: Sequence[PromptTemplate] = (),
) -> AsyncIterator[AgentSession]:
    """Create an :class:`AgentSession` (the keyword arguments are its constructor's) and
    serve it.

    Leaving the block aborts what runs (with ``CLOSE_GRACE`` seconds to finish its events),
    writes what the session appended and stops every task it started.
    """
    session = AgentSession(
        session_manager=session_manager,
        settings=settings,
        model=model,
        thinking_level=thinking_level,
        tools=tools,
        system_prompt=system_prompt,
        models=models,
        scoped_models=scoped_models,
        registry=registry,
        get_api_key=get_api_key,
        stream_fn=stream_fn,
        complete=complete,
        has_auth=has_auth,
        hooks=hooks,
        compaction_events=compaction_events,
        retry_pattern=retry_pattern,
        tool_execution=tool_execution,
        steering_skips_tools=steering_skips_tools,
        busy_policy=busy_policy,
        replay_ring=replay_ring,
        provider_session_id=provider_session_id,
        skills=skills,
        prompt_templates=prompt_templates,
    )
    async with open_body_nursery() as nursery:
        await nursery.start(session.run)
        try:
            yield session
        finally:
            await session.aclose()
            nursery.cancel_scope.cancel()
