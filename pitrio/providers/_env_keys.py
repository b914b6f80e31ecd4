"""API keys from environment variables, by provider (pi-ai 0.73.1's ``getEnvApiKey``).

Each built-in provider reads its key from one or more environment variables, tried in order;
an empty variable counts as unset. Two providers can also authenticate without a key, through
credentials their SDKs find on their own; for them :func:`get_env_api_key` returns the marker
:data:`AUTHENTICATED` when those credentials are present:

* ``google-vertex``: Application Default Credentials (the file named by
  ``GOOGLE_APPLICATION_CREDENTIALS``, else
  ``~/.config/gcloud/application_default_credentials.json``) together with
  ``GOOGLE_CLOUD_PROJECT`` (or ``GCLOUD_PROJECT``) and ``GOOGLE_CLOUD_LOCATION``;
* ``amazon-bedrock``: an AWS profile, access key pair, Bedrock bearer token, ECS container
  credentials or a web identity token file.

Local OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio) have no entry: they are
configured with their own base URL and key in ``models.json`` or the completions compat presets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

AUTHENTICATED: Final = "<authenticated>"
"""Returned instead of a key when a provider's SDK credentials are configured (Vertex, Bedrock)."""

ENV_API_KEY_VARS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "github-copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
        # An OAuth token (Claude subscription) wins over an API key.
        "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
        "openai": ("OPENAI_API_KEY",),
        "azure-openai-responses": ("AZURE_OPENAI_API_KEY",),
        "deepseek": ("DEEPSEEK_API_KEY",),
        "google": ("GEMINI_API_KEY",),
        "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
        "groq": ("GROQ_API_KEY",),
        "cerebras": ("CEREBRAS_API_KEY",),
        "xai": ("XAI_API_KEY",),
        "openrouter": ("OPENROUTER_API_KEY",),
        "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
        "zai": ("ZAI_API_KEY",),
        "mistral": ("MISTRAL_API_KEY",),
        "minimax": ("MINIMAX_API_KEY",),
        "minimax-cn": ("MINIMAX_CN_API_KEY",),
        "moonshotai": ("MOONSHOT_API_KEY",),
        "moonshotai-cn": ("MOONSHOT_API_KEY",),
        "huggingface": ("HF_TOKEN",),
        "fireworks": ("FIREWORKS_API_KEY",),
        "opencode": ("OPENCODE_API_KEY",),
        "opencode-go": ("OPENCODE_API_KEY",),
        "kimi-coding": ("KIMI_API_KEY",),
        "cloudflare-workers-ai": ("CLOUDFLARE_API_KEY",),
        "cloudflare-ai-gateway": ("CLOUDFLARE_API_KEY",),
        "xiaomi": ("XIAOMI_API_KEY",),
        "xiaomi-token-plan-cn": ("XIAOMI_TOKEN_PLAN_CN_API_KEY",),
        "xiaomi-token-plan-ams": ("XIAOMI_TOKEN_PLAN_AMS_API_KEY",),
        "xiaomi-token-plan-sgp": ("XIAOMI_TOKEN_PLAN_SGP_API_KEY",),
    }
)
"""Provider -> the environment variables holding its API key, in order of precedence."""

_BEDROCK_SINGLE_VARS: Final = (
    "AWS_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


def env_api_key_vars(provider: str) -> tuple[str, ...] | None:
    """Return the environment variables ``provider`` reads its key from, or ``None`` if none."""
    return ENV_API_KEY_VARS.get(provider)


def find_env_keys(provider: str, env: Mapping[str, str] | None = None) -> list[str] | None:
    """Return the key variables of ``provider`` that are set (non-empty), in precedence order.

    Args:
        provider: a provider id such as ``"anthropic"``.
        env: the environment to read; ``None`` reads :data:`os.environ`.

    Returns:
        The names, or ``None`` when none is set or the provider has no key variable.
    """
    names = ENV_API_KEY_VARS.get(provider)
    if names is None:
        return None
    environ = os.environ if env is None else env
    found = [name for name in names if environ.get(name)]
    return found or None


def get_env_api_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    """Return the API key of ``provider`` from the environment.

    Args:
        provider: a provider id such as ``"openai"``.
        env: the environment to read; ``None`` reads :data:`os.environ`. Files are checked
            for Vertex Application Default Credentials (see the module docstring).

    Returns:
        The value of the first non-empty key variable; :data:`AUTHENTICATED` for Vertex or
        Bedrock with SDK credentials configured; otherwise ``None``.
    """
    environ = os.environ if env is None else env
    found = find_env_keys(provider, environ)
    if found:
        return environ[found[0]]
    if provider == "google-vertex" and _has_vertex_credentials(environ):
        return AUTHENTICATED
    if provider == "amazon-bedrock" and _has_bedrock_credentials(environ):
        return AUTHENTICATED
    return None


def _has_vertex_credentials(env: Mapping[str, str]) -> bool:
    # pi caches the file check for the process lifetime; a stat per call is cheap enough and
    # notices credentials created after start-up.
    if not (env.get("GOOGLE_CLOUD_PROJECT") or env.get("GCLOUD_PROJECT")):
        return False
    if not env.get("GOOGLE_CLOUD_LOCATION"):
        return False
    explicit = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit).exists()
    home = env.get("HOME")
    base = Path(home) if home else Path.home()
    return (base / ".config" / "gcloud" / "application_default_credentials.json").exists()


def _has_bedrock_credentials(env: Mapping[str, str]) -> bool:
    if any(env.get(name) for name in _BEDROCK_SINGLE_VARS):
        return True
    return bool(env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"))
