"""Seed 001's request-only context: each request gets a ``[request-only]`` user message
appended last (``messages.uncached``).

An ``ephemeral`` patch is applied to one request, logged as an ``ephemeral`` entry and never
replayed: the message reaches the model but never the session's history.
"""

from __future__ import annotations

import time
from typing import Any


def register(pi: Any) -> None:
    def inject(event: Any, ctx: Any) -> Any:
        if event.reason != "ephemeral":
            return None
        note = {"role": "user", "content": "[request-only]", "timestamp": int(time.time() * 1000)}
        return {
            "patch": [{"op": "messages_uncached_append", "scope": "uncached", "messages": [note]}]
        }

    pi.on("context", inject)
