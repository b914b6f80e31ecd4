"""The faux provider streams scripted responses exactly as pi's faux provider does."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import orjson
import pytest
import trio

from pitrio.codec import from_wire, to_wire
from pitrio.providers import (
    ApiProvider,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    FauxProvider,
    FauxState,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    Tool,
    ToolCallDeltaEvent,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
    start_stream,
    stream_simple,
)
from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.providers.faux import DEFAULT_YIELD_EVERY, serialize_context

from pi_data import PI_NOW, canonical, load_json, load_jsonl, normalise_now


@contextmanager
def after_each_step(callback: Callable[[], None], *, of: str) -> Iterator[None]:
    """Call ``callback`` after every step, while the block runs, of the calling task
    (``of="self"``) or of a task spawned in a nursery it opened (``of="children"``: a
    provider task started with ``start_stream``)."""
    me = trio.lowlevel.current_task()

    class Steps(trio.abc.Instrument):
        def after_task_step(self, task: trio.lowlevel.Task) -> None:
            if of == "self":
                if task is me:
                    callback()
            elif task.parent_nursery is not None and task.parent_nursery.parent_task is me:
                callback()

    instrument = Steps()
    trio.lowlevel.add_instrument(instrument)
    try:
        yield
    finally:
        trio.lowlevel.remove_instrument(instrument)


def as_a_task(faux: FauxProvider, registry: ProviderRegistry) -> Model:
    """A model whose API serves ``faux`` through a wrapper that keeps only its ``stream``."""
    faux_api = registry.resolve(faux.api)
    registry.register(ApiProvider(api="faux-as-a-task", stream=faux_api.stream))
    model = faux.get_model()
    assert model is not None
    return attrs.evolve(model, api="faux-as-a-task")


@pytest.fixture
def registry() -> ProviderRegistry:
    return ProviderRegistry()


@pytest.fixture
def faux(registry: ProviderRegistry) -> Iterator[FauxProvider]:
    provider = register_faux_provider(api="faux", token_size=(1, 1), registry=registry)
    yield provider
    provider.unregister()


def _echo_last_user(
    context: Context, options: StreamOptions, state: FauxState, model: Model
) -> AssistantMessage:
    """The Python twin of capture.mjs's ``echoLastUser`` factory."""
    last = next(m for m in reversed(context.messages) if m.role == "user")
    content = last.content
    text = (
        content
        if isinstance(content, str)
        else "\n".join(b.text for b in content if isinstance(b, TextContent))
    )
    return faux_assistant_message(
        f"echo: {text} (callCount={state.call_count}, model={model.id}, "
        f"session={options.session_id})",
        timestamp=1735689600000 + 500,
    )


FACTORIES = {"echoLastUser": _echo_last_user}


def _responses(script: dict[str, Any]) -> list[Any]:
    return [
        FACTORIES[r["factory"]] if "factory" in r else from_wire(AssistantMessage, r)
        for r in script["responses"]
    ]


def _options(data: dict[str, Any]) -> StreamOptions:
    return StreamOptions(
        session_id=data.get("sessionId"), cache_retention=data.get("cacheRetention")
    )


async def _collect(
    model: Model, context: Context, options: StreamOptions, registry: ProviderRegistry
) -> tuple[list[Any], AssistantMessage]:
    async with stream_simple(model, context, options, registry=registry) as events:
        collected = [to_wire(event) async for event in events]
        return collected, await events.result()


def _assert_same_stream(pi_lines: list[Any], ours: list[Any], result: AssistantMessage) -> None:
    *pi_events, pi_result = pi_lines
    ours = normalise_now(pi_events, ours)
    assert [e["type"] for e in ours] == [e["type"] for e in pi_events]
    for index, (mine, theirs) in enumerate(zip(ours, pi_events, strict=True)):
        assert canonical(mine) == canonical(theirs), f"event {index} ({theirs['type']}) differs"
    assert canonical(normalise_now(pi_result["result"], to_wire(result))) == canonical(
        pi_result["result"]
    )


SCRIPTS = [
    "text",
    "thinking_text",
    "two_tool_calls",
    "error",
    "empty_queue",
    "factory",
    "usage_estimate",
    "session_cache",
]


