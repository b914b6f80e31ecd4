"""Compatibility settings for OpenAI-compatible Chat Completions servers, and presets for them.

Many servers speak the ``openai-completions`` wire API with small differences: which role the
system prompt takes, which field caps the output, how reasoning is switched on, whether
``store`` or ``stream_options`` are understood. pi describes these differences with the flags
of ``OpenAICompletionsCompat`` (a model's ``compat`` object, camelCase keys) and detects sensible
values from the model's provider and base URL. :func:`get_compat` ports that detection and
overlay; :class:`CompletionsCompat` holds the resolved flags.

:data:`OPENAI_COMPATIBLE_PRESETS` names the servers people run most, with the base URL and
API-key environment variable pi uses for them, and :func:`openai_compatible_model` builds a
:class:`~pitrio.providers.Model` for one::

    model = openai_compatible_model("ollama", "llama3.1:8b")
    model = openai_compatible_model("groq", "llama-3.3-70b-versatile")

A preset's ``compat`` holds the flags that pi would detect from the service's real base URL
(so a preset model behaves the same behind a proxy or a test server) plus the settings pi's
documentation recommends for local servers. Local servers need no API key.

Deviations from pi 0.73.1, each because pi no longer covers the case:

* Mistral: pi 0.73.1 talks to Mistral through its own SDK (``mistral-conversations``). The
  ``mistral`` preset uses Mistral's OpenAI-compatible endpoint with the flags earlier pi versions
  detected for ``mistral.ai`` (``max_tokens``, ``system`` role, tool-result ``name``, thinking
  replayed as text, 9-character tool-call ids). The last one is the pitrio-only compat key
  ``requiresMistralToolIds``.
* vLLM: pi's documentation names no URL; the preset uses vLLM's default port, 8000.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._messages import InputKind, Model, ModelCost
from pitrio.providers._models import default_catalogue
from pitrio.providers._registry import ProviderError

MaxTokensField: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
ThinkingFormat: TypeAlias = Literal[
    "openai", "openrouter", "deepseek", "zai", "qwen", "qwen-chat-template"
]

COMPLETIONS_API: Final = "openai-completions"


@attrs.frozen(kw_only=True)
class CompletionsCompat:
    """Resolved compatibility flags (pi's ``OpenAICompletionsCompat`` with every field set)."""

    supports_store: bool = True
    """Send ``store: false``."""
    supports_developer_role: bool = True
    """Reasoning models get the system prompt as a ``developer`` message (else ``system``)."""
    supports_reasoning_effort: bool = True
    """Send ``reasoning_effort`` (thinking format ``openai``)."""
    supports_usage_in_streaming: bool = True
    """Send ``stream_options: {include_usage: true}``."""
    max_tokens_field: MaxTokensField = "max_completion_tokens"
    requires_tool_result_name: bool = False
    """Tool results carry the tool's ``name``."""
    requires_assistant_after_tool_result: bool = False
    """A user message right after tool results needs a bridging assistant message."""
    requires_thinking_as_text: bool = False
    """Replay thinking as a text part instead of a reasoning field."""
    requires_reasoning_content_on_assistant_messages: bool = False
    """Replayed assistant messages of a reasoning model carry ``reasoning_content`` (maybe "")."""
    thinking_format: ThinkingFormat = "openai"
    open_router_routing: Mapping[str, Any] = attrs.field(factory=dict)
    vercel_gateway_routing: Mapping[str, Any] = attrs.field(factory=dict)
    zai_tool_stream: bool = False
    """Send ``tool_stream: true`` (z.ai) when tools are present."""
    supports_strict_mode: bool = True
    """Tool definitions carry ``strict: false``."""
    cache_control_format: Literal["anthropic"] | None = None
    """``"anthropic"``: mark the prompt with Anthropic-style ``cache_control``."""
    send_session_affinity_headers: bool = False
    """Send ``session_id``/``x-client-request-id``/``x-session-affinity`` headers."""
    supports_long_cache_retention: bool = True
    requires_mistral_tool_ids: bool = False
    """pitrio extension (pi < 0.60 had it): rewrite foreign tool-call ids to Mistral's format."""


# camelCase compat key (pi's models.json) -> CompletionsCompat attribute.
COMPAT_KEYS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "supportsStore": "supports_store",
        "supportsDeveloperRole": "supports_developer_role",
        "supportsReasoningEffort": "supports_reasoning_effort",
        "supportsUsageInStreaming": "supports_usage_in_streaming",
        "maxTokensField": "max_tokens_field",
        "requiresToolResultName": "requires_tool_result_name",
        "requiresAssistantAfterToolResult": "requires_assistant_after_tool_result",
        "requiresThinkingAsText": "requires_thinking_as_text",
        "requiresReasoningContentOnAssistantMessages": (
            "requires_reasoning_content_on_assistant_messages"
        ),
        "thinkingFormat": "thinking_format",
        "openRouterRouting": "open_router_routing",
        "vercelGatewayRouting": "vercel_gateway_routing",
        "zaiToolStream": "zai_tool_stream",
        "supportsStrictMode": "supports_strict_mode",
        "cacheControlFormat": "cache_control_format",
        "sendSessionAffinityHeaders": "send_session_affinity_headers",
        "supportsLongCacheRetention": "supports_long_cache_retention",
        "requiresMistralToolIds": "requires_mistral_tool_ids",
    }
)


