"""Three ``pitrio serve --cluster`` processes on one Redis and one shared session folder; the
node owning a third of the sessions is killed with SIGKILL mid-stream (issue #34).

Every client whose node died reconnects to a surviving node with its cursor: its transcript
(built only from the frames it received) ends equal to its session file, no seq is repeated
or skipped within an epoch (``View.apply`` asserts it), the interrupted answer is in the file
marked aborted, and a new prompt is answered in the new epoch. Half of node 0's sessions also
have an observer on a surviving node (a gateway relaying the stream) that stays connected from
before the first prompt to the answer after the failover; its transcript ends equal to the file
too. The failover time (the kill to the first event of a new epoch any client receives) is
printed.

``PITRIO_CLUSTER_CLIENTS`` sets the number of clients (default 300).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from tests.host.serve_helpers import Client, faux_env, open_client
from tests.host.ws.test_serve_crash import View, _deltas, _is_end, file_messages

pytest.importorskip("coredis")

CLIENTS: Final = int(os.environ.get("PITRIO_CLUSTER_CLIENTS", "300"))
NODES: Final = 3
GUARD_S: Final = 240
"""A hung test fails instead of hanging the suite (not a timing assertion)."""
TOKENS_PER_SECOND: Final = 20
DOOMED_TOKENS_PER_SECOND: Final = 4
"""Node 0 (killed mid-answer) streams slower: its answers (about 40 s) outlast its burst of
100 session creations on a loaded machine, so every one of its turns is running at the kill;
its turns never end, so this costs no time."""
LONG: Final = "stream me slowly " * 40
DELTAS_BEFORE_KILL: Final = 3
LEASE_TTL: Final = 5.0
"""The default: shorter lapses on a loaded 2-core machine while a node is busy (its renewal
runs late), which the test would count as failures."""
TOKEN: Final = "cluster-failover-token"
REPO: Final = str(Path(__file__).resolve().parents[3])


class _Address:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token


@asynccontextmanager
async def _node(
    tmp_path: Path, nursery: trio.Nursery, env: dict[str, str], url: str, name: str
) -> AsyncIterator[tuple[trio.Process, _Address]]:
    """``pitrio serve --cluster url`` (this tree's pitrio) on the shared ``tmp_path/sessions``."""
    command = [
        *(sys.executable, "-m", "pitrio", "serve", "--port", "0", "--provider", "faux"),
        *("--session-dir", str(tmp_path / "sessions"), "--drain-grace", "0.2"),
        *("--token", TOKEN, "--cluster", url, "--node-id", name),
        *("--lease-ttl", str(LEASE_TTL), "--max-sessions-per-token", str(CLIENTS)),
    ]
    run = functools.partial(
        trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False, cwd=tmp_path
    )
    process: trio.Process = await nursery.start(run)
    assert process.stderr is not None
    line = b""
    while b"listening on" not in line:
        chunk = await process.stderr.receive_some(4096)
        assert chunk, f"pitrio serve ended before listening: {line.decode()}"
        line += chunk
    text = line.decode().split("listening on ", 1)[1]
    port = int(text.split()[0].rstrip("/").rsplit(":", 1)[1])

    async def drain_stderr() -> None:  # a full pipe would stall the host's logging
        assert process.stderr is not None
        # Kept for a failure's post-mortem (the test's own small writes, off the event loop).
        async with await trio.open_file(tmp_path / f"{name}.log", "ab") as log:
            await log.write(line)
            while chunk := await process.stderr.receive_some(65536):
                await log.write(chunk)

    nursery.start_soon(drain_stderr)
    try:
        yield process, _Address(port, TOKEN)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block["type"] == "text")


class _Run:
    """What the clients share: the kill's time and the first new-epoch event's."""

    def __init__(self) -> None:
        self.killed_at: float | None = None
        self.first_new_epoch_at: float | None = None
        self.doomed_streaming = 0
        self.doomed_all_streaming = trio.Event()
        """Every client of the node to kill (node 0) has its first deltas: its turns are
        running. Waiting for all clients instead let a loaded machine finish some of node 0's
        turns (started first) before the kill."""
        self.kill_done = trio.Event()
        self.stage: dict[int | str, str] = {}
        """Each client's step, for the report of a test that timed out."""

    def note(self, frame: dict[str, Any]) -> None:
        if (
            self.killed_at is not None
            and self.first_new_epoch_at is None
            and frame.get("epoch", 1) > 1
            and "seq" in frame
        ):
            self.first_new_epoch_at = trio.current_time()


async def _pump_noting(client: Client, view: View, run: _Run, until: Any) -> None:
    while True:
        frame = await client.frame()
        run.note(frame)
        view.apply(frame)
        if until(frame):
            return


def _observed(index: int) -> bool:
    """Half of node 0's sessions also have an observer on another node (a gateway)."""
    return index % NODES == 0 and index % 2 == 0


async def _observe(
    index: int,
    gateway: _Address,
    start: View,
    run: _Run,
    observers: dict[int, View],
    *,
    task_status: trio.TaskStatus[None],
) -> None:
    """A client of a gateway that follows a session of node 0 from before its first prompt
    through the failover to the answer of the prompt sent after it, without reconnecting."""
    key = f"observer {index}"
    run.stage[key] = "opening through a gateway"
    async with open_client(gateway) as client:  # type: ignore[arg-type]
        view = View(start.session, start.file, start.epoch, start.seq)
        cursor = {"resume_from": view.seq, "epoch": view.epoch}
        opened = await client.call({"type": "open_session", "session": view.session, **cursor})
        assert opened["success"] is True, opened
        task_status.started()
        run.stage[key] = "relaying through the failover"

        def answered_again(frame: dict[str, Any]) -> bool:
            return (
                _is_end(frame)
                and view.epoch > 1
                and _text(view.messages[-1]).startswith("You said: again")
            )

        await _pump_noting(client, view, run, answered_again)
    observers[index] = view
    del run.stage[key]


