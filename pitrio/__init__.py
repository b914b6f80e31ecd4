"""pitrio: the pi agent framework as an actor-model runtime on Trio.

Layering (imports point downward only)::

    cli -> tui / host -> sessions / extensions -> actors -> tools / providers -> channels, codec

``pitrio.codec`` and ``pitrio.channels`` are the floor: they import nothing else from pitrio.
The package root holds only what every layer shares: the version and the root of the exception
tree (:class:`PitrioError`, drawn in full in ``pitrio._exceptions``' docstring) with
:class:`UsageError`, the error a caller's mistake raises.
"""

from __future__ import annotations

from pitrio._exceptions import PitrioError as PitrioError
from pitrio._exceptions import UsageError as UsageError

__version__ = "0.1.0"

__all__ = ["PitrioError", "UsageError", "__version__"]

PitrioError.__module__ = UsageError.__module__ = "pitrio"  # their public path, as publish() does
