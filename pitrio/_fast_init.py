"""A faster ``__init__`` for frozen, slotted attrs classes (the wire classes' hot path).

attrs builds a frozen class's ``__init__`` on ``object.__setattr__``: it looks the bound method
up once per instance and makes one Python-level call per field. A streamed token creates two
such objects (the provider's delta event and the agent's ``message_update``), so that is ~1 us
of every token. The same assignments through each slot's own descriptor (``member.__set__``, a
C call) take half the time and change nothing else: the frozen ``__setattr__`` still refuses
later writes, and the signature, defaults, converters and factories are attrs' own, because
the new function is attrs' generated source with only the assignments rewritten.

Classes with validators, ``__attrs_pre_init__`` / ``__attrs_post_init__``, a cached hash or a
converter that takes ``self`` keep attrs' ``__init__``.
"""

from __future__ import annotations

import functools
import linecache
import re
from collections.abc import Callable
from typing import Any, Final

import attrs

_ASSIGN: Final = re.compile(r"_setattr\('(\w+)', ")
_DEFAULT: Final = re.compile(r"attr_dict\['(\w+)'\]\.default")
_LOOKUP: Final = "_setattr = _cached_setattr_get(self)"
FILENAME_PREFIX: Final = "<attrs generated init, slot setters"
"""How the rewritten functions' code objects are named; it starts like attrs' own
(``<attrs generated init ...>``) because it is attrs' generated function, rewritten."""


def speed_up_frozen_init(cls: type) -> bool:
    """Replace ``cls.__init__`` by the same function writing through slot descriptors.

    Returns:
        Whether ``__init__`` was replaced (False: the class keeps attrs' ``__init__``).
    """
    init: Any = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or not code.co_filename.startswith("<attrs generated"):
        return False
    if "__slots__" not in cls.__dict__ or not _frozen(cls):
        return False
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__"):
        return False
    if hasattr(cls, "_attrs_cached_hash"):
        return False
    for field in attrs.fields(cls):
        if field.validator is not None or isinstance(field.converter, attrs.Converter):
            return False
    source = _function_source(code)
    if source is None or _LOOKUP not in source:
        return False
    assigned = set(_ASSIGN.findall(source))
    if (
        not {f.name for f in attrs.fields(cls) if f.init or f.default is not attrs.NOTHING}
        <= assigned
    ):
        return False  # not the whole function (or not attrs' usual one): keep it
    setters: dict[str, Any] = {}
    for name in assigned:
        descriptor: Any = cls.__dict__.get(name)
        if type(descriptor).__name__ != "member_descriptor":
            return False
        setters[f"_slot_set_{name}"] = descriptor.__set__
    head, _, body = source.partition("\n")
    body = _ASSIGN.sub(lambda m: f"_slot_set_{m.group(1)}(self, ", body)
    body = body.replace(f"    {_LOOKUP}\n", "")
    if "_setattr" in body:
        return False
    namespace = dict(init.__globals__)
    namespace.update(setters)
    # Defaults of fields that are not arguments (``type``), looked up once, not per call.
    fields = attrs.fields_dict(cls)
    for name in set(_DEFAULT.findall(body)):
        namespace[f"_default_{name}"] = fields[name].default
    body = _DEFAULT.sub(lambda m: f"_default_{m.group(1)}", body)
    rewritten = f"{head}\n{body}"
    filename = f"{FILENAME_PREFIX} {cls.__module__}.{cls.__qualname__}>"
    linecache.cache[filename] = (len(rewritten), None, rewritten.splitlines(True), filename)
    exec(compile(rewritten, filename, "exec"), namespace)
    fast = namespace["__init__"]
    fast.__annotations__ = dict(init.__annotations__)
    fast.__qualname__ = init.__qualname__
    fast.__module__ = init.__module__
    fast.__doc__ = init.__doc__
    type.__setattr__(cls, "__init__", fast)
    return True


def _function_source(code: Any) -> str | None:
    """The source of a generated function, from the lines attrs put in ``linecache``: its
    ``def`` line and the indented lines after it (``inspect.getsource`` tokenizes the whole
    script to find the same block, ~0.5 ms per class at import)."""
    entry: Any = linecache.cache.get(code.co_filename)
    if entry is None or len(entry) < 3 or not entry[2]:
        return None
    lines: list[str] = entry[2]
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines) or not lines[first].startswith("def __init__("):
        return None
    end = first + 1
    while end < len(lines) and lines[end].startswith((" ", "\t")):
        end += 1
    return "".join(lines[first:end])


def _frozen(cls: type) -> bool:
    # attrs gives every frozen class the same __setattr__ (one that always raises).
    return getattr(cls, "__setattr__", None) is _FROZEN_SETATTR


@attrs.frozen
class _Probe:
    value: int = 0


_FROZEN_SETATTR: Final = _Probe.__setattr__


