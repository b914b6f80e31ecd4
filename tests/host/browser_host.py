"""An in-process ``pitrio serve`` host for the browser page: faux sessions, paced streams.

Used by ``tests/host/ws/test_browser.py`` and ``scripts/page_screenshot.py``. Sessions are built by
the command's own factory (``--provider faux``) in ``root``; ``script`` is the faux model's
responses (``PITRIO_FAUX_SCRIPT``) and ``tokens_per_second`` paces them
(``PITRIO_FAUX_TOKENS_PER_SECOND``) so that a page can be caught mid-stream.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pitrio.cli._faux_cli import FAUX_SPEED_ENV
from pitrio.cli._serve import make_session_factory
from pitrio.host import Host, HostConfig, open_host
from tests.host.serve_helpers import faux_env


@asynccontextmanager
async def open_page_host(
    root: str | os.PathLike[str], *, script: list[Any], tokens_per_second: float = 0
) -> AsyncIterator[Host]:
    """A host on ``127.0.0.1:<free port>`` whose sessions play ``script``, working in ``root``."""
    root = os.fspath(root)
    env = faux_env(root, script=script)
    env[FAUX_SPEED_ENV] = str(tokens_per_second)
    factory = make_session_factory(cwd=root, env=env, provider="faux")
    config = HostConfig(port=0, session_dir=os.path.join(root, "sessions"))
    async with open_host(factory, config) as host:
        yield host
