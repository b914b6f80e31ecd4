"""1,000 websocket clients against one ``pitrio serve`` host (issue 14's "Done when").

The host runs in a process of its own (tests/host/scale_host.py, the test's factory and
``open_host``), so that it and the clients each get a core and its memory is its own.

Each client creates its own session and prompts the faux provider, whose answer streams at a
fixed pace, so that the streams of all clients overlap. A third of the clients drop their
connection in the middle of the stream (half of them gracefully, half by closing the TCP socket
under the websocket) and resume with ``open_session`` + ``resume_from``; a third of those drop
twice. Every client then checks what it received against the session's file:

- nothing twice: the seqs it received, across its connections and the replay, strictly increase
  from 1 to the seq of the run's ``agent_end``;
- nothing lost: a gap in them only ever lands on a ``message_update`` (a client that fell
  behind gets consecutive deltas merged, ``coalesce`` policy, the merged one carrying the last
  seq), and the deltas it received spell the answer's text exactly;
- its transcript (the messages of the ``message_end`` events it received, replay included)
  equals the messages of the session's JSONL file.

Then every client closes its session, and the host's memory is back to its baseline.

**Why this measure of memory**: RSS rarely goes back down after a peak (freed memory stays in
the allocator's arenas), so it would say little, and ``tracemalloc`` tripled the run's time.
The host process measures itself instead, inside its Trio run, once Trio's idle worker
threads have retired (how many are idle at a given moment depends on the machine's timing, and
each holds tens of blocks: on a busy machine they alone put the measurements 600 blocks apart)
and after a full ``gc.collect()``, once after a warm-up round of :data:`WARM_UP` clients
(which fills first-use caches) and once after the 1,000 have closed:

1. live objects of its per-session and per-client types (``AgentSession``, ``LiveSession``,
   the host's ``Client``, trio-websocket's ``WebSocketConnection``): exactly the baseline;
2. Trio's living tasks: exactly the baseline;
3. ``sys.getallocatedblocks()``, every memory block the interpreter holds (small objects and
   large buffers alike; what CPython's own leak hunting counts): within
   :data:`BLOCK_TOLERANCE` of the baseline. One leaked session is thousands of blocks, and a
   leak of one small object per client is 1,000; rounds of 100 to 1,000 clients in a row
   measured within a few hundred blocks of each other (caches that fill and stay bounded).
"""

from __future__ import annotations

import itertools
import json
import random
import resource
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from trio_websocket import WebSocketConnection, wrap_client_stream

from tests.host.serve_helpers import text_of_deltas

CLIENTS: Final = 1_000
WARM_UP: Final = 100
"""Clients of the warm-up round, run through the same steps before the baseline is taken."""
TOKENS_PER_SECOND: Final = 25
"""The faux provider's pace (a token is four characters, one delta each)."""
PROMPT: Final = "tell me about client {i}: lorem ipsum dolor"
"""The faux model echoes it (``You said: ...``): 13 or 14 deltas of four characters, over
half a second of stream. A run's events: ``agent_start``, ``turn_start``, the user message's
``message_start`` and ``message_end``, the answer's ``message_start`` (seq 5), its
``message_update`` events (from seq 6), ``message_end``, ``turn_end``, ``agent_end``."""
CONNECTS_AT_ONCE: Final = 64
"""Handshakes in flight at once (the host's listen backlog is the system's, often 128)."""
BLOCK_TOLERANCE: Final = CLIENTS // 2
"""Memory blocks the host may hold after all close beyond its baseline (see the module
docstring): half a block per client."""
ROUND_TIMEOUT: Final = 300.0
"""A bound on one round of clients, so that a hang fails with what each client was doing
(never a timing claim)."""
OVERALL_TIMEOUT: Final = 900.0
"""A bound on the whole run, so a hang fails instead of blocking CI (never a timing claim)."""
REPO: Final = str(Path(__file__).resolve().parent.parents[2])
FILES_PER_CLIENT: Final = 3
"""Open files per client at the peak: its socket, the host's socket, the session's file."""


@attrs.define
class Plan:
    """What one client does: where it drops its connection, and how."""

    index: int
    drops: list[int]
    """After how many events of the stream (counted over all connections) to drop."""
    abrupt: bool
    """Close the TCP socket under the websocket instead of a closing handshake."""


@attrs.define
class Outcome:
    """What one client received."""

    plan: Plan
    session: str = ""
    session_file: str = ""
    events: list[dict[str, Any]] = attrs.field(factory=list)
    connections: int = 0
    stage: str = "connecting"
    """Where the client is (shown when the run times out)."""


