"""Pitrio's accelerators: a decoder generated for each of its own wire classes.

For every wire class the codec generates (on first use) a function that builds the class from a
``dict`` whose values have the expected types: type checks inline, one call per nested object,
none of cattrs' machinery per call. The object itself is built by calling the class, with
keywords, so attrs' own ``__init__`` applies defaults, converters and validators as for any
other caller. A field of a tagged union (a message's ``role``, a content block's ``type``) picks
the member's function by its tag inline, and arrays of objects are built in the same function.
Anything it is not sure of (a missing key, an int where a float is expected, a dict subclass, a
nested shape it does not know) makes it give up with :class:`_Slow`, and cattrs' own function,
built from the same fields, decides: the same object, or the error with its message. Both paths
give the same results (``tests/sessions/storage/test_decoding.py`` checks it on pi's captures and on
random edits of them, ``tests/sessions/storage/test_accelerators.py`` with the accelerators off).

``PITRIO_ACCELERATORS=0`` in the environment switches them off: read once, when this module is
first imported; then no function is generated and every object is decoded by cattrs' function
alone (slower, the same results). Any other value, or none, leaves them on.

Classes and fields may ask for more: repeated strings decoded as one object (:data:`SHARED`),
and a second function returning the fields instead of the object (:data:`FIELDS`).

Like :mod:`pitrio.codec` it imports nothing from pitrio.
"""

from __future__ import annotations

import os
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, Final, Literal, Union, cast, get_args, get_origin

import attrs
import cattrs

__all__ = ["ENABLED", "FIELDS", "SHARED", "fast_structure_fn", "live_lookup"]

ENABLED: Final = os.environ.get("PITRIO_ACCELERATORS", "1").strip() != "0"
"""Whether decoders are generated (``PITRIO_ACCELERATORS`` is not ``0``; read once, at import)."""

SHARED: Final = "shared"
"""Field metadata key: ``metadata={SHARED: True}`` on a ``str`` field whose values repeat
across objects (a message's ``provider``, ``model``, ``api``, a tool's name) has every decoded
value be one shared string object (``sys.intern``), and so does every declared string of a
``Literal`` field: a loaded session holds one copy of each instead of one per message. Strings
are immutable: nothing can tell a shared one from a copy.
"""

FIELDS: Final = "__wire_fields__"
"""Class attribute: the generated function of a class that sets ``__wire_fields__ = True``
(and has no converter or validator) has a twin as its ``fields`` attribute: the same checks on
the same ``dict``, returning the values of the ``__init__`` fields (in declaration order,
``extra`` aside) as a tuple instead of the object, and giving up (:class:`_Slow`) on an object
with unknown keys.

Why: the session loader keeps a message line as its parts (see
``pitrio.sessions.storage._entry_columns``) and builds the entry only when it is asked for.
"""


class _Slow(Exception):
    """The fast structure function met a value it does not build itself."""


def _fast_str(value: Any) -> str:
    if type(value) is str:
        return value
    raise _Slow


def _fast_int(value: Any) -> int:
    if type(value) is int:
        return value
    raise _Slow


def _fast_float(value: Any) -> float:
    kind = type(value)
    if kind is float:
        return cast(float, value)
    if kind is int:
        return float(value)
    raise _Slow


def _fast_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise _Slow


_STR_ONLY: Final = frozenset({str})

_FAST_PRIMITIVES: Final[dict[Any, Callable[[Any], Any]]] = {
    str: _fast_str,
    int: _fast_int,
    float: _fast_float,
    bool: _fast_bool,
}


def _fast_converter(tp: Any, conv: cattrs.Converter) -> Callable[[Any], Any] | None:
    """A one-argument function that builds a field of type ``tp`` from JSON data exactly as the
    converter's hooks would, or raises :class:`_Slow`; ``None`` when the value is kept as is."""
    if tp is Any:
        return None
    primitive = _FAST_PRIMITIVES.get(tp)
    if primitive is not None:
        return primitive
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, UnionType) and len(args) == 2 and type(None) in args:
        inner = _fast_converter(args[0] if args[1] is type(None) else args[1], conv)
        if inner is None:
            return None

        def optional(value: Any) -> Any:
            return None if value is None else inner(value)

        return optional
    if origin is Literal and all(type(arg) is str for arg in args):
        # The declared string itself: one object for all the values (see SHARED).
        canonical = {arg: arg for arg in args}

        def literal(value: Any) -> Any:
            if type(value) is str:
                found = canonical.get(value)
                if found is not None:
                    return found
            raise _Slow

        return literal
    if origin in (tuple, list) and args and (origin is list or args[1:] == (Ellipsis,)):
        item_type = args[0]
        item = _fast_converter(item_type, conv)
        build: Callable[[Any], Any] = tuple if origin is tuple else list
        item_hook = getattr(item, "hook", None)
        if item_hook is not None:  # a union or a class: its hook, called directly

            def sequence_of_hooked(value: Any) -> Any:
                if type(value) is not list:
                    raise _Slow
                return build([item_hook(x, item_type) for x in value])

            return sequence_of_hooked

        def sequence(value: Any) -> Any:
            if type(value) is not list:
                raise _Slow
            return build(value if item is None else [item(x) for x in value])

        return sequence
    if origin is dict and args == (str, Any):

        def mapping(value: Any) -> Any:
            if type(value) is not dict or not all(type(key) is str for key in value):
                raise _Slow
            return dict(value)

        return mapping
    hook = conv.get_structure_hook(tp)

    def other(value: Any) -> Any:
        return hook(value, tp)

    other.hook = hook  # type: ignore[attr-defined]
    return other


