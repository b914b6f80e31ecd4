"""The commands of pi 0.73.1's RPC mode executed on one session: shared by ``pitrio --mode rpc``
(:class:`~pitrio.host.RpcServer`, one session over stdin/stdout) and ``pitrio serve`` (the
websocket host, many sessions).

:class:`SessionCommands` turns one decoded command into the session call and its response, in
pi's shapes; how commands are read, ordered and answered on the wire is the caller's business.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, TypeAlias, cast

import attrs
import structlog
import trio

from pitrio._exceptions import UsageError, unwrap_group
from pitrio.codec import to_wire
from pitrio.host.rpc import _types as rpc
from pitrio.providers import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pitrio.sessions import AgentSession, ForkResult, ModelCycleResult, SessionMessageEntry
from pitrio.sessions import commands as cmd
from pitrio.sessions.envelope import context_answer

__all__ = [
    "BASH_UNAVAILABLE",
    "LONG_COMMANDS",
    "STREAMING_NEEDS_BEHAVIOR",
    "RpcServices",
    "SessionCommands",
    "fork_messages",
    "last_assistant_text",
    "session_stats",
]

log = structlog.get_logger(__name__)

STREAMING_NEEDS_BEHAVIOR: Final = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue "
    "the message."
)
"""pi's words for a prompt sent while the agent runs, without ``streamingBehavior``."""


PathKind: TypeAlias = Literal["session", "output"]
"""What a client-named path is for: a session file to open, or a file to write."""


@attrs.frozen(kw_only=True)
class RpcServices:
    """What the command line provides that the session layer does not know about.

    The session itself expands ``/skill:name`` and ``/template`` commands (its ``skills`` and
    ``prompt_templates``) and answers built-in commands, after the ``input`` hook.

    Attributes:
        list_commands: ``get_commands``' list (prompt templates and skills, pi's shape).
        export_html: writes the session as HTML (``export_html``); returns the path.
    """

    list_commands: Callable[[], list[dict[str, Any]]] | None = None
    export_html: Callable[[AgentSession, str | None], Awaitable[str]] | None = None
    check_path: Callable[[str, PathKind], Awaitable[str]] | None = None
    """Checks a file path a client names (``switch_session``'s ``sessionPath``,
    ``new_session``'s ``parentSession``, ``export_html``'s ``outputPath``) and returns the path
    to use, or raises :class:`~pitrio.UsageError`. ``None`` (RPC mode, where the client is the
    user at their own terminal): any path. The websocket host confines them."""


LONG_COMMANDS: Final = (
    cmd.Prompt,
    cmd.Abort,
    cmd.Compact,
    cmd.NewSession,
    cmd.SwitchSession,
    cmd.Fork,
    rpc.Clone,
    cmd.Bash,
    rpc.ExportHtml,
)
"""Commands that may take long (a run, a compaction, a move): callers run each in a task."""


def _none(answer: Any) -> Any:
    return rpc.MISSING


def _cancelled(done: bool) -> dict[str, Any]:
    return {"cancelled": not done}


def _cycled(cycled: ModelCycleResult | None) -> Any:
    if cycled is None:
        return None
    return {
        "model": to_wire(cycled.model),
        "thinkingLevel": cycled.thinking_level,
        "isScoped": cycled.is_scoped,
    }


def _forked(forked: ForkResult) -> dict[str, Any]:
    answer: dict[str, Any] = {"cancelled": forked.cancelled}
    if forked.selected_text is not None:
        answer = {"text": forked.selected_text, **answer}
    return answer


_ANSWERS: Final[dict[type[Any], Callable[[Any], Any]]] = {
    cmd.Steer: _none,
    cmd.FollowUp: _none,
    cmd.Abort: _none,
    cmd.NewSession: _cancelled,
    cmd.SetModel: to_wire,
    cmd.CycleModel: _cycled,
    cmd.SetThinkingLevel: _none,
    cmd.CycleThinkingLevel: lambda level: None if level is None else {"level": level},
    cmd.SetSteeringMode: _none,
    cmd.SetFollowUpMode: _none,
    cmd.Compact: to_wire,
    cmd.SetAutoCompaction: _none,
    cmd.SetAutoRetry: _none,
    cmd.AbortRetry: _none,
    cmd.Bash: to_wire,
    cmd.AbortBash: _none,
    cmd.SwitchSession: _cancelled,
    cmd.Fork: _forked,
    cmd.SetSessionName: _none,
}
"""A session command's answer -> the response's ``data`` in pi's shape (``MISSING``: none)."""


