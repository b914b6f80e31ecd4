"""Blocking file work for the built-in tools, and Node's wording of file-system errors.

Every blocking call (``open``, ``stat``, ``listdir``, ...) runs in a worker thread through
:func:`run_sync`, which shares one :class:`trio.CapacityLimiter` per Trio run among all built-in
tools, so a batch of parallel tool calls cannot start an unbounded number of threads. The
limiter lives here, in the tools layer, because tools must not import ``sessions`` (which has
its own file threads).

pi's tools let Node's ``fs`` errors reach the model unchanged (``ENOENT: no such file or
directory, access '/x'``); :func:`node_error_message` writes an :class:`OSError` the same way.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Final, TypeVar

import trio

from pitrio.tools.builtin._errors import FileToolError

T = TypeVar("T")

FILE_THREADS: Final = 8
"""Worker threads the built-in tools use at most at once, per Trio run: enough for a parallel
tool batch to overlap its disk waits, few enough not to swamp two cores."""

_limiter_var: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar(
    "pitrio_builtin_tool_files"
)


def file_limiter() -> trio.CapacityLimiter:
    """Return the built-in tools' limiter for the current Trio run, creating it on first use."""
    try:
        return _limiter_var.get()
    except LookupError:
        limiter = trio.CapacityLimiter(FILE_THREADS)
        _limiter_var.set(limiter)
        return limiter


async def run_sync(fn: Callable[..., T], *args: object) -> T:
    """Run a blocking function in a worker thread under :func:`file_limiter`.

    Cancellation: the call is abandoned only by not waiting for it (``abandon_on_cancel`` is
    false), so a write that started always finishes before the tool sees the cancellation.
    """
    return await trio.to_thread.run_sync(fn, *args, limiter=file_limiter())


# libuv's texts for the codes a file tool meets (uv_strerror); other codes use os.strerror.
_UV_MESSAGES: Final[dict[int, str]] = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "illegal operation on a directory",
    errno.ENOTDIR: "not a directory",
    errno.EEXIST: "file already exists",
    errno.ENAMETOOLONG: "name too long",
    errno.ELOOP: "too many symbolic links encountered",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EMFILE: "too many open files",
    errno.EBUSY: "resource busy or locked",
    errno.EINVAL: "invalid argument",
    errno.EIO: "i/o error",
}


def error_code(exc: OSError) -> str:
    """Return the symbolic code of an :class:`OSError` (``ENOENT``), as Node's ``error.code``."""
    if exc.errno is None:
        return "UNKNOWN"
    return errno.errorcode.get(exc.errno, "UNKNOWN")


def node_error_message(exc: OSError, syscall: str, path: str | None = None) -> str:
    """Return Node's message for a failed ``fs`` call: ``CODE: description, syscall 'path'``.

    Args:
        exc: the error Python raised.
        syscall: the system call Node names (``access``, ``open``, ``read``, ``mkdir``, ...).
        path: the path Node quotes, or ``None`` for calls that name none (``read`` on a handle).
    """
    number = exc.errno
    description = _UV_MESSAGES.get(number, "") if number is not None else ""
    if not description:
        description = os.strerror(number).lower() if number is not None else str(exc)
    message = f"{error_code(exc)}: {description}, {syscall}"
    return message if path is None else f"{message} '{path}'"


def fs_error(tool_name: str, exc: OSError, syscall: str, path: str | None) -> FileToolError:
    """Return a :class:`FileToolError` worded as Node words the failed call."""
    return FileToolError(
        node_error_message(exc, syscall, path),
        tool_name=tool_name,
        path=path,
        code=error_code(exc),
    )
