"""Each layer owns a sealed codec that a higher layer derives from and never changes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Literal

import attrs
import orjson
import pytest

from pitrio._exceptions import UsageError
from pitrio.actors import (
    AgentEvent,
    AgentMessage,
    ExtensionMessage,
    MessageEndEvent,
    OpaqueMessage,
    register_agent_message,
)
from pitrio.actors._codec import ACTORS_CODEC
from pitrio.codec import (
    BASE_CODEC,
    WireCodec,
    WireFormatError,
    extra_field,
    from_wire,
    make_codec,
    widest_codec,
    wire,
)
from pitrio.providers import (
    AssistantMessageEvent,
    Message,
    TextContent,
    UserMessage,
    faux_assistant_message,
)
from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.sessions import (
    AgentSessionEvent,
    BashExecutionMessage,
    SessionEntry,
    SessionManager,
    SessionMessageEntry,
)
from pitrio.sessions.runtime._events_codec import EVENTS_CODEC
from pitrio.sessions.storage._codec import SESSIONS_CODEC
from pitrio.tools import AgentTool, AgentToolResult, text_result
from pitrio.tools._codec import TOOLS_CODEC

from pi_data import canonical, load_json, load_jsonl

# (layer rank, codec), lowest first.
CODECS: list[tuple[int, WireCodec]] = [
    (0, PROVIDERS_CODEC),
    (1, TOOLS_CODEC),
    (2, ACTORS_CODEC),
    (3, SESSIONS_CODEC),
    (4, EVENTS_CODEC),
]


def _samples() -> list[tuple[int, str, Any, Any]]:
    """(rank of the layer that owns the union, name, union, JSON) for pi's own JSON."""
    samples: list[tuple[int, str, Any, Any]] = []
    wire_samples = load_json("wire_samples.json")
    for name in sorted(wire_samples):
        if name.split("_message")[0] in {"user", "assistant", "tool_result"}:
            samples.append((0, name, Message, wire_samples[name]))
    for i, line in enumerate(load_jsonl("faux_thinking_text.jsonl")):
        if "result" not in line:
            samples.append((0, f"faux_thinking_text:{i}", AssistantMessageEvent, line))
    for i, line in enumerate(load_jsonl("agent_events_tool_call.jsonl")):
        samples.append((2, f"agent_events_tool_call:{i}", AgentEvent, line))
    entries = load_jsonl("sessions/all_entry_types.jsonl")[1:]
    for i, line in enumerate(entries):
        samples.append((3, f"all_entry_types:{i}", SessionEntry, line))
    session_events = [
        {"type": "queue_update", "steering": ["a"], "followUp": []},
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000,
         "errorMessage": "overloaded"},
    ]  # fmt: skip
    for i, event in enumerate(session_events):
        samples.append((4, f"session_event:{i}", AgentSessionEvent, event))
    return samples


SAMPLES = _samples()
ROUND_TRIPS = [
    pytest.param(codec, union, data, id=f"{codec.name}-{name}")
    for rank, codec in CODECS
    for owner, name, union, data in SAMPLES
    if owner <= rank
]
UNKNOWN_UNIONS = [
    pytest.param(codec, union, data, id=f"{codec.name}-{name}")
    for rank, codec in CODECS
    for owner, name, union, data in SAMPLES
    if owner > rank
]


def test_samples_cover_every_layer() -> None:
    """The round-trip samples include unions of the providers, actors, session files and events."""
    assert {owner for owner, *_ in SAMPLES} == {0, 2, 3, 4}
    assert UNKNOWN_UNIONS


@pytest.mark.parametrize(("codec", "union", "data"), ROUND_TRIPS)
def test_each_codec_round_trips_its_own_and_lower_layers_types(
    codec: WireCodec, union: Any, data: Any
) -> None:
    """A layer's codec decodes pi's JSON of its own and every lower layer's unions, and back."""
    obj = codec.from_wire(union, data)
    assert canonical(codec.to_wire(obj)) == canonical(data)
    assert orjson.loads(codec.dumps(obj)) == data


@pytest.mark.parametrize(("codec", "union", "data"), UNKNOWN_UNIONS)
def test_a_codec_does_not_know_higher_layers_unions(
    codec: WireCodec, union: Any, data: Any
) -> None:
    """A lower layer's codec raises WireFormatError for a union only a higher layer registers."""
    with pytest.raises(WireFormatError):
        codec.from_wire(union, data)


