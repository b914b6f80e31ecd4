"""A ``pitrio --mode rpc --provider faux`` subprocess driven over its real pipes (Trio)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import trio

from pitrio.host import LineSplitter


class RpcProcess:
    """Send records to the process's stdin; read its stdout records one at a time."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._splitter = LineSplitter()
        self._pending: list[bytes] = []
        self.seen: list[dict[str, Any]] = []

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def send(self, record: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(record).encode() + b"\n")

    async def raw_line(self) -> bytes:
        assert self.process.stdout is not None
        while not self._pending:
            data = await self.process.stdout.receive_some(65536)
            assert data, "the rpc process closed its stdout"
            self._pending.extend(
                r for r in self._splitter.feed(bytes(data)) if isinstance(r, bytes)
            )
        return self._pending.pop(0)

    async def record(self) -> dict[str, Any]:
        line = await self.raw_line()
        parsed: dict[str, Any] = json.loads(line)
        self.seen.append(parsed)
        return parsed

    async def until(self, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Records up to and including the first that matches."""
        got = []
        while True:
            record = await self.record()
            got.append(record)
            if match(record):
                return got

    async def response(self, id_: str) -> dict[str, Any]:
        got = await self.until(lambda r: r.get("type") == "response" and r.get("id") == id_)
        return got[-1]

    async def call(self, record: dict[str, Any]) -> dict[str, Any]:
        await self.send(record)
        return await self.response(record["id"])


async def open_rpc(
    nursery: trio.Nursery, cwd: str, *args: str, script: list[Any] | None = None
) -> RpcProcess:
    """Start the process in ``cwd`` (agent and session dirs inside it)."""
    env = {
        **os.environ,
        "HOME": cwd,
        "PITRIO_CODING_AGENT_DIR": os.path.join(cwd, "agent"),
        "PI_CODING_AGENT_DIR": os.path.join(cwd, "pi-agent"),
    }
    if script is not None:
        path = os.path.join(cwd, "faux.json")
        await trio.Path(path).write_text(json.dumps(script))
        env["PITRIO_FAUX_SCRIPT"] = path
    command = [sys.executable, "-m", "pitrio", "--mode", "rpc", "--provider", "faux", *args]
    run = functools.partial(
        trio.run_process,
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=cwd,
        env=env,
        check=False,
    )
    process: trio.Process = await nursery.start(run)
    return RpcProcess(process)
