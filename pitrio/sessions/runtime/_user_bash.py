"""User bash in an AgentSession: the commands a user runs from the prompt (``!cmd`` runs and
records, ``!!cmd`` records but keeps the output from the model), as pi 0.73.1's
``AgentSession.executeBash`` / ``recordBashResult`` / ``abortBash``.

Two mixins: :class:`UserBashCommands` gives the session actor its ``bash``, ``abort_bash`` and
``record_bash_result`` commands; :class:`UserBashMethods` gives the facade its methods.

How a ``bash`` command runs: the actor reads the cwd (the session manager's) and the shell
settings (``shellPath``, ``shellCommandPrefix``) and starts a task in the session's nursery, so
the actor goes on serving commands (a prompt may start meanwhile, as in pi). The task runs the
command under the command's own cancel scope (``abort_bash`` cancels every running one; the
shell layer kills the process group), then sends a ``record_bash_result`` command back to the
actor, which owns the transcript, and only then answers the sender.

Recording: a ``bashExecution`` message goes into the agent's transcript and the session file (a
``message`` entry); no event is published (pi's RPC docs: the message emits no event). While the
session is busy (a run, its retries and compaction, a move) the message is kept back, since
inserting it would split a tool call from its result; pi flushes the kept-back messages when the
next prompt starts, before anything else of that prompt, and so does the prompt job here. A
command recorded while idle first flushes older kept-back ones, so the file keeps the order in
which the commands finished (pi appends it before them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from pitrio._exceptions import UsageError, unwrap_group
from pitrio.providers import now_ms
from pitrio.sessions.runtime import _session_commands as cmd
from pitrio.sessions.runtime._bash_executor import (
    BashResult,
    ChunkCallback,
    execute_bash_with_operations,
)
from pitrio.sessions.runtime._session_core import SessionSlots
from pitrio.sessions.storage._entries import BashExecutionMessage
from pitrio.tools.builtin import BashOperations, LocalBashOperations

if TYPE_CHECKING:
    from pitrio.actors import Agent
    from pitrio.sessions.settings._settings import SettingsManager
    from pitrio.sessions.storage._manager import SessionManager

__all__ = ["CANCEL_GRACE", "UserBashCommands", "UserBashMethods", "UserBashState"]

UserBashCommand = cmd.Bash | cmd.AbortBash | cmd.RecordBashResult

CANCEL_GRACE: Final = 5.0
"""Seconds a caller that stopped waiting for :meth:`UserBashMethods.execute_bash` gives its
command to end and be recorded before its own cancellation goes on: the shell layer needs at
most its ``KILL_GRACE`` (1 s) from SIGTERM to SIGKILL; the rest is margin for a slow machine."""


@attrs.define(eq=False)
class _Running:
    scope: trio.CancelScope
    done: trio.Event = attrs.Factory(trio.Event)


@attrs.define(eq=False)
class UserBashState:
    """The user commands of one session: the running ones and the kept-back messages."""

    running: list[_Running] = attrs.Factory(list)
    pending: list[BashExecutionMessage] = attrs.Factory(list)


def _string_setting(settings: SettingsManager, key: str) -> str | None:
    value = settings.get(key)
    return value if isinstance(value, str) and value else None


class UserBashCommands(SessionSlots):
    """The actor's user-bash commands; the actor provides the attributes annotated here."""

    __slots__ = ()  # the attributes are SessionSlots' slots

    agent: Agent
    session_manager: SessionManager
    settings: SettingsManager
    _nursery: trio.Nursery | None
    _user_bash: UserBashState | None

    @property
    def is_busy(self) -> bool:
        raise NotImplementedError

    async def send(self, command: cmd.SessionCommand) -> None:
        raise NotImplementedError

    async def hook(self, name: str, *args: Any) -> Any:
        raise NotImplementedError

    @property
    def user_bash(self) -> UserBashState:
        """This session's running commands and kept-back messages (made on first use)."""
        state = self._user_bash
        if state is None:
            state = self._user_bash = UserBashState()
        return state

    async def user_bash_command(self, command: UserBashCommand) -> None:
        """Execute a ``bash``, ``abort_bash`` or ``record_bash_result`` command (actor task)."""
        match command:
            case cmd.Bash():
                self._start_user_bash(command)
            case cmd.AbortBash():
                self.abort_user_bash()
                command.reply.set(None)
            case cmd.RecordBashResult():
                await self._record_bash_result(
                    command.command, command.result, command.exclude_from_context
                )
                command.reply.set(None)

    def abort_user_bash(self) -> None:
        """Cancel every running user command (the shell layer kills its process group)."""
        state = self._user_bash
        for running in state.running if state is not None else ():
            running.scope.cancel()

    async def flush_pending_bash(self) -> None:
        """Record the messages kept back while the session was busy (pi, at a prompt's start)."""
        state = self._user_bash
        if state is None or not state.pending:
            return
        pending, state.pending = state.pending, []
        for message in pending:
            await self._append_bash(message)

    def _start_user_bash(self, command: cmd.Bash) -> None:
        if command.scope.cancel_called:  # its sender stopped waiting before it could start
            command.reply.set(BashResult(output="", cancelled=True))
            return
        # pi reads the cwd and the shell settings when the command starts.
        cwd = self.session_manager.get_cwd()
        prefix = _string_setting(self.settings, "shellCommandPrefix")
        line = f"{prefix}\n{command.command}" if prefix else command.command
        operations = command.operations
        if operations is None:
            operations = LocalBashOperations(_string_setting(self.settings, "shellPath"))
        assert self._nursery is not None  # commands execute only while the actor serves
        running = _Running(command.scope)
        self.user_bash.running.append(running)
        self._nursery.start_soon(self._run_user_bash, command, running, line, cwd, operations)

    async def _run_user_bash(
        self,
        command: cmd.Bash,
        running: _Running,
        line: str,
        cwd: str,
        operations: BashOperations,
    ) -> None:
        try:
            result = await execute_bash_with_operations(
                line, cwd, operations, on_chunk=command.on_chunk, cancel_scope=command.scope
            )
            record = cmd.RecordBashResult(
                command=command.command,
                result=result,
                exclude_from_context=command.exclude_from_context,
            )
            await self.send(record)
            await record.reply.wait()
            command.reply.set(result)
        except Exception as exc:
            command.reply.fail(unwrap_group(exc))
        finally:
            self.user_bash.running.remove(running)
            running.done.set()
            if not command.reply.is_set:  # the session closed under the command
                command.reply.fail(UsageError("AgentSession is closed"))

    async def _record_bash_result(
        self, command: str, result: BashResult, exclude_from_context: bool | None
    ) -> None:
        message = BashExecutionMessage(
            command=command,
            output=result.output,
            exit_code=result.exit_code,
            cancelled=result.cancelled,
            truncated=result.truncated,
            full_output_path=result.full_output_path,
            timestamp=now_ms(),
            exclude_from_context=exclude_from_context,
        )
        if self.is_busy:
            self.user_bash.pending.append(message)
            return
        await self.flush_pending_bash()
        await self._append_bash(message)

    async def _append_bash(self, message: BashExecutionMessage) -> None:
        await self.agent.append_message(message)
        self.session_manager.append_message(message)


