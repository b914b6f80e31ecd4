"""Cloud Code Assist requests (the ``google-gemini-cli`` wire API), with user-supplied tokens.

The Gemini CLI talks to Google's Cloud Code Assist service rather than the Gemini API:
``POST {baseUrl}/v1internal:streamGenerateContent?alt=sse`` (``baseUrl`` defaults to
``https://cloudcode-pa.googleapis.com``) with the Gemini codec's ``GenerateContentRequest``
wrapped as ``{"project": ..., "model": ..., "request": {...}}``; every streamed event is
``{"response": GenerateContentResponse, ...}``.

pitrio has **no login** for this API and sends **no headers that imitate the Gemini CLI**: the
user supplies an OAuth access token (``Authorization: Bearer``) and the Cloud project:

* the token: ``options.api_key`` (a key resolved from ``auth.json`` -- an ``oauth`` entry's
  ``access`` or an ``api_key`` entry -- or ``--api-key``), else ``GOOGLE_GEMINI_CLI_TOKEN``;
  the key may also be pi's older JSON form ``{"token": ..., "projectId": ...}``;
* the project: ``provider_options["project"]``, the ``projectId`` of that JSON key,
  ``GOOGLE_GEMINI_CLI_PROJECT``, then ``GOOGLE_CLOUD_PROJECT``.

Using Gemini CLI credentials from another tool may break Google's terms: pi removed its login
for this API after users' Google accounts were banned for it. See the README.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import attrs
import orjson

from pitrio.providers._messages import Model, StreamOptions
from pitrio.providers._registry import ProviderError

API: Final = "google-gemini-cli"
"""The wire API id of Cloud Code Assist."""
DEFAULT_BASE_URL: Final = "https://cloudcode-pa.googleapis.com"
TOKEN_ENV: Final = "GOOGLE_GEMINI_CLI_TOKEN"
PROJECT_ENVS: Final = ("GOOGLE_GEMINI_CLI_PROJECT", "GOOGLE_CLOUD_PROJECT")


@attrs.frozen(kw_only=True)
class CodeAssistCredentials:
    """An access token and the Cloud project its requests are billed to."""

    token: str
    project: str


def resolve_credentials(
    options: StreamOptions, env: Mapping[str, str] | None = None
) -> CodeAssistCredentials:
    """The token and project for a request (see the module docstring for the order).

    Raises:
        ProviderError: no token, or no project.
    """
    environ = os.environ if env is None else env
    raw = (options.api_key or "").strip() or environ.get(TOKEN_ENV, "").strip()
    token = raw
    project: str | None = None
    if raw.startswith("{"):
        try:
            parsed: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, Mapping):
            token = str(parsed.get("token") or "")
            project = str(parsed["projectId"]) if parsed.get("projectId") else None
    if not token:
        raise ProviderError(
            f"No credentials for {API}: set {TOKEN_ENV} (an OAuth access token) or store one "
            "in auth.json; pitrio has no login for this API"
        )
    explicit = (options.provider_options or {}).get("project")
    project = (
        (str(explicit) if explicit else None)
        or project
        or next((environ[name] for name in PROJECT_ENVS if environ.get(name)), None)
    )
    if not project:
        raise ProviderError(
            f"{API} requires a Cloud project: set GOOGLE_GEMINI_CLI_PROJECT or "
            "GOOGLE_CLOUD_PROJECT, or pass project in provider options"
        )
    return CodeAssistCredentials(token=token, project=project)


def request_url(model: Model) -> str:
    """``{baseUrl}/v1internal:streamGenerateContent?alt=sse``."""
    base = model.base_url.strip().rstrip("/") or DEFAULT_BASE_URL
    return f"{base}/v1internal:streamGenerateContent?alt=sse"


def wrap_request(model: Model, project: str, request: dict[str, Any]) -> dict[str, Any]:
    """The Cloud Code Assist envelope around a ``GenerateContentRequest``."""
    return {"project": project, "model": model.id, "request": request}


def unwrap_response(event: Mapping[str, Any]) -> Any:
    """The ``GenerateContentResponse`` inside one streamed event (an error object as it is)."""
    response = event.get("response")
    return response if response is not None else event
