"""``PITRIO_FAUX_TOKENS_PER_SECOND`` paces the CLI's faux provider."""

from __future__ import annotations

import json

import pytest
import trio

from pitrio.cli._faux_cli import (
    FAUX_SCRIPT_ENV,
    FAUX_SPEED_ENV,
    FauxScriptError,
    register_echo_faux,
)
from pitrio.providers import Context, ProviderRegistry, UserMessage, stream_simple

ANSWER = "0123456789abcdef"  # four deltas of four characters: four "tokens"


async def _seconds_to_stream(env: dict[str, str]) -> float:
    registry = ProviderRegistry()
    faux = register_echo_faux(registry, env)
    context = Context(messages=[UserMessage(content="go", timestamp=0)])
    start = trio.current_time()
    async with stream_simple(faux.get_model(), context, registry=registry) as events:
        async for _ in events:
            pass
        message = await events.result()
    assert [block.text for block in message.content] == [ANSWER]  # type: ignore[union-attr]
    return trio.current_time() - start


async def test_the_speed_variable_paces_the_stream(
    autojump_clock: trio.abc.Clock, tmp_path
) -> None:
    """Four tokens at two tokens per second take two (virtual) seconds; unset, no time at all."""
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([ANSWER, ANSWER]))
    assert await _seconds_to_stream({FAUX_SCRIPT_ENV: str(script), FAUX_SPEED_ENV: "2"}) == 2
    assert await _seconds_to_stream({FAUX_SCRIPT_ENV: str(script)}) == 0


@pytest.mark.parametrize("value", ["fast", "-1", "nan"])
def test_a_speed_that_is_not_a_rate_is_refused(value: str) -> None:
    """A value that is not a non-negative number names the variable in the error."""
    with pytest.raises(FauxScriptError) as caught:
        register_echo_faux(ProviderRegistry(), {FAUX_SPEED_ENV: value})
    assert caught.value.path == FAUX_SPEED_ENV
