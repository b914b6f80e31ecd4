"""10,000 random and malformed frames sent to one in-process ``pitrio serve`` host.

The frames come from a seeded generator (so a failure reproduces with the same seed) and go
over four websocket connections at once, two with the host token and two with client tokens
(created with ``create_token``). Among them are text frames of random characters and random
bytes, binary frames (invalid UTF-8 included), JSON that is not an object, unknown commands,
known commands with fields of the wrong type or missing, commands for unknown sessions or
without one, host commands with bad fields, frames over the frame limit, deep nesting
(beyond the explicit bound ``MAX_JSON_DEPTH``, also behind a number orjson refuses), NUL
bytes in a cwd, session ids and tokens, integers of 309 to 420 digits (JavaScript's
Infinity, echoed as ``null``) as ids and field values, U+2028 inside and between tokens,
lone surrogates (``"\\ud800"``) in ids and session names, and ids of every JSON type; and
valid commands too
(``get_state`` on a real session, ``list_sessions``, ``create_session``, ``open_session``,
``detach_session``), while one connection also prompts a session whose answer streams.

Each connection sends a frame and reads up to its response (events in between are counted),
so every frame is paired with its answer. The test checks: every frame is answered by exactly
one response, ``success: false`` exactly for the bad ones (counted), with the frame's ``id``
echoed when it had one; the host never crashes; it holds exactly the sessions the fuzzer
legitimately created (``list_sessions`` and the host's own count); each connection still
answers a valid ``get_state``; frames over ``HARD_FRAME_FACTOR`` times the limit close their
connection with 1009 and nothing else; and after the legitimate sessions are closed the
host's memory (live objects of its per-session and per-client types, and memory blocks) is
back to what it was before the fuzzing.
"""

from __future__ import annotations

import gc
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Final

import attrs
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, WebSocketConnection

from pitrio.host import Host, HostLimits
from pitrio.host.ws._client import Client as HostClient
from pitrio.host.ws._host import HARD_FRAME_FACTOR, LiveSession
from pitrio.sessions import AgentSession
from tests.host.serve_helpers import open_client, open_test_host

FRAMES: Final = 10_000
SEED: Final = 20261122
CONNECTIONS: Final = 4
MAX_FRAME: Final = 4096
"""A small frame limit, so that frames over it are cheap to make."""
LIMITS: Final = HostLimits(
    max_frame_bytes=MAX_FRAME,
    commands_per_second=1e9,
    command_burst=10**9,
    max_sessions_per_token=1_000,
)
"""No rate limit: every frame reaches the parser (the limits have their own tests)."""
OVERALL_TIMEOUT: Final = 300.0
"""A bound on the whole run, so a hang fails instead of blocking CI (never a timing claim)."""
BLOCK_TOLERANCE: Final = FRAMES // 2
"""Memory blocks (``sys.getallocatedblocks()``) the host may hold after the fuzzing beyond
its baseline: half a block per frame, so a leak of even one object per bad frame fails. The
rest is bounded caches that fill as they run: Trio keeps up to 1,000 stale deadline entries
(a tuple, a ``CancelScope`` and its ``CancelReason`` each) before pruning them, and ``re``
and cattrs keep theirs; one leaked session alone would hold thousands of blocks."""
HARMLESS: Final = (
    "get_state",
    "get_messages",
    "get_session_stats",
    "get_commands",
    "get_fork_messages",
    "get_last_assistant_text",
    "get_available_models",
    "abort_retry",
)
"""Session commands with no required field that start no work."""
TYPED_FIELDS: Final = (
    ("set_thinking_level", "level"),
    ("set_steering_mode", "mode"),
    ("set_follow_up_mode", "mode"),
    ("set_model", "provider"),
    ("set_auto_retry", "enabled"),
    ("set_auto_compaction", "enabled"),
    ("set_session_name", "name"),
    ("prompt", "message"),
    ("steer", "message"),
    ("follow_up", "message"),
    ("bash", "command"),
    ("switch_session", "sessionPath"),
    ("fork", "entryId"),
)
"""Commands and one required field each, sent with a value of the wrong type."""
IDS: Final = (
    None,
    0,
    -1,
    2**53,
    1.5,
    -0.0,
    1e300,
    True,
    False,
    "",
    "x",
    "\u2028",
    "\ud800",
    [1, "a\udc00"],
    {"a": [None]},
)
"""``id`` values of every JSON type (pi echoes any)."""
WRONG_STR: Final = (None, 3, 2.5, True, [1], {"a": 1})
"""Not a string (``null``: a required field missing)."""
WRONG_BOOL: Final = (None, 3, 2.5, "yes", [1], {"a": 1})


