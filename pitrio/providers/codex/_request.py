"""Building an ``openai-codex-responses`` request: its URL, headers and body.

Ports pi-ai 0.73.1's ``openai-codex-responses`` provider (the ChatGPT backend that a "Sign in
with ChatGPT" token opens):

* **URL**: ``{base}/codex/responses`` (base default ``https://chatgpt.com/backend-api``; a base
  that already ends in ``/codex`` or ``/codex/responses`` is completed, not doubled).
* **Headers**, later ones winning: the model's, the caller's, then pi's own:
  ``Authorization: Bearer <access token>``, ``chatgpt-account-id`` (the token's JWT claim
  ``https://api.openai.com/auth`` -> ``chatgpt_account_id``), ``originator: pi`` (the token was
  issued to pi's OAuth client, whose originator this is), a ``User-Agent`` naming pitrio and
  the platform, ``OpenAI-Beta: responses=experimental``, ``accept``/``content-type``, and with
  a session id ``session_id`` and ``x-client-request-id``.
* **Body**: ``store: false``, the system prompt as ``instructions`` (default "You are a helpful
  assistant."; it is not repeated as an input item), ``text.verbosity`` (default ``"low"``),
  ``include: ["reasoning.encrypted_content"]``, the session id as ``prompt_cache_key``,
  ``tool_choice: "auto"``, ``parallel_tool_calls: true``, tools with ``strict: null``, and a
  ``reasoning`` object only when an effort was asked for. pi sends no ``max_output_tokens``.

API-specific options (``StreamOptions.provider_options``, snake_case or pi's camelCase): the
Responses ones (``reasoning_effort``, ``reasoning_summary``, ``service_tier``) and
``text_verbosity`` (``"low"``, ``"medium"``, ``"high"``).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any, Final

import attrs

import pitrio
from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import ProviderError
from pitrio.providers.credentials import openai_codex_account_id
from pitrio.providers.openai_responses._request import (
    OpenAIResponsesOptions,
    convert_responses_messages,
    convert_responses_tools,
)

__all__ = [
    "CODEX_TOOL_CALL_PROVIDERS",
    "DEFAULT_CODEX_BASE_URL",
    "DEFAULT_INSTRUCTIONS",
    "CodexOptions",
    "build_codex_body",
    "codex_account_id",
    "codex_headers",
    "codex_url",
]

DEFAULT_CODEX_BASE_URL: Final = "https://chatgpt.com/backend-api"
DEFAULT_INSTRUCTIONS: Final = "You are a helpful assistant."
CODEX_TOOL_CALL_PROVIDERS: Final = frozenset({"openai", "openai-codex", "opencode"})
"""Providers whose ``call_id|item_id`` tool-call ids are kept in two parts on replay."""
OPENAI_BETA: Final = "responses=experimental"
ORIGINATOR: Final = "pi"


@attrs.frozen(kw_only=True)
class CodexOptions:
    """The Codex options (pi's ``OpenAICodexResponsesOptions``)."""

    responses: OpenAIResponsesOptions = attrs.field(factory=OpenAIResponsesOptions)
    text_verbosity: str | None = None

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> CodexOptions:
        """Read the options from a mapping with snake_case or pi's camelCase keys."""
        values = options or {}
        verbosity = values.get("text_verbosity", values.get("textVerbosity"))
        return cls(responses=OpenAIResponsesOptions.from_mapping(options), text_verbosity=verbosity)


def codex_url(base_url: str | None) -> str:
    """The SSE endpoint for ``base_url`` (see the module docstring)."""
    raw = base_url if base_url and base_url.strip() else DEFAULT_CODEX_BASE_URL
    normalized = raw.rstrip("/")
    if normalized.endswith("/codex/responses"):
        return normalized
    if normalized.endswith("/codex"):
        return f"{normalized}/responses"
    return f"{normalized}/codex/responses"


def codex_account_id(access_token: str) -> str:
    """The ChatGPT account id in the access token's JWT claim.

    Raises:
        ProviderError: the token is not a JWT or carries no account id (pi's message).
    """
    account = openai_codex_account_id(access_token)
    if account is None:
        raise ProviderError("Failed to extract accountId from token")
    return account


def _user_agent() -> str:
    return (
        f"pitrio/{pitrio.__version__} "
        f"({platform.system().lower()} {platform.release()}; {platform.machine()})"
    )


def codex_headers(
    model: Model, options: StreamOptions, access_token: str, account_id: str
) -> dict[str, str]:
    """The SSE request headers (see the module docstring); names compare case-insensitively."""
    merged: dict[str, tuple[str, str]] = {}

    def put(values: Mapping[str, str]) -> None:
        for name, value in values.items():
            merged[name.lower()] = (name, value)

    put(model.headers or {})
    put(options.headers or {})
    put(
        {
            "Authorization": f"Bearer {access_token}",
            "chatgpt-account-id": account_id,
            "originator": ORIGINATOR,
            "User-Agent": _user_agent(),
            "OpenAI-Beta": OPENAI_BETA,
            "accept": "text/event-stream",
            "content-type": "application/json",
        }
    )
    if options.session_id:
        put({"session_id": options.session_id, "x-client-request-id": options.session_id})
    return dict(merged.values())


def build_codex_body(
    model: Model, context: Context, options: StreamOptions, codex: CodexOptions
) -> dict[str, Any]:
    """The request body pi sends to the Codex backend for ``model`` and ``context``."""
    body: dict[str, Any] = {
        "model": model.id,
        "store": False,
        "stream": True,
        "instructions": context.system_prompt or DEFAULT_INSTRUCTIONS,
        "input": convert_responses_messages(
            model, context, CODEX_TOOL_CALL_PROVIDERS, include_system_prompt=False
        ),
        "text": {"verbosity": codex.text_verbosity or "low"},
        "include": ["reasoning.encrypted_content"],
    }
    if options.session_id is not None:
        body["prompt_cache_key"] = options.session_id
    body["tool_choice"] = "auto"
    body["parallel_tool_calls"] = True
    if options.temperature is not None:
        body["temperature"] = options.temperature
    responses = codex.responses
    if responses.service_tier is not None:
        body["service_tier"] = responses.service_tier
    if context.tools:
        body["tools"] = convert_responses_tools(context.tools, strict=None)
    requested = responses.reasoning_effort
    if requested is not None:
        level_map = model.thinking_level_map or {}
        # A level mapped to null falls back to the level's own name (JavaScript's ``??``).
        effort = level_map.get("off" if requested == "none" else requested) or requested
        body["reasoning"] = {"effort": effort, "summary": responses.reasoning_summary or "auto"}
    return body
