"""Tool-argument coercion and validation (pi-ai's ``validateToolArguments``)."""

from __future__ import annotations

import copy
import gc
from collections.abc import Mapping
from typing import Any

import pytest

from pitrio.providers import ToolCall
from pitrio.tools import (
    AgentTool,
    AgentToolResult,
    FunctionTool,
    SchemaViolation,
    ToolArgumentsInvalid,
    ToolError,
    ToolSchemaInvalid,
    ToolUpdateCallback,
    _validation,
    validate_tool_arguments,
)


async def _noop(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> str:
    return ""


def _tool(parameters: dict[str, Any], **kwargs: Any) -> FunctionTool:
    return FunctionTool(name="t", label="T", parameters=parameters, fn=_noop, **kwargs)


def _validate(schema: dict[str, Any], arguments: dict[str, Any], **kwargs: Any) -> Any:
    return validate_tool_arguments(
        _tool(schema, **kwargs), ToolCall(id="c1", name="t", arguments=arguments)
    )


def _property(schema: dict[str, Any], value: Any) -> Any:
    """Validate ``{"v": value}`` against an object whose ``v`` has ``schema``; return ``v``."""
    return _validate({"type": "object", "properties": {"v": schema}}, {"v": value})["v"]


def _same(a: Any, b: Any) -> bool:
    # Python's True == 1 == 1.0: compare types as well as values.
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- primitive rules


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12", 12),
        ("1.5", 1.5),
        (" 7 ", 7),
        ("0x10", 16),
        ("1e3", 1000),
        (".5", 0.5),
        (True, 1),
        (False, 0),
        (None, 0),
    ],
)
def test_number_is_coerced_from_numeric_strings_booleans_and_null(
    value: Any, expected: Any
) -> None:
    """A number property accepts numeric strings (as JavaScript's Number reads them)."""
    assert _same(_property({"type": "number"}, value), expected)


@pytest.mark.parametrize("value", ["1_000", "abc", "Infinity", "", "-0x10", "1e400"])
def test_number_is_not_coerced_from_non_numeric_strings(value: str) -> None:
    """Strings that JavaScript reads as NaN or Infinity stay strings and fail validation."""
    with pytest.raises(ToolArgumentsInvalid):
        _property({"type": "number"}, value)


@pytest.mark.parametrize(
    ("value", "expected"), [("3", 3), ("1.0", 1), ("1e3", 1000), (True, 1), (None, 0)]
)
def test_integer_is_coerced_from_integral_strings(value: Any, expected: int) -> None:
    """An integer property accepts strings that denote whole numbers, and booleans."""
    assert _same(_property({"type": "integer"}, value), expected)


def test_integer_is_not_coerced_from_fractional_strings() -> None:
    """``"3.5"`` is not an integer, so it stays a string and fails validation."""
    with pytest.raises(ToolArgumentsInvalid, match="not of type 'integer'"):
        _property({"type": "integer"}, "3.5")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("false", False), (1, True), (0, False), (1.0, True), (None, False)],
)
def test_boolean_is_coerced_from_strings_numbers_and_null(value: Any, expected: bool) -> None:
    """A boolean property accepts ``"true"``/``"false"``, ``1``/``0`` and null."""
    assert _same(_property({"type": "boolean"}, value), expected)


@pytest.mark.parametrize("value", ["TRUE", "yes", 2])
def test_boolean_is_not_coerced_from_other_values(value: Any) -> None:
    """Only the exact spellings and numbers pi accepts become booleans."""
    with pytest.raises(ToolArgumentsInvalid):
        _property({"type": "boolean"}, value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "5"),
        (1.5, "1.5"),
        (2.0, "2"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (0.1, "0.1"),
        (True, "true"),
        (False, "false"),
        (None, ""),
    ],
)
def test_string_is_coerced_from_numbers_and_booleans(value: Any, expected: str) -> None:
    """A string property accepts numbers (formatted as JavaScript would) and booleans."""
    assert _property({"type": "string"}, value) == expected


def test_string_is_not_coerced_from_objects() -> None:
    """Objects and arrays are never turned into strings."""
    with pytest.raises(ToolArgumentsInvalid, match="is not of type 'string'"):
        _property({"type": "string"}, {"a": 1})


@pytest.mark.parametrize("value", ["", 0, 0.0, False, None])
def test_null_is_coerced_from_empty_string_zero_and_false(value: Any) -> None:
    """A null property accepts ``""``, ``0`` and ``false``."""
    assert _property({"type": "null"}, value) is None


