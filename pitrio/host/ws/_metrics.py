"""The websocket host's counters and their Prometheus text (``GET /metrics``)."""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import Final

import trio

__all__ = ["RATE_WINDOW", "HostMetrics", "QueueSample"]

RATE_WINDOW: Final = 10.0
"""Seconds over which ``pitrio_host_events_per_second`` is averaged."""
_BUCKET: Final = 1.0
_PAGE: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_CLUSTER_HELP: Final = {
    "owned_sessions": "Sessions this node owns (holds the lease of).",
    "gateway_clients": "Client attachments to sessions another node owns.",
    "takeovers_total": "Sessions taken over from a node that died.",
    "ownership_lost_total": "Sessions dropped because another node owns them now.",
    "commands_forwarded_total": "Commands forwarded to another node (as a gateway).",
    "commands_served_total": "Commands other nodes forwarded to this one (as an owner).",
    "events_appended_total": "Events appended to session streams.",
    "append_lag_seconds": "Seconds the last append to a session stream took.",
    "stream_lag_seconds": "Seconds from an owner's append to this gateway's relay (last).",
}


def _rss() -> int:
    """This process's resident set size in bytes (0 where ``/proc`` is not there)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class QueueSample:
    """One client's numbers at scrape time: outbound queue depth, coalesced and dropped."""

    __slots__ = ("coalesced", "depth", "dropped")

    def __init__(self, depth: int, coalesced: int, dropped: int) -> None:
        self.depth = depth
        self.coalesced = coalesced
        self.dropped = dropped


class HostMetrics:
    """Counters the host and its clients add to; :meth:`render` writes them for Prometheus."""

    def __init__(self) -> None:
        self.connections_total = 0
        self.events_sent_total = 0
        self.frames_sent_total = 0
        self.commands_total = 0
        self.lag_disconnects_total = 0
        self.sessions_created_total = 0
        self.sessions_closed_total = 0
        self.coalesced_closed = 0
        """Coalesced events of subscriptions already closed (open ones are sampled)."""
        self.dropped_closed = 0
        self.errors: Counter[str] = Counter()
        self._buckets: deque[tuple[float, int]] = deque()

    def error(self, kind: str) -> None:
        """Count one error response of ``kind`` (``parse``, ``rate_limit`` ...)."""
        self.errors[kind] += 1

    def events_sent(self, count: int = 1) -> None:
        """Count events written to a client (for the total and the rate)."""
        self.events_sent_total += count
        now = trio.current_time()
        slot = now - now % _BUCKET
        buckets = self._buckets
        if buckets and buckets[-1][0] == slot:
            buckets[-1] = (slot, buckets[-1][1] + count)
        else:
            buckets.append((slot, count))
            while buckets and buckets[0][0] < slot - RATE_WINDOW:
                buckets.popleft()

    def events_per_second(self) -> float:
        """Events written per second over the last :data:`RATE_WINDOW` seconds."""
        now = trio.current_time()
        total = sum(count for slot, count in self._buckets if slot >= now - RATE_WINDOW)
        return total / RATE_WINDOW

    def render(
        self,
        *,
        sessions: int,
        clients: int,
        streaming: int,
        queues: Iterable[QueueSample],
        cluster: Mapping[str, float] | None = None,
    ) -> bytes:
        """The Prometheus text exposition (format 0.0.4); ``cluster``: a clustered host's
        gauges and counters (``pitrio_cluster_<name>``, a counter when the name ends with
        ``_total``)."""
        samples = list(queues)
        depths = [s.depth for s in samples]
        out: list[str] = []

        def metric(name: str, kind: str, help_: str, values: list[tuple[str, float]]) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")
            for labels, value in values:
                shown = int(value) if float(value).is_integer() else value
                out.append(f"{name}{labels} {shown}")

        metric("pitrio_host_sessions", "gauge", "Live sessions.", [("", sessions)])
        metric("pitrio_host_sessions_streaming", "gauge", "Sessions with a run.", [("", streaming)])
        metric("pitrio_host_clients", "gauge", "Connected websocket clients.", [("", clients)])
        metric(
            "pitrio_host_connections_total",
            "counter",
            "Websocket connections accepted.",
            [("", self.connections_total)],
        )
        metric(
            "pitrio_host_sessions_created_total",
            "counter",
            "Sessions created or reopened.",
            [("", self.sessions_created_total)],
        )
        metric(
            "pitrio_host_sessions_closed_total",
            "counter",
            "Sessions closed.",
            [("", self.sessions_closed_total)],
        )
        metric(
            "pitrio_host_events_sent_total",
            "counter",
            "Event frames written to clients.",
            [("", self.events_sent_total)],
        )
        metric(
            "pitrio_host_events_per_second",
            "gauge",
            f"Event frames written per second over the last {RATE_WINDOW:g} s.",
            [("", round(self.events_per_second(), 3))],
        )
        metric(
            "pitrio_host_commands_total",
            "counter",
            "Command frames received.",
            [("", self.commands_total)],
        )
        metric(
            "pitrio_host_outbound_queue_depth",
            "gauge",
            "Frames waiting in clients' outbound queues.",
            [('{stat="sum"}', sum(depths)), ('{stat="max"}', max(depths, default=0))],
        )
        metric(
            "pitrio_host_events_coalesced_total",
            "counter",
            "Streamed events merged for clients that fell behind.",
            [("", self.coalesced_closed + sum(s.coalesced for s in samples))],
        )
        metric(
            "pitrio_host_events_dropped_total",
            "counter",
            "Events discarded when a client was cut off for lag.",
            [("", self.dropped_closed + sum(s.dropped for s in samples))],
        )
        metric(
            "pitrio_host_lag_disconnects_total",
            "counter",
            "Clients closed with 4008 (lagged).",
            [("", self.lag_disconnects_total)],
        )
        metric(
            "pitrio_host_errors_total",
            "counter",
            "Error responses, per kind.",
            [(f'{{kind="{kind}"}}', n) for kind, n in sorted(self.errors.items())],
        )
        metric("pitrio_host_rss_bytes", "gauge", "The host's resident set size.", [("", _rss())])
        for name, value in sorted((cluster or {}).items()):
            kind = "counter" if name.endswith("_total") else "gauge"
            help_ = _CLUSTER_HELP.get(name, "A cluster node's figure.")
            metric(f"pitrio_cluster_{name}", kind, help_, [("", value)])
        return ("\n".join(out) + "\n").encode()
