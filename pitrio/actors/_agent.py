"""The ``Agent`` facade (seed 002 s.1.1-1.6): state, queues, runs and the event bus.

Kept in one module: pi's Agent facade and the actor that owns its state; the loop
and tool runner live apart.

::

    async with open_agent(model=model, tools=[...]) as agent:
        agent.subscribe(print)
        await agent.prompt("Hello")

The Agent owns a nursery (from :func:`open_agent`, or the caller's via :meth:`Agent.run`) in
which each run's LoopController executes; the LoopController starts a ProviderStream per LLM
call and a ToolRunner per tool batch in nurseries of its own. Steering and follow-up messages
wait in two bounded :class:`~pitrio.channels.Mailbox`\\ es; events go out through a
:class:`~pitrio.channels.Broadcast` to callbacks (awaited in order, as pi awaits listeners) and
bounded async-iterator subscriptions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, NoReturn, Self, assert_never

import attrs
import structlog
import trio

from pitrio._exceptions import UsageError, unwrap_group
from pitrio.actors._agent_state import (
    ALREADY_PROCESSING,
    ALREADY_PROCESSING_CONTINUE,
    FROM_ASSISTANT,
    NO_MESSAGES_TO_CONTINUE,
    NO_MODEL,
    NO_TOOL_CALLS,
    AgentStateView,
    AppendMessage,
    BusyPolicy,
    ClearMessages,
    RegistryStream,
    ReplaceMessages,
    Reset,
    SetModel,
    SetQueueMode,
    SetSessionId,
    SetSystemPrompt,
    SetThinkingLevel,
    SetTools,
    StateChange,
)
from pitrio.actors._events import (
    AgentEndEvent,
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)
from pitrio.actors._loop import (
    ConvertToLlm,
    GetApiKey,
    LoopConfig,
    LoopController,
    OnMessageEnd,
    PrepareRequest,
    ShouldStopAfterTurn,
    StreamFn,
    TransformContext,
    message_update,
)
from pitrio.actors._messages import (
    AgentMessage,
    ExtensionMessage,
    StreamingMessage,
    default_convert_to_llm,
)
from pitrio.actors._tool_runner import AfterToolCall, BeforeToolCall, ToolExecution
from pitrio.channels import (
    DELIVERED,
    SUBSCRIPTION_BUFFER,
    Broadcast,
    Latch,
    Mailbox,
    MailboxFull,
    MailboxMode,
    Reply,
    SlowSubscriberPolicy,
    Subscription,
    close_inbox,
    open_body_nursery,
)
from pitrio.providers import (
    EMPTY_USAGE,
    AssistantMessage,
    ImageContent,
    Model,
    ModelThinkingLevel,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ThinkingBudgets,
    Tool,
    ToolResultMessage,
    UserMessage,
    now_ms,
)
from pitrio.tools import AgentTool

log = structlog.get_logger(__name__)

STEERING_BUFFER: Final = 64
"""Steering messages that may wait for the next turn; a UI that queues more gets MailboxFull."""
FOLLOW_UP_BUFFER: Final = 64
"""Follow-up messages that may wait for the end of the run."""
CLOSE_GRACE: Final = 5.0
"""Seconds a closing agent (or a cancelled ``prompt()``) waits for an aborted run to end."""
ABORT_EPILOGUE_GRACE: Final = 0.05
"""Seconds an aborted run's epilogue may take to emit its closing events. Delivery to
synchronous subscribers and buffered iterators takes microseconds and never waits on a clock;
the bound only cuts off a subscriber that stalls again after the abort, so that abort reaches
quiet in well under 100 ms whatever the subscribers do."""
AGENT_INBOX: Final = 16
"""Commands (prompt, continue, state changes) waiting for the agent's task. Each is executed at
once (a run is started, the busy policy answers, the state changes), so the inbox only fills if
16 callers race in one tick."""

_CLOSED_STREAM: Final = RegistryStream(None)
"""The ``stream_fn`` a closed agent keeps in place of its owner's (it starts no run)."""

Subscriber = Callable[[AgentEvent], "Awaitable[None] | None"]


@attrs.define(eq=False)
class _Run:
    """One run: its controller, its abort and its end.

    The run's cancel scope is its nursery's (made when the run's task starts, so one scope
    per run, not two); an abort that comes earlier is kept and applied then.
    """

    controller: LoopController
    prompts: list[AgentMessage] | None
    done: Latch = attrs.Factory(Latch)
    """Set when the run has ended (for whoever waits for the agent to be idle)."""
    answer: Reply[None] | None = None
    """The reply of the command that started the run, answered when the run has ended: its
    sender waits on that one object from sending to the run's end, not on the reply and
    then on `done` (a park made per wait, and a wake-up in between)."""
    aborted: bool = False
    """Whether the run was aborted (its scope cancelled by `cancel`)."""
    _scope: trio.CancelScope | None = None

    def cancel(self) -> None:
        """Abort the run: its scope is cancelled now, or as soon as it exists."""
        self.aborted = True
        if self._scope is not None:
            self._scope.cancel()

    def bind(self, scope: trio.CancelScope) -> None:
        """Make ``scope`` the run's (its nursery's); cancelled at once if aborted already."""
        self._scope = scope
        if self.aborted:
            scope.cancel()