@pytest.mark.parametrize("script_name", SCRIPTS)
async def test_event_sequence_equals_pis(
    script_name: str, faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """With token_size 1..1 and no speed limit, the events equal pi's faux events one by one."""
    script = load_json(f"faux_{script_name}.input.json")
    model = from_wire(Model, script["model"])
    faux.set_responses(_responses(script))
    for request in script["requests"]:
        context = from_wire(Context, request["context"])
        ours, result = await _collect(model, context, _options(request["options"]), registry)
        pushed = request["output"].replace(".jsonl", ".pushed.jsonl")
        _assert_same_stream(load_jsonl(pushed), ours, result)
    assert faux.state.call_count == script["callCountAfter"]
    assert faux.pending_count == script["pendingResponsesAfter"]


async def test_abort_mid_stream_ends_with_aborted_message(registry: ProviderRegistry) -> None:
    """Aborting after the third text delta ends the stream with stopReason "aborted", as pi does."""
    # A checkpoint per chunk, as pi's microtask per chunk: pi's capture is a short answer that
    # the default provider would have finished (one burst) before the consumer read delta 3.
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry, yield_every=1)
    script = load_json("faux_abort.input.json")
    pi_events = load_jsonl("faux_abort.pushed.jsonl")[:-1]
    model = from_wire(Model, script["model"])
    faux.set_responses(_responses(script))
    context = from_wire(Context, script["requests"][0]["context"])
    seen: list[Any] = []
    deltas = ""
    async with stream_simple(model, context, registry=registry) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, TextDeltaEvent):
                deltas += event.delta
                if sum(isinstance(e, TextDeltaEvent) for e in seen) == 3:
                    events.abort()
        result = await events.result()
    # pi's consumer lagged its producer by two chunks; ours by at most the chunks already pushed.
    # Whatever the lag, the shape is pi's: start, text_start, deltas, then error/aborted.
    assert [e.type for e in seen[:2]] == ["start", "text_start"]
    assert all(e.type == "text_delta" for e in seen[2:-1])
    final = seen[-1]
    assert isinstance(final, ErrorEvent)
    assert final.reason == "aborted"
    assert result is final.error
    assert result.stop_reason == "aborted"
    assert result.error_message == pi_events[-1]["error"]["errorMessage"] == "Request was aborted"
    assert result.text() == deltas
    assert 3 <= len(seen) - 3 < 10
    assert to_wire(result.usage) == pi_events[-1]["error"]["usage"]


async def test_abort_before_start_yields_only_the_error(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """A stream aborted before it starts emits one aborted error event and nothing else."""
    faux.set_responses([faux_assistant_message("never sent")])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(), registry=registry) as events:
        events.abort()
        seen = [event async for event in events]
    assert [e.type for e in seen] == ["error"]
    assert seen[0].error.stop_reason == "aborted"


async def test_cancelling_the_consumer_stops_the_provider(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """Leaving the stream block early cancels the producer; no task is left running."""
    faux.set_responses([faux_assistant_message("x" * 100_000)])
    model = faux.get_model()
    assert model is not None
    with trio.move_on_after(10):
        async with stream_simple(model, Context(), registry=registry) as events:
            async for event in events:
                if event.type == "text_delta":
                    break
    # The nursery of `stream_simple` has exited: reaching here means its producer task ended.
    assert faux.pending_count == 0


async def test_factory_error_becomes_error_event(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """A factory that raises produces an error message carrying the exception's text."""

    def broken(*_: Any) -> AssistantMessage:
        raise RuntimeError("script exploded")

    faux.set_responses([broken])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(), registry=registry) as events:
        seen = [event async for event in events]
    assert [e.type for e in seen] == ["error"]
    assert seen[0].error.error_message == "script exploded"
    assert seen[0].error.content == ()


async def test_async_factory_is_awaited(faux: FauxProvider, registry: ProviderRegistry) -> None:
    """Response factories may be coroutines."""

    async def later(*_: Any) -> AssistantMessage:
        await trio.lowlevel.checkpoint()
        return faux_assistant_message("from a coroutine")

    faux.set_responses([later])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(), registry=registry) as events:
        async for _ in events:
            pass
        assert (await events.result()).text() == "from a coroutine"


