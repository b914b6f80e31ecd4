"""The HTTP client over TLS on loopback: pitrio's Trio network layer does the handshake,
verifies the server with the given trust store, and negotiates the protocol by ALPN."""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import Awaitable, Callable

import h2.config
import h2.connection
import h2.events
import httpx2
import pytest
import trio
import trustme

from pitrio.providers._http import PooledTransport, describe_failure, open_http_client, open_sse

from loopback import sse_bytes

BODY = sse_bytes([("one", {"n": 1}), (None, "[DONE]")])


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def _server_context(ca: trustme.CA, alpn: list[str]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    context.set_alpn_protocols(alpn)
    return context


def _client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def _http11(stream: trio.SSLStream[trio.SocketStream]) -> None:
    """One request, answered with a chunked event stream, then the connection is closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive_some(65536)
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    await stream.send_all(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY))
    await stream.aclose()


async def _serve(
    context: ssl.SSLContext,
    handler: Callable[[trio.SSLStream[trio.SocketStream]], Awaitable[None]],
    nursery: trio.Nursery,
) -> int:
    listeners = await nursery.start(
        functools.partial(trio.serve_ssl_over_tcp, handler, 0, context, host="127.0.0.1")
    )
    return int(listeners[0].transport_listener.socket.getsockname()[1])


async def test_an_https_stream_is_verified_and_read_over_http11(ca: trustme.CA) -> None:
    """The server offers only HTTP/1.1 by ALPN; the client (HTTP/2 enabled) reads over it."""
    async with trio.open_nursery() as nursery:
        port = await _serve(_server_context(ca, ["http/1.1"]), _http11, nursery)
        async with open_http_client(verify=_client_context(ca)):
            url = f"https://127.0.0.1:{port}/v1"
            async with open_sse(url, headers={}, body={}) as events:
                seen = [(e.event, e.data) async for batch in events for e in batch]
        nursery.cancel_scope.cancel()
    assert seen == [("one", '{"n":1}'), ("message", "[DONE]")]


async def test_a_server_that_selects_h2_is_spoken_to_in_http2(ca: trustme.CA) -> None:
    """ALPN ``h2``: the first bytes the client sends are HTTP/2's connection preface."""
    first = trio.Event()
    received: list[bytes] = []

    async def handler(stream: trio.SSLStream[trio.SocketStream]) -> None:
        data = b""
        while len(data) < 24:
            data += await stream.receive_some(65536)
        received.append(data[:24])
        first.set()
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        port = await _serve(_server_context(ca, ["h2"]), handler, nursery)
        async with open_http_client(verify=_client_context(ca)):
            # The server hangs up: only the preface matters.
            with pytest.raises(httpx2.TransportError):
                async with open_sse(f"https://127.0.0.1:{port}/", headers={}, body={}) as events:
                    [event async for batch in events for event in batch]
        nursery.cancel_scope.cancel()
    assert received == [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]


async def test_an_untrusted_certificate_is_a_connection_error(ca: trustme.CA) -> None:
    """Verification is on: a certificate the trust store does not know fails the connect."""
    async with trio.open_nursery() as nursery:
        port = await _serve(_server_context(ca, ["http/1.1"]), _http11, nursery)
        async with open_http_client():  # the system trust store: it does not know this CA
            with pytest.raises(httpx2.ConnectError) as info:
                async with open_sse(f"https://127.0.0.1:{port}/", headers={}, body={}):
                    pass
        nursery.cancel_scope.cancel()
    assert describe_failure(info.value).startswith("Connection error")


async def test_concurrent_streams_to_an_http2_server_share_one_connection(ca: trustme.CA) -> None:
    """HTTP/2 by ALPN: streams started together wait for the one handshake and are
    multiplexed on that connection, and a later stream reuses it."""
    streams = 5
    accepted = 0
    answered = 0

    async def handler(stream: trio.SSLStream[trio.SocketStream]) -> None:
        nonlocal accepted, answered
        accepted += 1
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        await stream.send_all(conn.data_to_send())
        pending: list[int] = []
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while data := await stream.receive_some(65536):
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.DataReceived):
                        conn.acknowledge_received_data(len(event.data), event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        pending.append(event.stream_id)
                # The first round is answered once every stream of it is open at once.
                if len(pending) == streams or (answered >= streams and pending):
                    for stream_id in pending:
                        conn.send_headers(
                            stream_id, [(":status", "200"), ("content-type", "text/event-stream")]
                        )
                        conn.send_data(stream_id, BODY, end_stream=True)
                    answered += len(pending)
                    pending.clear()
                await stream.send_all(conn.data_to_send())

    seen: list[list[tuple[str, str]]] = []

    async def client(url: str) -> None:
        async with open_sse(url, headers={}, body={}) as events:
            seen.append([(e.event, e.data) async for batch in events for e in batch])

    async with trio.open_nursery() as nursery:
        port = await _serve(_server_context(ca, ["h2", "http/1.1"]), handler, nursery)
        url = f"https://127.0.0.1:{port}/v1"
        async with open_http_client(verify=_client_context(ca)) as http:
            with trio.fail_after(10):
                async with trio.open_nursery() as clients:
                    for _ in range(streams):
                        clients.start_soon(client, url)
                await client(url)
            transport = http._transport
            assert isinstance(transport, PooledTransport)
            kept = len(transport.connections)
        nursery.cancel_scope.cancel()
    assert seen == [[("one", '{"n":1}'), ("message", "[DONE]")]] * (streams + 1)
    assert (accepted, answered, kept) == (1, streams + 1, 1)
