"""``Reply``: the one-shot answer slot that every actor command carries.

A front end (the Python API, RPC over stdio, a websocket client) sends a command into an actor's
bounded inbox and awaits the command's ``Reply``; the actor's task fills it in exactly once, with
a value or an exception. It is the ``reply_to`` of an actor message, as a Trio event.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

import trio

from ._mailbox import Mailbox

T = TypeVar("T")


class Reply(Generic[T]):
    """A value or an exception, set once by an actor and awaited by the sender.

    Resource handling: nothing to close. A reply that is never set leaves its waiter blocked,
    so an actor that drops a command (its inbox closed) must :meth:`fail` it.
    """

    __slots__ = ("_done", "_error", "_value", "eager")

    def __init__(self) -> None:
        self.eager = False
        """Set by a sender that cannot wait for the command's side effects (a listener called
        by the publish those effects would wait for): the actor answers as soon as the state
        has changed, before it publishes."""
        self._done = trio.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    @property
    def is_set(self) -> bool:
        """Whether the actor has answered."""
        return self._done.is_set()

    def set(self, value: T) -> None:
        """Answer with ``value``; a second answer is ignored."""
        if not self._done.is_set():
            self._value = value
            self._done.set()

    def fail(self, error: BaseException) -> None:
        """Answer with ``error``, raised in the waiter; a second answer is ignored."""
        if not self._done.is_set():
            self._error = error
            self._done.set()

    def value_nowait(self) -> T:
        """The answer, which must be set; raises the error answer."""
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    async def wait(self) -> T:
        """Wait for the answer and return it (or raise the error answer)."""
        await self._done.wait()
        return self.value_nowait()


class _Answerable(Protocol):
    def fail(self, error: BaseException) -> None: ...


class _Command(Protocol):
    @property
    def reply(self) -> _Answerable: ...


C = TypeVar("C", bound=_Command)


def close_inbox(receive: trio.MemoryReceiveChannel[C] | Mailbox[C], error: BaseException) -> None:
    """Close an actor's inbox, failing the reply of every command still in it with ``error``.

    For an actor's ``finally``: no sender is left waiting on a command nobody will execute.
    The inbox is a memory channel's receiving end or a :class:`Mailbox` (an inbox that costs
    little while empty, for actors that are mostly idle).
    """
    if isinstance(receive, Mailbox):
        receive.close()  # a put waiting for room raises ClosedResourceError
        for command in receive.clear():
            command.reply.fail(error)
        return
    while True:
        try:
            command = receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            break
        command.reply.fail(error)
    receive.close()
