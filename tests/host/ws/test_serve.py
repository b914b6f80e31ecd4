"""``pitrio serve``: the websocket host on loopback with the faux provider (docs/host-protocol.md)."""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from pitrio.host import HostLimits
from tests.host.serve_helpers import (
    http_get,
    open_client,
    open_test_host,
    text_of_deltas,
    upgrade_status,
)

LONG_TEXT = "".join(f"word{i} " for i in range(300))


def _is_end(frame: dict[str, Any]) -> bool:
    return frame.get("type") == "agent_end"


async def test_create_prompt_and_stream_carry_session_and_seq(tmp_path: Path) -> None:
    """create_session answers with the id, seq 0 and the file; a prompt's response and its
    events carry the session, events with seq 1, 2, 3 ... first in the frame."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        created = await client.call({"type": "create_session"})
        assert created["success"] is True
        sid = created["data"]["session"]
        assert created["session"] == sid
        assert created["data"]["seq"] == 0
        assert created["data"]["sessionFile"].startswith(str(tmp_path / "sessions"))
        await client.send({"type": "prompt", "session": sid, "message": "hello", "id": "p"})
        raw: list[str] = []
        frames = []
        while True:
            text = await client.ws.get_message()
            assert isinstance(text, str)
            raw.append(text)
            frame = json.loads(text)
            frames.append(frame)
            if _is_end(frame):
                break
        response = next(f for f in frames if f.get("type") == "response")
        assert response == {
            "session": sid,
            "id": "p",
            "type": "response",
            "command": "prompt",
            "success": True,
        }
        events = [(f, t) for f, t in zip(frames, raw, strict=True) if f.get("type") != "response"]
        assert [f["seq"] for f, _ in events] == list(range(1, len(events) + 1))
        assert all(
            t.startswith(f'{{"session":"{sid}","epoch":1,"seq":{f["seq"]},') for f, t in events
        )
        assert text_of_deltas(frames) == "You said: hello"
        state = await client.call({"type": "get_state", "session": sid})
        assert state["data"]["messageCount"] == 2
        assert state["session"] == sid


async def test_two_clients_on_one_session_see_the_same_events(tmp_path: Path) -> None:
    """A second client that opens the session sees the same events, with the same seqs."""
    async with (
        open_test_host(tmp_path) as host,
        open_client(host) as first,
        open_client(host) as second,
    ):
        sid = (await first.call({"type": "create_session"}))["data"]["session"]
        opened = await second.call({"type": "open_session", "session": sid})
        assert opened["data"] == {"session": sid, "epoch": 1, "seq": 0}
        await first.send({"type": "prompt", "session": sid, "message": "both of you"})
        seen_first = [f for f in await first.until(_is_end) if "seq" in f]
        seen_second = [f for f in await second.until(_is_end) if "seq" in f]
        assert [(f["seq"], f["type"]) for f in seen_first] == [
            (f["seq"], f["type"]) for f in seen_second
        ]
        assert text_of_deltas(seen_second) == "You said: both of you"
        listed = await first.call({"type": "list_sessions"})
        [entry] = listed["data"]["sessions"]
        assert entry["session"] == sid and entry["clients"] == 2 and entry["isStreaming"] is False


async def test_resume_mid_stream_gives_exactly_the_missing_events(tmp_path: Path) -> None:
    """A client that leaves mid-stream and resumes from its last seq gets every later event
    once: its text before and after the gap spells the whole answer."""
    async with open_test_host(tmp_path, script=[LONG_TEXT]) as host:
        async with open_client(host) as leaver:
            sid = (await leaver.call({"type": "create_session"}))["data"]["session"]
            await leaver.send({"type": "prompt", "session": sid, "message": "go"})
            before = await leaver.until(lambda f: f.get("seq", 0) >= 12)
        cursor = before[-1]["seq"]
        async with open_client(host) as back:
            opened = await back.call(
                {"type": "open_session", "session": sid, "resume_from": cursor}
            )
            assert opened["success"] is True
            after = await back.until(_is_end)
        seqs = [f["seq"] for f in after if "seq" in f]
        assert seqs[0] == cursor + 1
        assert seqs == sorted(set(seqs))
        assert text_of_deltas(before) + text_of_deltas(after) == LONG_TEXT
        ends = [f for f in before + after if f.get("type") == "message_end"]
        assert len(ends) == 2  # the user's message and the answer, once each


async def test_resume_from_a_cursor_out_of_the_ring_gives_a_snapshot(tmp_path: Path) -> None:
    """A cursor older than the replay ring is answered with a snapshot (state and messages
    up to its seq), then live events after it."""
    async with (
        open_test_host(tmp_path, settings={"replayRingSize": 4}) as host,
        open_client(host) as first,
    ):
        sid = (await first.call({"type": "create_session"}))["data"]["session"]
        await first.send({"type": "prompt", "session": sid, "message": "one"})
        last = (await first.until(_is_end))[-1]["seq"]
        async with open_client(host) as late:
            opened = await late.call({"type": "open_session", "session": sid, "resume_from": 1})
            assert opened["data"] == {"session": sid, "epoch": 1, "seq": last}
            snapshot = await late.frame()
            assert snapshot["type"] == "snapshot"
            assert snapshot["session"] == sid and snapshot["seq"] == last
            assert snapshot["state"]["sessionId"] == sid
            assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant"]
            await first.send({"type": "prompt", "session": sid, "message": "two"})
            live = [f for f in await late.until(_is_end) if "seq" in f]
            assert live[0]["seq"] == last + 1


async def test_a_client_that_stops_reading_is_cut_off_with_4008(tmp_path: Path) -> None:
    """A client that stops reading gets ``lagged`` with its cursor and close code 4008, while
    the session and a client that reads go on."""
    limits = HostLimits(
        outbound_queue=4,
        subscription_buffer=4,
        socket_send_buffer=4096,
        lag_close_timeout=math.inf,
    )
    async with (
        open_test_host(tmp_path, limits=limits) as host,
        open_client(host) as reader,
        open_client(host, receive_buffer=4096) as sleeper,
    ):
        sid = (await reader.call({"type": "create_session"}))["data"]["session"]
        await sleeper.send({"type": "open_session", "session": sid, "id": "o"})
        prompts = 0
        while not host.metrics.lag_disconnects_total and prompts < 40:
            await reader.send({"type": "prompt", "session": sid, "message": LONG_TEXT})
            end = (await reader.until(_is_end))[-1]
            assert end["messages"][-1]["role"] == "assistant"
            prompts += 1
        assert host.metrics.lag_disconnects_total == 1
        frames: list[dict[str, Any]] = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                frames.append(await sleeper.frame())
        assert closed.value.reason is not None and closed.value.reason.code == 4008
        lagged = frames[-1]
        events = [f for f in frames if "seq" in f and f.get("type") != "lagged"]
        assert lagged == {
            "type": "lagged",
            "session": sid,
            "epoch": 1,
            "resume_from": events[-1]["seq"],
        }
        state = await reader.call({"type": "get_state", "session": sid})
        assert state["data"]["messageCount"] == 2 * prompts


async def test_tokens_headers_and_scopes(tmp_path: Path) -> None:
    """No token or a wrong one is refused with 401; a client token sees only its own and
    granted sessions and may not create tokens; the Authorization header works too."""
    async with open_test_host(tmp_path) as host:
        assert await upgrade_status(host, "/ws") == 401
        assert await upgrade_status(host, "/ws?token=wrong") == 401
        wrong_header = {"Authorization": "Bearer wrong"}
        assert await upgrade_status(host, "/ws", wrong_header) == 401
        assert await upgrade_status(host, f"/ws?token={host.token}") == 101
        async with open_client(host) as admin:
            sid = (await admin.call({"type": "create_session"}))["data"]["session"]
            token = (await admin.call({"type": "create_token"}))["data"]["token"]
            async with open_client(
                host, token="", headers=[(b"Authorization", f"Bearer {token}".encode())]
            ) as guest:
                assert (await guest.call({"type": "list_sessions"}))["data"] == {"sessions": []}
                refused = await guest.call({"type": "open_session", "session": sid})
                assert refused["success"] is False
                assert refused["error"] == f"Unknown session: {sid}"
                hidden = await guest.call({"type": "get_state", "session": sid})
                assert hidden["error"] == f"Unknown session: {sid}"
                forbidden = await guest.call({"type": "create_token"})
                assert forbidden["success"] is False
                own = (await guest.call({"type": "create_session"}))["data"]["session"]
                assert [
                    s["session"]
                    for s in (await guest.call({"type": "list_sessions"}))["data"]["sessions"]
                ] == [own]
                granted = await admin.call({"type": "grant", "session": sid, "token": token})
                assert granted["success"] is True
                opened = await guest.call({"type": "open_session", "session": sid})
                assert opened["success"] is True


async def test_origins_other_than_the_hosts_are_refused(tmp_path: Path) -> None:
    """A foreign Origin gets 403; the host's own and --allow-origin ones are let in."""
    async with open_test_host(tmp_path, allow_origins=("https://app.example",)) as host:
        evil = {"Origin": "http://evil.example"}
        assert await upgrade_status(host, f"/ws?token={host.token}", evil) == 403
        for origin in (f"http://127.0.0.1:{host.port}", "https://app.example"):
            async with open_client(host, headers=[(b"Origin", origin.encode())]) as client:
                assert (await client.call({"type": "list_sessions"}))["success"] is True