class SessionCommands:
    """Execute pi's RPC commands on one session.

    A command that is the session's own (:mod:`pitrio.sessions.commands`) is sent as decoded
    with :meth:`AgentSession.execute <pitrio.sessions.AgentSession.execute>` (after the
    checks RPC adds: a client's paths, a session name's emptiness), and its answer shaped by
    :data:`_ANSWERS`; RPC's own queries are answered here.

    Args:
        session: the session, already running.
        services: see :class:`RpcServices`.
    """

    __slots__ = ("services", "session")

    def __init__(self, session: AgentSession, services: RpcServices | None = None) -> None:
        self.session = session
        self.services = services if services is not None else RpcServices()

    async def _path(self, path: str | None, kind: PathKind) -> str | None:
        check = self.services.check_path
        if path is None or check is None:
            return path
        return await check(path, kind)

    async def run(
        self,
        request: rpc.RpcRequest,
        respond: Callable[[rpc.RpcResponse], Awaitable[None]],
        task_status: trio.TaskStatus[None] | None = None,
    ) -> None:
        """Execute ``request``'s command and hand its response to ``respond`` (errors too).

        ``prompt`` is answered from ``on_accepted``, before its run's events; the call returns
        when the run is over. ``task_status.started()`` is called once the command has reached
        the session (or failed before), so a caller can start the next command in order.
        """
        started = _Once(task_status.started if task_status is not None else _nothing)
        try:
            response = await self._execute(request, started, respond)
        except Exception as exc:
            error = unwrap_group(exc)
            response = rpc.RpcResponse.fail(request.id, request.name, _message(error))
        finally:
            started()  # a command that failed before reaching the session
        if response is not None:
            await respond(response)

    async def _execute(
        self,
        request: rpc.RpcRequest,
        started: Callable[[], None],
        respond: Callable[[rpc.RpcResponse], Awaitable[None]],
    ) -> rpc.RpcResponse | None:
        command = request.command
        shape = _ANSWERS.get(type(command))
        if shape is None:
            if type(command) is cmd.Prompt:
                return await self._prompt(request, command, started, respond)
            return await self._query(request, started)
        match command:  # what RPC checks before the session sees the command
            case cmd.NewSession():
                command.parent_session = await self._path(command.parent_session, "session")
            case cmd.SwitchSession():
                path = await self._path(command.session_path, "session")
                assert path is not None
                command.session_path = path
            case cmd.SetSessionName():
                command.name = command.name.strip()
                if not command.name:
                    return rpc.RpcResponse.fail(
                        request.id, request.name, "Session name cannot be empty"
                    )
        if isinstance(command, LONG_COMMANDS):
            started()
        # A command with an answer shape is one of the session's (not an RPC query).
        data = shape(await self.session.execute(cast("cmd.SessionCommand", command)))
        return rpc.RpcResponse.ok(request.id, request.name, data)

    async def _query(
        self, request: rpc.RpcRequest, started: Callable[[], None]
    ) -> rpc.RpcResponse | None:
        session = self.session
        command = request.command
        ok = functools.partial(rpc.RpcResponse.ok, request.id)
        match command:
            case rpc.GetState():
                return ok("get_state", self.state())
            case rpc.GetAvailableModels():
                return ok("get_available_models", {"models": to_wire(session.available_models)})
            case rpc.GetSessionStats():
                return ok("get_session_stats", session_stats(session))
            case rpc.ExportHtml():
                started()
                export = self.services.export_html
                if export is None:
                    raise UsageError("Export to HTML is not available")
                output = await self._path(command.output_path, "output")
                return ok("export_html", {"path": await export(session, output)})
            case rpc.Clone():
                leaf = session.session_manager.get_leaf_id()
                if leaf is None:
                    return rpc.RpcResponse.fail(
                        request.id, "clone", "Cannot clone session: no current entry selected"
                    )
                started()
                cloned = await session.execute(cmd.Fork(entry_id=leaf, position="at"))
                return ok("clone", {"cancelled": cloned.cancelled})
            case rpc.GetForkMessages():
                return ok("get_fork_messages", {"messages": fork_messages(session)})
            case rpc.GetLastAssistantText():
                last = last_assistant_text(session)
                # pi's text is undefined when there is none: `"data":{}`, not null.
                return ok("get_last_assistant_text", {} if last is None else {"text": last})
            case rpc.GetMessages():
                return ok("get_messages", {"messages": to_wire(list(session.messages))})
            case rpc.GetCommands():
                listed = self.services.list_commands
                return ok("get_commands", {"commands": listed() if listed is not None else []})
            case rpc.GetContext():
                return ok(
                    "get_context",
                    await context_answer(
                        session, full=bool(command.full), ephemeral=bool(command.ephemeral)
                    ),
                )
        raise AssertionError(f"unhandled command {command!r}")  # pragma: no cover

    async def _prompt(
        self,
        request: rpc.RpcRequest,
        command: cmd.Prompt,
        started: Callable[[], None],
        respond: Callable[[rpc.RpcResponse], Awaitable[None]],
    ) -> rpc.RpcResponse | None:
        answered = False
        # The id, not the request: the request holds the command, which holds this closure.
        request_id = request.id

        async def accepted() -> None:
            nonlocal answered
            answered = True
            await respond(rpc.RpcResponse.ok(request_id, "prompt"))

        command.on_accepted = accepted
        started()
        try:
            # The raw text: the session runs extension commands, the input hook, built-in
            # commands and the template expansion in seed 004's order.
            answered_by = await self.session.execute(command)
        except Exception as exc:
            if answered:
                # Failures after acceptance reach the client as events, never as a second
                # response to the same request.
                log.warning("rpc_prompt_failed", error=str(exc))
                return None
            raise
        if answered_by is not None:
            # A built-in command (/context): answered like a handled extension command (a
            # success response, no run) with its output as the response's data.
            return rpc.RpcResponse.ok(request.id, "prompt", answered_by.output)
        return None if answered else rpc.RpcResponse.ok(request.id, "prompt")

    def state(self) -> dict[str, Any]:
        session = self.session
        state: dict[str, Any] = {}
        if session.model is not None:
            state["model"] = to_wire(session.model)
        state.update(
            thinkingLevel=session.thinking_level,
            isStreaming=session.is_streaming,
            isCompacting=session.is_compacting,
            steeringMode=session.steering_mode,
            followUpMode=session.follow_up_mode,
        )
        if session.session_file is not None:
            state["sessionFile"] = session.session_file
        state["sessionId"] = session.session_id
        if session.session_name is not None:
            state["sessionName"] = session.session_name
        state.update(
            autoCompactionEnabled=session.auto_compaction_enabled,
            messageCount=len(session.messages),
            pendingMessageCount=session.pending_message_count,
        )
        return state


