"""Running a command the user typed (``!cmd``) and keeping its output (pi 0.73.1
``core/bash-executor.ts``).

The process itself is run by a :class:`~pitrio.tools.builtin.BashOperations` (the local shell by
default), the same seam the ``bash`` tool uses, so the process-group kill on cancellation lives
in one place. What this module adds is pi's treatment of the output of a *user* command, which
differs from the tool's:

* each chunk is decoded as UTF-8 and cleaned for display: ANSI escape sequences are removed,
  control characters other than tab and newline (carriage returns included) are dropped, and so
  are the Unicode interlinear annotation characters U+FFF9..U+FFFB;
* only a rolling tail of about ``2 * DEFAULT_MAX_BYTES`` characters is kept in memory (never
  less than that once more arrived, unlike pi, whose tail can fall under the 50KB it shows);
* once more than ``DEFAULT_MAX_BYTES`` raw bytes arrived, or if the final text needs truncating,
  the cleaned text goes to a temp file, whose path the result names;
* the result's ``output`` is the tail of the text cut to pi's limits (2000 lines / 50KB) with no
  notice appended (the notice is added when the message is shown to the model).

Cancellation is a Trio cancel scope the caller passes: when it is cancelled the process group is
killed (by the operations) and the result says ``cancelled`` with no exit code, as pi's result
for an aborted signal.
"""

from __future__ import annotations

import codecs
import os
import re
import secrets
import tempfile
from collections import deque
from collections.abc import Awaitable, Callable
from typing import IO, Any, Final

import attrs
import trio

from pitrio._awaitable import maybe_await
from pitrio.codec import extra_field, wire
from pitrio.sessions.storage._files import run_file_work
from pitrio.tools.builtin import DEFAULT_MAX_BYTES, BashOperations, truncate_tail

__all__ = [
    "USER_BASH_TEMP_PREFIX",
    "BashResult",
    "ChunkCallback",
    "execute_bash_with_operations",
    "sanitize_output",
]

USER_BASH_TEMP_PREFIX: Final = "pitrio-bash"
"""Name prefix of the temp files with a user command's full output (pi: ``pi-bash-``)."""
KEPT_OUTPUT_CHARS: Final = DEFAULT_MAX_BYTES * 2
"""Characters of cleaned output kept in memory (pi's rolling buffer): enough for the 50KB tail
the result shows even when it is cut on a line boundary; the rest is only in the temp file."""

ChunkCallback = Callable[[str], "Awaitable[None] | None"]
"""Receives each cleaned chunk of a running command's output (pi's ``onChunk``)."""


@wire
@attrs.frozen(kw_only=True)
class BashResult:
    """What a user command produced (pi's ``BashResult``; the data of the RPC ``bash`` reply)."""

    output: str
    """Merged stdout and stderr, cleaned, tail-truncated to 2000 lines / 50KB."""
    exit_code: int | None = None
    """``None`` when the command was cancelled or ended by a signal."""
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    """The temp file with the whole (cleaned) output, when it was long."""
    extra: dict[str, Any] | None = extra_field()


# pi uses the ansi-regex package (6.x); the same alternatives, in the same order.
_ST = r"(?:\x1b\\|\x9c)"
_STRING_CONTROLS = r"\x18\x1a\x1b\x80-\x9f"
_ANSI = re.compile(
    "|".join(
        (
            rf"\x1b\](?:P[0-9A-Fa-f]{{7}}|R)(?:\x07|{_ST})?",  # Linux console palette
            rf"(?:\x1b\]|\x9d)[^\x07{_STRING_CONTROLS}]*(?:\x07|{_ST})",  # OSC
            rf"(?:\x1b[PX^_k]|[\x90\x98\x9e\x9f])[^{_STRING_CONTROLS}]*{_ST}",  # DCS, SOS, PM, APC
            r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]",  # CSI
            r"\x1b(?:[\x20-\x2f]+[\x30-\x7e]|[0-9A-PR-TZcf-oq-uy=><~|}])",  # other escapes
        )
    )
)
_DROPPED: Final = {
    code: None for code in [*range(0x20), 0xFFF9, 0xFFFA, 0xFFFB] if code not in (0x09, 0x0A)
}
"""Control characters except tab and newline (pi drops ``\\r`` separately), and the Unicode
format characters that break width computations in a terminal."""


