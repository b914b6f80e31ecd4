"""The shared HTTP layer over a real loopback server: SSE requests, failures, pooling, retries."""

from __future__ import annotations

import gzip

import httpx2
import pytest
import trio
import trio.testing

from pitrio.providers._http import (
    HTTPStatusError,
    InvalidStreamError,
    PooledTransport,
    current_http_client,
    describe_failure,
    open_http_client,
    open_sse,
    sse_json,
)
from pitrio.providers._registry import ProviderError
from pitrio.providers._sse import SSEEvent

from loopback import (
    ResponseWriter,
    error_handler,
    sequence_handler,
    serve,
    sse_bytes,
    sse_handler,
)

BODY = sse_bytes([("one", {"n": 1}), ("two", {"n": 2}), (None, "[DONE]")])


async def collect(url: str, **kwargs: object) -> list[SSEEvent]:
    async with open_sse(url, headers={"authorization": "Bearer k"}, body={"q": 1}, **kwargs) as it:  # type: ignore[arg-type]
        return [event async for batch in it for event in batch]


async def test_posts_json_and_yields_events_cut_at_any_byte() -> None:
    async with serve(sse_handler(BODY, chunk_size=1)) as server, open_http_client():
        events = await collect(server.url("/v1/chat"))
    assert [(e.event, e.data) for e in events] == [
        ("one", '{"n":1}'),
        ("two", '{"n":2}'),
        ("message", "[DONE]"),
    ]
    request = server.requests[0]
    assert (request.method, request.path, request.json()) == ("POST", "/v1/chat", {"q": 1})
    assert request.headers["authorization"] == "Bearer k"
    assert request.headers["content-type"] == "application/json"


async def test_shared_client_reuses_one_connection() -> None:
    async with serve(sse_handler(BODY)) as server:
        async with open_http_client() as client:
            assert current_http_client() is client
            for _ in range(3):
                await collect(server.url())
        assert current_http_client() is None
    assert server.connections_opened == 1


async def test_without_a_shared_client_each_request_has_its_own() -> None:
    async with serve(sse_handler(BODY)) as server:
        for _ in range(2):
            await collect(server.url())
    assert server.connections_opened == 2


async def test_error_status_carries_status_and_body() -> None:
    body = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
    async with serve(error_handler(429, body)) as server:
        with pytest.raises(HTTPStatusError) as info:
            await collect(server.url())
    assert info.value.status == 429
    assert "Rate limit reached" in info.value.body
    assert describe_failure(info.value).startswith("429 {")


async def test_dropped_connection_is_reported_as_connection_lost() -> None:
    async with serve(sse_handler(BODY, drop_after=12)) as server:
        with pytest.raises(httpx2.RemoteProtocolError) as info:
            await collect(server.url())
    assert describe_failure(info.value).startswith("Connection lost: ")


async def test_refused_connection_is_a_connection_error() -> None:
    async with serve(sse_handler(BODY)) as server:
        url = server.url()
    with pytest.raises(httpx2.ConnectError) as info:
        await collect(url)
    assert describe_failure(info.value).startswith("Connection error")


