"""The scripted ``faux`` provider (mirrors pi-ai's ``registerFauxProvider``).

Kept in one module: the scripted model's streaming loop and its scripts; the usage
estimate lives in _usage.

Each answer is streamed by the stream's own provider task, like any provider's: a paced one
sleeps on the Trio clock between its chunks, so nothing of one session ever runs in another's
task.

A faux provider answers from a FIFO queue of scripted responses: finished assistant messages, or
factories called with the request context. It streams them with pi's event protocol, cutting
text, reasoning and tool-argument JSON into chunks of ``token_size * 4`` characters, and puts a
usage estimate on every message computed as pi's does (characters / 4 over a serialisation of the
whole request). It is the embedded default for demos, tests and load tests.

With ``token_size=(n, n)`` and no ``tokens_per_second`` its events equal pi's faux provider's for
the same script, except that text is cut by code points where JavaScript cuts UTF-16 code units
(a pitrio chunk never splits an emoji into lone surrogates).
"""

from __future__ import annotations

import inspect
import itertools
import random
import secrets
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeAlias

import attrs
import trio

from pitrio.providers._events import (
    AssistantMessageEvent,
    DeltaEventType,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    is_terminal,
    positional_factory,
)
from pitrio.providers._messages import (
    EMPTY_USAGE,
    AssistantContentBlock,
    AssistantMessage,
    Context,
    InputKind,
    Model,
    ModelCost,
    ProviderResponse,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from pitrio.providers._partial import (
    AssistantMessageBuilder,
    PartialAssistantMessage,
)
from pitrio.providers._registry import ApiProvider, ProviderRegistry, default_registry
from pitrio.providers._stream import AssistantMessageEventStream, now_ms
from pitrio.providers.faux._usage import (
    _estimate_tokens,
    _json,
    _with_usage_estimate,
)

DEFAULT_API: Final = "faux"
DEFAULT_PROVIDER: Final = "faux"
DEFAULT_MODEL_ID: Final = "faux-1"
DEFAULT_MODEL_NAME: Final = "Faux Model"
DEFAULT_BASE_URL: Final = "http://localhost:0"
DEFAULT_TOKEN_SIZE: Final = (3, 5)
"""pi's default: each chunk is 3 to 5 "tokens" of 4 characters."""
DEFAULT_YIELD_EVERY: Final = 128
"""Chunks an unlimited-speed stream sends between two checkpoints. pi waits one *microtask*
per chunk, which lets its consumer run but never the event loop's timers or I/O; a Trio
checkpoint is a full scheduler pass, worth several chunks. Every subscriber still sees every
event in order, and other tasks wait at most this many chunks for their turn; a run of this
many deltas fills the stream's buffer (``ASSISTANT_STREAM_BUFFER``) and no more."""
OFFER_BATCH: Final = 128
"""Chunks between two cancellation points with ``yield_every=0`` (no scheduler pass of its
own: the stream yields only when its consumer is a buffer behind)."""
NO_MORE_RESPONSES: Final = "No more faux responses queued"

ResponseFactory: TypeAlias = Callable[
    [Context, StreamOptions, "FauxState", Model], "AssistantMessage | Awaitable[AssistantMessage]"
]
"""Builds a response from the request: ``(context, options, state, model)``; may be async."""
FauxResponse: TypeAlias = "AssistantMessage | ResponseFactory"


# --------------------------------------------------------------------------- script helpers


def faux_text(text: str) -> TextContent:
    """Return a text block for a scripted response."""
    return TextContent(text=text)


def faux_thinking(thinking: str) -> ThinkingContent:
    """Return a thinking block for a scripted response."""
    return ThinkingContent(thinking=thinking)


_tool_ids = itertools.count(1)


def faux_tool_call(name: str, arguments: dict[str, Any], *, id: str | None = None) -> ToolCall:
    """Return a tool-call block for a scripted response (a fresh id unless one is given)."""
    if id is None:
        id = f"tool:{now_ms()}:{next(_tool_ids)}{secrets.token_hex(4)}"
    return ToolCall(id=id, name=name, arguments=arguments)


_BLOCK_CLASSES: Final = (TextContent, ThinkingContent, ToolCall)


def faux_assistant_message(
    content: str | AssistantContentBlock | Iterable[AssistantContentBlock],
    *,
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    """Return a scripted response; a string becomes one text block."""
    if isinstance(content, str):
        blocks: tuple[AssistantContentBlock, ...] = (faux_text(content),)
    elif isinstance(content, _BLOCK_CLASSES):
        blocks = (content,)
    else:
        blocks = tuple(content)
    return _scripted_message(
        blocks,
        DEFAULT_API,
        DEFAULT_PROVIDER,
        DEFAULT_MODEL_ID,
        response_id,
        EMPTY_USAGE,
        stop_reason,
        error_message,
        now_ms() if timestamp is None else timestamp,
    )


# A response factory makes a message per request, and the usage estimate copies it: both
# with the values in the class's order (see pitrio.providers._events.positional_factory).
_scripted_message: Final[Callable[..., AssistantMessage]] = positional_factory(
    AssistantMessage,
    (
        "content",
        "api",
        "provider",
        "model",
        "response_id",
        "usage",
        "stop_reason",
        "error_message",
        "timestamp",
    ),
)
# --------------------------------------------------------------------------- the provider


@attrs.define
class FauxState:
    """Mutable faux state shared with response factories."""

    call_count: int = 0


@attrs.frozen(kw_only=True)
class FauxModelDefinition:
    """A model the faux provider offers (defaults as pi's)."""

    id: str
    name: str | None = None
    reasoning: bool = False
    input: tuple[InputKind, ...] = ("text", "image")
    cost: ModelCost = attrs.field(factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384


def _split(text: str, min_size: int, max_size: int, rng: random.Random) -> list[str]:
    if not text:
        return [""]
    if min_size == max_size:
        step = max(1, min_size * 4)
        if len(text) <= step:  # a short answer, or a tool call's arguments: one chunk
            return [text]
        return [text[i : i + step] for i in range(0, len(text), step)]
    chunks = []
    index = 0
    while index < len(text):
        step = max(1, rng.randint(min_size, max_size) * 4)
        chunks.append(text[index : index + step])
        index += step
    return chunks


class FauxProvider:
    """A registered faux provider; see :func:`register_faux_provider`."""

    def __init__(
        self,
        *,
        api: str,
        provider: str,
        models: Sequence[Model],
        token_size: tuple[int, int],
        tokens_per_second: float | None,
        yield_every: int,
        registry: ProviderRegistry,
        seed: int | None,
    ) -> None:
        self.api = api
        self.provider = provider
        self.models = list(models)
        self.state = FauxState()
        self._pending: deque[FauxResponse] = deque()
        self._min, self._max = token_size
        self._tps = tokens_per_second
        self._yield_every = yield_every
        # Weak: the registry keeps this provider's bound _stream, so a strong reference back
        # would be a cycle, leaving a dropped registry (one per host session) to the collector.
        self._registry = weakref.ref(registry)
        self._source_id = f"faux-provider:{secrets.token_hex(6)}"
        self._prompt_cache: dict[str, str] = {}
        self._rng = random.Random(seed)
        self._is_paced = tokens_per_second is not None and tokens_per_second > 0
        registry.register(ApiProvider(api=api, stream=self._stream), self._source_id)

    # ------------------------------------------------------------------ script

    def get_model(self, model_id: str | None = None) -> Model | None:
        """Return the model ``model_id`` (the first model when ``None``)."""
        if model_id is None:
            return self.models[0]
        return next((m for m in self.models if m.id == model_id), None)

    def set_responses(self, responses: Iterable[FauxResponse]) -> None:
        """Replace the queue of scripted responses."""
        self._pending = deque(responses)

    def append_responses(self, responses: Iterable[FauxResponse]) -> None:
        """Add scripted responses to the end of the queue."""
        self._pending.extend(responses)

    @property
    def pending_count(self) -> int:
        """How many scripted responses are still queued."""
        return len(self._pending)

    def unregister(self) -> None:
        """Remove this provider from its registry."""
        registry = self._registry()
        if registry is not None:
            registry.unregister(self._source_id)

    # ------------------------------------------------------------------ streaming

    async def _stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        out: AssistantMessageEventStream,
    ) -> None:
        """Answer one request as pi's faux answers it (the `ProviderStreamFn`, run as the
        stream's own task): the next scripted response (a factory's made now), with the usage
        estimate, streamed block by block (`_burst`, or `_paced` at ``tokens_per_second``),
        the terminal event last."""
        step = self._pending.popleft() if self._pending else None
        self.state.call_count += 1
        on_response = options.on_response
        if on_response is not None:  # as pi's faux: a 200 with no headers, per request
            answered = on_response(ProviderResponse(status=200, headers={}), model)
            if inspect.isawaitable(answered):
                await answered
        if step is None:
            resolved = AssistantMessage(
                content=(),
                api=self.api,
                provider=self.provider,
                model=model.id,
                stop_reason="error",
                error_message=NO_MORE_RESPONSES,
                timestamp=now_ms(),
            )
        elif isinstance(step, AssistantMessage):
            resolved = step
        else:
            made = step(context, options, self.state, model)
            if type(made) is AssistantMessage or not inspect.isawaitable(made):
                resolved = made
            else:  # an async factory
                resolved = await made
        message = _with_usage_estimate(
            resolved,
            context,
            options,
            self._prompt_cache,
            self.api,
            self.provider,
            model.id,
        )
        # The response is taken and the call counted (as pi's faux, before it looks at the
        # abort signal). Every call passes through the scheduler before its first event, an
        # empty script's too (an abort that came meanwhile stops it there).
        await trio.lowlevel.checkpoint()
        if step is None:  # pi's faux sends the error alone, with no start event
            await out.emit(ErrorEvent(reason="error", error=message))
        elif self._is_paced:
            await self._paced(message, out)
        else:
            await self._burst(message, out)

    async def _burst(self, message: AssistantMessage, out: AssistantMessageEventStream) -> None:
        """Push ``message``'s events at unlimited speed, a run (`_runs`) at a time: what fits
        in the buffer without a wait, the rest with backpressure; a checkpoint between two
        runs (with ``yield_every=0`` only a cancellation point: the task then yields only
        when the consumer is a buffer behind)."""
        every = self._yield_every
        push_nowait = out.push_nowait
        sent: AssistantMessageEvent | None = None
        try:
            for run in self._runs(message, out):
                for event in run:
                    # No coroutine per event: a wait only when the buffer is full.
                    try:
                        push_nowait(event)
                    except trio.WouldBlock:
                        await out.push(event)
                    sent = event
                if is_terminal(run[-1]):
                    return
                if every:
                    await trio.lowlevel.checkpoint()
                else:
                    await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            _attach_what_was_sent(out, message, sent)
            raise

    async def _paced(self, message: AssistantMessage, out: AssistantMessageEventStream) -> None:
        """Push ``message``'s events as pi's faux does at ``tokens_per_second``: the start and
        each block's start, then its deltas, then its end.

        Each delta is due ``tokens / tokens_per_second`` seconds after the one before, counted
        from the answer's start on the Trio clock (a due time, not a sleep per chunk): the
        task sleeps until the next delta is due, and when it wakes late it sends every delta
        already due at once, as a paced server's bytes reach a late reader in one read. The
        answer so ends when it is due however late its reader wakes, instead of drifting by
        every late wake."""
        tps = self._tps
        assert tps is not None
        current_time = trio.current_time
        # The due time of the next delta, in seconds of the Trio clock.
        due = current_time()
        builder = AssistantMessageBuilder.for_message(message)
        out.attach(builder)
        snapshot = builder.snapshot
        blocks = message.content
        # What the consumer was sent, in ints (an event held here would live across every
        # wait): the blocks begun, and the chunks of the last one.
        begun = sent = 0
        chunks: list[str] = []
        try:
            await out.emit(StartEvent(partial=snapshot()))
            for block in blocks:
                index, kind, event = _open_block(builder, block, snapshot)
                await out.emit(event)
                begun += 1
                sent = 0
                text = _block_text(block)
                append = builder.chunk_appender(index)
                chunks = _split(text, self._min, self._max, self._rng)
                for number, chunk in enumerate(chunks, 1):
                    due += _estimate_tokens(chunk) / tps
                    if current_time() < due:
                        await trio.sleep_until(due)
                    append(chunk)
                    await out.emit(kind(content_index=index, delta=chunk, partial=snapshot()))
                    sent = number
                await out.emit(_close_block(builder, block, index, text, snapshot))
                sent = len(chunks)
                del event
        except BaseException:
            out.attach(_builder_of_sent(message, begun, chunks[:sent]))
            raise
        await out.emit(_terminal_event(message))

    def _runs(
        self, message: AssistantMessage, out: AssistantMessageEventStream
    ) -> Iterator[list[AssistantMessageEvent]]:
        """Stream ``message`` block by block as pi's faux does, at unlimited speed, in runs.

        A run ends just before the chunk a checkpoint is due at: every ``yield_every``-th
        chunk of the whole answer, counted across its blocks (``0``: every `OFFER_BATCH`-th);
        the last run ends with the terminal event. One frame for the whole answer (a call's
        fixed cost is most of a short answer's): the builder reads its header from
        ``message`` itself and events are built positionally.
        """
        period = self._yield_every or OFFER_BATCH
        min_size, max_size, rng = self._min, self._max, self._rng
        blocks = message.content
        texts = [_block_text(block) for block in blocks]
        splits = [_split(text, min_size, max_size, rng) for text in texts]
        builder = AssistantMessageBuilder.for_message(message)
        out.attach(builder)
        snapshot = builder.snapshot
        run: list[AssistantMessageEvent] = [StartEvent(partial=snapshot())]
        add = run.append
        # A countdown across the blocks, not a modulo per chunk.
        countdown = period
        # Partial blocks carry no signatures, as in pi: the final message has them.
        for block, text, chunks in zip(blocks, texts, splits, strict=True):
            index, kind, event = _open_block(builder, block, snapshot)
            add(event)
            sole = builder.sole_block(index)
            if sole is not None:
                # The usual answer, one block: its snapshots built here, without a call per
                # token (what builder.snapshot() returns in this case).
                header = builder.header
                count = len(sole.chunks)
                extend = sole.chunks.extend
                # The chunks in stretches, each up to the chunk the countdown runs out
                # before: no countdown test per token, the same run boundaries.
                position, total = 0, len(chunks)
                while True:
                    stop = position + countdown - 1
                    if stop > total:
                        stop = total
                    stretch = chunks[position:stop]
                    # The builder takes a stretch at once (a snapshot reads its block's
                    # chunks only when its content is read); it holds what the runs so far
                    # carry whenever a run ends.
                    extend(stretch)
                    for chunk in stretch:
                        count += 1
                        partial = PartialAssistantMessage()
                        partial._header = header
                        partial._states = sole
                        partial._count = count
                        add(kind(content_index=index, delta=chunk, partial=partial))
                    if stop >= total:
                        countdown -= total - position
                        break
                    # The countdown ran out before chunks[stop]: end the run, and count
                    # chunks[stop] as the first of the next `period`.
                    position = stop
                    countdown = period + 1
                    yield run
                    run = []
                    add = run.append
            else:
                append = builder.chunk_appender(index)
                for chunk in chunks:
                    countdown -= 1
                    if countdown == 0:
                        countdown = period
                        yield run
                        run = []
                        add = run.append
                    append(chunk)
                    add(kind(content_index=index, delta=chunk, partial=snapshot()))
            add(_close_block(builder, block, index, text, snapshot))
        add(_terminal_event(message))
        yield run


def _attach_what_was_sent(
    out: AssistantMessageEventStream,
    message: AssistantMessage,
    sent: AssistantMessageEvent | None,
) -> None:
    """Attach to ``out`` a builder holding what the consumer was sent, up to ``sent`` (None:
    nothing yet): a stream cancelled (aborted) while it waited for room in the buffer ends its
    message with that, not with what was built ahead of the consumer."""
    partial = getattr(sent, "partial", None) if sent is not None else None
    builder = AssistantMessageBuilder.for_message(message)
    if partial is not None:
        for block in partial.content:
            if isinstance(block, TextContent):
                builder.add_text(block.text)
            elif isinstance(block, ThinkingContent):
                builder.add_thinking(block.thinking)
            else:
                builder.add_tool_call(id=block.id, name=block.name, arguments=block.arguments)
    out.attach(builder)


def _builder_of_sent(
    message: AssistantMessage, begun: int, last_chunks: Sequence[str]
) -> AssistantMessageBuilder:
    """A builder holding what a paced stream's consumer was sent: ``message``'s first
    ``begun`` blocks, the last of them up to ``last_chunks`` (a stream cancelled while it
    waited for room ends its message with that, not with what was built ahead)."""
    builder = AssistantMessageBuilder.for_message(message)
    blocks = message.content[:begun]
    for position, block in enumerate(blocks):
        last = position == len(blocks) - 1
        if isinstance(block, ToolCall):
            index = builder.add_tool_call(id=block.id, name=block.name)
            if not last:
                builder.set_arguments(index, block.arguments)
            continue
        text = "".join(last_chunks) if last else _block_text(block)
        if isinstance(block, TextContent):
            builder.add_text(text)
        else:
            builder.add_thinking(text)
    return builder


def _block_text(block: AssistantContentBlock) -> str:
    """The text ``block``'s deltas carry: its text, its thinking, or its arguments' JSON."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    return _json(block.arguments)


def _open_block(
    builder: AssistantMessageBuilder,
    block: AssistantContentBlock,
    snapshot: Callable[[], PartialAssistantMessage],
) -> tuple[int, DeltaEventType, AssistantMessageEvent]:
    """Add ``block`` to the builder: its index, its deltas' class, and its start event."""
    start: AssistantMessageEvent
    if isinstance(block, TextContent):
        index = builder.add_text()
        start = TextStartEvent(content_index=index, partial=snapshot())
        return index, TextDeltaEvent, start
    if isinstance(block, ThinkingContent):
        index = builder.add_thinking()
        start = ThinkingStartEvent(content_index=index, partial=snapshot())
        return index, ThinkingDeltaEvent, start
    index = builder.add_tool_call(id=block.id, name=block.name)
    start = ToolCallStartEvent(content_index=index, partial=snapshot())
    return index, ToolCallDeltaEvent, start


def _close_block(
    builder: AssistantMessageBuilder,
    block: AssistantContentBlock,
    index: int,
    text: str,
    snapshot: Callable[[], PartialAssistantMessage],
) -> AssistantMessageEvent:
    """The end event of block ``index``, its deltas all streamed."""
    end: AssistantMessageEvent
    if isinstance(block, TextContent):
        end = TextEndEvent(content_index=index, content=text, partial=snapshot())
    elif isinstance(block, ThinkingContent):
        end = ThinkingEndEvent(content_index=index, content=text, partial=snapshot())
    else:
        builder.set_arguments(index, block.arguments)
        end = ToolCallEndEvent(content_index=index, tool_call=block, partial=snapshot())
    return end


def _terminal_event(message: AssistantMessage) -> AssistantMessageEvent:
    stop_reason = message.stop_reason
    terminal: AssistantMessageEvent
    if stop_reason == "error" or stop_reason == "aborted":
        terminal = ErrorEvent(reason=stop_reason, error=message)
    else:
        terminal = DoneEvent(reason=stop_reason, message=message)
    return terminal


def register_faux_provider(
    *,
    api: str | None = None,
    provider: str = DEFAULT_PROVIDER,
    models: Sequence[FauxModelDefinition] | None = None,
    tokens_per_second: float | None = None,
    token_size: tuple[int, int] | None = None,
    yield_every: int = DEFAULT_YIELD_EVERY,
    registry: ProviderRegistry | None = None,
    seed: int | None = None,
) -> FauxProvider:
    """Register a scripted provider and return its handle.

    Args:
        api: the API id to register under; a fresh ``faux:...`` id by default, so several faux
            providers can coexist (as in pi).
        provider: the provider name models and messages carry.
        models: the models offered; one ``faux-1`` model by default.
        tokens_per_second: pace the stream (a chunk of n tokens waits n / tokens_per_second s);
            ``None`` streams as fast as the consumer reads.
        token_size: (min, max) tokens per chunk, each token 4 characters; pi's (3, 5) by default.
        yield_every: at unlimited speed, checkpoint after every ``yield_every`` chunks
            (`DEFAULT_YIELD_EVERY`; 1 is a scheduler pass per chunk); ``0``: no scheduler
            pass of its own, only when the consumer falls a buffer behind.
        registry: where to register; the default registry by default.
        seed: seeds the chunk-size choice for reproducible streams.
    """
    min_req, max_req = token_size if token_size is not None else DEFAULT_TOKEN_SIZE
    min_size = max(1, min(min_req, max_req))
    max_size = max(min_size, max_req)
    api = api if api is not None else f"{DEFAULT_API}:{secrets.token_hex(6)}"
    definitions = models or [FauxModelDefinition(id=DEFAULT_MODEL_ID, name=DEFAULT_MODEL_NAME)]
    built = [
        Model(
            id=d.id,
            name=d.name if d.name is not None else d.id,
            api=api,
            provider=provider,
            base_url=DEFAULT_BASE_URL,
            reasoning=d.reasoning,
            input=d.input,
            cost=d.cost,
            context_window=d.context_window,
            max_tokens=d.max_tokens,
        )
        for d in definitions
    ]
    return FauxProvider(
        api=api,
        provider=provider,
        models=built,
        token_size=(min_size, max_size),
        tokens_per_second=tokens_per_second,
        yield_every=yield_every,
        registry=registry or default_registry,
        seed=seed,
    )