# --------------------------------------------------------------------------- type unions


@pytest.mark.parametrize(
    ("types", "value"), [(["string", "number"], "12"), (["number", "string"], "12")]
)
def test_value_already_in_a_type_union_is_left_alone(types: list[str], value: Any) -> None:
    """A value that has one of several allowed types is not coerced to another."""
    assert _same(_property({"type": types}, value), value)


@pytest.mark.parametrize(
    ("types", "value", "expected"),
    [
        (["number", "string"], True, 1),
        (["null", "number"], "5", 5),
        (["null", "number"], "", None),
        (["boolean", "null"], 0, False),
    ],
)
def test_type_union_coerces_to_the_first_type_that_changes_the_value(
    types: list[str], value: Any, expected: Any
) -> None:
    """For a type union, the first listed type whose rule changes the value wins."""
    assert _same(_property({"type": types}, value), expected)


# --------------------------------------------------------------------------- structure


def test_nested_object_properties_are_coerced() -> None:
    """Coercion recurses into the properties of nested objects."""
    schema = {
        "type": "object",
        "properties": {
            "address": {
                "type": "object",
                "properties": {"zip": {"type": "string"}, "floor": {"type": "integer"}},
            }
        },
    }
    result = _validate(schema, {"address": {"zip": 12345, "floor": "3"}})
    assert result == {"address": {"zip": "12345", "floor": 3}}


def test_additional_properties_schema_is_applied_to_undeclared_keys() -> None:
    """A schema-valued ``additionalProperties`` coerces every key not in ``properties``."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": {"type": "number"},
    }
    result = _validate(schema, {"name": 7, "x": "1", "y": "2.5"})
    assert result == {"name": "7", "x": 1, "y": 2.5}


def test_additional_properties_false_reports_the_unexpected_key() -> None:
    """With ``additionalProperties: false`` an unknown key is a root-level violation."""
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(schema, {"w": 2})
    assert [(v.path, v.keyword) for v in info.value.errors] == [("root", "additionalProperties")]


def test_array_items_are_coerced() -> None:
    """Every element of an array is coerced along ``items``."""
    assert _property({"type": "array", "items": {"type": "integer"}}, ["1", "2", 3]) == [1, 2, 3]


def test_prefix_items_are_coerced_by_position() -> None:
    """Tuple-form arrays (``prefixItems``) coerce each position; ``items`` covers the rest."""
    schema = {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "boolean"}],
        "items": {"type": "string"},
    }
    assert _property(schema, ["1", "true", 3, 4]) == [1, True, "3", "4"]


def test_list_valued_items_are_coerced_by_position_in_older_drafts() -> None:
    """A draft-07 schema's list-valued ``items`` coerces each position, as pi does."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"v": {"type": "array", "items": [{"type": "number"}, {"type": "boolean"}]}},
    }
    assert _validate(schema, {"v": ["1", "true", "x"]}) == {"v": [1, True, "x"]}


def test_all_of_schemas_are_applied_in_turn() -> None:
    """Each ``allOf`` member coerces the value."""
    assert _same(_property({"allOf": [{"type": "number"}, {"minimum": 1}]}, "3"), 3)


def test_any_of_takes_the_first_branch_that_validates_after_coercion() -> None:
    """``anyOf`` coerces along the first branch whose schema then accepts the value."""
    schema = {"anyOf": [{"type": "number", "minimum": 10}, {"type": "boolean"}]}
    assert _property(schema, "true") is True
    assert _same(_property(schema, "12"), 12)


def test_any_of_recurses_into_object_branches() -> None:
    """An object branch of ``anyOf`` coerces the object's properties."""
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"k": {"type": "number"}}, "required": ["k"]},
            {"type": "string"},
        ]
    }
    assert _property(schema, {"k": "1"}) == {"k": 1}


def test_any_of_branch_may_reference_root_definitions() -> None:
    """A branch is checked with ``$ref`` resolved against the whole parameter schema."""
    schema = {
        "type": "object",
        "$defs": {"positive": {"minimum": 1}},
        "properties": {
            "v": {"anyOf": [{"type": "integer", "$ref": "#/$defs/positive"}, {"type": "string"}]}
        },
    }
    assert _validate(schema, {"v": "4"}) == {"v": 4}
    assert _validate(schema, {"v": "0"}) == {"v": "0"}


