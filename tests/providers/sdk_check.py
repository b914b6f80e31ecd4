"""Check fixture payloads against the official SDKs' own pydantic types.

The SDK models (openai, anthropic, google-genai) accept unknown keys silently, so validating a
payload is not enough to prove the real API could have sent it. These helpers validate and then
walk the result, failing on any key the SDK type does not declare, and compare the dump of the
validated model with the input so lax coercions ("1" -> 1) do not slip through either.

Generic helpers, shared by every provider's tests:

- ``assert_no_extra(model, allow=...)``: fail on any non-empty ``model_extra`` anywhere inside.
- ``validate_strict(type_, data, allow=...)``: validate with ``pydantic.TypeAdapter`` (works for
  discriminated unions), then ``assert_no_extra`` and a round-trip comparison.
- ``validate_params(type_, data, allow=...)``: check a request body against an SDK request
  TypedDict (``CompletionCreateParamsStreaming`` ...), eagerly and with extra keys forbidden.

``allow`` names extra keys that are known not to be in the SDK's types but are real wire fields
(for example ``reasoning_content`` on OpenAI-compatible servers): dotted paths of field names from
the root, list indices left out (``"choices.delta.reasoning_content"``).
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import typing
from collections.abc import Collection, Mapping
from functools import cache
from typing import Any

import pydantic
import typing_extensions

__all__ = [
    "SdkCheckError",
    "assert_no_extra",
    "strict_params",
    "type_adapter",
    "validate_params",
    "validate_strict",
]


class SdkCheckError(AssertionError):
    """A payload is not something the official SDK's types describe."""


def assert_no_extra(model: Any, *, allow: Collection[str] = (), _path: str = "") -> None:
    """Fail if ``model`` or anything inside it carries keys its SDK type does not declare.

    Args:
        model: a validated pydantic model, or a list/dict/tuple containing models.
        allow: dotted field paths (list indices left out) whose extra keys are accepted.

    Raises:
        SdkCheckError: naming the path and the undeclared keys.
    """
    if isinstance(model, pydantic.BaseModel):
        extra = model.model_extra or {}
        unexpected = sorted(key for key in extra if _join(_path, key) not in allow)
        if unexpected:
            where = _path or "<root>"
            raise SdkCheckError(
                f"{type(model).__name__} at {where} has keys its SDK type does not declare: "
                f"{unexpected}"
            )
        for name in type(model).model_fields:
            assert_no_extra(getattr(model, name), allow=allow, _path=_join(_path, name))
        # Allowed extras may themselves be plain data; nothing more to check inside them.
    elif isinstance(model, Mapping):
        for key, value in model.items():
            assert_no_extra(value, allow=allow, _path=_join(_path, str(key)))
    elif isinstance(model, list | tuple):
        for item in model:
            assert_no_extra(item, allow=allow, _path=_path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@cache
def type_adapter(type_: Any) -> pydantic.TypeAdapter[Any]:
    """A cached ``TypeAdapter`` for an SDK type or union (building one is slow)."""
    return pydantic.TypeAdapter(type_)


def validate_strict(type_: Any, data: Any, *, allow: Collection[str] = ()) -> Any:
    """Validate ``data`` as the SDK type ``type_`` and reject anything the type does not declare.

    Args:
        type_: an SDK model class or a (discriminated) union of them.
        data: the JSON payload as Python data (a dict from the fixture).
        allow: extra keys to accept, as dotted paths (see ``assert_no_extra``).

    Returns:
        The validated SDK object.

    Raises:
        SdkCheckError: on validation failure, undeclared keys, or a value the SDK had to coerce.
    """
    try:
        model = type_adapter(type_).validate_python(data)
    except pydantic.ValidationError as exc:
        raise SdkCheckError(f"payload does not validate as {type_!r}:\n{exc}\n{data!r}") from exc
    assert_no_extra(model, allow=allow)
    dumped = type_adapter(type_).dump_python(
        model, mode="json", by_alias=True, exclude_unset=True, warnings=False
    )
    if dumped != data:
        raise SdkCheckError(
            f"payload changes when round-tripped through {type_!r}:\n in:  {data!r}\n out: {dumped!r}"
        )
    return model


# --------------------------------------------------------------------------- request params
#
# Request parameter types (``openai.types.chat.completion_create_params``...) are TypedDicts
# whose lists are typed ``Iterable[...]``. pydantic validates those lazily (a generator that
# is only checked when consumed) and ignores unknown keys of a TypedDict. ``strict_params``
# rewrites such a type into an equivalent one that pydantic checks eagerly: ``Iterable`` and
# ``Sequence`` become ``list`` and every TypedDict forbids extra keys.

_STRICT_CACHE: dict[Any, Any] = {}


def strict_params(type_: Any) -> Any:
    """Return ``type_`` with lists checked eagerly and extra TypedDict keys forbidden."""
    try:
        return _STRICT_CACHE[type_]
    except (KeyError, TypeError):
        pass
    result = _strict(type_)
    with contextlib.suppress(TypeError):  # unhashable types are simply not cached
        _STRICT_CACHE[type_] = result
    return result


def _strict(tp: Any) -> Any:
    if typing_extensions.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        fields: dict[str, Any] = {}
        required_keys = getattr(tp, "__required_keys__", frozenset())
        for name, hint in hints.items():
            origin = typing.get_origin(hint)
            if origin in (typing.Required, typing.NotRequired):
                (inner,) = typing.get_args(hint)
                required = origin is typing.Required
            else:
                inner, required = hint, name in required_keys
            wrapper = typing.Required if required else typing.NotRequired
            fields[name] = wrapper[strict_params(inner)]
        strict_td: Any = typing_extensions.TypedDict(  # type: ignore[operator]
            f"Strict{tp.__name__}", fields
        )
        strict_td.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")
        return strict_td
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is None or not args:
        return tp
    if origin is typing.Annotated:
        return typing.Annotated[(strict_params(args[0]), *tp.__metadata__)]
    if origin in (cabc.Iterable, cabc.Sequence, list):
        return list[strict_params(args[0])]  # type: ignore[misc]
    if origin is typing.Literal:
        return tp
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return typing.Union[tuple(strict_params(a) for a in args)]  # noqa: UP007
    if origin in (dict, cabc.Mapping):
        return dict[strict_params(args[0]), strict_params(args[1])]  # type: ignore[misc]
    return tp


def _strip_allowed(data: Any, allow: Collection[str], path: str = "") -> Any:
    if isinstance(data, Mapping):
        return {
            key: _strip_allowed(value, allow, _join(path, key))
            for key, value in data.items()
            if _join(path, key) not in allow
        }
    if isinstance(data, list):
        return [_strip_allowed(item, allow, path) for item in data]
    return data


def validate_params(type_: Any, data: Any, *, allow: Collection[str] = ()) -> Any:
    """Check a request body against an SDK request-parameter TypedDict, rejecting extra keys.

    Args:
        type_: e.g. ``openai.types.chat.completion_create_params.CompletionCreateParamsStreaming``.
        data: the body as Python data.
        allow: keys the SDK type lacks but the body may carry (vendor extensions), as dotted
            paths without list indices (``"messages.reasoning_content"``); they are removed
            before validation.

    Returns:
        The validated data (with allowed extras removed).

    Raises:
        SdkCheckError: the body does not match, or carries undeclared keys.
    """
    stripped = _strip_allowed(data, allow)
    try:
        type_adapter(strict_params(type_)).validate_python(stripped, strict=True)
    except pydantic.ValidationError as exc:
        raise SdkCheckError(f"request body does not validate as {type_!r}:\n{exc}") from exc
    return stripped
