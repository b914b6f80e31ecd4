"""Soak: rounds of websocket clients against a real ``pitrio serve``; its memory stays flat.

Each round, every client connects, streams a paced faux answer, drops its connection, resumes
with its cursor, and closes its session (``tests/host/soak.py``). Closed sessions are freed by
reference counting, so with the GC tuning (collections spaced out) or without it the host's
RSS after each later round stays within ``RSS_MARGIN`` of its RSS after the first round.
Before closed sessions were freed that way, three rounds of 200 clients left a tuned host at
340, 605 and 870 MB.

``PITRIO_SOAK_CLIENTS`` sets the clients per round (default 100; a 500-client run is
``python -m tests.host.soak --clients 500``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.host.soak import soak

CLIENTS = int(os.environ.get("PITRIO_SOAK_CLIENTS", "100"))
ROUNDS = 3
RSS_MARGIN = 0.15
"""A later round's RSS may exceed the first round's by this fraction (allocator noise: arenas
freed or kept, the replay rings' and buffers' high-water marks)."""


@pytest.mark.parametrize("gc_tuning", [True, False], ids=["gc-tuned", "gc-default"])
async def test_host_rss_after_each_round_stays_near_the_first_rounds(
    tmp_path: Path, gc_tuning: bool
) -> None:
    """Three rounds of clients that connect, stream, drop, resume and close: the host's RSS
    after rounds 2 and 3 is within RSS_MARGIN of its RSS after round 1."""
    result = await soak(str(tmp_path), CLIENTS, ROUNDS, gc_tuning=gc_tuning)
    first, *later = result["rss_after_round_mb"]
    assert len(later) == ROUNDS - 1
    for rss in later:
        assert rss <= first * (1 + RSS_MARGIN), result
