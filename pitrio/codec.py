"""The wire codec: pitrio's attrs classes <-> pi's JSON.

One :class:`cattrs.Converter` serves every wire type of every layer. A wire type is an attrs
class decorated with :func:`wire`; the codec then

* renames ``snake_case`` attributes to pi's ``camelCase`` keys (or the key named in a field's
  ``metadata={"wire": "..."}``),
* omits optional fields whose value is ``None`` (pi leaves ``undefined`` fields out),
* keeps keys it does not know in the instance's ``extra`` dict and writes them back, so an
  object from a newer pi survives a load/save round trip unchanged,
* writes integral floats as integers, because JavaScript has one number type and pi's JSON says
  ``0`` where Python would say ``0.0``.

Discriminated unions (``role`` for messages, ``type`` for content blocks and events) are
registered with :func:`register_tagged_union`; layers above add their members (custom message
roles, agent events, session entries) the same way. Unknown tags decode to the union's
fallback class when one is registered, and otherwise raise :class:`WireFormatError`.

Encoding to bytes goes through orjson (:func:`dumps`, :func:`loads`), never ``json.dumps``.

This module is the floor of the package: it imports nothing else from pitrio.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar, cast, overload

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from pitrio._exceptions import PitrioError

__all__ = [
    "EXTRA",
    "PitrioError",
    "WireFormatError",
    "camel",
    "dumps",
    "extra_field",
    "from_wire",
    "loads",
    "register_tagged_union",
    "register_type",
    "to_wire",
    "wire",
]

_T = TypeVar("_T")
_C = TypeVar("_C", bound=type)

EXTRA: Final = "extra"
"""Name of the attribute that holds unknown wire keys on every wire class."""

_WIRE_FLAG: Final = "__pitrio_wire__"


class WireFormatError(PitrioError, ValueError):
    """JSON that does not have the shape of the pi type it was decoded as.

    Attributes:
        type_name: the pitrio type that was being decoded.
    """

    def __init__(self, message: str, *, type_name: str) -> None:
        super().__init__(message)
        self.type_name = type_name


def camel(name: str) -> str:
    """Turn ``snake_case`` into pi's ``camelCase`` (``tool_call_id`` -> ``toolCallId``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire(cls: _C) -> _C:
    """Mark an attrs class as a wire type (see the module docstring).

    The class must have an ``extra: dict[str, Any] | None`` attribute (default ``None``) to keep
    unknown keys; :func:`attrs.define`-style classes declare it last.
    """
    if not attrs.has(cast(type, cls)):
        raise TypeError(f"{cls.__name__} is not an attrs class")
    if EXTRA not in attrs.fields_dict(cls):
        raise TypeError(f"wire type {cls.__name__} needs an 'extra' attribute")
    setattr(cls, _WIRE_FLAG, True)
    return cls


def extra_field() -> Any:
    """The ``extra`` attribute every wire class declares last (unknown keys; not compared)."""
    return attrs.field(default=None, kw_only=True, eq=False, repr=False)


def _is_wire(cls: Any) -> bool:
    return isinstance(cls, type) and cls.__dict__.get(_WIRE_FLAG, False) is True


def _wire_key(field: attrs.Attribute[Any]) -> str:
    return cast(str, field.metadata.get("wire", camel(field.name)))


def _unstructure_float(value: float) -> float | int:
    # JavaScript prints 3.0 as "3"; so must we, or a pi file would not round-trip byte for byte.
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireFormatError(f"expected a number, got {value!r}", type_name="float")
    return float(value)


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireFormatError(f"expected an integer, got {value!r}", type_name="int")
    if isinstance(value, float):
        # pi computes some counts with arithmetic; accept 12.0 but keep the exact value.
        return int(value) if value.is_integer() else cast(int, value)
    return value


def _structure_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise WireFormatError(f"expected a string, got {value!r}", type_name="str")
    return value


def _structure_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise WireFormatError(f"expected a boolean, got {value!r}", type_name="bool")
    return value


def _passthrough(value: Any, _: Any = None) -> Any:
    return value


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_unstructure_hook(float, _unstructure_float)
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(bool, _structure_bool)
    # `Any` payloads (tool arguments, details, JSON schemas) are plain JSON already.
    conv.register_structure_hook(Any, _passthrough)
    conv.register_unstructure_hook_factory(_is_wire, _unstructure_factory)
    conv.register_structure_hook_factory(_is_wire, _structure_factory)
    return conv


def _unstructure_factory(cls: type, conv: cattrs.Converter) -> Callable[[Any], dict[str, Any]]:
    overrides: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if field.name == EXTRA:
            overrides[field.name] = override(omit=True)
        else:
            overrides[field.name] = override(
                rename=_wire_key(field), omit_if_default=field.default is None
            )
    base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, conv, _cattrs_include_init_false=True, **overrides
    )

    def unstructure(obj: Any) -> dict[str, Any]:
        data = base(obj)
        extra = obj.extra
        if extra:
            for key, value in extra.items():
                data.setdefault(key, value)
        return data

    return unstructure


