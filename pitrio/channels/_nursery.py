"""A nursery for context managers that run their caller's body inside it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

import trio


@asynccontextmanager
async def open_body_nursery() -> AsyncIterator[trio.Nursery]:
    """Open a nursery whose lone failure is re-raised bare rather than in an ExceptionGroup.

    A library context manager (``async with stream(...) as events``) runs its caller's block
    inside the nursery that hosts its helper tasks. Trio wraps everything a nursery raises in an
    ``ExceptionGroup``, so a ``ValueError`` raised by the caller's own code would come out
    wrapped. When exactly one exception escapes, this re-raises it as it was; when several do
    (the body and a helper task both failed), the group is kept.
    """
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except BaseExceptionGroup as group:
        raise_lone(group)


def raise_lone(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the one exception ``group`` holds as it was (with its own cause), or ``group``
    itself when it holds several: what a nursery that runs its caller's block raises."""
    if len(group.exceptions) == 1:
        exc = group.exceptions[0]
        raise exc from exc.__cause__
    raise group
