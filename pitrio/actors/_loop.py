"""LoopController: the turn loop of seed 002 s.2, one per run.

Kept in one module: the turn loop of seed 002 s.2 reads as one state machine; its
steps share the run's locals.

::

    agent_start, turn_start, prompts (message_start/end)
    outer loop:
        inner loop while the model asks for tools or steering messages are pending:
            turn_start (not on the first turn); pending messages (message_start/end)
            ProviderStream: message_start, message_update*, message_end
            error or aborted -> turn_end, agent_end, stop
            tool calls -> ToolRunner (skips what a steering message pre-empts)
            turn_end; should_stop_after_turn?; steering mailbox drained
        follow-up mailbox drained only now, when the agent would stop
    agent_end with the run's new messages

The run has one transcript: the Agent's message list, which the Agent's reducer alone writes
(it appends the message of every ``message_end`` event). The controller reads it (to build each
request's context) and keeps only ``new_messages`` (the run's messages, for ``agent_end``). It
talks to the ProviderStream (the provider task and its bounded event stream) and the ToolRunner
(its intake and results channels), and emits every event through ``emit``, which the Agent
points at its state reducer and EventBus.

Two hooks let the layer above shape what the run sees (actors knows nothing of extensions):

* ``on_message_end`` gets every finished message (prompt, custom, assistant, tool result) before
  its ``message_end`` is emitted, and returns the message to keep (a replacement is what the
  transcript, ``message_end`` subscribers and a session file see) or ``None`` to drop it. A
  dropped message that had not started (anything but a streamed assistant message) emits no
  event at all; a dropped streamed assistant message ends with a ``message_end`` marked
  ``dropped`` (so subscribers close the stream) that the reducer does not append, and the loop
  still acts on it (its tool calls run; ``turn_end`` carries it). The abort epilogue runs no
  hook: it emits the messages it owes as they are.
* ``prepare_request`` gets each request's :class:`RequestDraft` (system prompt, tool
  definitions, cached and uncached AgentMessages, options) after ``transform_context`` and before
  ``convert_to_llm``, and returns the draft to send; raising :class:`RequestRejected` ends the
  request with an error assistant message carrying the reason.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from pitrio._awaitable import maybe_await
from pitrio._exceptions import PitrioError
from pitrio.actors._events import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pitrio.actors._messages import AgentMessage
from pitrio.actors._tool_runner import (
    AfterToolCall,
    BeforeToolCall,
    Emit,
    ToolExecution,
    ToolRunner,
)
from pitrio.channels import DELIVERED, Mailbox
from pitrio.codec import slot_constructor
from pitrio.providers import (
    ABORTED_MESSAGE,
    EMPTY_USAGE,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    Message,
    Model,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    Tool,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    now_ms,
)
from pitrio.tools import AgentTool

message_update: Final[Callable[[Any, Any], MessageUpdateEvent]] = slot_constructor(
    MessageUpdateEvent, ("assistant_message_event", "message")
)
"""``MessageUpdateEvent(assistant_message_event=..., message=...)``, positionally and built slot
by slot (:func:`pitrio.codec.slot_constructor`): one per token."""


UPDATE_KINDS: Final = frozenset(
    {
        TextDeltaEvent,
        ThinkingDeltaEvent,
        ToolCallDeltaEvent,
        TextStartEvent,
        TextEndEvent,
        ThinkingStartEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallEndEvent,
    }
)
"""The block events that become ``message_update``: one set lookup on the per-token path
instead of an ``isinstance`` chain (other event types take the chain)."""

StreamFn: TypeAlias = Callable[
    [trio.Nursery, Model, Context, StreamOptions], AssistantMessageEventStream
]
"""Starts one LLM call in the given nursery and returns its event stream (default:
:func:`pitrio.providers.start_stream` with the default registry)."""
ConvertToLlm: TypeAlias = Callable[
    [Sequence[AgentMessage]], "Sequence[Message] | Awaitable[Sequence[Message]]"
]
TransformContext: TypeAlias = Callable[
    [Sequence[AgentMessage]], "Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]]"
]
GetApiKey: TypeAlias = Callable[[str], "str | Awaitable[str | None] | None"]
OnMessageEnd: TypeAlias = Callable[[AgentMessage], Awaitable["AgentMessage | None"]]
"""Gets a finished message before its ``message_end``; returns it, a replacement, or ``None``
(drop it)."""


class RequestRejected(PitrioError):
    """Raised by ``prepare_request``: this request must not be sent (``reason`` says why).

    The loop ends the request with an ``error`` assistant message whose ``errorMessage`` is
    ``reason``, as it does for a provider failure.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen(kw_only=True)
