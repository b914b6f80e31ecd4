"""A ``pitrio serve`` host in a process of its own that reports its memory on request.

``python -m tests.host.scale_host ROOT [KEY=VALUE ...]`` serves, with the faux provider, the
sessions of ``ROOT/sessions`` (``KEY=VALUE`` pairs go into the sessions' environment, e.g.
``PITRIO_FAUX_TOKENS_PER_SECOND=25``). It prints one JSON line ``{"port": ..., "token": ...}``
on stdout, then answers each line of stdin:

- ``measure``: one JSON line, measured once no client is connected, after a full
  ``gc.collect()`` inside the host's Trio run, once Trio's idle worker threads have retired: ``objects`` (live objects of the host's per-session and per-client types), ``tasks``
  (Trio's living tasks), ``blocks`` (``sys.getallocatedblocks()``: every memory block the
  interpreter has allocated, large ones included), ``threads`` (living threads), ``sessions``
  and ``clients`` (the host's live counts);

- ``tasks``: one JSON object, how many living tasks wait in which chain of coroutines (to
  see where a hang is);

and drains and exits 0 at the end of stdin. Logs go to stderr, warnings and errors only.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import threading
from collections import Counter
from typing import Any

import structlog
import trio
import trio.testing
from trio_websocket import WebSocketConnection

from pitrio.cli._serve import make_session_factory
from pitrio.host import Host, HostConfig, open_host
from pitrio.host.ws._client import Client
from pitrio.host.ws._host import LiveSession
from pitrio.sessions import AgentSession
from tests.host.serve_helpers import faux_env

THREAD_POLL = 0.2
"""Seconds between looks at whether Trio's idle worker threads have retired."""
TRACKED = (AgentSession, LiveSession, Client, WebSocketConnection)
"""The host's per-session and per-client types, counted by ``measure``."""


async def measure(host: Host, threads_at_start: int) -> dict[str, Any]:
    """The host's memory figures (see the module docstring), once it has no client left,
    the handlers of closed connections have ended (they end soon after their peers close)
    and Trio's idle worker threads have retired.

    Worker threads are why: each file write runs in one (``trio.to_thread``), and Trio keeps
    an idle one for a few seconds in case more work comes. How many are idle at a given
    moment depends on the machine's timing, and each holds tens of memory blocks (its
    ``Thread``, locks, conditions, bound methods), which made the block count differ by
    hundreds between otherwise equal measurements. Without them both measurements count the
    same things.
    """
    while host.clients:
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)
    await trio.testing.wait_all_tasks_blocked(cushion=0.1)
    while threading.active_count() > threads_at_start:  # noqa: ASYNC110
        # Polling a condition that only the clock can make true (idle threads retire on
        # their own timeout): there is nothing to wait on instead.
        await trio.sleep(THREAD_POLL)
    for _ in range(3):
        gc.collect()
    objects = dict.fromkeys((kind.__name__ for kind in TRACKED), 0)
    for obj in gc.get_objects():
        for kind in TRACKED:
            if isinstance(obj, kind):
                objects[kind.__name__] += 1
    return {
        "objects": objects,
        "tasks": trio.lowlevel.current_statistics().tasks_living,
        "blocks": sys.getallocatedblocks(),
        "threads": threading.active_count(),
        "sessions": len(host.sessions),
        "clients": len(host.clients),
    }


def _stack(task: trio.lowlevel.Task) -> str:
    frames = []
    coro: Any = task.coro
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            frames.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    return " > ".join(frames)


def task_stacks() -> dict[str, int]:
    """How many living tasks wait where (the awaited coroutines of each, outermost first):
    what a hang looks like from inside the host."""
    stacks: Counter[str] = Counter()
    root = trio.lowlevel.current_root_task()
    pending = [] if root is None else [root]
    while pending:
        task = pending.pop()
        stacks[_stack(task)] += 1
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return dict(stacks.most_common())


async def serve(root: str, extra_env: dict[str, str]) -> None:
    env = {**faux_env(root), **extra_env}
    factory = make_session_factory(cwd=root, env=env, provider="faux")
    config = HostConfig(port=0, session_dir=os.path.join(root, "sessions"))
    threads_at_start = threading.active_count()
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    async with stdin, open_host(factory, config) as host:
        print(json.dumps({"port": host.port, "token": host.token}), flush=True)
        pending = b""
        while chunk := await stdin.receive_some():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip() == b"measure":
                    print(json.dumps(await measure(host, threads_at_start)), flush=True)
                elif line.strip() == b"tasks":
                    print(json.dumps(task_stacks()), flush=True)


def main(argv: list[str]) -> int:
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    root, *pairs = argv
    extra = dict(pair.split("=", 1) for pair in pairs)
    trio.run(serve, root, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
