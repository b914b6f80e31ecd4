"""What a paced run keeps alive between two tokens.

With thousands of paced sessions every object a waiting session still references is walked and
promoted by CPython's cyclic collector, and counts towards its next full pass (see
docs/architecture.md, "Performance"). Once every subscriber has seen a streamed delta, nothing in
the runtime may hold on to it while the stream waits for the next one.
"""

from __future__ import annotations

import sys
from typing import Any

import trio
import trio.testing

from pitrio.actors import MessageUpdateEvent, open_agent
from pitrio.providers import TextDeltaEvent

from helpers import assistant, make_faux

TPS = 10.0
"""Tokens per second: a one-token delta every 0.1 virtual seconds."""


async def test_a_delivered_delta_is_not_kept_while_the_stream_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    faux, registry = make_faux(tokens_per_second=TPS)
    faux.set_responses([assistant("abcd" * 8)])
    # Held here, strongly: what else holds a delta shows in its reference count.
    delivered: list[Any] = []
    arrived = trio.Event()

    def listener(event: Any) -> None:
        nonlocal arrived
        if type(event) is MessageUpdateEvent and type(event.assistant_message_event) is (
            TextDeltaEvent
        ):
            delivered.append(event.assistant_message_event)
            arrived.set()

    checked = 0
    async with open_agent(model=faux.get_model(), registry=registry) as agent:
        agent.subscribe(listener)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "talk")
            while checked < 4:
                await arrived.wait()
                arrived = trio.Event()
                # Halfway to the next delta: the provider and the loop are both waiting.
                await trio.sleep(0.5 / TPS)
                assert agent.is_streaming
                # Two references: the list's and getrefcount's argument (counted outside the
                # assert, whose rewriting by pytest keeps one more).
                references = sys.getrefcount(delivered[-1])
                assert references == 2, "the last delta outlived its delivery"
                checked += 1
    assert len(delivered) == 8