def test_providers_codec_cannot_decode_a_session_entry() -> None:
    """The providers codec knows neither SessionEntry nor AgentMessage, sessions imported or not."""
    line = load_jsonl("sessions/all_entry_types.jsonl")[1]
    with pytest.raises(WireFormatError):
        PROVIDERS_CODEC.from_wire(SessionEntry, line)
    message_entry = next(
        e for e in load_jsonl("sessions/all_entry_types.jsonl") if e.get("type") == "message"
    )
    with pytest.raises(WireFormatError):
        PROVIDERS_CODEC.from_wire(SessionMessageEntry, message_entry)
    assert type(SESSIONS_CODEC.from_wire(SessionEntry, message_entry)) is SessionMessageEntry


def test_session_message_kinds_stay_in_the_sessions_codec() -> None:
    """bashExecution is a BashExecutionMessage to the sessions codec and opaque to the actors one."""
    raw = next(
        e["message"]
        for e in load_jsonl("sessions/all_entry_types.jsonl")
        if e.get("type") == "message" and e["message"]["role"] == "bashExecution"
    )
    assert type(SESSIONS_CODEC.from_wire(AgentMessage, raw)) is BashExecutionMessage
    opaque = ACTORS_CODEC.from_wire(AgentMessage, raw)
    assert type(opaque) is OpaqueMessage
    assert ACTORS_CODEC.to_wire(opaque) == raw


IMPORT_PROBE = textwrap.dedent(
    """
    import sys
    import orjson
    from pitrio.actors import AgentMessage
    from pitrio.actors._codec import ACTORS_CODEC
    from pitrio.providers import Message
    from pitrio.providers._codec import PROVIDERS_CODEC

    BASH = {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0,
            "cancelled": False, "truncated": False, "timestamp": 1}
    USER = {"role": "user", "content": "hi", "timestamp": 1}

    def probe():
        out = []
        for codec in (PROVIDERS_CODEC, ACTORS_CODEC):
            for union in (Message, AgentMessage):
                for data in (USER, BASH):
                    try:
                        out.append(type(codec.from_wire(union, data)).__name__)
                    except Exception as exc:
                        out.append(type(exc).__name__)
        return out

    assert "pitrio.sessions" not in sys.modules
    before = probe()
    import pitrio.sessions
    after = probe()
    print(orjson.dumps({"before": before, "after": after}).decode())
    """
)


def test_importing_sessions_changes_no_lower_codec() -> None:
    """What the providers and actors codecs decode is the same before and after sessions loads."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True
    )
    result = orjson.loads(done.stdout)
    assert result["before"] == result["after"]
    # providers: Message knows user, not bashExecution; AgentMessage is not its union at all.
    assert result["before"][:4] == [
        "UserMessage",
        "WireFormatError",
        "WireFormatError",
        "WireFormatError",
    ]
    # actors: AgentMessage decodes an unknown role opaquely.
    assert result["before"][6:] == ["UserMessage", "OpaqueMessage"]


def test_sealed_codecs_refuse_registrations() -> None:
    """Registering into a layer's (sealed) codec raises UsageError and changes nothing."""
    for _, codec in CODECS:
        assert codec.sealed
        with pytest.raises(UsageError, match="sealed"):
            codec.register_type(ExtensionMessage, encode=lambda message: {})
        with pytest.raises(UsageError, match="sealed"):
            codec.register_tagged_union(Message, "role", [UserMessage])
    assert BASE_CODEC.sealed


@wire
@attrs.frozen(kw_only=True)
class _Leaf:
    type: Literal["leaf"] = attrs.field(default="leaf", init=False)
    value: int
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class _Other:
    type: Literal["other"] = attrs.field(default="other", init=False)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class _Box:
    type: Literal["box"] = attrs.field(default="box", init=False)
    inner: _Leaf | _Other
    extra: dict[str, Any] | None = extra_field()


def test_a_derived_codec_decodes_base_unions_with_its_own_knowledge() -> None:
    """A union taught to the base codec decodes its members with the derived codec's hooks."""
    base = make_codec(name="base-test")
    base.register_tagged_union(_Box | _Other, "type", [_Box, _Other])
    base.seal()
    derived = make_codec(base, name="derived-test")
    derived.register_tagged_union(_Leaf | _Other, "type", [_Leaf, _Other])
    data = {"type": "box", "inner": {"type": "leaf", "value": 3}}
    box = _Box(inner=_Leaf(value=3))
    assert derived.from_wire(_Box | _Other, data) == box
    assert derived.to_wire(box) == data
    # The base was not changed by the derived codec's registration.
    with pytest.raises(WireFormatError, match="not a union this codec knows"):
        base.from_wire(_Box | _Other, data)
    with pytest.raises(WireFormatError, match="not a union this codec knows"):
        base.from_wire(_Leaf | _Other, data["inner"])


