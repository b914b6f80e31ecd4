"""The event-stream decoder, and the fixtures and requests checked against botocore's service model."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import attrs
import botocore.session
import pytest
from botocore.eventstream import EventStreamBuffer
from botocore.model import ListShape, MapShape, Shape, StructureShape
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    get_model,
)
from pitrio.providers.bedrock import EventStreamDecoder, EventStreamError
from pitrio.providers.bedrock._request import BedrockOptions, build_command

import fixtures_bedrock as fx

SERVICE = botocore.session.get_session().get_service_model("bedrock-runtime")
OPERATION = SERVICE.operation_model("ConverseStream")
OUTPUT_EVENTS = OPERATION.output_shape.members["stream"]
PADDING_MEMBER = "p"
"""The padding member live payloads carry; not in the service model, ignored by every SDK."""

ALL_STREAMS = b"".join(fx.to_eventstream(events) for events in fx.STREAMS.values())


def decoded(data: bytes, cuts: list[int]) -> list[tuple[dict[str, Any], bytes]]:
    decoder = EventStreamDecoder()
    out = []
    previous = 0
    for cut in [*sorted(cuts), len(data)]:
        out += [(m.headers, m.payload) for m in decoder.feed(data[previous:cut])]
        previous = cut
    assert decoder.pending == 0
    return out


# --------------------------------------------------------------------------- decoder


def test_decoder_agrees_with_botocore() -> None:
    """Every fixture frame decodes to the headers and payload botocore's own parser reads."""
    reference = EventStreamBuffer()
    reference.add_data(ALL_STREAMS)
    expected = [(dict(m.headers), m.payload) for m in reference]
    assert decoded(ALL_STREAMS, []) == expected
    assert len(expected) == sum(len(events) for events in fx.STREAMS.values())


@settings(deadline=None, max_examples=200)
@given(st.lists(st.integers(min_value=0, max_value=len(ALL_STREAMS)), max_size=40))
def test_decoder_is_indifferent_to_how_the_body_is_cut(cuts: list[int]) -> None:
    """Cutting the body at any points, inside preludes included, decodes the same messages."""
    assert decoded(ALL_STREAMS, cuts) == decoded(ALL_STREAMS, [])


def test_decoder_reads_every_header_type() -> None:
    """Headers of every type the format defines are read, so none desynchronises the frame."""
    head = b""
    for name, kind, raw in [
        ("t", 0, b""),
        ("f", 1, b""),
        ("b", 2, b"\xff"),
        ("s", 3, struct.pack(">h", -2)),
        ("i", 4, struct.pack(">i", 70000)),
        ("l", 5, struct.pack(">q", 1 << 40)),
        ("y", 6, struct.pack(">H", 3) + b"\x00\x01\x02"),
        ("str", 7, struct.pack(">H", 2) + b"ok"),
        ("ts", 8, struct.pack(">q", 1700000000000)),
        ("u", 9, bytes(range(16))),
    ]:
        head += struct.pack(">B", len(name)) + name.encode() + struct.pack(">B", kind) + raw
    payload = b'{"x":1}'
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    message += struct.pack(">I", zlib.crc32(message))
    [only] = EventStreamDecoder().feed(message)
    assert only.payload == payload
    assert only.headers == {
        "t": True,
        "f": False,
        "b": -1,
        "s": -2,
        "i": 70000,
        "l": 1 << 40,
        "y": b"\x00\x01\x02",
        "str": "ok",
        "ts": 1700000000000,
        "u": "00010203-0405-0607-0809-0a0b0c0d0e0f",
    }


def test_impossible_length_is_refused() -> None:
    """A prelude with a valid CRC but a length below the minimum is refused."""
    prelude = struct.pack(">II", 8, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(EventStreamError, match="out of range"):
        EventStreamDecoder().feed(prelude + b"\x00" * 8)


def test_headers_longer_than_the_message_are_refused() -> None:
    """A headers length that does not fit in the message is refused before reading it."""
    prelude = struct.pack(">II", 40, 30)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(EventStreamError, match="headers length"):
        EventStreamDecoder().feed(prelude)


# --------------------------------------------------------------------------- service model


def check(shape: Shape, value: Any, path: str) -> None:
    """Check ``value`` against a botocore shape: known members, required ones, types, enums."""
    kind = shape.type_name
    if isinstance(shape, StructureShape):
        assert isinstance(value, dict), f"{path}: {value!r} is not a structure"
        if shape.metadata.get("document"):
            return
        unknown = set(value) - set(shape.members) - {PADDING_MEMBER}
        assert not unknown, f"{path}: {sorted(unknown)} not members of {shape.name}"
        missing = set(shape.required_members) - set(value)
        assert not missing, f"{path}: required {sorted(missing)} missing"
        if shape.metadata.get("union"):
            assert len(set(value) - {PADDING_MEMBER}) == 1, f"{path}: a union sets one member"
        for name, item in value.items():
            if name != PADDING_MEMBER:
                check(shape.members[name], item, f"{path}.{name}")
    elif isinstance(shape, ListShape):
        assert isinstance(value, list), path
        for i, item in enumerate(value):
            check(shape.member, item, f"{path}[{i}]")
    elif isinstance(shape, MapShape):
        assert isinstance(value, dict), path
        for key, item in value.items():
            check(shape.value, item, f"{path}[{key}]")
    elif kind == "string":
        assert isinstance(value, str), path
        if shape.enum:
            assert value in shape.enum, f"{path}: {value!r} not in {shape.enum}"
    elif kind == "blob":
        assert isinstance(value, str), path
        base64.b64decode(value, validate=True)
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), path
    elif kind in ("float", "double"):
        assert isinstance(value, int | float), path
    elif kind == "boolean":
        assert isinstance(value, bool), path
    else:
        raise AssertionError(f"{path}: unexpected shape type {kind}")


