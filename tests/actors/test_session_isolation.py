"""A subscriber that raises, blocks or aborts in one session never touches another session's
answer: each session's events are handled in its own tasks, paced faux streams and HTTP
streams alike (the faux's shared pacing clock once ran one session's subscribers in another
session's task, and one session's abort ended the other's answer with an AssertionError)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from pitrio.actors import Agent, AgentEvent, MessageUpdateEvent, open_agent
from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxState,
    Model,
    ModelCost,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    faux_assistant_message,
    register_faux_provider,
)
from pitrio.providers.openai_completions._provider import register_openai_completions

from fixtures_openai_completions import chunk, frame, usage  # type: ignore[import-not-found]
from loopback import Request, ResponseWriter, serve  # type: ignore[import-not-found]

MISBEHAVIOURS = ["raise", "block", "abort"]
GOOD_TEXT = "".join(f"good{i:02d}" for i in range(24))
BAD_TEXT = "".join(f"bad{i:03d}" for i in range(24))
MISBEHAVE_ON = 3
"""The bad session's subscriber misbehaves on its answer's third text delta."""


def _user_text(context: Context) -> str:
    last = context.messages[-1]
    content = last.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _answer(context: Context, options: StreamOptions, state: FauxState, model: Model) -> Any:
    return faux_assistant_message(GOOD_TEXT if _user_text(context) == "good" else BAD_TEXT)


def _descends_from(task: trio.lowlevel.Task, ancestor: trio.lowlevel.Task) -> bool:
    current: trio.lowlevel.Task | None = task
    while current is not None:
        if current is ancestor:
            return True
        nursery = current.parent_nursery
        current = nursery.parent_task if nursery is not None else None
    return False


def _text_deltas(events: list[AgentEvent]) -> str:
    return "".join(
        event.assistant_message_event.delta
        for event in events
        if isinstance(event, MessageUpdateEvent)
        and event.assistant_message_event.type == "text_delta"
    )


async def _two_sessions(
    misbehaviour: str, agent_options: dict[str, Any]
) -> tuple[AssistantMessage, list[AgentEvent], AssistantMessage]:
    """Run a good and a bad session side by side, the bad one's subscriber misbehaving
    mid-stream; return the good session's last message and events, and the bad one's last
    message (a blocked bad session is aborted once the good one has finished). Every
    subscriber call is checked to run in a task of its own session."""
    good_events: list[AgentEvent] = []
    strays: list[tuple[str, str]] = []  # (session, event type) seen in a foreign task

    def check_own_task(session: str, top: trio.lowlevel.Task, event: AgentEvent) -> None:
        task = trio.lowlevel.current_task()
        # Its own session's tasks, and never a provider's (a producer's) task.
        if not _descends_from(task, top) or task.name.endswith("EventStream._run"):
            strays.append((session, event.type))

    ends: dict[str, AssistantMessage] = {}
    bad_agent: list[Agent] = []
    good_done = trio.Event()

    async def good() -> None:
        top = trio.lowlevel.current_task()

        def subscriber(event: AgentEvent) -> None:
            check_own_task("good", top, event)
            good_events.append(event)

        async with open_agent(**agent_options) as agent:
            agent.subscribe(subscriber)
            await agent.prompt("good")
            last = agent.messages[-1]
            assert isinstance(last, AssistantMessage)
            ends["good"] = last
        good_done.set()

    async def bad() -> None:
        top = trio.lowlevel.current_task()
        async with open_agent(**agent_options) as agent:
            bad_agent.append(agent)
            deltas = 0

            async def subscriber(event: AgentEvent) -> None:
                nonlocal deltas
                check_own_task("bad", top, event)
                if not (
                    isinstance(event, MessageUpdateEvent)
                    and event.assistant_message_event.type == "text_delta"
                ):
                    return
                deltas += 1
                if deltas != MISBEHAVE_ON:
                    return
                if misbehaviour == "raise":
                    raise RuntimeError("a broken subscriber")
                if misbehaviour == "abort":
                    agent.abort()
                    return
                await trio.sleep_forever()  # "block": until its own session is aborted

            agent.subscribe(subscriber)
            await agent.prompt("bad")
            last = agent.messages[-1]
            assert isinstance(last, AssistantMessage)
            ends["bad"] = last

    async with trio.open_nursery() as nursery:
        nursery.start_soon(good)
        nursery.start_soon(bad)
        await good_done.wait()
        if misbehaviour == "block":
            await trio.testing.wait_all_tasks_blocked()
            bad_agent[0].abort()
    assert strays == []
    return ends["good"], good_events, ends["bad"]


def _assert_good_intact(message: AssistantMessage, events: list[AgentEvent]) -> None:
    assert message.stop_reason == "stop"
    assert message.error_message is None
    assert message.content == (TextContent(text=GOOD_TEXT),)
    assert _text_deltas(events) == GOOD_TEXT
    assert [event.type for event in events[-3:]] == ["message_end", "turn_end", "agent_end"]


def _assert_bad_as_expected(misbehaviour: str, message: AssistantMessage) -> None:
    if misbehaviour == "raise":  # reported, never kills its own agent either
        assert message.stop_reason == "stop"
        assert message.content == (TextContent(text=BAD_TEXT),)
    else:
        assert message.stop_reason == "aborted"


@pytest.mark.parametrize("misbehaviour", MISBEHAVIOURS)
async def test_a_misbehaving_subscriber_leaves_another_paced_faux_session_intact(
    autojump_clock: trio.testing.MockClock, misbehaviour: str
) -> None:
    """Two agents stream paced faux answers (50 tokens/s, interleaved); the bad one's
    subscriber raises, blocks or aborts its run on its third delta; the good answer arrives
    whole, with every delta delivered to its subscriber and stopReason "stop"."""
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux", token_size=(1, 1), tokens_per_second=50, registry=registry
    )
    faux.set_responses([_answer, _answer])
    with trio.fail_after(60):
        message, events, bad = await _two_sessions(
            misbehaviour, {"model": faux.get_model(), "registry": registry}
        )
    _assert_good_intact(message, events)
    _assert_bad_as_expected(misbehaviour, bad)
    assert trio.current_time() >= len(GOOD_TEXT) // 4 / 50  # paced: one chunk per 20 ms


def _http_model(base_url: str) -> Model:
    return Model(
        id="gpt-4o-mini",
        name="GPT-4o mini",
        api="openai-completions",
        provider="openai",
        base_url=base_url,
        input=("text",),
        cost=ModelCost(input=0, output=0, cache_read=0, cache_write=0),
        context_window=128_000,
        max_tokens=16_384,
    )


def _answer_over_http() -> Callable[[Request, ResponseWriter], Any]:
    """Answer each request with its session's text, one SSE chunk per write and a scheduler
    pass between writes, so that the two sessions' streams interleave."""

    async def handle(request: Request, writer: ResponseWriter) -> None:
        content = request.json()["messages"][-1]["content"]
        if not isinstance(content, str):
            content = "".join(part.get("text", "") for part in content)
        text = GOOD_TEXT if content == "good" else BAD_TEXT
        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": text[i : i + 6]}) for i in range(0, len(text), 6)]
        chunks.append(chunk({}, finish_reason="stop"))
        chunks.append(chunk(choices=False, usage=usage(21, 9)))
        await writer.start()
        for piece in chunks:
            await writer.write(frame([piece], done=False))
            await trio.lowlevel.checkpoint()
        await writer.write(frame([]))
        await writer.end()

    return handle


@pytest.mark.parametrize("misbehaviour", MISBEHAVIOURS)
async def test_a_misbehaving_subscriber_leaves_another_http_session_intact(
    misbehaviour: str,
) -> None:
    """Two agents stream answers from one loopback openai-completions server at once; the
    bad one's subscriber raises, blocks or aborts its run on its third delta; the good
    answer arrives whole, with every delta delivered to its subscriber and stopReason
    "stop"."""
    registry = ProviderRegistry()
    register_openai_completions(registry)
    async with serve(_answer_over_http()) as server:
        message, events, bad = await _two_sessions(
            misbehaviour,
            {
                "model": _http_model(server.url("/v1")),
                "registry": registry,
                "get_api_key": lambda provider: "test-key",
            },
        )
    _assert_good_intact(message, events)
    _assert_bad_as_expected(misbehaviour, bad)
    assert len(server.requests) == 2
