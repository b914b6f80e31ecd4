"""ToolRunner: executes one assistant message's tool calls (seed 002 s.6).

The runner takes the batch's calls one at a time from its *intake*, a zero-buffer memory
channel fed by a small feeder task: a call counts as accepted only once the runner received it.
When a steering message arrives while the batch runs, the steering mailbox notifies the runner
synchronously (:meth:`~pitrio.channels.Mailbox.notify_on_arrival`) and the runner closes its
intake: the running tool finishes, the runner's next receive finds the intake closed, and every
call not yet accepted comes back as an error result ``Skipped due to queued user message.``
(seed s.6.5). That skip is channel-closing semantics, not a flag somebody polls. The first call
of a batch always runs (a message already queued when the batch starts closes the intake only
after the first call was accepted), as pi checks for steering after each tool.

Results are collected in the runner's own per-call records, not sent through a channel, so a
batch of any size runs without the two sides waiting on each other.

Abort is the run's cancel scope (the Agent owns it): running tools and hooks are cancelled where
they wait, and :meth:`ToolRunner.close_aborted`, called from the run's shielded epilogue, emits
whatever events the batch still owes: ``tool_execution_end`` and the result message of every
call, with ``Tool execution was aborted`` for those cancelled or never started.
"""

from __future__ import annotations

import contextvars
import types
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeVar, cast

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
T = TypeVar("T")

UPDATE_BUFFER: Final = 64
"""Progress updates a tool may report ahead of the subscribers. ``on_update`` is synchronous, so
a tool cannot be made to wait; updates are progress snapshots, so when a tool outpaces its
subscribers the oldest pending ones are dropped (the newest always gets through)."""

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
    dropped: bool = False
    """An ``on_message_end`` hook dropped the message (it was not emitted)."""


@attrs.define
class _Prepared:
    tool_call: ToolCall
    tool: AgentTool
    args: dict[str, Any]


@attrs.define(eq=False)
class _Slot:
    """One call of the batch and which of its events have gone out.

    Each flag is set *before* its event is emitted, so an abort that interrupts the delivery
    of an event never makes the epilogue emit it a second time.
    """

    call: ToolCall
    accepted: bool = False
    started: bool = False
    finalized: Finalized | None = None
    ended: bool = False
    message_started: bool = False
    message_ended: bool = False


class _UpdateForwarder:
    """Emits a running tool's progress updates as ``tool_execution_update`` events, in order,
    while the tool goes on: ``report`` is the tool's synchronous ``on_update``, and the first
    update starts the task that emits them (a tool that reports none costs no task)."""

    __slots__ = ("_call", "_closing", "_emit", "_finished", "_nursery", "_pending", "_wake")

    def __init__(self, call: ToolCall, emit: Emit, nursery: trio.Nursery) -> None:
        self._call = call
        self._emit = emit
        self._nursery = nursery
        self._pending: deque[AgentToolResult] | None = None
        self._wake: trio.Event | None = None
        self._finished: trio.Event | None = None
        self._closing = False

    def report(self, partial: AgentToolResult) -> None:
        if self._closing:
            return  # the tool already returned: its end event is out or going out
        pending = self._pending
        if pending is None:
            pending = self._pending = deque(maxlen=UPDATE_BUFFER)
            self._finished = trio.Event()
            self._wake = trio.Event()
            self._nursery.start_soon(self._forward)
        pending.append(partial)
        assert self._wake is not None
        self._wake.set()

    async def _forward(self) -> None:
        pending = self._pending
        assert pending is not None and self._finished is not None
        call = self._call
        try:
            while True:
                assert self._wake is not None
                await self._wake.wait()
                self._wake = trio.Event()
                while pending:
                    await self._emit(
                        ToolExecutionUpdateEvent(
                            tool_call_id=call.id,
                            tool_name=call.name,
                            args=call.arguments,
                            partial_result=pending.popleft(),
                        )
                    )
                if self._closing:
                    return
        finally:
            self._finished.set()

    async def drain(self) -> None:
        """Return once every update reported so far was emitted; no later one is."""
        self._closing = True
        if self._finished is None:
            return
        assert self._wake is not None
        self._wake.set()
        await self._finished.wait()


@types.coroutine
def _in_own_context(coro: Coroutine[Any, Any, T]) -> Generator[Any, Any, T]:
    """Await ``coro`` in a copy of the current context, as a task of its own would run it:
    a tool's ``ContextVar`` changes stay its own. Trio's messages pass through unchanged."""
    context = contextvars.copy_context()
    step: Callable[[Any], Any] = coro.send
    value: Any = None
    while True:
        try:
            message = context.run(step, value)
        except StopIteration as stop:
            return cast(T, stop.value)
        try:
            value = yield message
            step = coro.send
        except BaseException as exc:  # thrown in by the runner (or close()): passed on
            value = exc
            step = coro.throw