async def test_each_limit_is_an_error_and_the_connection_stays_open(tmp_path: Path) -> None:
    """Frame size, command rate and sessions per token are each answered with an error
    naming the limit, and the next command is served."""
    limits = HostLimits(
        max_frame_bytes=1000, commands_per_second=0.001, command_burst=4, max_sessions_per_token=1
    )
    async with open_test_host(tmp_path, limits=limits) as host, open_client(host) as admin:
        big = await admin.raw_call(json.dumps({"type": "list_sessions", "pad": "x" * 2000}))
        assert big["success"] is False and big["limit"] == "max_frame_bytes"
        assert (await admin.call({"type": "list_sessions"}))["success"] is True
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            first = await guest.call({"type": "create_session"})
            assert first["success"] is True
            second = await guest.call({"type": "create_session"})
            assert second["success"] is False and second["limit"] == "max_sessions_per_token"
            # The limit counts live sessions: once one is closed, another may be created.
            own = first["data"]["session"]
            assert (await guest.call({"type": "close_session", "session": own}))["success"]
            assert (await guest.call({"type": "create_session"}))["success"] is True
        # The admin has used 2 of its burst of 4 (the oversized frame is refused first).
        answers = [await admin.call({"type": "list_sessions"}) for _ in range(3)]
        assert [a["success"] for a in answers] == [True, True, False]
        assert answers[-1]["limit"] == "rate_limit"
        assert host.metrics.errors["rate_limit"] == 1


