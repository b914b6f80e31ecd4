"""Streaming tool-call arguments: partial JSON and repair, as pi's parseStreamingJson."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.configuration import storage_directory

from pitrio.providers._json_parse import (
    parse_json_with_repair,
    parse_partial_json,
    parse_streaming_json,
    repair_json,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("{", {}),
        ('{"pa', {}),
        ('{"path"', {}),
        ('{"path":', {}),
        ('{"path": "src/ma', {"path": "src/ma"}),
        ('{"path": "a", "n": 4', {"path": "a", "n": 4}),
        ('{"n": -', {}),
        ('{"n": 1.', {"n": 1}),
        ('{"n": 1e', {"n": 1}),
        ('{"ok": tr', {"ok": True}),
        ('{"ok": nul', {"ok": None}),
        ('{"items": [1, {"a": "b', {"items": [1, {"a": "b"}]}),
        ('{"s": "tab\\', {"s": "tab"}),
        ('{"s": "\\u00e', {"s": ""}),
        ('{"s": "\\u00e9', {"s": "\u00e9"}),
        ('{"s": "a\\\\', {"s": "a\\"}),
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", {}),
        ("not json", {}),
    ],
)
def test_parse_streaming_json(text: str, expected: dict[str, object]) -> None:
    assert parse_streaming_json(text) == expected


def test_repair_escapes_control_characters_and_invalid_backslashes() -> None:
    broken = '{"cmd": "ls C:\\dir\n\tx", "u": "\\u00e9", "q": "\\"ok\\""}'
    assert repair_json(broken) == '{"cmd": "ls C:\\\\dir\\n\\tx", "u": "\\u00e9", "q": "\\"ok\\""}'
    assert parse_json_with_repair(broken) == {"cmd": "ls C:\\dir\n\tx", "u": "\u00e9", "q": '"ok"'}


def test_parse_with_repair_raises_for_non_json() -> None:
    with pytest.raises(ValueError):
        parse_json_with_repair("{oops}")


# Integers within JavaScript's exact range: beyond it, arguments are doubles in pi and here.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_every_prefix_parses_and_the_whole_text_round_trips(value: dict[str, object]) -> None:
    """Every prefix of a JSON object parses to a dict, and the whole text to the value itself."""
    text = json.dumps(value)
    for end in range(len(text) + 1):
        prefix = parse_streaming_json(text[:end])
        assert isinstance(prefix, dict)
        # What a prefix shows is never a key the document does not have.
        assert set(prefix) <= set(value)
    assert parse_streaming_json(text) == value
    assert parse_partial_json(text) == value


def test_hypothesis_runs_without_a_deadline_and_saves_nothing_in_the_checkout() -> None:
    """The shared profile has no per-example deadline and no example database (issue 9)."""
    # A deadline fails the property above on a busy machine, and a database in ``.hypothesis/``
    # replays that timing failure on every later run.
    assert settings().deadline is None
    assert settings().database is None
    checkout = Path(__file__).resolve().parents[2]
    home = storage_directory()
    # Hypothesis 6.170 wraps the path in an object with ``.path``; older ones return a Path.
    assert not Path(getattr(home, "path", home)).resolve().is_relative_to(checkout)
