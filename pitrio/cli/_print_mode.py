"""Print mode: send the prompts, write the result, exit (pi's ``runPrintMode``).

* ``text`` (``pitrio -p "prompt"``): once every prompt has run, the text blocks of the last
  assistant message go to stdout, one per line. If that message ended with an error or was
  aborted, its ``errorMessage`` goes to stderr instead and the exit status is 1. While the
  session waits to retry a transient error, one line per attempt goes to stderr
  (``retrying in 2 s (attempt 1/3): 503 ...``), so a long backoff is not silence; pi's print
  mode shows nothing.
* ``json`` (``pitrio --mode json "prompt"``): the session header, then every session event as
  it happens, one JSON object per line, exactly as pi writes them (docs/json.md).

Before the session opens, the resources (context files, skills, prompt templates, SYSTEM.md)
are loaded in a worker thread and the system prompt is built for the runtime's tools; problems
with resources are warnings on stderr. Each prompt goes to ``AgentSession.prompt`` as written:
the session runs extension commands, the ``input`` hook, built-in commands (``/context``) and
the ``/skill:name`` and ``/template`` expansion in that order (seed 004); the images of
``@file`` arguments go with the first. A prompt a built-in command answered prints its text
(text mode) or one ``{"type": "<command>", ...}`` line (json mode), and calls no model.

A prompt the session refuses (no model, no API key ...) ends the run with its message on
stderr and exit status 1. When the reader of stdout goes away (``| head``), the run is aborted
and the command exits quietly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import BinaryIO, Final, Literal, TextIO

from pitrio._exceptions import PitrioError
from pitrio.cli._coding import (
    describe_resources,
    load_session_resources,
    prompt_resources,
    resource_warnings,
)
from pitrio.cli._extensions import open_cli_session
from pitrio.cli._setup import Runtime
from pitrio.codec import dumps
from pitrio.providers import AssistantMessage, ImageContent, TextContent, open_http_client
from pitrio.sessions import (
    AgentSession,
    AgentSessionEvent,
    AutoRetryStartEvent,
    BuiltinCommandResult,
)
from pitrio.sessions.commands import Abort

PrintMode = Literal["text", "json"]

RETRY_ERROR_SHOWN: Final = 200
"""Characters of the error quoted in a retry line (bodies of HTTP errors can be long)."""


def retry_notice(event: AutoRetryStartEvent) -> str:
    """The stderr line for a retry about to wait: delay, attempt and the error, on one line."""
    error = " ".join(event.error_message.split())
    if len(error) > RETRY_ERROR_SHOWN:
        error = error[:RETRY_ERROR_SHOWN] + "..."
    delay = f"{event.delay_ms / 1000:g}"
    return f"retrying in {delay} s (attempt {event.attempt}/{event.max_attempts}): {error}"


class _RetryNotices:
    """Writes :func:`retry_notice` lines to stderr as the session announces retries."""

    def __init__(self, err: TextIO) -> None:
        self._err = err

    def on_event(self, event: AgentSessionEvent) -> None:
        if isinstance(event, AutoRetryStartEvent):
            self._err.write(retry_notice(event) + "\n")
            self._err.flush()


class _JsonLines:
    """Writes each event as a JSON line and flushes it, so a reader sees events as they come."""

    def __init__(self, out: BinaryIO, session: AgentSession) -> None:
        self._out = out
        self._session = session
        self.reader_gone = False

    def write(self, line: bytes) -> None:
        if self.reader_gone:
            return
        try:
            self._out.write(line + b"\n")
            self._out.flush()
        except BrokenPipeError:
            # Nobody reads any more: stop the run (the Abort command is sent without waiting;
            # awaiting the session's abort here would wait for this very callback to return).
            self.reader_gone = True
            _discard(self._out)
            self._session.send_nowait(Abort())

    def on_event(self, event: AgentSessionEvent) -> None:
        self.write(dumps(event))


def _discard(out: BinaryIO) -> None:
    """Point ``out``'s descriptor at /dev/null so that flushing it at exit cannot fail again."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


async def run_print_mode(
    runtime: Runtime,
    *,
    mode: PrintMode,
    prompts: Sequence[str],
    out: BinaryIO,
    err: TextIO,
    images: Sequence[ImageContent] = (),
) -> int:
    """Run ``prompts`` one after the other in a session built from ``runtime``.

    Args:
        mode: ``"text"`` (final answer only) or ``"json"`` (every event).
        prompts: the messages to send, in order, as written (the session expands skill and
            template commands and answers built-in ones).
        out: where results go (bytes, UTF-8).
        err: where errors go.
        images: sent with the first prompt (``@file`` images).

    Returns:
        The exit status: 0, or 1 when a prompt failed or (text mode) the last answer is an
        error.

    Resource handling:
        Opens the shared HTTP client and the session for the duration of the call; leaving
        (normally, on error or when cancelled) aborts what still runs and writes what the
        session appended to its file.
    """
    resources = await load_session_resources(runtime.resources)
    for warning in resource_warnings(resources):
        err.write(f"Warning: {warning}\n")
    system_prompt = resources.build_system_prompt(list(runtime.tool_names))
    if runtime.verbose:
        session_file = runtime.session_manager.get_session_file() or "(not saved)"
        startup = [
            f"Model: {runtime.model.provider}/{runtime.model.id}",
            f"Session: {session_file}",
            *describe_resources(resources, runtime.tool_names),
        ]
        err.write("".join(f"{line}\n" for line in startup))
    options = {**runtime.session_options(system_prompt), **prompt_resources(resources)}
    async with open_http_client(), open_cli_session(runtime, options) as session:
        lines: _JsonLines | None = None
        if mode == "json":
            lines = _JsonLines(out, session)
            header = session.session_manager.get_header()
            if header is not None:
                lines.write(dumps(header))
            session.subscribe(lines.on_event)
        else:
            # JSON mode already shows auto_retry_start events; text mode would be silent.
            session.subscribe(_RetryNotices(err).on_event)
        builtin_last = False
        try:
            for index, prompt in enumerate(prompts):
                if lines is not None and lines.reader_gone:
                    break
                answered = await session.prompt(
                    prompt, images=images if index == 0 and images else None
                )
                builtin_last = answered is not None
                if answered is not None:  # a built-in command: nothing was sent to the model
                    _print_builtin(answered, out, lines)
        except PitrioError as exc:
            err.write(f"{exc}\n")
            return 1
        if mode == "json" or builtin_last:
            return 0
        return _print_last_answer(session, out, err)


def _print_builtin(answered: BuiltinCommandResult, out: BinaryIO, lines: _JsonLines | None) -> None:
    """A built-in command's answer: its text (text mode) or one ``{"type": "<command>", ...}``
    JSON line (json mode; for ``/context``: ``context_to_wire`` of the view plus ``text``)."""
    if lines is not None:
        lines.write(dumps({"type": answered.name, **answered.output}))
        return
    out.write(answered.text.encode("utf-8", "replace"))
    out.flush()


def _print_last_answer(session: AgentSession, out: BinaryIO, err: TextIO) -> int:
    messages = session.messages
    last = messages[-1] if messages else None
    if not isinstance(last, AssistantMessage):
        return 0
    if last.stop_reason in ("error", "aborted"):
        err.write(f"{last.error_message or f'Request {last.stop_reason}'}\n")
        return 1
    for block in last.content:
        if isinstance(block, TextContent):
            out.write(block.text.encode("utf-8", "replace") + b"\n")
    out.flush()
    return 0
