"""Vertex AI requests: where they go and which credentials they carry (pi's ``google-vertex``).

pi 0.73.1 reaches Vertex through the ``@google/genai`` SDK (``vertexai: true``, API version
``v1``); pitrio writes the SDK's URLs itself and sends the Gemini codec's body
(:func:`pitrio.providers.google._request.build_request_body`) to
``{host}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}
:streamGenerateContent?alt=sse``.

**Hosts** (as the SDK picks them): ``global`` -> ``aiplatform.googleapis.com``; the
multi-regions ``us`` and ``eu`` -> ``aiplatform.{location}.rep.googleapis.com``; any other
location -> ``{location}-aiplatform.googleapis.com``.

**Express mode.** With an API key (``options.api_key`` or ``GOOGLE_CLOUD_API_KEY``) the request
goes to ``https://aiplatform.googleapis.com/v1/publishers/google/models/{model}`` with the key in
``x-goog-api-key``; no project or location is needed. A key that is pi's credentials marker
(``gcp-vertex-credentials``) or a placeholder in angle brackets (``<authenticated>``) is not a
key: the request uses Application Default Credentials instead, with the project from
``provider_options["project"]``, ``GOOGLE_CLOUD_PROJECT`` or ``GCLOUD_PROJECT`` and the
location from ``provider_options["location"]`` or ``GOOGLE_CLOUD_LOCATION``.

**Custom base URL.** A model whose ``baseUrl`` is set and has no ``{location}`` placeholder (the
catalogue's has one) is used as the collection root: ``{baseUrl}/v1/publishers/google/models/
{model}``, without the project path, and without ``/v1`` when the URL already names a version.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from pitrio.providers._messages import Model, StreamOptions, ThinkingBudgets, ThinkingLevel
from pitrio.providers._registry import ProviderError

API: Final = "google-vertex"
"""The wire API id of Vertex AI."""
API_VERSION: Final = "v1"
CREDENTIALS_MARKER: Final = "gcp-vertex-credentials"
"""pi's stand-in key meaning "use Application Default Credentials"."""
API_KEY_ENV: Final = "GOOGLE_CLOUD_API_KEY"
MULTI_REGIONS: Final = frozenset({"us", "eu"})
GLOBAL_HOST: Final = "https://aiplatform.googleapis.com"

_PLACEHOLDER: Final = re.compile(r"^<[^>]+>$")
_VERSION_SEGMENT: Final = re.compile(r"^v\d+(?:beta\d*)?$")

# pi's Vertex budgets (tokens): unlike the Gemini API's table, Flash-Lite shares Flash's.
_BUDGETS_25_PRO: Final = {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}
_BUDGETS_25_FLASH: Final = {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def resolve_api_key(options: StreamOptions, env: Mapping[str, str] | None = None) -> str | None:
    """The express-mode key, or ``None`` when the request must use ADC (see the module doc)."""
    key = (options.api_key or "").strip() or _env(env).get(API_KEY_ENV, "").strip()
    if not key or key == CREDENTIALS_MARKER or _PLACEHOLDER.match(key):
        return None
    return key


def _provider_option(options: StreamOptions, name: str) -> str | None:
    value = (options.provider_options or {}).get(name)
    return str(value) if value else None


def resolve_project(options: StreamOptions, env: Mapping[str, str] | None = None) -> str:
    """The project for ADC mode.

    Raises:
        ProviderError: none is configured (pi's message).
    """
    environ = _env(env)
    project = (
        _provider_option(options, "project")
        or environ.get("GOOGLE_CLOUD_PROJECT")
        or environ.get("GCLOUD_PROJECT")
    )
    if not project:
        raise ProviderError(
            "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass "
            "project in options."
        )
    return project


def resolve_location(options: StreamOptions, env: Mapping[str, str] | None = None) -> str:
    """The location for ADC mode.

    Raises:
        ProviderError: none is configured (pi's message).
    """
    location = _provider_option(options, "location") or _env(env).get("GOOGLE_CLOUD_LOCATION")
    if not location:
        raise ProviderError(
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
        )
    return location


def location_host(location: str) -> str:
    """The Vertex AI endpoint for ``location`` (``global``, multi-region or regional)."""
    if location == "global":
        return GLOBAL_HOST
    if location in MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def model_path(model_id: str) -> str:
    """The model's resource path as the SDK writes it for Vertex (``publishers/google/models/x``;
    ``owner/x`` -> ``publishers/owner/models/x``; full resource names unchanged)."""
    if model_id.startswith(("publishers/", "projects/", "models/")):
        return model_id
    if "/" in model_id:
        owner, name = model_id.split("/")[:2]
        return f"publishers/{owner}/models/{name}"
    return f"publishers/google/models/{model_id}"


def custom_base_url(base_url: str) -> str | None:
    """A model ``baseUrl`` that replaces the SDK's host, or ``None`` (empty or templated)."""
    trimmed = base_url.strip()
    if not trimmed or "{location}" in trimmed:
        return None
    return trimmed


def _names_version(base_url: str) -> bool:
    return any(_VERSION_SEGMENT.match(part) for part in urlsplit(base_url).path.split("/"))


def request_url(
    model: Model, *, api_key: str | None, project: str | None, location: str | None
) -> str:
    """The ``streamGenerateContent`` URL for ``model`` (see the module docstring).

    ``project`` and ``location`` are needed only without ``api_key`` and a custom base URL.
    """
    path = model_path(model.id)
    custom = custom_base_url(model.base_url)
    if custom is not None:
        base = custom.rstrip("/")
        prefix = base if _names_version(custom) else f"{base}/{API_VERSION}"
    elif api_key is not None:
        prefix = f"{GLOBAL_HOST}/{API_VERSION}"
    else:
        if project is None or location is None:
            raise ValueError("ADC mode needs a project and a location")
        prefix = f"{location_host(location)}/{API_VERSION}"
        if not path.startswith("projects/"):
            prefix = f"{prefix}/projects/{project}/locations/{location}"
    return f"{prefix}/{path}:streamGenerateContent?alt=sse"


def uses_thinking_level(model: Model) -> bool:
    """Whether pi's Vertex provider gives ``model`` a ``thinkingLevel`` (Gemini 3 only)."""
    model_id = model.id.lower()
    return re.search(r"gemini-3(?:\.\d+)?-(?:pro|flash)", model_id) is not None


def thinking_budget(
    model: Model, effort: ThinkingLevel, budgets: ThinkingBudgets | None
) -> int | None:
    """pi's Vertex ``thinkingBudget``: custom budgets, its 2.5 Pro/Flash tables, else -1."""
    if budgets is not None and effort != "xhigh":
        custom: int | None = getattr(budgets, effort)
        if custom is not None:
            return custom
    table: Mapping[str, int]
    if "2.5-pro" in model.id:
        table = _BUDGETS_25_PRO
    elif "2.5-flash" in model.id:
        table = _BUDGETS_25_FLASH
    else:
        return -1
    return table.get(effort)
