"""Seed 001's persistent marker: before every request, a ``[marker]`` user message is added to
the cached messages and persisted as a ``context_transform`` entry.

Each transform is replayed when the envelope is rebuilt (the hook code is not rerun), so the
markers of earlier requests stay in every later request. The change touches cached content,
so it names an ``invalidateCacheReason``. Try ``pitrio -e examples/extensions/persistent_marker.py
--provider faux -p hello`` and then ``pitrio -c --context``.
"""

from __future__ import annotations

import time
from typing import Any


def register(pi: Any) -> None:
    def add_marker(event: Any, ctx: Any) -> Any:
        if event.reason != "before_request":
            return None
        marker = {"role": "user", "content": "[marker]", "timestamp": int(time.time() * 1000)}
        cached = event.state.envelope.messages.cached
        return {
            "transformerName": "marker",
            "display": {"title": "Marker", "summary": "a [marker] message after the history"},
            "patch": [
                {
                    "op": "messages_cached_replace",
                    "scope": "cached",
                    # Ops are wire data: the current messages as objects, the marker as JSON.
                    "messages": [*cached, marker],
                    "invalidateCacheReason": "add marker",
                }
            ],
        }

    pi.on("context", add_marker)