def positional_factory(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A function ``make(*values)`` that builds a ``cls`` from ``names``' values, positionally.

    The per-token path's constructor: it creates the instance and fills every slot, the other
    fields getting their defaults, exactly as ``cls(**kwargs)`` would, without the keyword
    call. Only for slotted attrs classes whose ``__init__`` does nothing else: no validators,
    hooks or factories that take ``self``, and no converters but those that name the types
    they return unchanged (``__wire_keeps__``, see `pitrio._wire_fast.KEEPS`): such a
    converter is called for a value of any other type only.

    When the class allows it (see `layout_twin`: a direct subclass of ``object`` without a
    ``__weakref__`` slot, on CPython 3.11) the instance is built as its *layout twin*, a
    plain class with the same slots whose attributes are plain stores, and then given its
    class (``__class__`` assignment, which CPython allows between classes of one layout):
    under half the cost of writing each slot through its descriptor (callgrind, a five-field
    event: 2,444 against 5,037 instructions, creation and release). Otherwise every slot is
    written through its descriptor's ``__set__`` (itself a third cheaper than the rewritten
    ``__init__``). The instance is frozen either way: it is of ``cls`` before anyone sees it.

    Raises:
        TypeError: ``cls`` is not such a class, or a field not in ``names`` has no default.
    """
    if "__slots__" not in cls.__dict__ or not attrs.has(cls):
        raise TypeError(f"{cls.__qualname__} is not a slotted attrs class")
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__"):
        raise TypeError(f"{cls.__qualname__} has an init hook")
    unknown = set(names) - set(attrs.fields_dict(cls))
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no fields {sorted(unknown)}")
    twin = layout_twin(cls)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": twin}
    lines = [
        f"def make({', '.join(names)}):",
        "    self = _new(_cls)" if twin is None else "    self = _twin()",
    ]
    for field in attrs.fields(cls):
        converter: Any = field.converter
        keeps = getattr(converter, "__wire_keeps__", None)
        if field.validator is not None or (converter is not None and not keeps):
            raise TypeError(f"{cls.__qualname__}.{field.name} has a validator or converter")
        descriptor: Any = cls.__dict__.get(field.name)
        if type(descriptor).__name__ != "member_descriptor":
            raise TypeError(f"{cls.__qualname__}.{field.name} is not a slot")
        if twin is None:
            namespace[f"_set_{field.name}"] = descriptor.__set__
        if field.name in names and keeps:
            namespace[f"_convert_{field.name}"] = converter
            namespace[f"_keeps_{field.name}"] = tuple(keeps)
            value = (
                f"{field.name} if type({field.name}) in _keeps_{field.name}"
                f" else _convert_{field.name}({field.name})"
            )
        elif field.name in names:
            value = field.name
        elif keeps:
            raise TypeError(f"{cls.__qualname__}.{field.name} needs a value (it has a converter)")
        elif field.default is attrs.NOTHING:
            raise TypeError(f"{cls.__qualname__}.{field.name} needs a value")
        elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            if field.default.takes_self:
                raise TypeError(f"{cls.__qualname__}.{field.name}'s factory takes self")
            namespace[f"_factory_{field.name}"] = field.default.factory
            value = f"_factory_{field.name}()"
        else:
            namespace[f"_default_{field.name}"] = field.default
            value = f"_default_{field.name}"
        if twin is None:
            lines.append(f"    _set_{field.name}(self, {value})")
        else:
            lines.append(f"    self.{field.name} = {value}")
    if twin is not None:
        lines.append("    self.__class__ = _cls")
    lines.append("    return self")
    source = "\n".join(lines) + "\n"
    filename = f"<positional factory {cls.__module__}.{cls.__qualname__}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    make: Callable[..., Any] = namespace["make"]
    make.__qualname__ = f"{cls.__qualname__}.positional"
    return make


@functools.cache
def layout_twin(cls: type) -> type | None:
    """A plain class with ``cls``'s slots, whose instances may become ``cls`` instances by
    ``__class__`` assignment; None when CPython refuses that for ``cls``.

    The twin has no ``__setattr__`` of its own, so its attributes are written by plain
    (specialised) stores, where a frozen class's must go through each slot's descriptor.
    CPython accepts the assignment between two classes with the same base and the same slot
    names (hence the same layout); it refuses classes with a ``__weakref__`` slot (a
    size check that does not count that slot, CPython 3.11), so the hot classes are declared
    with ``weakref_slot=False``. Whether it works is tried once per class, here, on a probe
    (the answer is kept: one twin per class, shared by every function that builds one).
    """
    if cls.__bases__ != (object,):
        return None
    slots = cls.__dict__["__slots__"]
    twin = type(f"{cls.__name__}Twin", (), {"__slots__": slots, "__module__": cls.__module__})
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return twin
