"""The host's journal of the answer in flight: when it writes and deletes (virtual time)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from pitrio.host.ws._journal import JOURNAL_INTERVAL, TurnJournal
from pitrio.providers import AssistantMessage, TextContent, UserMessage


def _answer(text: str, timestamp: int = 1) -> AssistantMessage:
    return AssistantMessage(
        content=(TextContent(text=text),) if text else (),
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason="stop",
        timestamp=timestamp,
    )


class _Agent:
    stream_message: Any = None


class _Session:
    """What the journal reads of a session: a run in progress, its streaming message, its
    file, and events (one per call of :meth:`event`)."""

    def __init__(self, session_file: str | None = "s.jsonl") -> None:
        self.is_streaming = False
        self.agent = _Agent()
        self.session_file = session_file
        self.subscribers: list[trio.MemorySendChannel[object]] = []

    def event(self) -> None:
        for send in self.subscribers:
            send.send_nowait(object())

    def start_run(self) -> None:
        self.is_streaming = True
        self.event()

    def close(self) -> None:
        for send in self.subscribers:
            send.close()

    @asynccontextmanager
    async def events(self, **_: Any) -> AsyncIterator[trio.MemoryReceiveChannel[object]]:
        send, receive = trio.open_memory_channel[object](100)
        self.subscribers.append(send)
        try:
            yield receive
        finally:
            self.subscribers.remove(send)


class _Disk:
    """Records the journal's file work: (virtual time, operation, file, text)."""

    def __init__(self) -> None:
        self.log: list[tuple[float, str, str, str]] = []

    async def write(self, file: str, message: AssistantMessage, max_bytes: int) -> None:
        self.log.append((trio.current_time(), "write", file, message.text()))
        await trio.sleep(0.01)  # file work takes time

    async def delete(self, file: str) -> None:
        self.log.append((trio.current_time(), "delete", file, ""))
        await trio.lowlevel.checkpoint()

    def ops(self) -> list[tuple[str, str]]:
        return [(op, text) for _, op, _, text in self.log]


def _journal(disk: _Disk) -> TurnJournal:
    return TurnJournal(write=disk.write, delete=disk.delete)


async def test_a_streaming_answer_is_on_disk_within_one_interval_and_deleted_when_it_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """While an answer streams, each token is written within one interval (plus the write's
    own time), with at most one write per interval; once the run ends the journal goes."""
    disk, session = _Disk(), _Session()
    updates: list[tuple[float, str]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_journal(disk).follow, session)
        await trio.testing.wait_all_tasks_blocked()
        session.agent.stream_message = _answer("")
        session.start_run()
        text = ""
        for index in range(200):  # 2 s of tokens, one every 10 ms
            await trio.sleep(0.01)
            text += f"t{index} "
            session.agent.stream_message = _answer(text)
            updates.append((trio.current_time(), text))
        await trio.sleep(JOURNAL_INTERVAL * 2)
        session.agent.stream_message = None
        session.is_streaming = False
        await trio.sleep(JOURNAL_INTERVAL * 2)
        session.close()
    writes = [(t, written) for t, op, _, written in disk.log if op == "write"]
    assert writes[0][1] == ""  # the run's first look, at once
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(writes)]
    assert min(gaps) >= JOURNAL_INTERVAL
    assert len(writes) <= 2 / JOURNAL_INTERVAL + 3
    for at, noted in updates:
        # The first write after the token holds it (or more), within one interval.
        later = next((t, w) for t, w in writes if t > at)
        assert later[1].startswith(noted)
        assert later[0] - at <= JOURNAL_INTERVAL + 0.01
    assert disk.ops()[-1] == ("delete", "")
    assert sum(op == "delete" for op, _ in disk.ops()) == 1


async def test_between_answers_of_a_run_the_journal_is_deleted_and_an_unchanged_answer_not_rewritten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A tool running (or the user's steering message) between two answers: no assistant
    message streams, so the first answer (now in the file) leaves the journal; an answer that
    did not change since the last write is not written again."""
    disk, session = _Disk(), _Session()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_journal(disk).follow, session)
        await trio.testing.wait_all_tasks_blocked()
        first = _answer("calling a tool")
        session.agent.stream_message = first
        session.start_run()
        await trio.sleep(JOURNAL_INTERVAL * 3)  # unchanged: written once
        session.agent.stream_message = None  # the tool runs
        await trio.sleep(JOURNAL_INTERVAL * 2)
        session.agent.stream_message = UserMessage(content="steer", timestamp=2)
        await trio.sleep(JOURNAL_INTERVAL * 2)
        session.agent.stream_message = _answer("second", timestamp=3)
        await trio.sleep(JOURNAL_INTERVAL * 2)
        session.close()
        nursery.cancel_scope.cancel()
    assert disk.ops() == [
        ("write", "calling a tool"),
        ("delete", ""),
        ("write", "second"),
    ]


async def test_a_session_in_memory_keeps_no_journal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk, session = _Disk(), _Session(session_file=None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_journal(disk).follow, session)
        await trio.testing.wait_all_tasks_blocked()
        session.agent.stream_message = _answer("a")
        session.start_run()
        await trio.sleep(1)
        session.is_streaming = False
        await trio.sleep(1)
        session.close()
    assert disk.log == []


async def test_an_idle_session_costs_no_wake_up_and_follow_returns_when_it_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk, session = _Disk(), _Session()
    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_journal(disk).follow, session)
            await trio.sleep(600)  # idle: nothing written, no polling (the clock jumps)
            session.event()  # an event that starts no run
            await trio.sleep(600)
            session.close()
    assert disk.log == []


async def test_an_answer_in_a_new_session_file_removes_the_old_files_journal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk, session = _Disk(), _Session(session_file="old.jsonl")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_journal(disk).follow, session)
        await trio.testing.wait_all_tasks_blocked()
        session.agent.stream_message = _answer("a")
        session.start_run()
        await trio.sleep(0.05)
        session.session_file = "new.jsonl"
        session.agent.stream_message = _answer("b")
        await trio.sleep(1)
        session.close()
        nursery.cancel_scope.cancel()
    assert [(op, file) for _, op, file, _ in disk.log] == [
        ("write", "old.jsonl"),
        ("delete", "old.jsonl"),
        ("write", "new.jsonl"),
    ]


async def test_discard_deletes_what_was_written(autojump_clock: trio.testing.MockClock) -> None:
    disk, session = _Disk(), _Session()
    journal = _journal(disk)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.follow, session)
        await trio.testing.wait_all_tasks_blocked()
        session.agent.stream_message = _answer("a")
        session.start_run()
        await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    await journal.discard()
    await journal.discard()
    assert disk.ops() == [("write", "a"), ("delete", "")]
