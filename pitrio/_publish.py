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
    below = package + "."
    for name in names:
        obj = namespace[name]
        # Classes and functions only: an instance (EMPTY_USAGE) reports its class's module.
        if not isinstance(obj, type | FunctionType):
            continue
        # Defined in a private module below the package, a subpackage's too
        # (``pitrio.providers.faux._provider``): reported under the package.
        module = obj.__module__
        if not module.startswith(below) or not any(
            part.startswith("_") for part in module[len(below) :].split(".")
        ):
            continue
        if isinstance(obj, type) and obj.__dict__.get("__pitrio_wire__"):
            attrs.resolve_types(obj)
        obj.__module__ = package