def detect_compat(model: Model) -> CompletionsCompat:
    """Return the flags pi detects from ``model.provider`` and ``model.base_url``.

    The provider wins over the URL: it is what the user configured.
    """
    provider = model.provider
    url = model.base_url
    is_zai = provider == "zai" or "api.z.ai" in url
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    is_grok = provider == "xai" or "api.x.ai" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url
    non_standard = (
        provider in ("cerebras", "xai", "opencode")
        or any(host in url for host in ("cerebras.ai", "api.x.ai", "chutes.ai", "deepseek.com"))
        or "opencode.ai" in url
        or is_zai
        or is_moonshot
        or is_cf_workers
        or is_cf_gateway
    )
    use_max_tokens = "chutes.ai" in url or is_moonshot or is_cf_gateway
    thinking_format: ThinkingFormat
    if is_deepseek:
        thinking_format = "deepseek"
    elif is_zai:
        thinking_format = "zai"
    elif provider == "openrouter" or "openrouter.ai" in url:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    anthropic_via_openrouter = provider == "openrouter" and model.id.startswith("anthropic/")
    return CompletionsCompat(
        supports_store=not non_standard,
        supports_developer_role=not non_standard,
        supports_reasoning_effort=not (is_grok or is_zai or is_moonshot or is_cf_gateway),
        supports_usage_in_streaming=True,
        max_tokens_field="max_tokens" if use_max_tokens else "max_completion_tokens",
        requires_reasoning_content_on_assistant_messages=is_deepseek,
        thinking_format=thinking_format,
        supports_strict_mode=not (is_moonshot or is_cf_gateway),
        cache_control_format="anthropic" if anthropic_via_openrouter else None,
        supports_long_cache_retention=not (is_cf_workers or is_cf_gateway),
    )


def get_compat(model: Model) -> CompletionsCompat:
    """Return the detected flags overlaid with the model's explicit ``compat`` (pi's getCompat).

    A key set to ``null`` in ``compat`` counts as unset, as in pi. Unknown keys are ignored.
    """
    detected = detect_compat(model)
    explicit = model.compat
    if not explicit:
        return detected
    changes: dict[str, Any] = {}
    for key, attribute in COMPAT_KEYS.items():
        value = explicit.get(key)
        if value is not None:
            changes[attribute] = value
    return attrs.evolve(detected, **changes)


# --------------------------------------------------------------------------- Mistral tool ids

MISTRAL_TOOL_CALL_ID_LENGTH: Final = 9
_NOT_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")


def mistral_tool_call_id_normalizer() -> Callable[[str], str]:
    """Return a function mapping tool-call ids to distinct 9-character alphanumeric ids.

    Mistral rejects other ids. An id that already has the form is kept; others are hashed, and
    a collision with an id already handed out picks the next hash. One normaliser serves one
    request, so the ids of a call and its result agree.
    """
    forward: dict[str, str] = {}
    owners: dict[str, str] = {}

    def normalize(tool_call_id: str) -> str:
        known = forward.get(tool_call_id)
        if known is not None:
            return known
        attempt = 0
        while True:
            candidate = _derive_mistral_id(tool_call_id, attempt)
            owner = owners.get(candidate)
            if owner is None or owner == tool_call_id:
                forward[tool_call_id] = candidate
                owners[candidate] = tool_call_id
                return candidate
            attempt += 1

    return normalize


