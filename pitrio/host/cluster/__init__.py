"""Several hosts sharing sessions over Redis Streams (issue #34): node membership by leases,
session ownership with fenced epochs, per-session event streams, commands routed to a
session's owner, failover.

Layering: ``cluster`` sits on nothing else in ``host`` (it does not import ``ws``; the
websocket host drives it). It needs the optional ``coredis`` dependency (``pitrio[cluster]``),
a Redis 7 server, and runs natively on Trio through coredis' anyio backend.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.host.cluster._errors import ClusterError as ClusterError
from pitrio.host.cluster._errors import CommandTimeout as CommandTimeout
from pitrio.host.cluster._errors import LeaseHeld as LeaseHeld
from pitrio.host.cluster._errors import NotAMember as NotAMember
from pitrio.host.cluster._errors import StaleOwner as StaleOwner
from pitrio.host.cluster._node import COMMAND_BUFFER as COMMAND_BUFFER
from pitrio.host.cluster._node import OWNERSHIP_BUFFER as OWNERSHIP_BUFFER
from pitrio.host.cluster._node import REPLAY_SIZE as REPLAY_SIZE
from pitrio.host.cluster._node import RESULT_TTL as RESULT_TTL
from pitrio.host.cluster._node import ClusterNode as ClusterNode
from pitrio.host.cluster._node import open_cluster_node as open_cluster_node
from pitrio.host.cluster._types import Command as Command
from pitrio.host.cluster._types import EventCursor as EventCursor
from pitrio.host.cluster._types import NodeInfo as NodeInfo
from pitrio.host.cluster._types import OwnershipEvent as OwnershipEvent
from pitrio.host.cluster._types import SessionAssigned as SessionAssigned
from pitrio.host.cluster._types import SessionLost as SessionLost
from pitrio.host.cluster._types import WatchedEvent as WatchedEvent
from pitrio.host.cluster._types import rendezvous_owner as rendezvous_owner
from pitrio.host.cluster._watch import WATCH_BUFFER as WATCH_BUFFER
from pitrio.host.cluster._watch import Watcher as Watcher

__all__ = [
    "COMMAND_BUFFER",
    "OWNERSHIP_BUFFER",
    "REPLAY_SIZE",
    "RESULT_TTL",
    "WATCH_BUFFER",
    "ClusterError",
    "ClusterNode",
    "Command",
    "CommandTimeout",
    "EventCursor",
    "LeaseHeld",
    "NodeInfo",
    "NotAMember",
    "OwnershipEvent",
    "SessionAssigned",
    "SessionLost",
    "StaleOwner",
    "WatchedEvent",
    "Watcher",
    "open_cluster_node",
    "rendezvous_owner",
]

_publish(globals(), __all__)