@attrs.define
class Context:
    """What one fuzzing connection may legitimately use."""

    is_host: bool
    sessions: list[str]
    """Sessions this connection's token may see (it created them, or it is the host's)."""
    created: list[str]
    """Sessions this connection created (to close at the end)."""


@attrs.frozen
class Frame:
    """One frame to send, and what the answer must say."""

    data: str | bytes
    bad: bool
    """Whether it must be answered with ``success: false``."""
    id: Any = None
    has_id: bool = False
    kind: str = ""


def _garbage(rng: random.Random) -> str:
    alphabet = '{}[]:,"\\ \t\n-.e0123456789truefalsnuxé\u2028\u2029\x00\ud7ff'
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _json(value: Any) -> str:
    """JSON text with every character as is, except lone surrogates (``"\\ud800"``: a
    frame's text must be valid UTF-8; the host's parser reads the escape as JavaScript does)."""
    text = json.dumps(value, ensure_ascii=False)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def make_frame(rng: random.Random, context: Context) -> Frame:
    """A random frame for a connection in ``context`` (see the module docstring)."""
    kind = rng.randrange(23)
    session = rng.choice(context.sessions) if context.sessions else "none"
    if kind == 0:
        return Frame(_garbage(rng), True, kind="garbage")
    if kind == 1:
        return Frame(rng.randbytes(rng.randint(0, 80)), True, kind="random bytes")
    if kind == 2:
        bad_utf8 = rng.choice([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        encoded = json.dumps({"type": "get_state", "session": session}).encode()
        cut = rng.randrange(len(encoded))
        return Frame(encoded[:cut] + bad_utf8 + encoded[cut:], True, kind="invalid utf-8")
    if kind == 3:
        size = rng.randint(MAX_FRAME + 1, MAX_FRAME * HARD_FRAME_FACTOR - 200)
        body = _json({"type": "get_state", "session": session, "pad": "x" * size})
        data: str | bytes = body.encode() if rng.random() < 0.3 else body
        return Frame(data, True, kind="over the limit")
    if kind == 4:
        value = rng.choice([None, 1, -2.5, "s", [1, 2], True, [], {"type": None}, {"type": 7}, {}])
        return Frame(_json(value), True, kind="not a command")
    if kind == 5:
        id_ = rng.choice(IDS)
        command: dict[str, Any] = {
            "type": f"no_such_{rng.randrange(99)}",
            "session": session,
            "id": id_,
        }
        return Frame(_json(command), True, id_, True, kind="unknown command")
    if kind == 6:
        type_, field = rng.choice(TYPED_FIELDS)
        id_ = rng.choice(IDS)
        wrong = WRONG_BOOL if field == "enabled" else WRONG_STR
        command = {"type": type_, "session": session, "id": id_, field: rng.choice(wrong)}
        return Frame(_json(command), True, id_, True, kind="wrong field type")
    if kind == 7:
        type_, _ = rng.choice(TYPED_FIELDS)
        return Frame(_json({"type": type_, "session": session}), True, kind="missing field")
    if kind == 8:
        missing = rng.choice([f"no-such-{rng.randrange(10**6)}", "\ud800", "x\udfff"])
        command = {"type": rng.choice(HARMLESS), "session": missing}
        return Frame(_json(command), True, kind="unknown session")
    if kind == 9:
        command = {"type": rng.choice(HARMLESS)}
        if rng.random() < 0.5:
            command["session"] = rng.choice([1, None, [session], {"id": session}, True])
        return Frame(_json(command), True, kind="no or bad session")
    if kind == 10:
        host_command = rng.choice(
            [
                {"type": "create_session", "cwd": rng.choice(WRONG_STR[1:])},
                {"type": "create_session", "cwd": "no/such/dir"},
                {"type": "create_session", "model": rng.choice([3, "nope/nope-1", []])},
                {
                    "type": "open_session",
                    "session": session,
                    "resume_from": rng.choice([-1, 1.5, "3", True, []]),
                },
                {"type": "open_session", "session": f"missing-{rng.randrange(999)}"},
                {"type": "open_session", "session": "../../etc/passwd"},
                {"type": "open_session"},
                {"type": "close_session", "session": f"missing-{rng.randrange(999)}"},
                {"type": "close_session", "session": rng.choice(WRONG_STR[1:])},
                {"type": "detach_session"},
                {
                    "type": "grant",
                    "session": session,
                    "token": rng.choice([None, 1, "not-a-token"]),
                },
                {"type": "grant", "session": "missing", "token": "x"},
            ]
        )
        if not context.is_host and rng.random() < 0.2:
            host_command = {"type": "create_token"}
        return Frame(_json(host_command), True, kind="bad host command")
    if kind == 11:
        depth = rng.choice([1100, 1500, 2000])
        data = '{"type":"get_state","session":' + _json(session) + ',"x":' + _deep(depth) + "}"
        return Frame(data, True, kind="deep nesting")
    if kind == 12:
        glue = rng.choice(["\u2028", "\u2029", "\u00a0", "\x0b"])
        data = "{" + glue + '"type":"get_state","session":' + _json(session) + "}"
        return Frame(data, True, kind="odd whitespace")
    if kind == 20:
        nul = rng.choice(["\x00", "a\x00b", "\x00" * 3])
        command = rng.choice(
            [
                {"type": "create_session", "cwd": nul},
                {"type": "open_session", "session": nul},
                {"type": rng.choice(HARMLESS), "session": nul},
                {"type": "grant", "session": nul, "token": nul},
            ]
        )
        return Frame(_json(command), True, kind="NUL bytes")
    if kind == 21:
        huge = rng.choice([1, -1]) * (10 ** rng.randint(309, 420) - 1)
        command = rng.choice(
            [
                {"type": "open_session", "session": session, "resume_from": huge},
                {"type": "set_thinking_level", "session": session, "level": huge},
                {"type": f"no_such_{rng.randrange(9)}", "session": session, "id": huge},
            ]
        )
        # pi reads such a number as Infinity, which JSON.stringify echoes as null.
        return Frame(_json(command), True, None, "id" in command, kind="huge integers")
    if kind == 22:
        # Beyond the nesting bound, behind what orjson refuses (a huge number): the bound
        # holds on the other parser too.
        deep = '{"n":' + "9" * 400 + ',"x":' + _deep(rng.choice([1030, 1500])) + "}"
        data = '{"type":"get_state","session":' + _json(session) + ',"v":' + deep + "}"
        return Frame(data, True, kind="deep nesting after a huge number")
    # Valid commands (kinds 13 to 19).
    id_ = rng.choice(IDS)
    has_id = rng.random() < 0.8
    huge_id = has_id and rng.random() < 0.05
    if kind in (13, 14, 15) and context.sessions:
        command = {"type": rng.choice(HARMLESS), "session": session}
        if kind == 14:
            command["extra\u2028"] = "line\u2028separator\u2029" + _deep(rng.randint(1, 200))
        if kind == 15:
            command["x"] = json.loads(_deep(rng.randint(100, 900)))
    elif kind == 16:
        command = {"type": "list_sessions"}
    elif kind == 17 and context.sessions:
        command = {"type": rng.choice(["open_session", "detach_session"]), "session": session}
        if command["type"] == "open_session" and rng.random() < 0.5:
            command["resume_from"] = rng.randint(0, 50)
    elif kind == 18 and rng.random() < 0.15:
        command = {"type": "create_session"}
    else:
        command = (
            {"type": "get_state", "session": session}
            if context.sessions
            else {"type": "list_sessions"}
        )
    if has_id:
        command["id"] = 10**400 if huge_id else id_
    data = _json(command)
    if len(data.encode()) > MAX_FRAME:  # deep ids can make it long
        command.pop("x", None)
        data = _json(command)
    return Frame(
        data if rng.random() < 0.9 else data.encode(),
        False,
        None if huge_id else id_,  # a 400-digit id is echoed as null, as pi echoes Infinity
        has_id,
        kind=f"valid {command['type']}",
    )


@attrs.define
class Tally:
    """What the fuzzing saw."""

    sent: int = 0
    errors: int = 0
    events: int = 0
    kinds: Counter[str] = attrs.field(factory=Counter)


async def answer(ws: WebSocketConnection, tally: Tally) -> dict[str, Any]:
    """The next response (events and ``session_closed`` notes before it are counted)."""
    while True:
        text = await ws.get_message()
        frame: dict[str, Any] = json.loads(text)
        if frame.get("type") == "response":
            return frame
        tally.events += 1


async def fuzz(
    ws: WebSocketConnection, context: Context, rng: random.Random, count: int, tally: Tally
) -> None:
    """Send ``count`` frames one at a time, each checked against its response."""
    for _ in range(count):
        frame = make_frame(rng, context)
        await ws.send_message(frame.data)
        tally.sent += 1
        tally.kinds[frame.kind] += 1
        try:
            response = await answer(ws, tally)
        except ConnectionClosed as exc:
            raise AssertionError(("closed", exc.reason, frame.kind, frame.data[:300])) from exc
        where = (frame.kind, frame.data[:300], response)
        assert response["success"] is (not frame.bad), where
        if frame.has_id and (not frame.bad or frame.kind == "huge integers"):
            assert "id" in response and response["id"] == frame.id, where
        if frame.bad:
            tally.errors += 1
            assert isinstance(response["error"], str) and response["error"], where
        elif response["command"] == "create_session":
            sid = response["data"]["session"]
            context.sessions.append(sid)
            context.created.append(sid)


async def host_memory(host: Host, clients: int) -> tuple[dict[str, int], int]:
    """Live objects of the host's per-session and per-client types (server-side websockets:
    the clients are in this process too), and memory blocks, once
    the host has ``clients`` clients and its handlers of closed connections have ended."""
    while len(host.clients) != clients:
        await trio.testing.wait_all_tasks_blocked(cushion=0.01)
    await trio.testing.wait_all_tasks_blocked(cushion=0.1)
    for _ in range(3):
        gc.collect()
    kinds = (AgentSession, LiveSession, HostClient)
    counts = dict.fromkeys((kind.__name__ for kind in kinds), 0)
    counts["server WebSocketConnection"] = 0
    for obj in gc.get_objects():
        for kind in kinds:
            if isinstance(obj, kind):
                counts[kind.__name__] += 1
        if isinstance(obj, WebSocketConnection) and obj.is_server:
            counts["server WebSocketConnection"] += 1
    return counts, sys.getallocatedblocks()


async def test_ten_thousand_hostile_frames_are_each_answered_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    """Every bad frame gets an error response and every valid one its answer, no session
    leaks, every connection still answers get_state, and memory returns to its baseline."""
    rng = random.Random(SEED)
    tallies = [Tally() for _ in range(CONNECTIONS)]
    with trio.fail_after(OVERALL_TIMEOUT):
        async with open_test_host(tmp_path, limits=LIMITS) as host, open_client(host) as admin:
            tokens = [host.token, host.token]
            for _ in range(CONNECTIONS - 2):
                tokens.append((await admin.call({"type": "create_token"}))["data"]["token"])
            # A warm-up of every step, so first-use caches are in the baseline.
            async with open_client(host) as warm:
                sid = (await warm.call({"type": "create_session"}))["data"]["session"]
                await warm.call({"type": "prompt", "session": sid, "message": "hi"})
                await warm.until(lambda f: f.get("type") == "agent_end")
                context = Context(True, [sid], [sid])
                await fuzz(warm.ws, context, random.Random(rng.random()), 300, Tally())
                for warm_sid in context.created:
                    await warm.call({"type": "close_session", "session": warm_sid})
            admin.seen.clear()  # the test's own memory
            base_objects, base_blocks = await host_memory(host, 1)
            errors_before = host.metrics.errors.total()
            contexts = [Context(t == host.token, [], []) for t in tokens]
            prompted = (await admin.call({"type": "create_session"}))["data"]["session"]
            contexts[0].sessions.append(prompted)
            contexts[1].sessions.append(prompted)
            async with trio.open_nursery() as nursery:
                for context, token, tally in zip(contexts, tokens, tallies, strict=True):
                    nursery.start_soon(
                        fuzz_connection,
                        host,
                        token,
                        context,
                        random.Random(rng.random()),
                        tally,
                    )
                nursery.start_soon(prompt_while_fuzzing, admin, prompted, tallies)
            created = [sid for c in contexts for sid in c.created]
            listed = await admin.call({"type": "list_sessions"})
            live = [s["session"] for s in listed["data"]["sessions"] if s["live"]]
            assert sorted(live) == sorted([*created, prompted])
            assert sorted(host.sessions) == sorted([*created, prompted])
            errors_seen = host.metrics.errors.total() - errors_before
            await oversized_frames_close_only_their_connection(host, prompted)
            for sid in [*created, prompted]:
                closed = await admin.call({"type": "close_session", "session": sid})
                assert closed["success"] is True, closed
            assert not host.sessions
            listed = await admin.call({"type": "list_sessions"})
            assert not [s for s in listed["data"]["sessions"] if s["live"]]
            admin.seen.clear()
            objects, blocks = await host_memory(host, 1)
            assert objects == base_objects
            assert blocks - base_blocks < BLOCK_TOLERANCE, (blocks, base_blocks)
    assert sum(t.sent for t in tallies) == FRAMES
    errors = sum(t.errors for t in tallies)
    kinds = sum((t.kinds for t in tallies), Counter[str]())
    print(f"{errors} error responses; frames by kind: {dict(kinds)}")
    assert errors == errors_seen
    assert errors > FRAMES // 2


async def fuzz_connection(
    host: Host, token: str, context: Context, rng: random.Random, tally: Tally
) -> None:
    """One connection's share of the frames, then a valid get_state."""
    async with open_client(host, token=token) as client:
        await fuzz(client.ws, context, rng, FRAMES // CONNECTIONS, tally)
        probe = {"type": "list_sessions", "id": "probe"}
        if context.sessions:
            probe = {"type": "get_state", "session": context.sessions[0], "id": "probe"}
        await client.ws.send_message(json.dumps(probe))
        final = await answer(client.ws, Tally())
        assert final["success"] is True and final["id"] == "probe", final


async def prompt_while_fuzzing(admin: Any, session: str, tallies: list[Tally]) -> None:
    """Prompt ``session`` again and again while the fuzzers run (its events reach the
    connections that opened it), until they are done."""
    while sum(t.sent for t in tallies) < FRAMES:
        await admin.send({"type": "prompt", "session": session, "message": "stream this"})
        await admin.until(lambda f: f.get("type") == "agent_end")


async def oversized_frames_close_only_their_connection(host: Host, session: str) -> None:
    """A frame over HARD_FRAME_FACTOR times the limit closes its connection with 1009; the
    host serves on."""
    for size in (MAX_FRAME * HARD_FRAME_FACTOR + 1, 10 * MAX_FRAME * HARD_FRAME_FACTOR):
        async with open_client(host) as client:
            with pytest.raises(ConnectionClosed) as closed:
                # The host may close while the frame is still being sent.
                await client.ws.send_message("x" * size)
                await client.frame()
            assert closed.value.reason is not None and closed.value.reason.code == 1009
    async with open_client(host) as client:
        state = await client.call({"type": "get_state", "session": session})
        assert state["success"] is True
