"""The generated decoders build objects through the class's own ``__init__``: a field's
converter is called as the constructor calls it, a message role found in a later map of the live
message registry (not the first, read inline) decodes, and decoded objects are exactly of their
class, frozen and equal to the constructor's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import pytest

from pitrio.codec import extra_field, make_codec, wire

calls: list[Any] = []


def _as_tuple(items: Iterable[int]) -> tuple[int, ...]:
    calls.append(items)
    return items if isinstance(items, tuple) else tuple(items)


def _as_list(items: Iterable[int]) -> list[int]:
    calls.append(items)
    return list(items)


@wire
@attrs.frozen(kw_only=True)
class Kept:
    """A wire class whose field converter keeps tuples."""

    items: tuple[int, ...] = attrs.field(converter=_as_tuple)
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class Listed:
    """A wire class whose converter makes a list of what it is given."""

    items: list[int] = attrs.field(converter=_as_list)
    extra: dict[str, Any] | None = extra_field()


CODEC = make_codec(name="keeps-test").seal()


def test_a_converter_is_called_once_as_the_constructor_calls_it() -> None:
    """The decoder passes the built value to the constructor, whose converter runs once; the
    object equals the one the constructor builds."""
    calls.clear()
    decoded = CODEC.from_wire(Kept, {"items": [1, 2]})
    assert calls == [(1, 2)]  # the generated decoder built the tuple; __init__ converted it
    assert decoded == Kept(items=[1, 2]) and decoded.items == (1, 2)


def test_a_converter_that_changes_the_type_is_applied() -> None:
    """A list field's converter is applied to what the decoder built (a tuple or a list)."""
    calls.clear()
    decoded = CODEC.from_wire(Listed, {"items": [3]})
    assert decoded.items == [3] and len(calls) == 1


def test_a_role_of_a_later_registry_map_decodes() -> None:
    """A coding-agent message kind (the registry's second map) decodes on the fast path as on
    the slow one, inside a session entry."""
    from pitrio.sessions import BashExecutionMessage, decode_entry

    data = {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "t",
        "message": {
            "role": "bashExecution",
            "command": "ls",
            "output": "x",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1,
        },
    }
    entry = decode_entry(data)
    assert type(entry.message) is BashExecutionMessage  # type: ignore[union-attr]
    assert entry.message.command == "ls"  # type: ignore[union-attr]


def test_an_object_with_as_many_keys_as_known_but_one_unknown_decodes_as_before() -> None:
    """A usage whose key count matches the known keys but that misses a known key (an unknown
    one instead), or whose value has another type, decodes as cattrs' path does (defaults and
    extra, or the error)."""
    from pitrio.codec import WireFormatError
    from pitrio.providers import Cost, Usage
    from pitrio.sessions.storage._codec import SESSIONS_CODEC

    cost = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "total": 3}
    whole = {"input": 5, "output": 7, "cacheRead": 1, "cacheWrite": 2, "totalTokens": 15}
    usage = SESSIONS_CODEC.from_wire(Usage, {**whole, "cost": cost})
    assert usage == Usage(
        input=5,
        output=7,
        cache_read=1,
        cache_write=2,
        total_tokens=15,
        cost=Cost(input=1.0, output=2.0, total=3.0),
    )
    swapped = {**whole, "cost": cost}
    del swapped["cacheWrite"]
    swapped["future"] = True
    decoded = SESSIONS_CODEC.from_wire(Usage, swapped)
    assert decoded.cache_write == 0 and decoded.extra == {"future": True}
    assert decoded.input == 5 and decoded.cost == usage.cost
    with pytest.raises(WireFormatError):
        SESSIONS_CODEC.from_wire(Usage, {**whole, "output": "7", "cost": cost})


def test_decoded_messages_are_frozen_objects_of_their_class() -> None:
    """The objects are exactly of the class, frozen, equal to the constructor's, with unknown
    keys kept in ``extra``."""
    from pitrio.providers import AssistantMessage, Cost, TextContent, ToolCall, Usage
    from pitrio.sessions.storage._codec import SESSIONS_CODEC

    usage = {
        "input": 1,
        "output": 2,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 3,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    data = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"text": "x"}},
        ],
        "api": "faux",
        "provider": "faux",
        "model": "faux-1",
        "usage": usage,
        "stopReason": "toolUse",
        "timestamp": 1,
    }
    plain = SESSIONS_CODEC.from_wire(AssistantMessage, data)
    unknown = SESSIONS_CODEC.from_wire(AssistantMessage, {**data, "future": 1})
    again = SESSIONS_CODEC.from_wire(AssistantMessage, data)
    built = AssistantMessage(
        content=[TextContent(text="hi"), ToolCall(id="c1", name="echo", arguments={"text": "x"})],
        api="faux",
        provider="faux",
        model="faux-1",
        usage=Usage(input=1, output=2, total_tokens=3),
        stop_reason="toolUse",
        timestamp=1,
    )
    for message in (plain, unknown, again):
        assert type(message) is AssistantMessage and message == built
        assert type(message.usage) is Usage and type(message.usage.cost) is Cost
        assert [type(block) for block in message.content] == [TextContent, ToolCall]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            message.model = "other"  # type: ignore[misc]
    assert plain.extra is None and unknown.extra == {"future": 1}