BASH_UNAVAILABLE: Final = "User bash commands are not available in this pitrio version"


def _nothing() -> None:
    pass


class _Once:
    """Calls a function the first time it is called, never again (``task_status.started``)."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn: Callable[[], object] | None = fn

    def __call__(self) -> None:
        fn, self._fn = self._fn, None
        if fn is not None:
            fn()


def _message(error: BaseException) -> str:
    message = str(error)
    if isinstance(error, UsageError) and message.startswith("Agent is already processing."):
        return STREAMING_NEEDS_BEHAVIOR
    return message


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content if block.type == "text")


def fork_messages(session: AgentSession) -> list[dict[str, str]]:
    """``get_fork_messages``: the user messages of the session with text, oldest first."""
    found = []
    for entry in session.session_manager.get_entries():
        if isinstance(entry, SessionMessageEntry) and isinstance(entry.message, UserMessage):
            text = _text_of(entry.message.content)
            if text:
                found.append({"entryId": entry.id, "text": text})
    return found


def last_assistant_text(session: AgentSession) -> str | None:
    """pi's ``getLastAssistantText``: the text blocks of the last assistant message that is
    not an empty aborted one, joined (``None`` when there is none, or it has no text)."""
    for message in reversed(session.messages):
        if isinstance(message, AssistantMessage):
            if message.stop_reason == "aborted" and not message.content:
                continue
            text = _text_of(message.content).strip()
            return text or None
    return None


def session_stats(session: AgentSession) -> dict[str, Any]:
    """pi's ``getSessionStats``: message counts, token and cost totals, context use."""
    messages = session.messages
    users = sum(isinstance(m, UserMessage) for m in messages)
    assistants = [m for m in messages if isinstance(m, AssistantMessage)]
    results = sum(isinstance(m, ToolResultMessage) for m in messages)
    calls = sum(isinstance(b, ToolCall) for m in assistants for b in m.content)
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for message in assistants:
        usage = message.usage
        tokens["input"] += usage.input
        tokens["output"] += usage.output
        tokens["cacheRead"] += usage.cache_read
        tokens["cacheWrite"] += usage.cache_write
        cost += usage.cost.total
    stats: dict[str, Any] = {}
    if session.session_file is not None:
        stats["sessionFile"] = session.session_file
    stats.update(
        sessionId=session.session_id,
        userMessages=users,
        assistantMessages=len(assistants),
        toolCalls=calls,
        toolResults=results,
        totalMessages=len(messages),
        tokens={**tokens, "total": sum(tokens.values())},
        cost=int(cost) if float(cost).is_integer() else cost,
    )
    usage_now = session.get_context_usage()
    if usage_now is not None:
        percent = usage_now.percent
        stats["contextUsage"] = {
            "tokens": usage_now.tokens,
            "contextWindow": usage_now.context_window,
            "percent": int(percent) if percent is not None and percent.is_integer() else percent,
        }
    return stats