def test_public_helpers_use_the_widest_codec_loaded() -> None:
    """pitrio.codec.from_wire decodes session entries once the sessions layer is imported."""
    assert widest_codec() is EVENTS_CODEC
    line = load_jsonl("sessions/all_entry_types.jsonl")[1]
    assert from_wire(SessionEntry, line) == SESSIONS_CODEC.from_wire(SessionEntry, line)


def test_agent_tools_of_any_subclass_encode_as_pi_tools() -> None:
    """An AgentTool subclass defined after the codec was sealed still encodes as pi's JSON."""

    class LateTool(AgentTool):
        name = "late"
        label = "Late"
        description = "defined in a test"
        parameters = {"type": "object", "properties": {}}

        async def execute(self, call_id: str, params: dict[str, Any], on_update: Any) -> Any:
            return text_result("ok")

    encoded = {
        "name": "late",
        "label": "Late",
        "description": "defined in a test",
        "parameters": {"type": "object", "properties": {}},
    }
    assert TOOLS_CODEC.to_wire(LateTool()) == encoded
    assert SESSIONS_CODEC.dumps([LateTool()]) == orjson.dumps([encoded])
    assert isinstance(TOOLS_CODEC.from_wire(AgentToolResult, {"content": []}), AgentToolResult)


# --------------------------------------------------------------------------- custom messages

NOTE_ROLE = "pitrioTestNote"  # registered once for this process (the registry is global)


@wire
@attrs.frozen(kw_only=True)
class NoteMessage(ExtensionMessage):
    """A user-defined message kind, as an application would add one."""

    role: Literal["pitrioTestNote"] = attrs.field(default="pitrioTestNote", init=False)
    text: str
    pinned: bool | None = None
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


def test_register_agent_message_refuses_pi_ai_roles() -> None:
    """pi-ai's three roles cannot be re-registered."""
    with pytest.raises(UsageError, match="'user'"):
        register_agent_message("user", NoteMessage)


def test_a_registered_message_round_trips_through_a_session_file(tmp_path: Path) -> None:
    """A custom message kind registered at any time is written and read back by sessions."""
    raw = {"role": NOTE_ROLE, "text": "remember", "pinned": True, "timestamp": 5}
    # Before registration the role is unknown: kept verbatim, in both layers.
    assert type(SESSIONS_CODEC.from_wire(AgentMessage, raw)) is OpaqueMessage
    register_agent_message(NOTE_ROLE, NoteMessage)
    note = NoteMessage(text="remember", pinned=True, timestamp=5)
    # The already sealed codecs of both layers see it (the registry is read on each decode).
    assert ACTORS_CODEC.from_wire(AgentMessage, raw) == note
    assert ACTORS_CODEC.from_wire(AgentEvent, {"type": "message_end", "message": raw}) == (
        MessageEndEvent(message=note)
    )
    assert SESSIONS_CODEC.from_wire(AgentMessage, raw) == note

    manager = SessionManager.create("/p", tmp_path)
    manager.append_message(UserMessage(content=[TextContent(text="hi")], timestamp=1))
    manager.append_message(note)
    manager.append_message(faux_assistant_message("ok"))
    path = manager.get_session_file()
    assert path is not None
    lines = [orjson.loads(line) for line in Path(path).read_bytes().splitlines()]
    assert lines[2]["message"] == raw

    reopened = SessionManager.open(path)
    messages = [e.message for e in reopened.get_entries() if isinstance(e, SessionMessageEntry)]
    assert messages[1] == note
    assert type(messages[1]) is NoteMessage
    assert [SESSIONS_CODEC.to_wire(e) for e in reopened.get_entries()] == lines[1:]


def test_the_session_file_codec_knows_entries_not_live_events() -> None:
    """The file codec (storage) decodes entries only; session events need the runtime's codec."""
    event = {"type": "queue_update", "steering": ["a"], "followUp": []}
    with pytest.raises(WireFormatError, match="not a union this codec knows"):
        SESSIONS_CODEC.from_wire(AgentSessionEvent, event)
    assert EVENTS_CODEC.to_wire(EVENTS_CODEC.from_wire(AgentSessionEvent, event)) == event
