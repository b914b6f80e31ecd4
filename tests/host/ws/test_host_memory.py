"""What a host keeps of its sessions.

A live session keeps nothing of the nursery ``nursery.start`` opened for it while it started.
A closed session is freed by reference counting alone: with the cycle collector off, opening,
prompting and closing sessions (in process, and host sessions over a real websocket) leaves
none of their objects alive. A host runs with spaced-out collections
(``tune_gc_for_many_sessions``), so a closed session left to the collector would keep its
memory for a long time.
"""

from __future__ import annotations

import gc
import os
import weakref
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from pitrio.cli._serve import make_session_factory
from pitrio.host import Host, HostConfig, open_host
from pitrio.sessions import SessionManager
from tests.host.serve_helpers import Client, faux_env, open_client, open_test_host
from tests.host.soak import connect
from tests.sessions.session_helpers import file_manager, make_faux, open_session, reply

SESSIONS = 3


async def test_a_live_session_lets_go_of_the_nursery_start_opened(tmp_path: Path) -> None:
    """A host's session, once started, keeps no reference to its starting nursery, and
    still works."""
    root = os.fspath(tmp_path)
    factory = make_session_factory(cwd=root, env=faux_env(root), provider="faux")
    starting: list[weakref.ref[Any]] = []

    def probe(request: Any) -> Any:
        starting.append(weakref.ref(trio.lowlevel.current_task().parent_nursery))
        return factory(request)

    config = HostConfig(port=0, session_dir=os.path.join(root, "sessions"), roots=(root,))
    async with open_host(probe, config) as host:
        live = await host.create_session(host.token)
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        assert len(starting) == 1
        assert starting[0]() is None
        assert live.session.session_id == live.id
        await host.drain()


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    """The cycle collector off for the test (what is not freed by reference counting stays)."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def alive(refs: list[weakref.ref[Any]]) -> list[str]:
    """The types of the referents still alive (empty: all freed)."""
    return [type(obj).__qualname__ for ref in refs if (obj := ref()) is not None]


def pitrio_objects() -> Counter[str]:
    """Live objects of pitrio's and trio-websocket's types that the collector tracks (slotted
    ones such as the session actor and the agent included), by type."""
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        module = type(obj).__module__
        if isinstance(module, str) and module.startswith(("pitrio.", "trio_websocket")):
            counts[f"{module}.{type(obj).__qualname__}"] += 1
    return counts


def grown(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """The types with more live objects after than before."""
    return {name: n - before[name] for name, n in after.items() if n > before[name]}


async def _run_in_process_session(tmp_path: Path, index: int, refs: list[weakref.ref[Any]]) -> None:
    faux, registry = make_faux()
    faux.set_responses([reply("first answer"), reply("second answer")])
    manager: SessionManager | None = file_manager(tmp_path) if index % 2 else None
    async with open_session(faux, registry, manager=manager) as session:
        await session.prompt("hello")
        await session.prompt("again")
        assert [m.role for m in session.messages] == ["user", "assistant"] * 2
        refs.extend(weakref.ref(obj) for obj in (session, session.session_manager, faux, registry))


@pytest.mark.pins_internals
@pytest.mark.usefixtures("no_cycle_collector")
async def test_a_closed_in_process_session_is_freed_by_reference_counting(
    tmp_path: Path,
) -> None:
    """Sessions (in memory and with a file) prompted twice and closed: the facade, its session
    manager, provider and registry are freed as soon as the last reference goes, with the
    cycle collector off, and no object of a pitrio type (its actor, agent, event log ...) is
    left."""
    refs: list[weakref.ref[Any]] = []
    await _run_in_process_session(tmp_path, 1, refs)  # first uses fill the module caches
    before = pitrio_objects()
    for index in range(SESSIONS):
        await _run_in_process_session(tmp_path, index, refs)
    assert len(refs) == 4 * (SESSIONS + 1)
    assert alive(refs) == []
    assert grown(before, pitrio_objects()) == {}


async def _run_host_session(host: Host, refs: list[weakref.ref[Any]]) -> None:
    async with connect(host) as (ws, stream):
        client = Client(ws)
        created = await client.call({"type": "create_session"})
        session_id = created["data"]["session"]
        answer = await client.call({"type": "prompt", "session": session_id, "message": "hi"})
        assert answer["success"] is True
        ended = await client.until(lambda f: f.get("type") == "agent_end")
        failed = await client.raw_call("{not json")
        assert failed["success"] is False
        live = host.sessions[session_id]
        (connection,) = host.clients
        refs.extend(weakref.ref(obj) for obj in (live, live.session, connection, connection.ws))
        del live, connection
        # Dropped: the connection closed under the websocket, no closing handshake.
        await trio.aclose_forcefully(stream)
    async with open_client(host) as client:
        resume = {"type": "open_session", "session": session_id, "resume_from": ended[-1]["seq"]}
        reopened = await client.call(resume)
        assert reopened["success"] is True
        closed = await client.call({"type": "close_session", "session": session_id})
        assert closed["success"] is True
        if not any(f.get("type") == "session_closed" for f in client.seen):
            await client.until(lambda f: f.get("type") == "session_closed")


async def _wait_for_no_client(host: Host) -> None:
    # The host sees the socket close a little after the client leaves; its event for that is
    # private, so the test polls (bounded by the guard).
    with trio.fail_after(30):
        while host.clients:  # noqa: ASYNC110
            await trio.sleep(0.01)
    await trio.testing.wait_all_tasks_blocked()


@pytest.mark.pins_internals
@pytest.mark.usefixtures("no_cycle_collector")
async def test_a_closed_host_session_is_freed_by_reference_counting(tmp_path: Path) -> None:
    """Host sessions created, prompted, sent a malformed frame, dropped (no closing
    handshake), resumed on a new connection and closed over a real websocket: once the
    clients are gone, the LiveSession, its AgentSession and the server side of each
    connection are freed with the cycle collector off, and no object of a pitrio or
    trio-websocket type is left."""
    refs: list[weakref.ref[Any]] = []
    async with open_test_host(tmp_path) as host:
        await _run_host_session(host, refs)  # first uses fill the module caches
        await _wait_for_no_client(host)
        before = pitrio_objects()
        for _ in range(SESSIONS):
            await _run_host_session(host, refs)
            await _wait_for_no_client(host)
        assert not host.sessions
        assert len(refs) == 4 * (SESSIONS + 1)
        assert alive(refs) == []
        assert grown(before, pitrio_objects()) == {}
        await host.drain()
