"""Choosing the model from command-line flags, settings and the API keys present (pi's rules).

``--model`` takes an id, ``provider/id``, or a fuzzy pattern (a substring of an id or name,
aliases preferred over dated versions), with an optional ``:thinking`` suffix. Without it, the
settings' default provider and model are used, then the first provider with an API key, in
pi's order of preference. ``faux`` needs no key and always works.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, get_args

import attrs

from pitrio.providers import Model, ThinkingLevel

DEFAULT_MODEL_PER_PROVIDER: Final[dict[str, str]] = {
    "amazon-bedrock": "us.anthropic.claude-opus-4-6-v1",
    "anthropic": "claude-opus-4-7",
    "openai": "gpt-5.4",
    "azure-openai-responses": "gpt-5.4",
    "openai-codex": "gpt-5.5",
    "deepseek": "deepseek-v4-pro",
    "google": "gemini-3.1-pro-preview",
    "google-vertex": "gemini-3.1-pro-preview",
    "github-copilot": "gpt-5.4",
    "openrouter": "moonshotai/kimi-k2.6",
    "vercel-ai-gateway": "zai/glm-5.1",
    "xai": "grok-4.20-0309-reasoning",
    "groq": "openai/gpt-oss-120b",
    "cerebras": "zai-glm-4.7",
    "zai": "glm-5.1",
    "mistral": "devstral-medium-latest",
    "minimax": "MiniMax-M2.7",
    "minimax-cn": "MiniMax-M2.7",
    "moonshotai": "kimi-k2.6",
    "moonshotai-cn": "kimi-k2.6",
    "huggingface": "moonshotai/Kimi-K2.6",
    "fireworks": "accounts/fireworks/models/kimi-k2p6",
    "opencode": "kimi-k2.6",
    "opencode-go": "kimi-k2.6",
    "kimi-coding": "kimi-for-coding",
    "cloudflare-workers-ai": "@cf/moonshotai/kimi-k2.6",
    "cloudflare-ai-gateway": "workers-ai/@cf/moonshotai/kimi-k2.6",
    "xiaomi": "mimo-v2.5-pro",
}
"""The model each provider starts with when only the provider is known (pi 0.73.1's table)."""

THINKING_LEVELS: Final[tuple[str, ...]] = ("off", *get_args(ThinkingLevel))
_DATED: Final = re.compile(r"-\d{8}$")


@attrs.frozen
class Resolved:
    """The outcome of resolving flags: a model (or an error) and what the user should know."""

    model: Model | None = None
    thinking_level: str | None = None
    warning: str | None = None
    error: str | None = None


def is_thinking_level(text: str) -> bool:
    return text in THINKING_LEVELS


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or not _DATED.search(model_id)


def find_exact(reference: str, models: Sequence[Model]) -> Model | None:
    """An exact ``id`` or ``provider/id`` match (case-insensitive); ambiguous ids match nothing."""
    ref = reference.strip()
    if not ref:
        return None
    lower = ref.lower()
    canonical = [m for m in models if f"{m.provider}/{m.id}".lower() == lower]
    if canonical:
        return canonical[0] if len(canonical) == 1 else None
    provider, slash, model_id = ref.partition("/")
    if slash and provider.strip() and model_id.strip():
        matches = [
            m
            for m in models
            if m.provider.lower() == provider.strip().lower()
            and m.id.lower() == model_id.strip().lower()
        ]
        if matches:
            return matches[0] if len(matches) == 1 else None
    by_id = [m for m in models if m.id.lower() == lower]
    return by_id[0] if len(by_id) == 1 else None


def _match(pattern: str, models: Sequence[Model]) -> Model | None:
    exact = find_exact(pattern, models)
    if exact is not None:
        return exact
    needle = pattern.lower()
    matches = [m for m in models if needle in m.id.lower() or needle in m.name.lower()]
    if not matches:
        return None
    aliases = [m for m in matches if _is_alias(m.id)]
    pool = aliases or matches
    return max(pool, key=lambda m: _locale_key(m.id))


def _locale_key(text: str) -> tuple[tuple[int, str], ...]:
    # pi sorts with String.localeCompare: punctuation before digits before letters, letters
    # compared without case first. Code-point order would put "~model" after every letter.
    return tuple((2 if c.isalpha() else 1 if c.isdigit() else 0, c.lower()) for c in text)


def parse_model_pattern(
    pattern: str, models: Sequence[Model], *, allow_invalid_thinking: bool = True
) -> Resolved:
    """Match ``pattern``; a ``:suffix`` that is not part of a model id may be a thinking level."""
    found = _match(pattern, models)
    if found is not None:
        return Resolved(found)
    prefix, colon, suffix = pattern.rpartition(":")
    if not colon:
        return Resolved()
    if is_thinking_level(suffix):
        inner = parse_model_pattern(prefix, models, allow_invalid_thinking=allow_invalid_thinking)
        if inner.model is not None and inner.warning is None:
            return attrs.evolve(inner, thinking_level=suffix)
        return inner
    if not allow_invalid_thinking:
        return Resolved()
    inner = parse_model_pattern(prefix, models, allow_invalid_thinking=allow_invalid_thinking)
    if inner.model is None:
        return inner
    return Resolved(
        inner.model,
        warning=f'Invalid thinking level "{suffix}" in pattern "{pattern}". Using default instead.',
    )


def resolve_cli_model(provider: str | None, pattern: str, models: Sequence[Model]) -> Resolved:
    """Resolve ``--provider`` and ``--model`` as pi's ``resolveCliModel`` does."""
    if not models:
        return Resolved(error="No models available. Add models to models.json.")
    providers = {m.provider.lower(): m.provider for m in models}
    chosen = providers.get(provider.lower()) if provider else None
    if provider and chosen is None:
        hint = "Use --list-models to see available providers/models."
        return Resolved(error=f'Unknown provider "{provider}". {hint}')
    inferred = False
    if chosen is None:
        maybe, slash, rest = pattern.partition("/")
        if slash and maybe.lower() in providers:
            chosen, pattern, inferred = providers[maybe.lower()], rest, True
    if chosen is None:
        exact = find_exact(pattern, models)
        if exact is not None:
            return Resolved(exact)
    elif provider and pattern.lower().startswith(f"{chosen}/".lower()):
        pattern = pattern[len(chosen) + 1 :]
    candidates = [m for m in models if m.provider == chosen] if chosen else list(models)
    result = parse_model_pattern(pattern, candidates, allow_invalid_thinking=False)
    if result.model is not None:
        return result
    if inferred:
        whole = f"{chosen}/{pattern}"
        exact = find_exact(whole, models)
        if exact is not None:
            return Resolved(exact)
        fallback = parse_model_pattern(whole, models, allow_invalid_thinking=False)
        if fallback.model is not None:
            return fallback
    if chosen is not None:
        same = [m for m in models if m.provider == chosen]
        if same:
            default_id = DEFAULT_MODEL_PER_PROVIDER.get(chosen)
            base = next((m for m in same if m.id == default_id), same[0])
            note = f'Model "{pattern}" not found for provider "{chosen}". Using custom model id.'
            return Resolved(attrs.evolve(base, id=pattern, name=pattern), warning=note)
    shown = f"{chosen}/{pattern}" if chosen else pattern
    return Resolved(error=f'Model "{shown}" not found. Use --list-models to see available models.')


def first_available(models: Sequence[Model], has_auth: Callable[[Model], bool]) -> Model | None:
    """The first model with credentials, preferring each provider's default model in pi's order."""
    available = [m for m in models if has_auth(m)]
    for provider, model_id in DEFAULT_MODEL_PER_PROVIDER.items():
        for model in available:
            if model.provider == provider and model.id == model_id:
                return model
    return available[0] if available else None


_GLOB_CHARS: Final = ("*", "?", "[")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """minimatch's rules for the patterns ``--models`` takes: ``*`` and ``?`` stay within one
    path segment, ``[...]`` is a character class; matching ignores case."""
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\")
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out), re.IGNORECASE)