def _derive_mistral_id(tool_call_id: str, attempt: int) -> str:
    cleaned = _NOT_ALNUM.sub("", tool_call_id)
    if attempt == 0 and len(cleaned) == MISTRAL_TOOL_CALL_ID_LENGTH:
        return cleaned
    seed = cleaned or tool_call_id
    if attempt:
        seed = f"{seed}:{attempt}"
    return hashlib.sha256(seed.encode()).hexdigest()[:MISTRAL_TOOL_CALL_ID_LENGTH]


# --------------------------------------------------------------------------- presets


@attrs.frozen(kw_only=True)
class OpenAICompatiblePreset:
    """A known OpenAI-compatible service: where it listens and how it wants to be spoken to."""

    provider: str
    """Provider id used on models (``"ollama"``, ``"groq"``...)."""
    name: str
    """Human-readable service name."""
    base_url: str
    api_key_env: tuple[str, ...] = ()
    """Environment variables holding the API key, in precedence order (pi's names)."""
    compat: Mapping[str, Any] = attrs.field(factory=dict)
    """pi ``compat`` keys (camelCase) applied to every model of the preset."""
    local: bool = False
    """A server on the user's machine: no API key is needed."""

    def api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """Return the API key from the environment (``None`` when unset or not needed)."""
        environ = os.environ if env is None else env
        for name in self.api_key_env:
            value = environ.get(name)
            if value:
                return value
        return None


def _preset(provider: str, name: str, base_url: str, **kwargs: Any) -> OpenAICompatiblePreset:
    return OpenAICompatiblePreset(provider=provider, name=name, base_url=base_url, **kwargs)


_LOCAL_COMPAT: Final[Mapping[str, Any]] = MappingProxyType(
    # pi's docs/models.md: local servers often reject the `developer` role.
    {"supportsDeveloperRole": False}
)

