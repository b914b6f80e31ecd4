"""A run: its scope is its nursery's (an early abort still lands); a stray early delta.

(A failing hook still ends a run with stop reason "error": tests/actors/test_agent.py.)
"""

from __future__ import annotations

from typing import Any

import trio

from pitrio.actors import open_agent
from pitrio.actors._agent import _Run
from pitrio.providers import (
    AssistantMessageBuilder,
    DoneEvent,
    Model,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
)
from pitrio.providers._stream import AssistantMessageEventStream

from helpers import Recorder, make_faux


async def test_an_abort_before_the_scope_exists_cancels_it_when_bound() -> None:
    """cancel() before bind() marks the run aborted and cancels the scope it is bound to."""
    run = _Run(controller=None, prompts=None)  # type: ignore[arg-type]
    run.cancel()
    with trio.CancelScope() as scope:
        run.bind(scope)
        await trio.sleep_forever()
    assert run.aborted
    assert scope.cancelled_caught


async def test_a_delta_before_the_start_event_is_not_delivered() -> None:
    """A provider that sends a text delta before its start event: that delta makes no
    message_update (nothing is streaming yet); the ones after the start do."""
    faux, registry = make_faux()
    model = faux.get_model()
    assert model is not None

    def early_delta(tasks: trio.Nursery, model: Model, context: Any, options: Any) -> Any:
        stream = AssistantMessageEventStream(model, abortable=False)

        async def produce() -> None:
            builder = AssistantMessageBuilder(
                api=model.api, provider=model.provider, model=model.id, timestamp=0
            )
            stream.attach(builder)
            await stream.emit(
                TextDeltaEvent(content_index=0, delta="early", partial=builder.snapshot())
            )
            await stream.emit(StartEvent(partial=builder.snapshot()))
            index = builder.add_text()
            await stream.emit(TextStartEvent(content_index=index, partial=builder.snapshot()))
            builder.chunk_appender(index)("late")
            await stream.emit(
                TextDeltaEvent(content_index=index, delta="late", partial=builder.snapshot())
            )
            await stream.emit(
                TextEndEvent(content_index=index, content="late", partial=builder.snapshot())
            )
            builder.update(stop_reason="stop")
            await stream.emit(DoneEvent(reason="stop", message=builder.build()))
            stream.end()

        tasks.start_soon(produce)
        return stream

    recorder = Recorder()
    async with open_agent(model=model, registry=registry, stream_fn=early_delta) as agent:
        agent.subscribe(recorder)
        await agent.prompt("go")
    deltas = [
        e.assistant_message_event.delta
        for e in recorder.of("message_update")
        if isinstance(e.assistant_message_event, TextDeltaEvent)
    ]
    assert deltas == ["late"]
    assert agent.messages[-1].text() == "late"  # type: ignore[union-attr]
