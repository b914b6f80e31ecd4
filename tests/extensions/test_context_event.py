"""The ``context`` event (one per reason), ``message_end``, persistence and replay, aborts and
``/context`` (print mode, RPC, get_context) through real sessions and a real ExtensionRunner."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import trio
import trio.testing

from pitrio.actors import MessageEndEvent
from pitrio.extensions import ExtensionAPI
from pitrio.host.rpc import _types as rpc
from pitrio.host.rpc._commands import SessionCommands
from pitrio.providers import AssistantMessage, UserMessage, faux_assistant_message
from pitrio.sessions import ExtensionErrorEvent, SessionManager
from pitrio.sessions.envelope import build_context_view
from pitrio.sessions.storage._entries import (
    ContextTransformEntry,
    EphemeralEntry,
    SessionMessageEntry,
)
from tests.extensions.ext_helpers import make_faux, make_runner, open_session
from tests.extensions.test_context_examples import Recorder, text_of

QUIET_WITHIN = 0.1
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _marker(pi: ExtensionAPI) -> None:
    """A persisted before_request marker and a turn_end system part (for the reopen tests)."""

    def handler(event: Any, ctx: Any) -> Any:
        if event.reason == "before_request":
            cached = event.state.envelope.messages.cached
            return {
                "transformerName": "marker",
                "patch": [
                    {
                        "op": "messages_cached_replace",
                        "messages": [*cached, {"role": "user", "content": "[m]", "timestamp": 1}],
                        "invalidateCacheReason": "marker",
                    }
                ],
            }
        if event.reason == "turn_end":
            return {
                "patch": [
                    {
                        "op": "system_part_set",
                        "partName": "policy",
                        "text": "!",
                        "invalidateCacheReason": "policy",
                    }
                ]
            }
        return None

    pi.on("context", handler)


# --------------------------------------------------------------------------- context event


async def test_a_reason_blind_handler_runs_three_times_and_replaces_once() -> None:
    """A handler ignoring reason runs once per reason; its {messages} reaches the request once,
    is not persisted, and leaves only a small ephemeral note naming the extension."""
    reasons: list[str | None] = []

    def register(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            reasons.append(event.reason)
            assert event.state.envelope is event.envelope
            event.messages.append(UserMessage(content="[injected]", timestamp=1))
            return {"messages": event.messages}

        pi.on("context", handler)

    runner = make_runner(register)
    faux, registry = make_faux()
    recorder = Recorder()
    faux.set_responses([recorder])
    manager = SessionManager.in_memory("/project")
    async with open_session(runner, faux, registry, manager=manager) as session:
        await session.prompt("hello")
        assert [text_of(m) for m in session.messages] == ["hello", "ok"]
    assert reasons == ["before_request", "ephemeral", "turn_end"]
    assert recorder.texts(0) == ["hello", "[injected]"]
    entries = manager.get_entries()
    assert not [e for e in entries if isinstance(e, ContextTransformEntry)]
    notes = [e for e in entries if isinstance(e, EphemeralEntry)]
    assert [(n.patch, n.transformer_name) for n in notes] == [
        ((), "ext0: messages replaced for this request")
    ]


async def test_a_patch_without_a_cache_reason_is_an_error_and_the_request_goes_out() -> None:
    """A cached op with no invalidateCacheReason: an extension_error event, the patch is
    skipped (nothing persisted) and the request is sent unpatched."""

    def register(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            if event.reason != "before_request":
                return None
            return {"patch": [{"op": "system_part_set", "partName": "x", "text": "X"}]}

        pi.on("context", handler)

    runner = make_runner(register)
    faux, registry = make_faux()
    recorder = Recorder()
    faux.set_responses([recorder])
    errors: list[ExtensionErrorEvent] = []
    manager = SessionManager.in_memory("/project")
    async with open_session(runner, faux, registry, manager=manager) as session:
        session.subscribe(lambda e: errors.append(e) if e.type == "extension_error" else None)
        await session.prompt("hello")
    assert [(e.extension_path, e.event) for e in errors] == [("ext0", "context")]
    assert "invalidateCacheReason" in errors[0].error
    assert recorder.texts(0) == ["hello"] and not (recorder.contexts[0].system_prompt or "")
    assert not [e for e in manager.get_entries() if isinstance(e, ContextTransformEntry)]


async def test_reopened_session_builds_the_same_envelope_without_hooks(
    tmp_path: pathlib.Path,
) -> None:
    """A file with before_request and turn_end transforms, reopened: the same envelope as the
    live session's next one, and no context handler runs to build it."""
    faux, registry = make_faux()
    faux.set_responses([Recorder(), Recorder()])
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    async with open_session(make_runner(_marker), faux, registry, manager=manager) as session:
        await session.prompt("one")
        await session.prompt("two")
        live = await build_context_view(session.context_engine)
    path = manager.get_session_file()
    assert path is not None
    calls: list[str] = []
    counting = make_runner(lambda pi: pi.on("context", lambda e, ctx: calls.append(e.reason)))
    async with open_session(counting, faux, registry, manager=SessionManager.open(path)) as again:
        reopened = await build_context_view(again.context_engine)
    assert calls == []
    assert reopened.envelope.messages == live.envelope.messages
    assert reopened.envelope.system == live.envelope.system
    assert [t.id for t in reopened.transforms] == [t.id for t in live.transforms]
    assert len(live.transforms) == 4  # marker + policy, twice


