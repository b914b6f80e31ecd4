"""ToolRunner: executes one assistant message's tool calls (seed 002 s.6).

The LoopController hands the runner the batch's tool calls one at a time through the runner's
*intake*, a zero-buffer memory channel: a call is accepted only when the runner is ready to
start it. Finished calls go back through the *results* channel. When a steering message is
queued while a tool runs, the runner closes its intake after that tool finishes (seed s.6.5);
the controller's next ``send`` then fails and every call not yet accepted comes back as an error
result ``Skipped due to queued user message.`` That skip is channel-closing semantics, not a
flag somebody polls.

Abort cancels the batch's scope: running tools are cancelled at their next checkpoint and
return an error result; calls not yet started are skipped the same way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from pitrio._awaitable import maybe_await
from pitrio.actors._events import (
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pitrio.actors._messages import AgentMessage
from pitrio.channels import Mailbox
from pitrio.providers import AssistantMessage, ToolCall, ToolResultMessage, now_ms
from pitrio.tools import AgentTool, AgentToolResult, error_result, validate_tool_arguments

SKIPPED_MESSAGE: Final = "Skipped due to queued user message."
ABORTED_TOOL_MESSAGE: Final = "Tool execution was aborted"
BLOCKED_MESSAGE: Final = "Tool execution was blocked"
UPDATE_BUFFER: Final = 64
"""Progress updates a tool may report ahead of the subscribers. ``on_update`` is synchronous, so
a tool cannot be made to wait; updates are progress snapshots, so when a tool outpaces its
subscribers the oldest pending ones are dropped (the newest always gets through)."""
RESULTS_BUFFER: Final = 16
"""Finished calls the runner may hand back before the controller collects them; the
controller reads results as fast as they come, so this rarely fills."""

ToolExecution: TypeAlias = Literal["sequential", "parallel"]
Emit: TypeAlias = Callable[[AgentEvent], Awaitable[None]]


@attrs.frozen(kw_only=True)
class BeforeToolCallContext:
    """What ``before_tool_call`` sees: the call, its validated arguments and the transcript."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    messages: Sequence[AgentMessage]


@attrs.frozen(kw_only=True)
class BeforeToolCallResult:
    """Return ``block=True`` to stop the call; ``reason`` becomes its error result."""

    block: bool = False
    reason: str | None = None


@attrs.frozen(kw_only=True)
class AfterToolCallContext:
    """What ``after_tool_call`` sees: the call and its result."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    result: AgentToolResult
    is_error: bool
    messages: Sequence[AgentMessage]


@attrs.frozen(kw_only=True)
class AfterToolCallResult:
    """Fields to replace in the result; ``None`` keeps the original."""

    content: Sequence[Any] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None


BeforeToolCall: TypeAlias = Callable[
    [BeforeToolCallContext],
    "BeforeToolCallResult | Awaitable[BeforeToolCallResult | None] | None",
]
"""Hook run after validation, before ``execute``. Contract: may block the call by returning
``BeforeToolCallResult(block=True, reason=...)``; an exception becomes the call's error result."""
AfterToolCall: TypeAlias = Callable[
    [AfterToolCallContext],
    "AfterToolCallResult | Awaitable[AfterToolCallResult | None] | None",
]
"""Hook run after ``execute``. Contract: may replace content, details, is_error or terminate; an
exception turns the result into an error result with the exception's text."""


@attrs.define
class Finalized:
    """A finished tool call: what becomes ``tool_execution_end`` and the tool result message."""

    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool
    message: ToolResultMessage | None = None
    """The tool result message, once emitted."""


@attrs.define
class _Prepared:
    tool_call: ToolCall
    tool: AgentTool
    args: dict[str, Any]