_INLINE_CHECKS: Final[dict[Any, str]] = {
    str: "if type({v}) is not str: raise _Slow",
    int: "if type({v}) is not int: raise _Slow",
    bool: "if type({v}) is not bool: raise _Slow",
    float: (
        "if type({v}) is not float:\n    if type({v}) is not int: raise _Slow\n    {v} = float({v})"
    ),
}


def _indent(code: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in code.splitlines())


def _tagged(hook: Any) -> tuple[str, Callable[[Any], Any], Callable[[type], Any]] | None:
    """A tagged union's ``(tag, lookup, member_fast)``, which :mod:`pitrio.codec` attaches to
    the union's structure hook; ``None`` for any other hook."""
    return cast(
        "tuple[str, Callable[[Any], Any], Callable[[type], Any]] | None",
        getattr(hook, "tagged", None),
    )


def _union_code(
    hook: Any, tp: Any, v: str, namespace: dict[str, Any], on_other: str | None = None
) -> str:
    """Statements that build the local ``v`` as a member of the tagged union ``tp``: the
    member's generated function, chosen by the tag, or (anything else, or if it gives up) the
    union's hook, which gives the same result or the error. ``on_other``: the statement for a
    value that is not a ``dict`` (default: the hook decides)."""
    tagged = _tagged(hook)
    assert tagged is not None
    tag, lookup, member_fast = tagged
    members: dict[Any, Callable[[Any], Any] | None] = {}

    def resolve(data: dict[str, Any]) -> Callable[[Any], Any] | None:
        try:
            cls = lookup(data.get(tag))
        except Exception:  # an unhashable tag: the hook reports it
            return None
        fast = member_fast(cls) if cls is not None else None
        members[cls] = fast
        return fast

    namespace[f"_hook_{v}"], namespace[f"_type_{v}"] = hook, tp
    namespace[f"_lookup_{v}"], namespace[f"_members_{v}"] = lookup, members
    namespace[f"_resolve_{v}"] = resolve
    other = on_other or f"{v} = _hook_{v}({v}, _type_{v})"
    maps = getattr(lookup, "maps", None)
    if maps is not None:
        # A live ChainMap (see live_lookup): its first map, read inline, has the tags of
        # nearly every object; the lookup itself (a Python call) decides the others.
        namespace[f"_maps_{v}"] = maps
        find = (
            f"        _t = {v}.get({tag!r})\n"
            f"        _c = _maps_{v}[0].get(_t)\n"
            f"        _f = _members_{v}[_lookup_{v}(_t) if _c is None else _c]\n"
        )
    else:
        find = f"        _f = _members_{v}[_lookup_{v}({v}.get({tag!r}))]\n"
    return (
        f"if type({v}) is dict:\n"
        f"    try:\n"
        f"{find}"
        f"    except Exception:\n"
        f"        _f = _resolve_{v}({v})\n"
        f"    if _f is None:\n"
        f"        {v} = _hook_{v}({v}, _type_{v})\n"
        f"    else:\n"
        f"        try:\n"
        f"            {v} = _f({v})\n"
        f"        except Exception:\n"
        f"            {v} = _hook_{v}({v}, _type_{v})\n"
        f"else:\n"
        f"    {other}"
    )


