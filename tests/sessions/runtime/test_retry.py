"""Auto-retry of transient errors (seed 002 s.5.8): the pattern, exponential backoff from the
settings, pi's auto_retry_start/end events, the failed response kept in the session but not in
the context, and abort during the backoff. Time is virtual (autojump clock)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
import trio.testing

from pitrio.codec import to_wire
from pitrio.providers import AssistantMessage, default_registry, faux_assistant_message, get_model
from pitrio.sessions import SessionMessageEntry
from pitrio.sessions.runtime._retry import (
    PI_RETRYABLE_ERROR_PATTERN,
    RETRY_CANCELLED,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    Retry,
    is_retryable_error,
    requested_delay_ms,
    retry_delay_ms,
)
from pitrio.sessions.settings._settings import RetrySettings, SettingsManager

import fixtures_openai_completions as openai_fx
from loopback import error_handler, sequence_handler, serve, sse_handler
from session_helpers import Events, fail, make_faux, open_session, reply

FAST = {"retry": {"baseDelayMs": 1000}}


def error(text: str, retry_after_ms: int | None = None) -> AssistantMessage:
    message = faux_assistant_message([], stop_reason="error", error_message=text)
    if retry_after_ms is None:
        return message
    diagnostic = {
        "type": "retry_after",
        "timestamp": 0,
        "details": {"status": 429, "retryAfterMs": retry_after_ms},
    }
    return attrs.evolve(message, diagnostics=[diagnostic])


@pytest.mark.parametrize(
    "text",
    [
        "overloaded_error",
        "Rate limit reached",
        "429 Too Many Requests",
        "HTTP 500 Internal Server Error",
        "502 Bad Gateway",
        "service unavailable",
        "server error",
        "connection refused",
        "other side closed",
        "fetch failed",
        "upstream connect error or disconnect/reset before headers",
        "terminated",
        "Server requested retry delay of 90s",
    ],
)
def test_transient_errors_match_the_seed_pattern(text: str) -> None:
    """The seed's pattern recognises overload, rate limits, 5xx and connection failures."""
    assert is_retryable_error(error(text))


def test_other_errors_and_overflow_are_not_retried() -> None:
    """Auth errors, overflow (compaction handles it) and non-errors are not retryable."""
    assert not is_retryable_error(error("401 invalid api key"))
    assert not is_retryable_error(error("prompt is too long: 300000 tokens > 200000 maximum"))
    assert not is_retryable_error(faux_assistant_message("429"))
    assert not is_retryable_error(error(""))
    # pi 0.73.1's wider pattern is available as an option.
    assert not is_retryable_error(error("socket hang up"))
    assert is_retryable_error(error("socket hang up"), pattern=PI_RETRYABLE_ERROR_PATTERN)


async def test_backoff_doubles_from_the_base_delay(autojump_clock: trio.testing.MockClock) -> None:
    """Attempt n waits baseDelayMs * 2^(n-1); past maxRetries the sequence ends in failure."""
    events: list[object] = []

    async def emit(event: object) -> None:
        events.append(event)

    retry = Retry(lambda: RetrySettings(max_retries=3, base_delay_ms=500), emit)
    failed = error("503 overloaded")
    waited = []
    for _ in range(3):
        delay = await retry.schedule(failed)
        assert delay is not None
        before = trio.current_time()
        assert await retry.wait(delay)
        waited.append(trio.current_time() - before)
    assert waited == [0.5, 1.0, 2.0]
    assert await retry.schedule(failed) is None
    assert [to_wire(e) for e in events] == [
        {
            "type": "auto_retry_start",
            "attempt": 1,
            "maxAttempts": 3,
            "delayMs": 500,
            "errorMessage": "503 overloaded",
        },
        {
            "type": "auto_retry_start",
            "attempt": 2,
            "maxAttempts": 3,
            "delayMs": 1000,
            "errorMessage": "503 overloaded",
        },
        {
            "type": "auto_retry_start",
            "attempt": 3,
            "maxAttempts": 3,
            "delayMs": 2000,
            "errorMessage": "503 overloaded",
        },
        {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "503 overloaded"},
    ]
    assert retry.attempt == 0