class ToolRunner:
    """Runs one batch of tool calls; started per batch by the LoopController.

    Resource handling: owns its intake (receive side) and results (send side) and closes both
    when it returns. Cancellation: cancelling the runner's scope cancels running tools; each
    cancelled call still produces an error result before the runner returns.
    """

    def __init__(
        self,
        *,
        assistant_message: AssistantMessage,
        tools: Sequence[AgentTool],
        messages: Sequence[AgentMessage],
        emit: Emit,
        steering: Mailbox[AgentMessage] | None,
        mode: ToolExecution,
        before_tool_call: BeforeToolCall | None,
        after_tool_call: AfterToolCall | None,
    ) -> None:
        self._assistant = assistant_message
        self._tools = {tool.name: tool for tool in tools}
        self._messages = messages
        self._emit = emit
        self._steering = steering
        self._mode = mode
        self._before = before_tool_call
        self._after = after_tool_call
        self.aborted = False
        self._scopes: set[trio.CancelScope] = set()

    # ------------------------------------------------------------------ driver

    async def run_batch(self, tool_calls: Sequence[ToolCall]) -> tuple[list[Finalized], bool]:
        """Run ``tool_calls``; return the finalized calls in source order and whether a steering
        message closed the intake."""
        intake_send, intake_receive = trio.open_memory_channel[ToolCall](0)
        results_send, results_receive = trio.open_memory_channel[Finalized](RESULTS_BUFFER)
        finished: list[Finalized] = []
        steered = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve, intake_receive, results_send)
            with intake_send:
                for index, call in enumerate(tool_calls):
                    try:
                        await intake_send.send(call)
                    except trio.BrokenResourceError:
                        # The runner closed its intake: steering arrived or the batch aborted.
                        steered = not self.aborted
                        skipped = tool_calls[index:]
                        break
                else:
                    skipped = ()
            async with results_receive:
                async for item in results_receive:
                    finished.append(item)
        if self._mode == "parallel":
            order = {id(call): i for i, call in enumerate(tool_calls)}
            finished.sort(key=lambda f: order[id(f.tool_call)])
            for item in finished:
                await self._emit_message(item)
        for call in skipped:
            finished.append(await self._skip(call))
        return finished, steered

    async def _serve(
        self,
        intake: trio.MemoryReceiveChannel[ToolCall],
        results: trio.MemorySendChannel[Finalized],
    ) -> None:
        with intake, results:
            if self._mode == "sequential":
                await self._serve_sequential(intake, results)
            else:
                await self._serve_parallel(intake, results)

    def _intake_should_close(self) -> bool:
        return self.aborted or (self._steering is not None and self._steering.has_items)

    async def _serve_sequential(
        self,
        intake: trio.MemoryReceiveChannel[ToolCall],
        results: trio.MemorySendChannel[Finalized],
    ) -> None:
        async for call in intake:
            await self._emit(_start_event(call))
            prepared = await self._prepare(call)
            if isinstance(prepared, Finalized):
                finalized = prepared
            else:
                finalized = await self._finalize(prepared, *await self._execute(prepared))
            await self._emit_end(finalized)
            await self._emit_message(finalized)
            await results.send(finalized)
            if self._intake_should_close():
                return  # closing the intake: the controller skips every call not yet sent

    async def _serve_parallel(
        self,
        intake: trio.MemoryReceiveChannel[ToolCall],
        results: trio.MemorySendChannel[Finalized],
    ) -> None:
        # pi 0.73.1's parallel mode: preflight in source order, then execute concurrently;
        # tool_execution_end in completion order, result messages in source order.
        prepared: list[_Prepared] = []
        async for call in intake:
            await self._emit(_start_event(call))
            outcome = await self._prepare(call)
            if isinstance(outcome, Finalized):
                await self._emit_end(outcome)
                await results.send(outcome)
            else:
                prepared.append(outcome)
            if self._intake_should_close():
                break
        async with trio.open_nursery() as nursery:
            for item in prepared:
                nursery.start_soon(self._run_one, item, results)

    async def _run_one(
        self, prepared: _Prepared, results: trio.MemorySendChannel[Finalized]
    ) -> None:
        finalized = await self._finalize(prepared, *await self._execute(prepared))
        await self._emit_end(finalized)
        await results.send(finalized)

    # ------------------------------------------------------------------ one call

    async def _prepare(self, call: ToolCall) -> _Prepared | Finalized:
        tool = self._tools.get(call.name)
        if tool is None:
            return Finalized(call, error_result(f"Tool {call.name} not found"), True)
        try:
            args = validate_tool_arguments(tool, call)
            if self._before is not None:
                context = BeforeToolCallContext(
                    assistant_message=self._assistant,
                    tool_call=call,
                    args=args,
                    messages=self._messages,
                )
                verdict = await maybe_await(self._before(context))
                if verdict is not None and verdict.block:
                    return Finalized(call, error_result(verdict.reason or BLOCKED_MESSAGE), True)
        except Exception as exc:
            return Finalized(call, error_result(_text(exc)), True)
        return _Prepared(call, tool, args)

    async def _execute(self, prepared: _Prepared) -> tuple[AgentToolResult, bool]:
        if self.aborted:  # aborted after this call was accepted but before it ran
            return error_result(ABORTED_TOOL_MESSAGE), True
        call = prepared.tool_call
        pending: deque[AgentToolResult] = deque(maxlen=UPDATE_BUFFER)
        wake = trio.Event()
        outcome: list[tuple[AgentToolResult, bool]] = []

        def on_update(partial: AgentToolResult) -> None:
            pending.append(partial)
            wake.set()

        async def run_tool() -> None:
            try:
                result = await prepared.tool.execute(call.id, prepared.args, on_update)
                outcome.append((result, False))
            except Exception as exc:
                outcome.append((error_result(_text(exc)), True))
            finally:
                wake.set()

        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(run_tool)
                    # Forward progress updates as events, in order, while the tool runs; the
                    # end event waits until every update reported before it has been emitted.
                    while True:
                        await wake.wait()
                        wake = trio.Event()
                        while pending:
                            await self._emit(
                                ToolExecutionUpdateEvent(
                                    tool_call_id=call.id,
                                    tool_name=call.name,
                                    args=call.arguments,
                                    partial_result=pending.popleft(),
                                )
                            )
                        if outcome:
                            break
            finally:
                self._scopes.discard(scope)
        if not outcome:  # cancelled by abort before the tool returned
            return error_result(ABORTED_TOOL_MESSAGE), True
        return outcome[0]

    async def _finalize(
        self, prepared: _Prepared, result: AgentToolResult, is_error: bool
    ) -> Finalized:
        if self._after is not None:
            context = AfterToolCallContext(
                assistant_message=self._assistant,
                tool_call=prepared.tool_call,
                args=prepared.args,
                result=result,
                is_error=is_error,
                messages=self._messages,
            )
            try:
                change = await maybe_await(self._after(context))
            except Exception as exc:
                return Finalized(prepared.tool_call, error_result(_text(exc)), True)
            if change is not None:
                result = AgentToolResult(
                    content=change.content if change.content is not None else result.content,
                    details=change.details if change.details is not None else result.details,
                    terminate=change.terminate
                    if change.terminate is not None
                    else result.terminate,
                )
                if change.is_error is not None:
                    is_error = change.is_error
        return Finalized(prepared.tool_call, result, is_error)

    async def _skip(self, call: ToolCall) -> Finalized:
        text = ABORTED_TOOL_MESSAGE if self.aborted else SKIPPED_MESSAGE
        finalized = Finalized(call, error_result(text), True)
        await self._emit(_start_event(call))
        await self._emit_end(finalized)
        await self._emit_message(finalized)
        return finalized

    async def _emit_message(self, finalized: Finalized) -> None:
        message = tool_result_message(finalized)
        finalized.message = message
        await self._emit(MessageStartEvent(message=message))
        await self._emit(MessageEndEvent(message=message))

    async def _emit_end(self, finalized: Finalized) -> None:
        await self._emit(
            ToolExecutionEndEvent(
                tool_call_id=finalized.tool_call.id,
                tool_name=finalized.tool_call.name,
                result=finalized.result,
                is_error=finalized.is_error,
            )
        )

    # ------------------------------------------------------------------ abort

    def abort(self) -> None:
        """Cancel running tools and close the intake: unstarted calls are skipped."""
        self.aborted = True
        for scope in list(self._scopes):
            scope.cancel()


def _start_event(call: ToolCall) -> ToolExecutionStartEvent:
    return ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def tool_result_message(finalized: Finalized) -> ToolResultMessage:
    """The transcript message for a finished call."""
    return ToolResultMessage(
        tool_call_id=finalized.tool_call.id,
        tool_name=finalized.tool_call.name,
        content=finalized.result.content,
        details=finalized.result.details,
        is_error=finalized.is_error,
        timestamp=now_ms(),
    )