def _sequence_code(
    origin: Any, item_type: Any, v: str, conv: cattrs.Converter, namespace: dict[str, Any]
) -> str | None:
    """Statements that build the local ``v`` as a ``list``/``tuple`` of ``item_type`` from a
    JSON array, each item built inline; ``None`` when the items are not wire classes or
    tagged unions (then :func:`_fast_converter` builds the sequence)."""
    hook = conv.get_structure_hook(item_type)
    x = f"{v}_x"
    if _tagged(hook) is not None:
        # Not a dict: the union's hook raises; the class's slow path then reports it.
        item = _union_code(hook, item_type, x, namespace, on_other="raise _Slow")
    elif getattr(hook, "fast", None) is not None:
        namespace[f"_hook_{x}"], namespace[f"_type_{x}"] = hook, item_type
        namespace[f"_fast_{x}"] = getattr(hook, "fast")  # noqa: B009  # set by pitrio.codec
        item = (
            f"if type({x}) is not dict: raise _Slow\n"
            f"try:\n"
            f"    {x} = _fast_{x}({x})\n"
            f"except Exception:\n"
            f"    {x} = _hook_{x}({x}, _type_{x})"
        )
    else:
        return None
    built = "tuple(_items)" if origin is tuple else "_items"
    return (
        f"if type({v}) is not list: raise _Slow\n"
        f"_items = []\n"
        f"for {x} in {v}:\n"
        f"{_indent(item)}\n"
        f"    _items.append({x})\n"
        f"{v} = {built}"
    )


