"""Running shell commands for the ``bash`` tool (pi 0.73.1 ``utils/shell.ts`` and the local
``BashOperations`` of ``core/tools/bash.ts``).

Everything that starts a process sits behind one seam, :class:`BashOperations`: the ``bash``
tool only ever calls ``operations.exec(...)``, so a host can run commands somewhere else (a
container, over SSH, under a sandbox of the user's choosing) by passing its own implementation.
:class:`LocalBashOperations` is the default.

Process handling: the shell is started with ``start_new_session=True``, so it leads a process
group of its own that also holds everything it spawns. When the call is cancelled (an abort, or
the tool's timeout) the whole group gets ``SIGTERM``, then, after a short shielded grace,
``SIGKILL``, and the shell is reaped before the cancellation goes on. pi sends ``SIGKILL`` at
once; the ``SIGTERM`` first gives well-behaved programs a chance to clean up.

stdout and stderr share one pipe, so the tool sees them interleaved in the order the command
wrote them. pi reads two pipes and merges chunks as they arrive, which gives the same text up to
the order of writes that race each other.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, Protocol

import attrs
import trio

from pitrio.tools._exceptions import ToolError
from pitrio.tools.builtin._io import run_sync

READ_CHUNK: Final = 65536
"""Bytes read from the command's pipe at once."""
EXIT_STDIO_GRACE: Final = 0.1
"""Seconds to keep reading after the shell exited (pi's ``EXIT_STDIO_GRACE_MS``): a background
child that inherited the pipe (``server &``) would otherwise keep the call open for ever."""
KILL_GRACE: Final = 1.0
"""Seconds between ``SIGTERM`` and ``SIGKILL`` to a cancelled command's process group."""

DataCallback = Callable[[bytes], Awaitable[None]]
"""Receives each chunk of a command's merged stdout and stderr, as bytes."""


class BashExecutionError(ToolError):
    """The ``bash`` tool could not run a command, or the command failed.

    The message is pi's text for the model: the command's output (if any), a blank line, then
    the status (``Command exited with code 2``, ``Command timed out after 5 seconds``) or, for a
    command that could not start, pi's explanation.

    Attributes:
        tool_name: ``bash``.
        exit_code: the command's exit code, ``None`` if it did not exit by itself.
        timed_out: the tool's ``timeout`` ran out and the command was killed.
        full_output_path: the temp file with the whole output, if it was truncated.
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        timed_out: bool = False,
        full_output_path: str | None = None,
    ) -> None:
        super().__init__(message, tool_name="bash")
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.full_output_path = full_output_path


@attrs.frozen
class ShellConfig:
    """The shell and the arguments that come before the command (pi's ``getShellConfig``)."""

    shell: str
    args: tuple[str, ...] = ("-c",)


def resolve_shell(shell_path: str | None = None) -> ShellConfig:
    """Choose the shell as pi does: ``shell_path`` (settings' ``shellPath``), ``/bin/bash``,
    ``bash`` on ``PATH``, then ``sh``.

    pi does not look at ``$SHELL``: the tool is called ``bash`` and the model writes bash, so a
    user's zsh or fish is not used unless they name it in ``shell_path``. Blocking (it checks the
    file system).

    Raises:
        BashExecutionError: ``shell_path`` does not exist.
    """
    if shell_path:
        if os.path.exists(shell_path):
            return ShellConfig(shell_path)
        raise BashExecutionError(f"Custom shell path not found: {shell_path}")
    if os.path.exists("/bin/bash"):
        return ShellConfig("/bin/bash")
    on_path = shutil.which("bash")
    return ShellConfig(on_path if on_path else "sh")


def shell_env(bin_dir: str | None = None) -> dict[str, str]:
    """Return this process's environment, with ``bin_dir`` put first on ``PATH`` if given and
    not already there (pi's ``getShellEnv`` adds its own ``bin`` directory this way)."""
    env = dict(os.environ)
    if bin_dir:
        key = next((name for name in env if name.lower() == "path"), "PATH")
        current = env.get(key, "")
        if bin_dir not in [entry for entry in current.split(os.pathsep) if entry]:
            env[key] = os.pathsep.join(part for part in (bin_dir, current) if part)
    return env


class BashOperations(Protocol):
    """Runs one command for the ``bash`` tool (pi's ``BashOperations``): the seam a host
    replaces to run commands elsewhere or under confinement.

    Cancellation is the contract for both abort and timeout: when the calling task is
    cancelled, ``exec`` must stop the command (and everything it started) before it lets
    :class:`trio.Cancelled` propagate.
    """

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: DataCallback,
        env: Mapping[str, str] | None = None,
    ) -> int | None:
        """Run ``command`` in ``cwd``, passing its output to ``on_data`` as it comes.

        Returns:
            The exit code, or ``None`` when the command was ended by a signal.

        Raises:
            BashExecutionError: the command could not be started (with pi's message).
        """
        ...


