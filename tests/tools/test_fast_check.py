"""The fast schema check never says yes where jsonschema or pi's coercion would disagree."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.tools._fast_check import compile_fast_check
from pitrio.tools._validation import _coerce

TYPE_NAMES = ["string", "integer", "number", "boolean", "null", "object", "array"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.sampled_from(["", "3", "true", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=8,
)


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.booleans(),
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPE_NAMES)),
        st.builds(
            lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3)
        ),
        st.just({"description": "anything"}),
        st.just({"type": "string", "minLength": 2}),  # outside the subset
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        obj = st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(st.sampled_from("abc"), inner),
            },
            optional={
                "required": st.lists(st.sampled_from("abc"), max_size=2, unique=True),
                "additionalProperties": st.one_of(st.booleans(), inner),
            },
        )
        arr = st.fixed_dictionaries({"type": st.just("array")}, optional={"items": inner})
        return obj | arr

    return st.recursive(leaf, extend, max_leaves=6)


@settings(deadline=None, max_examples=600)
@given(schema=_schemas(), value=json_values)
def test_yes_means_valid_and_unchanged_by_coercion(schema: Any, value: Any) -> None:
    """Whenever the fast check says yes, jsonschema agrees and coercion changes nothing."""
    check = compile_fast_check(schema)
    if check is None or not check(value):
        return
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(value)
    before = copy.deepcopy(value)
    coerced = _coerce(value, schema, validator)
    assert coerced == before
    assert _same_types(coerced, before)


SAMPLES: list[Any] = [None, True, False, 0, 1, 3, -2, 0.0, 1.5, 3.0, "", "3", "true", "x"]
SAMPLES += [[], [1], ["x", None], {}, {"a": 1}, {"a": "x", "b": None}]
LEAF_SCHEMAS: list[Any] = [True, False, {}, {"description": "d"}]
LEAF_SCHEMAS += [{"type": t} for t in TYPE_NAMES]
LEAF_SCHEMAS += [{"type": [a, b]} for a in TYPE_NAMES for b in TYPE_NAMES if a < b]


def _assert_agrees(schema: Any, value: Any) -> None:
    check = compile_fast_check(schema)
    if check is None or not check(value):
        return
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(value), (schema, value)
    before = copy.deepcopy(value)
    coerced = _coerce(value, schema, validator)
    assert coerced == before and _same_types(coerced, before), (schema, value)


def test_every_leaf_schema_against_every_sample_value() -> None:
    """Each type (and pair of types) against each kind of JSON value, exhaustively."""
    for schema in LEAF_SCHEMAS:
        for value in SAMPLES:
            _assert_agrees(schema, value)


def test_nested_shapes_against_every_sample_value() -> None:
    """Object properties, required keys, additionalProperties and items, with every sample
    value in every position."""
    for leaf in LEAF_SCHEMAS:
        shapes = [
            {"type": "object", "properties": {"a": leaf}, "required": ["a"]},
            {"type": "object", "properties": {"a": leaf}, "additionalProperties": False},
            {"type": "object", "additionalProperties": leaf},
            {"type": "array", "items": leaf},
        ]
        for schema in shapes:
            for value in SAMPLES:
                _assert_agrees(schema, {"a": value})
                _assert_agrees(schema, {"a": value, "b": value})
                _assert_agrees(schema, [value, value])


def _same_types(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


def test_common_tool_schemas_get_a_check_and_others_do_not() -> None:
    """The echo and read-file shapes compile; $schema, $ref or format keywords do not."""
    echo = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    check = compile_fast_check(echo)
    assert check is not None
    assert check({"text": "hi"})
    assert not check({"text": 3})  # unsure: coercion would make it "3"
    assert not check({})  # missing required
    assert compile_fast_check({"$schema": "x", "type": "object"}) is None
    assert compile_fast_check({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) is None
    assert compile_fast_check({"type": "string", "format": "uri"}) is None