def _homogeneous_sequence(tp: Any) -> tuple[Any, Any] | None:
    """``(origin, item type)`` of ``list[X]`` or ``tuple[X, ...]``, else ``None``."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is list and len(args) == 1:
        return origin, args[0]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return origin, args[0]
    return None


def _fast_field_code(tp: Any, v: str, conv: cattrs.Converter, namespace: dict[str, Any]) -> str:
    """Statements that check or convert the local ``v`` as a field of type ``tp``."""
    check = _INLINE_CHECKS.get(tp)
    if check is not None:
        return check.format(v=v)
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, UnionType) and len(args) == 2 and type(None) in args:
        inner = _fast_field_code(args[0] if args[1] is type(None) else args[1], v, conv, namespace)
        if not inner:
            return ""
        return f"if {v} is not None:\n{_indent(inner)}"
    if origin in (Union, UnionType) and len(args) == 2 and str in args:
        # Text or blocks (pi's user content): a string is kept, an array is built as the
        # sequence; the type's own hook decides anything else.
        sequence = _homogeneous_sequence(args[0] if args[1] is str else args[1])
        code = _sequence_code(*sequence, v, conv, namespace) if sequence is not None else None
        if code is not None:
            return f"if type({v}) is not str:\n{_indent(code)}"
    sequence = _homogeneous_sequence(tp)
    if sequence is not None:
        code = _sequence_code(*sequence, v, conv, namespace)
        if code is not None:
            return code
    if origin is dict and args == (str, Any):
        # A JSON object kept as a dict (a copy, as cattrs makes), its keys checked in C.
        namespace["_STR_ONLY"], namespace["_map"] = _STR_ONLY, map
        return (
            f"if type({v}) is not dict or not _STR_ONLY.issuperset(_map(type, {v})): raise _Slow\n"
            f"{v} = dict({v})"
        )
    if origin is Literal and all(type(arg) is str for arg in args):
        # The declared string itself (see SHARED), inline.
        namespace[f"_canonical_{v}"] = {arg: arg for arg in args}
        return (
            f"if type({v}) is not str: raise _Slow\n"
            f"{v} = _canonical_{v}.get({v})\n"
            f"if {v} is None: raise _Slow"
        )
    convert = _fast_converter(tp, conv)
    if convert is None:
        return ""
    hook = getattr(convert, "hook", None)
    if hook is not None:  # cattrs' (or a union's) hook: called directly, with its type
        if _tagged(hook) is not None:
            return _union_code(hook, tp, v, namespace)
        namespace[f"_hook_{v}"], namespace[f"_type_{v}"] = hook, tp
        fast = getattr(hook, "fast", None)
        if fast is None:
            return f"{v} = _hook_{v}({v}, _type_{v})"
        # A wire class: what its hook does, inlined (its generated function for a dict,
        # else, or if that gives up, the hook).
        namespace[f"_fast_{v}"] = fast
        return (
            f"if type({v}) is dict:\n"
            f"    try:\n"
            f"        {v} = _fast_{v}({v})\n"
            f"    except Exception:\n"
            f"        {v} = _hook_{v}({v}, _type_{v})\n"
            f"else:\n"
            f"    {v} = _hook_{v}({v}, _type_{v})"
        )
    namespace[f"_convert_{v}"] = convert
    return f"{v} = _convert_{v}({v})"


def _present_branch(code: str) -> list[str]:
    """The ``else:`` branch of an optional field that is present: one more known key counted,
    and its checks."""
    return ["    else:", "        _n += 1", *("        " + line for line in code.splitlines())]


def fast_structure_fn(
    cls: type,
    conv: cattrs.Converter,
    fixed: Mapping[str, Any],
    known: set[str],
    wire_key: Callable[[attrs.Attribute[Any]], str],
) -> Callable[[Any], Any] | None:
    """The fast path of a wire class's structure hook: a function generated for the class that
    checks a ``dict``'s values inline and calls the class with them, or gives up (raises).

    Called after cattrs built its function for the class, which resolved string annotations
    where they can be; ``None`` when one could not be, or when the accelerators are off (see
    the module notes): cattrs' function then does all the work. Like the slow path, it checks
    the discriminators (``fixed``) and keeps keys outside ``known`` in ``extra``.
    """
    if not ENABLED:
        return None
    fields = attrs.fields(cls)
    extra_field = attrs.fields_dict(cls).get("extra")
    if extra_field is None or not extra_field.init or extra_field.alias != "extra":
        return None
    namespace: dict[str, Any] = {
        "_Slow": _Slow,
        "_MISSING": _MISSING,
        "_cls": cls,
        "_known": frozenset(known),
        "_unknown": _unknown_keys,
    }
    # The function counts the known keys it meets (``_n``): the object has no unknown keys
    # when that is all of them.
    lines = ["def fast(data):", "    get = data.get"]
    present = 0  # known keys every object that gets past the checks has
    for index, (key, value) in enumerate(fixed.items()):
        namespace[f"_fixed{index}"] = value
        present += 1
        lines.append(f"    d{index} = get({key!r}, _MISSING)")
        lines.append(f"    if d{index} is _MISSING: _n -= 1")
        lines.append(f"    elif d{index} != _fixed{index}: raise _Slow")
    args: list[str] = []
    values: list[str] = []  # the locals of the __init__ fields, in order
    plain = True  # no converter or validator: the values are the fields (see FIELDS)
    for index, field in enumerate(fields):
        if field.name == "extra" or not field.init:
            continue
        if isinstance(field.type, str) or field.alias is None:
            return None
        plain = plain and field.converter is None and field.validator is None
        v = f"v{index}"
        code = _fast_field_code(field.type, v, conv, namespace)
        if field.metadata.get(SHARED):
            namespace["_intern"] = sys.intern
            # A required ``str`` is one after its check; an optional one may be None.
            interned = (
                f"{v} = _intern({v})"
                if field.type is str
                else f"if type({v}) is str: {v} = _intern({v})"
            )
            code = f"{code}\n{interned}".lstrip("\n")
        key = wire_key(field)
        default = field.default
        if default is attrs.NOTHING:
            # Required: a missing key raises KeyError, which gives up as _Slow does.
            present += 1
            lines.append(f"    {v} = data[{key!r}]")
            lines.extend("    " + line for line in code.splitlines())
        else:
            lines.append(f"    {v} = get({key!r}, _MISSING)")
            lines.append(f"    if {v} is _MISSING:")
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                if default.takes_self:
                    return None
                namespace[f"_factory_{v}"] = default.factory
                lines.append(f"        {v} = _factory_{v}()")
            else:
                namespace[f"_default_{v}"] = default
                lines.append(f"        {v} = _default_{v}")
            lines.extend(_present_branch(code))
        args.append(f"{field.alias}={v}")
        values.append(v)
    lines.insert(2, f"    _n = {present}")
    fields_source: list[str] = []
    if plain and cls.__dict__.get(FIELDS) is True:
        # The same checks, then the values instead of the object (see FIELDS).
        fields_source = [
            "def fast_fields(data):",
            *lines[1:],
            "    if len(data) != _n: raise _Slow",
            f"    return ({', '.join(values)},)",
        ]
    args.append("extra=None if len(data) == _n else _unknown(data, _known)")
    lines.append(f"    return _cls({', '.join(args)})")
    # Named after the class, so that tracebacks and profiles say which function it is.
    source = "\n".join([*lines, *fields_source])
    exec(compile(source, f"<wire structure {cls.__qualname__}>", "exec"), namespace)
    fast = namespace["fast"]
    if fields_source:
        fast.fields = namespace["fast_fields"]
    return cast(Callable[[Any], Any], fast)


_MISSING: Final = object()


def _unknown_keys(data: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in known}


def live_lookup(table: Mapping[str, type]) -> Callable[[Any], type | None]:
    """``table.get``, faster for a ``ChainMap`` (read live: maps added to it later count)."""
    if not isinstance(table, ChainMap):
        return table.get
    maps = table.maps

    def lookup(key: Any) -> type | None:
        for mapping in maps:
            found = mapping.get(key)
            if found is not None:
                return cast(type, found)
        return None

    lookup.maps = maps  # type: ignore[attr-defined]  # read inline by _union_code
    return lookup
