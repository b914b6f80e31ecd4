"""The cluster layer's errors (drawn in ``pitrio._exceptions``' tree)."""

from __future__ import annotations

from pitrio._exceptions import PitrioError


class ClusterError(PitrioError):
    """Root of the errors the Redis cluster layer raises."""


class LeaseHeld(ClusterError):
    """A live other node holds the lease asked for (a session's, or a node id's membership).

    Attributes:
        name: the session id (or node id) whose lease is held.
        holder: the node id holding it.
    """

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(f"{name!r} is held by live node {holder!r}")
        self.name = name
        self.holder = holder


class StaleOwner(ClusterError):
    """A fenced write by a node that no longer owns the session at that epoch.

    Attributes:
        session_id: the session written to.
        epoch: the epoch the writer believed it held.
    """

    def __init__(self, session_id: str, epoch: int) -> None:
        super().__init__(f"not the owner of session {session_id!r} at epoch {epoch}")
        self.session_id = session_id
        self.epoch = epoch


class NotAMember(ClusterError):
    """This node's membership lease is gone (expired, or Redis unreachable): it cannot claim."""


class CommandTimeout(ClusterError, TimeoutError):
    """No reply to a cluster command within its timeout.

    The command may still run (once: the request id is its idempotency key); retry it with the
    same request id to get its result.

    Attributes:
        session_id: the session the command was for.
        request_id: its idempotency key.
    """

    def __init__(self, session_id: str, request_id: str) -> None:
        super().__init__(f"no reply to {request_id!r} for session {session_id!r}")
        self.session_id = session_id
        self.request_id = request_id


class ClusterUnavailable(ClusterError, ConnectionError):
    """Redis could not be reached, or failed a request (out of memory, a read-only replica ...).

    A node that cannot reach Redis loses its sessions at its next renewal; a write that raised
    this may or may not have been applied.
    """