@pytest.mark.parametrize(
    ("frame", "error"),
    [
        (
            "not json",
            "Failed to parse command: Unexpected token 'o', \"not json\" is not valid JSON",
        ),
        ("[1, 2]", "Unknown command: undefined"),
        ('{"type": "bogus", "session": "x", "id": 7}', "Unknown command: bogus"),
        ('{"type": "get_state", "session": "nope"}', "Unknown session: nope"),
        ('{"type": "get_state"}', 'Command get_state needs a "session" field'),
        ('{"type": "open_session"}', 'Command open_session needs a "session" field'),
        ('{"type": "get_state", "session": 5}', 'Invalid command: "session" must be a string'),
        (
            '{"type": "create_session", "cwd": 5}',
            'Invalid create_session command: "cwd" must be a string',
        ),
        (
            '{"type": "create_session", "cwd": "/nonexistent/dir"}',
            "cwd '/nonexistent/dir' resolves to /nonexistent/dir, outside the host's roots "
            "(ROOT): a session's folder must be inside a --root",
        ),
        (
            '{"type": "open_session", "session": "s", "resume_from": -1}',
            'Invalid open_session command: "resume_from" must be an integer >= 0',
        ),
        (
            '{"type": "prompt", "session": "s", "message": 5}',
            'Invalid prompt command: "message" must be a string',
        ),
    ],
)
async def test_malformed_frames_get_an_error_response(
    tmp_path: Path, frame: str, error: str
) -> None:
    """Each malformed frame is answered with an error and the connection keeps serving."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        answer = await client.raw_call(frame)
        expected = error.replace("ROOT", str(tmp_path))
        assert answer["success"] is False and answer["error"] == expected
        if '"id"' in frame:
            assert answer["id"] == json.loads(frame)["id"]  # echoed, unlike RPC mode
        assert (await client.call({"type": "list_sessions"}))["success"] is True


async def test_healthz_metrics_and_static_files(tmp_path: Path) -> None:
    """/healthz counts sessions and clients; /metrics needs the host token; the page's files
    are served with their content type, anything else is 404."""
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<!doctype html><title>p</title>")
    (static / "app.js").write_text("console.log(1)")
    async with open_test_host(tmp_path, static_dir=str(static)) as host, open_client(host) as c:
        await c.call({"type": "create_session"})
        status, headers, body = await http_get(host, "/healthz")
        assert status == 200 and json.loads(body) == {"status": "ok", "sessions": 1, "clients": 1}
        assert (await http_get(host, "/metrics"))[0] == 401
        status, headers, body = await http_get(
            host, "/metrics", {"Authorization": f"Bearer {host.token}"}
        )
        assert status == 200 and headers["content-type"].startswith("text/plain")
        lines = body.decode().splitlines()
        assert "pitrio_host_sessions 1" in lines and "pitrio_host_clients 1" in lines
        assert any(line.startswith("pitrio_host_events_per_second ") for line in lines)
        status, headers, body = await http_get(host, "/")
        assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
        status, headers, _ = await http_get(host, f"/app.js?token={host.token}")
        assert status == 200 and headers["content-type"] == "text/javascript; charset=utf-8"
        for missing in ("/nope.js", "/../serve_helpers.py", "/%2e%2e/x", "/.hidden"):
            assert (await http_get(host, missing))[0] == 404
        assert (await http_get(host, "/ws"))[0] == 426


async def test_close_session_then_open_session_reopens_it_from_its_file(tmp_path: Path) -> None:
    """close_session closes it for every client (session_closed); open_session by id later
    reopens it from its file with its messages."""
    async with (
        open_test_host(tmp_path) as host,
        open_client(host) as first,
        open_client(host) as other,
    ):
        sid = (await first.call({"type": "create_session"}))["data"]["session"]
        await other.call({"type": "open_session", "session": sid})
        await first.send({"type": "prompt", "session": sid, "message": "remember me"})
        await first.until(_is_end)
        assert (await first.call({"type": "close_session", "session": sid}))["success"] is True
        await other.until(lambda f: f == {"type": "session_closed", "session": sid})
        assert sid not in host.sessions
        reopened = await other.call({"type": "open_session", "session": sid})
        assert reopened["success"] is True
        messages = await other.call({"type": "get_messages", "session": sid})
        assert [m["role"] for m in messages["data"]["messages"]] == ["user", "assistant"]


async def test_an_idle_session_is_closed_after_the_timeout(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A session with no client and no run is closed after idle_timeout (virtual time)."""
    async with open_test_host(tmp_path, idle_timeout=60.0) as host:
        live = await host.create_session(host.token)
        start = trio.current_time()
        await live.closed.wait()
        assert trio.current_time() - start >= 60.0
        assert live.id not in host.sessions


