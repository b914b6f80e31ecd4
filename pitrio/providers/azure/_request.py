"""Building an ``azure-openai-responses`` request: where it goes, its headers, its body.

Ports pi-ai 0.73.1's ``azure-openai-responses`` provider, which drives the OpenAI SDK's
``AzureOpenAI`` client; what that client puts on the wire is written out here:

* **URL**: ``{base}/responses?api-version={version}``. The base is, first found:
  ``azure_base_url`` (option), ``AZURE_OPENAI_BASE_URL``, ``https://{resource}.openai.azure.com
  /openai/v1`` from ``azure_resource_name`` (option) or ``AZURE_OPENAI_RESOURCE_NAME``, the
  model's ``base_url``. An Azure host (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``)
  whose path is empty or ``/openai`` gets the path ``/openai/v1`` (and loses its query); any
  other URL is kept as given, trailing slashes removed. The version is ``azure_api_version``,
  ``AZURE_OPENAI_API_VERSION``, else ``"v1"``.
* **Headers**: ``api-key``, then the model's headers, then the caller's (which may replace it).
* **Body**: the Responses body with the deployment as ``model``: ``azure_deployment_name``
  (option), else the model's entry in ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP``
  (``"model=deployment,model=deployment"``), else the model id. Unlike the OpenAI provider,
  pi sends neither ``store`` nor a cache retention nor a service tier here, and no session
  headers; the session id is only the ``prompt_cache_key``.

The options are read from ``StreamOptions.provider_options`` in snake_case or pi's camelCase.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlencode, urlsplit, urlunsplit

import attrs

from pitrio.providers._messages import Context, Model, StreamOptions
from pitrio.providers._registry import ProviderError
from pitrio.providers.openai_responses._request import (
    OpenAIResponsesOptions,
    convert_responses_messages,
    convert_responses_tools,
)

__all__ = [
    "AZURE_TOOL_CALL_PROVIDERS",
    "DEFAULT_AZURE_API_VERSION",
    "AzureOptions",
    "azure_headers",
    "azure_url",
    "build_azure_params",
    "normalize_azure_base_url",
    "parse_deployment_name_map",
    "resolve_deployment_name",
]

DEFAULT_AZURE_API_VERSION: Final = "v1"
AZURE_TOOL_CALL_PROVIDERS: Final = frozenset(
    {"openai", "openai-codex", "opencode", "azure-openai-responses"}
)
"""Providers whose ``call_id|item_id`` tool-call ids are kept in two parts on replay."""
_AZURE_HOST_SUFFIXES: Final = (".openai.azure.com", ".cognitiveservices.azure.com")


@attrs.frozen(kw_only=True)
class AzureOptions:
    """The Azure options (pi's ``AzureOpenAIResponsesOptions``), over the Responses ones."""

    responses: OpenAIResponsesOptions = attrs.field(factory=OpenAIResponsesOptions)
    """Reasoning effort and summary (a service tier is not sent to Azure, as in pi)."""
    api_version: str | None = None
    resource_name: str | None = None
    base_url: str | None = None
    deployment_name: str | None = None

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> AzureOptions:
        """Read the options from a mapping with snake_case or pi's camelCase keys."""
        values = options or {}

        def get(snake: str, camel: str) -> Any:
            return values[snake] if snake in values else values.get(camel)

        return cls(
            responses=OpenAIResponsesOptions.from_mapping(options),
            api_version=get("azure_api_version", "azureApiVersion"),
            resource_name=get("azure_resource_name", "azureResourceName"),
            base_url=get("azure_base_url", "azureBaseUrl"),
            deployment_name=get("azure_deployment_name", "azureDeploymentName"),
        )


def parse_deployment_name_map(value: str | None) -> dict[str, str]:
    """Parse ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP`` as pi does.

    Comma-separated ``model=deployment`` entries, each side trimmed; an entry without ``=`` or
    with an empty side is skipped; only the text between the first and a second ``=`` is the
    deployment (JavaScript's ``split("=", 2)``); a later entry for a model wins.
    """
    mapping: dict[str, str] = {}
    for entry in (value or "").split(","):
        trimmed = entry.strip()
        if not trimmed:
            continue
        parts = trimmed.split("=")
        if len(parts) < 2 or not parts[0] or not parts[1]:
            continue
        mapping[parts[0].strip()] = parts[1].strip()
    return mapping


def resolve_deployment_name(model: Model, options: AzureOptions) -> str:
    """The deployment sent as ``model`` (see the module docstring)."""
    if options.deployment_name:
        return options.deployment_name
    mapped = parse_deployment_name_map(os.environ.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP"))
    return mapped.get(model.id) or model.id


def normalize_azure_base_url(base_url: str) -> str:
    """Give an Azure host the ``/openai/v1`` path the API needs (see the module docstring).

    Raises:
        ProviderError: ``base_url`` is not an absolute URL.
    """
    trimmed = base_url.strip().rstrip("/")
    parts = urlsplit(trimmed)
    if not parts.scheme or not parts.netloc or not parts.hostname:
        raise ProviderError(f"Invalid Azure OpenAI base URL: {base_url}")
    path = parts.path.rstrip("/")
    query = parts.query
    if parts.hostname.endswith(_AZURE_HOST_SUFFIXES) and path in ("", "/openai"):
        path, query = "/openai/v1", ""
    return urlunsplit((parts.scheme, parts.netloc, path, query, parts.fragment)).rstrip("/")


def _resolve_base_url(model: Model, options: AzureOptions) -> str:
    base_url = (options.base_url or "").strip() or os.environ.get(
        "AZURE_OPENAI_BASE_URL", ""
    ).strip()
    resource = options.resource_name or os.environ.get("AZURE_OPENAI_RESOURCE_NAME")
    if not base_url and resource:
        base_url = f"https://{resource}.openai.azure.com/openai/v1"
    if not base_url:
        base_url = model.base_url
    if not base_url:
        raise ProviderError(
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or "
            "AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or "
            "model.baseUrl."
        )
    return normalize_azure_base_url(base_url)


def azure_url(model: Model, options: AzureOptions) -> str:
    """``{base}/responses?api-version=...`` for this model and these options.

    Raises:
        ProviderError: no base URL is configured, or it is not a URL.
    """
    version = (
        options.api_version
        or os.environ.get("AZURE_OPENAI_API_VERSION")
        or DEFAULT_AZURE_API_VERSION
    )
    parts = urlsplit(_resolve_base_url(model, options) + "/responses")
    query = "&".join(q for q in (parts.query, urlencode({"api-version": version})) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def azure_headers(model: Model, api_key: str, options: StreamOptions) -> dict[str, str]:
    """``api-key``, then the model's headers, then the caller's (later names win, any case)."""
    merged: dict[str, tuple[str, str]] = {"api-key": ("api-key", api_key)}
    for source in (model.headers or {}, options.headers or {}):
        for name, value in source.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def build_azure_params(
    model: Model,
    context: Context,
    options: StreamOptions,
    azure: AzureOptions,
    deployment: str,
) -> dict[str, Any]:
    """The request body pi sends to Azure for ``model`` and ``context``."""
    params: dict[str, Any] = {
        "model": deployment,
        "input": convert_responses_messages(model, context, AZURE_TOOL_CALL_PROVIDERS),
        "stream": True,
    }
    if options.session_id is not None:
        params["prompt_cache_key"] = options.session_id
    if options.max_tokens:
        params["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = convert_responses_tools(context.tools)
    if model.reasoning:
        level_map = model.thinking_level_map or {}
        effort_option = azure.responses.reasoning_effort
        summary = azure.responses.reasoning_summary
        if effort_option or summary:
            effort = (level_map.get(effort_option) or effort_option) if effort_option else "medium"
            params["reasoning"] = {"effort": effort, "summary": summary or "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        elif not ("off" in level_map and level_map["off"] is None):
            # Reasoning models think by default; say so explicitly when thinking is off.
            params["reasoning"] = {"effort": level_map.get("off") or "none"}
    return params
