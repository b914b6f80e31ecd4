"""One command vocabulary: a pi RPC command decodes into the very class that the
:class:`~pitrio.sessions.AgentSession` facade sends for the same operation."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, get_args

import pytest
import trio

from pitrio.host import decode_command
from pitrio.providers import ImageContent, ProviderRegistry, faux_assistant_message
from pitrio.providers import register_faux_provider as register
from pitrio.sessions import AgentSession, SessionManager, open_agent_session
from pitrio.sessions import commands as cmd
from pitrio.sessions.runtime._session_actor import SessionActor
from pitrio.sessions.settings._settings import SettingsManager

Call = Callable[[AgentSession], Awaitable[Any]]

PAIRS: list[tuple[dict[str, Any], Call]] = [
    ({"type": "prompt", "message": "hi"}, lambda s: s.prompt("hi")),
    ({"type": "steer", "message": "hi"}, lambda s: s.steer("hi")),
    ({"type": "follow_up", "message": "hi"}, lambda s: s.follow_up("hi")),
    ({"type": "abort"}, lambda s: s.abort()),
    ({"type": "new_session"}, lambda s: s.new_session()),
    (
        {"type": "set_model", "provider": "faux", "modelId": "faux-1"},
        lambda s: s.set_model(s.available_models[0]),
    ),
    ({"type": "cycle_model"}, lambda s: s.cycle_model()),
    ({"type": "set_thinking_level", "level": "high"}, lambda s: s.set_thinking_level("high")),
    ({"type": "cycle_thinking_level"}, lambda s: s.cycle_thinking_level()),
    ({"type": "set_steering_mode", "mode": "all"}, lambda s: s.set_steering_mode("all")),
    ({"type": "set_follow_up_mode", "mode": "all"}, lambda s: s.set_follow_up_mode("all")),
    ({"type": "compact"}, lambda s: s.compact()),
    (
        {"type": "set_auto_compaction", "enabled": False},
        lambda s: s.set_auto_compaction_enabled(False),
    ),
    ({"type": "set_auto_retry", "enabled": False}, lambda s: s.set_auto_retry_enabled(False)),
    ({"type": "abort_retry"}, lambda s: s.abort_retry()),
    ({"type": "bash", "command": "echo hi"}, lambda s: s.execute_bash("echo hi")),
    ({"type": "abort_bash"}, lambda s: s.abort_bash()),
    (
        {"type": "switch_session", "sessionPath": "/nowhere.jsonl"},
        lambda s: s.switch_session("/nowhere.jsonl"),
    ),
    ({"type": "fork", "entryId": "nope"}, lambda s: s.fork("nope")),
    ({"type": "set_session_name", "name": "x"}, lambda s: s.set_session_name("x")),
]


@pytest.mark.parametrize(("record", "call"), PAIRS, ids=[r["type"] for r, _ in PAIRS])
async def test_an_rpc_command_decodes_into_the_class_the_facade_sends(
    record: dict[str, Any], call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decoded command is an instance of the one class the facade sent to the session's
    inbox for the same operation (a class of :mod:`pitrio.sessions.commands`)."""
    sent: list[Any] = []
    send = SessionActor.send

    async def spy(self: SessionActor, command: cmd.SessionCommand) -> None:
        sent.append(command)
        await send(self, command)

    monkeypatch.setattr(SessionActor, "send", spy)
    registry = ProviderRegistry()
    faux = register(api="faux", registry=registry)
    faux.set_responses([faux_assistant_message("ok")] * 2)
    async with open_agent_session(
        session_manager=SessionManager.in_memory("/project"),
        settings=SettingsManager.in_memory({}),
        registry=registry,
        model=faux.get_model(),
        models=faux.models,
    ) as session:
        with contextlib.suppress(Exception), trio.fail_after(10):
            await call(session)
    decoded = decode_command(record).command
    assert sent, "the facade sent no command"
    assert type(decoded) is type(sent[0])
    assert type(decoded) in get_args(cmd.SessionCommand)


def test_a_prompt_decodes_with_pis_field_semantics() -> None:
    """``prompt``'s JSON fields land in the session's Prompt: the message, the images as
    ImageContent, pi's ``streamingBehavior`` ("followUp" follows up, any other value steers),
    and the input source ``"rpc"``."""
    request = decode_command(
        {
            "id": 7,
            "type": "prompt",
            "message": "look",
            "images": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            "streamingBehavior": "followUp",
        }
    )
    command = request.command
    assert isinstance(command, cmd.Prompt)
    assert (request.id, request.name) == (7, "prompt")
    assert command.message == "look"
    assert command.images == (ImageContent(data="AAAA", mime_type="image/png"),)
    assert command.streaming_behavior == "follow_up"
    assert command.source == "rpc"
    steer = decode_command({"type": "prompt", "message": "m", "streamingBehavior": "steer"})
    assert isinstance(steer.command, cmd.Prompt)
    assert steer.command.streaming_behavior == "steer"
