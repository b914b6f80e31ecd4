"""File mutations to one path are serialised; mutations to different paths run concurrently."""

from __future__ import annotations

import os
from pathlib import Path

import trio
import trio.testing

from pitrio.tools.builtin import FileMutationQueue, create_edit_tool, create_write_tool


async def _wait_for_users(queue: FileMutationQueue, key: str, users: int) -> None:
    # The queue key is computed in a worker thread, so wait until both tasks are registered.
    while (entry := queue._entries.get(key)) is None or entry.users < users:
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()


async def test_same_path_waits_for_the_holder(tmp_path: Path) -> None:
    """A second mutation of the same file (named through a symlink) starts only after the first ends."""
    queue = FileMutationQueue()
    target = tmp_path / "f.txt"
    target.write_text("")
    link = tmp_path / "link.txt"
    os.symlink(target, link)
    release = trio.Event()
    order: list[str] = []

    async def first() -> None:
        async with queue.hold(str(target)):
            order.append("first in")
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with queue.hold(str(link)):
            order.append("second in")

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await _wait_for_users(queue, str(target), 1)
            nursery.start_soon(second)
            await _wait_for_users(queue, str(target), 2)
            assert order == ["first in"]
            release.set()
    assert order == ["first in", "first out", "second in"]
    assert len(queue) == 0


async def test_different_paths_run_concurrently(tmp_path: Path) -> None:
    """A mutation of another file proceeds while the first file is held."""
    queue = FileMutationQueue()
    release = trio.Event()
    other_done = trio.Event()

    async def hold_first() -> None:
        async with queue.hold(str(tmp_path / "a.txt")):
            await release.wait()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold_first)
            async with queue.hold(str(tmp_path / "b.txt")):
                other_done.set()
            assert not release.is_set()
            release.set()
    assert other_done.is_set()
    assert len(queue) == 0


async def test_parallel_edits_of_one_file_all_apply(tmp_path: Path) -> None:
    """Ten concurrent edit calls on one file each apply their change; none is lost to a race."""
    queue = FileMutationQueue()
    target = tmp_path / "n.txt"
    target.write_text("".join(f"line {i}\n" for i in range(10)))
    edit = create_edit_tool(str(tmp_path), mutation_queue=queue)

    async def change(i: int) -> None:
        params = {"path": "n.txt", "edits": [{"oldText": f"line {i}\n", "newText": f"LINE {i}\n"}]}
        await edit.execute(f"c{i}", params, lambda _: None)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(change, i)
    assert target.read_text() == "".join(f"LINE {i}\n" for i in range(10))


async def test_write_creates_parent_directories(tmp_path: Path) -> None:
    """write makes the missing parent directories and reports UTF-16 units as pi does."""
    write = create_write_tool(str(tmp_path))
    result = await write.execute("w", {"path": "a/b/c.txt", "content": "😀x"}, lambda _: None)
    assert (tmp_path / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "😀x"
    assert result.content[0].text == "Successfully wrote 3 bytes to a/b/c.txt"  # type: ignore[union-attr]
