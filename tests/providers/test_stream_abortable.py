"""``start_stream(..., abortable=False)``: a stream cancelled only with its starter's scope."""

from __future__ import annotations

import pytest
import trio

from pitrio._exceptions import UsageError
from pitrio.providers import (
    Context,
    ProviderRegistry,
    TextDeltaEvent,
    faux_assistant_message,
    register_faux_provider,
    start_stream,
)


async def test_a_stream_that_is_not_abortable_refuses_abort_and_still_streams() -> None:
    """abort() raises UsageError on such a stream, which then runs to its done event unharmed."""
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry)
    faux.set_responses([faux_assistant_message("hello there")])
    model = faux.get_model()
    assert model is not None
    async with trio.open_nursery() as nursery:
        events = start_stream(nursery, model, Context(), registry=registry, abortable=False)
        with pytest.raises(UsageError, match="no abort of its own"):
            events.abort()
        seen = [event.type async for event in events]
        result = await events.result()
    assert seen[-1] == "done"
    assert result.stop_reason == "stop"
    assert result.text() == "hello there"


async def test_cancelling_the_starters_scope_stops_a_stream_that_is_not_abortable() -> None:
    """Cancelling the nursery's scope mid-stream ends the provider task; the consumer's view
    finishes as ``aborted`` through finish_aborted, as an agent's cancelled run reads it."""
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry, yield_every=1)
    faux.set_responses([faux_assistant_message("x" * 10_000)])
    model = faux.get_model()
    assert model is not None
    deltas = 0
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            events = start_stream(nursery, model, Context(), registry=registry, abortable=False)
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    deltas += 1
                    if deltas == 3:
                        scope.cancel()
    assert scope.cancelled_caught
    assert not events.terminated  # the provider never reached its done event
    message = events.finish_aborted()
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert 3 <= len(message.text()) < 10_000