async def test_tokens_per_second_paces_the_stream(
    autojump_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """At 50 tokens/s a 4-character chunk arrives every 20 ms (virtual time)."""
    faux = register_faux_provider(
        api="paced", token_size=(1, 1), tokens_per_second=50, registry=registry
    )
    faux.set_responses([faux_assistant_message("a" * 40)])
    model = faux.get_model()
    assert model is not None
    start = trio.current_time()
    async with stream_simple(model, Context(), registry=registry) as events:
        async for _ in events:
            pass
    assert trio.current_time() - start == pytest.approx(10 * 0.020)


@pytest.mark.parametrize("paced", [False, True])
async def test_an_answer_runs_as_the_streams_own_task_paced_or_not(
    autojump_clock: trio.testing.MockClock, registry: ProviderRegistry, paced: bool
) -> None:
    """The faux answers in the provider task start_stream spawns, like any provider (the
    response is taken when that task runs); a paced one sleeps between chunks in that task.
    Same events, paced on time."""
    faux = register_faux_provider(
        api="faux",
        token_size=(1, 1),
        tokens_per_second=1_000 if paced else None,
        registry=registry,
    )
    faux.set_responses([faux_assistant_message("abcd" * 10)])
    model = faux.get_model()
    assert model is not None
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        events = start_stream(nursery, model, Context(), registry=registry)
        assert len(nursery.child_tasks) == 1
        assert faux.pending_count == 1  # nothing ran yet
        types = [event.type async for event in events]
        assert trio.current_time() - start == pytest.approx(10 * 0.001 if paced else 0)
    assert faux.pending_count == 0
    assert types == ["start", "text_start"] + ["text_delta"] * 10 + ["text_end", "done"]


async def test_a_paced_answer_waits_for_room_in_a_slow_readers_buffer(
    autojump_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """Served through a wrapper that keeps only ``stream`` (as the CLI's credentials do), a
    paced answer whose reader is slower than the pace (a buffer of one) waits for room:
    every event arrives, in order."""
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), tokens_per_second=1_000, registry=registry
    )
    faux.set_responses([faux_assistant_message("abcd" * 10)])
    model = as_a_task(faux, registry)
    types: list[str] = []
    texts: list[str] = []
    async with trio.open_nursery() as nursery:
        events = start_stream(nursery, model, Context(), registry=registry, max_buffer=1)
        assert len(nursery.child_tasks) == 1
        async for event in events:
            types.append(event.type)
            if isinstance(event, TextDeltaEvent):
                texts.append(event.delta)
            await trio.sleep(0.005)  # five chunks' time: the buffer is full when they fall due
    assert types == ["start", "text_start"] + ["text_delta"] * 10 + ["text_end", "done"]
    assert "".join(texts) == "abcd" * 10


async def test_an_answer_aborted_from_another_task_ends_aborted(
    autojump_clock: trio.testing.MockClock, faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """abort() from a task that is not the reader ends the stream: result()
    returns the aborted message (with what was streamed) though nobody reads, and the reader
    then gets what was buffered, then the aborted error event, and nothing more."""
    faux.set_responses([faux_assistant_message("abcd" * 1_000)])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(), registry=registry) as events:
        first = [await events.__anext__() for _ in range(5)]  # start, text_start, 3 deltas

        async def abort_it() -> None:
            events.abort()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(abort_it)
        result = await events.result()
        rest = [event async for event in events]
    assert result.stop_reason == "aborted"
    deltas = [e for e in first + rest if isinstance(e, TextDeltaEvent)]
    assert result.text() == "".join(d.delta for d in deltas)
    assert 3 <= len(deltas) < 1_000
    assert isinstance(rest[-1], ErrorEvent) and rest[-1].error is result


