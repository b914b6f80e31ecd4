"""Bad answers never pass as success: every wire API over real loopback HTTP.

For each of the four HTTP providers: a 200 whose body is not an event stream (garbage, an HTML
page, a JSON document), a stream that ends cleanly before its terminal event, a connection that
drops mid-body, and a server that goes quiet (the stall timeout, on Trio's mock clock) all end
the message with ``stopReason: "error"`` and a message that says what happened. Controls check
that complete streams, SSE sent under a sloppy content type, and slow but steady streams still
succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    UserMessage,
    get_model,
)
from pitrio.providers._api import stream_simple
from pitrio.providers._builtins import register_builtin_providers
from pitrio.providers._http import DEFAULT_STALL_TIMEOUT_S, open_http_client

import fixtures_anthropic as fa
import fixtures_google as fg
import fixtures_openai_completions as fc
import fixtures_openai_responses as fr
from loopback import (
    Handler,
    LoopbackServer,
    Request,
    ResponseWriter,
    serve,
    sse_bytes,
    sse_handler,
)


@attrs.frozen
class Api:
    """One wire API: how to point a model at the server and what its streams look like."""

    name: str
    model: Callable[[LoopbackServer], Model]
    complete: bytes
    """A whole answer whose text is :data:`TEXT` (or starts with :data:`FIRST`)."""
    one_chunk: bytes
    """The answer cut after its first text delta, which is :data:`FIRST`, with no terminal."""
    incomplete_words: str
    """What the error message of a stream without its terminal event names."""


def _completions_model(server: LoopbackServer) -> Model:
    return Model(
        id="local-model",
        name="Local",
        api="openai-completions",
        provider="local",
        base_url=server.url("/v1"),
        input=("text",),
        cost=ModelCost(input=0, output=0, cache_read=0, cache_write=0),
        context_window=32_000,
        max_tokens=4_096,
    )


def _anthropic_model(server: LoopbackServer) -> Model:
    return attrs.evolve(get_model("anthropic", "claude-sonnet-4-5"), base_url=server.url())


def _google_model(server: LoopbackServer) -> Model:
    return fg.google_model("gemini-2.5-flash", server.url("/v1beta"))


def _responses_model(server: LoopbackServer) -> Model:
    return attrs.evolve(get_model("openai", "gpt-5"), base_url=server.url("/v1"))


_COMPLETIONS = fc.text_chunks("Hello there, friend.", piece=6)
_ANTHROPIC = fa.text_stream()
_GOOGLE = fg.text_chunks()
_RESPONSES = fr.text_stream().events


def _first_delta(events: list[dict[str, Any]], kind: str) -> int:
    return next(i for i, event in enumerate(events) if event["type"] == kind)


APIS = [
    Api(
        "openai-completions",
        _completions_model,
        fc.frame(_COMPLETIONS),
        fc.frame(_COMPLETIONS[:2], done=False),
        "finish_reason",
    ),
    Api(
        "anthropic-messages",
        _anthropic_model,
        fa.to_sse(_ANTHROPIC),
        fa.to_sse(_ANTHROPIC[: _first_delta(_ANTHROPIC, "content_block_delta") + 1]),
        "message_stop",
    ),
    Api(
        "google-generative-ai", _google_model, fg.sse(_GOOGLE), fg.sse(_GOOGLE[:1]), "finishReason"
    ),
    Api(
        "openai-responses",
        _responses_model,
        sse_bytes((event["type"], event) for event in _RESPONSES),
        sse_bytes(
            (event["type"], event)
            for event in _RESPONSES[: _first_delta(_RESPONSES, "response.output_text.delta") + 1]
        ),
        "response.completed",
    ),
]
FIRST = {
    "openai-completions": "Hello ",
    "anthropic-messages": "Hello!",
    "google-generative-ai": "Hello",
    "openai-responses": "Hello",
}
"""The text of each API's first delta (what a stream cut after one chunk keeps)."""

HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>"
    b"<body><h1>Please sign in to continue</h1></body></html>\n"
)
GARBAGE = b"\x00\x9f\x92\x96 this is not an event stream \xff\xfe" * 3
HI = Context(messages=[UserMessage(content="hi", timestamp=1)])