@attrs.define(eq=False)
class _StartRun:
    """The command behind :meth:`Agent.prompt` and :meth:`Agent.continue_` (pi's ``prompt`` and
    ``continue`` RPC commands): start a run, or apply the busy policy."""

    prompts: list[AgentMessage] | None
    skip_initial_steering_poll: bool
    policy: BusyPolicy
    # Reply, not Reply[...](): subscripting the class builds a typing alias per call.
    reply: Reply[None] = attrs.Factory(Reply)
    """Answered at once when the command starts no run, else when its run has ended."""
    run: _Run | None = None
    """The run the command started (for a sender that stops waiting: it aborts the run)."""
    abandoned: bool = False
    """Set when the caller stopped waiting before the command was executed."""


class Agent:
    r"""A stateful agent: transcript, tool loop, steering and follow-up queues, abort, events.

    Construct it, then run it under a nursery: ``async with open_agent(...)`` or
    ``await nursery.start(agent.run)``. :meth:`prompt` and :meth:`continue_` need the agent
    running; the state changes (:meth:`set_model`, :meth:`set_tools`,
    :meth:`replace_messages` ...) are commands too, applied by the agent's task in order with
    the runs it starts (on an agent that is not running, no task owns the state, and the
    change is applied at once in the caller).

    Args:
        model: the model to call (required before the first prompt).
        system_prompt, thinking_level, tools, messages: the initial state.
        convert_to_llm: AgentMessage list -> pi-ai messages, before every LLM call (default:
            keep user, assistant and tool-result messages).
        transform_context: AgentMessage list -> AgentMessage list, before ``convert_to_llm``.
        get_api_key: provider name -> API key, asked before every LLM call (expiring tokens).
        stream_fn: starts an LLM call (default: :func:`pitrio.providers.start_stream`).
        session_id, thinking_budgets, max_retry_delay_ms, stall_timeout_ms, transport,
            on_payload: passed to the provider with every call.
        steering_mode, follow_up_mode: ``"one-at-a-time"`` (default) or ``"all"``.
        tool_execution: ``"sequential"`` (default, seed s.6.1) or ``"parallel"`` (pi 0.73.1:
            preflight in order, execute concurrently, results in source order).
        steering_skips_tools: a steering message queued while a tool runs skips the batch's
            remaining calls (default, seed s.6.5); ``False`` runs them all (pi 0.73.1).
        before_tool_call, after_tool_call, should_stop_after_turn: pi 0.73.1's hooks.
        registry: the provider registry for the default ``stream_fn``.
        busy_policy: what :meth:`prompt` does during a run (:data:`BusyPolicy`; default
            ``"reject"``, as pi).
        record_event: a synchronous observer called with every event but the per-token
            ``message_update`` (subscribe for those) after the state was updated and before
            any subscriber sees it, also for the closing events of an aborted run whose
            delivery a stalled subscriber cut off. An AgentSession records session entries
            here, so an entry is persisted before anyone sees its event.

    Actors and tasks: :meth:`run` opens the agent's nursery and serves its command inbox
    (``AGENT_INBOX`` commands); each run is a child task of that nursery, inside the run's own
    cancel scope. :meth:`prompt` and :meth:`continue_` send a command and wait for the run it
    starts; the state changes send a command and wait for it to be applied. The transcript is
    written only by the run in progress (through the event reducer) or by the agent's task
    (the state changes).

    Three kinds of calls are synchronous and owner-free, on purpose:

    * :meth:`abort` cancels the run's cancel scope from the caller's task: cancelling a scope
      from another task is Trio's designed way to stop work, it must act at once (a queued
      abort would wait behind the commands before it), and the run's own task then ends
      itself (its epilogue emits the closing events).
    * :meth:`steer`, :meth:`follow_up` and the ``clear_*_queue`` methods are operations on
      the two bounded :class:`~pitrio.channels.Mailbox`\ es, the channels between any sender
      and the run (which drains them at its poll points); a steering message must reach a
      running tool batch at once, whose intake its arrival closes.
    * the public configuration attributes (the hooks, ``stream_fn``, ``session_id``,
      ``busy_policy`` ...) are plain attributes for the owner to set up before it serves the
      agent; a run reads them once, when it starts.
    """

    # Slots: an Agent has more than 30 attributes, so without them each instance carries its
    # own 1.6 KB attribute dict (no key sharing past 30 keys); an idle AgentSession holds one.
    # A new attribute goes here too (assigning one that is not listed raises AttributeError).
    __slots__ = (
        "_bus",
        "_closed",
        "_error",
        "_follow_up",
        "_inbox",
        "_messages",
        "_model",
        "_nursery",
        "_pending_tool_calls",
        "_provider_tools",
        "_run",
        "_steering",
        "_stream_message",
        "_system_prompt",
        "_thinking_level",
        "_tools",
        "after_tool_call",
        "before_tool_call",
        "busy_policy",
        "convert_to_llm",
        "get_api_key",
        "max_retry_delay_ms",
        "on_message_end",
        "on_payload",
        "prepare_request",
        "record_event",
        "session_id",
        "should_stop_after_turn",
        "stall_timeout_ms",
        "steering_skips_tools",
        "stream_fn",
        "thinking_budgets",
        "tool_execution",
        "transform_context",
        "transport",
    )

    def __init__(
        self,
        *,
        model: Model | None = None,
        system_prompt: str = "",
        thinking_level: ModelThinkingLevel = "off",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        convert_to_llm: ConvertToLlm | None = None,
        transform_context: TransformContext | None = None,
        get_api_key: GetApiKey | None = None,
        stream_fn: StreamFn | None = None,
        session_id: str | None = None,
        thinking_budgets: ThinkingBudgets | None = None,
        max_retry_delay_ms: int | None = None,
        stall_timeout_ms: int | None = None,
        transport: Any = None,
        on_payload: Any = None,
        steering_mode: MailboxMode = "one-at-a-time",
        follow_up_mode: MailboxMode = "one-at-a-time",
        tool_execution: ToolExecution = "sequential",
        steering_skips_tools: bool = True,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        on_message_end: OnMessageEnd | None = None,
        prepare_request: PrepareRequest | None = None,
        registry: ProviderRegistry | None = None,
        busy_policy: BusyPolicy = "reject",
        record_event: Callable[[AgentEvent], None] | None = None,
    ) -> None:
        self._model = model
        self._system_prompt = system_prompt
        self._thinking_level: ModelThinkingLevel = thinking_level
        self._tools: tuple[AgentTool, ...] = tuple(tools)
        self._provider_tools: tuple[Tool, ...] | None = None
        self._messages: list[AgentMessage] = list(messages)
        self.convert_to_llm: ConvertToLlm = convert_to_llm or default_convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.stream_fn: StreamFn = stream_fn if stream_fn is not None else RegistryStream(registry)
        self.session_id = session_id
        self.thinking_budgets = thinking_budgets
        self.max_retry_delay_ms = max_retry_delay_ms
        self.stall_timeout_ms = stall_timeout_ms
        self.transport = transport
        self.on_payload = on_payload
        self.tool_execution: ToolExecution = tool_execution
        self.steering_skips_tools = steering_skips_tools
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.should_stop_after_turn = should_stop_after_turn
        self.on_message_end = on_message_end
        self.prepare_request = prepare_request
        self._steering: Mailbox[AgentMessage] = Mailbox(steering_mode, max_size=STEERING_BUFFER)
        self._follow_up: Mailbox[AgentMessage] = Mailbox(follow_up_mode, max_size=FOLLOW_UP_BUFFER)
        self._bus: Broadcast[AgentEvent] = Broadcast()
        self.busy_policy: BusyPolicy = busy_policy
        self.record_event = record_event
        self._run: _Run | None = None
        self._inbox: Mailbox[_StartRun | StateChange] | None = None
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._stream_message: StreamingMessage | None = None
        self._pending_tool_calls: frozenset[str] = NO_TOOL_CALLS
        self._error: str | None = None

    # ------------------------------------------------------------------ lifecycle

    async def run(
        self, *, task_status: trio.TaskStatus[Self] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Serve the agent until cancelled: ``agent = await nursery.start(agent.run)``."""
        inbox = self._open_inbox()
        await self._run_task(inbox, task_status)

    def _open_inbox(self) -> Mailbox[_StartRun | StateChange]:
        # A Mailbox, not a memory channel: the same bound and order, and its one consumer
        # waits on a park made once (a channel's receive allocates a waiting chain per wait).
        inbox = self._inbox = Mailbox[_StartRun | StateChange](max_size=AGENT_INBOX)
        return inbox

    async def _run_task(
        self, inbox: Mailbox[_StartRun | StateChange], task_status: trio.TaskStatus[Self]
    ) -> NoReturn:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started(self)
                await self._serve(inbox)
        finally:
            self._stop_serving(inbox)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _serve_in_owner_nursery(self, inbox: Mailbox[_StartRun | StateChange]) -> NoReturn:
        try:
            await self._serve(inbox)
        finally:
            self._stop_serving(inbox)

    def _stop_serving(self, inbox: Mailbox[_StartRun | StateChange]) -> None:
        self._inbox = None
        self._nursery = None
        close_inbox(inbox, UsageError("Agent is closed"))
        self.close()

    async def ensure_started(self, nursery: trio.Nursery) -> None:
        """Serve the agent in ``nursery`` unless it runs already. For an owner that starts
        its agent on first use (an idle AgentSession keeps no agent task): the agent's task
        and its runs' tasks live in the owner's nursery (no nursery of the agent's own, whose
        scope, status and sets a used session would keep for good), so cancelling that
        nursery stops them all, as cancelling :meth:`run` does.

        The inbox is open when this returns (commands sent now wait in it until the task
        runs), so the start needs no handshake: no ``nursery.start`` and no event to wait on.

        Raises:
            UsageError: the agent was closed.
        """
        if self._inbox is None:
            if self._closed:
                raise UsageError("Agent is closed")
            inbox = self._open_inbox()
            self._nursery = nursery
            nursery.start_soon(self._serve_in_owner_nursery, inbox, name=self.run)

    def close(self) -> None:
        """Refuse commands from now on and close the queues and the event bus (what the end of
        :meth:`run` does, for an owner whose agent never ran); idempotent."""
        self._closed = True
        self._steering.close()
        self._follow_up.close()
        self._bus.close()
        self._release_callbacks()

    def _release_callbacks(self) -> None:
        # An owner's callbacks are usually its bound methods or closures over it (a session
        # actor's convert_to_llm, record_event, prepare_request ...): each is a reference
        # cycle through the owner, which would leave a closed agent and its owner to the
        # cycle collector. A closed agent runs nothing, so it lets go of them; its state
        # (messages, model ...) stays readable.
        self.convert_to_llm = default_convert_to_llm
        self.transform_context = None
        self.get_api_key = None
        self.stream_fn = _CLOSED_STREAM
        self.on_payload = None
        self.before_tool_call = None
        self.after_tool_call = None
        self.should_stop_after_turn = None
        self.on_message_end = None
        self.prepare_request = None
        self.record_event = None

    async def _serve(self, inbox: Mailbox[_StartRun | StateChange]) -> NoReturn:
        """The agent's own task: execute commands one at a time, in arrival order."""
        command: _StartRun | StateChange | None = None
        while True:
            await inbox.wait_nonempty()  # only run()'s finally closes the inbox
            for command in inbox.drain():  # one at a time: what is left is failed on close
                if not isinstance(command, _StartRun):
                    self._apply(command)
                    command.reply.set(None)
                    continue
                if command.abandoned:
                    command.reply.set(None)
                    continue
                try:
                    await self._start_run(command)
                except Exception as exc:  # a caller mistake (UsageError): the sender raises it
                    command.reply.fail(exc)
            # Let go of the last command while the agent waits: its reply holds the run (the
            # loop controller, its configuration and the turn's context) long after it ended.
            command = None

    async def _start_run(self, command: _StartRun) -> None:
        current = self._run
        if current is not None:
            policy = command.policy
            if policy == "interrupt":
                current.cancel()
                await current.done.wait()  # the epilogue is bounded, so this is too
            elif policy in ("steer", "follow_up") and command.prompts:
                box = self._steering if policy == "steer" else self._follow_up
                for message in command.prompts:
                    box.put_nowait(message)
                command.reply.set(None)
                return
            else:
                raise UsageError(
                    ALREADY_PROCESSING
                    if command.prompts is not None
                    else ALREADY_PROCESSING_CONTINUE
                )
        prompts = command.prompts
        skip = command.skip_initial_steering_poll
        if prompts is None:  # continue_
            if not self._messages:
                raise UsageError(NO_MESSAGES_TO_CONTINUE)
            if isinstance(self._messages[-1], AssistantMessage):
                prompts = self._steering.drain()
                skip = bool(prompts)
                if not prompts:
                    prompts = self._follow_up.drain()
                if not prompts:
                    raise UsageError(FROM_ASSISTANT)
        config = self._config(skip_initial_steering_poll=skip)
        run = _Run(
            LoopController(config, self._messages, self._emit, self._deliver_update), prompts
        )
        assert self._nursery is not None
        self._run = run
        self._stream_message = None
        self._error = None
        self._nursery.start_soon(self._drive, run)
        command.run = run
        run.answer = command.reply

    @property
    def state(self) -> AgentStateView:
        """A read-only view of the current state."""
        return AgentStateView(self)

    # ------------------------------------------------------------------ state

    @property
    def model(self) -> Model | None:
        return self._model

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    @property
    def thinking_level(self) -> ModelThinkingLevel:
        return self._thinking_level

    @property
    def tools(self) -> tuple[AgentTool, ...]:
        return self._tools

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        """The transcript (a snapshot; use the mutators to change it)."""
        return tuple(self._messages)

    @property
    def is_streaming(self) -> bool:
        """Whether a run is in progress."""
        return self._run is not None

    @property
    def stream_message(self) -> StreamingMessage | None:
        """The message being streamed right now, if any."""
        return self._stream_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Ids of the tool calls that started and have not ended."""
        return self._pending_tool_calls

    @property
    def error(self) -> str | None:
        """The error message of the last run's failed turn, if any."""
        return self._error

    @property
    def steering_mode(self) -> MailboxMode:
        return self._steering.mode

    @property
    def follow_up_mode(self) -> MailboxMode:
        return self._follow_up.mode

    async def set_steering_mode(self, mode: MailboxMode) -> None:
        """Deliver steering messages one at a time or all together, from the next poll on."""
        await self._change(SetQueueMode("steering", mode))

    async def set_follow_up_mode(self, mode: MailboxMode) -> None:
        """Deliver follow-up messages one at a time or all together, from the next poll on."""
        await self._change(SetQueueMode("follow_up", mode))

    async def set_system_prompt(self, prompt: str) -> None:
        """Use ``prompt`` from the next run on (a run in progress keeps its own)."""
        await self._change(SetSystemPrompt(prompt))

    async def set_model(self, model: Model) -> None:
        """Use ``model`` from the next run on (a run in progress keeps its own)."""
        await self._change(SetModel(model))

    async def set_session_id(self, session_id: str | None) -> None:
        """Pass ``session_id`` to the provider from the next run on."""
        await self._change(SetSessionId(session_id))

    async def set_thinking_level(self, level: ModelThinkingLevel) -> None:
        """Use ``level`` from the next run on (a run in progress keeps its own)."""
        await self._change(SetThinkingLevel(level))

    async def set_tools(self, tools: Iterable[AgentTool]) -> None:
        """Offer ``tools`` from the next run on (a run copies the list when it starts)."""
        await self._change(SetTools(tuple(tools)))

    async def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        """Replace the transcript."""
        await self._change(ReplaceMessages(list(messages)))

    async def append_message(self, message: AgentMessage) -> None:
        """Append ``message`` to the transcript."""
        await self._change(AppendMessage(message))

    async def clear_messages(self) -> None:
        """Empty the transcript."""
        await self._change(ClearMessages())

    async def reset(self) -> None:
        """Clear the transcript, runtime state and both queues."""
        await self._change(Reset())

    async def _change(self, command: StateChange) -> None:
        """Send a state change to the agent's task and wait until it is applied.

        An agent that no task serves (before :meth:`run` or :meth:`ensure_started`, or after
        it stopped) has no owner to order the change against: it is applied at once, here.
        Cancelling the wait does not withdraw a change already sent.

        Raises:
            UsageError: the agent stopped serving with the change still in its inbox.
        """
        inbox = self._inbox
        if inbox is None:
            self._apply(command)
            await trio.lowlevel.checkpoint()
            return
        try:
            try:
                inbox.put_nowait(command)
            except MailboxFull:
                await inbox.put(command)
        except trio.ClosedResourceError:
            # The agent stopped serving meanwhile: nobody owns the state any more.
            self._apply(command)
            return
        await command.reply.wait()

    def _apply(self, command: StateChange) -> None:
        """Apply a state change (in the agent's task, or in the caller's when none serves)."""
        match command:
            case SetModel():
                self._model = command.model
            case SetSystemPrompt():
                self._system_prompt = command.prompt
            case SetSessionId():
                self.session_id = command.session_id
            case SetThinkingLevel():
                self._thinking_level = command.level
            case SetTools():
                self._tools = command.tools
                self._provider_tools = None  # built by the next run (an idle agent holds none)
            case ReplaceMessages():
                # In place: a run in progress reads this very list as its transcript.
                self._messages[:] = command.messages
            case AppendMessage():
                self._messages.append(command.message)
            case ClearMessages():
                self._messages.clear()
            case Reset():
                self._messages.clear()
                self._stream_message = None
                self._pending_tool_calls = NO_TOOL_CALLS
                self._error = None
                self._steering.clear()
                self._follow_up.clear()
            case SetQueueMode():
                box = self._steering if command.queue == "steering" else self._follow_up
                box.mode = command.mode
            case _:  # pragma: no cover
                assert_never(command)

    def _provider_tools_now(self) -> tuple[Tool, ...]:
        # What the provider sees. pi hands the provider its AgentTool objects, so their label
        # travels along (it shows in the faux usage estimate); the codec keeps it in `extra`.
        provider_tools = self._provider_tools
        if provider_tools is None:
            provider_tools = self._provider_tools = tuple(
                attrs.evolve(tool.to_tool(), extra={"label": tool.label}) for tool in self._tools
            )
        return provider_tools

    # ------------------------------------------------------------------ queues

    def steer(self, message: AgentMessage) -> None:
        """Queue a message for the next turn; a running tool batch skips its unstarted calls.

        Synchronous and owner-free: a put into the steering mailbox (see the class docstring).

        Raises:
            MailboxFull: ``STEERING_BUFFER`` messages are already waiting.
        """
        self._steering.put_nowait(message)

    def follow_up(self, message: AgentMessage) -> None:
        """Queue a message to run once the agent would otherwise stop (a mailbox put).

        Raises:
            MailboxFull: ``FOLLOW_UP_BUFFER`` messages are already waiting.
        """
        self._follow_up.put_nowait(message)

    def clear_steering_queue(self) -> None:
        """Drop the waiting steering messages (a mailbox operation, as :meth:`steer`)."""
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        """Drop the waiting follow-up messages (a mailbox operation, as :meth:`follow_up`)."""
        self._follow_up.clear()

    def clear_all_queues(self) -> None:
        """Drop every waiting steering and follow-up message (mailbox operations)."""
        self._steering.clear()
        self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        return self._steering.has_items or self._follow_up.has_items

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order; returns an unsubscribe function.

        Async callbacks are awaited before the next event (pi awaits its listeners). A callback
        that raises is logged and skipped; it never stops the agent.
        """
        return self._bus.subscribe(callback)

    @asynccontextmanager
    async def events(
        self, *, max_buffer: int = SUBSCRIPTION_BUFFER, policy: SlowSubscriberPolicy = "block"
    ) -> AsyncIterator[Subscription[AgentEvent]]:
        """Open a bounded async iterator of events (``async with agent.events() as events``).

        With the default ``"block"`` policy a slow reader slows the agent; ``"drop_oldest"`` or
        ``"drop_newest"`` never hold it back; ``"error"`` breaks the subscription instead.
        """
        async with self._bus.open_subscription(max_buffer=max_buffer, policy=policy) as sub:
            yield sub

    def _emit(self, event: AgentEvent, *, deliver: bool = True) -> Awaitable[None]:
        # Reduce state first (pi's processEvents), then record, then deliver. With
        # deliver=False (an abort epilogue whose subscribers stalled past its bound) the state,
        # and whoever records it, still see every closing event; only delivery is skipped.
        # The reducer is inlined here on purpose. A plain function returning the bus's
        # publish: callers await it at once (the state changes when they call), and an event
        # costs no coroutine when the subscribers are sync.
        # Events are matched by exact class (only the loop and the tool runner emit, with
        # pitrio's own classes): an `is` test each, cheaper than an isinstance chain.
        if type(event) is MessageUpdateEvent:  # the per-token event: nothing to record
            self._stream_message = event.message
            return self._bus.publish(event) if deliver else DELIVERED
        if type(event) is MessageStartEvent:
            self._stream_message = event.message
        elif type(event) is MessageEndEvent:
            self._stream_message = None
            if not event.dropped:  # the transcript's only writer (the run reads it)
                self._messages.append(event.message)
        elif type(event) is ToolExecutionStartEvent:
            self._pending_tool_calls = self._pending_tool_calls | {event.tool_call_id}
        elif type(event) is ToolExecutionEndEvent:
            self._pending_tool_calls = self._pending_tool_calls - {event.tool_call_id}
        elif type(event) is TurnEndEvent:
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                self._error = message.error_message
        elif type(event) is AgentEndEvent:
            self._stream_message = None
        if self.record_event is not None:
            self.record_event(event)
        if deliver and not self._closed:
            # A closed agent's bus is closed: what its last run still streams is not delivered.
            return self._bus.publish(event)
        return DELIVERED

    def _deliver_update(self, event: Any) -> Awaitable[None] | None:
        """The run's handler for a streamed delta (an event of ``UPDATE_KINDS``; the
        LoopController's ``_own_deliver_update``, one call per token instead of three),
        called in the run's own task: the delta becomes its ``message_update``, state first,
        then delivery. Returns None once delivered, else the delivery to finish (a subscriber
        must be awaited); a delta that comes before the message's start (no message
        streaming yet), or after the run was aborted or the agent closed, is ignored: the
        provider stops only at its next checkpoint, and what it streamed until then (up to a
        faux burst, or the rest of a network read) is not delivered."""
        if self._stream_message is None or self._run is None or self._run.aborted or self._closed:
            return None
        partial = event.partial
        self._stream_message = partial
        delivery = self._bus.publish(message_update(event, partial))
        return None if delivery is DELIVERED else delivery

    async def _reduce_only(self, event: AgentEvent) -> None:
        await self._emit(event, deliver=False)

    # ------------------------------------------------------------------ runs

    async def prompt(
        self,
        message: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *,
        busy_policy: BusyPolicy | None = None,
    ) -> None:
        """Run the agent on a new prompt; returns when the run (and its listeners) finished.

        Cancelling the call aborts the run (it still emits its closing events).

        Args:
            busy_policy: overrides :attr:`busy_policy` for this call.

        Raises:
            UsageError: a run is in progress (policy ``"reject"``), no model is configured, or
                the agent is not running.
        """
        if isinstance(message, str):
            content: list[TextContent | ImageContent] = [TextContent(text=message)]
            content.extend(images or ())
            prompts: list[AgentMessage] = [UserMessage(content=content, timestamp=now_ms())]
        elif isinstance(
            message, UserMessage | AssistantMessage | ToolResultMessage | ExtensionMessage
        ):
            prompts = [message]
        else:
            prompts = list(message)
        policy = busy_policy if busy_policy is not None else self.busy_policy
        await self._command(_StartRun(prompts, False, policy))

    async def continue_(self) -> None:
        """Continue from the transcript (retries, queued messages).

        If the last message is the assistant's, queued steering (else follow-up) messages start
        the run; otherwise it continues from the last user or tool-result message.

        Raises:
            UsageError: a run is in progress, the transcript is empty, or it ends with an
                assistant message and nothing is queued.
        """
        await self._command(_StartRun(None, False, "reject"))

    async def _command(self, command: _StartRun) -> None:
        """Send a run command to the agent's inbox and wait for the run it starts to end."""
        inbox = self._inbox
        if inbox is None:
            raise UsageError(
                "Agent is not running: use `async with open_agent(...)` or "
                "`await nursery.start(agent.run)` first"
                if not self._closed
                else "Agent is closed"
            )
        try:
            try:
                # The common case takes no checkpoint of its own (the reply's wait is one):
                # a scheduler round trip less per prompt.
                inbox.put_nowait(command)
            except MailboxFull:
                await inbox.put(command)
            await command.reply.answered()  # the run's end, or an answer without a run
            command.reply.value_nowait()  # raises an error answer
        except trio.Cancelled:
            # The caller gave up waiting: abort the run it asked for, and give the run its
            # bounded epilogue so that the transcript is whole when the cancellation lands.
            command.abandoned = True
            run = command.run
            if run is not None:
                run.cancel()
                with trio.move_on_after(CLOSE_GRACE, shield=True):
                    await run.done.wait()
            raise
        except trio.ClosedResourceError:
            raise UsageError("Agent is closed") from None

    def abort(self) -> None:
        """Abort the current run, if any: its cancel scope is cancelled, so the LLM call, the
        tools, the hooks and the subscribers it waits on all stop; the run then emits its
        closing events (``aborted`` message, error tool results, ``turn_end``, ``agent_end``)
        within ``ABORT_EPILOGUE_GRACE``.

        Synchronous and owner-free on purpose: it acts at once from any task (not behind the
        commands queued before it), and cancelling a scope from another task is Trio's
        designed way to stop work; the run's own task then ends itself. A run whose command
        is still queued is not aborted (cancel the ``prompt`` call for that)."""
        if self._run is not None:
            self._run.cancel()

    async def wait_for_idle(self) -> None:
        """Return when no run is in progress (after ``agent_end`` listeners finished)."""
        run = self._run
        if run is not None:
            await run.done.wait()
        else:
            await trio.lowlevel.checkpoint()

    def _config(self, *, skip_initial_steering_poll: bool) -> LoopConfig:
        model = self._model
        if model is None:
            raise UsageError(NO_MODEL)
        level = self._thinking_level
        return LoopConfig(
            model=model,
            system_prompt=self._system_prompt,
            tools=self._tools,
            provider_tools=self._provider_tools_now() or None,
            stream_fn=self.stream_fn,
            options=StreamOptions(
                reasoning=None if level == "off" else level,
                session_id=self.session_id,
                thinking_budgets=self.thinking_budgets,
                max_retry_delay_ms=self.max_retry_delay_ms,
                stall_timeout_ms=self.stall_timeout_ms,
                transport=self.transport,
                on_payload=self.on_payload,
            ),
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            steering=self._steering,
            follow_up=self._follow_up,
            skip_initial_steering_poll=skip_initial_steering_poll,
            tool_execution=self.tool_execution,
            steering_skips_tools=self.steering_skips_tools,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            should_stop_after_turn=self.should_stop_after_turn,
            on_message_end=self.on_message_end,
            prepare_request=self.prepare_request,
        )

    async def _drive(self, run: _Run) -> None:
        """The run's task: the loop inside the run's nursery (whose scope an abort cancels),
        then the abort epilogue."""
        controller = run.controller
        try:
            try:
                async with trio.open_nursery() as tasks:
                    run.bind(tasks.cancel_scope)
                    await controller.run(run.prompts, tasks)
            except Exception as exc:
                # A failing hook, provider or stream_fn: reads as itself, not as the
                # nursery's group wrapper (whose other tasks were cancelled first).
                await self._fail_run(controller, unwrap_group(exc), aborted=run.aborted)
            if run.aborted and not controller.ended:
                with trio.move_on_after(ABORT_EPILOGUE_GRACE, shield=True):
                    await controller.close_aborted()
                if not controller.ended:
                    # A subscriber stalled past the bound: finish the transcript undelivered.
                    with trio.CancelScope(shield=True):
                        await controller.close_aborted(emit=self._reduce_only)
        finally:
            self._stream_message = None
            self._pending_tool_calls = NO_TOOL_CALLS
            self._run = None
            run.done.set()
            if run.answer is not None:
                run.answer.set(None)

    async def _fail_run(
        self, controller: LoopController, exc: BaseException, *, aborted: bool
    ) -> None:
        # pi's handleRunFailure: a synthetic assistant message closes the transcript.
        log.warning("agent_run_failed", error=str(exc), exc_info=exc)
        controller.ended = True
        model = self._model
        failure = AssistantMessage(
            content=[TextContent(text="")],
            api=model.api if model else "unknown",
            provider=model.provider if model else "unknown",
            model=model.id if model else "unknown",
            usage=EMPTY_USAGE,
            stop_reason="aborted" if aborted else "error",
            error_message=str(exc) or type(exc).__name__,
            timestamp=now_ms(),
        )
        self._messages.append(failure)
        self._error = failure.error_message
        with trio.move_on_after(ABORT_EPILOGUE_GRACE, shield=aborted):
            await self._emit(AgentEndEvent(messages=[failure]))

    @property
    def queued_messages(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """The steering and follow-up messages still queued (also after the agent closed:
        closing refuses new ones and hands these back)."""
        return self._steering.peek_all(), self._follow_up.peek_all()

    async def aclose(self) -> None:
        """Abort any run and stop serving (the owner's nursery then cancels ``run``)."""
        self._closed = True
        self.abort()
        with trio.move_on_after(CLOSE_GRACE, shield=True):
            await self.wait_for_idle()


@asynccontextmanager
async def open_agent(
    *,
    model: Model | None = None,
    system_prompt: str = "",
    thinking_level: ModelThinkingLevel = "off",
    tools: Iterable[AgentTool] = (),
    messages: Iterable[AgentMessage] = (),
    convert_to_llm: ConvertToLlm | None = None,
    transform_context: TransformContext | None = None,
    get_api_key: GetApiKey | None = None,
    stream_fn: StreamFn | None = None,
    session_id: str | None = None,
    thinking_budgets: ThinkingBudgets | None = None,
    max_retry_delay_ms: int | None = None,
    stall_timeout_ms: int | None = None,
    transport: Any = None,
    on_payload: Any = None,
    steering_mode: MailboxMode = "one-at-a-time",
    follow_up_mode: MailboxMode = "one-at-a-time",
    tool_execution: ToolExecution = "sequential",
    steering_skips_tools: bool = True,
    before_tool_call: BeforeToolCall | None = None,
    after_tool_call: AfterToolCall | None = None,
    should_stop_after_turn: ShouldStopAfterTurn | None = None,
    on_message_end: OnMessageEnd | None = None,
    prepare_request: PrepareRequest | None = None,
    registry: ProviderRegistry | None = None,
    busy_policy: BusyPolicy = "reject",
    record_event: Callable[[AgentEvent], None] | None = None,
) -> AsyncIterator[Agent]:
    """Create an :class:`Agent` (the keyword arguments are its constructor's) and serve it.

    Leaving the block aborts a run in progress (it gets ``CLOSE_GRACE`` seconds to emit its
    last events) and stops every task the agent started.
    """
    agent = Agent(
        model=model,
        system_prompt=system_prompt,
        thinking_level=thinking_level,
        tools=tools,
        messages=messages,
        convert_to_llm=convert_to_llm,
        transform_context=transform_context,
        get_api_key=get_api_key,
        stream_fn=stream_fn,
        session_id=session_id,
        thinking_budgets=thinking_budgets,
        max_retry_delay_ms=max_retry_delay_ms,
        stall_timeout_ms=stall_timeout_ms,
        transport=transport,
        on_payload=on_payload,
        steering_mode=steering_mode,
        follow_up_mode=follow_up_mode,
        tool_execution=tool_execution,
        steering_skips_tools=steering_skips_tools,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
        should_stop_after_turn=should_stop_after_turn,
        on_message_end=on_message_end,
        prepare_request=prepare_request,
        registry=registry,
        busy_policy=busy_policy,
        record_event=record_event,
    )
    async with open_body_nursery() as nursery:
        await nursery.start(agent.run)
        try:
            yield agent
        finally:
            await agent.aclose()
            nursery.cancel_scope.cancel()