OPENAI_COMPATIBLE_PRESETS: Final[Mapping[str, OpenAICompatiblePreset]] = MappingProxyType(
    {
        preset.provider: preset
        for preset in (
            _preset(
                "ollama",
                "Ollama",
                "http://localhost:11434/v1",
                # pi's docs/models.md Ollama example.
                compat={"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                local=True,
            ),
            _preset("vllm", "vLLM", "http://localhost:8000/v1", compat=_LOCAL_COMPAT, local=True),
            _preset(
                "llama.cpp",
                "llama.cpp server",
                "http://localhost:8080/v1",
                # llama.cpp documents `max_tokens`; reasoning arrives in `reasoning_content`.
                compat={**_LOCAL_COMPAT, "maxTokensField": "max_tokens"},
                local=True,
            ),
            _preset(
                "lmstudio",
                "LM Studio",
                "http://localhost:1234/v1",
                compat=_LOCAL_COMPAT,
                local=True,
            ),
            _preset(
                "groq", "Groq", "https://api.groq.com/openai/v1", api_key_env=("GROQ_API_KEY",)
            ),
            _preset("xai", "xAI", "https://api.x.ai/v1", api_key_env=("XAI_API_KEY",)),
            _preset(
                "openrouter",
                "OpenRouter",
                "https://openrouter.ai/api/v1",
                api_key_env=("OPENROUTER_API_KEY",),
            ),
            _preset(
                "cerebras",
                "Cerebras",
                "https://api.cerebras.ai/v1",
                api_key_env=("CEREBRAS_API_KEY",),
            ),
            _preset(
                "mistral",
                "Mistral",
                "https://api.mistral.ai/v1",
                api_key_env=("MISTRAL_API_KEY",),
                compat={
                    "supportsStore": False,
                    "supportsDeveloperRole": False,
                    "maxTokensField": "max_tokens",
                    "requiresToolResultName": True,
                    "requiresThinkingAsText": True,
                    "requiresMistralToolIds": True,
                },
            ),
            _preset(
                "deepseek",
                "DeepSeek",
                "https://api.deepseek.com",
                api_key_env=("DEEPSEEK_API_KEY",),
                # What pi detects for deepseek.com, and its catalogue's compat for DeepSeek.
                compat={
                    "supportsStore": False,
                    "supportsDeveloperRole": False,
                    "requiresReasoningContentOnAssistantMessages": True,
                    "thinkingFormat": "deepseek",
                },
            ),
        )
    }
)
"""Presets by provider id: Ollama, vLLM, llama.cpp, LM Studio, Groq, xAI, OpenRouter, Cerebras,
Mistral, DeepSeek."""


class UnknownPreset(ProviderError, LookupError):
    """No OpenAI-compatible preset has this name."""


def get_preset(name: str) -> OpenAICompatiblePreset:
    """Return the preset ``name``.

    Raises:
        UnknownPreset: naming the known presets.
    """
    preset = OPENAI_COMPATIBLE_PRESETS.get(name)
    if preset is None:
        known = ", ".join(OPENAI_COMPATIBLE_PRESETS)
        raise UnknownPreset(f"Unknown OpenAI-compatible preset {name!r} (known: {known})")
    return preset


DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""pi's default for a models.json model without ``contextWindow``."""
DEFAULT_MAX_TOKENS: Final = 16_384
"""pi's default for a models.json model without ``maxTokens``."""


def openai_compatible_model(
    preset: str,
    model_id: str,
    *,
    name: str | None = None,
    base_url: str | None = None,
    reasoning: bool | None = None,
    input: tuple[InputKind, ...] | None = None,
    context_window: int | None = None,
    max_tokens: int | None = None,
    cost: ModelCost | None = None,
    headers: Mapping[str, str] | None = None,
    compat: Mapping[str, Any] | None = None,
    thinking_level_map: Mapping[str, str | None] | None = None,
) -> Model:
    """Build an ``openai-completions`` model served by a preset's service.

    Values not given are taken from the built-in catalogue when it knows the model under the
    preset's provider (Groq, xAI, OpenRouter, Cerebras, DeepSeek, Mistral models), else from
    pi's models.json defaults (text input, no reasoning, 128k context, 16k output, free).

    Args:
        preset: a key of :data:`OPENAI_COMPATIBLE_PRESETS`.
        model_id: the id the server knows the model by.
        base_url: override the preset's URL (a remote Ollama, a proxy).
        compat: pi ``compat`` keys merged over the preset's (and the catalogue model's).

    Raises:
        UnknownPreset: ``preset`` is not a known preset.
    """
    spec = get_preset(preset)
    known = default_catalogue.get(spec.provider, model_id)
    merged_compat: dict[str, Any] = {}
    if known is not None and known.api == COMPLETIONS_API and known.compat:
        merged_compat.update(known.compat)
    merged_compat.update(spec.compat)
    merged_compat.update(compat or {})
    level_map = thinking_level_map
    if level_map is None and known is not None:
        level_map = known.thinking_level_map
    return Model(
        id=model_id,
        name=name or (known.name if known else model_id),
        api=COMPLETIONS_API,
        provider=spec.provider,
        base_url=base_url or spec.base_url,
        reasoning=reasoning if reasoning is not None else bool(known and known.reasoning),
        thinking_level_map=dict(level_map) if level_map is not None else None,
        input=input or (known.input if known else ("text",)),
        cost=cost or (known.cost if known else ModelCost()),
        context_window=context_window
        or (known.context_window if known else DEFAULT_CONTEXT_WINDOW),
        max_tokens=max_tokens or (known.max_tokens if known else DEFAULT_MAX_TOKENS),
        headers=dict(headers) if headers is not None else (known.headers if known else None),
        compat=merged_compat or None,
    )


NO_KEY_NEEDED: Final = ""
"""Returned by :func:`resolve_api_key` for a local server used without a key."""


def resolve_api_key(model: Model, explicit: str | None) -> str | None:
    """Return the key for ``model``: the explicit one, then pi's env table, then the preset's.

    Returns:
        The key; :data:`NO_KEY_NEEDED` for a local preset server with no key configured;
        ``None`` when a key is needed and none is found.
    """
    if explicit:
        return explicit
    key = get_env_api_key(model.provider)
    if key:
        return key
    preset = OPENAI_COMPATIBLE_PRESETS.get(model.provider)
    if preset is None:
        return None
    key = preset.api_key()
    if key:
        return key
    return NO_KEY_NEEDED if preset.local else None
