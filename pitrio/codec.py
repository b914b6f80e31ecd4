"""The wire codec: pitrio's attrs classes <-> pi's JSON.

Kept in one module: the codec machinery (hook factories, unions, sealing) is one
cattrs converter's configuration.

A wire type is an attrs class decorated with :func:`wire`. Every codec

* renames ``snake_case`` attributes to pi's ``camelCase`` keys (or the key named in a field's
  ``metadata={"wire": "..."}``),
* omits optional fields whose value is ``None`` (pi leaves ``undefined`` fields out),
* keeps keys it does not know in the instance's ``extra`` dict and writes them back, so an
  object from a newer pi survives a load/save round trip unchanged,
* writes integral floats as integers, because JavaScript has one number type and pi's JSON says
  ``0`` where Python would say ``0.0``.

One codec per layer. This module holds the machinery (:func:`wire`, the hook factories,
:class:`WireFormatError`) and :class:`WireCodec`, a cattrs converter with the methods the layers
need. Each layer builds its own codec once, in a private ``_codec`` module, after its types are
defined, and seals it:

``pitrio.providers._codec.PROVIDERS_CODEC``
    messages, content blocks, ``AssistantMessageEvent``.
``pitrio.tools._codec.TOOLS_CODEC`` (derived from the providers codec)
    every ``AgentTool`` subclass.
``pitrio.actors._codec.ACTORS_CODEC`` (derived from the tools codec)
    ``AgentMessage`` (with the custom roles of :func:`pitrio.actors.register_agent_message`),
    ``AgentEvent``.
``pitrio.sessions.storage._codec.SESSIONS_CODEC`` (derived from the actors codec)
    session entries, the coding agent's message kinds.
``pitrio.sessions.runtime._events_codec.EVENTS_CODEC`` (derived from the sessions codec)
    ``AgentSessionEvent``.

A derived codec is a copy (``make_codec(base)``), so a higher layer never changes what a lower
layer's codec knows, and a sealed codec refuses registrations. Discriminated unions (``role`` for
messages, ``type`` for content blocks, events and entries) are taught with
:meth:`WireCodec.register_tagged_union`; an unknown tag decodes to the union's fallback class when
one is registered, and otherwise raises :class:`WireFormatError`. Library code always uses its
own layer's codec. The module-level :func:`to_wire`, :func:`from_wire` and :func:`dumps` are for
users and tests: they use the widest codec loaded (:func:`widest_codec`), which knows every type
of every layer imported so far. ``cattrs.global_converter`` is never used.

Encoding to bytes goes through orjson (:meth:`WireCodec.dumps`, :func:`loads`), never
``json.dumps``. Decoding a ``dict`` (what :func:`loads` gives) first tries a function generated
for the class by :mod:`pitrio._wire_fast` (type checks inline, no cattrs machinery per call; the
object built by calling the class); whatever it is not sure of goes to cattrs' generated
function, which stays the reference for results and errors. ``PITRIO_ACCELERATORS=0`` leaves
cattrs' function alone (see :mod:`pitrio._wire_fast`).

This module is the floor of the package: it imports nothing else from pitrio but the exceptions.
"""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from types import UnionType
from typing import (
    Any,
    Final,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    overload,
)

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from pitrio._exceptions import PitrioError
from pitrio._exceptions import UsageError as _UsageError
from pitrio._wire_fast import fast_structure_fn as _fast_structure_fn
from pitrio._wire_fast import live_lookup as _live_lookup

__all__ = [
    "BASE_CODEC",
    "EXTRA",
    "PitrioError",
    "WireCodec",
    "WireFormatError",
    "camel",
    "dumps",
    "extra_field",
    "from_wire",
    "loads",
    "make_codec",
    "slot_constructor",
    "to_wire",
    "widest_codec",
    "wire",
]

_T = TypeVar("_T")
_C = TypeVar("_C", bound=type)
_I = TypeVar("_I")

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