class RequestDraft:
    """One provider request before it is converted and sent (``prepare_request``'s argument)."""

    system_prompt: str
    tools: tuple[Tool, ...]
    """The tool definitions offered to the model (each must name a tool of the run)."""
    messages: tuple[AgentMessage, ...]
    """The cached messages (the transcript after ``transform_context``)."""
    uncached: tuple[AgentMessage, ...] = ()
    """Request-only messages, sent after ``messages``."""
    options: StreamOptions
    turn_index: int
    """0-based turn of the run."""
    request_index: int
    """0-based provider request of the run."""


PrepareRequest: TypeAlias = Callable[[RequestDraft], Awaitable[RequestDraft]]


@attrs.frozen(kw_only=True)
class ShouldStopAfterTurnContext:
    """What ``should_stop_after_turn`` sees after each turn."""

    message: AssistantMessage
    tool_results: Sequence[ToolResultMessage]
    messages: Sequence[AgentMessage]
    new_messages: Sequence[AgentMessage]


ShouldStopAfterTurn: TypeAlias = Callable[[ShouldStopAfterTurnContext], "bool | Awaitable[bool]"]

NO_MESSAGES: Final = "Cannot continue: no messages in context"
FROM_ASSISTANT: Final = "Cannot continue from message role: assistant"


@attrs.define(kw_only=True)
class LoopConfig:
    """Everything one run needs; the Agent builds it from its state at the start of a run."""

    model: Model
    system_prompt: str
    tools: Sequence[AgentTool]
    provider_tools: Sequence[Tool] | None
    stream_fn: StreamFn
    options: StreamOptions
    convert_to_llm: ConvertToLlm
    transform_context: TransformContext | None = None
    get_api_key: GetApiKey | None = None
    steering: Mailbox[AgentMessage] | None = None
    follow_up: Mailbox[AgentMessage] | None = None
    skip_initial_steering_poll: bool = False
    tool_execution: ToolExecution = "sequential"
    steering_skips_tools: bool = True
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None
    on_message_end: OnMessageEnd | None = None
    prepare_request: PrepareRequest | None = None


