"""``slot_constructor``: the per-token events built slot by slot equal the constructor's."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from pitrio.actors import MessageUpdateEvent
from pitrio.actors._loop import message_update
from pitrio.codec import dumps, slot_constructor
from pitrio.providers import (
    DELTA_FACTORIES,
    AssistantMessage,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)

pytestmark = pytest.mark.pins_internals


def _message() -> AssistantMessage:
    return AssistantMessage(
        content=[], api="faux", provider="faux", model="m", stop_reason="stop", timestamp=1
    )


@pytest.mark.parametrize("cls", [TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent])
def test_a_delta_factory_builds_what_the_constructor_builds(cls: Any) -> None:
    partial = _message()
    made = DELTA_FACTORIES[cls](3, "abc", partial)
    expected = cls(content_index=3, delta="abc", partial=partial)
    assert type(made) is cls
    # Every field, ``extra`` (left out of __eq__) included, and the bytes on the wire.
    assert attrs.asdict(made, recurse=False) == attrs.asdict(expected, recurse=False)
    assert dumps(made) == dumps(expected)
    assert hash(made) == hash(expected)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.delta = "x"


def test_message_update_builds_what_the_constructor_builds() -> None:
    partial = _message()
    inner = TextDeltaEvent(content_index=0, delta="a", partial=partial)
    made = message_update(inner, partial)
    expected = MessageUpdateEvent(assistant_message_event=inner, message=partial)
    assert attrs.asdict(made, recurse=False) == attrs.asdict(expected, recurse=False)
    assert dumps(made) == dumps(expected)


def test_other_arities_use_the_general_loop() -> None:
    @attrs.frozen
    class Four:
        a: int
        b: int
        c: int
        d: int
        kind: str = "four"

    make = slot_constructor(Four, ("a", "b", "c", "d"))
    assert make(1, 2, 3, 4) == Four(1, 2, 3, 4)
    with pytest.raises(ValueError):  # zip(strict=True): a missing value is not left unset
        make(1, 2, 3)


def test_a_class_it_cannot_build_is_refused() -> None:
    @attrs.frozen
    class Listed:
        items: list[int] = attrs.field(factory=list)
        name: str = ""

    @attrs.frozen
    class Required:
        a: int
        b: int

    @attrs.frozen
    class Checked:
        a: int = attrs.field(validator=attrs.validators.instance_of(int))

    @attrs.frozen(slots=False)
    class NoSlots:
        a: int

    with pytest.raises(TypeError, match="plain default"):
        slot_constructor(Listed, ("name",))
    with pytest.raises(TypeError, match="needs a value"):
        slot_constructor(Required, ("a",))
    with pytest.raises(TypeError, match="validator"):
        slot_constructor(Checked, ("a",))
    with pytest.raises(TypeError, match="not a slot"):
        slot_constructor(NoSlots, ("a",))
    with pytest.raises(TypeError, match="no fields"):
        slot_constructor(Required, ("a", "b", "z"))

    @attrs.frozen(cache_hash=True)
    class CachedHash:
        a: int

    @attrs.frozen
    class PostInit:
        a: int

        def __attrs_post_init__(self) -> None:
            pass

    @attrs.frozen
    class Base:
        a: int

    @attrs.frozen
    class Derived(Base):
        b: int

    with pytest.raises(TypeError, match="slots that are not fields"):
        slot_constructor(CachedHash, ("a",))
    with pytest.raises(TypeError, match="__attrs_post_init__"):
        slot_constructor(PostInit, ("a",))
    with pytest.raises(TypeError, match="not a slot of the class itself"):
        slot_constructor(Derived, ("a", "b"))