async def test_abort_cancels_the_async_factory_an_answer_waits_for(
    autojump_clock: trio.testing.MockClock, faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """An answer waiting for its async factory is aborted: the factory is cancelled and the
    reader gets the aborted error event at once."""
    factory_cancelled: list[bool] = []

    async def never(*_: Any) -> AssistantMessage:
        try:
            await trio.sleep_forever()
        finally:
            factory_cancelled.append(True)
        raise AssertionError("unreachable")

    faux.set_responses([never])
    model = faux.get_model()
    assert model is not None
    with trio.fail_after(60):
        async with stream_simple(model, Context(), registry=registry) as events:

            async def abort_soon() -> None:
                await trio.sleep(1)
                events.abort()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(abort_soon)
                seen = [event async for event in events]
    assert factory_cancelled == [True]
    assert [e.type for e in seen] == ["error"]
    assert seen[0].error.stop_reason == "aborted"
    assert trio.current_time() == pytest.approx(1)


async def test_result_awaited_beside_the_reader_gets_the_answer_the_reader_reads(
    autojump_clock: trio.testing.MockClock, faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """A task awaiting result() while the reader reads (the answer first waits for its async
    factory): the factory's message reaches both, every event reaches the reader once, in
    order."""

    async def slow(*_: Any) -> AssistantMessage:
        await trio.sleep(1)
        return faux_assistant_message("abcd" * 300)

    faux.set_responses([slow])
    model = faux.get_model()
    assert model is not None
    results: list[AssistantMessage] = []
    async with stream_simple(model, Context(), registry=registry) as events:

        async def wait_for_result() -> None:
            results.append(await events.result())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_result)
            seen = [event async for event in events]
    deltas = [e.delta for e in seen if isinstance(e, TextDeltaEvent)]
    assert "".join(deltas) == "abcd" * 300
    assert seen[-1].type == "done"
    assert results == [seen[-1].message]
    assert results[0].text() == "abcd" * 300


async def test_every_call_passes_through_the_scheduler_an_empty_scripts_too(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """A call that finds no scripted response still yields to the scheduler once before its
    error event, as every call does: its provider task runs in two steps."""
    model = faux.get_model()
    assert model is not None
    steps = 0

    def count() -> None:
        nonlocal steps
        steps += 1

    with after_each_step(count, of="children"):
        async with trio.open_nursery() as nursery:
            events = start_stream(nursery, model, Context(), registry=registry)
            seen = [event async for event in events]
    assert steps == 2
    assert [e.type for e in seen] == ["error"]
    assert seen[0].error.error_message == "No more faux responses queued"


@pytest.mark.parametrize(("chunks", "passes"), [(1, 1), (7, 1), (8, 2), (15, 2), (16, 3), (20, 3)])
async def test_a_call_passes_through_the_scheduler_before_its_start_and_between_runs(
    registry: ProviderRegistry, chunks: int, passes: int
) -> None:
    """An answer passes through the scheduler before its start, then between its runs
    (yield_every=8: before chunk 8, 16, ...). Each pass ends a step of the provider's task
    (its last step runs to the end)."""
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry, yield_every=8)
    model = faux.get_model()
    assert model is not None
    faux.set_responses([faux_assistant_message("abcd" * chunks)])
    steps = 0

    def count() -> None:
        nonlocal steps
        steps += 1

    with after_each_step(count, of="children"):
        async with trio.open_nursery() as nursery:
            events = start_stream(nursery, model, Context(messages=()), registry=registry)
            await events.result()  # read nothing until the provider is done
    seen = [event async for event in events]
    assert sum(isinstance(e, TextDeltaEvent) for e in seen) == chunks
    assert steps == passes + 1


def test_helpers_build_pi_shaped_messages() -> None:
    """faux_text/faux_thinking/faux_tool_call/faux_assistant_message match pi's helpers."""
    sample = load_json("wire_samples.json")["assistant_message_faux_helper"]
    message = faux_assistant_message(
        sample["content"][0]["text"],
        response_id=sample["responseId"],
        timestamp=sample["timestamp"],
    )
    assert canonical(to_wire(message)) == canonical(sample)
    call = faux_tool_call("read", {"path": "a"})
    assert call.id.startswith("tool:")
    assert to_wire(faux_thinking("hm")) == {"type": "thinking", "thinking": "hm"}
    assert to_wire(faux_text("hi")) == {"type": "text", "text": "hi"}


async def test_random_token_sizes_cover_the_text(registry: ProviderRegistry) -> None:
    """With pi's default 3..5 token chunks, every chunk is 12-20 chars and they join to the text."""
    faux = register_faux_provider(api="default", registry=registry, seed=7)
    text = "lorem ipsum " * 50
    faux.set_responses([faux_assistant_message([faux_thinking("t" * 30), faux_text(text)])])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(), registry=registry) as events:
        deltas = [e.delta async for e in events if isinstance(e, TextDeltaEvent)]
        result = await events.result()
    assert "".join(deltas) == text == result.text()
    assert all(12 <= len(d) <= 20 for d in deltas[:-1])
    assert isinstance(result, AssistantMessage)
    assert not isinstance(result, DoneEvent)


