"""``Reply``: the one-shot answer slot that every actor command carries.

A front end (the Python API, RPC over stdio, a websocket client) sends a command into an actor's
bounded inbox and awaits the command's ``Reply``; the actor's task fills it in exactly once, with
a value or an exception. It is the ``reply_to`` of an actor message, as a Trio event.

``Latch`` is the same one-shot flag without a value, for "this has ended" (a run, a job). Both
wait on a `trio.Event`, made by the first wait that has to (most replies are set before anyone
waits, and an idle session holds a few unset ones).
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

import trio

from ._mailbox import Mailbox

T = TypeVar("T")


class _OneShot:
    """A flag set once, with a `trio.Event` made for whoever has to wait for it."""

    __slots__ = ("_event", "_flag")

    def __init__(self) -> None:
        self._flag = False
        self._event: trio.Event | None = None

    def _set_flag(self) -> None:
        if self._flag:
            return
        self._flag = True
        if self._event is not None:
            self._event.set()

    async def _wait_flag(self) -> None:
        if self._flag:
            await trio.lowlevel.checkpoint()
            return
        event = self._event
        if event is None:
            event = self._event = trio.Event()
        await event.wait()


class Latch(_OneShot):
    """A one-shot flag with ``trio.Event``'s interface (``set``, ``is_set``, ``wait``), whose
    event is made only when someone has to wait.

    Resource handling: nothing to close. Cancellation: a cancelled wait leaves no state.
    """

    __slots__ = ()

    def is_set(self) -> bool:
        """Whether :meth:`set` was called."""
        return self._flag

    def set(self) -> None:
        """Set the flag and wake every waiter; idempotent."""
        self._set_flag()

    async def wait(self) -> None:
        """Return once the flag is set (at once, after a checkpoint, if it is)."""
        await self._wait_flag()


class Reply(_OneShot, Generic[T]):
    """A value or an exception, set once by an actor and awaited by the sender.

    Resource handling: nothing to close. A reply that is never set leaves its waiter blocked,
    so an actor that drops a command (its inbox closed) must :meth:`fail` it.
    """

    __slots__ = ("_error", "_value", "eager")

    def __init__(self) -> None:
        super().__init__()
        self.eager = False
        """Set by a sender that cannot wait for the command's side effects (a listener called
        by the publish those effects would wait for): the actor answers as soon as the state
        has changed, before it publishes."""
        self._value: T | None = None
        self._error: BaseException | None = None

    @property
    def is_set(self) -> bool:
        """Whether the actor has answered."""
        return self._flag

    def set(self, value: T) -> None:
        """Answer with ``value``; a second answer is ignored."""
        if not self._flag:
            self._value = value
            self._set_flag()

    def fail(self, error: BaseException) -> None:
        """Answer with ``error``, raised in the waiter; a second answer is ignored."""
        if not self._flag:
            self._error = error
            self._set_flag()

    def value_nowait(self) -> T:
        """The answer, which must be set; raises the error answer."""
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    async def wait(self) -> T:
        """Wait for the answer and return it (or raise the error answer)."""
        await self._wait_flag()
        return self.value_nowait()

    async def answered(self) -> None:
        """Return once the actor has answered, without raising an error answer
        (`value_nowait` then returns or raises the answer)."""
        await self._wait_flag()


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
