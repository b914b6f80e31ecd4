"""What a block of a test leaves to CPython's cyclic collector, for the tests that pin that a
finished wait, command or run is freed by reference counting alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_garbage() -> Iterator[list[object]]:
    """Yield a list that, after the block, holds every object the block left in unreachable
    reference cycles (the collector is off during the block and restored after)."""
    enabled, debug = gc.isenabled(), gc.get_debug()
    gc.collect()
    gc.garbage.clear()
    gc.disable()
    found: list[object] = []
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            yield found
            gc.collect()
            found.extend(gc.garbage)
        finally:
            gc.set_debug(debug)
            gc.garbage.clear()
    finally:
        if enabled:
            gc.enable()


def pitrio_objects(objects: list[object]) -> list[str]:
    """The names of the classes of pitrio's own objects among ``objects``, sorted."""
    return sorted(type(o).__qualname__ for o in objects if type(o).__module__.startswith("pitrio"))