def plans(count: int, rng: random.Random) -> list[Plan]:
    """Every third client drops once, every ninth twice, after a number of events that falls
    among the answer's deltas; half of the drops are abrupt."""
    made = []
    for i in range(count):
        drops: list[int] = []
        if i % 3 == 0:
            first = rng.randint(6, 12)
            drops.append(first)
            if i % 9 == 0:
                drops.append(first + rng.randint(2, 5))
        made.append(Plan(i, drops, abrupt=i % 2 == 0))
    return made


@attrs.define
class Connection:
    ws: WebSocketConnection
    stream: trio.SocketStream
    nursery: trio.Nursery

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_message(json.dumps(frame))

    async def frame(self) -> dict[str, Any]:
        text = await self.ws.get_message()
        parsed: dict[str, Any] = json.loads(text)
        return parsed

    async def response(self, id_: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The response with ``id_``; events read before it are kept in ``events``."""
        while True:
            frame = await self.frame()
            if frame.get("type") == "response" and frame.get("id") == id_:
                return frame
            if "seq" in frame:
                events.append(frame)


async def connect(
    host: HostProcess, nursery: trio.Nursery, limiter: trio.CapacityLimiter
) -> Connection:
    """A websocket to ``host`` on a socket of our own (so that it can be cut abruptly)."""
    async with limiter:
        stream = await trio.open_tcp_stream("127.0.0.1", host.port)
        ws = await wrap_client_stream(nursery, stream, "127.0.0.1", f"/ws?token={host.token}")
    return Connection(ws, stream, nursery)


async def stream(connection: Connection, result: Outcome, drops: list[int]) -> bool:
    """Read events up to ``agent_end`` (True) or the next planned drop (False)."""
    events = result.events
    result.stage = "streaming"
    while not events or events[-1].get("type") != "agent_end":
        if drops and len(events) >= drops[0]:
            drops.pop(0)
            return False
        frame = await connection.frame()
        if "seq" in frame:
            events.append(frame)
        elif frame.get("type") == "response":
            assert frame["success"] is True, frame
    return True


async def run_client(
    host: HostProcess, plan: Plan, limiter: trio.CapacityLimiter, out: list[Outcome]
) -> None:
    """Create a session and prompt it; drop the connection and resume as planned; read up
    to ``agent_end``; close the session."""
    result = Outcome(plan)
    out.append(result)
    events = result.events
    drops = list(plan.drops)
    while result.stage != "done":
        # One nursery per connection: cancelling it is what ends trio-websocket's reader
        # task of a connection whose socket was closed under it.
        async with trio.open_nursery() as nursery:
            connection = await connect(host, nursery, limiter)
            result.connections += 1
            if not result.session:
                result.stage = "creating"
                await connection.send({"type": "create_session", "id": "c"})
                created = await connection.response("c", events)
                assert created["success"] is True, created
                result.session = created["data"]["session"]
                result.session_file = created["data"]["sessionFile"]
                message = PROMPT.format(i=plan.index)
                await connection.send(
                    {"type": "prompt", "session": result.session, "message": message, "id": "p"}
                )
            else:
                result.stage = "resuming"
                cursor = events[-1]["seq"]
                await connection.send(
                    {
                        "type": "open_session",
                        "session": result.session,
                        "resume_from": cursor,
                        "id": "o",
                    }
                )
                opened = await connection.response("o", events)
                assert opened["success"] is True, opened
                assert opened["data"]["seq"] >= cursor, opened
            if not await stream(connection, result, drops):
                result.stage = "dropping"
                if plan.abrupt:
                    await trio.aclose_forcefully(connection.stream)
                    nursery.cancel_scope.cancel()
                else:
                    await connection.ws.aclose()
                continue
            result.stage = "closing"
            await connection.send({"type": "close_session", "session": result.session, "id": "x"})
            closed = await connection.response("x", [])
            assert closed["success"] is True, closed
            await connection.ws.aclose()
            result.stage = "done"


async def run_clients(host: HostProcess, count: int, seed: int) -> list[Outcome]:
    limiter = trio.CapacityLimiter(CONNECTS_AT_ONCE)
    out: list[Outcome] = []
    with trio.move_on_after(ROUND_TIMEOUT) as scope:
        async with trio.open_nursery() as nursery:
            for plan in plans(count, random.Random(seed)):
                nursery.start_soon(run_client, host, plan, limiter, out)
    if scope.cancelled_caught:
        stuck = [o for o in out if o.stage != "done"]
        stages = Counter(o.stage for o in stuck)
        examples = [
            (o.plan, o.session, [(e["seq"], e["type"]) for e in o.events[-3:]]) for o in stuck[:5]
        ]
        raise AssertionError(f"{len(stuck)} clients did not finish: {stages}; e.g. {examples}")
    return out


def file_messages(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    return [e["message"] for e in entries if e["type"] == "message"]


def check(outcome: Outcome) -> int:
    """Check one client's events against its session file; return its seq gaps."""
    events = outcome.events
    seqs = [e["seq"] for e in events]
    where = f"client {outcome.plan.index} ({outcome.session})"
    assert seqs[0] == 1, where
    assert all(b > a for a, b in itertools.pairwise(seqs)), (where, seqs)
    gaps = 0
    for previous, event in itertools.pairwise(events):
        if event["seq"] != previous["seq"] + 1:
            gaps += 1
            assert event["type"] == "message_update", (where, previous["seq"], event["seq"])
    transcript: list[dict[str, Any]] = []
    for event in events:
        if event["type"] == "snapshot":
            transcript = list(event["messages"])
        elif event["type"] == "message_end":
            transcript.append(event["message"])
    assert events[-1]["type"] == "agent_end", where
    assert transcript == file_messages(outcome.session_file), where
    assert [m["role"] for m in transcript] == ["user", "assistant"], where
    answer = "You said: " + PROMPT.format(i=outcome.plan.index)
    assert text_of_deltas(events) == answer, where
    assert [b["text"] for b in transcript[-1]["content"]] == [answer], where
    assert outcome.connections == 1 + len(outcome.plan.drops), where
    return gaps


@contextmanager
def open_files_for(clients: int) -> Iterator[None]:
    """Raise the soft open-file limit to what ``clients`` need (if the hard one allows)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = clients * FILES_PER_CLIENT + 256
    if soft != resource.RLIM_INFINITY and soft < needed:
        assert hard == resource.RLIM_INFINITY or hard >= needed, (
            f"the hard open-file limit {hard} is below the {needed} this test needs"
        )
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@attrs.define
class HostProcess:
    """The host in its own process (tests/host/scale_host.py) and its address."""

    process: trio.Process
    port: int = 0
    token: str = ""
    pending: bytes = b""

    async def line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self.pending:
            chunk = await self.process.stdout.receive_some()
            assert chunk, "the host process ended"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    async def measure(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(b"measure\n")
        return await self.line()


@asynccontextmanager
async def open_host_process(root: Path, **env: str) -> AsyncIterator[HostProcess]:
    """Start the host process; at the end close its stdin (it drains) and wait for exit 0.
    (The child inherits the raised open-file limit.)"""
    command = [sys.executable, "-m", "tests.host.scale_host", str(root)]
    command += [f"{k}={v}" for k, v in env.items()]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO
    )
    try:
        host = HostProcess(process)
        address = await host.line()
        host.port, host.token = address["port"], address["token"]
        yield host
        assert process.stdin is not None
        await process.stdin.aclose()
        assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


async def test_a_thousand_clients_with_drops_and_resumes_end_equal_to_their_files(
    tmp_path: Path,
) -> None:
    """1,000 clients, a third of them dropping mid-stream and resuming, each end with exactly
    their session file's transcript, and the host's memory returns to its baseline."""
    with open_files_for(CLIENTS), trio.fail_after(OVERALL_TIMEOUT):
        async with open_host_process(
            tmp_path, PITRIO_FAUX_TOKENS_PER_SECOND=str(TOKENS_PER_SECOND)
        ) as host:
            warm = await run_clients(host, WARM_UP, seed=1)
            for outcome in warm:
                check(outcome)
            baseline = await host.measure()
            assert baseline["sessions"] == baseline["clients"] == 0
            outcomes = await run_clients(host, CLIENTS, seed=20261122)
            assert len(outcomes) == CLIENTS
            gaps = sum(check(outcome) for outcome in outcomes)
            assert sum(len(o.plan.drops) for o in outcomes) > CLIENTS // 3
            after = await host.measure()
            print(f"baseline {baseline}\nafter {after}\nseq gaps (merged deltas) {gaps}")
            assert after["sessions"] == after["clients"] == 0
            assert after["objects"] == baseline["objects"]
            assert after["tasks"] == baseline["tasks"]
            assert after["threads"] == baseline["threads"]
            assert after["blocks"] - baseline["blocks"] < BLOCK_TOLERANCE, (after, baseline)