def test_pi_now_constant_is_documented() -> None:
    """The Date.now() stand-in the capture used is the one these tests normalise."""
    assert PI_NOW == 1767225600000
    assert AssistantMessageEvent is not None


def test_usage_estimate_encodes_the_tools_of_each_request() -> None:
    """The tools part of the usage estimate is the JSON of the request's own tool definitions,
    also when definitions were encoded before and when a request brings new ones."""

    def tool(name: str) -> Tool:
        return Tool(name=name, description="d", parameters={"type": "object", "x": [1, "é"]})

    def expected(tools: list[Tool]) -> str:
        return "tools:" + orjson.dumps(PROVIDERS_CODEC.to_wire(tools)).decode()

    alpha, beta = tool("alpha"), tool("beta")
    for tools in ([alpha], [alpha], [alpha, beta], [beta, alpha], [tool("gamma"), beta]):
        context = Context(system_prompt="s", messages=[], tools=tuple(tools))
        assert serialize_context(context).endswith(expected(tools))


async def test_default_stream_is_aborted_mid_burst(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """With the default batching a long answer aborted after its third delta still ends aborted,
    long before its last chunk."""
    text = "abcd" * 2_000
    faux.set_responses([faux_assistant_message(text)])
    model = faux.get_model()
    assert model is not None
    deltas = 0
    async with stream_simple(model, Context(messages=()), registry=registry) as events:
        async for event in events:
            if isinstance(event, TextDeltaEvent):
                deltas += 1
                if deltas == 3:
                    events.abort()
        result = await events.result()
    assert result.stop_reason == "aborted"
    assert deltas < 2_000
    assert "".join(b.text for b in result.content if isinstance(b, TextContent)) != text


async def test_unlimited_stream_lets_other_tasks_run_every_few_chunks(
    faux: FauxProvider, registry: ProviderRegistry
) -> None:
    """An unlimited stream checkpoints every DEFAULT_YIELD_EVERY chunks, so a task beside it runs
    at least once per three such bursts (pi's microtasks would starve it until the end)."""
    faux.set_responses([faux_assistant_message("abcd" * 5_000)])
    model = faux.get_model()
    assert model is not None
    received = 0
    seen_at: list[int] = []
    done = False

    async def ticker() -> None:
        while not done:
            seen_at.append(received)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await trio.lowlevel.checkpoint()
        async with stream_simple(model, Context(messages=()), registry=registry) as events:
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    received += 1
        done = True
    assert received == 5_000
    gaps = [b - a for a, b in itertools.pairwise(seen_at)]
    # Trio may order a batch's tasks either way: a burst, the consumer's drain of the one
    # before it and one more, at most, between two runs of the ticker.
    assert max(gaps) <= 3 * DEFAULT_YIELD_EVERY


@pytest.mark.parametrize("yield_every", [0, 1, 7, DEFAULT_YIELD_EVERY])
@pytest.mark.parametrize("max_buffer", [0, 1, 5, 200])
async def test_batched_deltas_arrive_whole_and_in_order_for_any_buffer(
    registry: ProviderRegistry, yield_every: int, max_buffer: int
) -> None:
    """The unlimited stream hands its deltas over in runs: a consumer that reads slowly,
    through a buffer smaller or larger than a run, still gets every delta once, in order,
    each with the partial message as it was at that delta."""
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), registry=registry, yield_every=yield_every
    )
    text = "".join(f"{i:04d}" for i in range(300))  # 300 deltas of 4 characters
    faux.set_responses([faux_assistant_message(text)])
    model = faux.get_model()
    assert model is not None
    deltas: list[str] = []
    partial_texts: list[str] = []
    async with trio.open_nursery() as nursery:
        events = start_stream(
            nursery, model, Context(messages=()), registry=registry, max_buffer=max_buffer
        )
        async for event in events:
            if isinstance(event, TextDeltaEvent):
                deltas.append(event.delta)
                block = event.partial.content[0]
                assert isinstance(block, TextContent)
                partial_texts.append(block.text)
                if len(deltas) % 3 == 0:
                    await trio.lowlevel.checkpoint()  # a slow reader: the producer waits
    assert deltas == [f"{i:04d}" for i in range(300)]
    assert partial_texts == ["".join(deltas[: i + 1]) for i in range(300)]
    assert (await events.result()).content == (TextContent(text=text),)


