"""Several hosts sharing sessions over Redis Streams (issue #34): node membership by leases,
session ownership with fenced epochs, per-session event streams, commands routed to a
session's owner, failover.

Layering: ``cluster`` sits on nothing else in ``host`` (it does not import ``ws``; the
websocket host drives it). It needs the optional ``coredis`` dependency (``pitrio[cluster]``),
a Redis 6.2 or newer server (tested on 7.0; one instance, not Redis Cluster: the Lua scripts
name keys they derive), and runs natively on Trio through coredis' anyio backend.

For the host that drives it (``pitrio serve --cluster``), the contract in short:

- ``async with open_cluster_node(url, address=...) as node``: membership, renewal every
  ``lease_ttl / 3`` (all session leases in the same script), ``node.live_nodes()`` and
  ``node.owner_of(session_id)`` are synchronous reads of the view the last renewal fetched
  (``await node.refresh()`` renews and refetches now).
- Ownership: ``epoch = await node.claim(sid)`` (``LeaseHeld`` if a live other node holds it,
  ``NotAMember`` if this node's membership is gone); ``node.owns(sid)``, ``node.epoch_of(sid)``,
  ``await node.release(sid)`` (hand a live session over), ``await node.close(sid)`` (closed
  here: out of the registry, no node takes it over), ``await node.forget(sid)`` (a deleted
  session: its stream and registry entry gone). ``node.ownership_events()`` is a channel of
  ``SessionAssigned(sid)`` (claim it: reload from the shared session file, close the
  interrupted turn, continue the seq at the new epoch) and ``SessionLost(sid, epoch)`` (stop
  the session's actor; its writes already refuse).
  Claiming again after a loss always gives a new epoch. Two nodes whose membership views
  differ for a moment can both be assigned a session: one claim wins, the other raises
  ``LeaseHeld`` (ignore it). ``await node.holder_of(sid)`` reads who holds a lease now.
- Events: ``await node.append_events(sid, epoch, [(seq, payload), ...])``, one round trip per
  batch; ``StaleOwner`` when fenced (stop the session), ``UsageError`` for a seq not above the
  last. Seqs must increase within an epoch; across epochs an entry id ``epoch-seq`` is above
  every older epoch's, so the new owner may continue its seq from the session file.
  ``await node.read_events(sid, after=(epoch, seq) | None)`` -> ``[(epoch, seq, payload)]`` or
  None (events after the cursor were trimmed: send a snapshot). The stream keeps
  ``replay_size`` events.
- Gateway reads: ``async with node.watch() as watcher``; ``watcher.add(sid, after=...)`` and
  ``watcher.remove(sid)`` are synchronous; ``async for sid, epoch, seq, payload in watcher``.
  One task per watcher does one blocking XREAD for all watched streams; open one watcher per
  node and fan out to clients yourself (per-client bounds, coalescing, ``lagged``). A watcher
  that falls more than the replay size behind skips ahead: the seq jumps, send a snapshot.
- Commands: ``await node.send_command(sid, request_id, payload, timeout)`` routes to the lease
  holder (or, with no lease, the rendezvous node); ``CommandTimeout`` when no reply: retry with
  the same request id (the result, once stored, is returned without running again). Replies
  come back on the gateway's own reply stream. The owner side: ``async for command in
  node.commands()`` then ``await command.reply(result)`` exactly once. A command can arrive for
  a session nobody live holds (routed by placement): claim it, then run it (one for a session
  another live node holds is forwarded there by the node itself). When a node claims a
  session from a dead owner it adopts that owner's pending commands for it; they come out of
  ``node.commands()`` too, as do the commands an earlier incarnation of the same node id took
  and never answered.
- ``node.metrics()`` for ``/metrics``.
- Time: leases are renewed by a thread of the node (its own Redis connection, so a busy event
  loop keeps them; a loop silent for ``stall_limit`` lets them lapse) and checked locally
  against :func:`time.monotonic`; run nodes on the real clock (an autojump clock races ahead
  while a task waits on Redis).
- Test hook: ``node._abandon()`` makes the exit skip releasing (as ``kill -9`` would).
  ``tests/redis_server.py`` starts throwaway redis-server processes (``RedisServer``, the
  ``redis_servers`` fixture).
"""

from __future__ import annotations

try:
    import coredis as _coredis
except ImportError as _missing:  # pragma: no cover - only without the optional extra
    raise ImportError(
        "pitrio.host.cluster needs coredis: pip install 'pitrio[cluster]'"
    ) from _missing

from pitrio._publish import publish as _publish
from pitrio.host.cluster._commands import COMMAND_BUFFER as COMMAND_BUFFER
from pitrio.host.cluster._errors import ClusterError as ClusterError
from pitrio.host.cluster._errors import ClusterUnavailable as ClusterUnavailable
from pitrio.host.cluster._errors import CommandTimeout as CommandTimeout
from pitrio.host.cluster._errors import LeaseHeld as LeaseHeld
from pitrio.host.cluster._errors import NotAMember as NotAMember
from pitrio.host.cluster._errors import StaleOwner as StaleOwner
from pitrio.host.cluster._node import OWNERSHIP_BUFFER as OWNERSHIP_BUFFER
from pitrio.host.cluster._node import REPLAY_SIZE as REPLAY_SIZE
from pitrio.host.cluster._node import RESULT_TTL as RESULT_TTL
from pitrio.host.cluster._node import STALL_LIMIT as STALL_LIMIT
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
    "STALL_LIMIT",
    "WATCH_BUFFER",
    "ClusterError",
    "ClusterNode",
    "ClusterUnavailable",
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

del _coredis
_publish(globals(), __all__)
