"""The deep copy a tool call's arguments get before validation."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.tools._validation import _copy_arguments

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def _containers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for item in value.values() for i in _containers(item))]
    if isinstance(value, list):
        return [id(value), *(i for item in value for i in _containers(item))]
    return []


@settings(deadline=None, max_examples=200)
@given(st.dictionaries(st.text(), JSON, max_size=5))
def test_json_arguments_are_copied_equal_and_share_no_container(arguments: dict[str, Any]) -> None:
    """The copy equals the original and none of its dicts or lists is the original's."""
    copied = _copy_arguments(arguments)
    assert copied == arguments
    assert not set(_containers(copied)) & set(_containers(arguments))


def test_values_that_are_not_json_are_deep_copied() -> None:
    """A tuple holding a list, or a set, is deep-copied as copy.deepcopy does."""
    inner = [1, 2]
    arguments = {"pair": (inner, 3), "tags": {"a", "b"}}
    copied = _copy_arguments(arguments)
    assert copied == arguments
    assert copied["pair"][0] is not inner
    assert copied["tags"] is not arguments["tags"]