def _structure_factory(cls: type, conv: cattrs.Converter) -> Callable[[Any, type], Any]:
    overrides: dict[str, Any] = {}
    known: set[str] = set()
    for field in attrs.fields(cls):
        if field.name == EXTRA:
            overrides[field.name] = override(omit=True)
            continue
        key = _wire_key(field)
        overrides[field.name] = override(rename=key)
        known.add(key)
    known.update(_wire_key(f) for f in attrs.fields(cls) if not f.init and f.name != EXTRA)
    # Fields that are not __init__ parameters (the `role`/`type` discriminators) are checked,
    # not structured: decoding a "user" object as AssistantMessage is an error.
    fixed = {_wire_key(f): f.default for f in attrs.fields(cls) if not f.init and f.name != EXTRA}
    base: Callable[[Any, type], Any] = make_dict_structure_fn(cls, conv, **overrides)
    name = cls.__name__

    def structure(data: Any, _: type) -> Any:
        if not isinstance(data, Mapping):
            raise WireFormatError(f"{name}: expected a JSON object, got {data!r}", type_name=name)
        for key, value in fixed.items():
            if data.get(key, value) != value:
                raise WireFormatError(
                    f"{name}: {key} is {data.get(key)!r}, expected {value!r}", type_name=name
                )
        try:
            obj = base(data, cls)
        except WireFormatError:
            raise
        except Exception as exc:  # cattrs raises ClassValidationError / KeyError groups
            raise WireFormatError(f"{name}: {_describe(exc)}", type_name=name) from exc
        if not known.issuperset(data):
            object.__setattr__(obj, EXTRA, {k: v for k, v in data.items() if k not in known})
        return obj

    return structure


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        notes = []
        for sub in exc.exceptions:
            sub_notes = getattr(sub, "__notes__", [])
            where = f" ({'; '.join(sub_notes)})" if sub_notes else ""
            notes.append(f"{_describe(sub)}{where}")
        return "; ".join(notes)
    if isinstance(exc, KeyError):
        return f"missing required key {exc.args[0]!r}"
    return str(exc)


_converter: Final = _make_converter()


def register_tagged_union(
    union: Any,
    tag: str,
    members: Mapping[str, type] | Iterable[type],
    *,
    fallback: Callable[[Mapping[str, Any]], Any] | None = None,
) -> None:
    """Teach the codec a discriminated union.

    Args:
        union: the union type (``A | B | C``) as used in annotations; decoding a value annotated
            with it dispatches on ``tag``. Registering the same union again replaces it.
        tag: the discriminating key (``"type"`` or ``"role"``).
        members: tag value -> class, or classes whose ``tag`` attribute has a default. A ``dict``
            is used live, so members added to it later are decoded too.
        fallback: called with the raw object when the tag is unknown (forward compatibility);
            without one, an unknown tag raises :class:`WireFormatError`.
    """
    if isinstance(members, dict):
        table = members  # live: the owner may add members later
    elif isinstance(members, Mapping):
        table = dict(members)
    else:
        table = {}
        for cls in members:
            default = attrs.fields_dict(cls)[tag].default
            table[cast(str, default)] = cls
    name = getattr(union, "__name__", None) or repr(union)
    structure_member = _converter.structure

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, Mapping):
            raise WireFormatError(f"expected a JSON object, got {data!r}", type_name=name)
        cls = table.get(data.get(tag))
        if cls is None:
            if fallback is not None:
                return fallback(data)
            known = ", ".join(sorted(table))
            raise WireFormatError(
                f"unknown {tag} {data.get(tag)!r} (expected one of: {known})", type_name=name
            )
        return structure_member(data, cls)

    _converter.register_structure_hook_func(lambda t: t == union, structure)
    # Unstructure dispatches on the runtime class, whatever union the field was declared with.
    _converter.register_unstructure_hook_func(lambda t: t == union, _converter.unstructure)


def register_type(
    tp: Any,
    *,
    encode: Callable[[Any], Any] | None = None,
    decode: Callable[[Any], Any] | None = None,
) -> None:
    """Register how a non-wire type (or a union) is encoded and decoded.

    Args:
        tp: the class or union, compared by equality with field annotations.
        encode: object -> JSON-ready data; matched on the object's runtime class too.
        decode: JSON-ready data -> object.
    """
    if encode is not None:
        _converter.register_unstructure_hook_func(lambda t: t == tp, encode)
    if decode is not None:
        _converter.register_structure_hook_func(lambda t: t == tp, lambda data, _: decode(data))


def to_wire(obj: Any) -> Any:
    """Encode a wire object (or a list/tuple/dict of them) as pi's JSON-ready Python data."""
    return _converter.unstructure(obj)


@overload
def from_wire(cls: type[_T], data: Any) -> _T: ...
@overload
def from_wire(cls: Any, data: Any) -> Any: ...
def from_wire(cls: Any, data: Any) -> Any:
    """Decode pi's JSON-ready data as ``cls`` (a wire class or a registered union).

    Raises:
        WireFormatError: the data does not have the shape of ``cls``.
    """
    try:
        return _converter.structure(data, cls)
    except WireFormatError:
        raise
    except Exception as exc:
        name = getattr(cls, "__name__", repr(cls))
        raise WireFormatError(f"{name}: {_describe(exc)}", type_name=name) from exc


def dumps(obj: Any) -> bytes:
    """Encode a wire object (or plain JSON data) as compact JSON bytes, as pi writes it.

    A lone UTF-16 surrogate in a string (JavaScript strings can hold one, and pi writes it as a
    ``\\udXXX`` escape) is written the same way.
    """
    if _is_wire(type(obj)):
        obj = _converter.unstructure(obj)
    try:
        return orjson.dumps(obj, default=_default)
    except TypeError as exc:
        if "surrogates not allowed" not in str(exc):
            raise
    text = json.dumps(obj, default=_default, ensure_ascii=False, separators=(",", ":"))
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _default(obj: Any) -> Any:
    if _is_wire(type(obj)):
        return _converter.unstructure(obj)
    data = _converter.unstructure(obj)
    if data is not obj:
        return data
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def loads(data: bytes | str) -> Any:
    """Parse JSON text (bytes or str).

    Raises:
        ValueError: the text is not JSON (``orjson.JSONDecodeError`` is a ``ValueError``).
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
    # JSON from JavaScript may escape a lone surrogate; orjson refuses it, the stdlib keeps it.
    return json.loads(data)