async def test_a_session_retries_then_succeeds(autojump_clock: trio.testing.MockClock) -> None:
    """Two transient errors, then an answer: two auto_retry_start, one auto_retry_end success;
    the errors are in the session file's entries but not in the agent's context."""
    faux, registry = make_faux()
    faux.set_responses([fail("429 rate limit"), fail("503 service unavailable"), reply("finally")])
    async with open_session(faux, registry, settings=FAST) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hi")
        assert events.wire("auto_retry_start") == [
            {
                "type": "auto_retry_start",
                "attempt": 1,
                "maxAttempts": 3,
                "delayMs": 1000,
                "errorMessage": "429 rate limit",
            },
            {
                "type": "auto_retry_start",
                "attempt": 2,
                "maxAttempts": 3,
                "delayMs": 2000,
                "errorMessage": "503 service unavailable",
            },
        ]
        assert events.wire("auto_retry_end") == [
            {"type": "auto_retry_end", "success": True, "attempt": 2}
        ]
        # Each retry is a new run that continues from the user message.
        assert events.types.count("agent_start") == 3
        end = events.types.index("auto_retry_end")
        assert events.types[end - 1] == "message_end" and events.types[end + 1] == "turn_end"
        context = [m for m in session.messages if isinstance(m, AssistantMessage)]
        assert [m.stop_reason for m in context] == ["stop"]
        saved = [
            e.message.stop_reason
            for e in session.session_manager.get_entries()
            if isinstance(e, SessionMessageEntry) and isinstance(e.message, AssistantMessage)
        ]
        assert saved == ["error", "error", "stop"]
        assert session.retry_attempt == 0


async def test_retries_run_out(autojump_clock: trio.testing.MockClock) -> None:
    """After maxRetries failed retries, auto_retry_end reports failure with the last error."""
    faux, registry = make_faux()
    faux.set_responses([fail(f"overloaded {i}") for i in range(3)])
    async with open_session(
        faux, registry, settings={"retry": {"maxRetries": 2, "baseDelayMs": 10}}
    ) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("hi")
        assert [e.attempt for e in events.of("auto_retry_start")] == [1, 2]
        assert events.wire("auto_retry_end") == [
            {"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "overloaded 2"}
        ]
        assert faux.state.call_count == 3
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage) and last.error_message == "overloaded 2"


async def test_abort_during_backoff_ends_the_retry(autojump_clock: trio.testing.MockClock) -> None:
    """abort() while waiting to retry: auto_retry_end success false "Retry cancelled", prompt
    returns, and no further request is made."""
    faux, registry = make_faux()
    faux.set_responses([fail("529 overloaded"), reply("never sent")])
    async with open_session(faux, registry) as session:
        events = Events()
        session.subscribe(events)
        started = trio.Event()

        def on_start(event: object) -> None:
            if isinstance(event, AutoRetryStartEvent):
                started.set()

        session.subscribe(on_start)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "hi")
            await started.wait()
            assert session.is_retrying and session.is_streaming
            await session.abort()
            assert not session.is_streaming
        assert events.wire("auto_retry_end") == [
            {
                "type": "auto_retry_end",
                "success": False,
                "attempt": 1,
                "finalError": RETRY_CANCELLED,
            }
        ]
        assert faux.state.call_count == 1
        assert faux.pending_count == 1
        assert session.retry_attempt == 0
        assert not session.is_retrying


