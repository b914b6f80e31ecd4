"""The cluster layer's data: nodes, ownership events, routed commands, and rendezvous placement."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Literal, TypeAlias

import attrs


@attrs.frozen
class NodeInfo:
    """A live member of the cluster."""

    node_id: str
    """Unique among live nodes; the name in every per-node key."""
    address: str
    """Its public websocket address (``ws://host:port``), so clients can be sent to it."""


@attrs.frozen
class SessionAssigned:
    """Rendezvous now places an unowned session on this node: the host should ``claim`` it.

    Sent once the previous owner's lease has expired (or it released it); a session whose owner
    is still live is never assigned elsewhere.
    """

    session_id: str
    type: Literal["session_assigned"] = "session_assigned"


@attrs.frozen
class SessionLost:
    """This node no longer owns the session (its lease expired, was taken, or could not be
    renewed): every fenced write for it at ``epoch`` now raises :class:`StaleOwner`."""

    session_id: str
    epoch: int
    type: Literal["session_lost"] = "session_lost"


OwnershipEvent: TypeAlias = SessionAssigned | SessionLost


@attrs.frozen
class Command:
    """A command routed to this node, the owner of ``session_id``.

    ``reply`` stores the result under the request id (the first stored result wins: a retried
    request gets it instead of running again), sends it to the gateway(s) that asked, and only
    then acknowledges the stream entry. Call it exactly once; a second call does nothing. A
    command never replied to stays pending and is run again by the session's next owner.
    """

    session_id: str
    request_id: str
    """The idempotency key, chosen by the client."""
    payload: bytes
    reply: Callable[[bytes], Awaitable[None]] = attrs.field(repr=False)


EventCursor: TypeAlias = tuple[int, int]
"""``(epoch, seq)``: a position in a session's event stream (its entry id ``epoch-seq``)."""

WatchedEvent: TypeAlias = tuple[str, int, int, bytes]
"""``(session_id, epoch, seq, payload)`` as a watcher yields it."""


def _weight(node_id: str, session_id: str) -> int:
    digest = hashlib.blake2b(node_id.encode() + b"\0" + session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_owner(session_id: str, nodes: Iterable[NodeInfo]) -> NodeInfo:
    """Pick the node a session belongs on: highest random weight over ``nodes``.

    The weight is blake2b of ``node_id`` and ``session_id`` (stable across processes and
    Python versions, unlike ``hash``); ties break on the node id. Removing a node moves only
    the sessions it had; adding one moves only the sessions it now wins.

    Raises:
        ValueError: ``nodes`` is empty.
    """
    return max(nodes, key=lambda node: (_weight(node.node_id, session_id), node.node_id))