def test_any_of_without_a_matching_branch_leaves_the_value() -> None:
    """When no branch validates, the value is not coerced and validation fails."""
    schema = {"anyOf": [{"type": "number"}, {"type": "boolean"}]}
    with pytest.raises(ToolArgumentsInvalid) as info:
        _property(schema, "x")
    assert info.value.errors[0].keyword == "anyOf"


def test_one_of_matching_two_branches_after_coercion_fails() -> None:
    """``oneOf`` coerces like ``anyOf``, then still requires exactly one branch to match."""
    with pytest.raises(ToolArgumentsInvalid) as info:
        _property({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "3")
    assert info.value.errors[0].keyword == "oneOf"


def test_object_without_a_declared_type_is_not_recursed_into() -> None:
    """Like pi, coercion only enters objects whose schema says ``type: object``."""
    with pytest.raises(ToolArgumentsInvalid):
        _validate({"properties": {"n": {"type": "number"}}}, {"n": "12"})


# --------------------------------------------------------------------------- arguments


def test_tool_call_arguments_are_not_mutated() -> None:
    """Validation works on a deep copy; the ToolCall's dict is left as the model sent it."""
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "number"},
            "inner": {"type": "object", "properties": {"b": {"type": "boolean"}}},
            "list": {"type": "array", "items": {"type": "integer"}},
        },
    }
    arguments = {"n": "1", "inner": {"b": "true"}, "list": ["1"], "other": {"x": [1]}}
    original = copy.deepcopy(arguments)
    call = ToolCall(id="c1", name="t", arguments=arguments)
    result = validate_tool_arguments(_tool(schema), call)
    assert call.arguments == original
    assert result == {"n": 1, "inner": {"b": True}, "list": [1], "other": {"x": [1]}}
    assert result["other"] is not arguments["other"]


def test_prepare_arguments_runs_before_validation_on_a_copy() -> None:
    """``prepare_arguments`` receives a copy of the raw arguments and its result is validated."""
    seen: list[Any] = []

    def prepare(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        args["count"] = args.pop("n")  # rename an old argument, in place
        return args

    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    arguments = {"n": "2"}
    call = ToolCall(id="c1", name="t", arguments=arguments)
    result = validate_tool_arguments(_tool(schema, prepare=prepare), call)
    assert result == {"count": 2}
    assert arguments == {"n": "2"}
    assert seen[0] is not arguments


def test_valid_arguments_are_returned_as_a_new_dict() -> None:
    """Arguments that need no coercion come back equal but not identical."""
    arguments = {"text": "hi"}
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    call = ToolCall(id="c1", name="t", arguments=arguments)
    result = validate_tool_arguments(_tool(schema), call)
    assert result == arguments
    assert result is not arguments


# --------------------------------------------------------------------------- error messages


WEATHER = {
    "type": "object",
    "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
}


def test_missing_required_property_message() -> None:
    """A missing property is reported under its own name, in pi's message format."""
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(WEATHER, {"days": 3})
    assert str(info.value) == (
        'Validation failed for tool "t":\n'
        "  - city: 'city' is a required property\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "days": 3\n'
        "}"
    )
    assert info.value.tool_name == "t"
    assert info.value.errors == (
        SchemaViolation(path="city", message="'city' is a required property", keyword="required"),
    )


def test_nested_missing_required_property_path() -> None:
    """A property missing from a nested object is reported as ``parent.child``."""
    schema = {
        "type": "object",
        "properties": {
            "address": {
                "type": "object",
                "properties": {"zip": {"type": "string"}},
                "required": ["zip"],
            }
        },
    }
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(schema, {"address": {}})
    assert [v.path for v in info.value.errors] == ["address.zip"]


def test_wrong_type_message_shows_the_original_arguments() -> None:
    """A type error names the property and the message shows the arguments before coercion."""
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(WEATHER, {"city": 12, "days": "three"})
    assert str(info.value) == (
        'Validation failed for tool "t":\n'
        "  - days: 'three' is not of type 'integer'\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "city": 12,\n'
        '  "days": "three"\n'
        "}"
    )
    assert info.value.arguments == {"city": 12, "days": "three"}


def test_several_errors_are_listed_one_per_line() -> None:
    """Every violation gets its own line, including array element paths and ``root``."""
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}},
            "when": {"type": "string", "enum": ["now", "later"]},
        },
        "additionalProperties": False,
    }
    arguments = {"tags": ["ok", "long", "héllo"], "when": "never", "x": 1.5e-7}
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(schema, arguments)
    assert str(info.value) == (
        'Validation failed for tool "t":\n'
        "  - a: 'a' is a required property\n"
        "  - b: 'b' is a required property\n"
        "  - tags.1: 'long' is too long\n"
        "  - tags.2: 'héllo' is too long\n"
        "  - when: 'never' is not one of ['now', 'later']\n"
        "  - root: Additional properties are not allowed ('x' was unexpected)\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "tags": [\n'
        '    "ok",\n'
        '    "long",\n'
        '    "héllo"\n'
        "  ],\n"
        '  "when": "never",\n'
        '  "x": 1.5e-7\n'
        "}"
    )
    assert isinstance(info.value, ToolError)
    assert isinstance(info.value, ValueError)


