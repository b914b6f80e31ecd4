"""The host's journal of the answer in flight: when it writes and deletes (virtual time)."""

from __future__ import annotations

import itertools
from typing import Any

import trio
import trio.testing

from pitrio.host.ws._journal import JOURNAL_INTERVAL, TurnJournal
from pitrio.providers import AssistantMessage, TextContent


def _message(text: str) -> AssistantMessage:
    return AssistantMessage(
        content=(TextContent(text=text),) if text else (),
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason="stop",
        timestamp=1,
    )


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


def _journal(disk: _Disk, **options: Any) -> TurnJournal:
    return TurnJournal(write=disk.write, delete=disk.delete, **options)


async def test_a_streaming_answer_is_written_at_once_then_at_most_once_per_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The first note is written at once; then every update is on disk within one interval
    (plus the write's own time), with no more than one write per interval."""
    disk = _Disk()
    journal = _journal(disk)
    updates: list[tuple[float, str]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        start = trio.current_time()
        journal.started("s.jsonl", _message(""))
        text = ""
        for index in range(200):  # 2 s of tokens, one every 10 ms
            await trio.sleep(0.01)
            text += f"t{index} "
            journal.updated(_message(text))
            updates.append((trio.current_time(), text))
        await trio.sleep(JOURNAL_INTERVAL * 2)
        journal.ended()
        await trio.sleep(JOURNAL_INTERVAL * 2)
        nursery.cancel_scope.cancel()
    writes = [(t, written) for t, op, _, written in disk.log if op == "write"]
    assert writes[0] == (start, "")
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(writes)]
    assert min(gaps) >= JOURNAL_INTERVAL
    assert len(writes) <= 2 / JOURNAL_INTERVAL + 3
    for at, noted in updates:
        # The first write at or after the note holds it (or more), within one interval.
        later = next((t, w) for t, w in writes if t >= at)
        assert later[1].startswith(noted)
        assert later[0] - at <= JOURNAL_INTERVAL + 0.01
    assert [op for _, op, _, _ in disk.log][-1] == "delete"
    assert sum(op == "delete" for _, op, _, _ in disk.log) == 1


async def test_an_answer_that_ends_during_the_interval_is_deleted_not_written_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk = _Disk()
    journal = _journal(disk)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        journal.started("s.jsonl", _message("a"))
        await trio.sleep(0.05)
        journal.updated(_message("ab"))
        journal.ended()
        await trio.sleep(JOURNAL_INTERVAL * 4)
        nursery.cancel_scope.cancel()
    assert [(op, text) for _, op, _, text in disk.log] == [("write", "a"), ("delete", "")]


async def test_a_session_in_memory_keeps_no_journal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk = _Disk()
    journal = _journal(disk)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        journal.started(None, _message("a"))
        journal.updated(_message("ab"))
        await trio.sleep(1)
        journal.ended()
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert disk.log == []


async def test_cancelled_after_the_answer_ended_the_journal_is_still_deleted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The session closes right after its answer ended: the journal does not outlive it."""
    disk = _Disk()
    journal = _journal(disk)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        journal.started("s.jsonl", _message("a"))
        await trio.sleep(0.05)  # written; now in its interval
        journal.ended()
        nursery.cancel_scope.cancel()
    assert [op for _, op, _, _ in disk.log] == ["write", "delete"]


async def test_an_answer_in_a_new_session_file_removes_the_old_files_journal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    disk = _Disk()
    journal = _journal(disk)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        journal.started("old.jsonl", _message("a"))
        await trio.sleep(0.05)
        journal.started("new.jsonl", _message("b"))
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert [(op, file) for _, op, file, _ in disk.log] == [
        ("write", "old.jsonl"),
        ("delete", "old.jsonl"),
        ("write", "new.jsonl"),
    ]