async def test_retry_disabled_or_permanent_errors_end_the_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With retry disabled, or for a non-transient error, the first failure is final."""
    faux, registry = make_faux()
    faux.set_responses([fail("429 rate limit"), fail("401 unauthorized")])
    async with open_session(faux, registry, settings={"retry": {"enabled": False}}) as session:
        events = Events()
        session.subscribe(events)
        await session.prompt("one")
        await session.set_auto_retry_enabled(True)
        assert session.auto_retry_enabled
        await session.prompt("two")
        assert events.of("auto_retry_start") == events.of("auto_retry_end") == []
        assert faux.state.call_count == 2


async def test_a_retry_schedule_then_cancel_before_waiting_cancels_the_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """cancel() between schedule and wait makes the wait return at once, reporting the cancel."""
    events: list[object] = []

    async def emit(event: object) -> None:
        events.append(event)

    retry = Retry(lambda: RetrySettings(base_delay_ms=10**9), emit)
    delay = await retry.schedule(error("overloaded"))
    assert delay is not None
    retry.cancel()
    with trio.fail_after(1):
        assert not await retry.wait(delay)
    assert isinstance(events[-1], AutoRetryEndEvent) and events[-1].final_error == RETRY_CANCELLED


async def test_the_provider_gets_the_max_retry_delay_from_the_settings() -> None:
    """retry.provider.maxRetryDelayMs (legacy retry.maxDelayMs) reaches every provider request,
    which then fails rather than wait longer than that for a server-requested delay."""
    faux, registry = make_faux()
    seen: list[object] = []

    def respond(context: object, options: object, *_: object) -> AssistantMessage:
        seen.append(getattr(options, "max_retry_delay_ms", None))
        return faux_assistant_message("ok")

    faux.set_responses([respond, respond])
    async with open_session(faux, registry, settings={"retry": {"maxDelayMs": 1234}}) as session:
        await session.prompt("hi")
    async with open_session(faux, registry) as session:
        await session.prompt("hi")
    assert seen == [1234, 60000]


# --------------------------------------------------------------------------- retry-after


def test_a_server_requested_delay_replaces_the_backoff_up_to_the_cap() -> None:
    """retry-after sets the delay, capped by maxRetryDelayMs (0: no cap); else the backoff."""
    settings = RetrySettings(base_delay_ms=1000, max_delay_ms=30_000)
    assert retry_delay_ms(settings, 3) == 4000
    assert retry_delay_ms(settings, 3, 7000) == 7000
    assert retry_delay_ms(settings, 1, 0) == 0
    assert retry_delay_ms(settings, 1, 3_600_000) == 30_000
    assert retry_delay_ms(attrs.evolve(settings, max_delay_ms=0), 1, 3_600_000) == 3_600_000


def test_the_requested_delay_is_read_from_the_retry_after_diagnostic() -> None:
    """Only a well-formed retry_after diagnostic counts as a server-requested delay."""
    assert requested_delay_ms(error("429 slow down", retry_after_ms=7000)) == 7000
    assert requested_delay_ms(error("429 slow down")) is None
    odd: list[Any] = [
        {"type": "retry_after", "details": {"retryAfterMs": "7000"}},
        {"type": "retry_after", "details": {"retryAfterMs": -1}},
        {"type": "retry_after"},
        {"type": "provider_transport_failure", "details": {"retryAfterMs": 5}},
        "not a dict",
    ]
    for diagnostic in odd:
        message = attrs.evolve(error("429"), diagnostics=[diagnostic])
        assert requested_delay_ms(message) is None, diagnostic


def test_the_cap_comes_from_the_provider_retry_setting_and_its_legacy_name() -> None:
    """RetrySettings.max_delay_ms is retry.provider.maxRetryDelayMs, legacy retry.maxDelayMs."""
    assert SettingsManager.in_memory().retry_settings().max_delay_ms == 60_000
    legacy = SettingsManager.in_memory({"retry": {"maxDelayMs": 5000}})
    assert legacy.retry_settings().max_delay_ms == 5000
    current = SettingsManager.in_memory({"retry": {"provider": {"maxRetryDelayMs": 0}}})
    assert current.retry_settings().max_delay_ms == 0


async def test_the_session_waits_as_long_as_the_server_asked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A 429 with retry-after: 7 over real HTTP makes the session wait 7 s, not the 2 s backoff."""
    handler = sequence_handler(
        error_handler(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "7"}),
        sse_handler(openai_fx.text_stream("after the wait")),
    )
    async with serve(handler) as server:
        model = attrs.evolve(
            get_model("openai", "gpt-4o-mini"), base_url=server.url(), api="openai-completions"
        )
        faux, _ = make_faux()
        async with open_session(
            faux,
            default_registry,
            model=model,
            models=[model],
            settings={"retry": {"baseDelayMs": 2000}},
            get_api_key=lambda *_: "k",
        ) as session:
            events = Events()
            session.subscribe(events)
            start = trio.current_time()
            await session.prompt("hi")
            waited = trio.current_time() - start
    [announced] = events.of("auto_retry_start")
    assert announced.delay_ms == 7000
    assert 7 <= waited < 8
    assert len(server.requests) == 2
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text() == "after the wait"


async def test_a_long_server_delay_is_capped_by_the_settings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A requested delay longer than maxRetryDelayMs waits the cap, then retries."""
    faux, registry = make_faux()

    def too_long(*_: Any) -> AssistantMessage:
        return error("429 quota exceeded", retry_after_ms=5 * 3600 * 1000)

    faux.set_responses([too_long, reply("ok")])
    settings = {"retry": {"provider": {"maxRetryDelayMs": 3000}}}
    async with open_session(faux, registry, settings=settings) as session:
        events = Events()
        session.subscribe(events)
        start = trio.current_time()
        await session.prompt("hi")
        assert trio.current_time() - start == pytest.approx(3.0, abs=0.5)
    assert [e.delay_ms for e in events.of("auto_retry_start")] == [3000]
