"""10,000 random and malformed records fed to one in-process RPC server over memory streams:
random characters and bytes, overlong records, values that are not commands, unknown commands,
fields of the wrong type, NUL bytes, nesting beyond ``MAX_JSON_DEPTH`` and integers of 309 to
420 digits (JavaScript's Infinity)."""

from __future__ import annotations

import json
import random
from typing import Any

import trio
import trio.testing

from pitrio.host import LineSplitter, RpcServer
from pitrio.providers import ProviderRegistry, register_faux_provider
from pitrio.sessions import SessionManager, open_agent_session

RECORDS = 10_000
MAX_LINE = 4096  # a small bound, so overlong records are cheap to make
HARMLESS = [
    "get_state",
    "get_messages",
    "get_session_stats",
    "get_available_models",
    "get_commands",
    "get_fork_messages",
    "get_last_assistant_text",
    "cycle_thinking_level",
    "abort_retry",
    "abort",
]
"""Valid commands (no required field) that do not start work or move sessions."""


def _record(rng: random.Random) -> tuple[bytes, bool]:
    """A record and whether it must be answered with success false."""
    kind = rng.randrange(11)
    if kind == 0:
        alphabet = '{}[]:,"\\ \t-.e0123456789truefalsnuxé\u2028\x00'
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))).encode(), True
    if kind == 1:
        return rng.randbytes(rng.randint(1, 60)).replace(b"\n", b" "), True
    if kind == 2:
        return b"x" * (MAX_LINE + rng.randint(1, 100)), True
    if kind == 3:
        value = rng.choice([None, 1, "s", [1, 2], True, {"type": None}, {"type": 7}, {}])
        return json.dumps(value).encode(), True
    if kind == 4:
        return json.dumps(
            {"type": f"no_such_{rng.randrange(99)}", "id": rng.random()}
        ).encode(), True
    if kind == 5:
        command = {
            "type": rng.choice(
                [
                    "set_thinking_level",
                    "set_steering_mode",
                    "set_model",
                    "set_auto_retry",
                    "switch_session",
                    "fork",
                    "prompt",
                ]
            ),
            "id": str(rng.randrange(1000)),
        }
        field = rng.choice(
            ["level", "mode", "provider", "enabled", "sessionPath", "entryId", "message"]
        )
        command[field] = rng.choice([None, 3, [1], {"a": 1}, 2.5])
        return json.dumps(command).encode(), True
    huge = rng.choice([1, -1]) * (10 ** rng.randint(309, 420) - 1)
    if kind == 8:
        nul = rng.choice(["\x00", "a\x00b"])
        command = rng.choice(
            [
                {"type": "export_html", "outputPath": nul},
                {"type": "set_thinking_level", "level": nul},
                {"type": f"no_such_{nul}"},
            ]
        )
        return json.dumps(command).encode(), True
    if kind == 9:
        # Beyond the nesting bound (also behind a number orjson refuses), or a number beyond
        # a double where a string is wanted.
        depth = rng.choice([1030, 1500])
        deep = "[" * depth + "]" * depth
        return rng.choice(
            [
                deep.encode(),
                ('{"type":"get_state","n":' + str(huge) + ',"x":' + deep + "}").encode(),
                json.dumps({"type": "set_steering_mode", "mode": huge, "id": huge}).encode(),
            ]
        ), True
    command: dict[str, Any] = {"type": rng.choice(HARMLESS), "id": str(rng.randrange(1000))}
    if kind == 10:
        command["id"] = huge  # pi answers with id null (JSON.stringify(Infinity))
    if kind == 6:
        command["extra"] = rng.choice(["off", "all", True, None, 1, [2]])
    return json.dumps(command).encode(), False


async def test_ten_thousand_hostile_records_are_each_answered_and_serving_goes_on() -> None:
    """Every bad record gets an error response, nothing crashes, get_state answers at the end."""
    rng = random.Random(20261122)
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", provider="faux", registry=registry)
    records = [_record(rng) for _ in range(RECORDS)]
    expected_errors = sum(bad for _, bad in records)
    client_out, server_in = trio.testing.memory_stream_pair()
    server_out, client_in = trio.testing.memory_stream_pair()
    answers: list[dict[str, Any]] = []
    with trio.fail_after(120):
        async with (
            open_agent_session(
                session_manager=SessionManager.in_memory(),
                model=faux.get_model(),
                registry=registry,
            ) as session,
            trio.open_nursery() as nursery,
        ):
            server = RpcServer(session, max_line=MAX_LINE)
            nursery.start_soon(server.serve, server_in, server_out)

            async def feed() -> None:
                for data, _ in records:
                    await client_out.send_all(data + b"\n")
                await client_out.send_all(b'{"id":"final","type":"get_state"}\n')

            nursery.start_soon(feed)
            splitter = LineSplitter()
            done = False
            while not done:
                chunk = await client_in.receive_some(65536)
                for line in splitter.feed(chunk):
                    assert isinstance(line, bytes)
                    answer = json.loads(line)
                    answers.append(answer)
                    done = answer.get("id") == "final"
            nursery.cancel_scope.cancel()
    responses = [a for a in answers if a["type"] == "response"]
    assert len(responses) == RECORDS + 1 - sum(
        1 for data, _ in records if b'"extension_ui_response"' in data
    )
    assert sum(1 for r in responses if r["success"] is False) == expected_errors
    assert responses[-1]["success"] is True and responses[-1]["data"]["messageCount"] == 0
