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

import inspect
import linecache
import re
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
    try:
        source = inspect.getsource(init)
    except (OSError, TypeError):
        return False
    if _LOOKUP not in source:
        return False
    setters: dict[str, Any] = {}
    for name in set(_ASSIGN.findall(source)):
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


def _frozen(cls: type) -> bool:
    # attrs gives every frozen class the same __setattr__ (one that always raises).
    return getattr(cls, "__setattr__", None) is _FROZEN_SETATTR


@attrs.frozen
class _Probe:
    value: int = 0


_FROZEN_SETATTR: Final = _Probe.__setattr__
