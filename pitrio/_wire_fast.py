"""The fast path of :mod:`pitrio.codec`'s structure hooks.

For every wire class the codec generates (on first use) a function that builds the class from a
``dict`` whose values have the expected types: type checks inline, one call per nested object,
none of cattrs' machinery per call. A field of a tagged union (a message's ``role``, a content
block's ``type``) picks the member's function by its tag inline, and arrays of objects are built
in the same function. Anything it is not sure of (a missing key, an int where a
float is expected, a dict subclass, a nested shape it does not know) makes it give up with
:class:`_Slow`, and cattrs' own function, built from the same fields, decides: the same object,
or the error with its message. So there is one decoding path, and it is the fast one for the
JSON pi writes (``tests/sessions/test_decoding.py`` checks both paths agree, on pi's captures
and on random edits of them).

Classes and fields may ask for more (the constants below): repeated values decoded as one
object (SHARED, SHARE_EQUAL), objects of leaves left untracked by the cyclic garbage collector
(ACYCLIC), converters not called on what they keep (KEEPS), a twin returning the fields instead
of the object (FIELDS), and, for classes whose fields are all optional, a twin for the object
that has every key (COMPLETE_MIN).

Like :mod:`pitrio.codec` it imports nothing from pitrio.
"""

from __future__ import annotations

import functools
import gc
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, Final, Literal, Union, cast, get_args, get_origin

import attrs
import cattrs

from pitrio._fast_init import layout_twin

__all__ = [
    "ACYCLIC",
    "FIELDS",
    "KEEPS",
    "SHARED",
    "SHARE_EQUAL",
    "fast_structure_fn",
    "live_lookup",
]

SHARED: Final = "shared"
"""Field metadata key: ``metadata={SHARED: True}`` on a ``str`` field whose values repeat
across objects (a message's ``provider``, ``model``, ``api``, a tool's name) has every decoded
value be one shared string object (``sys.intern``).

Why: a full collection of the cyclic garbage collector visits every object a live object refers
to, strings included, and on a loaded session that is mostly cache misses. Sharing the values
that repeat (and the declared strings of ``Literal`` fields, and ``0.0`` for a float written as
``0``) halves the time a full collection spends on a 10,000-entry session. Strings and floats
are immutable: nothing can tell a shared one from a copy.
"""


SHARE_EQUAL: Final = "__wire_share_equal__"
"""Class attribute: a frozen wire class that sets ``__wire_share_equal__ = True`` (pi-ai's
``Usage`` and ``Cost``) has every decoded object without unknown keys that equals one decoded
recently be that object (a bounded cache per class, keyed by the field values; fields that are
wire classes are keyed by identity, so they share only when they are shared themselves).

Why: a session file repeats the same usage and cost (all zeros for a free or local model) in
every assistant message, and each of those objects is one more that the cyclic garbage
collector tracks: on a 10,000-entry session, one less tracked object per entry is a tenth of
the collections while it loads. The objects are frozen: nothing can tell a shared one from a
copy (``==``, hashing and encoding give the same results).
"""

KEEPS: Final = "__wire_keeps__"
"""Field converter attribute: a converter with ``__wire_keeps__ = (str, tuple)`` returns a value
of exactly one of those types unchanged, so the generated function calls it only for other
values (the tuple it built itself, the common case, takes no call)."""

FIELDS: Final = "__wire_fields__"
"""Class attribute: the generated function of a class that sets ``__wire_fields__ = True``
has a twin as its ``fields`` attribute: the same checks on the same ``dict``, returning the
values of the ``__init__`` fields (in declaration order, ``extra`` aside) as a tuple instead of
the object, and giving up (:class:`_Slow`) on an object with unknown keys.

Why: the session loader keeps a message line as its parts (see
``pitrio.sessions._entry_columns``); building the entry object to take it apart again was a
tenth of the time of decoding the line.
"""

COMPLETE_MIN: Final = 3
"""Known keys from which a class whose fields are all optional gets a twin for the object that
has them all: each read by subscript, without ``get``, the missing-key test and the counting of
known keys per field (a third of the time of ``Usage`` and ``Cost``, which pi always writes
whole)."""

