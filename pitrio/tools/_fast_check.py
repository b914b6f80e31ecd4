"""A compiled yes/unsure check for the simple tool schemas most tools have.

jsonschema interprets a schema on every call (and coerces), a good part of a tool turn's
fixed cost. Most tool schemas use a handful of keywords
(``type``, ``properties``, ``required``, ``additionalProperties``, ``items`` and annotations);
for those, :func:`compile_fast_check` builds a predicate out of closures that answers True only
when the arguments are valid *and* already have their schema's types (so pi's coercion would
leave them as they are). False means "not sure": the caller then runs coercion and jsonschema,
which also produce the error message. A schema with any other keyword (or ``$schema``) gets no
fast check at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

Check = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset({"description", "title", "default", "examples", "$comment"})
_KEYWORDS: Final = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
}

# Exact Python types as JSON decoding produces them. "integer" takes ints only (jsonschema
# also takes 3.0; such a value goes the slow way), and bool is neither a number nor an integer.
_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def compile_fast_check(schema: Any) -> Check | None:
    """Return a predicate for ``schema``, or None when the schema is outside the simple subset.

    The predicate is True only if the value is valid under ``schema`` (Draft 2020-12) and every
    value in it already has a type its schema names; otherwise it returns False (unsure).
    """
    if schema is True:
        return _always
    if schema is False:
        return _never
    if type(schema) is not dict or not schema.keys() <= _KEYWORDS:
        return None
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    if names is None:
        allowed: frozenset[type] | None = None
    elif type(names) is list and names and all(name in _TYPES for name in names):
        allowed = frozenset(t for name in names for t in _TYPES[name])
    else:
        return None
    object_check = _object_check(schema)
    array_check = _array_check(schema)
    if object_check is None or array_check is None:
        return None

    def check(value: Any) -> bool:
        kind = type(value)
        if allowed is not None and kind not in allowed:
            return False
        if kind is dict:
            return object_check(value)
        if kind is list:
            return array_check(value)
        return True

    return check


def _always(value: Any) -> bool:
    return True


def _object_check(schema: dict[str, Any]) -> Check | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if type(properties) is not dict or type(required) is not list:
        return None
    if not all(type(name) is str for name in required):
        return None
    checks: dict[str, Check] = {}
    for name, sub in properties.items():
        compiled = compile_fast_check(sub)
        if compiled is None:
            return None
        checks[name] = compiled
    extra: Check | None
    if additional is True:
        extra = None
    elif additional is False:
        extra = _never
    else:
        extra = compile_fast_check(additional)
        if extra is None:
            return None
    if not checks and not required and extra is None:
        return _always
    needed = tuple(required)
    known = checks

    def check(value: dict[str, Any]) -> bool:
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            own = known.get(name)
            if own is not None:
                if not own(item):
                    return False
            elif extra is not None and not extra(item):
                return False
        return True

    return check


def _never(value: Any) -> bool:
    return False


def _array_check(schema: dict[str, Any]) -> Check | None:
    if "items" not in schema:
        return _always
    items = compile_fast_check(schema["items"])
    if items is None:
        return None

    def check(value: list[Any]) -> bool:
        return all(items(item) for item in value)

    return check
