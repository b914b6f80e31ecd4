"""The lease-renewal thread: renews a node's leases off its event loop, so a loop busy for a
few seconds (thousands of sessions created at once) does not lose them.

The thread runs the node's RENEW script every ``interval`` over its own connection
(:class:`~pitrio.host.cluster._resp.RespClient`), and hands each outcome to the node twice:
at once, in the thread (:attr:`RenewalThread.renewed`: the node moves its validity deadline,
a float on :func:`time.monotonic`), and to the loop (the node posts it with its Trio token) for
what only the loop may do (losing sessions, assigning orphans, the live node list).

Zombie guard: the loop calls :meth:`RenewalThread.beat` regularly; when its last beat is older
than ``stall_limit`` the thread stops renewing, so a node whose loop is truly hung lets its
leases lapse and other nodes take its sessions over. It renews again once the loop beats.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import structlog

from pitrio.host.cluster._resp import RespClient, RespError

log = structlog.get_logger(__name__)


@attrs.frozen
class RenewRequest:
    """What one renewal sends: the node's incarnation (``lease_value``), the sessions it renews
    and the script's keys and arguments."""

    lease_value: str
    owned: dict[str, int]
    keys: list[str]
    args: list[Any]


@attrs.frozen
class RenewOutcome:
    """One renewal's result: ``reply`` is the script's reply, or None when it failed
    (``error`` says why). ``started`` is :func:`time.monotonic` before the request was sent:
    the leases it renewed last ``lease_ttl`` from then."""

    request: RenewRequest
    started: float
    reply: Any
    error: str = ""


class RenewalThread:
    """The body of the node's renewal thread (:meth:`run`), stopped by :meth:`stop`.

    ``prepare`` (called in the thread) snapshots what to renew; ``renewed`` (called in the
    thread, must not block) receives every outcome.
    """

    def __init__(
        self,
        client: RespClient,
        script: str,
        *,
        interval: float,
        stall_limit: float,
        prepare: Callable[[], RenewRequest],
        renewed: Callable[[RenewOutcome], None],
    ) -> None:
        self._client = client
        self._script = script
        self._interval = interval
        self._stall_limit = stall_limit
        self._prepare = prepare
        self._renewed = renewed
        self._stop = threading.Event()
        self._last_beat = time.monotonic()
        self._stalled = False

    def beat(self) -> None:
        """The loop is alive (called from the loop every ``interval``)."""
        self._last_beat = time.monotonic()

    def stop(self) -> None:
        """Make :meth:`run` return (any thread); a call in progress is interrupted."""
        self._stop.set()
        self._client.interrupt()

    def run(self) -> None:
        """Renew every ``interval`` until :meth:`stop`; closes the connection on return."""
        try:
            while not self._stop.wait(self._interval):
                self.tick()
        finally:
            self._client.close()

    def tick(self) -> None:
        """One renewal, unless the loop has not beaten for ``stall_limit`` seconds."""
        stalled_for = time.monotonic() - self._last_beat
        if stalled_for > self._stall_limit:
            if not self._stalled:
                log.warning("cluster_loop_stalled", stalled_for=round(stalled_for, 1))
            self._stalled = True
            return
        self._stalled = False
        request = self._prepare()
        started = time.monotonic()
        try:
            reply = self._client.run_script(self._script, request.keys, request.args)
        except (RespError, OSError) as exc:
            if self._stop.is_set():
                return
            self._renewed(RenewOutcome(request, started, None, f"{exc!r}"))
            return
        self._renewed(RenewOutcome(request, started, reply))