def resolve_model_scope(
    patterns: Sequence[str], models: Sequence[Model]
) -> tuple[list[tuple[Model, str | None]], list[str]]:
    """The models ``--models`` (or the ``enabledModels`` setting) names, as pi's
    ``resolveModelScope``: each pattern a glob over ``provider/id`` or ``id`` (with an optional
    ``:thinking``), else a model pattern as ``--model`` takes; duplicates dropped.

    Args:
        models: the models that have credentials.

    Returns:
        ``(model, thinking level or None)`` pairs in pattern order, and warnings.
    """
    scoped: list[tuple[Model, str | None]] = []
    warnings: list[str] = []

    def add(model: Model, thinking: str | None) -> None:
        if not any(m.provider == model.provider and m.id == model.id for m, _ in scoped):
            scoped.append((model, thinking))

    for pattern in patterns:
        if any(char in pattern for char in _GLOB_CHARS):
            glob, colon, suffix = pattern.rpartition(":")
            thinking = suffix if colon and is_thinking_level(suffix) else None
            regex = _glob_regex(glob if thinking else pattern)
            matching = [
                m
                for m in models
                if regex.fullmatch(f"{m.provider}/{m.id}") or regex.fullmatch(m.id)
            ]
            if not matching:
                warnings.append(f'No models match pattern "{pattern}"')
            for model in matching:
                add(model, thinking)
            continue
        resolved = parse_model_pattern(pattern, models)
        if resolved.warning:
            warnings.append(resolved.warning)
        if resolved.model is None:
            warnings.append(f'No models match pattern "{pattern}"')
            continue
        add(resolved.model, resolved.thinking_level)
    return scoped, warnings
