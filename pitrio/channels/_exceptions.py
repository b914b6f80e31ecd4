"""Exceptions raised by the channel primitives.

``pitrio.channels`` is the bottom layer, so these cannot derive from a pitrio-wide root; each
subclasses the builtin or Trio exception whose meaning it refines, so code that already handles
the generic case (``except trio.WouldBlock``, ``except trio.BrokenResourceError``) keeps working::

    RuntimeError
     `- StreamEndedWithoutResult    EventStream.result(): ended without a result
    trio.WouldBlock
     `- MailboxFull                 Mailbox.put_nowait(): the box is at max_size
    trio.BrokenResourceError
     `- SubscriberOverflow          a Subscription with policy "error" fell behind
         `- SubscriberLagged        an EventLogSubscription was cut off; carries resume_from

Closing is reported with Trio's own exceptions, never new ones: ``trio.ClosedResourceError``
("you closed it") and ``trio.EndOfChannel`` ("the other side closed it and you read everything").
"""

from __future__ import annotations

import trio


class StreamEndedWithoutResult(RuntimeError):
    """The EventStream ended without a completion event and without a result.

    Raised by `EventStream.result` when the producer called ``end()`` (with no result) before
    pushing a completion event. pi leaves the result promise pending forever in that case; we
    raise instead so a caller never hangs on a stream that is already over.
    """

    def __str__(self) -> str:
        return "the event stream ended without a completion event or result"


class MailboxFull(trio.WouldBlock):
    """`Mailbox.put_nowait` was called on a mailbox that holds ``max_size`` items.

    A subclass of `trio.WouldBlock`, so the generic ``_nowait`` contract holds, while callers
    that cannot block (UI callbacks) can report the domain error specifically.
    """

    def __init__(self, max_size: int) -> None:
        super().__init__(max_size)
        self.max_size = max_size
        """The capacity of the mailbox that refused the item."""

    def __str__(self) -> str:
        return f"mailbox is full ({self.max_size} items)"


class SubscriberOverflow(trio.BrokenResourceError):
    """A subscription with policy ``"error"`` could not keep up and was cut off.

    Raised by the subscription's ``receive()`` (and so by ``async for``) on every read after the
    overflow. The subscription is already removed from its `Broadcast`; events it had buffered
    were discarded and are counted in its ``statistics().dropped``.
    """

    def __init__(self, max_buffer: int) -> None:
        super().__init__(max_buffer)
        self.max_buffer = max_buffer
        """The buffer size the subscriber overflowed."""

    def __str__(self) -> str:
        return f"subscriber fell more than {self.max_buffer} events behind and was disconnected"


class SubscriberLagged(SubscriberOverflow):
    """An `EventLogSubscription` fell too far behind and was cut off.

    Raised on every read after the overflow, under policy ``"error"`` (the buffer was full) or
    ``"coalesce"`` (the buffer was full of events that do not merge, beyond its overrun). The
    subscription is already removed from its `EventLog` and its buffer discarded. A host
    disconnects the client with ``resume_from``; passed back as ``from_seq``, it resumes with
    nothing lost or doubled (or with a snapshot, if the ring moved past it meanwhile).
    """

    def __init__(self, max_buffer: int, resume_from: int) -> None:
        super().__init__(max_buffer)
        self.args = (max_buffer, resume_from)
        self.resume_from = resume_from
        """The seq of the last item the reader received: the cursor to resume from."""

    def __str__(self) -> str:
        return (
            f"subscriber fell more than {self.max_buffer} events behind and was disconnected;"
            f" resume from seq {self.resume_from}"
        )
