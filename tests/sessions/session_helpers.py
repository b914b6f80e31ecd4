"""Scaffolding for the AgentSession, compaction and retry tests: a faux model, scripted replies,
a session factory and an event recorder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from pitrio.codec import to_wire
from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxModelDefinition,
    FauxProvider,
    Model,
    ProviderRegistry,
    StopReason,
    TextContent,
    UserMessage,
    faux_assistant_message,
    register_faux_provider,
)
from pitrio.sessions import SessionManager
from pitrio.sessions.compaction._compaction_prompts import SUMMARIZATION_SYSTEM_PROMPT
from pitrio.sessions.runtime._agent_session import AgentSession, open_agent_session
from pitrio.sessions.settings._settings import SettingsManager

OLD_CLOCK_MS = 1_000_000_000_000
"""Entry timestamps (2001): earlier than every message, so compaction checks never take a
response for one from before the latest compaction."""


def make_faux(
    *, context_window: int = 128_000, reasoning: bool = False, models: Sequence[str] = ("faux-1",)
) -> tuple[FauxProvider, ProviderRegistry]:
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        token_size=(64, 64),
        registry=registry,
        models=[
            FauxModelDefinition(id=name, context_window=context_window, reasoning=reasoning)
            for name in models
        ],
    )
    return faux, registry


def model_of(faux: FauxProvider, model_id: str | None = None) -> Model:
    """A model of the faux provider (asserted to exist)."""
    found = faux.get_model(model_id)
    assert found is not None
    return found


def reply(
    text: str = "ok", stop_reason: StopReason = "stop", error: str | None = None
) -> Callable[..., AssistantMessage]:
    """A response built when the request arrives (so its timestamp is the current time)."""

    def respond(*_: Any) -> AssistantMessage:
        return faux_assistant_message(text, stop_reason=stop_reason, error_message=error)

    return respond


def gated(gate: trio.Event, text: str) -> Callable[..., Awaitable[AssistantMessage]]:
    """A response that waits for ``gate`` (the run stays busy until the test sets it)."""

    async def respond(*_: Any) -> AssistantMessage:
        await gate.wait()
        return faux_assistant_message(text)

    return respond


def fail(error: str) -> Callable[..., AssistantMessage]:
    """An error response with ``error`` as its message."""

    def respond(*_: Any) -> AssistantMessage:
        return faux_assistant_message([], stop_reason="error", error_message=error)

    return respond


class Summaries:
    """A response factory that records summarisation requests and answers them."""

    def __init__(self, text: str = "SUMMARY") -> None:
        self.text = text
        self.requests: list[Context] = []

    def __call__(self, context: Context, *_: Any) -> AssistantMessage:
        assert context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT, "not a summary request"
        self.requests.append(context)
        return faux_assistant_message(f"{self.text} {len(self.requests)}")

    def prompt(self, index: int = -1) -> str:
        message = self.requests[index].messages[0]
        assert isinstance(message, UserMessage) and not isinstance(message.content, str)
        block = message.content[0]
        assert isinstance(block, TextContent)
        return block.text


def file_manager(tmp_path: Path, **options: Any) -> SessionManager:
    return SessionManager.create(str(tmp_path / "project"), str(tmp_path / "sessions"), **options)


@asynccontextmanager
async def open_session(
    faux: FauxProvider,
    registry: ProviderRegistry,
    *,
    manager: SessionManager | None = None,
    settings: SettingsManager | dict[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[AgentSession]:
    if manager is None:
        manager = SessionManager.in_memory("/project", clock=lambda: OLD_CLOCK_MS)
    if not isinstance(settings, SettingsManager):
        settings = SettingsManager.in_memory(settings or {})
    options.setdefault("model", model_of(faux))
    options.setdefault("models", faux.models)
    async with open_agent_session(
        session_manager=manager, settings=settings, registry=registry, **options
    ) as session:
        yield session


class Events:
    """Collects every session event."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def wire(self, kind: str) -> list[Any]:
        return [to_wire(e) for e in self.of(kind)]
