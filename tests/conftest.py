"""Shared fixtures. Tests never reach the network: providers are tested against loopback servers.

That is enforced, not hoped for: while ``ALLOW_NETWORK`` is false, a session-wide guard makes
every socket ``connect`` to an address that is not loopback (or a Unix socket), and every name
lookup other than ``localhost``, raise :class:`NetworkRefused` before anything leaves the
machine (pydantic-ai's ``ALLOW_MODEL_REQUESTS``). Subprocesses the tests start are not guarded.

Hypothesis runs under one profile, ``pitrio``, loaded here for every test: no per-example
deadline (a loaded 2-core machine easily takes longer than Hypothesis's default 200 ms, and a
timing failure says nothing about the code) and no example database, so a failure found on one
run is never saved into the checkout (``.hypothesis/``) to replay on later runs. Hypothesis
also caches what it learns from the source (``constants/``) in its home directory, which is
moved to the system temp directory so that nothing it writes lands in the checkout. A test that
needs fewer examples sets ``max_examples`` only.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from collections.abc import Iterator
from typing import Any, Final

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

ALLOW_NETWORK: Final = False
"""Whether tests may reach addresses other than loopback (see the module docstring)."""

HYPOTHESIS_PROFILE: Final = "pitrio"
HYPOTHESIS_HOME: Final = os.path.join(tempfile.gettempdir(), "pitrio-hypothesis")

set_hypothesis_home_dir(HYPOTHESIS_HOME)

settings.register_profile(HYPOTHESIS_PROFILE, deadline=None, database=None)
settings.load_profile(HYPOTHESIS_PROFILE)


class NetworkRefused(RuntimeError):
    """A test tried to reach the network while ``ALLOW_NETWORK`` is false."""


LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_local_address(address: Any) -> bool:
    """Whether a ``connect`` address stays on this machine (loopback, unspecified, Unix)."""
    if isinstance(address, (str, bytes)):
        return True  # AF_UNIX path (or abstract name)
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or ip.is_unspecified or bool(mapped and mapped.is_loopback)


def is_local_name(host: Any) -> bool:
    """Whether looking ``host`` up needs no resolver (a literal address, or localhost)."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    if str(host) in LOOPBACK_NAMES:
        return True
    try:
        ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return True


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    """Refuse non-loopback connects and lookups for the whole run (unless ALLOW_NETWORK)."""
    if ALLOW_NETWORK:
        yield
        return
    connect, connect_ex, getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not is_local_address(address):
            raise NetworkRefused(f"tests may not connect to {address!r} (ALLOW_NETWORK)")
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not is_local_address(address):
            raise NetworkRefused(f"tests may not connect to {address!r} (ALLOW_NETWORK)")
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_local_name(host):
            raise NetworkRefused(f"tests may not look up {host!r} (ALLOW_NETWORK)")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo
