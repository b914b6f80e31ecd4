"""One helper every subpackage ``__init__`` uses to present its public names.

It sits below every layer (it imports nothing from pitrio), so ``channels`` may use it too.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from types import FunctionType
from typing import Any

import attrs


def publish(namespace: MutableMapping[str, Any], names: Iterable[str]) -> None:
    """Report public objects under their public path (``pitrio.channels.Mailbox``, not
    ``pitrio.channels._mailbox.Mailbox``) in reprs, tracebacks and docs, as trio does.

    Wire classes get their string annotations resolved first: the codec looks them up in the
    defining module, which is only possible while ``__module__`` still names it.

    Args:
        namespace: the package's ``globals()``.
        names: the package's ``__all__``.
    """
    package = namespace["__name__"]
    for name in names:
        obj = namespace[name]
        # Classes and functions only: an instance (EMPTY_USAGE) reports its class's module.
        if not isinstance(obj, type | FunctionType):
            continue
        if not _is_private_below(obj.__module__, package):
            continue
        if isinstance(obj, type) and obj.__dict__.get("__pitrio_wire__"):
            attrs.resolve_types(obj)
        obj.__module__ = package


def _is_private_below(module: str, package: str) -> bool:
    """Whether ``module`` is an implementation module of ``package``: below it, with an
    underscore name on the way (``pkg._impl``, ``pkg.sub._impl``; not ``pkg.sub``, which is a
    public namespace that presents its own names)."""
    if not module.startswith(package + "."):
        return False
    return any(part.startswith("_") for part in module[len(package) + 1 :].split("."))
