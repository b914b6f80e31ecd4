"""Scaffolding for the extension tests: a faux model, runners built from register functions,
and a session opened with a runner as its hooks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from pitrio.extensions import (
    Extension,
    ExtensionAPI,
    ExtensionRunner,
    HeadlessUI,
    open_extension_session,
)
from pitrio.providers import (
    AssistantMessage,
    FauxModelDefinition,
    FauxProvider,
    ProviderRegistry,
    faux_assistant_message,
    register_faux_provider,
)
from pitrio.sessions import SessionManager
from pitrio.sessions.settings._settings import SettingsManager

OLD_CLOCK_MS = 1_000_000_000_000


def make_faux() -> tuple[FauxProvider, ProviderRegistry]:
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        token_size=(64, 64),
        registry=registry,
        models=[FauxModelDefinition(id="faux-1"), FauxModelDefinition(id="faux-2")],
    )
    return faux, registry


def reply(text: str = "ok") -> Callable[..., AssistantMessage]:
    def respond(*_: Any) -> AssistantMessage:
        return faux_assistant_message(text)

    return respond


def make_runner(
    *registers: Callable[[ExtensionAPI], Any], cwd: str = "/project"
) -> ExtensionRunner:
    """A runner with one extension per register function (named ext0, ext1 ...)."""
    runner = ExtensionRunner(cwd=cwd, ui=HeadlessUI())
    for index, register in enumerate(registers):
        extension = Extension(path=f"ext{index}")
        register(ExtensionAPI(extension, runner))
        runner.extensions.append(extension)
    return runner


class Log:
    """Records (label, detail) pairs: what ran, in order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def __call__(self, label: str, detail: Any = None) -> None:
        self.items.append((label, detail))

    def labels(self) -> list[str]:
        return [label for label, _ in self.items]


@asynccontextmanager
async def open_session(
    runner: ExtensionRunner,
    faux: FauxProvider,
    registry: ProviderRegistry,
    *,
    manager: SessionManager | None = None,
    tools: Sequence[Any] = (),
    **options: Any,
) -> AsyncIterator[Any]:
    if manager is None:
        manager = SessionManager.in_memory("/project", clock=lambda: OLD_CLOCK_MS)
    model = faux.get_model()
    assert model is not None
    async with open_extension_session(
        runner,
        session_manager=manager,
        settings=SettingsManager.in_memory({}),
        registry=registry,
        model=model,
        models=faux.models,
        tools=tools,
        **options,
    ) as session:
        yield session
