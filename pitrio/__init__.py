"""pitrio: the pi agent framework as an actor-model runtime on Trio.

Layering (imports point downward only)::

    cli -> host -> sessions / extensions -> actors -> tools / providers -> channels, codec

``pitrio.codec`` and ``pitrio.channels`` are the floor: they import nothing else from pitrio.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
