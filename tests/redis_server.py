"""Throwaway redis-server processes for the cluster tests (issue #34), never a shared one.

Each server listens on a free loopback port with persistence off and a temporary directory,
is waited for until it answers PING, and is stopped by its pid. The ``redis_servers``
fixture (registered by the tests that need it) starts one shared by a test session and can
start more, or kill one with SIGKILL, for failure tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Final

import pytest

READY_TIMEOUT: Final = 10.0
"""Seconds a new server has to answer PING."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process on ``127.0.0.1:port``."""

    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (.ci/run installs it)")
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self._dir = tempfile.TemporaryDirectory(prefix="pitrio-redis-")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + READY_TIMEOUT
        # Polling for readiness of a process we started: nothing else can tell us when it listens.
        while not _pings(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL the server (as a crash would), and reap it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """Terminate the server by its pid and remove its directory."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        self._dir.cleanup()


class RedisServers:
    """The servers one test session started: ``main`` and any extra ones."""

    def __init__(self) -> None:
        self._servers: list[RedisServer] = []
        self.main = self.start()

    def start(self, port: int | None = None) -> RedisServer:
        """Start another server (on ``port``, e.g. a killed one's, to bring it back)."""
        server = RedisServer(port)
        self._servers.append(server)
        return server

    def stop_all(self) -> None:
        for server in self._servers:
            server.stop()


@pytest.fixture(scope="session")
def redis_servers() -> Iterator[RedisServers]:
    """The session's redis-server processes; ``.main`` is shared by the tests (each test uses
    its own key prefix), ``.start()`` starts an extra one a test may kill."""
    servers = RedisServers()
    try:
        yield servers
    finally:
        servers.stop_all()