def sanitize_output(text: str) -> str:
    """Clean command output for display and for the model, as pi does (see the module
    docstring): no ANSI sequences, no control characters but tab and newline."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    return text.translate(_DROPPED)


def _open_temp(path: str) -> IO[str]:
    return open(path, "w", encoding="utf-8", newline="")  # closed by _Output.aclose


@attrs.define
class _Output:
    """The rolling tail of a command's cleaned output, and its temp file once one is needed."""

    _decoder: codecs.IncrementalDecoder = attrs.field(
        factory=lambda: codecs.getincrementaldecoder("utf-8")("replace")
    )
    _chunks: deque[str] = attrs.field(factory=deque)
    _kept_chars: int = 0
    _raw_bytes: int = 0
    _pending: list[str] = attrs.field(factory=list)
    _file: IO[str] | None = None
    path: str | None = None
    dropped: bool = False
    """Whether the start of the output is only in the temp file."""

    def append(self, data: bytes, *, final: bool = False) -> str:
        """Add raw output; return its cleaned text."""
        self._raw_bytes += len(data)
        text = sanitize_output(self._decoder.decode(data, final))
        if self._raw_bytes > DEFAULT_MAX_BYTES:
            self._ensure_temp_file()
        if self.path is not None:
            self._pending.append(text)
        if text:
            self._chunks.append(text)
            self._kept_chars += len(text)
        # pi drops old chunks while it keeps more than the bound, which with 64KB chunks can
        # leave less than the 50KB to show (and the result then says "not truncated"); only a
        # chunk whose loss still leaves the bound in memory is dropped here.
        while (
            len(self._chunks) > 1 and self._kept_chars - len(self._chunks[0]) >= KEPT_OUTPUT_CHARS
        ):
            self._kept_chars -= len(self._chunks.popleft())
            self.dropped = True
        return text

    def text(self) -> str:
        return "".join(self._chunks)

    def _ensure_temp_file(self) -> None:
        if self.path is None:
            name = f"{USER_BASH_TEMP_PREFIX}-{secrets.token_hex(8)}.log"
            self.path = os.path.join(tempfile.gettempdir(), name)
            # What came before is still all in memory: the file starts at this threshold.
            self._pending = list(self._chunks)

    async def spill(self) -> None:
        """Write the text waiting for the temp file (in a worker thread)."""
        if self.path is None:
            return
        if self._file is None:
            self._file = await run_file_work(_open_temp, self.path)
        pending, self._pending = self._pending, []
        if pending:
            await run_file_work(self._file.writelines, pending)

    async def finish(self) -> tuple[str, bool]:
        """End the output: return the text to show and whether it was truncated."""
        self.append(b"", final=True)
        truncation = truncate_tail(self.text())
        truncated = truncation.truncated or self.dropped
        if truncated:
            self._ensure_temp_file()
        await self.spill()
        return truncation.content, truncated

    async def aclose(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            await run_file_work(file.close)


async def execute_bash_with_operations(
    command: str,
    cwd: str,
    operations: BashOperations,
    *,
    on_chunk: ChunkCallback | None = None,
    cancel_scope: trio.CancelScope | None = None,
) -> BashResult:
    """Run a user command and collect its output (pi's ``executeBashWithOperations``).

    Args:
        command: the command line, with any ``shellCommandPrefix`` already in front.
        cwd: the directory it runs in.
        operations: how to run it (:class:`~pitrio.tools.builtin.LocalBashOperations` for the
            local shell).
        on_chunk: called (and awaited, if async) with each cleaned chunk as it arrives.
        cancel_scope: cancelling it stops the command (its process group is killed) and the
            result says ``cancelled``; a cancellation from outside it propagates as usual.

    Raises:
        BashExecutionError: the command could not be started (no such cwd or shell).
    """
    scope = cancel_scope if cancel_scope is not None else trio.CancelScope()
    output = _Output()

    async def on_data(data: bytes) -> None:
        text = output.append(data)
        await output.spill()
        if on_chunk is not None and text:
            await maybe_await(on_chunk(text))

    exit_code: int | None = None
    try:
        with scope:
            exit_code = await operations.exec(command, cwd, on_data=on_data)
        cancelled = scope.cancel_called
        text, truncated = await output.finish()
        return BashResult(
            output=text,
            exit_code=None if cancelled else exit_code,
            cancelled=cancelled,
            truncated=truncated,
            full_output_path=output.path,
        )
    finally:
        with trio.CancelScope(shield=True):
            await output.aclose()
