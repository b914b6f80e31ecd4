"""The session actor's model and thinking-level commands (``set_model``, ``cycle_model``,
``set_thinking_level``, ``cycle_thinking_level``), as a mixin of
:class:`~pitrio.sessions.runtime._session_actor.SessionActor`.

Each changes the state, answers, then publishes and runs the hooks (see :func:`ack`), and saves
the new defaults in the settings off the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from pitrio._awaitable import maybe_await
from pitrio._exceptions import UsageError
from pitrio.channels import Reply
from pitrio.providers import (
    Model,
    ModelThinkingLevel,
    clamp_thinking_level,
    models_are_equal,
    supported_thinking_levels,
)
from pitrio.sessions.runtime import _session_commands as cmd
from pitrio.sessions.runtime._agent_session_tree import DEFAULT_THINKING_LEVEL
from pitrio.sessions.runtime._agent_session_types import (
    ModelCycleResult,
    ScopedModel,
    ThinkingLevelChangedEvent,
)
from pitrio.sessions.runtime._session_core import SessionSlots

if TYPE_CHECKING:
    from pitrio.actors import Agent
    from pitrio.sessions.runtime._agent_session_types import AgentSessionEvent
    from pitrio.sessions.settings._settings import SettingsManager
    from pitrio.sessions.storage._manager import SessionManager

__all__ = ["THINKING_LEVELS", "ModelCommands", "ack"]

THINKING_LEVELS: Final[tuple[ModelThinkingLevel, ...]] = ("off", "minimal", "low", "medium", "high")


def ack(reply: Reply[Any], value: Any = None) -> None:
    """Answer now if the sender is a listener that the coming publish would wait for; every
    other sender is answered after the command's events and hooks (a second answer is
    ignored)."""
    if reply.eager:
        reply.set(value)


class ModelCommands(SessionSlots):
    """Model and thinking-level commands; the actor provides the attributes annotated here."""

    __slots__ = ()  # the attributes are SessionSlots' slots

    agent: Agent
    session_manager: SessionManager
    settings: SettingsManager
    _models: tuple[Model, ...]
    _scoped_models: tuple[ScopedModel, ...]
    _has_auth: Any

    async def emit(self, event: AgentSessionEvent) -> None:
        raise NotImplementedError

    async def hook(self, name: str, *args: Any) -> Any:
        raise NotImplementedError

    @property
    def model(self) -> Model | None:
        return self.agent.model

    @property
    def thinking_level(self) -> ModelThinkingLevel:
        return self.agent.thinking_level

    def supports_thinking(self) -> bool:
        return bool(self.model is not None and self.model.reasoning)

    def available_thinking_levels(self) -> list[ModelThinkingLevel]:
        if self.model is None:
            return list(THINKING_LEVELS)
        return supported_thinking_levels(self.model)

    async def _set_model(self, command: cmd.SetModel) -> None:
        model = command.model
        if model is None:  # pi's RPC set_model: one of the session's models, by name
            model = next(
                (
                    m
                    for m in self._models
                    if m.provider == command.provider and m.id == command.model_id
                ),
                None,
            )
            if model is None:
                raise UsageError(f"Model not found: {command.provider}/{command.model_id}")
        if self._has_auth is not None and not await maybe_await(self._has_auth(model)):
            raise UsageError(f"No API key for {model.provider}/{model.id}")
        previous = self.model
        level = self._thinking_level_for_switch()
        await self.agent.set_model(model)
        self.session_manager.append_model_change(model.provider, model.id)
        change = await self._apply_thinking_level(level)
        ack(command.reply, model)
        await self.settings.aset_default_model_and_provider(model.provider, model.id)
        await self._announce_thinking_level(change)
        if not models_are_equal(previous, model):
            await self.hook("model_select", model, previous, "set")
        command.reply.set(model)

    async def _cycle_model(self, command: cmd.CycleModel) -> None:
        scoped = bool(self._scoped_models)
        candidates: Sequence[ScopedModel] = self._scoped_models or [
            ScopedModel(model=m) for m in self._models
        ]
        if self._has_auth is not None:
            candidates = [c for c in candidates if await maybe_await(self._has_auth(c.model))]
        if len(candidates) <= 1:
            command.reply.set(None)
            return
        current = self.model
        index = next((i for i, c in enumerate(candidates) if models_are_equal(c.model, current)), 0)
        step = 1 if command.direction == "forward" else -1
        chosen = candidates[(index + step) % len(candidates)]
        level = self._thinking_level_for_switch(chosen.thinking_level)
        await self.agent.set_model(chosen.model)
        self.session_manager.append_model_change(chosen.model.provider, chosen.model.id)
        change = await self._apply_thinking_level(level)
        result = ModelCycleResult(
            model=chosen.model, thinking_level=self.thinking_level, is_scoped=scoped
        )
        ack(command.reply, result)
        await self.settings.aset_default_model_and_provider(chosen.model.provider, chosen.model.id)
        await self._announce_thinking_level(change)
        await self.hook("model_select", chosen.model, current, "cycle")
        command.reply.set(result)

    def _thinking_level_for_switch(
        self, explicit: ModelThinkingLevel | None = None
    ) -> ModelThinkingLevel:
        if explicit is not None:
            return explicit
        if not self.supports_thinking():
            default = self.settings.default_thinking_level or DEFAULT_THINKING_LEVEL
            return cast(ModelThinkingLevel, default)
        return self.thinking_level

    async def _apply_thinking_level(
        self, level: ModelThinkingLevel
    ) -> tuple[ModelThinkingLevel, ModelThinkingLevel] | None:
        """Set the level (clamped); record a change; return ``(new, previous)`` if it changed."""
        available = self.available_thinking_levels()
        if level in available:
            effective = level
        else:
            effective = clamp_thinking_level(self.model, level) if self.model else "off"
        previous = self.thinking_level
        await self.agent.set_thinking_level(effective)
        if effective == previous:
            return None
        self.session_manager.append_thinking_level_change(effective)
        return effective, previous

    async def _announce_thinking_level(
        self, change: tuple[ModelThinkingLevel, ModelThinkingLevel] | None
    ) -> None:
        if change is None:
            return
        effective, previous = change
        if self.supports_thinking() or effective != "off":
            await self.settings.aset_default_thinking_level(effective)
        await self.emit(ThinkingLevelChangedEvent(level=effective))
        await self.hook("thinking_level_select", effective, previous)