# --------------------------------------------------------------------------- message_end


async def test_message_end_replace_and_drop_reach_state_file_and_events(
    tmp_path: pathlib.Path,
) -> None:
    """Two extensions chain on message_end: A's replacement is what B sees and what the agent,
    the session file and the events hold; a drop keeps the message out of all three."""
    seen_by_b: list[str] = []

    def a(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            message = event.message
            if isinstance(message, AssistantMessage) and message.text() == "secret":
                return {"message": faux_assistant_message("[redacted]")}
            if isinstance(message, AssistantMessage) and message.text() == "drop me":
                return {"message": None}
            return None

        pi.on("message_end", handler)

    def b(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            if isinstance(event.message, AssistantMessage):
                seen_by_b.append(event.message.text())
            return None

        pi.on("message_end", handler)

    faux, registry = make_faux()
    faux.set_responses(
        [lambda *_: faux_assistant_message("secret"), lambda *_: faux_assistant_message("drop me")]
    )
    ends: list[MessageEndEvent] = []
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    async with open_session(make_runner(a, b), faux, registry, manager=manager) as session:
        session.subscribe(lambda e: ends.append(e) if isinstance(e, MessageEndEvent) else None)
        await session.prompt("one")
        await session.prompt("two")
        state = [text_of(m) for m in session.messages]
    assert seen_by_b == ["[redacted]"]  # the dropped message stopped the chain at A
    assert state == ["one", "[redacted]", "two"]
    path = manager.get_session_file()
    assert path is not None
    stored = [
        text_of(e.message)
        for e in SessionManager.open(path).get_entries()
        if isinstance(e, SessionMessageEntry)
    ]
    assert stored == ["one", "[redacted]", "two"]
    assert [(text_of(e.message), bool(e.dropped)) for e in ends] == [
        ("one", False),
        ("[redacted]", False),
        ("two", False),
        ("drop me", True),
    ]


# --------------------------------------------------------------------------- abort


def _hang_on(reason: str) -> Any:
    def register(pi: ExtensionAPI) -> None:
        async def handler(event: Any, ctx: Any) -> Any:
            if event.reason == reason:
                await trio.sleep_forever()

        pi.on("context", handler)

    return register


def _hang_message_end(pi: ExtensionAPI) -> None:
    async def handler(event: Any, ctx: Any) -> Any:
        if isinstance(event.message, AssistantMessage):
            await trio.sleep_forever()

    pi.on("message_end", handler)


@pytest.mark.parametrize(
    "register",
    [
        _hang_on("before_request"),
        _hang_on("ephemeral"),
        _hang_on("turn_end"),
        _hang_message_end,
    ],
    ids=["before_request", "ephemeral", "turn_end", "message_end"],
)
async def test_abort_during_a_slow_context_or_message_end_handler_is_quick(
    register: Any, autojump_clock: trio.testing.MockClock
) -> None:
    """abort() while a context handler (each reason) or message_end handler hangs: the
    session is idle again within 100 ms of virtual time."""
    faux, registry = make_faux()
    faux.set_responses([Recorder()])
    async with open_session(make_runner(register), faux, registry) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prompt, "go")
            await trio.testing.wait_all_tasks_blocked()
            assert session.is_streaming
            start = trio.current_time()
            await session.abort()
            assert trio.current_time() - start < QUIET_WITHIN
        assert not session.is_streaming


# --------------------------------------------------------------------------- /context


async def test_context_over_rpc_get_context_and_a_prompt(tmp_path: pathlib.Path) -> None:
    """get_context answers the view; a /context prompt is answered without a run; --ephemeral
    runs the ephemeral hooks without writing anything."""

    def register(pi: ExtensionAPI) -> None:
        def handler(event: Any, ctx: Any) -> Any:
            if event.reason != "ephemeral":
                return None
            note = {"role": "user", "content": "[eph]", "timestamp": 1}
            return {"patch": [{"op": "messages_uncached_append", "messages": [note]}]}

        pi.on("context", handler)

    faux, registry = make_faux()
    faux.set_responses([Recorder()])
    manager = SessionManager.in_memory("/project")
    answers: list[rpc.RpcResponse] = []

    async def respond(response: rpc.RpcResponse) -> None:
        answers.append(response)

    async with open_session(make_runner(register), faux, registry, manager=manager) as session:
        await session.prompt("hello")
        commands = SessionCommands(session)
        entries = len(manager.get_entries())
        await commands.run(rpc.decode_command({"type": "get_context", "id": 1}), respond)
        await commands.run(
            rpc.decode_command({"type": "get_context", "ephemeral": True, "full": True, "id": 2}),
            respond,
        )
        await commands.run(
            rpc.decode_command({"type": "prompt", "message": "/context --ephemeral", "id": 3}),
            respond,
        )
        await commands.run(
            rpc.decode_command({"type": "prompt", "message": "/context --nope", "id": 4}),
            respond,
        )
        assert len(manager.get_entries()) == entries
    assert faux.state.call_count == 1
    plain, full, prompted, bad = answers
    assert plain.success and plain.command == "get_context"
    assert plain.data["envelope"]["messages"]["uncached"] == []
    assert "Messages: 2 cached, 0 uncached" in plain.data["text"]
    assert full.data["ephemeral"] and len(full.data["envelope"]["messages"]["uncached"]) == 1
    assert '"compiled"' in full.data["text"]
    assert prompted.success and prompted.command == "prompt" and prompted.id == 3
    assert "(uncached) user: [eph]" in prompted.data["text"]
    assert not bad.success and "--nope" in (bad.error or "")


def test_pitrio_context_prints_the_session_and_calls_no_model(tmp_path: pathlib.Path) -> None:
    """pitrio --context -c prints the summary of the continued session and exits 0; --mode
    json with a /context prompt writes it as one JSON line."""
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "PITRIO_OFFLINE": "1"}
    cwd = tmp_path / "work"
    cwd.mkdir()

    def pitrio(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pitrio", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    first = pitrio("--provider", "faux", "-p", "hello")
    assert first.returncode == 0, first.stderr
    # No --provider: no key for any real model is needed, since no model is called.
    shown = pitrio("-c", "--context")
    assert shown.returncode == 0, shown.stderr
    assert "Messages: 2 cached, 0 uncached" in shown.stdout
    assert "Tools (4): read, bash, edit, write" in shown.stdout
    full = pitrio("-c", "--context", "--full")
    assert full.returncode == 0 and '"compiled"' in full.stdout
    lines = pitrio("--provider", "faux", "--mode", "json", "-c", "/context")
    assert lines.returncode == 0, lines.stderr
    record = json.loads(lines.stdout.splitlines()[-1])
    assert record["type"] == "context" and len(record["envelope"]["messages"]["cached"]) == 2
    usage = pitrio("--full")
    assert usage.returncode == 2 and "--context" in usage.stderr
