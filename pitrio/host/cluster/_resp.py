"""A small synchronous Redis client (RESP2 over a plain socket) for the lease-renewal thread.

It runs Lua scripts and nothing else the node needs off its event loop: one blocking connection,
opened on first use and again after any failure, so a dropped connection costs one failed call
and the next call reconnects. It is not thread-safe: one thread owns it (:meth:`interrupt`
excepted, which any thread may call to unblock it).
"""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit

from pitrio._exceptions import UsageError


class RespError(Exception):
    """An error reply from Redis (``-ERR ...``, ``-NOSCRIPT ...``, a script's own error); the
    connection is still usable."""


def _encode(args: Sequence[Any]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, bool):
            raise TypeError("a RESP argument cannot be a bool")
        elif isinstance(arg, (int, float)):
            data = repr(arg).encode()
        else:
            raise TypeError(f"a RESP argument must be bytes, str or a number: {arg!r}")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _read_reply(stream: BinaryIO) -> Any:
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("Redis closed the connection")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body
    if kind == b"-":
        return RespError(body.decode(errors="replace"))
    if kind == b":":
        return int(body)
    if kind == b"$":
        size = int(body)
        if size < 0:
            return None
        data = stream.read(size + 2)
        if len(data) != size + 2:
            raise ConnectionError("Redis closed the connection")
        return data[:-2]
    if kind == b"*":
        count = int(body)
        if count < 0:
            return None
        items = [_read_reply(stream) for _ in range(count)]
        for item in items:
            if isinstance(item, RespError):
                return item
        return items
    raise ConnectionError(f"not a RESP2 reply: {line[:40]!r}")


class RespClient:
    """One blocking connection to the Redis at ``url`` (``redis://[:password@]HOST[:PORT][/DB]``).

    ``timeout`` bounds connecting and every reply (seconds). Calls raise :class:`RespError` for
    an error reply and ``OSError`` (``ConnectionError``, ``TimeoutError``) when the connection
    failed; after the latter the connection is closed and the next call opens a new one.
    """

    def __init__(self, url: str, *, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme != "redis" or not parts.hostname:
            raise UsageError(f"not a redis:// URL: {url!r}")
        self._address = (parts.hostname, parts.port or 6379)
        self._password = unquote(parts.password) if parts.password else None
        self._username = unquote(parts.username) if parts.username else None
        path = parts.path.strip("/")
        self._db = int(path) if path else 0
        self._timeout = timeout
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._stream: BinaryIO | None = None
        self._shas: dict[str, str] = {}

    def _connect(self) -> BinaryIO:
        sock = socket.create_connection(self._address, timeout=self._timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._sock = sock
        stream: BinaryIO = sock.makefile("rb")
        self._stream = stream
        try:
            if self._password is not None:
                auth = [self._username, self._password] if self._username else [self._password]
                self._checked(self._roundtrip(["AUTH", *auth]))
            if self._db:
                self._checked(self._roundtrip(["SELECT", self._db]))
        except RespError as exc:
            self.close()
            raise ConnectionError(f"Redis refused the connection: {exc}") from None
        return stream

    def _roundtrip(self, args: Sequence[Any]) -> Any:
        stream = self._stream or self._connect()
        sock = self._sock
        assert sock is not None
        try:
            sock.sendall(_encode(args))
            return _read_reply(stream)
        except (OSError, ValueError) as exc:
            self.close()
            if isinstance(exc, OSError):
                raise
            raise ConnectionError(f"unreadable reply from Redis: {exc}") from exc

    @staticmethod
    def _checked(reply: Any) -> Any:
        if isinstance(reply, RespError):
            raise reply
        return reply

    def call(self, *args: Any) -> Any:
        """Send one command and return its reply (bytes, int, None or a list of those).

        Raises:
            RespError: Redis replied with an error.
            OSError: the connection failed (closed; the next call reconnects).
        """
        return self._checked(self._roundtrip(args))

    def run_script(self, source: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a Lua script by its SHA1 (EVALSHA); when Redis lacks it (NOSCRIPT, e.g. after a
        restart or SCRIPT FLUSH) load it and run it again.

        Raises:
            RespError: the script's error reply (or Redis refused the script).
            OSError: the connection failed.
        """
        sha = self._shas.get(source)
        if sha is None:
            sha = self._shas[source] = hashlib.sha1(source.encode()).hexdigest()
        command = [sha, len(keys), *keys, *args]
        reply = self._roundtrip(["EVALSHA", *command])
        if isinstance(reply, RespError) and str(reply).startswith("NOSCRIPT"):
            self.call("SCRIPT", "LOAD", source)
            reply = self._roundtrip(["EVALSHA", *command])
        return self._checked(reply)

    def interrupt(self) -> None:
        """Unblock a call in progress in another thread (it raises ``OSError``); any thread."""
        with self._lock:
            sock = self._sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        with self._lock:
            sock, self._sock = self._sock, None
        stream, self._stream = self._stream, None
        if stream is not None:
            with suppress(OSError):
                stream.close()
        if sock is not None:
            with suppress(OSError):
                sock.close()