async def _kill_group(process: trio.Process) -> None:
    """SIGTERM the process group, SIGKILL it after :data:`KILL_GRACE`, and reap the leader.

    Must be called shielded: it is the cleanup of a cancelled call.
    """
    _signal_group(process.pid, signal.SIGTERM)
    with trio.move_on_after(KILL_GRACE):
        await process.wait()
    # Also when the leader is gone: its children may have outlived it in the group.
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the whole group is already gone
    except PermissionError:
        # A group we cannot signal is not ours any more (its id was reused); leave it.
        pass


@attrs.frozen
class LocalBashOperations:
    """Runs commands on this machine with the user's shell (pi's ``createLocalBashOperations``).

    Resource handling: ``exec`` owns the process. It returns once the shell has exited and its
    output has been read (or :data:`EXIT_STDIO_GRACE` after the exit, if a background child
    keeps the pipe open; that child is left running, as in pi). If the call is cancelled, the
    process group is killed and the shell reaped, shielded, before ``Cancelled`` propagates.
    """

    shell_path: str | None = None
    """Explicit shell (pi's ``shellPath`` setting); ``None`` resolves as :func:`resolve_shell`."""
    wrapper: tuple[str, ...] = ()
    """An argv the shell runs under (a host's ``sandboxCommand``: ``("bwrap", ..., "--")``):
    the process started is ``[*wrapper, shell, *args, command]``. Empty: the shell itself."""

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: DataCallback,
        env: Mapping[str, str] | None = None,
    ) -> int | None:
        """Run ``command`` with ``<shell> -c`` in ``cwd``; see :class:`BashOperations`."""
        shell = await run_sync(resolve_shell, self.shell_path)
        if not await run_sync(os.path.exists, cwd):
            raise BashExecutionError(
                f"Working directory does not exist: {cwd}\nCannot execute bash commands."
            )
        process = await trio.lowlevel.open_process(
            [*self.wrapper, shell.shell, *shell.args, command],
            cwd=cwd,
            env=dict(env) if env is not None else shell_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        finished = False
        try:
            await _pump(process, on_data)
            finished = True
        finally:
            if not finished:
                with trio.CancelScope(shield=True):
                    await _kill_group(process)
            if process.stdout is not None:
                with trio.CancelScope(shield=True):
                    await process.stdout.aclose()
        code = process.returncode
        # A negative return code means a signal ended the shell: Node reports code null.
        return None if code is None or code < 0 else code


async def _pump(process: trio.Process, on_data: DataCallback) -> None:
    """Pass the output to ``on_data`` until EOF, or until the grace after the shell's exit."""
    stdout = process.stdout
    assert stdout is not None  # opened with stdout=PIPE
    drained = trio.Event()

    async def read_all() -> None:
        while chunk := await stdout.receive_some(READ_CHUNK):
            await on_data(bytes(chunk))
        drained.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_all)
        await process.wait()
        with trio.move_on_after(EXIT_STDIO_GRACE):
            await drained.wait()
        nursery.cancel_scope.cancel()


def timeout_scope(timeout: float | None) -> trio.CancelScope:
    """Return a cancel scope for the ``bash`` tool's ``timeout`` (seconds; none unless > 0)."""
    if timeout is None or not timeout > 0:
        return trio.CancelScope()
    return trio.move_on_after(min(timeout, math.inf))
