"""Token refresh functions, by provider (pi-ai's ``OAuthProviderInterface.refreshToken``).

A refresh function takes the stored :class:`OAuthCredential` and returns the credential to
store in its place: the new ``access`` token, the ``refresh`` token to use next time (many
servers rotate it, so the old one stops working), ``expires`` in milliseconds, and whatever
provider fields it keeps (pi replaces the whole entry with what its refresh returns; so does
pitrio: a function that wants to keep a field copies it from its argument).

:func:`~pitrio.providers.credentials.default_refreshers` holds the one pitrio knows for a
built-in provider (OpenAI Codex, whose endpoint pi's source shows); tests and embedders
register their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TypeAlias

from pitrio.providers._custom_models import RequestAuthError
from pitrio.providers.credentials._auth_file import OAuthCredential

RefreshFn: TypeAlias = Callable[[OAuthCredential], Awaitable[OAuthCredential]]
"""``async refresh(stored) -> renewed``; raise :class:`TokenRefreshError` (or any exception)
when the server refuses; it runs shielded from its caller's cancellation, under a deadline."""


class TokenRefreshError(RequestAuthError):
    """An expired OAuth token could not be renewed (the request then ends with this error).

    Attributes:
        provider: the provider whose token it is.
    """


class TokenRefreshers:
    """Provider id -> its :data:`RefreshFn` (a registry each store is given; no global one)."""

    def __init__(self, refreshers: dict[str, RefreshFn] | None = None) -> None:
        self._refreshers: dict[str, RefreshFn] = dict(refreshers or {})

    def register(self, provider: str, refresh: RefreshFn) -> None:
        """Use ``refresh`` for ``provider``'s tokens (replacing any before it)."""
        self._refreshers[provider] = refresh

    def unregister(self, provider: str) -> None:
        """Forget ``provider``'s refresh function, if any."""
        self._refreshers.pop(provider, None)

    def get(self, provider: str) -> RefreshFn | None:
        """The refresh function of ``provider``, or ``None``."""
        return self._refreshers.get(provider)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._refreshers))
