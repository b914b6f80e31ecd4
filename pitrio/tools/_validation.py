"""Tool-argument validation: pi-ai's ``validateToolArguments`` on :mod:`jsonschema`.

Models send arguments that are almost right: ``"3"`` for an integer, ``"true"`` for a boolean.
pi-ai (0.73.1, ``utils/validation.js``) coerces primitives along the schema before validating,
as AJV's ``coerceTypes`` used to; this module applies the same rules, then validates with a
cached :mod:`jsonschema` validator and reports failures in pi's words.
"""

from __future__ import annotations

import copy
import json
import math
import re
import weakref
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, cast

import attrs
import orjson

from pitrio.providers import ToolCall
from pitrio.tools._codec import TOOLS_CODEC
from pitrio.tools._exceptions import SchemaViolation, ToolArgumentsInvalid, ToolSchemaInvalid
from pitrio.tools._fast_check import Check, compile_fast_check
from pitrio.tools._tool import AgentTool

SCHEMA_CACHE: Final = 256
"""Distinct tool schemas whose compiled validator is kept for tools created later."""


_LEAVES: Final = frozenset({str, int, float, bool, type(None)})


def _copy_arguments(value: Any) -> Any:
    """A deep copy of a tool call's arguments: JSON-shaped data (dicts, lists and immutable
    leaves) copied directly, several times faster than ``copy.deepcopy`` per call; anything
    else is left to ``copy.deepcopy``. Arguments decoded from JSON are trees, so the memo
    ``deepcopy`` keeps for shared and cyclic references has nothing to do here."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {key: _copy_arguments(item) for key, item in value.items()}
    if kind is list:
        return [_copy_arguments(item) for item in value]
    return copy.deepcopy(value)


def validate_tool_arguments(tool: AgentTool, tool_call: ToolCall) -> dict[str, Any]:
    """Return a tool call's arguments, adapted, coerced and checked against the tool's schema.

    Steps, as in pi-agent-core's ``prepareToolCall`` and pi-ai's ``validateToolArguments``:

    1. Deep-copy ``tool_call.arguments`` (the call itself is never modified).
    2. Apply :meth:`AgentTool.prepare_arguments`.
    3. Coerce primitives along the schema: ``number``/``integer`` from numeric strings (as
       JavaScript's ``Number()`` reads them) and booleans; ``boolean`` from ``"true"``/
       ``"false"``/``1``/``0``; ``string`` from numbers (JavaScript formatting) and booleans;
       ``null`` from ``""``/``0``/``false``; ``null`` to ``0``/``false``/``""``. A value that
       already has one of several allowed types is left alone. Coercion recurses into
       ``properties``, schema-valued ``additionalProperties``, ``items``/``prefixItems`` and
       ``allOf``; for ``anyOf``/``oneOf`` the first branch that validates after coercion wins.
       Like pi, it recurses into objects and arrays only where the schema states their ``type``
       and does not follow ``$ref``. Integral numbers parsed from strings become ``int``.
    4. Validate with the tool's cached validator: Draft 2020-12 unless the schema names another
       draft in ``$schema``.

    Args:
        tool: the tool being called.
        tool_call: the model's call (its ``name`` appears in the error message).

    Returns:
        The arguments to pass to :meth:`AgentTool.execute`: a new dict.

    Raises:
        ToolArgumentsInvalid: the arguments do not validate. The message is pi's format::

            Validation failed for tool "NAME":
              - PATH: MESSAGE

            Received arguments:
            {JSON.stringify(arguments, null, 2)}

            where PATH is dotted (``root`` for the top level; a missing required property's
            own path) and the arguments are those after ``prepare_arguments``, before coercion.
        ToolSchemaInvalid: the tool's ``parameters`` is not a valid JSON schema.
    """
    received = tool.prepare_arguments(_copy_arguments(tool_call.arguments))
    validator = _validators.get(tool)
    fast = _fast_checks.get(validator)
    if fast is not None and fast(received):
        return cast(dict[str, Any], received)  # valid, and coercion would change nothing
    # _coerce builds new containers and never mutates `received`, which the message shows.
    coerced = _coerce(received, validator.schema, validator)
    violations = tuple(_violation(error) for error in validator.iter_errors(coerced))
    if not violations:
        if isinstance(coerced, dict):
            return coerced
        # A schema that admits a non-object: execute() still needs a params dict.
        violations = (SchemaViolation(path="root", message="must be object", keyword="type"),)
    lines = "\n".join(f"  - {v.path}: {v.message}" for v in violations)
    message = (
        f'Validation failed for tool "{tool_call.name}":\n{lines}\n\n'
        f"Received arguments:\n{_js_json(received)}"
    )
    raise ToolArgumentsInvalid(
        message, tool_name=tool_call.name, errors=violations, arguments=received
    )


# --------------------------------------------------------------------------- validator cache


@attrs.frozen
class _Entry:
    ref: weakref.ref[AgentTool]
    schema: Any
    validator: Any


class _ValidatorCache:
    """Compiled validators per live tool, recompiled when ``tool.parameters`` is replaced.

    Entries are keyed by ``id(tool)`` (tools need not be hashable) and dropped by a weakref
    callback when the tool is collected, so the cache never outgrows the set of live tools.
    Behind it, validators are shared by schema content (``SCHEMA_CACHE`` schemas, least
    recently compiled first out): a session built per prompt brings fresh tool objects with the
    same schemas, and checking a schema against its metaschema is dear next to a whole
    prompt.
    """

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._by_content: dict[bytes, Any] = {}

    def get(self, tool: AgentTool) -> Any:
        key = id(tool)
        schema = tool.parameters
        entry = self._entries.get(key)
        if entry is not None and entry.ref() is tool and entry.schema is schema:
            return entry.validator
        validator = self._shared(tool.name, schema)
        entries = self._entries

        def forget(ref: weakref.ref[AgentTool]) -> None:
            current = entries.get(key)
            if current is not None and current.ref is ref:
                del entries[key]

        entries[key] = _Entry(weakref.ref(tool, forget), schema, validator)
        return validator

    def _shared(self, tool_name: str, schema: Any) -> Any:
        try:
            content = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # not plain JSON (a schema object of its own): compile it alone
            return _compile(tool_name, schema)
        validator = self._by_content.get(content)
        if validator is None:
            # Compiled on a private copy: a caller mutating its schema dict later must not
            # change what the other tools sharing this validator check against.
            validator = _compile(tool_name, copy.deepcopy(schema))
            if len(self._by_content) >= SCHEMA_CACHE:
                del self._by_content[next(iter(self._by_content))]
            self._by_content[content] = validator
        return validator


def _compile(tool_name: str, schema: Any) -> Any:
    if not isinstance(schema, Mapping | bool):
        raise ToolSchemaInvalid(
            f'Invalid parameters schema for tool "{tool_name}": '
            f"expected a JSON object, got {type(schema).__name__}",
            tool_name=tool_name,
        )
    # Imported on the first compile (cached per tool): jsonschema is a large import that
    # `import pitrio` users without tool calls should not pay for.
    import jsonschema  # type: ignore[import-untyped]

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolSchemaInvalid(
            f'Invalid parameters schema for tool "{tool_name}": {exc.message}',
            tool_name=tool_name,
        ) from exc
    return cls(schema)


_validators: Final = _ValidatorCache()


class _FastChecks:
    """Each validator's compiled fast check (`compile_fast_check`), or None if its schema is
    outside the simple subset; at most `SCHEMA_CACHE` validators, oldest first out."""

    def __init__(self) -> None:
        self._checks: dict[int, tuple[Any, Check | None]] = {}

    def get(self, validator: Any) -> Check | None:
        found = self._checks.get(id(validator))
        if found is not None and found[0] is validator:
            return found[1]
        check = compile_fast_check(validator.schema)
        if len(self._checks) >= SCHEMA_CACHE:
            del self._checks[next(iter(self._checks))]
        self._checks[id(validator)] = (validator, check)
        return check


_fast_checks: Final = _FastChecks()


# --------------------------------------------------------------------------- coercion


def _coerce(value: Any, schema: Any, validator: Any) -> Any:
    """Return ``value`` coerced along ``schema`` (pi's ``coerceWithJsonSchema``), as a copy."""
    if not isinstance(schema, Mapping):
        return value  # boolean schemas
    result = value
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for nested in all_of:
            result = _coerce(result, nested, validator)
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            result = _coerce_union(result, branches, validator)
    types = _schema_types(schema)
    already_a_member = len(types) > 1 and any(_has_type(result, t) for t in types)
    if types and not already_a_member:
        for type_name in types:
            changed, candidate = _coerce_primitive(result, type_name)
            if changed:
                result = candidate
                break
    if "object" in types and isinstance(result, dict):
        result = _coerce_object(result, schema, validator)
    if "array" in types and isinstance(result, list):
        result = _coerce_array(result, schema, validator)
    return result


def _coerce_union(value: Any, branches: list[Any], validator: Any) -> Any:
    for branch in branches:
        candidate = _coerce(value, branch, validator)
        try:
            # Evolving the root validator keeps its registry, so "#/$defs/..." refs resolve.
            if validator.evolve(schema=branch).is_valid(candidate):
                return candidate
        except Exception:  # pi skips a branch it cannot compile (`catch {}`); so do we
            continue
    return value


def _coerce_object(
    value: dict[str, Any], schema: Mapping[str, Any], validator: Any
) -> dict[str, Any]:
    result = dict(value)
    properties = schema.get("properties")
    defined = properties if isinstance(properties, Mapping) else {}
    for key, property_schema in defined.items():
        if key in result:
            result[key] = _coerce(result[key], property_schema, validator)
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        for key in result:
            if key not in defined:
                result[key] = _coerce(result[key], additional, validator)
    return result


def _coerce_array(value: list[Any], schema: Mapping[str, Any], validator: Any) -> list[Any]:
    result = list(value)
    items = schema.get("items")
    # Tuple forms: 2020-12's prefixItems and the older list-valued items (which pi reads).
    prefix = schema.get("prefixItems")
    if not isinstance(prefix, list):
        prefix = items if isinstance(items, list) else []
    for index, item_schema in enumerate(prefix[: len(result)]):
        result[index] = _coerce(result[index], item_schema, validator)
    if isinstance(items, Mapping):
        for index in range(len(prefix), len(result)):
            result[index] = _coerce(result[index], items, validator)
    return result


def _schema_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(number: int | float) -> bool:
    return isinstance(number, int) or math.isfinite(number)


def _is_integral(number: int | float) -> bool:
    return isinstance(number, int) or number.is_integer()


def _has_type(value: Any, type_name: str) -> bool:
    match type_name:
        case "number":
            return _is_number(value)
        case "integer":
            return _is_number(value) and _is_integral(value)
        case "boolean":
            return isinstance(value, bool)
        case "string":
            return isinstance(value, str)
        case "null":
            return value is None
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
        case _:
            return False


def _coerce_primitive(value: Any, type_name: str) -> tuple[bool, Any]:
    """Return ``(changed, value)`` for one target type (pi's ``coercePrimitiveByType``)."""
    # `changed` is explicit because Python's True == 1 == 1.0 would hide changes of type.
    match type_name:
        case "number" | "integer":
            if value is None:
                return True, 0
            if isinstance(value, bool):
                return True, int(value)
            if isinstance(value, str) and value.strip():
                parsed = _js_number(value)
                if (
                    parsed is not None
                    and _is_finite(parsed)
                    and (type_name == "number" or _is_integral(parsed))
                ):
                    return True, parsed
        case "boolean":
            if value is None:
                return True, False
            if value == "true" and isinstance(value, str):
                return True, True
            if value == "false" and isinstance(value, str):
                return True, False
            if _is_number(value) and value in (0, 1):
                return True, value == 1
        case "string":
            if value is None:
                return True, ""
            if isinstance(value, bool):
                return True, "true" if value else "false"
            if _is_number(value):
                return True, _js_number_string(value)
        case "null":
            if value == "" or value is False or (_is_number(value) and value == 0):
                return True, None
    return False, value


_RADIX_LITERAL: Final = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_INTEGER_LITERAL: Final = re.compile(r"[+-]?[0-9]+")
_DECIMAL_LITERAL: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INFINITY: Final = {"Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf}
_SAFE_INTEGER: Final = 2**53


def _js_number(text: str) -> int | float | None:
    """Parse ``text`` as JavaScript's ``Number(text)`` does; ``None`` where it gives ``NaN``.

    Integral results are ``int`` (exact for plain digit strings), others ``float``.
    """
    literal = text.strip()
    if _RADIX_LITERAL.fullmatch(literal):
        return int(literal, 0)
    if _INTEGER_LITERAL.fullmatch(literal):
        return int(literal)
    if literal in _INFINITY:
        return _INFINITY[literal]
    if _DECIMAL_LITERAL.fullmatch(literal):
        number = float(literal)
        if number.is_integer() and abs(number) < _SAFE_INTEGER:
            return int(number)
        return number
    return None


def _js_number_string(number: int | float) -> str:
    """Format a number as JavaScript's ``String(number)`` does (ECMAScript Number::toString)."""
    if isinstance(number, int):
        if abs(number) < 10**21:
            return str(number)
        try:
            number = float(number)
        except OverflowError:
            return "Infinity" if number > 0 else "-Infinity"
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr() gives the shortest round-tripping digits, as JavaScript does.
    _, digit_tuple, exponent = Decimal(repr(abs(number))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    point = exponent + len(digit_tuple)  # value = 0.DIGITS * 10**point
    size = len(digits)
    if size <= point <= 21:
        return sign + digits + "0" * (point - size)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    shift = point - 1
    mantissa = digits if size == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{sign}{mantissa}e{'+' if shift >= 0 else '-'}{abs(shift)}"


# --------------------------------------------------------------------------- error report


def _violation(error: Any) -> SchemaViolation:
    parts = [str(part) for part in error.absolute_path]
    if error.validator == "required":
        missing = _missing_property(error)
        if missing is not None:
            parts.append(missing)
    return SchemaViolation(
        path=".".join(parts) or "root", message=error.message, keyword=str(error.validator)
    )


def _missing_property(error: Any) -> str | None:
    # jsonschema reports one error per missing property but names it only in the message.
    instance = error.instance
    if not isinstance(instance, Mapping) or not isinstance(error.validator_value, list):
        return None
    missing = [p for p in error.validator_value if isinstance(p, str) and p not in instance]
    for name in missing:
        if error.message == f"{name!r} is a required property":
            return name
    return missing[0] if missing else None


def _js_json(value: Any, indent: str = "") -> str:
    """Serialise like JavaScript's ``JSON.stringify(value, null, 2)``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _js_number_string(value) if _is_finite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    inner = indent + "  "
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        members = ",\n".join(
            f"{inner}{json.dumps(str(key), ensure_ascii=False)}: {_js_json(item, inner)}"
            for key, item in value.items()
        )
        return "{\n" + members + "\n" + indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        elements = ",\n".join(f"{inner}{_js_json(item, inner)}" for item in value)
        return "[\n" + elements + "\n" + indent + "]"
    # attrs wire objects a prepare_arguments hook may have produced
    data = TOOLS_CODEC.to_wire(value)
    if isinstance(data, Mapping | list | tuple | str | int | float | bool) or data is None:
        return _js_json(data, indent)
    return json.dumps(str(value), ensure_ascii=False)
