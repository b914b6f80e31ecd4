"""A server-requested delay (``retry-after``) reaches the failed message as a diagnostic."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import attrs
import pytest

from pitrio.providers import Context, StreamOptions, UserMessage, get_model
from pitrio.providers._api import stream_simple
from pitrio.providers._http import RETRY_AFTER_DIAGNOSTIC

from loopback import error_handler, serve

HI = Context(messages=[UserMessage(content="hi", timestamp=0)])

MODELS = {
    "openai-completions": ("openai", "gpt-4o-mini"),  # served over responses: api replaced
    "openai-responses": ("openai", "gpt-5"),
    "anthropic-messages": ("anthropic", "claude-sonnet-4-5"),
    "google-generative-ai": ("google", "gemini-2.5-flash"),
}


def retry_after_ms(diagnostics: list[dict[str, Any]] | None) -> int | None:
    for diagnostic in diagnostics or ():
        if diagnostic.get("type") == RETRY_AFTER_DIAGNOSTIC:
            value = diagnostic["details"]["retryAfterMs"]
            assert isinstance(value, int)
            return value
    return None


@pytest.mark.parametrize("api", sorted(MODELS))
@pytest.mark.parametrize(
    ("headers", "expected_ms"),
    [({"retry-after": "7"}, 7000), ({"retry-after-ms": "1500"}, 1500)],
)
async def test_every_api_carries_the_retry_after_of_an_error_status(
    api: str, headers: dict[str, str], expected_ms: int
) -> None:
    """A 429 with retry-after (seconds or ms) ends with an error that carries the delay."""
    provider, model_id = MODELS[api]
    async with serve(error_handler(429, {"error": {"message": "slow down"}}, headers)) as server:
        model = attrs.evolve(get_model(provider, model_id), base_url=server.url(), api=api)
        async with stream_simple(model, HI, StreamOptions(api_key="k")) as events:
            message = await events.result()
    assert message.stop_reason == "error"
    assert retry_after_ms(message.diagnostics) == expected_ms
    diagnostic = (message.diagnostics or [])[0]
    assert diagnostic["details"]["status"] == 429
    assert diagnostic["error"]["code"] == 429


async def test_an_http_date_becomes_the_delay_from_the_time_it_arrived() -> None:
    """retry-after as an HTTP date is converted to milliseconds when the response arrives."""
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    async with serve(error_handler(503, {"error": "busy"}, {"retry-after": when})) as server:
        model = attrs.evolve(
            get_model("openai", "gpt-4o-mini"), base_url=server.url(), api="openai-completions"
        )
        async with stream_simple(model, HI, StreamOptions(api_key="k")) as events:
            message = await events.result()
    delay = retry_after_ms(message.diagnostics)
    # Whole seconds in the header; the bounds hold however long the request took.
    assert delay is not None and 0 < delay <= 120_000


async def test_an_error_without_retry_after_has_no_diagnostic() -> None:
    """An error status without a requested delay adds no diagnostic."""
    async with serve(error_handler(500, {"error": "boom"})) as server:
        model = attrs.evolve(
            get_model("openai", "gpt-4o-mini"), base_url=server.url(), api="openai-completions"
        )
        async with stream_simple(model, HI, StreamOptions(api_key="k")) as events:
            message = await events.result()
    assert message.stop_reason == "error"
    assert message.diagnostics is None


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "soon"},
        {"retry-after": "nan"},
        {"retry-after": "-5"},
        {"retry-after": "inf"},
        {"retry-after-ms": "nan", "retry-after": "Thu, 99 Foo 2015 07:28:00 GMT"},
    ],
)
async def test_an_unreadable_retry_after_is_ignored(headers: dict[str, str]) -> None:
    """A retry-after that is neither a delay nor a date still ends with the status error."""
    async with serve(error_handler(429, {"error": "slow down"}, headers)) as server:
        model = attrs.evolve(
            get_model("openai", "gpt-4o-mini"), base_url=server.url(), api="openai-completions"
        )
        async with stream_simple(model, HI, StreamOptions(api_key="k")) as events:
            message = await events.result()
    assert message.stop_reason == "error"
    assert message.error_message is not None and message.error_message.startswith("429")
    assert message.diagnostics is None