async def test_a_burst_larger_than_the_buffer_goes_over_a_buffer_at_a_time(
    registry: ProviderRegistry,
) -> None:
    """A burst the consumer's buffer cannot hold (yield_every above the buffer size) goes over
    a buffer's worth at a time: the provider waits for room, then hands over as much as fits
    at once; a scheduler step of the provider per buffer's worth, not one per delta."""
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), registry=registry, yield_every=1000
    )
    model = faux.get_model()
    assert model is not None
    text = "".join(f"{i:04d}" for i in range(400))  # 400 deltas, one burst
    faux.set_responses([faux_assistant_message(text)])
    steps = 0
    most_buffered = 0
    events: Any = None

    def count() -> None:
        nonlocal steps, most_buffered
        steps += 1
        if events is not None:
            most_buffered = max(most_buffered, events.statistics().buffered)

    deltas: list[str] = []
    with after_each_step(count, of="children"):
        async with trio.open_nursery() as nursery:
            events = start_stream(
                nursery, model, Context(messages=()), registry=registry, max_buffer=16
            )
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    deltas.append(event.delta)
    assert deltas == [f"{i:04d}" for i in range(400)]
    # 400 deltas through 16 places: ~25 hand-overs; one per delta would be ~385 steps.
    assert 400 // (16 + 1) <= steps <= 2 * 400 // 16 + 10  # a run fills it, one more waits
    assert most_buffered <= 16 + 3  # a run's deltas, its block's start and end, the done


@pytest.mark.parametrize("yield_every", [1, 2, 7])
async def test_the_unlimited_stream_checkpoints_before_every_yield_every_th_chunk(
    registry: ProviderRegistry, yield_every: int
) -> None:
    """At unlimited speed the faux yields to the scheduler before chunk k, k = yield_every,
    2 * yield_every, ... counted across the whole answer (thinking, then text here), and at
    no other chunk (and before its start): each step of the provider's task, as a Trio
    instrument sees by the events buffered at its end, stops just before such a chunk, the
    last one after the whole answer."""
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), registry=registry, yield_every=yield_every
    )
    model = faux.get_model()
    assert model is not None
    thinking = "".join(f"t{i:03d}" for i in range(20))
    text = "".join(f"x{i:03d}" for i in range(30))
    faux.set_responses([faux_assistant_message([faux_thinking(thinking), faux_text(text)])])
    pushed_by_step: list[int] = []  # events buffered so far, after each step
    events: Any = None

    def record() -> None:
        if events is not None:
            pushed_by_step.append(events.statistics().buffered)

    with after_each_step(record, of="children"):
        async with trio.open_nursery() as nursery:
            events = start_stream(
                nursery, model, Context(messages=()), registry=registry, max_buffer=500
            )
            await events.result()  # read nothing until the provider is done
    order = [e async for e in events]
    assert len(order) == 56  # start, 2 x (block start, block end), 50 deltas, done
    chunk_number = list(
        itertools.accumulate(isinstance(e, (ThinkingDeltaEvent, TextDeltaEvent)) for e in order)
    )
    # Where each step stopped, as the number of chunks built by then (the last: all of them).
    stopped_after = [chunk_number[n - 1] for n in pushed_by_step if n]
    checkpoints = [k for k in range(1, 51) if k % yield_every == 0]
    assert stopped_after[: len(checkpoints) + 1] == [k - 1 for k in checkpoints] + [50]
    assert set(stopped_after[len(checkpoints) :]) == {50}  # then only the consumer's own


