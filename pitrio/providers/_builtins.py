"""The built-in wire-API providers, registered when :mod:`pitrio.providers` is imported.

pi-ai registers its providers on import; pitrio does the same for the default registry, and
:func:`register_builtin_providers` fills any other :class:`ProviderRegistry` a host keeps.
"""

from __future__ import annotations

from typing import Final

from pitrio.providers._registry import ApiProvider, ProviderRegistry
from pitrio.providers.anthropic._provider import ANTHROPIC_PROVIDER
from pitrio.providers.azure import AZURE_OPENAI_RESPONSES_PROVIDER
from pitrio.providers.bedrock import BEDROCK_PROVIDER
from pitrio.providers.codex import OPENAI_CODEX_RESPONSES_PROVIDER
from pitrio.providers.gemini_cli import GEMINI_CLI_PROVIDER
from pitrio.providers.google._provider import google_provider
from pitrio.providers.mistral import MISTRAL_PROVIDER
from pitrio.providers.openai_completions._provider import OPENAI_COMPLETIONS_PROVIDER
from pitrio.providers.openai_responses._provider import OPENAI_RESPONSES_PROVIDER
from pitrio.providers.vertex import VERTEX_PROVIDER

BUILTIN_SOURCE: Final = "pitrio:builtin"
BUILTIN_PROVIDERS: Final[tuple[ApiProvider, ...]] = (
    OPENAI_COMPLETIONS_PROVIDER,
    OPENAI_RESPONSES_PROVIDER,
    ANTHROPIC_PROVIDER,
    google_provider,
    AZURE_OPENAI_RESPONSES_PROVIDER,
    OPENAI_CODEX_RESPONSES_PROVIDER,
    BEDROCK_PROVIDER,
    VERTEX_PROVIDER,
    GEMINI_CLI_PROVIDER,
    MISTRAL_PROVIDER,
)


def register_builtin_providers(registry: ProviderRegistry) -> None:
    """Register the built-in HTTP providers in ``registry`` (source id ``"pitrio:builtin"``)."""
    for provider in BUILTIN_PROVIDERS:
        registry.register(provider, BUILTIN_SOURCE)