async def test_sigterm_drains_and_exits_0_with_the_file_written(tmp_path: Path) -> None:
    """``pitrio serve`` on SIGTERM closes its clients with 1001, writes the session file and
    exits 0."""
    from tests.host.serve_helpers import faux_env

    env = {**os.environ, **faux_env(str(tmp_path))}
    sessions = tmp_path / "sessions"
    command = [
        sys.executable,
        "-m",
        "pitrio",
        "serve",
        "--port",
        "0",
        "--provider",
        "faux",
        "--session-dir",
        str(sessions),
    ]
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False
        )
        process: trio.Process = await nursery.start(run)
        assert process.stderr is not None
        line = b""
        while b"listening on" not in line:
            line += await process.stderr.receive_some(4096)
        words = dict(
            w.split("=", 1) for w in line.decode().split("listening on", 1)[1].split() if "=" in w
        )
        url = line.decode().split("listening on ", 1)[1].split()[0]

        class _Host:
            port = int(url.rstrip("/").rsplit(":", 1)[1])
            token = words["token"]
            ws_url = "ws" + url[4:] + "ws"

        async with open_client(_Host()) as client:  # type: ignore[arg-type]
            sid = (await client.call({"type": "create_session"}))["data"]["session"]
            await client.send({"type": "prompt", "session": sid, "message": "persist me"})
            await client.until(_is_end)
            process.send_signal(15)
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await client.frame()
            assert closed.value.reason is not None and closed.value.reason.code == 1001
        assert await process.wait() == 0
    [file] = list(sessions.glob(f"*_{sid}.jsonl"))
    roles = [
        json.loads(line)["message"]["role"]
        for line in file.read_text().splitlines()
        if json.loads(line)["type"] == "message"
    ]
    assert roles == ["user", "assistant"]


