"""``pitrio serve`` killed (SIGKILL), stopped (SIGTERM) and idle-closed under its clients: every
client resumes with its cursor, its transcript (built from the frames it received) equal to
the session file, no seq repeated or skipped within an epoch, the interrupted answer present
and marked aborted, and the conversation goes on (real subprocesses, the faux provider paced
so a kill lands mid-stream)."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from pitrio.sessions.storage._journal import (
    HOST_STOPPED_MESSAGE,
    JOURNAL_SUFFIX,
    read_epoch,
    read_journal,
)
from tests.host.serve_helpers import Client, faux_env, open_client, open_test_host

GUARD_S: Final = 120
"""A hung test fails instead of hanging the suite (not a timing assertion)."""
TOKENS_PER_SECOND: Final = 20
LONG: Final = "stream me slowly " * 40
"""Echoed at TOKENS_PER_SECOND four-character tokens: an answer of several seconds."""
DELTAS_BEFORE_KILL: Final = 6
REPO: Final = str(Path(__file__).resolve().parent.parents[2])


COALESCED = frozenset({"message_update", "tool_execution_update"})
"""The events a lagging client's subscription merges."""


@attrs.define
class View:
    """One client's view of one session, built only from the frames it received."""

    session: str
    file: str
    epoch: int
    seq: int
    messages: list[dict[str, Any]] = attrs.field(factory=list)
    streamed: str = ""
    """The text deltas of the assistant message streaming now."""
    closed: bool = False

    def apply(self, frame: dict[str, Any]) -> None:
        if frame.get("session") != self.session or frame.get("type") == "response":
            return
        kind = frame.get("type")
        if kind == "session_closed":
            self.closed = True
            return
        if kind == "snapshot":
            assert frame["epoch"] > self.epoch, (frame["epoch"], self.epoch)
            self.epoch, self.seq = frame["epoch"], frame["seq"]
            self.messages = list(frame["messages"])
            self.streamed = ""
            return
        assert frame["epoch"] == self.epoch, frame
        # None twice, none skipped; except that a client's coalescing subscription merges
        # streamed updates when it falls behind, and the merged one carries the seq of the last
        # (docs/host-protocol.md, Backpressure): only an update may skip, and never back.
        if kind in COALESCED:
            assert frame["seq"] > self.seq, (frame["seq"], self.seq)
        else:
            assert frame["seq"] == self.seq + 1, (frame["seq"], self.seq)
        self.seq = frame["seq"]
        if kind == "message_start":
            self.streamed = ""
        elif kind == "message_update":
            event = frame["assistantMessageEvent"]
            if event["type"] == "text_delta":
                self.streamed += event["delta"]
        elif kind == "message_end":
            self.messages.append(frame["message"])


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block["type"] == "text")


def _has_journal(view: View) -> bool:
    return os.path.exists(view.file + JOURNAL_SUFFIX)


