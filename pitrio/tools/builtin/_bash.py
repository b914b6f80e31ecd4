"""The ``bash`` tool (pi 0.73.1 ``core/tools/bash.ts`` and ``output-accumulator.ts``).

The command runs through a :class:`~pitrio.tools.builtin.BashOperations` (the local shell by
default). Its output is kept as a bounded tail (:class:`OutputAccumulator`); once it passes
2000 lines or 50KB the raw bytes also go to a temp file whose path the result names. While the
command runs, the current tail is sent as tool updates at most every
:data:`BASH_UPDATE_THROTTLE` seconds.

Results are pi's: the output, tail-truncated with pi's notice; a non-zero exit code, a timeout
or a command that cannot start raise :class:`BashExecutionError` whose message is the output
plus pi's status line (the agent sends it as an error result). An abort is a Trio
cancellation: the process group is killed and the cancellation propagates.
"""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

import attrs
import trio

from pitrio.providers import TextContent
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._io import run_sync
from pitrio.tools.builtin._read import js_number
from pitrio.tools.builtin._shell import (
    BashExecutionError,
    BashOperations,
    LocalBashOperations,
    shell_env,
    timeout_scope,
)
from pitrio.tools.builtin._truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    format_size,
    truncate_tail,
    utf8_len,
)

BASH_UPDATE_THROTTLE: Final = 0.1
"""Seconds between two streamed updates of a running command (pi's 100 ms)."""
TEMP_FILE_PREFIX: Final = "pitrio-bash"
"""Name prefix of the temp files that keep a truncated command's full output."""

BASH_DESCRIPTION: Final = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    f"Output is truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first). If truncated, full output is saved to a temp file. Optionally "
    "provide a timeout in seconds."
)
BASH_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {
            "type": "number",
            "description": "Timeout in seconds (optional, no default timeout)",
        },
    },
    "required": ["command"],
}


@attrs.frozen(kw_only=True)
class OutputSnapshot:
    """The kept tail of a command's output at one moment."""

    content: str
    truncation: TruncationResult
    full_output_path: str | None


@attrs.define(kw_only=True)
class OutputAccumulator:
    """Streaming output with bounded memory (pi's ``OutputAccumulator``).

    Bytes are decoded incrementally (invalid UTF-8 becomes U+FFFD); only a tail of the text of
    at most four times ``max_bytes`` is kept for snapshots, with line and byte totals for the
    whole output. Once the output is over either limit a temp file path is chosen and the raw
    bytes collected so far, and all later ones, wait in :meth:`take_pending` to be written
    there. The class does no I/O itself, so it can be used from any thread or task.
    """

    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES
    temp_file_prefix: str = "pitrio-output"
    _decoder: codecs.IncrementalDecoder = attrs.field(
        factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"), init=False
    )
    _raw_chunks: list[bytes] = attrs.field(factory=list, init=False)
    _pending: list[bytes] = attrs.field(factory=list, init=False)
    _tail_text: str = attrs.field(default="", init=False)
    _tail_bytes: int = attrs.field(default=0, init=False)
    _tail_starts_at_line_boundary: bool = attrs.field(default=True, init=False)
    _total_raw_bytes: int = attrs.field(default=0, init=False)
    _total_decoded_bytes: int = attrs.field(default=0, init=False)
    _total_lines: int = attrs.field(default=1, init=False)
    _current_line_bytes: int = attrs.field(default=0, init=False)
    _finished: bool = attrs.field(default=False, init=False)
    temp_file_path: str | None = attrs.field(default=None, init=False)
    """The temp file for the full output, once one is needed."""

    @property
    def _max_rolling_bytes(self) -> int:
        return max(self.max_bytes * 2, 1)

    @property
    def last_line_bytes(self) -> int:
        """UTF-8 bytes of the output's last (unterminated) line."""
        return self._current_line_bytes

    def append(self, data: bytes) -> None:
        """Add a chunk of raw output.

        Raises:
            RuntimeError: the accumulator was finished.
        """
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self._total_raw_bytes += len(data)
        self._append_text(self._decoder.decode(data))
        if self.temp_file_path is not None or self._should_use_temp_file():
            self._ensure_temp_file()
            self._pending.append(data)
        elif data:
            self._raw_chunks.append(data)

    def finish(self) -> None:
        """Flush the decoder; no more output will come."""
        if self._finished:
            return
        self._finished = True
        self._append_text(self._decoder.decode(b"", True))
        if self._should_use_temp_file():
            self._ensure_temp_file()

    def snapshot(self, *, persist_if_truncated: bool = False) -> OutputSnapshot:
        """Return the tail as it would be shown now, truncated to the limits."""
        tail = truncate_tail(
            self._snapshot_text(), max_lines=self.max_lines, max_bytes=self.max_bytes
        )
        truncated = self._total_lines > self.max_lines or self._total_decoded_bytes > self.max_bytes
        truncated_by = None
        if truncated:
            truncated_by = tail.truncated_by or (
                "bytes" if self._total_decoded_bytes > self.max_bytes else "lines"
            )
        truncation = attrs.evolve(
            tail,
            truncated=truncated,
            truncated_by=truncated_by,
            total_lines=self._total_lines,
            total_bytes=self._total_decoded_bytes,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )
        if persist_if_truncated and truncated:
            self._ensure_temp_file()
        return OutputSnapshot(
            content=truncation.content,
            truncation=truncation,
            full_output_path=self.temp_file_path,
        )

    def take_pending(self) -> list[bytes]:
        """Return (and forget) the raw bytes not yet written to :attr:`temp_file_path`."""
        pending, self._pending = self._pending, []
        return pending

    def _append_text(self, text: str) -> None:
        if not text:
            return
        size = utf8_len(text)
        self._total_decoded_bytes += size
        self._tail_text += text
        self._tail_bytes += size
        if self._tail_bytes > self._max_rolling_bytes * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines == 0:
            self._current_line_bytes += size
        else:
            self._total_lines += newlines
            self._current_line_bytes = utf8_len(text[text.rindex("\n") + 1 :])

    def _trim_tail(self) -> None:
        data = self._tail_text.encode("utf-8", "surrogatepass")
        if len(data) <= self._max_rolling_bytes:
            self._tail_bytes = len(data)
            return
        start = len(data) - self._max_rolling_bytes
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        if start:
            self._tail_starts_at_line_boundary = data[start - 1] == 0x0A
        self._tail_text = data[start:].decode("utf-8", "replace")
        self._tail_bytes = utf8_len(self._tail_text)

    def _snapshot_text(self) -> str:
        if self._tail_starts_at_line_boundary:
            return self._tail_text
        newline = self._tail_text.find("\n")
        return self._tail_text if newline == -1 else self._tail_text[newline + 1 :]

    def _should_use_temp_file(self) -> bool:
        return (
            self._total_raw_bytes > self.max_bytes
            or self._total_decoded_bytes > self.max_bytes
            or self._total_lines > self.max_lines
        )

    def _ensure_temp_file(self) -> None:
        if self.temp_file_path is not None:
            return
        name = f"{self.temp_file_prefix}-{secrets.token_hex(8)}.log"
        self.temp_file_path = os.path.join(tempfile.gettempdir(), name)
        self._pending = [*self._raw_chunks, *self._pending]
        self._raw_chunks = []


