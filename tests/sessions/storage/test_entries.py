"""Session entries and the coding agent's messages are pi's JSON, unknown kinds included."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import orjson
import pytest
from session_script import SESSIONS_DATA

from pitrio.actors import AgentMessage, OpaqueMessage
from pitrio.codec import WireFormatError, dumps, from_wire, to_wire
from pitrio.sessions import (
    ENTRY_TYPES,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    SessionEntry,
    SessionHeader,
    SessionMessageEntry,
    UnknownEntry,
    decode_entry,
    generate_id,
    iso_timestamp,
    random_entry_id,
    timestamp_ms,
    uuid7,
)


def pi_lines(name: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in (SESSIONS_DATA / name).read_bytes().splitlines()]


def test_every_pi_entry_round_trips() -> None:
    """Each line pi wrote decodes to its entry class and encodes back to the same JSON."""
    lines = pi_lines("all_entry_types.jsonl") + pi_lines("branching.jsonl")
    lines += pi_lines("compaction.jsonl")
    header = from_wire(SessionHeader, lines[0])
    assert orjson.loads(dumps(header)) == lines[0]
    seen = set()
    for line in lines[1:]:
        entry = from_wire(SessionEntry, line)
        seen.add(type(entry))
        assert orjson.loads(dumps(entry)) == line
    assert set(ENTRY_TYPES.values()) <= seen
    assert UnknownEntry in seen


def test_unknown_entry_keeps_its_json_and_tree_fields() -> None:
    """An entry type from a newer version is kept verbatim and still has id/parentId/timestamp."""
    raw = {
        "type": "future_entry",
        "id": "f0f0f0f0",
        "parentId": "00000001",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "payload": {"values": [1, 2.5, None]},
    }
    entry = from_wire(SessionEntry, raw)
    assert isinstance(entry, UnknownEntry)
    assert (entry.type, entry.id, entry.parent_id, entry.timestamp) == (
        "future_entry",
        "f0f0f0f0",
        "00000001",
        "2025-01-01T00:00:00.000Z",
    )
    assert orjson.loads(dumps(entry)) == raw


def test_unknown_fields_and_message_roles_survive() -> None:
    """Unknown keys of a known entry and an unknown message role are written back unchanged."""
    raw = {
        "type": "message",
        "id": "00000001",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {"role": "futureRole", "stuff": [1, 2]},
        "x-new-field": {"a": 1},
    }
    entry = from_wire(SessionEntry, raw)
    assert isinstance(entry, SessionMessageEntry)
    assert isinstance(entry.message, OpaqueMessage)
    assert orjson.loads(dumps(entry)) == raw


@pytest.mark.parametrize(
    ("raw", "cls"),
    [
        (
            {
                "role": "bashExecution",
                "command": "ls",
                "output": "a",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": 5,
            },
            BashExecutionMessage,
        ),
        (
            {
                "role": "bashExecution",
                "command": "yes",
                "output": "",
                "cancelled": True,
                "truncated": True,
                "fullOutputPath": "/tmp/x",
                "timestamp": 5,
                "excludeFromContext": True,
            },
            BashExecutionMessage,
        ),
        (
            {
                "role": "custom",
                "customType": "ext",
                "content": [{"type": "text", "text": "hi"}],
                "display": False,
                "details": {"k": 1},
                "timestamp": 5,
            },
            CustomMessage,
        ),
        (
            {"role": "branchSummary", "summary": "s", "fromId": "root", "timestamp": 5},
            BranchSummaryMessage,
        ),
        (
            {"role": "compactionSummary", "summary": "s", "tokensBefore": 10, "timestamp": 5},
            CompactionSummaryMessage,
        ),
    ],
)
def test_coding_agent_messages_are_agent_messages(raw: dict[str, object], cls: type) -> None:
    """The four coding-agent roles decode as AgentMessages to their classes and round-trip."""
    message = from_wire(AgentMessage, raw)
    assert type(message) is cls
    assert to_wire(message) == raw


def test_iso_timestamps_are_javascript_iso_strings() -> None:
    """Timestamps are written as Date.toISOString() writes them and parse back to the same ms."""
    assert iso_timestamp(1735689600000) == "2025-01-01T00:00:00.000Z"
    assert iso_timestamp(1735689601234) == "2025-01-01T00:00:01.234Z"
    for ms in (0, 1, 999, 1735689601234, 4102444799999):
        assert timestamp_ms(iso_timestamp(ms)) == ms
    assert timestamp_ms("2025-01-01T01:00:00.000+01:00") == 1735689600000


def test_generate_id_skips_taken_ids() -> None:
    """A candidate id already in the session is never reused."""
    candidates = iter(["aaaaaaaa", "aaaaaaaa", "bbbbbbbb"])
    assert generate_id({"aaaaaaaa": object()}, lambda: next(candidates)) == "bbbbbbbb"


def test_generate_id_falls_back_to_a_full_uuid() -> None:
    """After 100 colliding candidates the id is a full UUID (pi's fallback)."""
    fallback = generate_id({"aaaaaaaa"}, lambda: "aaaaaaaa")
    assert str(uuid.UUID(fallback)) == fallback


def test_random_entry_ids_are_eight_hex_digits() -> None:
    """Entry ids are 8 lowercase hex digits."""
    ids = [random_entry_id() for _ in range(100)]
    assert all(len(i) == 8 and int(i, 16) >= 0 and i == i.lower() for i in ids)
    assert len(set(ids)) > 90


def test_session_ids_are_uuid_v7() -> None:
    """Session ids are RFC 9562 version-7 UUIDs that sort by creation time."""
    ids = [uuid7() for _ in range(20)]
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
    pairs = itertools.pairwise(uuid.UUID(v).int >> 80 for v in ids)
    assert all(a <= b for a, b in pairs)


def _as_entry(message: object) -> dict[str, object]:
    return {
        "type": "message",
        "id": "00000001",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": message,
    }


def _samples() -> list[dict[str, object]]:
    wire = orjson.loads((SESSIONS_DATA.parent / "wire_samples.json").read_bytes())
    samples = [_as_entry(v) for v in wire.values() if isinstance(v, dict) and "role" in v]
    for name in ("all_entry_types", "branching", "compaction", "pitrio_written"):
        samples += pi_lines(f"{name}.jsonl")[1:]
    return samples


def test_fast_decoding_builds_what_the_codec_builds() -> None:
    """decode_entry gives the codec's result (values, types, unknown keys) for every sample."""
    samples = _samples()
    assert len(samples) > 100
    for raw in samples:
        fast = decode_entry(raw)
        slow = from_wire(SessionEntry, raw)
        assert fast == slow
        assert orjson.dumps(to_wire(fast)) == orjson.dumps(to_wire(slow))


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update({"x-future": 1}),
        lambda m: m.update({"timestamp": 5.0}),
        lambda m: m["usage"].update({"input": 7.0}),
        lambda m: m["content"].append({"type": "text", "text": "t", "x": 1}),
        lambda m: m.update({"diagnostics": [{"kind": "x"}]}),
    ],
)
def test_unusual_shapes_fall_back_to_the_codec(change: Any) -> None:
    """Shapes the fast path does not build still decode exactly as the codec decodes them."""
    wire = orjson.loads((SESSIONS_DATA.parent / "wire_samples.json").read_bytes())
    message = wire["assistant_message_stop"]
    change(message)
    raw = _as_entry(message)
    assert to_wire(decode_entry(raw)) == to_wire(from_wire(SessionEntry, raw)) == raw


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update({"stopReason": "bogus"}),
        lambda m: m.update({"timestamp": True}),
        lambda m: m.pop("api"),
        lambda m: m.update({"content": "not a list"}),
    ],
)
def test_invalid_messages_are_wire_format_errors(change: Any) -> None:
    """A message that is not pi's shape raises WireFormatError through either path."""
    wire = orjson.loads((SESSIONS_DATA.parent / "wire_samples.json").read_bytes())
    message = wire["assistant_message_stop"]
    change(message)
    with pytest.raises(WireFormatError):
        decode_entry(_as_entry(message))