def slot_constructor(cls: type[_I], names: tuple[str, ...]) -> Callable[..., _I]:
    """``make(*values)``: the instance ``cls(**dict(zip(names, values)))`` builds, for a frozen
    slotted attrs class whose other fields all have plain defaults (``type``, ``extra``).

    It writes the slots directly (each slot's descriptor, public in Python's data model):
    attrs' frozen ``__init__`` goes through ``object.__setattr__`` per field, which costs about
    twice as much, and the per-token events of a stream are built this way once per delta.
    The values are not validated or converted (these classes have no validators).

    Raises:
        TypeError: a field of ``cls`` is not a slot of ``cls`` itself, has a factory default,
            has a validator or converter, or is missing from ``names`` without a default; or
            ``cls`` has a slot that is no field (a cached hash) or an ``__attrs_pre_init__``
            or ``__attrs_post_init__``, which only its ``__init__`` would honour.
    """
    by_name = {field.name: field for field in attrs.fields(cast(Any, cls))}
    if set(names) - set(by_name):
        raise TypeError(f"{cls.__qualname__} has no fields {sorted(set(names) - set(by_name))}")
    hidden = set(cls.__dict__.get("__slots__", ())) - set(by_name) - {"__weakref__"}
    if hidden:
        raise TypeError(f"{cls.__qualname__} has slots that are not fields: {sorted(hidden)}")
    for hook in ("__attrs_pre_init__", "__attrs_post_init__"):
        if hasattr(cls, hook):
            raise TypeError(f"{cls.__qualname__} has {hook}")
    new = object.__new__
    fixed: list[tuple[Callable[[Any, Any], None], Any]] = []
    for field in by_name.values():
        slot = cls.__dict__.get(field.name)
        if not isinstance(slot, types.MemberDescriptorType):
            raise TypeError(f"{cls.__qualname__}.{field.name} is not a slot of the class itself")
        if field.validator is not None or field.converter is not None:
            raise TypeError(f"{cls.__qualname__}.{field.name} has a validator or converter")
        if field.name in names:
            continue
        if field.default is attrs.NOTHING or isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            raise TypeError(f"{cls.__qualname__}.{field.name} needs a value or a plain default")
        fixed.append((slot.__set__, field.default))
    setters: list[Callable[[Any, Any], None]] = [
        cast(types.MemberDescriptorType, cls.__dict__[name]).__set__ for name in names
    ]
    if len(setters) == 3 and len(fixed) == 2:
        (set_a, set_b, set_c), ((set_x, x), (set_y, y)) = setters, fixed

        def make3(a: Any, b: Any, c: Any) -> _I:
            obj = new(cls)
            set_x(obj, x)
            set_a(obj, a)
            set_b(obj, b)
            set_c(obj, c)
            set_y(obj, y)
            return obj

        make: Callable[..., _I] = make3
    elif len(setters) == 2 and len(fixed) == 2:
        (set_a, set_b), ((set_x, x), (set_y, y)) = setters, fixed

        def make2(a: Any, b: Any) -> _I:
            obj = new(cls)
            set_x(obj, x)
            set_a(obj, a)
            set_b(obj, b)
            set_y(obj, y)
            return obj

        make = make2
    else:

        def make(*values: Any) -> _I:
            obj = new(cls)
            for setter, default in fixed:
                setter(obj, default)
            for setter, value in zip(setters, values, strict=True):
                setter(obj, value)
            return obj

    make.__qualname__ = f"{cls.__qualname__}.from_slots"
    return make


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
    conv.register_structure_hook_factory(_is_untaught_wire_union, _refuse_union)
    return conv


def _is_untaught_wire_union(tp: Any) -> bool:
    # Registered first, so every union a codec is taught (registered later) takes precedence.
    if get_origin(tp) not in (Union, UnionType):
        return False
    members = [arg for arg in get_args(tp) if arg is not type(None)]
    return len(members) > 1 and any(_is_wire(arg) for arg in members)


def _refuse_union(tp: Any) -> Callable[[Any, Any], Any]:
    # cattrs would otherwise guess the member from which keys are present. A union of wire
    # classes is decoded by its tag or not at all: a codec that was not taught the union (a
    # lower layer's codec meeting a higher layer's union) says so.
    name = getattr(tp, "__name__", None) or repr(tp)

    def structure(data: Any, _: Any) -> Any:
        raise WireFormatError(f"{name} is not a union this codec knows", type_name=name)

    return structure


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
    # cattrs writes the fields it may omit after all the others; pi (JSON.stringify of an object
    # literal) writes every key in declaration order. Where an optional field comes before a
    # required one (AssistantMessage.errorMessage before timestamp), put the keys back in order
    # whenever an optional one is present: the dict is rebuilt only then.
    fields = [f for f in attrs.fields(cls) if f.name != EXTRA]
    optional = [f.default is None for f in fields]
    order = [_wire_key(f) for f in fields]
    required = optional.count(False)
    if not any(o and not later for i, o in enumerate(optional) for later in optional[i + 1 :]):
        order = []

    def unstructure(obj: Any) -> dict[str, Any]:
        data = base(obj)
        if order and len(data) > required:
            data = {key: data[key] for key in order if key in data}
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
    fast = _fast_structure_fn(cls, conv, fixed, known, _wire_key)
    name = cls.__name__

    def structure(data: Any, _: type) -> Any:
        if fast is not None and type(data) is dict:
            # The common case: JSON from orjson with the expected types. The fast function
            # builds it or gives up, and cattrs' function then decides (the same result, or
            # the error with its message).
            try:
                return fast(data)
            except Exception:
                pass
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

    structure.fast = fast  # type: ignore[attr-defined]  # what a union calls first
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