def _open_for_writing(path: str) -> IO[bytes]:
    return open(path, "wb")  # closed by _SpillFile.aclose


@attrs.define
class _SpillFile:
    """Writes an accumulator's pending bytes to its temp file, in worker threads."""

    _file: IO[bytes] | None = None

    async def sync(self, output: OutputAccumulator) -> None:
        path = output.temp_file_path
        if path is None:
            return
        pending = output.take_pending()
        file = self._file
        if file is None:
            file = await run_sync(_open_for_writing, path)
            self._file = file
        if pending:
            await run_sync(file.writelines, pending)

    async def aclose(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            await run_sync(file.close)


@attrs.frozen(kw_only=True)
class SpawnContext:
    """What is about to run (pi's ``BashSpawnContext``); a spawn hook may return a changed copy."""

    command: str
    cwd: str
    env: Mapping[str, str]


SpawnHook = Callable[[SpawnContext], SpawnContext]
"""Adjusts the command, working directory or environment just before each run."""


@attrs.define
class _Updates:
    """pi's update throttle: the first change is sent at once, later ones at most every
    :data:`BASH_UPDATE_THROTTLE` seconds, and a pending change is flushed at the end."""

    output: OutputAccumulator
    on_update: ToolUpdateCallback
    dirty: bool = False
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def mark(self) -> None:
        self.dirty = True
        self._changed.set()

    def flush(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        snapshot = self.output.snapshot(persist_if_truncated=True)
        details: dict[str, Any] = {}
        if snapshot.truncation.truncated:
            details["truncation"] = snapshot.truncation.to_details()
        if snapshot.full_output_path is not None:
            details["fullOutputPath"] = snapshot.full_output_path
        self.on_update(
            AgentToolResult(content=(TextContent(text=snapshot.content),), details=details)
        )

    async def run(self) -> None:
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            self.flush()
            await trio.sleep(BASH_UPDATE_THROTTLE)


def _format_output(
    output: OutputAccumulator, snapshot: OutputSnapshot, empty_text: str
) -> tuple[str, dict[str, Any] | None]:
    truncation = snapshot.truncation
    text = snapshot.content or empty_text
    if not truncation.truncated:
        return text, None
    details = {"truncation": truncation.to_details(), "fullOutputPath": snapshot.full_output_path}
    end_line = truncation.total_lines
    start_line = end_line - truncation.output_lines + 1
    path = snapshot.full_output_path
    if truncation.last_line_partial:
        text += (
            f"\n\n[Showing last {format_size(truncation.output_bytes)} of line {end_line} "
            f"(line is {format_size(output.last_line_bytes)}). Full output: {path}]"
        )
    elif truncation.truncated_by == "lines":
        text += f"\n\n[Showing lines {start_line}-{end_line} of {end_line}. Full output: {path}]"
    else:
        text += (
            f"\n\n[Showing lines {start_line}-{end_line} of {end_line} "
            f"({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"
        )
    return text, details


def _with_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


@attrs.frozen(kw_only=True, eq=False)
class BashTool(AgentTool):
    """pi's ``bash`` tool: run a command in :attr:`cwd` with the user's shell.

    Cancellation: cancelling :meth:`execute` kills the command's whole process group (see
    :class:`~pitrio.tools.builtin.LocalBashOperations`) and re-raises.
    """

    cwd: str
    """Directory the commands run in."""
    operations: BashOperations = attrs.field(factory=LocalBashOperations)
    """How commands are run: the local shell unless a host passes its own."""
    command_prefix: str | None = None
    """A line run before every command (pi's ``shellCommandPrefix`` setting), e.g.
    ``shopt -s expand_aliases`` or ``source ~/.profile``."""
    spawn_hook: SpawnHook | None = None
    """Optional last word on the command, cwd and environment (pi's ``spawnHook``)."""
    name: str = "bash"
    label: str = "bash"
    description: str = BASH_DESCRIPTION
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: dict(BASH_PARAMETERS))

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Run the command; see the module docstring for the result and errors."""
        command: str = params["command"]
        timeout = params.get("timeout")
        if self.command_prefix:
            command = f"{self.command_prefix}\n{command}"
        context = SpawnContext(command=command, cwd=self.cwd, env=shell_env())
        if self.spawn_hook is not None:
            context = self.spawn_hook(context)

        output = OutputAccumulator(temp_file_prefix=TEMP_FILE_PREFIX)
        spill = _SpillFile()
        updates = _Updates(output, on_update)
        on_update(AgentToolResult(content=()))
        start_error: BashExecutionError | None = None
        exit_code: int | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(updates.run)

                async def on_data(chunk: bytes) -> None:
                    output.append(chunk)
                    await spill.sync(output)
                    updates.mark()

                with timeout_scope(timeout) as deadline:
                    try:
                        exit_code = await self.operations.exec(
                            context.command, context.cwd, on_data=on_data, env=context.env
                        )
                    except BashExecutionError as exc:
                        # Kept for raising outside the nursery, which would wrap it in a group.
                        start_error = exc
                nursery.cancel_scope.cancel()
            if start_error is not None:
                await self._finish(output, spill, updates, "")
                raise start_error
            if deadline.cancelled_caught:
                text, _ = await self._finish(output, spill, updates, "")
                raise BashExecutionError(
                    _with_status(
                        text, f"Command timed out after {js_number(float(timeout or 0))} seconds"
                    ),
                    timed_out=True,
                    full_output_path=output.temp_file_path,
                )
            text, details = await self._finish(output, spill, updates, "(no output)")
            if exit_code is not None and exit_code != 0:
                raise BashExecutionError(
                    _with_status(text, f"Command exited with code {exit_code}"),
                    exit_code=exit_code,
                    full_output_path=output.temp_file_path,
                )
            return AgentToolResult(content=(TextContent(text=text),), details=details)
        finally:
            with trio.CancelScope(shield=True):
                await spill.aclose()

    async def _finish(
        self,
        output: OutputAccumulator,
        spill: _SpillFile,
        updates: _Updates,
        empty_text: str,
    ) -> tuple[str, dict[str, Any] | None]:
        output.finish()
        updates.flush()
        snapshot = output.snapshot(persist_if_truncated=True)
        await spill.sync(output)
        await spill.aclose()
        return _format_output(output, snapshot, empty_text)


def create_bash_tool(
    cwd: str,
    *,
    operations: BashOperations | None = None,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    spawn_hook: SpawnHook | None = None,
) -> BashTool:
    """Return a ``bash`` tool for ``cwd`` (pi's ``createBashTool``).

    Args:
        cwd: directory the commands run in.
        operations: how to run commands; the local shell (with ``shell_path``) by default.
        shell_path: the shell to use (pi's ``shellPath`` setting); ignored with ``operations``.
        command_prefix: a line run before every command (pi's ``shellCommandPrefix``).
        spawn_hook: adjusts each command, cwd and environment before it runs.
    """
    return BashTool(
        cwd=cwd,
        operations=operations if operations is not None else LocalBashOperations(shell_path),
        command_prefix=command_prefix,
        spawn_hook=spawn_hook,
    )