class UserBashMethods:
    """The facade's user-bash methods (:class:`~pitrio.sessions.AgentSession` provides
    ``_actor``, its session actor, and ``_call``)."""

    _actor: UserBashCommands

    async def _call(self, command: Any) -> Any:
        raise NotImplementedError

    async def execute_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool | None = False,
        on_chunk: ChunkCallback | None = None,
        operations: BashOperations | None = None,
    ) -> BashResult:
        """Run ``command`` as the user (pi's ``!cmd``; ``!!cmd`` with ``exclude_from_context``)
        in the session's cwd with the ``shellPath`` / ``shellCommandPrefix`` settings, and
        record it as a ``bashExecution`` message, which the model sees as user text on its next
        call (unless excluded). While a run streams the message waits for the next prompt.

        A long output is tail-truncated (2000 lines / 50KB) and the whole of it is written to
        a temp file (``full_output_path``). Cancelling this call, or :meth:`abort_bash`, kills
        the command; it is still recorded, as cancelled.

        Args:
            exclude_from_context: ``True`` for ``!!``; ``None`` writes no such key (pi's RPC
                ``bash``), ``False`` writes ``false`` (pi's interactive ``!``).
            on_chunk: called (awaited if async) with each cleaned chunk of output.
            operations: run the command with these instead of the local shell.

        Raises:
            BashExecutionError: the command could not be started (no such cwd or shell).
        """
        # Seed 004's user_bash: an extension may run the command elsewhere (operations) or
        # answer it outright (result, recorded as if the command had run).
        # The hook counts as part of the command: abort_bash() cancels a slow handler too. The
        # hook runs here, in the caller's task (as the prompt pipeline's input hook does), and
        # registers its cancel scope where AbortBash finds it: the one touch of the actor's
        # state from outside its task, synchronous and owner-free on purpose (adding and
        # removing a scope to cancel; cancelling a scope from another task is Trio's way).
        deciding = _Running(scope=trio.CancelScope())
        self._actor.user_bash.running.append(deciding)
        try:
            with deciding.scope:
                decision = await self._actor.hook(
                    "user_bash",
                    command,
                    bool(exclude_from_context),
                    self._actor.session_manager.get_cwd(),
                )
        finally:
            self._actor.user_bash.running.remove(deciding)
            deciding.done.set()
        if deciding.scope.cancelled_caught:
            return BashResult(output="", cancelled=True)
        if decision is not None and decision.result is not None:
            await self.record_bash_result(
                command, decision.result, exclude_from_context=exclude_from_context
            )
            result: BashResult = decision.result
            return result
        if decision is not None and decision.operations is not None and operations is None:
            operations = decision.operations
        request = cmd.Bash(
            command=command,
            exclude_from_context=exclude_from_context,
            on_chunk=on_chunk,
            operations=operations,
        )
        try:
            result = await self._call(request)
        except trio.Cancelled:
            # As prompt(): the caller's cancellation goes on once the command is gone (and
            # recorded, as cancelled).
            request.scope.cancel()
            for running in self._actor.user_bash.running:
                if running.scope is request.scope:
                    with trio.move_on_after(CANCEL_GRACE, shield=True):
                        await running.done.wait()
            raise
        return result

    async def record_bash_result(
        self, command: str, result: BashResult, *, exclude_from_context: bool | None = None
    ) -> None:
        """Record a command's result as if :meth:`execute_bash` had run it (for a front end or
        extension that ran the command itself)."""
        await self._call(
            cmd.RecordBashResult(
                command=command, result=result, exclude_from_context=exclude_from_context
            )
        )

    async def abort_bash(self) -> None:
        """Cancel the running user commands (pi's ``abortBash``): their processes are killed
        and their :meth:`execute_bash` calls return results with ``cancelled`` (the
        ``AbortBash`` command; answered at once, as pi)."""
        await self._call(cmd.AbortBash())

    @property
    def is_bash_running(self) -> bool:
        """Whether a user command is running (until its result is recorded)."""
        return bool(self._actor.user_bash.running)

    @property
    def has_pending_bash_messages(self) -> bool:
        """Whether results wait, kept back during a run, for the next prompt."""
        return bool(self._actor.user_bash.pending)
