"""``Reply``: the one-shot answer slot that every actor command carries.

A front end (the Python API, RPC over stdio, a websocket client) sends a command into an actor's
bounded inbox and awaits the command's ``Reply``; the actor's task fills it in exactly once, with
a value or an exception. It is the ``reply_to`` of an actor message, as a Trio event.

``Latch`` is the same one-shot flag without a value, for "this has ended" (a run, a job): both
park their first waiter on an object made once, so a long wait keeps almost nothing alive.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Generic, Protocol, TypeVar

import trio

from ._mailbox import Mailbox
from ._park import Waiters, checkpoint

T = TypeVar("T")


class _OneShot(Waiters):
    """A flag set once, whose first waiter parks on an object made once (see :class:`Latch`).

    ``Event.wait`` keeps a coroutine, a closure and its cells, the park message and a
    generator alive for as long as the wait lasts; a run's end, a job's end or a command's
    answer is waited for seconds, so with thousands of sessions all of it was promoted by the
    cyclic collector. Here the first waiter parks on one :class:`~._park.Park` (created by
    the first wait); further waiters at the same time take the general path (`Waiters`).
    """

    __slots__ = ("_flag",)

    def __init__(self) -> None:
        super().__init__()
        self._flag = False

    def _set_flag(self) -> None:
        if self._flag:
            return
        self._flag = True
        self._wake_waiters()
        # The park's abort callback is a method of this object: a cycle, which would keep
        # the flag and all it reaches (a run's whole controller and transcript) alive until
        # the cyclic collector ran. A set flag never parks again; a task still parked holds
        # the park itself until it resumes.
        self._waiter_park = None

    def _wait_flag(self) -> Awaitable[None]:
        if self._flag:
            return checkpoint()
        return self._wait_parked()


class Latch(_OneShot):
    """A one-shot flag with ``trio.Event``'s interface (``set``, ``is_set``, ``wait``) whose
    first waiter parks on an object made once instead of a waiting chain made per wait.

    Resource handling: nothing to close. Cancellation: a cancelled wait leaves no state.
    """

    __slots__ = ()

    def is_set(self) -> bool:
        """Whether :meth:`set` was called."""
        return self._flag

    def set(self) -> None:
        """Set the flag and wake every waiter; idempotent."""
        self._set_flag()

    def wait(self) -> Awaitable[None]:
        """Return an awaitable that returns once the flag is set (at once, after a checkpoint,
        if it is); await it at once, in the task that called this."""
        return self._wait_flag()


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

    def answered(self) -> Awaitable[None]:
        """Return an awaitable that returns once the actor has answered, without raising an
        error answer (`value_nowait` returns or raises the answer); await it at once, in the
        task that called this. `wait` without its coroutine: a sender that waits seconds
        (for a run's end) keeps one object less alive."""
        return self._wait_flag()


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
