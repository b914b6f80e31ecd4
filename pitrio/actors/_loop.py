"""LoopController: the turn loop of seed 002 s.2, one per run.

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

The controller owns the run's working transcript and talks to the ProviderStream (the provider
task and its bounded event stream) and the ToolRunner (its intake and results channels). It
emits every event through ``emit``, which the Agent points at its state reducer and EventBus.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeAlias

import attrs
import trio

from pitrio._awaitable import maybe_await
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
from pitrio.channels import Mailbox
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    Message,
    Model,
    StartEvent,
    StreamOptions,
    Tool,
    ToolResultMessage,
)
from pitrio.tools import AgentTool

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


class LoopController:
    """Runs one agent run (a prompt or a continuation) to its ``agent_end``.

    Resource handling: every ProviderStream and ToolRunner it starts lives in the nursery of
    :meth:`run`. Abort (:meth:`abort`) stops the current LLM call (which then ends with
    ``stopReason: "aborted"``) or cancels the running tools; either way ``turn_end`` and
    ``agent_end`` are still emitted.
    """

    def __init__(self, config: LoopConfig, messages: Sequence[AgentMessage], emit: Emit) -> None:
        self._config = config
        self._messages: list[AgentMessage] = list(messages)
        self._emit = emit
        self._aborted = False
        self._stream: AssistantMessageEventStream | None = None
        self._runner: ToolRunner | None = None
        self.new_messages: list[AgentMessage] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        """Stop the run at its current step; the run still ends with turn_end and agent_end."""
        self._aborted = True
        if self._stream is not None:
            self._stream.abort()
        if self._runner is not None:
            self._runner.abort()

    async def run(self, prompts: Sequence[AgentMessage] | None) -> list[AgentMessage]:
        """Run the loop; ``prompts=None`` continues from the transcript. Returns new messages."""
        emit = self._emit
        if prompts is None:
            if not self._messages:
                raise RuntimeError(NO_MESSAGES)
            if isinstance(self._messages[-1], AssistantMessage):
                raise RuntimeError(FROM_ASSISTANT)
        await emit(AgentStartEvent())
        await emit(TurnStartEvent())
        for prompt in prompts or ():
            self._messages.append(prompt)
            self.new_messages.append(prompt)
            await emit(MessageStartEvent(message=prompt))
            await emit(MessageEndEvent(message=prompt))
        await self._loop()
        return self.new_messages

    async def _loop(self) -> None:
        config = self._config
        emit = self._emit
        first_turn = True
        pending = self._drain(config.steering, skip=config.skip_initial_steering_poll)
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    await emit(TurnStartEvent())
                for message in pending:
                    await emit(MessageStartEvent(message=message))
                    await emit(MessageEndEvent(message=message))
                    self._messages.append(message)
                    self.new_messages.append(message)
                pending = []
                message = await self._stream_assistant()
                self.new_messages.append(message)
                if message.stop_reason in ("error", "aborted"):
                    await emit(TurnEndEvent(message=message, tool_results=()))
                    await emit(AgentEndEvent(messages=self.new_messages))
                    return
                tool_calls = message.tool_calls()
                tool_results: list[ToolResultMessage] = []
                more_tool_calls = False
                if tool_calls:
                    tool_results, terminate = await self._run_tools(message, tool_calls)
                    more_tool_calls = not terminate
                    self._messages.extend(tool_results)
                    self.new_messages.extend(tool_results)
                await emit(TurnEndEvent(message=message, tool_results=tool_results))
                if config.should_stop_after_turn is not None:
                    context = ShouldStopAfterTurnContext(
                        message=message,
                        tool_results=tool_results,
                        messages=self._messages,
                        new_messages=self.new_messages,
                    )
                    if await maybe_await(config.should_stop_after_turn(context)):
                        await emit(AgentEndEvent(messages=self.new_messages))
                        return
                pending = self._drain(config.steering)
            follow_ups = self._drain(config.follow_up)
            if not follow_ups:
                break
            pending = follow_ups
        await emit(AgentEndEvent(messages=self.new_messages))

    @staticmethod
    def _drain(box: Mailbox[AgentMessage] | None, *, skip: bool = False) -> list[AgentMessage]:
        if box is None or skip:
            return []
        return box.drain()

    # ------------------------------------------------------------------ LLM call

    async def _llm_context(self) -> Context:
        config = self._config
        messages: Sequence[AgentMessage] = self._messages
        if config.transform_context is not None:
            messages = await maybe_await(config.transform_context(messages))
        llm_messages = await maybe_await(config.convert_to_llm(messages))
        return Context(
            system_prompt=config.system_prompt,
            messages=llm_messages,
            tools=config.provider_tools,
        )

    async def _stream_assistant(self) -> AssistantMessage:
        config = self._config
        emit = self._emit
        context = await self._llm_context()
        options = config.options
        if config.get_api_key is not None:
            key = await maybe_await(config.get_api_key(config.model.provider))
            if key:
                options = attrs.evolve(options, api_key=key)
        added_partial = False
        async with trio.open_nursery() as nursery:
            stream = config.stream_fn(nursery, config.model, context, options)
            self._stream = stream
            if self._aborted:
                stream.abort()
            try:
                async for event in stream:
                    if isinstance(event, StartEvent):
                        added_partial = True
                        await emit(MessageStartEvent(message=event.partial))
                    elif isinstance(event, DoneEvent | ErrorEvent):
                        final = event.message if isinstance(event, DoneEvent) else event.error
                        break
                    elif added_partial:
                        await emit(
                            MessageUpdateEvent(assistant_message_event=event, message=event.partial)
                        )
                else:
                    final = await stream.result()
            finally:
                self._stream = None
                await stream.aclose()
        self._messages.append(final)
        if not added_partial:
            await emit(MessageStartEvent(message=final))
        await emit(MessageEndEvent(message=final))
        return final

    # ------------------------------------------------------------------ tools

    async def _run_tools(
        self, message: AssistantMessage, tool_calls: Sequence[Any]
    ) -> tuple[list[ToolResultMessage], bool]:
        config = self._config
        mode = config.tool_execution
        if mode == "parallel":
            by_name = {tool.name: tool for tool in config.tools}
            if any(
                getattr(by_name.get(c.name), "execution_mode", None) == "sequential"
                for c in tool_calls
            ):
                mode = "sequential"  # one sequential tool serialises the batch (pi 0.73.1)
        runner = ToolRunner(
            assistant_message=message,
            tools=config.tools,
            messages=self._messages,
            emit=self._emit,
            steering=config.steering if config.steering_skips_tools else None,
            mode=mode,
            before_tool_call=config.before_tool_call,
            after_tool_call=config.after_tool_call,
        )
        self._runner = runner
        if self._aborted:
            runner.abort()
        try:
            finalized, _steered = await runner.run_batch(tool_calls)
        finally:
            self._runner = None
        results = [item.message for item in finalized if item.message is not None]
        terminate = bool(finalized) and all(f.result.terminate is True for f in finalized)
        return results, terminate