def file_messages(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    return [entry["message"] for entry in entries if entry["type"] == "message"]


async def pump(client: Client, view: View, until: Callable[[dict[str, Any]], bool]) -> None:
    """Read frames into ``view`` up to and including the first that matches ``until``."""
    while True:
        frame = await client.frame()
        view.apply(frame)
        if until(frame):
            return


def _is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "agent_end"


def _deltas(count: int) -> Callable[[dict[str, Any]], bool]:
    seen = 0

    def enough(frame: dict[str, Any]) -> bool:
        nonlocal seen
        if frame.get("type") == "message_update":
            seen += frame["assistantMessageEvent"]["type"] == "text_delta"
        return seen >= count

    return enough


class _Address:
    """What :func:`open_client` needs of a host running in another process."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token


@asynccontextmanager
async def serve(
    tmp_path: Path, nursery: trio.Nursery, env: dict[str, str]
) -> AsyncIterator[tuple[trio.Process, _Address]]:
    """``pitrio serve --port 0`` (this tree's pitrio) on ``tmp_path/sessions``."""
    command = [
        *(sys.executable, "-m", "pitrio", "serve", "--port", "0", "--provider", "faux"),
        *("--session-dir", str(tmp_path / "sessions"), "--drain-grace", "0.2"),
    ]
    run = functools.partial(
        trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False, cwd=tmp_path
    )
    process: trio.Process = await nursery.start(run)
    assert process.stderr is not None
    line = b""
    while b"listening on" not in line:
        chunk = await process.stderr.receive_some(4096)
        assert chunk, "pitrio serve ended before listening"
        line += chunk
    text = line.decode().split("listening on ", 1)[1]
    port = int(text.split()[0].rstrip("/").rsplit(":", 1)[1])
    token = text.split("token=", 1)[1].split()[0]

    async def drain_stderr() -> None:  # a full pipe would stall the host's logging
        assert process.stderr is not None
        while await process.stderr.receive_some(65536):
            pass

    nursery.start_soon(drain_stderr)
    try:
        yield process, _Address(port, token)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


async def create(client: Client) -> View:
    data = (await client.call({"type": "create_session"}))["data"]
    assert data["epoch"] == 1 and data["seq"] == 0
    return View(data["session"], data["sessionFile"], data["epoch"], data["seq"])


async def prompt(client: Client, view: View, text: str) -> None:
    await client.send({"type": "prompt", "session": view.session, "message": text})


async def resume(client: Client, view: View, epoch: int) -> None:
    """``open_session`` with the view's cursor, from an earlier epoch: a snapshot follows."""
    cursor = {"resume_from": view.seq, "epoch": view.epoch}
    opened = await client.call({"type": "open_session", "session": view.session, **cursor})
    assert opened["success"] is True, opened
    assert opened["data"]["epoch"] == epoch
    await pump(client, view, lambda f: f.get("type") == "snapshot")
    assert view.epoch == epoch


async def wait_for_journal_text(view: View) -> str:
    """The journal's text once it holds ``You said: `` and more (polled: another process
    writes it)."""
    while True:
        journal = read_journal(view.file)
        if journal is not None and len(journal.text()) > len("You said: "):
            return journal.text()
        await trio.sleep(0.02)


def assert_aborted_answer(view: View, seen: str, error: str | None) -> dict[str, Any]:
    last = view.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    if error is not None:
        assert last["errorMessage"] == error
    text = _text(last)
    assert text.startswith("You said: ")
    assert seen.startswith(text) or text.startswith(seen), (seen, text)
    return last


async def test_sigkill_then_sigterm_every_client_resumes_with_its_cursor(tmp_path: Path) -> None:
    """Killed with SIGKILL while one session streams its first answer, another a later one
    and a third is idle, then (restarted) stopped with SIGTERM mid-answer: after each restart
    every client resumes with its cursor (another epoch: a snapshot) and its transcript is
    the file's; the cut answers are there, marked aborted; the conversations go on."""
    env = {
        **os.environ,
        **faux_env(str(tmp_path)),
        "PITRIO_FAUX_TOKENS_PER_SECOND": str(TOKENS_PER_SECOND),
        "PYTHONPATH": REPO,
    }
    env.pop("PITRIO_HOST_TOKEN", None)
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            # Life 1: killed with SIGKILL mid-stream.
            async with (
                serve(tmp_path, nursery, env) as (process, address),
                open_client(address) as c_first,  # type: ignore[arg-type]
                open_client(address) as c_later,  # type: ignore[arg-type]
                open_client(address) as c_idle,  # type: ignore[arg-type]
            ):
                first, later, idle = (
                    await create(c_first),
                    await create(c_later),
                    await create(c_idle),
                )
                await prompt(c_idle, idle, "short")
                await pump(c_idle, idle, _is_end)
                await prompt(c_later, later, "hi")
                await pump(c_later, later, _is_end)
                await prompt(c_later, later, LONG)
                await prompt(c_first, first, LONG)
                await pump(c_first, first, _deltas(DELTAS_BEFORE_KILL))
                await pump(c_later, later, _deltas(DELTAS_BEFORE_KILL))
                journaled = {v.session: await wait_for_journal_text(v) for v in (first, later)}
                process.send_signal(signal.SIGKILL)
                await process.wait()
            seen = {v.session: v.streamed for v in (first, later)}
            for view in (first, later):
                assert file_messages(view.file)[-1]["role"] == "user"  # the turn is open
            assert [m["role"] for m in file_messages(first.file)] == ["user"]

            # Life 2: every client resumes; then SIGTERM while `later` streams.
            async with (
                serve(tmp_path, nursery, env) as (process, address),
                open_client(address) as c_first,  # type: ignore[arg-type]
                open_client(address) as c_later,  # type: ignore[arg-type]
                open_client(address) as c_idle,  # type: ignore[arg-type]
            ):
                for client, view in ((c_first, first), (c_later, later), (c_idle, idle)):
                    await resume(client, view, epoch=2)
                    assert view.messages == file_messages(view.file)
                for view in (first, later):
                    last = assert_aborted_answer(view, seen[view.session], HOST_STOPPED_MESSAGE)
                    recovered = _text(last)
                    assert recovered.startswith(journaled[view.session])
                    assert not _has_journal(view)
                assert [m["role"] for m in first.messages] == ["user", "assistant"]
                assert [m["role"] for m in later.messages] == ["user", "assistant"] * 2
                assert idle.messages[-1]["stopReason"] == "stop"
                # The conversations go on.
                for client, view in ((c_first, first), (c_later, later), (c_idle, idle)):
                    await prompt(client, view, "go on")
                    await pump(client, view, _is_end)
                    assert view.messages[-1]["role"] == "assistant"
                    assert view.messages[-1]["stopReason"] == "stop"
                    assert _text(view.messages[-1]).startswith("You said: go on")
                await prompt(c_later, later, LONG)
                await pump(c_later, later, _deltas(DELTAS_BEFORE_KILL))
                process.send_signal(signal.SIGTERM)
                for client, view in ((c_first, first), (c_later, later), (c_idle, idle)):
                    await pump(client, view, lambda f: f.get("type") == "session_closed")
                assert await process.wait() == 0
            sigterm_seen = later.streamed
            for view in (first, later, idle):
                # Nothing missed up to the drain: the view built from events is the file.
                assert view.messages == file_messages(view.file)
                assert not _has_journal(view)
                assert read_epoch(view.file) == 2
            assert_aborted_answer(later, sigterm_seen, None)

            # Life 3: resumed with cursors of epoch 2; nothing is added to the closed turns.
            async with (
                serve(tmp_path, nursery, env) as (process, address),
                open_client(address) as c_first,  # type: ignore[arg-type]
                open_client(address) as c_later,  # type: ignore[arg-type]
                open_client(address) as c_idle,  # type: ignore[arg-type]
            ):
                for client, view in ((c_first, first), (c_later, later), (c_idle, idle)):
                    before = list(view.messages)
                    await resume(client, view, epoch=3)
                    assert view.messages == before == file_messages(view.file)
                await prompt(c_later, later, "still here")
                await pump(c_later, later, _is_end)
                assert _text(later.messages[-1]).startswith("You said: still here")
                closed = await c_later.call({"type": "close_session", "session": later.session})
                assert closed["success"] is True
                assert later.messages == file_messages(later.file)


async def test_a_stale_cursor_after_an_idle_close_gets_a_snapshot(tmp_path: Path) -> None:
    """A session closed after its idle timeout and reopened is a new epoch: a client coming
    back with a cursor of the old one gets a snapshot (not the new life's events from its
    old seq on), then live events; a client on the new epoch resumes without one."""
    with trio.fail_after(GUARD_S):
        await _idle_close_then_stale_cursor(tmp_path)


async def _idle_close_then_stale_cursor(tmp_path: Path) -> None:
    # A short idle timeout in real time (a clock that jumps while worker threads open the
    # session would fire the guard): the session is idle only while no client is attached.
    async with open_test_host(tmp_path, idle_timeout=0.3) as host:
        async with open_client(host) as client:
            view = await create(client)
            await prompt(client, view, "one")
            await pump(client, view, _is_end)
            await prompt(client, view, "two")
            await pump(client, view, _is_end)
        live = host.sessions[view.session]
        await live.closed.wait()
        assert view.session not in host.sessions
        old_seq = view.seq
        async with open_client(host) as client:
            # Another client reopens it and talks: the new epoch's seqs pass the old cursor.
            other = View(view.session, view.file, 0, 0)
            await resume(client, other, epoch=2)
            for text in ("three", "four", "five"):
                await prompt(client, other, text)
                await pump(client, other, _is_end)
            assert other.seq > old_seq
            async with open_client(host) as back:
                await resume(back, view, epoch=2)
                assert view.seq == other.seq
                assert view.messages == other.messages == file_messages(view.file)
                users = [_text(m) for m in view.messages if m["role"] == "user"]
                assert users == ["one", "two", "three", "four", "five"]
                # On the current epoch the cursor replays from the ring, no snapshot.
                opened = await back.call(
                    {
                        "type": "open_session",
                        "session": view.session,
                        "resume_from": view.seq - 2,
                        "epoch": 2,
                    }
                )
                assert opened["data"] == {"session": view.session, "epoch": 2, "seq": view.seq}
                frame = await back.frame()
                assert frame["type"] != "snapshot" and frame["seq"] == view.seq - 1
