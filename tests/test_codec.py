"""The wire codec speaks exactly pi's JSON."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pitrio.codec import WireFormatError, dumps, from_wire, loads, to_wire
from pitrio.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

from pi_data import PI_DATA, canonical, load_json, load_jsonl

SAMPLE_TYPES: dict[str, Any] = {
    "text_content": TextContent,
    "thinking_content": ThinkingContent,
    "image_content": ImageContent,
    "tool_call": ToolCall,
    "usage": Usage,
    "user_message": UserMessage,
    "assistant_message": AssistantMessage,
    "tool_result_message": ToolResultMessage,
    "tool": Tool,
    "context": Context,
    "model": Model,
}
SAMPLES = load_json("wire_samples.json")


def _type_for(name: str) -> Any:
    prefix = max((p for p in SAMPLE_TYPES if name.startswith(p)), key=len)
    return SAMPLE_TYPES[prefix]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_pi_sample_round_trips(name: str) -> None:
    """Every wire sample pi produced decodes and re-encodes to identical JSON."""
    data = SAMPLES[name]
    obj = from_wire(_type_for(name), data)
    assert canonical(to_wire(obj)) == canonical(data)


def test_every_sample_type_is_covered() -> None:
    """The committed samples cover every wire type this test knows."""
    covered = {_type_for(name) for name in SAMPLES}
    assert covered == set(SAMPLE_TYPES.values())


STREAM_FILES = sorted(p.name for p in PI_DATA.glob("faux_*.jsonl"))


@pytest.mark.parametrize("filename", STREAM_FILES)
def test_pi_stream_events_round_trip(filename: str) -> None:
    """Every AssistantMessageEvent pi's faux provider emitted round-trips through the codec."""
    for line in load_jsonl(filename):
        if "result" in line:
            data, cls = line["result"], AssistantMessage
        else:
            data, cls = line, AssistantMessageEvent
        obj = from_wire(cls, data)
        assert canonical(to_wire(obj)) == canonical(data)


def test_unknown_fields_survive_a_round_trip() -> None:
    """Keys pitrio does not know are kept, at every depth, and written back."""
    data = SAMPLES["assistant_message_forward_compat"]
    assert "x-future" in data
    message = from_wire(AssistantMessage, data)
    assert message.extra == {"x-future": data["x-future"]}
    nested = {
        "role": "user",
        "content": [{"type": "text", "text": "hi", "lang": "en"}],
        "timestamp": 1,
    }
    assert to_wire(from_wire(UserMessage, nested)) == nested


def test_optional_fields_are_omitted_when_absent() -> None:
    """None-valued optional fields are left out, as pi leaves out undefined ones."""
    wire = to_wire(
        ToolResultMessage(tool_call_id="a", tool_name="t", content=[], is_error=False, timestamp=1)
    )
    assert "details" not in wire
    assert wire == {
        "role": "toolResult",
        "toolCallId": "a",
        "toolName": "t",
        "content": [],
        "isError": False,
        "timestamp": 1,
    }


def test_integral_floats_are_written_as_integers() -> None:
    """A cost of 3.0 is written 3, as JavaScript writes it; 0.5 stays 0.5."""
    usage = from_wire(
        Usage,
        {
            "input": 1,
            "output": 2,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 3,
            "cost": {"input": 3, "output": 0.5, "cacheRead": 0, "cacheWrite": 0, "total": 3.5},
        },
    )
    assert usage.cost.input == 3.0
    assert dumps(usage.cost) == b'{"input":3,"output":0.5,"cacheRead":0,"cacheWrite":0,"total":3.5}'


def test_message_union_dispatches_on_role() -> None:
    """Decoding a Message picks the class from ``role``."""
    for data, cls in [
        (SAMPLES["user_message_string"], UserMessage),
        (SAMPLES["assistant_message_stop"], AssistantMessage),
        (SAMPLES["tool_result_message_error"], ToolResultMessage),
    ]:
        assert type(from_wire(Message, data)) is cls


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"role": "robot", "content": "x", "timestamp": 1}, "unknown role 'robot'"),
        ({"role": "user", "timestamp": 1}, "missing required key 'content'"),
        ({"role": "user", "content": 7, "timestamp": 1}, "user content must be a string"),
        ({"role": "user", "content": "x", "timestamp": "noon"}, "expected an integer"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_malformed_json_gets_a_clear_error(data: Any, fragment: str) -> None:
    """Malformed input raises WireFormatError saying what is wrong."""
    with pytest.raises(WireFormatError, match=fragment.replace("(", r"\(")):
        from_wire(Message, data)


def test_discriminator_mismatch_is_an_error() -> None:
    """Decoding a user message as an AssistantMessage fails instead of guessing."""
    with pytest.raises(WireFormatError, match="role is 'user'"):
        from_wire(AssistantMessage, SAMPLES["user_message_string"])


def test_dumps_and_loads_are_inverse() -> None:
    """dumps writes compact JSON bytes that loads reads back."""
    message = from_wire(AssistantMessage, SAMPLES["assistant_message_tool_use"])
    assert from_wire(AssistantMessage, loads(dumps(message))) == message


def test_keys_come_out_in_pi_s_order_when_an_optional_field_is_set() -> None:
    """An errored assistant message encodes ``errorMessage`` before ``timestamp``, byte for
    byte as pi 0.73.1 writes it (cattrs alone puts the optional key last)."""
    from pitrio.providers import AssistantMessage
    from pitrio.sessions.storage._codec import SESSIONS_CODEC

    pi = load_jsonl("faux_error.jsonl")[-1]["result"]
    ours = SESSIONS_CODEC.dumps(SESSIONS_CODEC.from_wire(AssistantMessage, pi))
    assert ours == orjson.dumps(pi)
