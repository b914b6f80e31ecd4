"""pi 0.73.1's RPC mode (``docs/rpc.md``) over a pair of byte streams: ``pitrio --mode rpc``.

::

    RpcServer.serve (nursery)
     |- reader       stdin -> LineSplitter -> parse -> decode -> one command at a time
     |                 quick commands answered inline, in line order; long ones (prompt,
     |                 abort, compact, session moves, export, bash) in a task each, at most
     |                 COMMANDS_IN_FLIGHT at once (the reader then waits: backpressure)
     |- session listener (session.subscribe, awaited in order): event -> output
     `- writer       output channel (OUTPUT_BUFFER lines) -> stdout, one line per write

Every record on the output is one JSON object and a LF, written by the one writer task, so
records never interleave. Events are written from the session's listener, which the session
awaits: a command's response therefore follows the events it caused, in pi's order
(``queue_update`` before ``steer``'s response), and ``prompt`` is answered from
``on_accepted``, after its checks and before ``agent_start``, as pi answers from
``preflightResult``.

Commands are executed by :class:`~pitrio.host.rpc._commands.SessionCommands`, which the
websocket host shares. What pitrio does differently from pi is listed in the README ("RPC
mode"): a command with a field of the wrong type is refused with an error naming the field
(pi fails in a ``TypeError``), a record that is not an object (``null`` too, which crashes
pi) gets ``Unknown command: undefined``, a record over :data:`~pitrio.host.MAX_LINE_BYTES` is
refused, and the extension-UI sub-protocol sends nothing while pitrio has no extensions.
"""

from __future__ import annotations

from typing import Final

import structlog
import trio

from pitrio.codec import dumps
from pitrio.host.rpc import _types as rpc
from pitrio.host.rpc._commands import LONG_COMMANDS, RpcServices, SessionCommands
from pitrio.host.rpc._jsonl import (
    MAX_LINE_BYTES,
    JsonParseError,
    LineSplitter,
    LineTooLong,
    parse_json_line,
)
from pitrio.sessions import AgentSession, AgentSessionEvent

__all__ = [
    "COMMANDS_IN_FLIGHT",
    "OUTPUT_BUFFER",
    "READ_CHUNK",
    "SHUTDOWN_GRACE",
    "RpcServer",
    "RpcServices",
]

log = structlog.get_logger(__name__)

OUTPUT_BUFFER: Final = 256
"""Records waiting for the stdout writer. A streamed reply is one record per token; 256 lets
the session run ahead of a pipe that is momentarily full, and a reader that stops reading
slows the session (pi's stdout would grow without bound instead)."""
COMMANDS_IN_FLIGHT: Final = 64
"""Long commands (prompt, compact, abort ...) handled at once; beyond that the reader stops
reading stdin until one finishes, so a flood of commands cannot grow memory."""
READ_CHUNK: Final = 65536
"""Bytes read from stdin per receive."""
SHUTDOWN_GRACE: Final = 5.0
"""Seconds the commands still running at end of input get to finish after the session was
aborted (their responses are written); then they are cancelled."""


