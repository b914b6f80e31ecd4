"""pitrio's own HTTP/1.1 body reader (`pitrio.providers._http11`) over real loopback sockets.

The server here writes raw response bytes, cut into pieces, and after each piece waits until
every other task is blocked: the client has then read everything that piece made available
(loopback delivers a send at once), so every cut is a boundary between two reads of the
client. Keep-alive reuse is counted in TCP connections accepted.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import attrs
import httpx2
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from pitrio.providers._http import (
    BODY_EXTENSION,
    describe_failure,
    open_http_client,
    open_sse,
)
from pitrio.providers._http11 import ResponseBody

from loopback import sse_bytes

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
CHUNKED_HEAD = HEAD + b"transfer-encoding: chunked\r\n\r\n"


def chunked(pieces: Sequence[bytes], trailers: bytes = b"", extension: bytes = b"") -> bytes:
    """``pieces`` framed as chunks (each with ``extension`` after its size), then the last
    chunk and ``trailers`` (header lines, each ending in CRLF)."""
    framed = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces if p)
    return framed + b"0" + extension + b"\r\n" + trailers + b"\r\n"


@attrs.define
class RawServer:
    port: int
    connections: int = 0
    requests: int = 0

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


async def _read_request(stream: trio.SocketStream, buffer: bytearray) -> bool:
    """Read one request (head and content-length body); False when the client hung up."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return False
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = bytearray(rest)
    while len(body) < length:
        data = await stream.receive_some(65536)
        if not data:
            return False
        body += data
    buffer[:] = body[length:]
    return True


@asynccontextmanager
async def raw_server(
    responses: Sequence[Sequence[bytes]], *, close_after: bool = False
) -> AsyncIterator[RawServer]:
    """Answer the n-th request with the pieces of ``responses[n]`` (the last repeats), each
    piece its own read on the client's side; ``close_after``: hang up after each response."""

    async def connection(stream: trio.SocketStream) -> None:
        server.connections += 1
        buffer = bytearray()
        try:
            async with stream:
                while await _read_request(stream, buffer):
                    pieces = responses[min(server.requests, len(responses) - 1)]
                    server.requests += 1
                    for piece in pieces:
                        await stream.send_all(piece)
                        await trio.testing.wait_all_tasks_blocked()
                    if close_after:
                        return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, connection, 0, host="127.0.0.1")
        )
        server = RawServer(port=listeners[0].socket.getsockname()[1])
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


def cut(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


async def get_body(client: httpx2.AsyncClient, url: str) -> tuple[bytes, list[bytes]]:
    """The body and the pieces ``ResponseBody.receive`` returned for it."""
    parts: list[bytes] = []
    async with client.stream("POST", url, content=b"{}") as response:
        body = response.extensions[BODY_EXTENSION]
        assert isinstance(body, ResponseBody)
        while part := await body.receive():
            parts.append(part)
    return b"".join(parts), parts


# --------------------------------------------------------------------------- framing


async def test_every_cut_of_a_chunked_response_gives_the_whole_body_and_reuses_the_connection() -> (
    None
):
    """The response (head, chunks with an extension, trailers) is cut at every position in
    turn; each cut is a read boundary. Every time the body is whole, and all the requests are
    served on one connection, so each response was consumed to its exact end."""
    payload = [b"event: a\ndata: 1\n\n", b"x" * 17, b"data: \xc3\xa9\n\n"]
    response = CHUNKED_HEAD + chunked(payload, trailers=b"x-t: 1\r\n", extension=b";e=1")
    responses = [cut(response, [i]) for i in range(1, len(response))]
    async with raw_server(responses) as server, open_http_client() as client:
        for _ in responses:
            with trio.fail_after(10):
                body, _parts = await get_body(client, server.url())
            assert body == b"".join(payload)
    assert (server.requests, server.connections) == (len(responses), 1)


async def test_a_read_that_completes_many_chunks_returns_them_joined() -> None:
    """One read with several whole chunks gives their data in one piece."""
    payload = [b"one ", b"two ", b"three"]
    response = CHUNKED_HEAD + chunked(payload)
    async with (
        raw_server([[CHUNKED_HEAD, response[len(CHUNKED_HEAD) :]]]) as server,
        open_http_client() as client,
    ):
        body, parts = await get_body(client, server.url())
    assert parts == [b"one two three"]
    assert body == b"one two three"


@given(
    pieces=st.lists(st.binary(min_size=1, max_size=40), max_size=6),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=8),
    trailers=st.sampled_from([b"", b"x-checksum: 1\r\n", b"a: 1\r\nb: 2\r\n"]),
    extension=st.sampled_from([b"", b";name=value", b" ;x"]),
)
def test_any_cut_of_any_chunked_body_is_read_whole_then_the_connection_reused(
    pieces: list[bytes], cuts: list[int], trailers: bytes, extension: bytes
) -> None:
    response = CHUNKED_HEAD + chunked(pieces, trailers, extension)

    async def main() -> None:
        async with raw_server([cut(response, cuts)]) as server, open_http_client() as client:
            for _ in range(2):
                with trio.fail_after(10):
                    body, _parts = await get_body(client, server.url())
                assert body == b"".join(pieces)
        assert (server.requests, server.connections) == (2, 1)

    trio.run(main)