class ToolRunner:
    """Runs one batch of tool calls; started per batch by the LoopController.

    Resource handling: the intake channel and the feeder task live inside :meth:`run_batch`;
    nothing outlives it. Cancellation: the run's cancel scope cancels running tools and hooks;
    the caller then runs :meth:`close_aborted` (shielded) to close the batch's events.
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
        on_message_end: Callable[[AgentMessage], Awaitable[AgentMessage | None]] | None = None,
        tasks: trio.Nursery | None = None,
    ) -> None:
        self._assistant = assistant_message
        # Where a tool's update forwarder runs (a tool runs in the task that calls it): the
        # run's nursery when the loop gives one, else a nursery of the call's own.
        self._tasks = tasks
        self._on_message_end = on_message_end
        self._tools = {tool.name: tool for tool in tools}
        self._messages = messages
        self._emit = emit
        self._steering = steering
        self._mode = mode
        self._before = before_tool_call
        self._after = after_tool_call
        self._slots: list[_Slot] = []
        self.steered = False
        """Whether a steering message closed the intake."""

    # ------------------------------------------------------------------ driver

    async def run_batch(self, tool_calls: Sequence[ToolCall]) -> tuple[list[Finalized], bool]:
        """Run ``tool_calls``; return the finalized calls in source order and whether a steering
        message closed the intake."""
        slots = self._slots = [_Slot(call) for call in tool_calls]
        if len(slots) == 1:
            # One call: nothing a steering message could skip, so no intake to close and no
            # feeder task (a task, a channel and a nursery less per tool turn).
            await self._run_single(slots[0])
            finalized = slots[0].finalized
            return ([finalized] if finalized is not None else []), self.steered
        intake_send, intake_receive = trio.open_memory_channel[_Slot](0)
        unwatch: Callable[[], None] | None = None

        def close_intake() -> None:
            self.steered = True
            intake_receive.close()

        def accepted() -> None:
            # Called once the first call was accepted: from now on a steering message closes
            # the intake (a message already queued closes it at once).
            nonlocal unwatch
            steering = self._steering
            if steering is not None and unwatch is None:
                unwatch = steering.notify_on_arrival(close_intake)
                if steering.has_items:
                    close_intake()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_feed, intake_send, slots)
                with intake_receive:
                    if self._mode == "sequential":
                        await self._serve_sequential(intake_receive, accepted)
                    else:
                        await self._serve_parallel(intake_receive, accepted)
        finally:
            if unwatch is not None:
                unwatch()
        if self._mode == "parallel":
            for slot in slots:
                if slot.finalized is not None:
                    await self._emit_message(slot)
        for slot in slots:
            if not slot.accepted:
                await self._skip(slot, SKIPPED_MESSAGE)
        return [slot.finalized for slot in slots if slot.finalized is not None], self.steered

    async def _run_single(self, slot: _Slot) -> None:
        # Either mode's events for one call: start, preflight, execution, end, message.
        slot.accepted = True
        await self._run_sequential(slot)

    async def _serve_sequential(
        self, intake: trio.MemoryReceiveChannel[_Slot], accepted: Callable[[], None]
    ) -> None:
        while True:
            try:
                slot = await intake.receive()
            except (trio.ClosedResourceError, trio.EndOfChannel):
                return  # every call was run, or a steering message closed the intake
            slot.accepted = True
            accepted()
            await self._run_sequential(slot)

    async def _run_sequential(self, slot: _Slot) -> None:
        slot.started = True
        await self._emit(_start_event(slot.call))
        prepared = await self._prepare(slot.call)
        if isinstance(prepared, Finalized):
            slot.finalized = prepared
        else:
            slot.finalized = await self._finalize(prepared, *await self._execute(prepared))
        await self._emit_end(slot)
        await self._emit_message(slot)

    async def _serve_parallel(
        self, intake: trio.MemoryReceiveChannel[_Slot], accepted: Callable[[], None]
    ) -> None:
        # pi 0.73.1's parallel mode: preflight in source order, then execute concurrently;
        # tool_execution_end in completion order, result messages in source order.
        prepared: list[tuple[_Slot, _Prepared]] = []
        while True:
            try:
                slot = await intake.receive()
            except (trio.ClosedResourceError, trio.EndOfChannel):
                break
            slot.accepted = True
            accepted()
            slot.started = True
            await self._emit(_start_event(slot.call))
            outcome = await self._prepare(slot.call)
            if isinstance(outcome, Finalized):
                slot.finalized = outcome
                await self._emit_end(slot)
            else:
                prepared.append((slot, outcome))
        async with trio.open_nursery() as nursery:
            for slot, item in prepared:
                nursery.start_soon(self._run_one, slot, item)

    async def _run_one(self, slot: _Slot, prepared: _Prepared) -> None:
        slot.finalized = await self._finalize(prepared, *await self._execute(prepared))
        await self._emit_end(slot)

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
        # An abort that landed between tool_execution_start and here stops the call before
        # the tool's first line runs.
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._tasks is not None:
            return await self._call_tool(prepared, self._tasks)
        async with trio.open_nursery() as nursery:
            return await self._call_tool(prepared, nursery)

    async def _call_tool(
        self, prepared: _Prepared, nursery: trio.Nursery
    ) -> tuple[AgentToolResult, bool]:
        # The tool runs in this task (in a context of its own, as a task of its own would
        # run it); its progress updates go out from a forwarding task started on the first
        # one, so most calls cost no task and no scheduler round trip.
        call = prepared.tool_call
        updates = _UpdateForwarder(call, self._emit, nursery)
        try:
            running = prepared.tool.execute(call.id, prepared.args, updates.report)
            if isinstance(running, types.CoroutineType):
                result = await _in_own_context(running)
            else:  # an execute() that hands back another kind of awaitable
                result = await running
            outcome = (result, False)
        except Exception as exc:
            outcome = (error_result(_text(exc)), True)
        # tool_execution_end comes after every update reported before the tool returned.
        await updates.drain()
        return outcome

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

    async def _skip(self, slot: _Slot, text: str) -> None:
        if not slot.started:
            slot.started = True
            await self._emit(_start_event(slot.call))
        if slot.finalized is None:
            slot.finalized = Finalized(slot.call, error_result(text), True)
        await self._emit_end(slot)
        await self._emit_message(slot)

    async def _emit_message(self, slot: _Slot) -> None:
        finalized = slot.finalized
        assert finalized is not None
        if finalized.message is None:
            message = tool_result_message(finalized)
            if self._on_message_end is not None:
                kept = await self._on_message_end(message)
                if kept is None:
                    finalized.dropped = True
                    slot.message_started = slot.message_ended = True
                    return
                # A hook may hand back any AgentMessage; the transcript takes it as it is.
                message = cast(ToolResultMessage, kept)
            finalized.message = message
        if not slot.message_started:
            slot.message_started = True
            await self._emit(MessageStartEvent(message=finalized.message))
        if not slot.message_ended:
            slot.message_ended = True
            await self._emit(MessageEndEvent(message=finalized.message))

    async def _emit_end(self, slot: _Slot) -> None:
        if slot.ended:
            return
        slot.ended = True
        finalized = slot.finalized
        assert finalized is not None
        await self._emit(
            ToolExecutionEndEvent(
                tool_call_id=finalized.tool_call.id,
                tool_name=finalized.tool_call.name,
                result=finalized.result,
                is_error=finalized.is_error,
            )
        )

    # ------------------------------------------------------------------ abort

    def set_emit(self, emit: Emit) -> None:
        """Emit through ``emit`` from now on (the abort epilogue's undelivered second pass)."""
        self._emit = emit
        self._on_message_end = None

    async def close_aborted(self, tool_calls: Sequence[ToolCall]) -> list[ToolResultMessage]:
        """Emit the events an aborted batch still owes; return every call's result message.

        Called from the run's shielded epilogue after the run's scope was cancelled. Calls
        that finished keep their results; calls cancelled mid-execution or never started get
        ``Tool execution was aborted``. Events already emitted are not repeated.
        """
        self._on_message_end = None  # the epilogue runs no hooks
        if not self._slots:  # aborted before the batch started
            self._slots = [_Slot(call) for call in tool_calls]
        messages: list[ToolResultMessage] = []
        for slot in self._slots:
            await self._skip(slot, ABORTED_TOOL_MESSAGE)
            assert slot.finalized is not None
            if slot.finalized.message is not None and not slot.finalized.dropped:
                messages.append(slot.finalized.message)
        return messages


async def _feed(send: trio.MemorySendChannel[_Slot], slots: Sequence[_Slot]) -> None:
    """Offer the batch's calls to the runner one by one, until it closes its intake."""
    with send:
        for slot in slots:
            try:
                await send.send(slot)
            except trio.BrokenResourceError:
                return  # the runner closed its intake: the rest are skipped


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