@pytest.mark.parametrize(
    "block",
    [faux_text("abcd" * 5), faux_thinking("efgh" * 5), faux_tool_call("echo", {"text": "hi"})],
    ids=["text", "thinking", "tool_call"],
)
async def test_deltas_equal_the_constructed_ones(registry: ProviderRegistry, block: Any) -> None:
    """The unlimited-speed loop's deltas are each the frozen event the class's own
    constructor makes from the same values, every field set."""
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry)
    faux.set_responses([faux_assistant_message(block)])
    model = faux.get_model()
    assert model is not None
    async with stream_simple(model, Context(messages=()), registry=registry) as events:
        seen = [event async for event in events]
    deltas = [e for e in seen if e.type.endswith("_delta")]
    assert len(deltas) > 1
    for event in deltas:
        cls = type(event)
        assert cls in (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
        rebuilt = cls(content_index=event.content_index, delta=event.delta, partial=event.partial)
        assert event == rebuilt
        assert [getattr(event, f.name) for f in attrs.fields(cls)] == [
            getattr(rebuilt, f.name) for f in attrs.fields(cls)
        ]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.delta = "changed"


async def test_concurrent_paced_streams_each_keep_their_pace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Fifty faux streams at 50 tokens/s each get a 4-character delta every 20 ms."""
    registry = ProviderRegistry()
    faux = register_faux_provider(token_size=(1, 1), tokens_per_second=50, registry=registry)
    faux.set_responses([faux_assistant_message("abcd" * 10) for _ in range(50)])
    model = faux.get_model()
    assert model is not None
    times: list[list[float]] = []

    async def one() -> None:
        stamps: list[float] = []
        async with stream_simple(model, Context(), registry=registry) as events:
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    stamps.append(trio.current_time())
        times.append(stamps)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(one)
    expected = [pytest.approx(start + 0.02 * (k + 1)) for k in range(10)]
    assert times == [expected] * 50


async def test_a_paced_answer_woken_late_sends_what_is_due_and_ends_on_time(
    autojump_clock: trio.testing.MockClock, registry: ProviderRegistry
) -> None:
    """Each delta is due at a time counted from the answer's start, not a sleep after the
    one before: a provider held back (here by a reader that stalls once, with a buffer of
    one) sends every delta already due as soon as it can, and the answer still ends when its
    last delta is due (10 ms for ten 1 ms deltas), not 5 ms later."""
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), tokens_per_second=1_000, registry=registry
    )
    faux.set_responses([faux_assistant_message("abcd" * 10)])
    model = faux.get_model()
    assert model is not None
    start = trio.current_time()
    stamps: list[float] = []
    async with trio.open_nursery() as nursery:
        events = start_stream(nursery, model, Context(), registry=registry, max_buffer=1)
        async for event in events:
            if isinstance(event, TextDeltaEvent):
                stamps.append(round((trio.current_time() - start) * 1000, 6))
                if len(stamps) == 1:
                    await trio.sleep(0.005)
    assert stamps == [1, 6, 6, 6, 6, 6, 7, 8, 9, 10]


@pytest.mark.parametrize("paced", [False, True])
async def test_an_answer_aborted_while_its_reader_lags_ends_with_what_the_reader_got(
    autojump_clock: trio.testing.MockClock, registry: ProviderRegistry, paced: bool
) -> None:
    """A stream aborted while its provider waits for room in a lagging reader's buffer (one
    place) ends with an aborted message whose text is exactly the deltas the reader gets,
    not the chunk the provider had made and could not hand over."""
    faux = register_faux_provider(
        api="faux",
        token_size=(1, 1),
        tokens_per_second=1_000 if paced else None,
        registry=registry,
        yield_every=1_000,
    )
    faux.set_responses([faux_assistant_message("abcd" * 50)])
    model = faux.get_model()
    assert model is not None
    seen: list[Any] = []
    async with trio.open_nursery() as nursery:
        events = start_stream(nursery, model, Context(), registry=registry, max_buffer=1)
        async for event in events:
            seen.append(event)
            if sum(isinstance(e, TextDeltaEvent) for e in seen) == 3:
                await trio.sleep(0.01)  # the provider fills the buffer and waits for room
                events.abort()
    result = await events.result()
    assert result.stop_reason == "aborted"
    deltas = "".join(e.delta for e in seen if isinstance(e, TextDeltaEvent))
    assert result.text() == deltas
    assert 3 <= len(deltas) // 4 < 50
    assert isinstance(seen[-1], ErrorEvent) and seen[-1].error is result
