"""The command's one exception (what to say on stderr and the exit status), and how a run's
session failure is told apart from a bug."""

from __future__ import annotations

from typing import TypeVar

from pitrio._exceptions import PitrioError

_E = TypeVar("_E", bound=Exception)


class CliError(PitrioError):
    """The command cannot go on: the message goes to stderr, the process exits ``exit_code``.

    Attributes:
        exit_code: 1 for a failure, 2 for a usage mistake (as argparse), 0 when the user
            chose to stop (``-r`` with no session picked).
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def session_failure(exc: BaseException) -> Exception | None:
    """The :class:`~pitrio.sessions.SessionError` that ended a run, if that is all that did.

    Trio wraps what escapes a nursery in exception groups; a group counts when every
    exception in it is a session error (the first is returned).
    """
    from pitrio.sessions import SessionError

    return only_failure(exc, SessionError)


def only_failure(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` if it is a ``kind``, or the first of a group holding nothing else, else ``None``.

    Trio wraps what escapes a nursery in exception groups; a group counts when every
    exception in it (at any depth) is a ``kind``.
    """
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(kind)
        while matched is not None and rest is None:
            first = matched.exceptions[0]
            if not isinstance(first, BaseExceptionGroup):
                return first if isinstance(first, kind) else None
            matched = first
    return None