class WireCodec:
    """One layer's codec: a cattrs converter that knows the layer's wire types and unions.

    Build one with :func:`make_codec`, teach it the layer's unions with
    :meth:`register_tagged_union` and :meth:`register_type`, then :meth:`seal` it. A sealed codec
    refuses further registrations, so a layer's codec is complete once its ``_codec`` module has
    been imported and no higher layer can change what it knows; a higher layer derives its own
    codec from it with ``make_codec(base)`` instead.

    Every wire class (see :func:`wire`) is understood by every codec; what a codec adds over its
    base is unions (which tag decodes to which class) and types with hand-written hooks.
    """

    __slots__ = ("_converter", "_default", "_sealed", "_unstructure", "name")

    def __init__(self, converter: cattrs.Converter, name: str) -> None:
        self._converter = converter
        self._unstructure: Callable[[Any], Any] = converter.unstructure
        self._default = _make_default(converter)
        self._sealed = False
        self.name = name
        """What the codec is for (``"providers"``, ``"sessions"``, ...), for reprs and errors."""

    def __repr__(self) -> str:
        state = "sealed" if self._sealed else "open"
        return f"<WireCodec {self.name!r} ({state})>"

    @property
    def sealed(self) -> bool:
        """Whether :meth:`seal` was called (registrations are then refused)."""
        return self._sealed

    def seal(self) -> WireCodec:
        """Refuse further registrations from now on; return the codec itself."""
        self._sealed = True
        return self

    def _check_open(self) -> None:
        if self._sealed:
            raise _UsageError(
                f"the {self.name} codec is sealed: derive a codec with make_codec(base) instead"
            )

    # ------------------------------------------------------------------ registration

    def register_tagged_union(
        self,
        union: Any,
        tag: str,
        members: Mapping[str, type] | Iterable[type],
        *,
        fallback: Callable[[Mapping[str, Any]], Any] | None = None,
    ) -> None:
        """Teach the codec a discriminated union.

        Args:
            union: the union type (``A | B | C``) as used in annotations; decoding a value
                annotated with it dispatches on ``tag``. Registering the same union again (in
                this codec or one derived from it) replaces it.
            tag: the discriminating key (``"type"`` or ``"role"``).
            members: tag value -> class, or classes whose ``tag`` attribute has a default. A
                mapping is consulted live (a ``ChainMap`` over a registry another module owns
                works), so members its owner adds later are decoded too; pass a copy to freeze
                it. An iterable of classes is read once.
            fallback: called with the raw object when the tag is unknown (forward
                compatibility); without one, an unknown tag raises :class:`WireFormatError`.

        Raises:
            UsageError: the codec is sealed.
        """
        self._check_open()
        table: Mapping[str, type]
        if isinstance(members, Mapping):
            table = members
        else:
            table = {cast(str, attrs.fields_dict(cls)[tag].default): cls for cls in members}
        name = getattr(union, "__name__", None) or repr(union)

        # Hook factories, not hooks: a factory is called with the converter that uses it, so in
        # a codec derived from this one the members are decoded by the derived converter (which
        # may know more types than this one). Converter.copy() keeps factories as factories.
        lookup = _live_lookup(table)

        def structure_factory(_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
            # Each member's hook (and the generated function it tries first), looked up once:
            # the dispatch of conv.structure per object costs more than the member's own hook.
            hooks: dict[type, tuple[Callable[[Any], Any] | None, Callable[[Any, Any], Any]]] = {}

            def structure(data: Any, _: Any) -> Any:
                is_dict = type(data) is dict
                if not is_dict and not isinstance(data, Mapping):
                    raise WireFormatError(f"expected a JSON object, got {data!r}", type_name=name)
                cls = lookup(data.get(tag))
                member = hooks.get(cls) if cls is not None else None
                if member is not None:
                    fast, hook = member
                    if fast is not None and is_dict:
                        try:
                            return fast(data)
                        except Exception:
                            pass  # the hook decides: the same result, or its error
                    return hook(data, cls)
                if cls is None:
                    if fallback is not None:
                        return fallback(data)
                    known = ", ".join(sorted(table))
                    raise WireFormatError(
                        f"unknown {tag} {data.get(tag)!r} (expected one of: {known})",
                        type_name=name,
                    )
                hook = conv.get_structure_hook(cls)
                hooks[cls] = (getattr(hook, "fast", None), hook)
                return hook(data, cls)

            def member_fast(cls: type) -> Callable[[Any], Any] | None:
                member = hooks.get(cls)
                if member is None:
                    hook = conv.get_structure_hook(cls)
                    member = hooks[cls] = (getattr(hook, "fast", None), hook)
                return member[0]

            # For the generated functions of classes with a field of this union, which
            # dispatch inline (pitrio._wire_fast) and call this hook for anything else.
            structure.tagged = (tag, lookup, member_fast)  # type: ignore[attr-defined]
            return structure

        def unstructure_factory(_: Any, conv: cattrs.Converter) -> Callable[[Any], Any]:
            # Unstructure dispatches on the runtime class, whatever union the field declared.
            return conv.unstructure

        self._converter.register_structure_hook_factory(lambda t: t == union, structure_factory)
        self._converter.register_unstructure_hook_factory(lambda t: t == union, unstructure_factory)

    def register_type(
        self,
        tp: Any,
        *,
        encode: Callable[[Any], Any] | None = None,
        decode: Callable[[Any], Any] | None = None,
        subclasses: bool = False,
    ) -> None:
        """Register how a non-wire type (or a union) is encoded and decoded.

        Args:
            tp: the class or union, compared by equality with field annotations.
            encode: object -> JSON-ready data; matched on the object's runtime class too.
            decode: JSON-ready data -> object.
            subclasses: match every subclass of the class ``tp`` too (a protocol base class
                whose user subclasses should all encode the same way).

        Raises:
            UsageError: the codec is sealed.
        """
        self._check_open()
        if subclasses:

            def matches(t: Any) -> bool:
                return isinstance(t, type) and issubclass(t, tp)
        else:

            def matches(t: Any) -> bool:
                return bool(t == tp)

        if encode is not None:
            self._converter.register_unstructure_hook_func(matches, encode)
        if decode is not None:
            self._converter.register_structure_hook_func(matches, lambda data, _: decode(data))

    # ------------------------------------------------------------------ use

    def to_wire(self, obj: Any) -> Any:
        """Encode a wire object (or a list/tuple/dict of them) as pi's JSON-ready data."""
        return self._unstructure(obj)

    def decoder(self, cls: Any) -> Callable[[Any], Any]:
        """``from_wire(cls, data)`` as a function of ``data``, its hook looked up once (for a
        loop that decodes many objects of one type: a session file's entries)."""
        hook = self._converter.get_structure_hook(cls)

        def decode(data: Any) -> Any:
            try:
                return hook(data, cls)
            except WireFormatError:
                raise
            except Exception as exc:
                # Named now, as from_wire names it (a package may re-home its classes).
                name = getattr(cls, "__name__", repr(cls))
                raise WireFormatError(f"{name}: {_describe(exc)}", type_name=name) from exc

        decode.tagged = getattr(hook, "tagged", None)  # type: ignore[attr-defined]  # see union
        return decode

    @overload
    def from_wire(self, cls: type[_T], data: Any) -> _T: ...
    @overload
    def from_wire(self, cls: Any, data: Any) -> Any: ...
    def from_wire(self, cls: Any, data: Any) -> Any:
        """Decode pi's JSON-ready data as ``cls`` (a wire class or a registered union).

        Raises:
            WireFormatError: the data does not have the shape of ``cls``, or ``cls`` is a union
                this codec was not taught.
        """
        try:
            return self._converter.structure(data, cls)
        except WireFormatError:
            raise
        except Exception as exc:
            name = getattr(cls, "__name__", repr(cls))
            raise WireFormatError(f"{name}: {_describe(exc)}", type_name=name) from exc

    def dumps(self, obj: Any) -> bytes:
        """Encode a wire object (or plain JSON data) as compact JSON bytes, as pi writes it.

        A lone UTF-16 surrogate in a string (JavaScript strings can hold one, and pi writes it
        as a ``\\udXXX`` escape) is written the same way.
        """
        if type(obj).__dict__.get(_WIRE_FLAG, False) is True:
            obj = self._unstructure(obj)
        default = self._default
        try:
            return orjson.dumps(obj, default=default)
        except TypeError as exc:
            if "surrogates not allowed" not in str(exc):
                raise
        text = json.dumps(obj, default=default, ensure_ascii=False, separators=(",", ":"))
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()

    @staticmethod
    def loads(data: bytes | str) -> Any:
        """Parse JSON text (the same as :func:`pitrio.codec.loads`; no codec is involved)."""
        return loads(data)


def make_codec(base: WireCodec | None = None, *, name: str = "") -> WireCodec:
    """Return a new, open codec: a copy of ``base`` (with all its registrations) or a bare one.

    The copy is independent: registering into it never changes ``base``. (cattrs'
    ``Converter.copy`` keeps every hook and hook factory; the hooks it had already generated
    for concrete classes are regenerated on first use, against the copy.)

    Args:
        base: the lower layer's codec, or ``None`` for one that knows only wire classes and
            JSON primitives.
        name: what the codec is for (shown in its repr and in errors).
    """
    converter = _make_converter() if base is None else base._converter.copy()
    return WireCodec(converter, name or (f"{base.name}+" if base is not None else "base"))


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _make_default(conv: cattrs.Converter) -> Callable[[Any], Any]:
    unstructure = conv.unstructure

    def default(obj: Any) -> Any:
        # orjson calls this for what it cannot encode itself: wire objects nested in plain
        # data, and types registered with encode hooks.
        data = unstructure(obj)
        if data is not obj:
            return data
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")

    return default


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


# --------------------------------------------------------------------------- the public helpers

BASE_CODEC: Final = make_codec(name="base").seal()
"""The codec that knows only wire classes and JSON primitives (no unions); every layer's codec
derives from it."""

# Highest layer first; each layer's codec is a superset of the ones below it (each derives from
# the one below). Looked up by name in sys.modules, so this floor module imports no layer.
_LAYER_CODECS: Final = (
    ("pitrio.sessions.runtime._events_codec", "EVENTS_CODEC"),
    ("pitrio.sessions.storage._codec", "SESSIONS_CODEC"),
    ("pitrio.actors._codec", "ACTORS_CODEC"),
    ("pitrio.tools._codec", "TOOLS_CODEC"),
    ("pitrio.providers._codec", "PROVIDERS_CODEC"),
)


def widest_codec() -> WireCodec:
    """Return the codec of the highest pitrio layer imported so far.

    Each layer's codec knows its own unions and every lower layer's, so the widest one loaded
    can encode and decode any pitrio object this process can hold: a session entry (whose
    module imported the sessions codec), an agent event, a content block. Importing a layer
    never changes a lower layer's codec; it only widens what this returns.
    """
    modules = sys.modules
    for module_name, attribute in _LAYER_CODECS:
        module = modules.get(module_name)
        if module is not None:
            # While a layer's _codec module is still executing, its codec is not there yet.
            codec = getattr(module, attribute, None)
            if codec is not None:
                return cast(WireCodec, codec)
    return BASE_CODEC


def to_wire(obj: Any) -> Any:
    """Encode a wire object (or a list/tuple/dict of them) as pi's JSON-ready Python data.

    Uses :func:`widest_codec`; library code uses its own layer's codec instead.
    """
    return widest_codec().to_wire(obj)


@overload
def from_wire(cls: type[_T], data: Any) -> _T: ...
@overload
def from_wire(cls: Any, data: Any) -> Any: ...
def from_wire(cls: Any, data: Any) -> Any:
    """Decode pi's JSON-ready data as ``cls`` (a wire class or a union some layer registered).

    Uses :func:`widest_codec`; library code uses its own layer's codec instead.

    Raises:
        WireFormatError: the data does not have the shape of ``cls``.
    """
    return widest_codec().from_wire(cls, data)


def dumps(obj: Any) -> bytes:
    """Encode a wire object (or plain JSON data) as compact JSON bytes, as pi writes it.

    Uses :func:`widest_codec`; library code uses its own layer's codec instead.
    """
    return widest_codec().dumps(obj)
