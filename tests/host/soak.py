"""Soak a real ``pitrio serve`` (faux provider, paced) with rounds of websocket clients and read
its RSS from ``/proc`` after each round.

Each client of a round: connects, creates a session, prompts, reads the stream until a few
deltas arrived, drops its TCP connection (no closing handshake), reconnects, reopens the
session with ``resume_from`` its last seq, reads to ``agent_end``, closes the session and
disconnects. A round ends once the host reports no session and no client (``/healthz``).

    python -m tests.host.soak --clients 500 --rounds 3 [--no-gc-tuning]

prints one JSON object (the RSS after each round, in MB); the test runs it with fewer clients.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import attrs
import trio
from trio_websocket import WebSocketConnection, wrap_client_stream

from pitrio.host.ws._http import ReplayStream
from tests.host.serve_helpers import faux_env

TOKENS_PER_SECOND = 50
"""The faux pace: the echo answer (13-14 deltas) streams over about a quarter of a second."""
DELTAS_BEFORE_DROP = 3
SETTLE_POLLS = 3000
"""``/healthz`` polls (10 ms apart) a round may take to reach no session and no client."""
GUARD_S = 600.0
"""A round that takes longer than this is a hang, not a slow machine."""


@attrs.frozen
class ServeProcess:
    process: trio.Process
    port: int
    token: str

    def rss_mb(self) -> float:
        """The host's resident set size, from ``/proc/<pid>/status``."""
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS line")


async def _drain(stream: trio.abc.ReceiveStream, ready: trio.Event, found: list[str]) -> None:
    # The host logs every connection and session: the pipe is read to the end, or it would
    # fill up and stall the host.
    text = b""
    while chunk := await stream.receive_some(65536):
        if not ready.is_set():
            text += chunk
            if b"listening on" in text and b"\n" in text.split(b"listening on", 1)[1]:
                found.append(text.decode(errors="replace"))
                ready.set()
    ready.set()


@asynccontextmanager
async def serve_process(root: str, *, gc_tuning: bool = True) -> AsyncIterator[ServeProcess]:
    """``pitrio serve --port 0 --provider faux`` in ``root``, its faux answers paced."""
    env = {
        **os.environ,
        **faux_env(root),
        "PITRIO_FAUX_TOKENS_PER_SECOND": str(TOKENS_PER_SECOND),
        "PITRIO_GC_TUNING": "1" if gc_tuning else "0",
    }
    env.pop("PITRIO_HOST_TOKEN", None)
    command = [
        *(sys.executable, "-m", "pitrio", "serve", "--port", "0", "--provider", "faux"),
        *("--session-dir", os.path.join(root, "sessions")),
    ]
    run = functools.partial(
        trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False, cwd=root
    )
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(run)
        try:
            assert process.stderr is not None
            ready = trio.Event()
            found: list[str] = []
            nursery.start_soon(_drain, process.stderr, ready, found)
            await ready.wait()
            assert found, "pitrio serve ended before listening"
            text = found[0].split("listening on ", 1)[1]
            port = int(text.split()[0].rstrip("/").rsplit(":", 1)[1])
            token = text.split("token=", 1)[1].split()[0]
            yield ServeProcess(process, port, token)
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                await process.wait()


async def health(port: int) -> dict[str, Any]:
    """The host's ``/healthz`` answer."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        await stream.send_all(request.encode())
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    parsed: dict[str, Any] = json.loads(data.partition(b"\r\n\r\n")[2])
    return parsed


class Address(Protocol):
    """Where a host listens and its token (a :class:`ServeProcess`, an in-process Host)."""

    @property
    def port(self) -> int: ...

    @property
    def token(self) -> str: ...


@asynccontextmanager
async def connect(host: Address) -> AsyncIterator[tuple[WebSocketConnection, trio.SocketStream]]:
    """A websocket to the host and the TCP stream under it (closing that drops the
    connection without a closing handshake)."""
    stream = await trio.open_tcp_stream("127.0.0.1", host.port)
    async with stream, trio.open_nursery() as nursery:
        # Through ReplayStream, which breaks the cycle a socket closed under its reader leaves
        # on CPython 3.13 (see its receive_some): the memory test counts every trio-websocket
        # object.
        reader = ReplayStream(stream, b"")
        ws = await wrap_client_stream(nursery, reader, "127.0.0.1", f"/ws?token={host.token}")
        try:
            yield ws, stream
        finally:
            nursery.cancel_scope.cancel()


async def _frame(ws: WebSocketConnection) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(await ws.get_message())
    return parsed


async def _call(ws: WebSocketConnection, frame: dict[str, Any], id_: str) -> dict[str, Any]:
    """Send ``frame``; return its response (other frames are skipped)."""
    await ws.send_message(json.dumps({**frame, "id": id_}))
    while True:
        got = await _frame(ws)
        if got.get("type") == "response" and got.get("id") == id_:
            return got


async def one_client(host: ServeProcess, index: int) -> None:
    """Connect, stream, drop, resume, close (see the module docstring)."""
    async with connect(host) as (ws, stream):
        created = await _call(ws, {"type": "create_session"}, "c")
        assert created["success"], created
        session = created["data"]["session"]
        prompt = {"type": "prompt", "session": session, "message": f"soak client {index}"}
        answer = await _call(ws, prompt, "p")
        assert answer["success"], answer
        seq = 0
        deltas = 0
        while deltas < DELTAS_BEFORE_DROP:
            got = await _frame(ws)
            seq = got.get("seq", seq)
            if got.get("type") == "message_update":
                deltas += 1
            if got.get("type") == "agent_end":
                break
        # Dropped: the TCP connection closed under the websocket, no closing handshake.
        await trio.aclose_forcefully(stream)
    async with connect(host) as (ws, _):
        opened = {"type": "open_session", "session": session, "resume_from": seq}
        reopened = await _call(ws, opened, "o")
        assert reopened["success"], reopened
        while (await _frame(ws)).get("type") != "agent_end":
            pass
        closed = await _call(ws, {"type": "close_session", "session": session}, "x")
        assert closed["success"], closed
        await ws.aclose()


async def settle(host: ServeProcess) -> None:
    """Wait until the host has no session and no client (bounded)."""
    for _ in range(SETTLE_POLLS):
        state = await health(host.port)
        if state["sessions"] == 0 and state["clients"] == 0:
            return
        await trio.sleep(0.01)
    raise AssertionError(f"the host did not settle: {state}")


async def soak(root: str, clients: int, rounds: int, *, gc_tuning: bool = True) -> dict[str, Any]:
    """Run the rounds; the host's RSS (MB) at start and after each round."""
    async with serve_process(root, gc_tuning=gc_tuning) as host:
        await settle(host)
        result: dict[str, Any] = {
            "clients": clients,
            "rounds": rounds,
            "gc_tuning": gc_tuning,
            "rss_start_mb": round(host.rss_mb(), 1),
            "rss_after_round_mb": [],
        }
        for _ in range(rounds):
            with trio.fail_after(GUARD_S):
                async with trio.open_nursery() as nursery:
                    for index in range(clients):
                        nursery.start_soon(one_client, host, index)
                await settle(host)
            result["rss_after_round_mb"].append(round(host.rss_mb(), 1))
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-gc-tuning", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitrio-soak-") as root:
        result = trio.run(
            functools.partial(
                soak, root, args.clients, args.rounds, gc_tuning=not args.no_gc_tuning
            )
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
