"""A host as one node of a cluster, over an in-memory cluster (``tests/host/ws/cluster_fake``):
gateway and owner in one process, two hosts sharing a session folder and a tokens file.

The same paths over Redis, in three ``pitrio serve --cluster`` processes with one killed, are
``tests/host/cluster/test_cluster_failover.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from pitrio.host import Host
from pitrio.host.load._ws import parse_metrics
from pitrio.host.ws._host import LiveSession
from pitrio.host.ws._tokens import Tokens
from tests.host.serve_helpers import Client, http_get, open_client, open_test_host, text_of_deltas
from tests.host.ws.cluster_fake import FakeCluster, FakeNode, SessionLost

TOKEN = "cluster-host-token"


def _is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "agent_end"


async def _metrics(host: Host) -> dict[str, float]:
    status, _, body = await http_get(host, f"/metrics?token={host.token}")
    assert status == 200
    return parse_metrics(body.decode())


def _pair(tmp_path: Path, cluster: FakeCluster, **options: Any) -> tuple[Any, Any]:
    shared = {
        "token": TOKEN,
        "session_dir": str(tmp_path / "sessions"),
        "state_dir": str(tmp_path / "state"),
        **options,
    }
    os.makedirs(tmp_path / "a", exist_ok=True)
    os.makedirs(tmp_path / "b", exist_ok=True)
    return (
        open_test_host(tmp_path / "a", cluster=cluster.node("a"), **shared),
        open_test_host(tmp_path / "b", cluster=cluster.node("b"), **shared),
    )


def _seqs_follow(frames: list[dict[str, Any]]) -> bool:
    seqs = [f["seq"] for f in frames if "seq" in f and f.get("type") != "response"]
    return seqs == list(range(seqs[0], seqs[0] + len(seqs)))


async def test_a_gateway_forwards_commands_and_relays_the_owners_events(tmp_path: Path) -> None:
    """A session created on node a, opened and prompted through node b: b forwards the
    prompt to a (the owner), relays a's events from the stream with a's epoch and seqs (no
    gap), answers a short command through a, and counts itself a gateway in /metrics."""
    cluster = FakeCluster()
    first, second = _pair(tmp_path, cluster)
    async with first as a, second as b, open_client(a) as on_a, open_client(b) as on_b:
        created = await on_a.call({"type": "create_session"})
        sid = created["data"]["session"]
        assert created["data"]["epoch"] == 1 and cluster.leases[sid] == ("a", 1)
        opened = await on_b.call({"type": "open_session", "session": sid})
        assert opened["success"] is True, opened
        assert opened["data"]["epoch"] == 1
        assert sid in a.sessions and sid not in b.sessions
        await on_b.send({"type": "prompt", "session": sid, "message": "hi", "id": "p"})
        frames = await on_b.until(_is_end)
        response = next(f for f in frames if f.get("type") == "response")
        assert response["success"] is True and response["session"] == sid
        events = [f for f in frames if f.get("type") != "response"]
        assert all(f["session"] == sid and f["epoch"] == 1 for f in events)
        assert _seqs_follow(events)
        assert text_of_deltas(frames) == "You said: hi"
        state = await on_b.call({"type": "get_state", "session": sid})
        assert state["success"] is True and state["data"]["messageCount"] == 2
        gateway, owner = await _metrics(b), await _metrics(a)
        assert gateway["pitrio_cluster_gateway_clients"] == 1
        assert gateway["pitrio_cluster_commands_forwarded_total"] >= 3
        assert gateway["pitrio_cluster_owned_sessions"] == 0
        assert owner["pitrio_cluster_owned_sessions"] == 1
        assert owner["pitrio_cluster_events_appended_total"] >= len(events)
        assert owner["pitrio_host_rss_bytes"] > 0
        closed = await on_b.call({"type": "close_session", "session": sid})
        assert closed["success"] is True
        if not any(f.get("type") == "session_closed" for f in on_b.seen):
            await on_b.until(lambda f: f.get("type") == "session_closed")
        assert sid not in a.sessions
        with trio.fail_after(10):
            # Released by the owner's stream writer after its last append: no event of the
            # host's marks it, so it is polled (bounded by the deadline).
            while sid in cluster.leases:  # noqa: ASYNC110
                await trio.sleep(0.01)


async def test_a_resume_through_a_gateway_reads_the_stream_or_gets_a_snapshot(
    tmp_path: Path,
) -> None:
    """resume_from on a gateway replays the stream after the cursor; a cursor trimmed from
    the stream gets a snapshot (at the session's last seq) instead."""
    cluster = FakeCluster(replay=8)
    first, second = _pair(tmp_path, cluster)
    async with first as a, second as b, open_client(a) as on_a:
        created = await on_a.call({"type": "create_session"})
        sid = created["data"]["session"]
        await on_a.send({"type": "prompt", "session": sid, "message": "one", "id": "p1"})
        ended = await on_a.until(_is_end)
        last = ended[-1]["seq"]
        async with open_client(b) as on_b:
            resumed = await on_b.call(
                {"type": "open_session", "session": sid, "epoch": 1, "resume_from": last - 3}
            )
            assert resumed["success"] is True
            replayed = [await on_b.frame() for _ in range(3)]
            assert [f["seq"] for f in replayed] == [last - 2, last - 1, last]
        async with open_client(b) as on_b:
            stale = await on_b.call(
                {"type": "open_session", "session": sid, "epoch": 1, "resume_from": 1}
            )
            assert stale["success"] is True
            snapshot = await on_b.frame()
            assert snapshot["type"] == "snapshot" and snapshot["seq"] == last
            assert len(snapshot["messages"]) == 2
            state = await on_b.call({"type": "get_state", "session": sid})
            assert state["data"]["messageCount"] == 2


async def test_an_owner_whose_append_is_refused_drops_its_copy(tmp_path: Path) -> None:
    """Another node took the lease (a newer epoch): the old owner's next append is refused,
    and it stops serving the session at once (its clients are told it closed)."""
    cluster = FakeCluster()
    first, second = _pair(tmp_path, cluster)
    async with first as a, second as _b, open_client(a) as on_a:
        created = await on_a.call({"type": "create_session"})
        sid = created["data"]["session"]
        live = a.sessions[sid]
        cluster.leases[sid] = ("b", 2)  # taken over while a was still running it
        await on_a.send({"type": "prompt", "session": sid, "message": "late", "id": "p"})
        with trio.fail_after(10):
            await on_a.until(lambda f: f.get("type") == "session_closed")
            await live.closed.wait()
        assert live.dropped and sid not in a.sessions
        assert (await _metrics(a))["pitrio_cluster_ownership_lost_total"] == 1
        assert all(e.epoch == 1 for e in cluster.streams[sid])


async def test_a_token_created_on_one_node_works_on_the_other(tmp_path: Path) -> None:
    """The nodes share the tokens file: a client token node a created authenticates on node
    b, and a session it created on a, granted to it there, opens through b."""
    cluster = FakeCluster()
    first, second = _pair(tmp_path, cluster)
    async with first as a, second as b, open_client(a) as on_a:
        made = await on_a.call({"type": "create_token"})
        token = made["data"]["token"]
        async with open_client(a, token=token) as client_a:
            created = await client_a.call({"type": "create_session"})
            sid = created["data"]["session"]
        async with open_client(b, token=token) as client_b:
            opened = await client_b.call({"type": "open_session", "session": sid})
            assert opened["success"] is True, opened


def test_tokens_saved_by_two_hosts_are_merged_and_revocations_kept(tmp_path: Path) -> None:
    """Two Tokens on one file: each save merges the other's tokens in; a token one revoked
    is gone from the other once it refreshes, and is not merged back by the other's save."""
    path = str(tmp_path / "tokens.json")
    one, two = Tokens("h", path), Tokens("h", path)

    async def main() -> None:
        _, first = one.create()
        await one.save()
        _, second = two.create()
        await two.save()  # merges `first` in
        await one.refresh()
        assert one.active(first) and one.active(second)
        one.revoke(first)
        await one.save()
        await two.refresh()
        assert not two.active(first) and two.active(second)
        two.grant(second, "s1")
        await two.save()
        stored = json.loads((tmp_path / "tokens.json").read_text())
        assert {t["id"] for t in stored["tokens"]} == {second}

    trio.run(main)


async def test_a_single_host_has_no_cluster_metrics(tmp_path: Path) -> None:
    """Without --cluster nothing changes: no pitrio_cluster_ series."""
    async with open_test_host(tmp_path) as host:
        assert host.cluster is None
        assert not any(k.startswith("pitrio_cluster_") for k in await _metrics(host))


__all__ = ["Client"]


def test_serve_cluster_without_coredis_names_the_extra(tmp_path: Path) -> None:
    """``pitrio serve --cluster`` where coredis cannot be imported exits 2 naming
    ``pitrio[cluster]`` (a ``coredis`` package that is not one hides the real one)."""
    import subprocess
    import sys

    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "coredis.py").write_text("raise ImportError('hidden')\n")
    repo = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": f"{shadow}{os.pathsep}{repo}"}
    done = subprocess.run(
        [sys.executable, "-m", "pitrio", "serve", "--cluster", "redis://127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "pitrio[cluster]" in done.stderr


@attrs.frozen
class _Owned:
    node: FakeNode
    host: Host
    client: Client
    session: str
    path: str
    live: LiveSession


@asynccontextmanager
async def _session_on_one_node(tmp_path: Path, *, tokens_per_second: int) -> AsyncIterator[_Owned]:
    """A host that is the only node of an in-memory cluster, a client, and a session it owns
    (the faux model streaming at ``tokens_per_second``)."""
    node = FakeCluster().node("a")
    opened = open_test_host(
        tmp_path,
        cluster=node,
        token=TOKEN,
        extra_env={"PITRIO_FAUX_TOKENS_PER_SECOND": str(tokens_per_second)},
    )
    async with opened as host, open_client(host) as client:
        created = await client.call({"type": "create_session"})
        sid, path = created["data"]["session"], created["data"]["sessionFile"]
        yield _Owned(node, host, client, sid, path, host.sessions[sid])


async def test_a_lost_session_writes_nothing_more_to_its_file(tmp_path: Path) -> None:
    """The node lost the session's lease mid-answer (cut off from the cluster while another
    node takes it over from the shared file): it stops serving it, and appends nothing more
    to the file (not the aborted end of its answer), which is the new owner's now."""
    async with _session_on_one_node(tmp_path, tokens_per_second=20) as o:
        await o.client.send({"type": "prompt", "session": o.session, "message": "long " * 200})
        with trio.fail_after(10):
            await o.client.until(lambda f: f.get("type") == "message_update")
        before = await trio.Path(o.path).read_bytes()
        await o.node.tell(SessionLost(o.session))
        with trio.fail_after(10):
            await o.client.until(lambda f: f.get("type") == "session_closed")
            await o.live.closed.wait()
        assert o.live.dropped and o.session not in o.host.sessions
        assert await trio.Path(o.path).read_bytes() == before


async def test_a_node_cut_off_writes_nothing_to_its_file_before_it_hears_of_the_loss(
    tmp_path: Path,
) -> None:
    """The node is cut off from the cluster mid-answer (its appends hang, its leases are not
    renewed): when the answer ends, its end is not written to the file, which another node
    may own from the moment the lease lapsed; the session is dropped once the loss arrives."""
    async with _session_on_one_node(tmp_path, tokens_per_second=200) as o:
        await o.client.send({"type": "prompt", "session": o.session, "message": "first"})
        with trio.fail_after(10):
            await o.client.until(_is_end)
        await o.client.send({"type": "prompt", "session": o.session, "message": "second"})
        with trio.fail_after(10):
            await o.client.until(lambda f: f.get("type") == "message_update")
        o.node.partition()
        before = await trio.Path(o.path).read_bytes()
        with trio.fail_after(10):
            await o.live.session.wait_for_idle()  # the answer ended, its events unpublished
            await o.live.session.session_manager.flush()
        assert await trio.Path(o.path).read_bytes() == before
        assert not o.live.dropped
        await o.node.tell(SessionLost(o.session))
        with trio.fail_after(10):
            await o.live.closed.wait()
        assert await trio.Path(o.path).read_bytes() == before
