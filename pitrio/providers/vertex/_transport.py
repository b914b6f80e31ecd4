"""A google-auth transport over ``httpx2`` (imported only when ADC is used: it needs
google-auth, the ``pitrio[google]`` extra)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import google.auth.exceptions
import google.auth.transport
import httpx2

AUTH_TIMEOUT: Final = 60.0
"""Seconds one google-auth HTTP call (token exchange, metadata server) may take."""


class HttpxResponse(google.auth.transport.Response):
    """google-auth's view of an ``httpx2`` response."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def data(self) -> bytes:
        return self._response.content


class HttpxRequest(google.auth.transport.Request):
    """Sends google-auth's HTTP calls (token exchange, metadata server) with a sync client.

    Runs in a worker thread, as google-auth is synchronous; transport failures become
    ``google.auth.exceptions.TransportError`` as google-auth expects.
    """

    def __init__(self, client: httpx2.Client) -> None:
        self._client = client

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> HttpxResponse:
        try:
            response = self._client.request(
                method, url, content=body, headers=headers, timeout=timeout or AUTH_TIMEOUT
            )
        except httpx2.HTTPError as exc:
            raise google.auth.exceptions.TransportError(str(exc)) from exc  # type: ignore[no-untyped-call]
        return HttpxResponse(response)