async def _one_client(
    index: int,
    nodes: list[_Address],
    run: _Run,
    results: dict[int, View],
    observers: dict[int, View],
) -> None:
    if not _observed(index):
        await _client(index, nodes, run, results, None)
        return
    async with trio.open_nursery() as nursery:
        gateway = nodes[1 + (index // NODES) % (NODES - 1)]

        async def start_observer(start: View) -> None:
            await nursery.start(_observe, index, gateway, start, run, observers)

        await _client(index, nodes, run, results, start_observer)


async def _client(
    index: int,
    nodes: list[_Address],
    run: _Run,
    results: dict[int, View],
    created: Callable[[View], Awaitable[None]] | None,
) -> None:
    home = index % NODES
    view: View | None = None
    run.stage[index] = "creating"
    try:
        async with open_client(nodes[home]) as client:  # type: ignore[arg-type]
            data = (await client.call({"type": "create_session"}))["data"]
            view = View(data["session"], data["sessionFile"], data["epoch"], data["seq"])
            if created is not None:
                await created(View(view.session, view.file, view.epoch, view.seq))
            await client.send({"type": "prompt", "session": view.session, "message": LONG})
            await _pump_noting(client, view, run, _deltas(DELTAS_BEFORE_KILL))
            if home == 0:
                run.doomed_streaming += 1
                if run.doomed_streaming == len(range(0, CLIENTS, NODES)):
                    run.doomed_all_streaming.set()
            if home != 0:
                run.stage[index] = "answer on a surviving node"
                await _pump_noting(client, view, run, _is_end)
                results[index] = view
                del run.stage[index]
                return
            run.stage[index] = "waiting for its node's death"
            with trio.move_on_after(GUARD_S):
                await _pump_noting(client, view, run, lambda f: False)
    except Exception as exc:  # the killed node's connections end in several ways
        if home != 0 or view is None:
            raise
        del exc
    assert view is not None
    run.stage[index] = "waiting for the kill"
    await run.kill_done.wait()
    # Reconnect to a surviving node with the cursor; the new owner answers once it took over.
    survivor = nodes[1 + index % (NODES - 1)]
    run.stage[index] = "reconnecting"
    async with open_client(survivor) as client:  # type: ignore[arg-type]
        cursor = {"resume_from": view.seq, "epoch": view.epoch}
        run.stage[index] = "opening on a survivor"
        opened = await client.call({"type": "open_session", "session": view.session, **cursor})
        assert opened["success"] is True, opened
        run.stage[index] = "waiting for the new epoch's snapshot"
        await _pump_noting(client, view, run, lambda f: f.get("type") == "snapshot")
        assert view.epoch > 1
        last = view.messages[-1]
        assert last["role"] == "assistant" and last["stopReason"] == "aborted", last
        await client.send({"type": "prompt", "session": view.session, "message": "again"})
        run.stage[index] = "answer after the failover"
        await _pump_noting(client, view, run, _is_end)
        assert _text(view.messages[-1]).startswith("You said: again")
    results[index] = view
    del run.stage[index]


async def test_cluster_failover_every_client_ends_equal_to_its_file(
    tmp_path: Path, redis_servers: Any
) -> None:
    redis = redis_servers.start()
    env = {
        **os.environ,
        **faux_env(str(tmp_path)),
        "PITRIO_FAUX_TOKENS_PER_SECOND": str(TOKENS_PER_SECOND),
        "PYTHONPATH": REPO,
    }
    env.pop("PITRIO_HOST_TOKEN", None)
    doomed_env = {**env, "PITRIO_FAUX_TOKENS_PER_SECOND": str(DOOMED_TOKENS_PER_SECOND)}
    run = _Run()
    results: dict[int, View] = {}
    observers: dict[int, View] = {}
    with trio.move_on_after(GUARD_S) as guard:
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            started = [
                await stack.enter_async_context(
                    _node(tmp_path, nursery, env if i else doomed_env, redis.url, f"n{i}")
                )
                for i in range(NODES)
            ]
            processes = [process for process, _ in started]
            nodes = [address for _, address in started]
            async with trio.open_nursery() as clients:
                for index in range(CLIENTS):
                    clients.start_soon(_one_client, index, nodes, run, results, observers)
                await run.doomed_all_streaming.wait()
                run.killed_at = trio.current_time()
                os.kill(processes[0].pid, signal.SIGKILL)
                await processes[0].wait()
                run.kill_done.set()
            for process in processes[1:]:
                process.send_signal(signal.SIGTERM)
            for process in processes[1:]:
                await process.wait()
            nursery.cancel_scope.cancel()
    if guard.cancelled_caught:
        stuck = Counter(run.stage.values())
        raise AssertionError(
            f"timed out; clients not done, by step: {dict(stuck)} (logs in {tmp_path})"
        )
    assert len(results) == CLIENTS
    assert len(observers) == len([i for i in range(CLIENTS) if _observed(i)])
    for view in [*results.values(), *observers.values()]:
        assert view.messages == file_messages(view.file), view.session
    assert run.killed_at is not None and run.first_new_epoch_at is not None
    failover = run.first_new_epoch_at - run.killed_at
    print(f"\nfailover: {failover:.2f} s (kill -9 to the first event of a new epoch)")
