"""Running a client's session command on the session's node (its owner).

A websocket client's command for a session live in this host runs here; in a cluster, a
gateway forwards the command to the owner, which runs it with the same checks
(:mod:`pitrio.host.ws._cluster`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import attrs

from pitrio.host.rpc import _types as rpc
from pitrio.host.rpc._commands import LONG_COMMANDS
from pitrio.host.rpc._types import RpcResponse
from pitrio.host.ws._host import CommandRefused, HostApi, LiveSession
from pitrio.sessions import commands as cmd

__all__ = ["ACTING_COMMANDS", "dispatch_session_command"]

ACTING_COMMANDS: Final = (cmd.Prompt, cmd.Steer, cmd.FollowUp, cmd.Bash)
"""Commands that make a session act (run its tools or a shell): a client token may send
them only to a session opened with its own tools (:meth:`HostApi.session_policy_allows`)."""


def _opens_a_file(command: rpc.RpcCommand) -> bool:
    """Whether the command names a session file to open (``switch_session``, or
    ``new_session`` with a ``parentSession``)."""
    return isinstance(command, cmd.SwitchSession) or (
        isinstance(command, cmd.NewSession) and command.parent_session is not None
    )


async def dispatch_session_command(
    host: HostApi,
    token: str,
    request: rpc.RpcRequest,
    session_id: str,
    respond: Callable[[RpcResponse], Awaitable[None]],
    respond_nowait: Callable[[RpcResponse], Awaitable[None]],
    log: Any,
) -> None:
    """Run ``request`` in the live session ``session_id`` for ``token``.

    A short command answers through ``respond`` before this returns; a long one (prompt,
    compact ...) starts in the session's nursery, this returns once it reached the session,
    and it answers through ``respond_nowait`` (which must not block: the session's tasks never
    wait for a client).

    Raises:
        CommandRefused: not this token's session, a file-opening command from a client token,
            a long command while draining, an acting command the token's grant does not allow.
    """
    name, command = request.name, request.command
    live = host.live_session(token, session_id)
    if _opens_a_file(command) and not host.tokens.is_host(token):
        # The file could be another token's session: its visibility is decided by
        # open_session, which knows who may see what; a path cannot carry that.
        raise CommandRefused(
            "forbidden",
            f"{name} with a session file is not available to client tokens: "
            "use open_session (or create_session) instead",
        )
    if host.draining and isinstance(command, LONG_COMMANDS):
        raise CommandRefused("draining", "The host is shutting down")
    if isinstance(command, ACTING_COMMANDS) and not host.tokens.is_host(token):
        request = _confined(host, token, request, live)
    bound = log.bind(session=session_id, command=name)
    if isinstance(command, LONG_COMMANDS):
        await live.start_long(request, respond_nowait, bound)
    else:
        await live.commands.run(request, respond)


def _confined(
    host: HostApi, token: str, request: rpc.RpcRequest, live: LiveSession
) -> rpc.RpcRequest:
    """``request`` (a command that makes the session act) as a client token may send
    it: refused in a session opened with tools this token was not granted, a user
    ``bash`` refused unless the token has bash, and run by the session's sandbox."""
    command = request.command
    if not host.session_policy_allows(token, live):
        raise CommandRefused(
            "forbidden",
            f"{request.name} is not available to this token in session {live.id}: it was "
            "opened with tools this token was not granted (close it and open it again "
            "with this token)",
        )
    if isinstance(command, cmd.Bash):
        if "bash" not in (live.request.tools or ()):
            raise CommandRefused("forbidden", "bash is not granted to this token")
        if live.bash_operations is not None:
            request = attrs.evolve(
                request, command=attrs.evolve(command, operations=live.bash_operations)
            )
    return request