class LoopController:
    """Runs one agent run (a prompt or a continuation) to its ``agent_end``.

    Resource handling: every ProviderStream and ToolRunner it starts lives in a nursery inside
    :meth:`run`; nothing outlives it.

    Cancellation: the Agent runs :meth:`run` inside the run's cancel scope, so an abort cancels
    whatever the run is waiting on (the LLM call, a tool, a hook, a subscriber). The controller
    records where it is before every event it emits; :meth:`close_aborted`, called by the Agent
    under a shielded, bounded scope, then emits exactly the events that are still owed (an
    ``aborted`` assistant message, error results for the batch's tool calls, ``turn_end``,
    ``agent_end``) in pi's order, and the transcript stays valid.
    """

    def __init__(
        self,
        config: LoopConfig,
        messages: list[AgentMessage],
        emit: Emit,
        deliver_update: Callable[[Any], Awaitable[None] | None] | None = None,
    ) -> None:
        """``deliver_update(event)``, when given, replaces `_own_deliver_update` (same contract):
        the Agent's own, which turns a delta into its ``message_update`` in one call."""
        self._config = config
        # The run's transcript, shared with the Agent: read here, written by the reducer only.
        self._messages = messages
        self._turn_index = 0
        self._request_index = 0
        self._emit = emit
        self._deliver_update = (
            deliver_update if deliver_update is not None else self._own_deliver_update
        )
        self.new_messages: list[AgentMessage] = []
        # Where the run is, for close_aborted. Each is updated *before* the event it stands
        # for is emitted, so an event whose delivery was interrupted is never emitted twice.
        self._agent_started = False
        self._turn_open = False
        self._unsent: deque[AgentMessage] = deque()  # drained from a queue, not yet emitted
        self._half_sent: AgentMessage | None = None  # message_start out, message_end not
        self._call: Literal["idle", "context", "streaming", "final", "ended"] = "idle"
        self._stream: AssistantMessageEventStream | None = None
        self._assistant_started = False
        self._assistant: AssistantMessage | None = None
        self._runner: ToolRunner | None = None
        self._tool_results: list[ToolResultMessage] = []
        self._continues = False  # after turn_end: whether the loop would call the LLM again
        self.ended = False
        """Whether ``agent_end`` (or the run's failure) was emitted."""
        self._tasks: trio.Nursery | None = None  # run()'s nursery, while it runs

    async def run(
        self, prompts: Sequence[AgentMessage] | None, tasks: trio.Nursery | None = None
    ) -> list[AgentMessage]:
        """Run the loop; ``prompts=None`` continues from the transcript. Returns new messages.

        ``tasks``: the nursery for the run's provider streams and tool tasks, whose scope is
        the run's (the Agent passes its run's); without it the run opens one of its own.
        """
        if tasks is None:
            async with trio.open_nursery() as own:
                return await self.run(prompts, own)
        emit = self._emit
        if prompts is None:
            if not self._messages:
                raise RuntimeError(NO_MESSAGES)
            if isinstance(self._messages[-1], AssistantMessage):
                raise RuntimeError(FROM_ASSISTANT)
        self._unsent.extend(prompts or ())
        # One nursery for the run's provider streams and tool tasks, not one per LLM call and
        # per tool call: each call still waits for what it started to deliver its end, and
        # nothing outlives the run (its scope is the run's; an abort cancels all).
        self._tasks = tasks
        try:
            self._agent_started = True
            await emit(AgentStartEvent())
            self._turn_open = True
            await emit(TurnStartEvent())
            # The prompt is sent in a scheduler step of its own, not in the one that opened
            # the run: many sessions starting at once run each such step in one pass, and a
            # session's recording of its prompt made that the longest pass of the start.
            await trio.lowlevel.checkpoint()
            await self._send_unsent()
            await self._loop()
        finally:
            self._tasks = None
        return self.new_messages

    async def _send_unsent(self, *, hooks: bool = True) -> None:
        """Emit message_start/end for the queued user messages (the reducer appends them)."""
        unsent = self._unsent
        emit = self._emit
        on_end = self._config.on_message_end if hooks else None
        while unsent:
            message = unsent[0]
            if on_end is not None:
                # Still queued while the hook runs: an abort here leaves it to the epilogue.
                kept = await on_end(message)
                unsent.popleft()
                if kept is None:
                    continue
                message = kept
            else:
                unsent.popleft()
            self.new_messages.append(message)
            self._half_sent = message
            await emit(MessageStartEvent(message=message))
            self._half_sent = None
            await emit(MessageEndEvent(message=message))

    async def _loop(self) -> None:
        config = self._config
        emit = self._emit
        first_turn = True
        self._drain(config.steering, skip=config.skip_initial_steering_poll)
        while True:
            more_tool_calls = True
            while more_tool_calls or self._unsent:
                if first_turn:
                    first_turn = False
                else:
                    self._turn_open = True
                    self._turn_index += 1
                    await emit(TurnStartEvent())
                await self._send_unsent()
                message = await self._stream_assistant()
                if message.stop_reason in ("error", "aborted"):
                    self._turn_open = False
                    await emit(TurnEndEvent(message=message, tool_results=()))
                    self.ended = True
                    await emit(AgentEndEvent(messages=self.new_messages))
                    return
                tool_calls = message.tool_calls()
                tool_results: list[ToolResultMessage] = []
                more_tool_calls = False
                if tool_calls:
                    tool_results, terminate = await self._run_tools(message, tool_calls)
                    more_tool_calls = not terminate
                self._turn_open = False
                self._continues = more_tool_calls
                self._call = "idle"
                await emit(TurnEndEvent(message=message, tool_results=tool_results))
                if config.should_stop_after_turn is not None:
                    context = ShouldStopAfterTurnContext(
                        message=message,
                        tool_results=tool_results,
                        messages=self._messages,
                        new_messages=self.new_messages,
                    )
                    if await maybe_await(config.should_stop_after_turn(context)):
                        self.ended = True
                        await emit(AgentEndEvent(messages=self.new_messages))
                        return
                self._drain(config.steering)
            self._drain(config.follow_up)
            if not self._unsent:
                break
        self.ended = True
        await emit(AgentEndEvent(messages=self.new_messages))

    def _drain(self, box: Mailbox[AgentMessage] | None, *, skip: bool = False) -> None:
        # Straight into _unsent: a message taken from a queue is never lost to an abort.
        if box is not None and not skip:
            self._unsent.extend(box.drain())

    # ------------------------------------------------------------------ LLM call

    async def _llm_context(self) -> tuple[Context, StreamOptions]:
        config = self._config
        messages: Sequence[AgentMessage] = self._messages
        if config.transform_context is not None:
            messages = await maybe_await(config.transform_context(messages))
        system_prompt = config.system_prompt
        tools = config.provider_tools
        options = config.options
        if config.prepare_request is not None:
            draft = await config.prepare_request(
                RequestDraft(
                    system_prompt=system_prompt,
                    tools=tuple(tools or ()),
                    messages=tuple(messages),
                    options=options,
                    turn_index=self._turn_index,
                    request_index=self._request_index,
                )
            )
            system_prompt = draft.system_prompt
            tools = draft.tools or None
            options = draft.options
            messages = draft.messages + draft.uncached
        self._request_index += 1
        llm_messages = await maybe_await(config.convert_to_llm(messages))
        context = Context(system_prompt=system_prompt, messages=llm_messages, tools=tools)
        return context, options

    async def _stream_assistant(self) -> AssistantMessage:
        config = self._config
        emit = self._emit
        self._call = "context"
        self._assistant_started = False
        self._assistant = None
        self._runner = None
        self._tool_results = []
        try:
            context, options = await self._llm_context()
        except RequestRejected as exc:
            return await self._end_assistant(error_message(config.model, exc.reason))
        if config.get_api_key is not None:
            key = await maybe_await(config.get_api_key(config.model.provider))
            if key:
                options = attrs.evolve(options, api_key=key)
        tasks = self._tasks
        assert tasks is not None  # _stream_assistant runs inside run()
        stream = config.stream_fn(tasks, config.model, context, options)
        self._stream = stream
        self._call = "streaming"
        try:
            # Every buffered event is taken at once, without a checkpoint; the task waits
            # only when the stream runs dry (one hand-off per burst, not per token). A
            # delta whose subscribers are all synchronous costs no await at all. Every
            # event is handled here, in this run's own task.
            receive_all = stream.receive_all_nowait
            deliver_update = self._deliver_update
            started = self._assistant_started
            final: AssistantMessage | None = None
            while final is None:
                batch = receive_all()
                if not batch:
                    try:
                        batch = [await stream.receive()]
                    except trio.EndOfChannel:
                        final = await stream.result()
                        break
                for event in batch:
                    if type(event) in UPDATE_KINDS:
                        delivery = deliver_update(event)
                        if delivery is not None:
                            await delivery
                    elif isinstance(event, StartEvent):
                        self._assistant_started = started = True
                        await emit(MessageStartEvent(message=event.partial))
                    elif isinstance(event, DoneEvent):
                        final = event.message
                        break
                    elif isinstance(event, ErrorEvent):
                        final = event.error
                        break
                    elif started:
                        await emit(message_update(event, event.partial))
                # Nothing of the burst may stay referenced across the next wait: a paced
                # stream waits once per token, and the cyclic collector promotes whatever
                # a waiting task keeps alive (then counts it towards its next full pass).
                del batch, event
        finally:
            stream.close()  # no checkpoint: nothing to shield
        self._stream = None
        assert final is not None  # the loop above ends only with the final message
        return await self._end_assistant(final)

    def _own_deliver_update(self, event: Any) -> Awaitable[None] | None:
        """Deliver a streamed delta (an event of ``UPDATE_KINDS``) as its ``message_update``.
        Returns None when it was delivered, else the delivery to finish (a subscriber must be
        awaited: the loop awaits it); a delta that comes before the message's start event is
        ignored (None)."""
        if not self._assistant_started:
            return None
        delivery = self._emit(message_update(event, event.partial))
        return None if delivery is DELIVERED else delivery

    async def _end_assistant(self, final: AssistantMessage) -> AssistantMessage:
        """Finish the LLM call's message: the hook, then message_start (if owed) and _end."""
        emit = self._emit
        self._assistant = final
        self._call = "final"
        kept: AgentMessage | None = final
        if self._config.on_message_end is not None:
            kept = await self._config.on_message_end(final)
        if kept is not None:
            self.new_messages.append(kept)
            if isinstance(kept, AssistantMessage):
                # What the transcript holds; the epilogue closes with it too.
                self._assistant = final = kept
        elif not self._assistant_started:
            self._call = "ended"  # dropped before anything was emitted: no events
            return final
        if not self._assistant_started:
            self._assistant_started = True
            await emit(MessageStartEvent(message=final))
        self._call = "ended"
        if kept is None:
            await emit(MessageEndEvent(message=final, dropped=True))
        else:
            await emit(MessageEndEvent(message=kept))
        return final

    # ------------------------------------------------------------------ tools

    async def _run_tools(
        self, message: AssistantMessage, tool_calls: Sequence[Any]
    ) -> tuple[list[ToolResultMessage], bool]:
        runner = self._runner = self._tool_runner(message, tool_calls)
        finalized, _steered = await runner.run_batch(tool_calls)
        results = [
            item.message for item in finalized if item.message is not None and not item.dropped
        ]
        self.new_messages.extend(results)
        self._tool_results = results
        terminate = bool(finalized) and all(f.result.terminate is True for f in finalized)
        return results, terminate

    def _tool_runner(self, message: AssistantMessage, tool_calls: Sequence[Any]) -> ToolRunner:
        config = self._config
        mode = config.tool_execution
        if mode == "parallel":
            by_name = {tool.name: tool for tool in config.tools}
            if any(
                getattr(by_name.get(c.name), "execution_mode", None) == "sequential"
                for c in tool_calls
            ):
                mode = "sequential"  # one sequential tool serialises the batch (pi 0.73.1)
        return ToolRunner(
            assistant_message=message,
            tools=config.tools,
            messages=self._messages,
            emit=self._emit,
            steering=config.steering if config.steering_skips_tools else None,
            mode=mode,
            before_tool_call=config.before_tool_call,
            after_tool_call=config.after_tool_call,
            on_message_end=config.on_message_end,
            tasks=self._tasks,
        )

    # ------------------------------------------------------------------ abort

    async def close_aborted(self, *, emit: Emit | None = None) -> None:
        """Emit what an aborted run still owes, from wherever it stopped (pi's order).

        The LLM call in progress ends with an ``aborted`` message (the partial text it had, or
        an empty one if the call had not started streaming); a tool batch gives every call its
        result (``Tool execution was aborted`` where it did not finish); a turn that would
        have been followed by another (tool results, queued messages) is followed by one whose
        LLM call ends ``aborted`` at once, as pi's loop does with an aborted signal; then
        ``turn_end`` and ``agent_end``. Nothing already emitted is emitted again.

        The caller shields this call and bounds it in time: a subscriber that stalls again
        here is cut off when the bound expires. Calling it again (with an ``emit`` that only
        updates state) continues from where the first call stopped.
        """
        if self.ended:
            return
        if emit is not None:
            self._emit = emit
            if self._runner is not None:
                self._runner.set_emit(emit)
        emit = self._emit
        if not self._agent_started:
            self._agent_started = True
            await emit(AgentStartEvent())
            self._turn_open = True
            await emit(TurnStartEvent())
        if self._half_sent is not None:
            message, self._half_sent = self._half_sent, None
            await emit(MessageEndEvent(message=message))
        if self._turn_open:
            await self._send_unsent(hooks=False)
            message = await self._close_call()
            results: list[ToolResultMessage] = []
            if message.stop_reason not in ("error", "aborted") and message.tool_calls():
                runner = self._runner or self._tool_runner(message, message.tool_calls())
                # (A batch that finished closed the turn without a checkpoint in between, so
                # none of these results is in the transcript yet.)
                results = await runner.close_aborted(message.tool_calls())
                self.new_messages.extend(results)
                self._continues = True
            else:
                self._continues = False
            self._turn_open = False
            await emit(TurnEndEvent(message=message, tool_results=results))
        if self._continues or self._unsent:
            # The next turn's LLM call would see the aborted signal and end at once.
            self._continues = False
            self._turn_open = True
            self._call = "context"
            self._assistant = None
            self._assistant_started = False
            self._runner = None
            await emit(TurnStartEvent())
            await self._send_unsent(hooks=False)
            message = await self._close_call()
            self._turn_open = False
            await emit(TurnEndEvent(message=message, tool_results=()))
        self.ended = True
        await emit(AgentEndEvent(messages=self.new_messages))

    async def _close_call(self) -> AssistantMessage:
        """End the current LLM call's message as ``aborted`` (or keep it, if it was complete)."""
        emit = self._emit
        if self._call in ("final", "ended") and self._assistant is not None:
            message = self._assistant
            if self._call == "final" and not (
                self.new_messages and self.new_messages[-1] is message
            ):
                self.new_messages.append(message)  # the abort interrupted on_message_end
        else:
            stream = self._stream
            if self._call == "streaming" and stream is not None:
                message = stream.finish_aborted()
            else:
                message = aborted_message(self._config.model)
                self._assistant_started = False
            self._stream = None
            self._assistant = message
            self.new_messages.append(message)
        if not self._assistant_started:
            self._assistant_started = True
            await emit(MessageStartEvent(message=message))
        if self._call != "ended":
            self._call = "ended"
            await emit(MessageEndEvent(message=message))
        return message


def error_message(model: Model, reason: str) -> AssistantMessage:
    """The message of an LLM call that was refused before it was sent (``stopReason: error``)."""
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=EMPTY_USAGE,
        stop_reason="error",
        error_message=reason,
        timestamp=now_ms(),
    )


def aborted_message(model: Model) -> AssistantMessage:
    """The message of an LLM call aborted before it streamed anything (pi-ai's wording)."""
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=EMPTY_USAGE,
        stop_reason="aborted",
        error_message=ABORTED_MESSAGE,
        timestamp=now_ms(),
    )
