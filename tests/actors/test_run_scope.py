"""A run's cancel scope is its nursery's: an abort before the run's task starts still lands."""

from __future__ import annotations

import trio

from pitrio.actors import open_agent
from pitrio.actors._agent import _Run

from helpers import Recorder, assistant, make_faux


async def test_an_abort_before_the_scope_exists_cancels_it_when_bound() -> None:
    """cancel() before bind() marks the run aborted and cancels the scope it is bound to."""
    run = _Run(controller=None, prompts=None)  # type: ignore[arg-type]
    run.cancel()
    with trio.CancelScope() as scope:
        run.bind(scope)
        await trio.sleep_forever()
    assert run.aborted
    assert scope.cancelled_caught


async def test_a_run_whose_task_fails_ends_with_an_error_not_an_abort() -> None:
    """A hook that raises ends the run with stop reason "error" (the nursery's cancellation
    of its other tasks does not count as an abort)."""
    faux, registry = make_faux()
    faux.set_responses([assistant("never streamed")])

    async def explode(messages: object) -> object:
        raise ValueError("transform exploded")

    recorder = Recorder()
    async with open_agent(
        model=faux.get_model(), registry=registry, transform_context=explode
    ) as agent:
        agent.subscribe(recorder)
        await agent.prompt("go")
    failure = agent.messages[-1]
    assert failure.stop_reason == "error"  # type: ignore[union-attr]
    assert failure.error_message == "transform exploded"  # type: ignore[union-attr]
    assert recorder.types[-1] == "agent_end"