@pytest.fixture(params=APIS, ids=[api.name for api in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    value: Api = request.param
    return value


async def ask(
    api: Api, handler: Handler, options: StreamOptions | None = None
) -> tuple[list[str], AssistantMessage]:
    """Stream one answer from a loopback server running ``handler``."""
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    async with serve(handler) as server, open_http_client():
        model = api.model(server)
        async with stream_simple(
            model, HI, options or StreamOptions(api_key="test-key"), registry=registry
        ) as events:
            types: list[str] = [event.type async for event in events]
            return types, await events.result()


def body_handler(body: bytes, content_type: str) -> Handler:
    """Answer 200 with ``body`` under ``content_type`` and a content-length."""

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.send_body(200, body, {"content-type": content_type})

    return handle


def assert_error(message: AssistantMessage, *fragments: str) -> str:
    assert message.stop_reason == "error"
    text = message.error_message
    assert text is not None
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    return text


def retryable(text: str) -> bool:
    """Whether both pitrio's default retry pattern and pi's wider one retry ``text``."""
    # Imported here: the session layer sits above providers, only these checks need it.
    from pitrio.sessions.runtime._retry import PI_RETRYABLE_ERROR_PATTERN, RETRYABLE_ERROR_PATTERN

    return bool(RETRYABLE_ERROR_PATTERN.search(text) and PI_RETRYABLE_ERROR_PATTERN.search(text))


# --------------------------------------------------------------------------- controls


async def test_a_complete_stream_is_a_success(api: Api) -> None:
    """The control: the whole answer streams and ends with done."""
    types, message = await ask(api, sse_handler(api.complete))
    assert types[-1] == "done"
    assert message.stop_reason == "stop"
    assert message.content and isinstance(message.content[0], TextContent)
    assert message.content[0].text.startswith(FIRST[api.name])


@pytest.mark.parametrize(
    ("prefix", "content_type"),
    [(b"\n", "text/plain"), (b"\xef\xbb\xbf", "application/json"), (b"", "")],
    ids=["text-plain", "bom-json", "none"],
)
async def test_sse_under_a_sloppy_content_type_is_read(
    api: Api, prefix: bytes, content_type: str
) -> None:
    """Real SSE sent as text/plain, as JSON after a BOM, or unlabelled (servers exist) works."""
    types, message = await ask(api, body_handler(prefix + api.complete, content_type))
    assert types[-1] == "done"
    assert message.stop_reason == "stop"


async def test_a_slow_but_steady_stream_is_not_a_stall(
    api: Api, autojump_clock: trio.testing.MockClock
) -> None:
    """Pauses shorter than the stall timeout, however many, do not end the stream."""
    pause = 0.9 * DEFAULT_STALL_TIMEOUT_S
    pieces = [api.complete[i : i + 200] for i in range(0, len(api.complete), 200)]

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.start()
        for piece in pieces:
            await trio.sleep(pause)
            await writer.write(piece)

    types, message = await ask(api, handle)
    assert len(pieces) > 2
    assert types[-1] == "done"
    assert message.stop_reason == "stop"


# --------------------------------------------------------------------------- not an event stream


async def test_garbage_with_an_event_stream_content_type_is_an_error(api: Api) -> None:
    """A 200 labelled text/event-stream whose bytes hold no event names what arrived."""
    types, message = await ask(api, sse_handler(GARBAGE))
    text = assert_error(message, "Not an event stream", "text/event-stream", "this is not an")
    assert types[-1] == "error"
    assert message.content == ()
    assert len(text) < 600


async def test_garbage_with_another_content_type_is_an_error(api: Api) -> None:
    """A 200 of unlabelled binary garbage is refused at its first bytes."""
    _, message = await ask(api, body_handler(GARBAGE, "application/octet-stream"))
    assert_error(message, "Not an event stream", "application/octet-stream", "this is not an")


async def test_an_html_page_is_an_error(api: Api) -> None:
    """A proxy's text/html page is reported with its content type and its first bytes."""
    _, message = await ask(api, body_handler(HTML_PAGE, "text/html; charset=utf-8"))
    assert_error(message, "Not an event stream", "text/html; charset=utf-8", "<!DOCTYPE html>")


async def test_a_json_document_is_an_error(api: Api) -> None:
    """A server that ignores ``stream: true`` and answers one JSON document is reported."""
    body = b'{"id": "x", "object": "chat.completion", "choices": []}'
    _, message = await ask(api, body_handler(body, "application/json"))
    assert_error(message, "Not an event stream", "application/json", '{"id": "x"')


async def test_the_quoted_body_is_bounded(api: Api) -> None:
    """A huge non-SSE body is quoted by its first bytes only."""
    body = b"<html>" + b"x" * 100_000
    _, message = await ask(api, body_handler(body, "text/html"))
    text = assert_error(message, "Not an event stream", "<html>xxx")
    assert len(text) < 600


async def test_an_empty_body_is_an_error(api: Api) -> None:
    """A 200 with no body at all is not an answer."""
    _, message = await ask(api, sse_handler(b""))
    assert_error(message, "Not an event stream", "empty")


# --------------------------------------------------------------------------- incomplete streams


async def test_a_stream_ending_after_one_chunk_is_an_error(api: Api) -> None:
    """A body that ends cleanly before the API's terminal event keeps the text and fails."""
    types, message = await ask(api, sse_handler(api.one_chunk))
    assert_error(message, api.incomplete_words)
    assert types[-1] == "error"
    assert message.content == (TextContent(text=FIRST[api.name]),)


@pytest.mark.parametrize("name", ["openai-completions", "google-generative-ai", "openai-responses"])
async def test_a_truncated_stream_is_retryable(name: str) -> None:
    """pitrio's own wording for a truncated stream matches the session retry patterns.

    (anthropic-messages keeps pi's exact message, which pi does not retry either.)
    """
    api = next(api for api in APIS if api.name == name)
    _, message = await ask(api, sse_handler(api.one_chunk))
    assert retryable(assert_error(message))


async def test_a_connection_dropped_mid_body_is_a_retryable_error(api: Api) -> None:
    """A connection closed in the middle of the chunked body fails as a lost connection."""
    types, message = await ask(api, sse_handler(api.complete, drop_after=len(api.one_chunk)))
    text = assert_error(message, "Connection lost")
    assert retryable(text)
    assert types[-1] == "error"
    assert message.content == (TextContent(text=FIRST[api.name]),)


# --------------------------------------------------------------------------- stalls


async def test_a_server_quiet_after_the_headers_stalls(
    api: Api, autojump_clock: trio.testing.MockClock
) -> None:
    """Headers and then nothing: the default stall timeout ends the stream, retryably."""
    start = trio.current_time()
    _, message = await ask(api, sse_handler(api.complete, hang_after=0))
    text = assert_error(message, "Stream stalled", f"{DEFAULT_STALL_TIMEOUT_S:g} s")
    assert retryable(text)
    assert trio.current_time() - start == pytest.approx(DEFAULT_STALL_TIMEOUT_S, abs=1)


async def test_a_server_quiet_after_one_chunk_stalls(
    api: Api, autojump_clock: trio.testing.MockClock
) -> None:
    """``stall_timeout_ms`` bounds the silence between chunks and keeps the partial text."""
    options = StreamOptions(api_key="test-key", stall_timeout_ms=20_000)
    start = trio.current_time()
    _, message = await ask(api, sse_handler(api.complete, hang_after=len(api.one_chunk)), options)
    assert_error(message, "Stream stalled", "20 s")
    assert message.content == (TextContent(text=FIRST[api.name]),)
    assert trio.current_time() - start == pytest.approx(20, abs=1)


async def test_a_server_that_never_answers_stalls(
    api: Api, autojump_clock: trio.testing.MockClock
) -> None:
    """No response headers at all is a stall too."""

    async def handle(request: Request, writer: ResponseWriter) -> None:
        await writer.wait_closed()

    options = StreamOptions(api_key="test-key", stall_timeout_ms=45_000)
    _, message = await ask(api, handle, options)
    assert_error(message, "Stream stalled", "45 s")


async def test_a_stall_timeout_of_zero_turns_it_off(
    api: Api, autojump_clock: trio.testing.MockClock
) -> None:
    """``stall_timeout_ms=0`` waits as pi does, until the request's own timeout."""
    options = StreamOptions(api_key="test-key", stall_timeout_ms=0, timeout_ms=1_000_000)
    start = trio.current_time()
    _, message = await ask(api, sse_handler(api.complete, hang_after=0), options)
    assert_error(message, "timed out")
    assert trio.current_time() - start == pytest.approx(1_000, abs=1)


# --------------------------------------------------------------------------- per-API details


@pytest.mark.parametrize("keep", ["finish_reason", "[DONE]"])
async def test_completions_accept_either_end_marker(keep: str) -> None:
    """openai-completions: a finish_reason without [DONE], or [DONE] without one, is complete."""
    api = APIS[0]
    chunks = [c for c in _COMPLETIONS if keep == "finish_reason" or not _finishes(c)]
    body = fc.frame(chunks, done=keep == "[DONE]")
    types, message = await ask(api, sse_handler(body))
    assert types[-1] == "done"
    assert message.content == (TextContent(text="Hello there, friend."),)


def _finishes(chunk: dict[str, Any]) -> bool:
    return any(choice.get("finish_reason") for choice in chunk.get("choices") or ())


async def test_google_blocked_prompt_is_an_error() -> None:
    """google-generative-ai: a prompt blocked by promptFeedback, with no candidate, fails."""
    api = APIS[2]
    blocked = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": fg.usage_metadata(12),
        "modelVersion": fg.MODEL_VERSION,
        "responseId": fg.RESPONSE_ID,
    }
    _, message = await ask(api, sse_handler(fg.sse([blocked])))
    assert_error(message, "Prompt blocked: PROHIBITED_CONTENT")
    assert message.content == ()


async def test_anthropic_events_without_message_start_are_an_error() -> None:
    """anthropic-messages: a body of pings only is not an answer (pi would report a stop)."""
    api = APIS[1]
    _, message = await ask(api, sse_handler(fa.to_sse([fa.ping(), fa.ping()])))
    assert_error(message, "ended before message_start")
