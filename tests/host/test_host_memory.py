"""What a live session of the websocket host keeps: nothing of the nursery ``nursery.start``
opened for it while it started (its cancel scope, status, sets: ~1 KB per session)."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path
from typing import Any

import trio
import trio.testing

from pitrio.cli._serve import make_session_factory
from pitrio.host import HostConfig, open_host
from tests.host.serve_helpers import faux_env


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