class RpcServer:
    """Serve pi's RPC protocol for one session over a byte stream pair.

    Args:
        session: the session, already running.
        services: see :class:`RpcServices`.
        max_line: the longest record accepted (bytes).

    Resource handling:
        :meth:`serve` owns its tasks and returns when the input ends (after aborting the
        session and letting running commands answer, within :data:`SHUTDOWN_GRACE`) or
        when the output breaks. It closes neither stream nor the session.
    """

    def __init__(
        self,
        session: AgentSession,
        services: RpcServices | None = None,
        *,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self._session = session
        self._services = services if services is not None else RpcServices()
        self._max_line = max_line
        send, receive = trio.open_memory_channel[bytes](OUTPUT_BUFFER)
        self._out = send
        self._out_receive = receive
        self._limiter = trio.CapacityLimiter(COMMANDS_IN_FLIGHT)
        self._commands = SessionCommands(session, self._services)

    # ------------------------------------------------------------------ serving

    async def serve(self, receive: trio.abc.ReceiveStream, send: trio.abc.SendStream) -> None:
        """Read commands from ``receive`` and write responses and events to ``send``."""
        async with trio.open_nursery() as nursery:
            writer_done = trio.Event()
            nursery.start_soon(self._write, send, nursery.cancel_scope, writer_done)
            unsubscribe = self._session.subscribe(self._on_event)
            try:
                async with trio.open_nursery() as commands:
                    await self._read(receive, commands)
                    # End of input (pi shuts down): stop what runs, let the commands answer.
                    commands.cancel_scope.deadline = trio.current_time() + SHUTDOWN_GRACE
                    await self._session.abort()
            finally:
                unsubscribe()
                self._out.close()
            await writer_done.wait()

    async def _write(
        self, stream: trio.abc.SendStream, scope: trio.CancelScope, done: trio.Event
    ) -> None:
        try:
            async for line in self._out_receive:
                await stream.send_all(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.info("rpc_output_closed")
            scope.cancel()  # nobody reads the output: stop serving
        finally:
            done.set()

    async def _read(self, stream: trio.abc.ReceiveStream, commands: trio.Nursery) -> None:
        splitter = LineSplitter(self._max_line)
        while True:
            data = await stream.receive_some(READ_CHUNK)
            records = splitter.feed(bytes(data)) if data else splitter.end()
            for record in records:
                await self.handle_record(record, commands)
            if not data:
                return

    async def output(self, record: bytes) -> None:
        """Queue one JSON record (without its LF) for the writer."""
        await self._out.send(record + b"\n")

    async def _respond(self, response: rpc.RpcResponse) -> None:
        await self.output(response.encode())

    async def _on_event(self, event: AgentSessionEvent) -> None:
        await self.output(dumps(event))

    # ------------------------------------------------------------------ records

    async def handle_record(self, record: bytes | LineTooLong, commands: trio.Nursery) -> None:
        """Answer one input record (a command, or an error for what is not one)."""
        if isinstance(record, LineTooLong):
            await self._respond(
                rpc.RpcResponse.fail(
                    rpc.MISSING,
                    "parse",
                    f"Failed to parse command: Line of {record.size} bytes exceeds the limit "
                    f"of {self._max_line} bytes",
                )
            )
            return
        try:
            parsed = parse_json_line(record.decode("utf-8", "replace"))
        except JsonParseError as exc:
            message = f"Failed to parse command: {exc.message}"
            await self._respond(rpc.RpcResponse.fail(rpc.MISSING, "parse", message))
            return
        if isinstance(parsed, dict) and parsed.get("type") == "extension_ui_response":
            # An answer to an extension's dialog (pitrio.extensions.UiBridge, the session's
            # ctx.ui in RPC mode); one matching no pending request is dropped, as pi does.
            feed = getattr(getattr(self._session.hooks, "ui", None), "feed", None)
            if callable(feed):
                feed(parsed)
            return
        try:
            request = rpc.decode_command(parsed)
        except rpc.UnknownCommand as exc:
            await self._respond(rpc.RpcResponse.fail(rpc.MISSING, exc.type, str(exc)))
            return
        except rpc.InvalidCommand as exc:
            await self._respond(rpc.RpcResponse.fail(exc.id, exc.command, str(exc)))
            return
        if isinstance(request.command, LONG_COMMANDS):
            # A token of its own borrows the slot: a command is not always hashable (a
            # prompt's images are dicts).
            borrower = object()
            await self._limiter.acquire_on_behalf_of(borrower)
            await commands.start(self._run_long, request, borrower)
        else:
            await self._run(request)

    async def _run_long(
        self, request: rpc.RpcRequest, borrower: object, *, task_status: trio.TaskStatus[None]
    ) -> None:
        try:
            await self._run(request, task_status)
        finally:
            self._limiter.release_on_behalf_of(borrower)

    async def _run(
        self, request: rpc.RpcRequest, task_status: trio.TaskStatus[None] | None = None
    ) -> None:
        await self._commands.run(request, self._respond, task_status)
