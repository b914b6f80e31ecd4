"""Rendezvous placement: deterministic, stable across processes, minimal movement."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.host.cluster import NodeInfo, rendezvous_owner

node_ids = st.lists(
    st.text("abcdefgh0123456789", min_size=1, max_size=6), min_size=2, max_size=8, unique=True
)
session_ids = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=40, unique=True)


def nodes_of(ids: list[str]) -> list[NodeInfo]:
    return [NodeInfo(i, f"ws://{i}") for i in ids]


@settings(max_examples=200)
@given(ids=node_ids, sessions=session_ids, data=st.data())
def test_removing_a_node_moves_only_its_sessions(ids, sessions, data):
    """Without one node, every session it did not own stays where it was; its own sessions
    land on the others. The order the nodes are listed in does not matter."""
    nodes = nodes_of(ids)
    gone = data.draw(st.sampled_from(ids))
    rest = [n for n in data.draw(st.permutations(nodes)) if n.node_id != gone]
    for sid in sessions:
        before = rendezvous_owner(sid, nodes)
        after = rendezvous_owner(sid, rest)
        if before.node_id != gone:
            assert after == before
        else:
            assert after.node_id != gone


@settings(max_examples=200)
@given(ids=node_ids, sessions=session_ids)
def test_adding_a_node_moves_sessions_only_onto_it(ids, sessions):
    """A joining node takes some sessions; none moves between the nodes already there."""
    *old, new = ids
    for sid in sessions:
        before = rendezvous_owner(sid, nodes_of(old))
        after = rendezvous_owner(sid, nodes_of(ids))
        assert after == before or after.node_id == new


def test_placement_is_the_same_in_another_process():
    """The hash is stable across processes (Python's ``hash`` is salted per process)."""
    nodes = nodes_of(["a", "b", "c"])
    here = [rendezvous_owner(f"s{i}", nodes).node_id for i in range(50)]
    code = (
        "from pitrio.host.cluster import NodeInfo, rendezvous_owner as r;"
        "n=[NodeInfo(i, '') for i in 'abc'];"
        "print(''.join(r(f's{i}', n).node_id for i in range(50)))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PYTHONPATH": ":".join(sys.path)},
    ).stdout.strip()
    assert there == "".join(here)
    assert set(here) == {"a", "b", "c"}
