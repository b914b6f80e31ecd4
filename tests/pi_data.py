"""Access to the JSON that pi 0.73.1 produced (tests/data/pi, made by capture.mjs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from pitrio.codec import loads

PI_DATA = Path(__file__).parent / "data" / "pi"
PI_NOW = 1767225600000
"""capture.mjs pins pi's Date.now() to this value: it means "the current time"."""


def load_json(name: str) -> Any:
    return orjson.loads((PI_DATA / name).read_bytes())


def load_jsonl(name: str) -> list[Any]:
    return [loads(line) for line in (PI_DATA / name).read_bytes().splitlines() if line]


def canonical(data: Any) -> str:
    """JSON text with sorted keys: equal text means equal JSON, numbers' int/float form included."""
    return json.dumps(data, sort_keys=True, ensure_ascii=True)


def normalise_now(pi: Any, ours: Any) -> Any:
    """Return ``ours`` with every ``timestamp`` that pi took from Date.now() set to pi's value."""
    if isinstance(pi, dict) and isinstance(ours, dict):
        out = {}
        for key, value in ours.items():
            if key == "timestamp" and pi.get(key) == PI_NOW and isinstance(value, int):
                out[key] = PI_NOW
            else:
                out[key] = normalise_now(pi.get(key), value)
        return out
    if isinstance(pi, list) and isinstance(ours, list) and len(pi) == len(ours):
        return [normalise_now(a, b) for a, b in zip(pi, ours, strict=True)]
    return ours