async def test_drain_answers_503_lets_the_turn_end_and_closes_clients_with_1001(
    tmp_path: Path,
) -> None:
    """While draining, /healthz and new websockets get 503; a running command gets the
    grace, then is stopped; the client gets its session's last events, session_closed, then
    close code 1001."""
    async with open_test_host(tmp_path, drain_grace=0.5) as host, open_client(host) as client:
        sid = (await client.call({"type": "create_session"}))["data"]["session"]
        await client.send({"type": "bash", "session": sid, "command": "sleep 60", "id": "b"})
        # Commands are taken in order: once get_state is answered, the bash command runs.
        await client.call({"type": "get_state", "session": sid})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host.drain)
            await trio.testing.wait_all_tasks_blocked()
            status, _, body = await http_get(host, "/healthz")
            assert (status, json.loads(body)) == (503, {"status": "draining"})
            for path in ("/healthz", "/"):  # HEAD: the status and headers, never a body
                status, headers, body = await http_get(host, path, method="HEAD")
                assert (status, body) == (503, b"")
                assert int(headers["content-length"]) > 0
            assert await upgrade_status(host, f"/ws?token={host.token}") == 503
            frames: list[dict[str, Any]] = []
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    frames.append(await client.frame())
        assert closed.value.reason is not None and closed.value.reason.code == 1001
        assert frames[-1] == {"type": "session_closed", "session": sid}
        assert not host.sessions


def test_the_host_token_comes_from_the_flag_then_the_environment_then_settings(
    tmp_path: Path,
) -> None:
    """``--token`` wins over ``$PITRIO_HOST_TOKEN``, which wins over the ``host.token``
    setting; with none, no token (the host generates one)."""
    from pitrio.cli._serve import host_token
    from tests.host.serve_helpers import faux_env

    env = faux_env(str(tmp_path))
    assert host_token(None, env, str(tmp_path)) is None
    env = faux_env(str(tmp_path), settings={"host": {"token": "from-settings"}})
    assert host_token(None, env, str(tmp_path)) == "from-settings"
    env["PITRIO_HOST_TOKEN"] = "from-env"
    assert host_token(None, env, str(tmp_path)) == "from-env"
    assert host_token("from-flag", env, str(tmp_path)) == "from-flag"


async def test_a_session_a_client_token_reopens_counts_towards_its_limit(tmp_path: Path) -> None:
    """With a limit of one live session, a client token that reopened its closed session
    cannot create a second one."""
    async with (
        open_test_host(tmp_path, limits=HostLimits(max_sessions_per_token=1)) as host,
        open_client(host) as admin,
    ):
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            sid = (await guest.call({"type": "create_session"}))["data"]["session"]
            await guest.send({"type": "prompt", "session": sid, "message": "write the file"})
            await guest.until(_is_end)
            assert (await guest.call({"type": "close_session", "session": sid}))["success"]
            assert (await guest.call({"type": "open_session", "session": sid}))["success"]
            refused = await guest.call({"type": "create_session"})
            assert refused["success"] is False and refused["limit"] == "max_sessions_per_token"


async def test_a_prompt_with_images_is_served(tmp_path: Path) -> None:
    """A prompt with images (a command that is not hashable) runs like any other."""
    image = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        sid = (await client.call({"type": "create_session"}))["data"]["session"]
        answer = await client.call(
            {"type": "prompt", "session": sid, "message": "look", "images": [image]}
        )
        assert answer["success"] is True
        await client.until(_is_end)
