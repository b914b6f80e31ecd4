"""Fixtures of the cluster tests: a real redis-server (tests/redis_server.py) and a key prefix
per test, so tests sharing the server never see each other's keys."""

from __future__ import annotations

import uuid

import pytest

from redis_server import redis_servers

__all__ = ["redis_servers"]  # the fixture: importing it registers it here


@pytest.fixture
def redis_url(redis_servers) -> str:
    """The URL of the session's shared redis-server."""
    return redis_servers.main.url


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:12]}"