def test_empty_arguments_are_shown_as_an_empty_object() -> None:
    """``JSON.stringify({}, null, 2)`` is ``{}``, and so is the message's argument dump."""
    with pytest.raises(ToolArgumentsInvalid) as info:
        _validate(WEATHER, {})
    assert str(info.value).endswith("Received arguments:\n{}")
    assert [v.path for v in info.value.errors] == ["city", "days"]


def test_invalid_schema_raises_tool_schema_invalid() -> None:
    """A tool whose parameters are not a JSON schema fails with ``ToolSchemaInvalid``."""
    with pytest.raises(ToolSchemaInvalid, match='Invalid parameters schema for tool "t"'):
        _validate({"type": "object", "properties": {"v": {"type": "nope"}}}, {})
    with pytest.raises(ToolSchemaInvalid, match="expected a JSON object, got list"):
        _validate([], {})  # type: ignore[arg-type]


# --------------------------------------------------------------------------- validator cache


def test_validator_is_compiled_once_per_tool() -> None:
    """Repeated validations of one tool reuse the same compiled validator."""
    tool = _tool(WEATHER)
    first = _validation._validators.get(tool)
    validate_tool_arguments(tool, ToolCall(id="c1", name="t", arguments={"city": "x", "days": 1}))
    assert _validation._validators.get(tool) is first


def test_replaced_parameters_get_a_new_validator() -> None:
    """A tool whose ``parameters`` object is replaced is validated against the new schema."""

    class Search(AgentTool):
        name = "t"
        label = "Search"
        description = "Search for things."
        parameters: Mapping[str, Any] = WEATHER

        async def execute(
            self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
        ) -> AgentToolResult:
            raise NotImplementedError

    tool = Search()
    first = _validation._validators.get(tool)
    tool.parameters = {"type": "object", "required": ["q"]}
    assert _validation._validators.get(tool) is not first
    with pytest.raises(ToolArgumentsInvalid, match="'q' is a required property"):
        validate_tool_arguments(tool, ToolCall(id="c1", name="t", arguments={}))


def test_validator_cache_forgets_collected_tools() -> None:
    """The cache holds no entry for a tool once the tool has been garbage-collected."""
    tool = _tool(WEATHER)
    _validation._validators.get(tool)
    key = id(tool)
    assert key in _validation._validators._entries
    del tool
    gc.collect()
    assert key not in _validation._validators._entries


def test_tools_with_equal_schemas_share_one_compiled_validator() -> None:
    """A fresh tool whose schema equals an earlier tool's reuses its compiled validator."""
    first = _validation._validators.get(_tool(copy.deepcopy(WEATHER)))
    assert _validation._validators.get(_tool(copy.deepcopy(WEATHER))) is first


def test_shared_validator_ignores_later_mutation_of_a_schema() -> None:
    """Mutating one tool's schema dict in place does not change what an equal tool checks."""
    schema: dict[str, Any] = {"type": "object", "required": ["shared_q"]}
    mutated = _tool(schema)
    _validation._validators.get(mutated)
    schema["required"] = []
    other = _tool({"type": "object", "required": ["shared_q"]})
    with pytest.raises(ToolArgumentsInvalid, match="'shared_q' is a required property"):
        validate_tool_arguments(other, ToolCall(id="c1", name="t", arguments={}))


def test_schema_cache_is_bounded() -> None:
    """The shared validators stay within ``SCHEMA_CACHE`` distinct schemas."""
    for i in range(_validation.SCHEMA_CACHE + 5):
        _validation._validators.get(_tool({"type": "object", "required": [f"k{i}"]}))
    assert len(_validation._validators._by_content) <= _validation.SCHEMA_CACHE
