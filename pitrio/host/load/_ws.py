"""``pitrio load --target ws://...``: websocket clients against running ``pitrio serve`` hosts.

Each session is one client connection (docs/host-protocol.md): ``create_session``, then for
every prompt a ``prompt`` command and the session's events until ``agent_end``, then
``close_session``. The client's own RSS is what the run's RSS figures measure; the host's
``/metrics`` (read with the same token before and after the run) is reported as it is.

Several addresses (``--target ws://a:1,ws://b:2``: the nodes of a cluster) spread the sessions
over them in turn (session ``i`` on node ``i mod n``); the summary's ``nodes`` then has one
entry per address (its sessions, events, TTFT and per-token lag, errors, and its ``/metrics``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

import orjson
import trio
import trio_websocket

from pitrio._exceptions import PitrioError
from pitrio.host.load._report import (
    LoadTally,
    PromptObserver,
    PromptResult,
    distribution_fields,
)
from pitrio.host.load._script import prompt_text

if TYPE_CHECKING:
    from pitrio.host.load._config import LoadConfig, RunContext

TOKEN_ENV: Final = "PITRIO_HOST_TOKEN"
"""Where the host token is read from when ``--token`` is not given (as ``pitrio serve``)."""
MAX_FRAME_BYTES: Final = 16 * 2**20
"""The largest frame the client accepts (a snapshot of a long session can be big)."""
METRICS_TIMEOUT_S: Final = 10.0


class HostCommandFailed(PitrioError):
    """The host answered a command with ``success: false``.

    Attributes:
        command: the command's type.
        error: the host's error text.
    """

    def __init__(self, command: str, error: str) -> None:
        super().__init__(f"{command}: {error}")
        self.command = command
        self.error = error


def split_targets(target: str) -> list[str]:
    """The host addresses of a ``--target`` value (comma-separated, blanks dropped)."""
    return [part.strip() for part in target.split(",") if part.strip()]


def websocket_url(target: str) -> str:
    """The websocket endpoint of a host address (``ws://host:port`` -> ``ws://host:port/ws``)."""
    parts = urlsplit(target)
    path = parts.path if parts.path not in ("", "/") else "/ws"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def metrics_url(target: str) -> str:
    """The ``/metrics`` address of a host address."""
    parts = urlsplit(target)
    scheme = "https" if parts.scheme == "wss" else "http"
    return urlunsplit((scheme, parts.netloc, "/metrics", "", ""))


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition -> ``{"name{labels}": value}`` (comments skipped)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.rpartition(" ")
        if not name:
            continue
        try:
            values[name.strip()] = float(rest)
        except ValueError:
            continue
    return values


def _body(body: bytes | None) -> str:
    return (body or b"").decode("utf-8", "replace")[:200]


class _Node:
    """One host address of the run and what its sessions measured."""

    __slots__ = ("address", "tally", "url")

    def __init__(self, address: str, sessions: int) -> None:
        self.address = address
        self.url = websocket_url(address)
        self.tally = LoadTally(sessions=sessions)


class WsTarget:
    """Sessions in ``pitrio serve`` hosts, one websocket client per session, spread over the
    addresses in turn."""

    def __init__(self, config: LoadConfig) -> None:
        self.config = config
        addresses = split_targets(config.target)
        count = len(addresses)
        self.nodes = [
            _Node(address, len(range(i, config.sessions, count)))
            for i, address in enumerate(addresses)
        ]
        self.url = self.nodes[0].url
        self.token = config.token or os.environ.get(TOKEN_ENV)
        self._ids = itertools.count(1)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[None]:
        yield

    def open(self) -> AbstractAsyncContextManager[None]:
        """Nothing to set up: each session opens its own connection."""
        return self._open()

    async def warm_up(self, nursery: trio.Nursery) -> None:
        """The host warms itself up; the client does not."""

    def _headers(self) -> list[tuple[bytes, bytes]]:
        if not self.token:
            return []
        return [(b"Authorization", f"Bearer {self.token}".encode())]

    async def host_metrics(self) -> dict[str, Any] | None:
        """The host's ``/metrics`` (None when it cannot be read); with several addresses,
        ``{address: metrics or None}``."""
        if len(self.nodes) == 1:
            return await self._node_metrics(self.nodes[0].address)
        return {node.address: await self._node_metrics(node.address) for node in self.nodes}

    async def _node_metrics(self, address: str) -> dict[str, float] | None:
        import httpx2

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with httpx2.AsyncClient(timeout=METRICS_TIMEOUT_S) as client:
                response = await client.get(metrics_url(address), headers=headers)
        except httpx2.HTTPError:
            return None
        if response.status_code != 200:
            return None
        return parse_metrics(response.text)

    def node_report(self, wall: float, metrics: dict[str, Any] | None) -> list[dict[str, Any]]:
        """Per address: its sessions, events, events/s over ``wall``, TTFT and per-token lag
        percentiles, errors, and the host's RSS and owned sessions from ``metrics`` (as
        :meth:`host_metrics` returned them after the run)."""
        report = []
        for node in self.nodes:
            tally = node.tally
            if metrics is None:
                scraped = None
            elif len(self.nodes) == 1:
                scraped = metrics
            else:
                scraped = metrics.get(node.address)
            rss = None if scraped is None else scraped.get("pitrio_host_rss_bytes")
            report.append(
                {
                    "target": node.address,
                    "sessions": tally.sessions,
                    "sessions_completed": tally.sessions_completed,
                    "events": tally.events,
                    "events_per_s": round(tally.events / wall, 1) if wall > 0 else None,
                    **distribution_fields(tally),
                    "errors": tally.errors,
                    "host_rss_mb": None if rss is None else round(rss / 2**20, 1),
                    "host_owned_sessions": None
                    if scraped is None
                    else scraped.get("pitrio_cluster_owned_sessions"),
                }
            )
        return report

    async def _command(self, ws: trio_websocket.WebSocketConnection, frame: dict[str, Any]) -> Any:
        """Send a command and return its response's ``data`` (other frames are skipped)."""
        frame["id"] = request_id = f"load-{next(self._ids)}"
        await ws.send_message(orjson.dumps(frame).decode())
        while True:
            reply = orjson.loads(await ws.get_message())
            if reply.get("type") == "response" and reply.get("id") == request_id:
                if not reply.get("success"):
                    raise HostCommandFailed(frame["type"], str(reply.get("error")))
                return reply.get("data") or {}

    async def _prompt(
        self,
        ws: trio_websocket.WebSocketConnection,
        session: str,
        text: str,
        observer: PromptObserver,
        node: _Node,
    ) -> tuple[str, str] | None:
        """Send one prompt and observe the session's events until ``agent_end``; returns the
        error when the host refused the prompt or dropped this client."""
        request_id = f"load-{next(self._ids)}"
        frame = {"type": "prompt", "session": session, "message": text, "id": request_id}
        await ws.send_message(orjson.dumps(frame).decode())
        while True:
            event = orjson.loads(await ws.get_message())
            kind = event.get("type")
            if kind == "response":
                if event.get("id") == request_id and not event.get("success"):
                    return ("host_refused:prompt", str(event.get("error")))
                continue
            if kind == "lagged":
                return ("host_lagged", f"resume_from {event.get('resume_from')}")
            if event.get("session") != session or kind == "snapshot":
                continue
            observer.on_wire(event)
            node.tally.events += 1
            if kind == "agent_end":
                return None

    async def run_session(
        self, index: int, ctx: RunContext, results: trio.MemorySendChannel[PromptResult]
    ) -> None:
        """One client: create a session, run its prompts, close it (on node ``index`` mod the
        number of addresses)."""
        config = ctx.config
        arrived = False
        node = self.nodes[index % len(self.nodes)]
        async with results:
            observer = PromptObserver(ctx.tally, config.paced)
            try:
                async with trio_websocket.open_websocket_url(
                    node.url, extra_headers=self._headers(), max_message_size=MAX_FRAME_BYTES
                ) as ws:
                    # Load sessions are throw-away: kept in memory by the host, they do not
                    # pile up in its session folder (where pitrio -r would list them).
                    create: dict[str, Any] = {"type": "create_session", "ephemeral": True}
                    if config.model:
                        create["model"] = config.model
                    data = await self._command(ws, create)
                    session = str(data["session"])
                    ctx.tally.created += 1
                    arrived = True
                    ctx.gate.arrived()
                    await ctx.gate.wait()
                    for k in range(config.prompts):
                        observer.begin()
                        error = await self._prompt(
                            ws, session, prompt_text(index, k), observer, node
                        )
                        last = k == config.prompts - 1
                        result = observer.finish(index, last=last, error=error)
                        node.tally.record(result)
                        await results.send(result)
                    await self._command(ws, {"type": "close_session", "session": session})
            except HostCommandFailed as exc:
                self._error(ctx, node, index, f"host_refused:{exc.command}", exc.error)
            except trio_websocket.ConnectionRejected as exc:
                self._error(ctx, node, index, f"ws_rejected:{exc.status_code}", _body(exc.body))
            except trio_websocket.HandshakeError as exc:
                # trio-websocket reports a refused or failed TCP connection as a handshake error.
                kind = "ws_connect" if isinstance(exc.__cause__, OSError) else "ws_handshake"
                message = str(exc.__cause__ or exc) or type(exc).__name__
                self._error(ctx, node, index, kind, message)
            except trio_websocket.ConnectionClosed as exc:
                self._error(ctx, node, index, "ws_closed", str(exc.reason))
            except OSError as exc:
                self._error(ctx, node, index, "ws_connect", str(exc))
            finally:
                if not arrived:
                    ctx.gate.arrived()

    @staticmethod
    def _error(ctx: RunContext, node: _Node, index: int, kind: str, message: str) -> None:
        ctx.tally.error(index, kind, message)
        node.tally.error(index, kind, message)
