"""The test suite's own guard: no test reaches the network (``tests/conftest.py``)."""

from __future__ import annotations

import socket

import httpx2
import pytest
import trio
from conftest import ALLOW_NETWORK, NetworkRefused


def _holds(exc: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``exc``, its groups' members or its causes include a ``kind``."""
    if exc is None:
        return False
    if isinstance(exc, kind):
        return True
    if isinstance(exc, BaseExceptionGroup) and any(_holds(e, kind) for e in exc.exceptions):
        return True
    return _holds(exc.__cause__ or exc.__context__, kind)


def test_the_network_is_off_for_tests() -> None:
    """``ALLOW_NETWORK`` is false in the checked-in suite."""
    assert ALLOW_NETWORK is False


def test_a_connect_to_a_public_address_is_refused() -> None:
    """A plain socket connect to a non-loopback address raises before any packet is sent."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(NetworkRefused):
            sock.connect(("192.0.2.1", 443))
        with pytest.raises(NetworkRefused):
            sock.connect_ex(("192.0.2.1", 443))


def test_a_name_lookup_is_refused_but_localhost_resolves() -> None:
    """Resolving a public name is refused; ``localhost`` and literal addresses still resolve."""
    with pytest.raises(NetworkRefused):
        socket.getaddrinfo("example.com", 443)
    assert socket.getaddrinfo("localhost", 80)
    assert socket.getaddrinfo("127.0.0.1", 80)


async def test_an_http_request_to_a_public_host_is_refused() -> None:
    """httpx on Trio (how providers talk) cannot reach a public host either."""
    async with httpx2.AsyncClient() as client:
        with pytest.raises(Exception) as caught:
            await client.get("https://192.0.2.1/")
    assert _holds(caught.value, NetworkRefused)


async def test_loopback_connects_still_work() -> None:
    """A loopback connection carries bytes as before."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with listeners[0], await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(b"ping")
        accepted = await listeners[0].accept()
        async with accepted:
            assert await accepted.receive_some(4) == b"ping"
