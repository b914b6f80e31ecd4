"""The renewal thread's synchronous Redis client against a real redis-server: commands and
scripts round trip, error replies raise without breaking the connection, NOSCRIPT loads the
script and runs it again, a dropped connection fails one call and the next one reconnects."""

from __future__ import annotations

import hashlib
import threading
import uuid

import pytest

from pitrio._exceptions import UsageError
from pitrio.host.cluster._resp import RespClient, RespError
from pitrio.host.cluster._scripts import RENEW


@pytest.fixture
def client(redis_url):
    resp = RespClient(redis_url, timeout=5.0)
    try:
        yield resp
    finally:
        resp.close()


def test_commands_round_trip_every_reply_type(client, prefix):
    key = f"{prefix}:k"
    assert client.call("PING") == b"PONG"
    assert client.call("SET", key, b"\x00bin\r\nary") == b"OK"
    assert client.call("GET", key) == b"\x00bin\r\nary"
    assert client.call("GET", f"{prefix}:missing") is None
    assert client.call("RPUSH", f"{prefix}:l", "a", 2, 3.5) == 3
    assert client.call("LRANGE", f"{prefix}:l", 0, -1) == [b"a", b"2", b"3.5"]
    assert client.call("LRANGE", f"{prefix}:missing", 0, -1) == []


def test_the_renew_script_round_trips(client, prefix):
    """The node's own RENEW script: its nested reply comes back as the node reads it."""
    client.call("SET", f"{prefix}:n:a:lease", "tok|ws://a", "PX", 60_000)
    client.call("SADD", f"{prefix}:nodes", "a")
    client.call("SET", f"{prefix}:s:s1:lease", "3|a|tok", "PX", 60_000)
    client.call("HSET", f"{prefix}:sessions", "s1", "a", "s2", "a")
    keys = [f"{prefix}:n:a:lease", f"{prefix}:nodes", f"{prefix}:sessions", f"{prefix}:n:a:c"]
    args = ["tok|ws://a", 5000, prefix, "pitrio", "s1", "3|a|tok", "s3", "1|a|tok"]
    reply = client.run_script(RENEW, keys, args)
    assert reply == [1, [b"s3"], [b"a", b"tok|ws://a"], [b"s2"], 0]
    assert 0 < client.call("PTTL", f"{prefix}:s:s1:lease") <= 5000


def test_error_replies_raise_and_the_connection_stays_usable(client, prefix):
    with pytest.raises(RespError, match=r"^PITRIO_HELD b$"):
        client.run_script("return redis.error_reply('PITRIO_HELD b')", [], [])
    client.call("SET", f"{prefix}:h", "x")
    with pytest.raises(RespError, match="WRONGTYPE"):
        client.call("HGET", f"{prefix}:h", "f")
    assert client.call("PING") == b"PONG"


def test_a_script_redis_lacks_is_loaded_and_run_again(redis_servers):
    server = redis_servers.start()
    resp = RespClient(server.url, timeout=5.0)
    try:
        script = f"return {{'{uuid.uuid4().hex}', ARGV[1], #KEYS}}"
        first = resp.run_script(script, ["k"], [7])
        assert first[1:] == [b"7", 1]
        resp.call("SCRIPT", "FLUSH")
        assert resp.run_script(script, ["k"], [8]) == [first[0], b"8", 1]
        assert resp.call("SCRIPT", "EXISTS", hashlib.sha1(script.encode()).hexdigest()) == [1]
    finally:
        resp.close()
        server.stop()


def test_a_dropped_connection_fails_one_call_and_the_next_reconnects(client, redis_url):
    own_id = client.call("CLIENT", "ID")
    killer = RespClient(redis_url, timeout=5.0)
    try:
        assert killer.call("CLIENT", "KILL", "ID", own_id) == 1
    finally:
        killer.close()
    with pytest.raises(OSError):
        client.call("PING")
    assert client.call("PING") == b"PONG"
    assert client.call("CLIENT", "ID") != own_id


def test_a_server_gone_and_back_on_its_port_is_reconnected_to(redis_servers):
    server = redis_servers.start()
    resp = RespClient(server.url, timeout=5.0)
    try:
        assert resp.call("PING") == b"PONG"
        server.kill()
        with pytest.raises(OSError):
            resp.call("PING")
        with pytest.raises(OSError):
            resp.call("PING")  # refused: nothing listens
        server = redis_servers.start(server.port)
        assert resp.call("PING") == b"PONG"
    finally:
        resp.close()
        server.stop()


def test_interrupt_unblocks_a_call_blocked_in_another_thread(redis_servers):
    server = redis_servers.start()
    resp = RespClient(server.url, timeout=30.0)
    failures: list[BaseException] = []

    def blocked() -> None:
        try:
            resp.call("BLPOP", "never", 0)
        except OSError as exc:
            failures.append(exc)

    thread = threading.Thread(target=blocked)
    watcher = RespClient(server.url, timeout=5.0)
    try:
        thread.start()
        # Interrupt only once Redis counts the call as blocked (a wait on the server's state).
        while b"blocked_clients:1" not in watcher.call("INFO", "clients"):
            threading.Event().wait(0.01)
        resp.interrupt()
        thread.join(10)
        assert not thread.is_alive()
        assert len(failures) == 1
    finally:
        watcher.close()
        resp.close()
        server.stop()


def test_a_select_in_the_url_is_applied(redis_url, prefix):
    resp = RespClient(f"{redis_url}/3", timeout=5.0)
    try:
        assert b" db=3 " in resp.call("CLIENT", "INFO")
    finally:
        resp.close()


def test_only_redis_urls_are_accepted():
    with pytest.raises(UsageError):
        RespClient("http://127.0.0.1:6379", timeout=1.0)