@given(
    payload=st.binary(max_size=300),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=6),
)
def test_a_content_length_body_is_read_whole_then_the_connection_reused(
    payload: bytes, cuts: list[int]
) -> None:
    response = HEAD + b"content-length: %d\r\n\r\n" % len(payload) + payload

    async def main() -> None:
        async with raw_server([cut(response, cuts)]) as server, open_http_client() as client:
            for _ in range(2):
                with trio.fail_after(10):
                    body, _parts = await get_body(client, server.url())
                assert body == payload
        assert (server.requests, server.connections) == (2, 1)

    trio.run(main)


async def test_a_body_without_length_runs_to_the_end_of_the_connection() -> None:
    response = HEAD + b"\r\n" + b"data: 1\n\n"
    async with raw_server([[response]], close_after=True) as server, open_http_client() as client:
        for _ in range(2):
            body, _parts = await get_body(client, server.url())
            assert body == b"data: 1\n\n"
    assert (server.requests, server.connections) == (2, 2)


async def test_no_content_has_no_body_and_keeps_the_connection() -> None:
    async with (
        raw_server([[b"HTTP/1.1 204 No Content\r\n\r\n"]]) as server,
        open_http_client() as client,
    ):
        for _ in range(2):
            body, _parts = await get_body(client, server.url())
            assert body == b""
    assert (server.requests, server.connections) == (2, 1)


async def test_connection_close_from_the_server_is_not_reused() -> None:
    """The server says ``connection: close`` but keeps the socket open: the client still
    does not send another request on it."""
    response = HEAD + b"connection: close\r\ntransfer-encoding: chunked\r\n\r\n" + chunked([b"hi"])
    async with raw_server([[response]]) as server, open_http_client() as client:
        for _ in range(2):
            body, _parts = await get_body(client, server.url())
            assert body == b"hi"
    assert server.connections == 2


# --------------------------------------------------------------------------- not reused


async def test_a_body_left_unfinished_closes_its_connection() -> None:
    """A reader that stops before the last chunk: the next request opens a new connection."""
    first = [CHUNKED_HEAD + b"3\r\none\r\n", b"3\r\ntwo\r\n0\r\n\r\n"]
    async with raw_server([first]) as server, open_http_client() as client:
        async with client.stream("POST", server.url(), content=b"{}") as response:
            assert await response.extensions[BODY_EXTENSION].receive() == b"one"
        body, _parts = await get_body(client, server.url())
    assert body == b"onetwo"
    assert server.connections == 2


async def test_bytes_after_the_last_chunk_spoil_the_connection() -> None:
    response = CHUNKED_HEAD + chunked([b"hi"]) + b"garbage"
    async with raw_server([[response]]) as server, open_http_client() as client:
        for _ in range(2):
            body, _parts = await get_body(client, server.url())
            assert body == b"hi"
    assert server.connections == 2


# --------------------------------------------------------------------------- failures


async def test_a_connection_dropped_mid_chunk_is_connection_lost() -> None:
    """The server hangs up inside a chunk's data: the stream ends with the error providers
    report as a lost connection, at once."""
    body = sse_bytes([("one", {"n": 1}), ("two", {"n": 2})])
    response = CHUNKED_HEAD + b"%x\r\n%s" % (len(body) + 10, body)
    async with raw_server([[response]], close_after=True) as server, open_http_client():
        seen = []
        with trio.fail_after(10), pytest.raises(httpx2.RemoteProtocolError) as info:
            async with open_sse(server.url(), headers={}, body={}) as events:
                async for batch in events:
                    seen.extend(event.event for event in batch)
    assert seen == ["one", "two"]
    assert "incomplete chunked read" in str(info.value)
    assert describe_failure(info.value).startswith("Connection lost: ")


async def test_a_connection_dropped_inside_a_content_length_body_is_connection_lost() -> None:
    response = HEAD + b"content-length: 100\r\n\r\ndata: 1\n\n"
    async with raw_server([[response]], close_after=True) as server, open_http_client():
        with trio.fail_after(10), pytest.raises(httpx2.RemoteProtocolError) as info:
            async with open_sse(server.url(), headers={}, body={}) as events:
                async for _ in events:
                    pass
    assert "received 9 bytes, expected 100" in str(info.value)


@pytest.mark.parametrize(
    ("framing", "reason"),
    [
        (b"zz\r\nhello\r\n", "illegal chunk-size line b'zz'"),
        (b"-5\r\nhello\r\n", "illegal chunk-size line b'-5'"),
        (b"0x5\r\nhello\r\n", "illegal chunk-size line b'0x5'"),
        (b"5\r\nhelloXY0\r\n\r\n", "expected CRLF after a chunk's data, got b'XY'"),
        (b"5\r\nhello\nX", "expected CRLF after a chunk's data, got b'\\nX'"),
        (b"f" * (4097 + 2), "chunk-size line too long"),
    ],
)
async def test_malformed_chunk_framing_is_a_clear_error(framing: bytes, reason: str) -> None:
    """Malformed framing ends the request with a protocol error naming what was wrong, and
    never waits for more."""
    async with raw_server([[CHUNKED_HEAD + framing]]) as server, open_http_client() as client:
        with trio.fail_after(10), pytest.raises(httpx2.RemoteProtocolError) as info:
            await get_body(client, server.url())
    assert str(info.value) == f"malformed chunked encoding: {reason}"


async def test_a_server_that_answers_nothing_is_a_protocol_error() -> None:
    async with raw_server([[b""]], close_after=True) as server, open_http_client() as client:
        with trio.fail_after(10), pytest.raises(httpx2.RemoteProtocolError, match="without"):
            await get_body(client, server.url())