SHARE_EQUAL_MAX: Final = 4096
"""Distinct objects a shared class's cache holds before it starts again (memory stays bounded
whatever is decoded)."""

_SHARE_PRIMITIVES: Final = frozenset({str, int, float, bool})

ACYCLIC: Final = "__wire_acyclic__"
"""Class attribute: a frozen wire class that sets ``__wire_acyclic__ = True`` (pi-ai's content
blocks, messages, ``Usage`` and ``Cost``) has every decoded object without unknown keys whose
fields hold only values the cyclic garbage collector does not track (strings, numbers,
``None``, objects untracked by this rule, dicts of such values, tuples of them) untracked as
well, on CPython.

Why: such an object cannot be part of a reference cycle (the class is frozen and everything
it refers to is a leaf), so the collector has nothing to find in it; it is the rule CPython
itself applies to tuples and to dicts of atomic values. A loaded session is mostly such
objects, and every tracked object that stays alive counts toward the collector's next full
pass, which walks the whole heap: opening a 10,000-entry session kept ~30,000 tracked objects
and so set off a full pass in nearly every open; untracked, it sets off none. Nothing else
changes: the objects are equal, hash, encode and are freed by reference counting as before.
The one thing the collector would miss is a cycle someone builds later through one of the
plain dicts such an object holds (a tool call's ``arguments`` made to hold the message): that
cycle would only be freed with the process.
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
        "if type({v}) is not float:\n"
        "    if type({v}) is not int: raise _Slow\n"
        "    {v} = _ZERO if {v} == 0 else float({v})"
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


def _present_branch(code: str, counted: bool) -> list[str]:
    """The ``else:`` branch of an optional field that is present: its checks, and one more
    known key counted when the function counts them."""
    body = (["_n += 1"] if counted else []) + code.splitlines()
    return ["    else:", *("        " + line for line in body)] if body else []


def fast_structure_fn(
    cls: type,
    conv: cattrs.Converter,
    fixed: Mapping[str, Any],
    known: set[str],
    wire_key: Callable[[attrs.Attribute[Any]], str],
) -> Callable[[Any], Any] | None:
    """The fast path of a wire class's structure hook: the class built from a ``dict`` whose
    values have the expected types by a function generated for the class (type checks inline,
    one call per nested value), without cattrs' machinery per call.

    Called after cattrs built its function for the class, which resolved string annotations
    where they can be; ``None`` when one could not be (cattrs' function then does all the work).
    Like the slow path, it checks the discriminators (``fixed``) and keeps keys outside
    ``known`` in ``extra``.
    """
    setters = _slot_setters(cls)
    # Built as its layout twin where it has one (see pitrio._fast_init.positional_factory).
    twin = layout_twin(cls) if setters is not None else None

    def assign(name: str, value: str) -> str:
        return f"obj.{name} = {value}" if twin is not None else f"_set_{name}(obj, {value})"

    # ``extra`` is each branch's last field: there the twin becomes the class.
    finish = "; obj.__class__ = _cls" if twin is not None else ""
    new_object = "_twin()" if twin is not None else "_new(_cls)"
    namespace: dict[str, Any] = {
        "_Slow": _Slow,
        "_MISSING": _MISSING,
        "_cls": cls,
        "_twin": twin,
        "_new": object.__new__,
        "_known": frozenset(known),
        "_setattr": object.__setattr__,
        "_unknown": _unknown_keys,
        "_ZERO": _ZERO,
    }
    lines = ["def fast(data):", "    get = data.get"]
    # Built directly, the function counts the known keys it meets (``_n``): the object has
    # no unknown keys when that is all of them.
    counted = setters is not None
    present = 0  # known keys every object that gets past the checks has
    # Every field optional (Usage, Cost): a twin for the object that has all the known keys
    # (as pi writes them), each read by subscript, without the counting (see COMPLETE_MIN).
    complete: list[str] | None = (
        []
        if counted and cls.__dict__.get(FIELDS) is not True and len(known) >= COMPLETE_MIN
        else None
    )
    for index, (key, value) in enumerate(fixed.items()):
        namespace[f"_fixed{index}"] = value
        if counted:
            present += 1
            lines.append(f"    d{index} = get({key!r}, _MISSING)")
            lines.append(f"    if d{index} is _MISSING: _n -= 1")
            lines.append(f"    elif d{index} != _fixed{index}: raise _Slow")
            if complete is not None:
                complete.append(f"    if data[{key!r}] != _fixed{index}: raise _Slow")
        else:
            lines.append(f"    if get({key!r}, _fixed{index}) != _fixed{index}: raise _Slow")
    args: list[str] = []
    sets: list[str] = []
    factories = False
    share = setters is not None and cls.__dict__.get(SHARE_EQUAL) is True
    untrack = _gc_untrack() if setters is not None and cls.__dict__.get(ACYCLIC) is True else None
    leaves: list[str] = []  # what must hold for an object to be untracked (see ACYCLIC)
    values: list[str] = []  # the locals of the __init__ fields, in order
    fields_source: list[str] = []
    complete_source: list[str] = []
    keys: list[str] = []  # the cache key's parts when ``share``
    guards: list[str] = []  # conditions for sharing (no zero float but the shared one)
    for index, field in enumerate(attrs.fields(cls)):
        if field.name == "extra":
            continue
        v = f"v{index}"
        default = field.default
        if not field.init:
            if isinstance(default, attrs.Factory) or not _atomic_type(type(default)):  # type: ignore[arg-type]
                untrack = None
            # Only when building directly (the class's __init__ sets it otherwise).
            if setters is not None:
                if twin is None:
                    namespace[f"_set_{field.name}"] = setters[field.name]
                if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                    namespace[f"_factory_{v}"] = default.factory
                    sets.append(f"    {assign(field.name, f'_factory_{v}()')}")
                else:
                    namespace[f"_default_{v}"] = default
                    sets.append(f"    {assign(field.name, f'_default_{v}')}")
            continue
        if isinstance(field.type, str) or field.alias is None:
            return None
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
        leaf = _leaf_check(field.type, v) if untrack is not None else None
        key = wire_key(field)
        if complete is not None:
            complete.append(f"    {v} = data[{key!r}]")
            complete.extend("    " + line for line in code.splitlines())
        if default is attrs.NOTHING:
            # Required: a missing key raises KeyError, which gives up as _Slow does.
            complete = None
            present += 1
            lines.append(f"    {v} = data[{key!r}]")
            lines.extend("    " + line for line in code.splitlines())
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            lines.append(f"    {v} = get({key!r}, _MISSING)")
            if setters is None:
                # Left to the class's own default: passed only when present.
                lines.append(f"    if {v} is not _MISSING:")
                lines.extend("        " + line for line in code.splitlines())
                lines.append(f"        kwargs[{field.alias!r}] = {v}")
                factories = True
                continue
            namespace[f"_factory_{v}"] = default.factory
            lines.append(f"    if {v} is _MISSING:")
            lines.append(f"        {v} = _factory_{v}()")
            lines.extend(_present_branch(code, counted))
        else:
            lines.append(f"    {v} = get({key!r}, _MISSING)")
            namespace[f"_default_{v}"] = default
            lines.append(f"    if {v} is _MISSING:")
            lines.append(f"        {v} = _default_{v}")
            lines.extend(_present_branch(code, counted))
        if setters is None:
            args.append(f"{field.alias}={v}")
            continue
        if share:
            part = _share_key(field.type, v)
            if part is None:
                share = False
            else:
                keys.append(part)
                if field.type is float:
                    # A float zero read as such may be -0.0 (== 0.0, another repr): only
                    # the zero written as the integer 0 (made the shared 0.0) is shared.
                    guards.append(f"({v} or {v} is _ZERO)")
        post: list[str] = []  # after the value is read, in both functions
        if field.converter is not None:  # as __init__ does, for passed and default values
            namespace[f"_converter_{v}"] = field.converter
            keeps = getattr(field.converter, KEEPS, ())
            namespace.update({f"_keeps_{v}_{i}": kept for i, kept in enumerate(keeps)})
            unless = " and ".join(f"type({v}) is not _keeps_{v}_{i}" for i in range(len(keeps)))
            convert = f"{v} = _converter_{v}({v})"
            post.append(f"    if {unless}: {convert}" if unless else f"    {convert}")
        if leaf is not None:
            if leaf[0]:
                post.append(f"    {leaf[0]}")
            leaves.append(leaf[1])
        lines.extend(post)
        if complete is not None:
            complete.extend(post)
        if twin is None:
            namespace[f"_set_{field.name}"] = setters[field.name]
        sets.append(f"    {assign(field.name, v)}")
        values.append(v)
    if setters is not None:
        # Built directly: what the class's generated __init__ would do (one slot set per
        # field; defaults, factories and converters applied alike), at half its cost.
        if twin is None:
            namespace["_set_extra"] = setters["extra"]
        lines.insert(2, f"    _n = {present}")
        tail_start = len(lines)
        untrack_lines: list[str] = []
        if untrack is not None:
            namespace.update(_untrack=untrack, _tracked=gc.is_tracked, _any=any, _map=map, _id=id)
            condition = " and ".join(leaves)
            call = "_untrack(_id(obj))"
            untrack_lines = [f"if {condition}: {call}" if condition else call]
        if cls.__dict__.get(FIELDS) is True:
            # The same checks, then the values instead of the object (see FIELDS).
            fields_source = [
                "def fast_fields(data):",
                *lines[1:],
                "    if len(data) != _n: raise _Slow",
                f"    return ({', '.join(values)},)",
            ]
        if share and setters.keys() - {"extra"} == {
            field.name for field in attrs.fields(cls) if field.init and field.name != "extra"
        }:
            # Only an object without unknown keys is shared: ``extra`` is not compared.
            cache: dict[Any, Any] = {}
            namespace["_shared"], namespace["_shared_max"] = cache, SHARE_EQUAL_MAX
            namespace["_id"] = id
            lines.append(f"    if {' and '.join(['len(data) == _n', *guards])}:")
            lines.append(f"        _key = ({', '.join(keys)},)")
            lines.append("        obj = _shared.get(_key)")
            lines.append("        if obj is not None: return obj")
            lines.append(f"        obj = {new_object}")
            lines.extend("    " + line for line in sets)
            lines.append(f"        {assign('extra', 'None')}{finish}")
            lines.extend("        " + line for line in untrack_lines)
            lines.append("        if len(_shared) >= _shared_max: _shared.clear()")
            lines.append("        _shared[_key] = obj")
            lines.append("        return obj")
        lines.append(f"    obj = {new_object}")
        lines.extend(sets)
        if untrack_lines:
            # Unknown keys (kept in a dict) or values it tracks: the collector keeps it.
            lines.append("    if len(data) == _n:")
            lines.append(f"        {assign('extra', 'None')}{finish}")
            lines.extend("        " + line for line in untrack_lines)
            lines.append("        return obj")
            lines.append(f"    {assign('extra', '_unknown(data, _known)')}{finish}")
        else:
            extra = "None if len(data) == _n else _unknown(data, _known)"
            lines.append(f"    {assign('extra', extra)}{finish}")
        lines.append("    return obj")
        if complete is not None:
            # Tried first when the object has as many keys as are known; anything it does not
            # build (a known key missing beside an unknown one, a value to give up on) is
            # decided by the general function, which builds it or gives up.
            complete_source = [
                "def _complete(data):",
                f"    _n = {len(known)}",
                *complete,
                *lines[tail_start:],
            ]
            lines[2:2] = [
                f"    if len(data) == {len(known)}:",
                "        try:",
                "            return _complete(data)",
                "        except Exception:",
                "            pass",
            ]
    else:
        if factories:
            lines.insert(2, "    kwargs = {}")
            args.append("**kwargs")
        lines.append(f"    obj = _cls({', '.join(args)})")
        lines.append("    if not _known.issuperset(data):")
        lines.append("        _setattr(obj, 'extra', _unknown(data, _known))")
        lines.append("    return obj")
    # Named after the class, so that tracebacks and profiles say which function it is.
    source = "\n".join([*lines, *fields_source, *complete_source])
    exec(compile(source, f"<wire structure {cls.__qualname__}>", "exec"), namespace)
    fast = namespace["fast"]
    if fields_source:
        fast.fields = namespace["fast_fields"]
    return cast(Callable[[Any], Any], fast)


_MISSING: Final = object()
_ZERO: Final = 0.0
"""The float every ``0`` read for a ``float`` field becomes (one object, see SHARED)."""


def _share_key(tp: Any, v: str) -> str | None:
    """The cache key part of a field of a shared class (see :data:`SHARE_EQUAL`): a primitive
    (or an optional one) by value, a wire class by identity; ``None`` for any other type (the
    class is then not shared)."""
    if tp in _SHARE_PRIMITIVES:
        return v
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, UnionType) and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return v if inner in _SHARE_PRIMITIVES and inner is not float else None
    if origin is Literal and all(type(arg) is str for arg in args):
        return v
    if isinstance(tp, type) and attrs.has(tp) and tp.__dict__.get(SHARE_EQUAL) is True:
        # Kept alive by the cached object that refers to it, so the id is not reused while
        # the key is in the cache.
        return f"_id({v})"
    return None


def _slot_setters(cls: type) -> dict[str, Callable[[Any, Any], None]] | None:
    """Each field's slot setter when an instance may be built without ``__init__``: a slotted
    attrs class whose ``__init__`` attrs generated, with no validators, no pre- or post-init
    hook, no hash cache and only plain converters (``None`` otherwise)."""
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or not code.co_filename.startswith("<attrs generated"):
        return None
    if "__slots__" not in cls.__dict__ or hasattr(cls, "__attrs_post_init__"):
        return None
    if hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "_attrs_cached_hash"):
        return None
    setters: dict[str, Callable[[Any, Any], None]] = {}
    for field in attrs.fields(cls):
        if field.validator is not None or isinstance(field.converter, attrs.Converter):
            return None
        if not field.init and field.converter is not None:
            return None
        if isinstance(field.default, attrs.Factory) and field.default.takes_self:  # type: ignore[arg-type]
            return None
        descriptor = getattr(cls, field.name, None)
        setter = getattr(descriptor, "__set__", None)
        if type(descriptor).__name__ != "member_descriptor" or setter is None:
            return None
        setters[field.name] = setter
    return setters if "extra" in setters else None


@functools.cache
def _gc_untrack() -> Callable[[int], None] | None:
    """``PyObject_GC_UnTrack`` (the C API that untracks an object), called with the object's
    ``id``; ``None`` off CPython."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes
    except ImportError:  # pragma: no cover  # a CPython built without ctypes
        return None
    # Its own function object, so that no one else's argtypes on pythonapi's are touched;
    # a PYFUNCTYPE is called holding the GIL. The object's address (id) is the cheapest
    # argument to convert (the caller holds a reference while it runs).
    prototype = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
    return cast(Callable[[int], None], prototype(("PyObject_GC_UnTrack", ctypes.pythonapi)))


def _atomic_type(tp: Any) -> bool:
    """Whether every value of ``tp`` is an object the collector never tracks."""
    if tp in _SHARE_PRIMITIVES or tp is type(None):
        return True
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return all(type(arg) in _SHARE_PRIMITIVES for arg in args)
    if origin in (Union, UnionType):
        return all(_atomic_type(arg) for arg in args)
    return False


def _leaf_check(tp: Any, v: str) -> tuple[str, str] | None:
    """``(statement, condition)`` for the local ``v``, a field value of type ``tp``, once
    built: what untracks it when it is a tuple of untracked items, and an expression true when
    it holds nothing the collector tracks (see :data:`ACYCLIC`); ``None`` when it never does."""
    if _atomic_type(tp):
        return None
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and args[1:] == (Ellipsis,):
        tuples = True
    elif origin in (Union, UnionType) and len(args) == 2 and str in args:
        other = args[0] if args[1] is str else args[1]
        tuples = get_origin(other) is tuple and get_args(other)[1:] == (Ellipsis,)
    else:
        tuples = False
    # A new tuple is tracked, and the collector untracks a tuple only when none of its items
    # can be tracked (never one holding objects of a class): its items decide, here.
    statement = (
        f"if type({v}) is tuple and {v} and not _tracked({v}[0])"
        f" and (len({v}) == 1 or not _any(_map(_tracked, {v}))): _untrack(_id({v}))"
        if tuples
        else ""
    )
    optional = origin in (Union, UnionType) and type(None) in args
    return statement, f"({v} is None or not _tracked({v}))" if optional else f"not _tracked({v})"


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
