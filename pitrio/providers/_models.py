"""The model catalogue: built-in models (a data file) plus the caller's own, and cost.

``models.json`` beside this module holds pi 0.73.1's built-in catalogue (ids, context windows,
max tokens, prices in dollars per million tokens), as ``{provider: {model_id: Model}}`` in pi's
JSON. It is read on first use, not at import.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import Final

import attrs
import orjson

from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.providers._messages import Cost, Model, ModelThinkingLevel, Usage
from pitrio.providers._registry import ProviderError

CATALOGUE_RESOURCE: Final = "models.json"
THINKING_LEVELS: Final[tuple[ModelThinkingLevel, ...]] = (
    "off",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
)


class ModelCatalogue:
    """Models by provider and id. Later additions replace earlier ones with the same key."""

    def __init__(self, models: Iterable[Model] = (), *, builtin: bool = True) -> None:
        self._models: dict[str, dict[str, Model]] = {}
        self._shared = False
        """Whether the tables are shared with a :meth:`copy` (copied before a change)."""
        self._builtin_loaded = not builtin
        for model in models:
            self.add(model)

    def _ensure_builtin(self) -> None:
        if self._builtin_loaded:
            return
        self._builtin_loaded = True
        raw = resources.files("pitrio.providers").joinpath(CATALOGUE_RESOURCE).read_bytes()
        own = self._models
        self._models = {}
        for provider, models in orjson.loads(raw).items():
            table = self._models.setdefault(provider, {})
            for model_id, data in models.items():
                table[model_id] = PROVIDERS_CODEC.from_wire(Model, data)
        for provider, models in own.items():  # the caller's models win over built-ins
            self._models.setdefault(provider, {}).update(models)

    def copy(self) -> ModelCatalogue:
        """A catalogue of the same models, independent of this one.

        It shares this one's tables until either adds a model (copy on write): a host builds
        a catalogue per session, and copying the built-in tables cost each session ~25 KB.
        """
        self._ensure_builtin()
        clone = ModelCatalogue(builtin=False)
        clone._models = self._models
        clone._shared = self._shared = True
        return clone

    def add(self, model: Model) -> None:
        """Add or replace ``model`` under ``(model.provider, model.id)``."""
        if self._shared:
            self._models = {provider: dict(table) for provider, table in self._models.items()}
            self._shared = False
        self._models.setdefault(model.provider, {})[model.id] = model

    def get(self, provider: str, model_id: str) -> Model | None:
        """Return the model, or ``None`` when the catalogue has no such model."""
        self._ensure_builtin()
        return self._models.get(provider, {}).get(model_id)

    def models(self, provider: str) -> list[Model]:
        """Return every model of ``provider`` (empty for an unknown provider)."""
        self._ensure_builtin()
        return list(self._models.get(provider, {}).values())

    def providers(self) -> list[str]:
        """Return every provider with at least one model."""
        self._ensure_builtin()
        return list(self._models)


default_catalogue: Final = ModelCatalogue()
"""The built-in catalogue the module-level functions read."""


class ModelNotFound(ProviderError, LookupError):
    """The catalogue has no model with this provider and id.

    Attributes:
        provider, model_id: what was looked up.
    """

    def __init__(self, provider: str, model_id: str, known: list[str]) -> None:
        hint = f"; {provider} has: {', '.join(known[:12])}" if known else ""
        more = " ..." if len(known) > 12 else ""
        super().__init__(f"Unknown model {provider}/{model_id}{hint}{more}")
        self.provider = provider
        self.model_id = model_id


def get_model(provider: str, model_id: str) -> Model:
    """Return a built-in model.

    Raises:
        ModelNotFound: naming the provider's known models.
    """
    model = default_catalogue.get(provider, model_id)
    if model is None:
        known = [m.id for m in default_catalogue.models(provider)]
        raise ModelNotFound(provider, model_id, known)
    return model


def get_models(provider: str) -> list[Model]:
    """Return the built-in models of ``provider``."""
    return default_catalogue.models(provider)


def get_providers() -> list[str]:
    """Return the providers of the built-in catalogue."""
    return default_catalogue.providers()


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Return the dollar cost of ``usage`` at ``model``'s prices (per million tokens)."""
    price = model.cost
    cost_input = price.input / 1_000_000 * usage.input
    cost_output = price.output / 1_000_000 * usage.output
    cost_read = price.cache_read / 1_000_000 * usage.cache_read
    cost_write = price.cache_write / 1_000_000 * usage.cache_write
    return Cost(
        input=cost_input,
        output=cost_output,
        cache_read=cost_read,
        cache_write=cost_write,
        total=cost_input + cost_output + cost_read + cost_write,
    )


def with_cost(model: Model, usage: Usage) -> Usage:
    """Return ``usage`` with its cost computed from ``model``'s prices."""
    return attrs.evolve(usage, cost=calculate_cost(model, usage))


def supported_thinking_levels(model: Model) -> list[ModelThinkingLevel]:
    """Return the thinking levels ``model`` supports (``["off"]`` for non-reasoning models).

    ``xhigh`` is only offered when the model's ``thinking_level_map`` names it; a level mapped to
    ``None`` is unsupported.
    """
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    levels: list[ModelThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level == "xhigh" and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ModelThinkingLevel) -> ModelThinkingLevel:
    """Return ``level`` if ``model`` supports it, else the nearest higher, else lower, level."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    requested = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[requested:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:requested]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def models_are_equal(a: Model | None, b: Model | None) -> bool:
    """Return whether ``a`` and ``b`` are the same model (same id and provider)."""
    return a is not None and b is not None and a.id == b.id and a.provider == b.provider
