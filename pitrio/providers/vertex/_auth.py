"""Application Default Credentials for Vertex AI, through google-auth (``pitrio[google]``).

``google.auth.default()`` finds the credentials as every Google client does: the service-account
(or external-account) file named by ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
``application_default_credentials.json``, then the metadata server of a Google Cloud machine.
google-auth is synchronous, so loading and refreshing run in a worker thread
(:func:`trio.to_thread.run_sync`), and its HTTP calls (the JWT-bearer exchange at the file's
``token_uri``, the metadata server) go through a small google-auth transport over ``httpx2``.

The credentials are found once per :class:`AdcTokenSource` (once per process for the registered
provider). The access token is cached and reused until :data:`REFRESH_MARGIN` seconds before it
expires; concurrent requests wait for one refresh. A refresh in progress is not abandoned when
its caller is cancelled (the thread cannot be stopped); each of its HTTP calls is bounded by
``AUTH_TIMEOUT``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import httpx2
import trio

from pitrio.providers._registry import ProviderError

if TYPE_CHECKING:
    import google.auth.credentials

CLOUD_PLATFORM_SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
REFRESH_MARGIN: Final = 300.0
"""Seconds before expiry at which a cached token is renewed."""
MISSING_GOOGLE_AUTH: Final = (
    "Vertex AI with Application Default Credentials needs google-auth: "
    "pip install 'pitrio[google]' (or set GOOGLE_CLOUD_API_KEY for express mode)"
)


class VertexAuthError(ProviderError):
    """Application Default Credentials could not be loaded or refreshed."""


def _google_auth() -> Any:
    try:
        import google.auth
        import google.auth.exceptions

        from pitrio.providers.vertex import _transport
    except ImportError as exc:
        raise VertexAuthError(MISSING_GOOGLE_AUTH) from exc
    return google.auth, _transport


def _epoch(expiry: datetime.datetime | None) -> float | None:
    # google-auth keeps expiry as a naive UTC datetime.
    if expiry is None:
        return None
    if expiry.tzinfo is None:
        expiry = expiry.replace(tzinfo=datetime.UTC)
    return expiry.timestamp()


class AdcTokenSource:
    """Access tokens from Application Default Credentials, cached until shortly before expiry.

    Args:
        clock: the wall clock in seconds (compared with the token's expiry).
        load: returns the credentials; defaults to ``google.auth.default`` with the
            cloud-platform scope.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        load: Callable[[], google.auth.credentials.Credentials] | None = None,
    ) -> None:
        self._clock = clock
        self._load = load
        self._lock = trio.Lock()
        self._credentials: Any = None
        self._token: str | None = None
        self._expires: float | None = None
        self.refreshes = 0
        """How many times a token was fetched (for callers that report it)."""

    def _fresh(self) -> bool:
        if self._token is None:
            return False
        return self._expires is None or self._clock() < self._expires - REFRESH_MARGIN

    async def token(self) -> str:
        """A valid access token, refreshed (once, in a thread) when missing or near expiry.

        Raises:
            VertexAuthError: google-auth is missing, finds no credentials, or the refresh fails.
        """
        async with self._lock:
            if not self._fresh():
                self._token, self._expires = await trio.to_thread.run_sync(self._refresh)
                self.refreshes += 1
            assert self._token is not None
            return self._token

    def _refresh(self) -> tuple[str, float | None]:
        google_auth, transport = _google_auth()
        try:
            if self._credentials is None:
                if self._load is not None:
                    self._credentials = self._load()
                else:
                    self._credentials, _ = google_auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
            with httpx2.Client() as client:
                self._credentials.refresh(transport.HttpxRequest(client))
        except google_auth.exceptions.GoogleAuthError as exc:
            raise VertexAuthError(f"Vertex AI credentials: {exc}") from exc
        token = self._credentials.token
        if not token:
            raise VertexAuthError("Vertex AI credentials gave no access token")
        return str(token), _epoch(self._credentials.expiry)


default_token_source: Final = AdcTokenSource()
"""The process's ADC token cache, used by the registered ``google-vertex`` provider."""
