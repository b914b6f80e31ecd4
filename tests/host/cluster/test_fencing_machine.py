"""A Hypothesis state machine over claim / renew / release / expire / write, against a real Redis: a
stale owner never writes after a takeover (issue #34's property test).

Several simulated nodes (real :class:`ClusterNode` objects without their background tasks, so
the machine decides when each renews) share one session. Leases never run out by time in
here (a long TTL): expiry is the machine deleting lease keys, as a TTL running out would.
Hypothesis drives the rules from its own (sync) thread; the nodes live in one Trio run in a
second thread, reached through ``trio.from_thread``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import coredis
import trio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from pitrio.host.cluster import ClusterNode, LeaseHeld, NotAMember, StaleOwner

NODES = ["n0", "n1", "n2"]
SESSION = "s"


class Portal:
    """Runs coroutines in a Trio run of its own thread, holding one coredis client."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.redis: coredis.Redis[bytes] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        async with coredis.Redis.from_url(self.url) as redis:
            self.redis = redis
            self._token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as self._scope:
                self._ready.set()
                await trio.sleep_forever()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(timeout=10)

    def stop(self) -> None:
        assert self._scope is not None
        trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(timeout=10)

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Await ``fn(*args)`` in the Trio thread (a coredis command is an awaitable, not a
        coroutine function, so it is wrapped)."""

        async def call() -> Any:
            return await fn(*args)

        return trio.from_thread.run(call, trio_token=self._token)

    def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)


@contextmanager
def portal_to(url: str) -> Iterator[Portal]:
    portal = Portal(url)
    portal.start()
    try:
        yield portal
    finally:
        portal.stop()


class FencingMachine(RuleBasedStateMachine):
    portal: Portal

    @initialize()
    def start(self) -> None:
        self.prefix = f"m{uuid.uuid4().hex[:12]}"
        self.nodes: dict[str, ClusterNode] = {}
        for name in NODES:
            node = self.portal.run_sync(
                lambda name=name: ClusterNode(
                    self.portal.redis,  # type: ignore[arg-type]
                    node_id=name,
                    address=f"ws://{name}",
                    lease_ttl=600.0,
                    prefix=self.prefix,
                    replay_size=1024,
                    result_ttl=60.0,
                )
            )
            self.portal.run(node._register)
            self.nodes[name] = node
        self.member = dict.fromkeys(NODES, True)
        self.holder: str | None = None
        """The node whose lease on the session is in Redis now (None: no lease)."""
        self.epoch = 0
        """The session's newest epoch."""
        self.held_epoch: dict[str, int | None] = dict.fromkeys(NODES)
        """The epoch each node last claimed the session at (it may be stale)."""
        self.seq = 0
        self.written: list[tuple[int, int]] = []
        self.takeover_at: list[int] = []
        """Indices into ``written`` where a new epoch began."""

    def _delete(self, *keys: str) -> None:
        self.portal.run(self.portal.redis.delete, list(keys))  # type: ignore[union-attr]

    @rule(name=st.sampled_from(NODES))
    def claim(self, name: str) -> None:
        node = self.nodes[name]
        try:
            epoch = self.portal.run(node.claim, SESSION)
        except LeaseHeld as exc:
            assert self.holder is not None and self.holder != name
            assert self.member[self.holder]
            assert exc.holder == self.holder
            return
        except NotAMember:
            assert not self.member[name]
            return
        assert self.member[name]
        if self.holder == name:
            assert epoch == self.held_epoch[name] == self.epoch
        else:
            assert self.holder is None or not self.member[self.holder]
            assert epoch == self.epoch + 1
            self.epoch = epoch
            self.takeover_at.append(len(self.written))
        self.holder = name
        self.held_epoch[name] = epoch

    @rule(name=st.sampled_from(NODES))
    def renew(self, name: str) -> None:
        node = self.nodes[name]
        self.portal.run(node._renew)
        # A renewal that finds the membership gone registers again.
        self.member[name] = True
        assert self.portal.run_sync(node.owns, SESSION) == (self.holder == name)

    @rule(name=st.sampled_from(NODES))
    def release(self, name: str) -> None:
        self.portal.run(self.nodes[name].release, SESSION)
        if self.holder == name:
            self.holder = None

    @rule()
    def expire_session_lease(self) -> None:
        self._delete(f"{self.prefix}:s:{SESSION}:lease")
        self.holder = None

    @rule(name=st.sampled_from(NODES))
    def expire_node(self, name: str) -> None:
        """The node stops renewing: its membership and its session lease run out."""
        self._delete(f"{self.prefix}:n:{name}:lease")
        self.member[name] = False
        if self.holder == name:
            self._delete(f"{self.prefix}:s:{SESSION}:lease")
            self.holder = None

    @precondition(lambda self: any(e is not None for e in self.held_epoch.values()))
    @rule(data=st.data(), count=st.integers(1, 3))
    def write(self, data: st.DataObject, count: int) -> None:
        name = data.draw(st.sampled_from([n for n, e in self.held_epoch.items() if e is not None]))
        epoch = self.held_epoch[name]
        assert epoch is not None
        batch = [(self.seq + 1 + k, f"{name}:{epoch}".encode()) for k in range(count)]
        should_write = self.holder == name and epoch == self.epoch
        try:
            self.portal.run(self.nodes[name].append_events, SESSION, epoch, batch)
        except StaleOwner:
            assert not should_write, "the owner's write was refused"
            return
        assert should_write, f"stale node {name} at epoch {epoch} wrote (newest {self.epoch})"
        self.seq += count
        self.written += [(epoch, seq) for seq, _ in batch]

    @invariant()
    def the_stream_holds_only_the_owners_writes(self) -> None:
        if not hasattr(self, "prefix"):
            return
        entries = self.portal.run(
            self.portal.redis.xrange,  # type: ignore[union-attr]
            f"{self.prefix}:s:{SESSION}:events",
        )
        ids = [tuple(int(p) for p in e.identifier.decode().split("-")) for e in entries]
        assert ids == self.written
        # After a takeover every later entry carries an epoch at least as new.
        epochs = [epoch for epoch, _ in ids]
        assert epochs == sorted(epochs)
        for (epoch, _), entry in zip(ids, entries, strict=True):
            assert entry.field_values[b"p"].endswith(f":{epoch}".encode())


def test_a_stale_owner_never_writes_after_a_takeover(redis_servers):
    """Whatever the order of claims, renewals, expiries and writes, every entry in the stream
    was written by the session's owner at the newest epoch of its time, and every write by a
    node that lost the session raised StaleOwner."""
    with portal_to(redis_servers.main.url) as portal:
        FencingMachine.portal = portal
        run_state_machine_as_test(
            FencingMachine,
            settings=settings(max_examples=40, stateful_step_count=30, deadline=None),
        )
