"""``maybe_await``: call sites that accept sync or async callbacks (hooks, ``on_payload``)."""

from __future__ import annotations

import inspect
from typing import Any


async def maybe_await(value: Any) -> Any:
    """Await ``value`` if it is awaitable, else return it (callbacks may be sync or async)."""
    return await value if inspect.isawaitable(value) else value
