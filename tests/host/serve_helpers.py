"""An in-process ``pitrio serve`` host on loopback with the faux provider, and its clients.

::

    async with open_test_host(tmp_path) as host:
        async with open_client(host) as client:
            created = await client.call({"type": "create_session"})
            ...

Sessions are built by the command's own factory (:func:`pitrio.cli._serve.make_session_factory`)
with ``--provider faux`` in a throw-away agent dir; ``script`` plays scripted responses
(``PITRIO_FAUX_SCRIPT``) instead of echoing.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
from trio_websocket import WebSocketConnection, wrap_client_stream

from pitrio.cli._serve import make_session_factory
from pitrio.host import Host, HostConfig, HostLimits, open_host
from pitrio.host.ws._http import ReplayStream

_ids = itertools.count(1)


def faux_env(
    root: str, *, script: list[Any] | None = None, settings: dict[str, Any] | None = None
) -> dict[str, str]:
    """An environment with its own agent dir (and faux script, and settings)."""
    agent = os.path.join(root, "agent")
    os.makedirs(agent, exist_ok=True)
    env = {"HOME": root, "PITRIO_CODING_AGENT_DIR": agent, "PATH": os.environ.get("PATH", "")}
    if script is not None:
        path = os.path.join(root, "faux.json")
        with open(path, "w") as f:
            json.dump(script, f)
        env["PITRIO_FAUX_SCRIPT"] = path
    if settings is not None:
        with open(os.path.join(agent, "settings.json"), "w") as f:
            json.dump(settings, f)
    return env


@asynccontextmanager
async def open_test_host(
    root: str | os.PathLike[str],
    *,
    script: list[Any] | None = None,
    settings: dict[str, Any] | None = None,
    limits: HostLimits | None = None,
    factory_options: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    cluster: Any = None,
    **config: Any,
) -> AsyncIterator[Host]:
    """A host on ``127.0.0.1:<free port>`` whose sessions use the faux provider
    (``factory_options``: more keyword arguments for ``make_session_factory``; ``extra_env``:
    more variables for the sessions, e.g. ``PITRIO_FAUX_TOKENS_PER_SECOND``; ``cluster``: a
    cluster node, making the host one node of a cluster)."""
    root = os.fspath(root)
    env = {**faux_env(root, script=script, settings=settings), **(extra_env or {})}
    factory = make_session_factory(cwd=root, env=env, provider="faux", **(factory_options or {}))
    options: dict[str, Any] = {
        "port": 0,
        "session_dir": os.path.join(root, "sessions"),
        "roots": (root,),
    }
    options.update(config)
    if limits is not None:
        options["limits"] = limits
    async with open_host(factory, HostConfig(**options), cluster=cluster) as host:
        yield host


@attrs.define
class Client:
    """A websocket client that reads frames as JSON and remembers them."""

    ws: WebSocketConnection
    seen: list[dict[str, Any]] = attrs.field(factory=list)

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps(frame))

    async def frame(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(await self.ws.get_message())
        self.seen.append(parsed)
        return parsed

    async def until(self, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Frames up to and including the first that matches."""
        got = []
        while True:
            frame = await self.frame()
            got.append(frame)
            if match(frame):
                return got

    async def call(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame`` with a fresh id; return its response (other frames are kept)."""
        id_ = f"r{next(_ids)}"
        await self.send({**frame, "id": id_})
        got = await self.until(lambda f: f.get("type") == "response" and f.get("id") == id_)
        return got[-1]

    async def raw_call(self, text: str) -> dict[str, Any]:
        """Send a text frame as is; return the next response."""
        await self.ws.send_message(text)
        got = await self.until(lambda f: f.get("type") == "response")
        return got[-1]


@asynccontextmanager
async def open_client(
    host: Host,
    *,
    token: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
    receive_buffer: int | None = None,
) -> AsyncIterator[Client]:
    """A websocket client with ``?token=`` (the host token by default).

    The TCP stream is ours and closed on exit: trio-websocket's client leaves its socket
    open when the server closes first. ``receive_buffer`` makes the socket's receive buffer
    small, so that when the client stops reading the host's writes back up after a few KB.
    """
    sock = trio.socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, receive_buffer)
    await sock.connect(("127.0.0.1", host.port))
    stream = trio.SocketStream(sock)
    resource = f"/ws?token={host.token if token is None else token}"
    async with stream, trio.open_nursery() as nursery:
        ws = await wrap_client_stream(
            nursery,
            # ReplayStream breaks the cycle a socket closed under its reader leaves on CPython
            # 3.13 (see its receive_some): the memory tests count every trio-websocket object.
            ReplayStream(stream, b""),
            "127.0.0.1",
            resource,
            extra_headers=headers,
            message_queue_size=1 if receive_buffer is not None else 64,
        )
        try:
            yield Client(ws)
        finally:
            with trio.move_on_after(5):
                await ws.aclose()
            nursery.cancel_scope.cancel()


async def http_get(
    host: Host, path: str, headers: dict[str, str] | None = None, *, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET (or ``method``) on a fresh connection: status, headers
    (lower-case), body."""
    stream = await trio.open_tcp_stream("127.0.0.1", host.port)
    async with stream:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{host.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), parsed, body


async def upgrade_status(host: Host, target: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status a websocket upgrade request for ``target`` is answered with."""
    upgrade = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        **(headers or {}),
    }
    stream = await trio.open_tcp_stream("127.0.0.1", host.port)
    async with stream:
        lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{host.port}"]
        lines += [f"{k}: {v}" for k, v in upgrade.items()]
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


def text_of_deltas(frames: list[dict[str, Any]]) -> str:
    """The assistant text the ``text_delta`` updates among ``frames`` spell."""
    return "".join(
        f["assistantMessageEvent"]["delta"]
        for f in frames
        if f.get("type") == "message_update"
        and f["assistantMessageEvent"].get("type") == "text_delta"
    )
