"""The slot-setter ``__init__`` of frozen wire classes behaves exactly as attrs' own."""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest

from pitrio._fast_init import speed_up_frozen_init


def _make(**options: Any) -> type:
    @attrs.frozen(kw_only=True, **options)
    class Sample:
        kind: str = attrs.field(default="sample", init=False)
        name: str
        size: int = 3
        tags: list[str] = attrs.field(factory=list)
        items: tuple[int, ...] = attrs.field(default=(), converter=tuple)
        extra: dict[str, Any] | None = None

    return Sample


def _values(obj: Any) -> dict[str, Any]:
    return attrs.asdict(obj, recurse=False)


def test_same_signature_values_and_frozenness() -> None:
    """Defaults, factories, converters and init=False fields come out as attrs builds them."""
    plain, fast = _make(), _make()
    assert speed_up_frozen_init(fast)
    assert inspect.signature(fast.__dict__["__init__"]) == inspect.signature(
        plain.__dict__["__init__"]
    )
    for kwargs in ({"name": "a"}, {"name": "b", "size": 9, "tags": ["x"], "items": [1, 2]}):
        assert _values(fast(**kwargs)) == _values(plain(**kwargs))
    first, second = fast(name="a"), fast(name="a")
    assert first.tags is not second.tags  # a fresh list per instance, as attrs' factory gives
    assert fast(name="c", items=[4]).items == (4,)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.name = "changed"
    with pytest.raises(TypeError):
        fast()  # the required argument is still required


def test_errors_in_the_new_init_show_its_source() -> None:
    """A traceback through the rewritten function shows its lines (it is in linecache)."""
    fast = _make()
    speed_up_frozen_init(fast)
    assert "_slot_set_name(self, name)" in inspect.getsource(fast.__dict__["__init__"])


def test_classes_attrs_must_keep() -> None:
    """Validators, post-init hooks and mutable classes keep attrs' __init__."""

    @attrs.frozen
    class Validated:
        value: int = attrs.field(validator=attrs.validators.instance_of(int))

    @attrs.frozen
    class PostInit:
        value: int

        def __attrs_post_init__(self) -> None:
            pass

    @attrs.define
    class Mutable:
        value: int

    for cls in (Validated, PostInit, Mutable):
        before = cls.__dict__["__init__"]
        assert not speed_up_frozen_init(cls)
        assert cls.__dict__["__init__"] is before
    with pytest.raises(TypeError):
        Validated("not an int")  # type: ignore[arg-type]


def test_positional_factory_builds_what_the_keyword_call_builds() -> None:
    """The positional factory gives an equal, frozen instance with every default in place,
    and refuses classes whose __init__ does more than assign."""
    from pitrio._fast_init import positional_factory
    from pitrio.actors import MessageUpdateEvent
    from pitrio.providers import DELTA_FACTORIES, TextDeltaEvent

    make = positional_factory(TextDeltaEvent, ("content_index", "delta", "partial"))
    made = make(2, "abcd", None)
    assert made == TextDeltaEvent(content_index=2, delta="abcd", partial=None)
    assert (made.type, made.extra) == ("text_delta", None)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.delta = "x"  # type: ignore[misc]
    assert DELTA_FACTORIES[TextDeltaEvent](0, "x", None) == TextDeltaEvent(
        content_index=0, delta="x", partial=None
    )
    update = positional_factory(MessageUpdateEvent, ("assistant_message_event", "message"))
    assert update(made, None) == MessageUpdateEvent(assistant_message_event=made, message=None)

    sample = _make()
    with pytest.raises(TypeError, match="converter"):
        positional_factory(sample, ("name",))
    with pytest.raises(TypeError, match="no fields"):
        positional_factory(TextDeltaEvent, ("content_index", "delta", "partial", "nope"))
    with pytest.raises(TypeError, match="needs a value"):
        positional_factory(TextDeltaEvent, ("content_index", "delta"))


def test_positional_factory_calls_a_keeping_converter_for_other_types_only() -> None:
    """A field whose converter names the types it returns unchanged (``__wire_keeps__``) is
    stored as given when of such a type, and converted otherwise; the instance equals the
    keyword call's either way, and such a field must be given."""
    from pitrio._fast_init import positional_factory
    from pitrio.providers import AssistantMessage, TextContent

    names = ("content", "api", "provider", "model", "stop_reason", "timestamp")
    make = positional_factory(AssistantMessage, names)
    blocks = (TextContent(text="hi"),)
    kept = make(blocks, "a", "p", "m", "stop", 1)
    assert kept.content is blocks
    converted = make(list(blocks), "a", "p", "m", "stop", 1)
    assert type(converted.content) is tuple and converted.content == blocks
    expected = AssistantMessage(
        content=blocks, api="a", provider="p", model="m", stop_reason="stop", timestamp=1
    )
    assert type(kept) is AssistantMessage and kept == converted == expected
    with pytest.raises(TypeError, match="needs a value"):
        positional_factory(AssistantMessage, names[1:])


def test_positional_factory_builds_the_hot_classes_through_their_layout_twin() -> None:
    """Per-token events, usage and message entries are built as a plain twin and then given
    their class: the instance is exactly of the class, equal to the keyword call's, frozen,
    and has no attribute left unset."""
    from pitrio._fast_init import layout_twin, positional_factory
    from pitrio.actors import MessageUpdateEvent
    from pitrio.actors._loop import message_update
    from pitrio.providers import DELTA_FACTORIES, TextDeltaEvent, Usage
    from pitrio.providers._faux import _make_usage
    from pitrio.sessions import SessionMessageEntry
    from pitrio.sessions._entry_columns import _build_message_entry

    for make in (*DELTA_FACTORIES.values(), message_update, _make_usage, _build_message_entry):
        assert make.__globals__["_twin"] is not None, make.__qualname__

    delta = DELTA_FACTORIES[TextDeltaEvent](1, "abcd", None)
    assert type(delta) is TextDeltaEvent
    assert delta == TextDeltaEvent(content_index=1, delta="abcd", partial=None)
    assert attrs.asdict(delta, recurse=False) == {
        "type": "text_delta",
        "content_index": 1,
        "delta": "abcd",
        "partial": None,
        "extra": None,
    }
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        delta.delta = "x"  # type: ignore[misc]
    assert attrs.evolve(delta, delta="efgh").delta == "efgh"
    update = message_update(delta, None)
    assert type(update) is MessageUpdateEvent and update.assistant_message_event is delta
    usage = _make_usage(1, 2, 3, 4, 10, Usage().cost)
    assert usage == Usage(input=1, output=2, cache_read=3, cache_write=4, total_tokens=10)
    entry = _build_message_entry("a", None, "2026-11-23T00:00:00.000Z", None)
    assert type(entry) is SessionMessageEntry and entry.parent_id is None

    # A class CPython will not re-class (a __weakref__ slot, or a slotted base) keeps the
    # descriptor path, with the same result.
    @attrs.frozen(kw_only=True)
    class WithWeakref:
        name: str
        size: int = 3
        extra: Any = None

    make = positional_factory(WithWeakref, ("name",))
    assert make("a") == WithWeakref(name="a") and type(make("a")) is WithWeakref
    if layout_twin(WithWeakref) is None:
        assert make.__globals__["_twin"] is None