async def test_read_timeout_is_reported_as_timed_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A server that stops sending ends the request with a read timeout, in virtual time."""
    # The 50 ms also bound the connect: in real time a busy machine can miss it while
    # connecting. Loopback I/O completes inside the syscalls, so the clock only jumps once
    # the server really hangs.
    async with serve(sse_handler(BODY, hang_after=5)) as server:
        with pytest.raises(httpx2.ReadTimeout) as info:
            await collect(server.url(), timeout_ms=50)
    assert describe_failure(info.value) == "Request timed out while waiting for data"


async def test_cancel_mid_stream_returns_the_connection_to_the_pool() -> None:
    async with (
        serve(sse_handler(BODY, hang_after=len(BODY) // 2)) as server,
        open_http_client(limits=httpx2.Limits(max_connections=1)),
    ):
        with trio.CancelScope() as scope:
            async with open_sse(server.url(), headers={}, body={}) as events:
                async for _ in events:
                    scope.cancel()
        with trio.fail_after(5):
            while server.connections_open:
                await server.connection_closed.wait()
        # The pool has one slot; a new request only gets it if the cancelled one gave it back.
        server_events = []
        async with serve(sse_handler(BODY)) as second:
            with trio.fail_after(5):
                server_events = await collect(second.url())
    assert len(server_events) == 3


async def test_sse_json_rejects_invalid_data() -> None:
    assert sse_json(SSEEvent("m", '{"a": 1}')) == {"a": 1}
    with pytest.raises(InvalidStreamError, match="Invalid SSE data"):
        sse_json(SSEEvent("m", "{not json"))


async def test_retries_honour_retry_after_then_succeed() -> None:
    # Real sockets and a mock clock do not mix (the clock would jump while a read waits), so
    # the server asks for a short real delay: retry-after-ms, as OpenAI's servers send it.
    handler = sequence_handler(
        error_handler(503, {"error": "busy"}, {"retry-after-ms": "50"}),
        sse_handler(BODY),
    )
    async with serve(handler) as server:
        start = trio.current_time()
        events = await collect(server.url(), max_retries=2)
        waited = trio.current_time() - start
    assert len(events) == 3
    assert len(server.requests) == 2
    assert waited >= 0.05


async def test_retry_delay_over_the_maximum_fails_instead_of_waiting() -> None:
    handler = error_handler(429, {"error": "slow down"}, {"retry-after": "120"})
    async with serve(handler) as server:
        with pytest.raises(ProviderError, match="retry delay"):
            await collect(server.url(), max_retries=3, max_retry_delay_ms=1000)
    assert len(server.requests) == 1


async def test_non_retryable_status_is_not_retried() -> None:
    async with serve(error_handler(400, {"error": "bad request"})) as server:
        with pytest.raises(HTTPStatusError):
            await collect(server.url(), max_retries=3)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- the pool at scale

STREAMS = 1000


async def test_a_thousand_concurrent_streams_complete_and_reuse_their_connections() -> None:
    """1,000 streams open at once, then 1,000 more: the pool (httpcore2 on pitrio's Trio
    network layer) holds 1,000 connections at once, no limit below that, and the second round
    is served on the first round's keep-alive connections: 1,000 TCP connections accepted for
    2,000 requests."""
    all_arrived = trio.Event()
    waiting = 0

    async def handler(request: object, writer: ResponseWriter) -> None:
        nonlocal waiting
        await writer.start()
        await writer.write(sse_bytes([("one", {"n": 1})]))
        waiting += 1
        if waiting % STREAMS == 0:
            all_arrived.set()
        # Every stream of a round stays open until the whole round is connected.
        await all_arrived.wait()
        await writer.write(sse_bytes([("two", {"n": 2})]))

    async def client(done: list[int]) -> None:
        events = await collect(server.url())
        assert [e.event for e in events] == ["one", "two"]
        done.append(1)

    async with serve(handler) as server, open_http_client() as http:
        for _round in range(2):
            done: list[int] = []
            all_arrived = trio.Event()
            with trio.fail_after(120):
                async with trio.open_nursery() as nursery:
                    for _ in range(STREAMS):
                        nursery.start_soon(client, done)
            assert len(done) == STREAMS
        transport = http._transport
        assert isinstance(transport, PooledTransport)
        kept = len(transport.connections)
    assert len(server.requests) == 2 * STREAMS
    assert server.connections_opened == STREAMS
    assert kept == STREAMS


async def test_the_stall_deadline_moves_forward_as_data_comes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One stall deadline per request, moved forward by the reads: a stream that lasts many
    stall timeouts in all, with no silence as long as one, is read to its end."""
    async with serve(sse_handler(BODY, chunk_size=8)) as server, open_http_client():
        seen = []
        async with open_sse(server.url(), headers={}, body={}, stall_timeout_ms=1_000) as events:
            async for batch in events:
                for event in batch:
                    await trio.sleep(0.6)  # three events: 1.8 stall timeouts in all
                    seen.append(event.event)
    assert seen == ["one", "two", "message"]


async def test_the_stall_deadline_moves_between_the_events_of_one_read(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Events that came in one read are handed over as one batch; the reader's time on each
    moves the deadline as a read of its own would: a reader slower on the batch than one
    stall timeout in all, but never that slow on one event, is not cut off."""
    async with serve(sse_handler(BODY)) as server, open_http_client():
        seen = []
        batches = 0
        async with open_sse(server.url(), headers={}, body={}, stall_timeout_ms=1_000) as events:
            async for batch in events:
                batches += 1
                for event in batch:
                    await trio.sleep(0.6)
                    seen.append(event.event)
    assert seen == ["one", "two", "message"]
    assert batches == 1  # what this test is about: the three events came in one read


async def test_a_connection_limit_set_by_the_user_makes_requests_wait_their_turn() -> None:
    """``max_connections=1``: a second stream waits until the first one's connection is back,
    then reuses it (one TCP connection for both)."""
    release = trio.Event()
    order: list[str] = []

    async def handler(request: object, writer: ResponseWriter) -> None:
        await writer.start()
        await writer.write(sse_bytes([("one", {"n": 1})]))
        await release.wait()

    async def client(name: str) -> None:
        await collect(server.url())
        order.append(name)

    async with (
        serve(handler) as server,
        open_http_client(limits=httpx2.Limits(max_connections=1)),
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(client, "first")
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(client, "second")
        await trio.testing.wait_all_tasks_blocked()
        assert len(server.requests) == 1  # the second waits for the only connection
        release.set()
    assert order == ["first", "second"]
    assert len(server.requests) == 2
    assert server.connections_opened == 1


async def test_a_gzip_encoded_event_stream_is_decoded() -> None:
    """A server that compresses its SSE (clients send ``accept-encoding: gzip``) is read
    through the content decoder; an unencoded one is read raw."""

    async def handler(request: object, writer: ResponseWriter) -> None:
        await writer.start(headers={"content-encoding": "gzip"})
        packed = gzip.compress(BODY)
        for i in range(0, len(packed), 7):
            await writer.write(packed[i : i + 7])

    async with serve(handler) as server, open_http_client():
        events = await collect(server.url())
    assert [(e.event, e.data) for e in events] == [
        ("one", '{"n":1}'),
        ("two", '{"n":2}'),
        ("message", "[DONE]"),
    ]
