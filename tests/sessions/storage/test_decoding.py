"""One decoding path: the codec's generated structure functions (its fast path, taken for
``dict`` input) build exactly what cattrs' functions (its slow path, taken for any other
mapping) build, or fall back to them, so results, unknown keys and errors are the same."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_script import SESSIONS_DATA

from pitrio.codec import WireFormatError, dumps
from pitrio.sessions import SessionEntry, SessionHeader, decode_entry
from pitrio.sessions.storage._codec import SESSIONS_CODEC


class _SlowDict(dict[str, Any]):
    """A JSON object the fast path does not take (it takes exact ``dict`` only)."""


def slow(value: Any) -> Any:
    """``value`` with every JSON object as a :class:`_SlowDict`, so all of it decodes slowly."""
    if isinstance(value, dict):
        return _SlowDict({key: slow(item) for key, item in value.items()})
    if isinstance(value, list):
        return [slow(item) for item in value]
    return value


def decode(cls: Any, data: Any) -> tuple[str, Any]:
    """("ok", repr and wire bytes) or ("error", message) for decoding ``data`` as ``cls``."""
    try:
        obj = SESSIONS_CODEC.from_wire(cls, data)
    except WireFormatError as exc:
        return "error", str(exc).replace("_SlowDict", "dict")  # a message may name the type
    # repr shows the types of the values (1 vs 1.0, tuple vs list); the wire bytes include
    # the unknown keys kept in `extra` (an integral float past 2**64 decodes, as int, to
    # something orjson cannot write: then the repr has to do).
    try:
        wire = dumps(obj)
    except TypeError as exc:
        wire = str(exc).encode()
    return "ok", (type(obj), repr(obj), wire)


def assert_same_decoding(cls: Any, data: Any) -> None:
    fast = decode(cls, data)
    assert fast == decode(cls, slow(data))
    if cls is SessionEntry:
        try:
            entry = decode_entry(data)
        except WireFormatError as exc:
            assert fast == ("error", str(exc))
        else:
            assert fast == decode(cls, data) and fast[1][1] == repr(entry)


def capture_lines() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted(SESSIONS_DATA.glob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # the torn line of torn_tail.jsonl
            if isinstance(obj, dict):
                lines.append(obj)
    return lines


def wire_messages() -> list[dict[str, Any]]:
    wire = orjson.loads((SESSIONS_DATA.parent / "wire_samples.json").read_bytes())
    return [value for value in wire.values() if isinstance(value, dict) and "role" in value]


def as_entry(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }


SEEDS = [line for line in capture_lines() if line.get("type") != "session"] + [
    as_entry(message) for message in wire_messages()
]


def test_every_pi_capture_decodes_the_same_both_ways() -> None:
    """Every line of pi's captured session files (headers too) decodes identically."""
    lines = capture_lines()
    assert len(lines) > 100
    for line in lines:
        assert_same_decoding(SessionHeader if line.get("type") == "session" else SessionEntry, line)


def test_every_wire_sample_message_decodes_the_same_both_ways() -> None:
    """Every captured message of every role, wrapped in a message entry, decodes identically."""
    assert len(SEEDS) > 100
    for message in wire_messages():
        assert_same_decoding(SessionEntry, as_entry(message))


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update({"x-future": 1}),
        lambda m: m.update({"timestamp": 5.0}),
        lambda m: m.update({"timestamp": 5.5}),
        lambda m: m["usage"].update({"input": 7.0}),
        lambda m: m["usage"]["cost"].update({"total": 1}),
        lambda m: m["content"].append({"type": "text", "text": "t", "x": 1}),
        lambda m: m.update({"stopReason": "bogus"}),
        lambda m: m.update({"timestamp": True}),
        lambda m: m.pop("api"),
        lambda m: m.update({"content": "not a list"}),
        lambda m: m.update({"role": "user"}),
        lambda m: m.update({"errorMessage": None}),
        lambda m: m.update({"usage": None}),
    ],
)
def test_unusual_and_invalid_shapes_decode_the_same_both_ways(change: Any) -> None:
    """Shapes the generated functions refuse reach cattrs' functions: same result or error."""
    wire = orjson.loads((SESSIONS_DATA.parent / "wire_samples.json").read_bytes())
    message = wire["assistant_message_stop"]
    change(message)
    assert_same_decoding(SessionEntry, as_entry(message))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)


def objects_in(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``value``, outermost first."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@st.composite
def mutated_entries(draw: st.DrawFn) -> dict[str, Any]:
    """A captured entry with a few random edits: keys dropped, values replaced by other JSON
    (or the same number as int / float), unknown keys added, at any depth."""
    entry = orjson.loads(orjson.dumps(draw(st.sampled_from(SEEDS))))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        target = draw(st.sampled_from(objects_in(entry)))
        keys = sorted(target)
        action = draw(st.sampled_from(["drop", "replace", "number", "add"]))
        if action == "drop" and keys:
            del target[draw(st.sampled_from(keys))]
        elif action == "replace" and keys:
            target[draw(st.sampled_from(keys))] = draw(JSON_VALUES)
        elif action == "number" and keys:
            key = draw(st.sampled_from(keys))
            value = target[key]
            # Only numbers JSON holds exactly either way (pi's are below 2**53).
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if number and abs(value) < 2**53:
                target[key] = float(value) if isinstance(value, int) else int(value)
        else:
            target[draw(st.text(min_size=1, max_size=6))] = draw(JSON_VALUES)
    return entry


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_entries())
def test_random_entries_decode_the_same_both_ways(entry: dict[str, Any]) -> None:
    """Randomly edited entries of every kind: the same object, unknown keys and errors."""
    assert_same_decoding(SessionEntry, entry)