@pytest.mark.parametrize("name", sorted(fx.STREAMS))
def test_fixture_events_match_the_service_model(name: str) -> None:
    """Every fixture event is a ConverseStreamOutput member whose payload fits its shape."""
    for event_type, payload in fx.STREAMS[name]:
        assert event_type in OUTPUT_EVENTS.members, event_type
        check(OUTPUT_EVENTS.members[event_type], payload, event_type)


def test_exception_fixture_is_a_modelled_exception() -> None:
    """The exception frames the tests send name exceptions of the stream."""
    for exception in ("ThrottlingException", "ValidationException", "ModelStreamErrorException"):
        member = exception[0].lower() + exception[1:]
        assert member in OUTPUT_EVENTS.members
        check(OUTPUT_EVENTS.members[member], {"message": "m"}, member)


def test_stop_reasons_are_the_service_models() -> None:
    """The stop reasons the tests exercise are exactly the service model's enum."""
    from pitrio.providers.bedrock._stream import STOP_REASONS

    enum = set(SERVICE.shape_for("StopReason").enum)
    pi_errors = {
        "guardrail_intervened",
        "content_filtered",
        "malformed_model_output",
        "malformed_tool_use",
    }
    assert set(STOP_REASONS) | pi_errors == enum


def test_request_bodies_match_the_service_model() -> None:
    """A full request (images, tool history, reasoning replay, thinking, tool choice) fits ConverseStreamRequest."""
    model = get_model("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0")
    png = base64.b64encode(b"png bytes").decode()
    call = ToolCall(id="tooluse_1", name="read", arguments={"path": "a"})
    assistant = AssistantMessage(
        content=[
            ThinkingContent(thinking="Reading.", thinking_signature=fx.SIGNATURE),
            TextContent(text="Looking."),
            call,
        ],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="toolUse",
        timestamp=1,
    )
    context = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(
                content=[TextContent(text="See"), ImageContent(data=png, mime_type="image/webp")],
                timestamp=1,
            ),
            assistant,
            ToolResultMessage(
                tool_call_id="tooluse_1",
                tool_name="read",
                content=[TextContent(text="ok"), ImageContent(data=png, mime_type="image/gif")],
                is_error=False,
                timestamp=1,
            ),
        ],
        tools=[Tool(name="read", description="Read.", parameters={"type": "object"})],
    )
    options = StreamOptions(
        max_tokens=100, temperature=0.5, reasoning="high", cache_retention="long"
    )
    bedrock = BedrockOptions.from_mapping(
        {"toolChoice": {"type": "tool", "name": "read"}, "requestMetadata": {"team": "a"}}
    )
    command = build_command(model, context, options, bedrock, None)
    assert command.pop("modelId") == model.id
    body = json.loads(json.dumps(command))
    check(OPERATION.input_shape, {**body, "modelId": model.id}, "ConverseStreamRequest")
    nova = attrs.evolve(get_model("amazon-bedrock", "amazon.nova-pro-v1:0"))
    nova_command = build_command(nova, context, options, BedrockOptions(tool_choice="any"), None)
    check(OPERATION.input_shape, json.loads(json.dumps(nova_command)), "ConverseStreamRequest")


def test_malformed_header_is_refused() -> None:
    """A header block with an unknown value type is refused, CRCs notwithstanding."""
    head = b"\x01x\x0b"  # name "x", value type 11 (undefined)
    total = 12 + len(head) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head
    message += struct.pack(">I", zlib.crc32(message))
    with pytest.raises(EventStreamError, match="Unknown event stream header type 11"):
        EventStreamDecoder().feed(message)


def test_a_large_message_in_small_pieces_waits_for_its_length() -> None:
    """Pieces of one large message are held until its whole length has come, then decoded once."""
    big = fx.event_frame(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 50_000}}
    )
    decoder = EventStreamDecoder()
    out = []
    for i in range(0, len(big), 100):
        out += decoder.feed(big[i : i + 100])
        assert decoder.pending == (0 if out else min(i + 100, len(big)))
    [message] = out
    assert json.loads(message.payload)["delta"]["text"] == "x" * 50_000
