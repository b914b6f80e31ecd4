"""The API provider registry (seed 002 s.5.5).

A provider is registered under the wire API id it speaks (``"anthropic-messages"``, ``"faux"``
...). Models name their API, and :func:`~pitrio.providers.stream` looks the provider up by it.

pi keeps one process-global registry; pitrio has :class:`ProviderRegistry` objects and a default
one that the module-level functions use, so a test or a host can keep its own.
"""

from __future__ import annotations

from typing import Final

import attrs

from pitrio._exceptions import PitrioError
from pitrio.providers._stream import ProviderStreamFn


class ProviderError(PitrioError):
    """Root of the provider layer's exceptions."""


class ProviderNotFound(ProviderError, LookupError):
    """No provider is registered for a model's API.

    Attributes:
        api: the API id that was looked up.
    """

    def __init__(self, api: str) -> None:
        super().__init__(f"No API provider registered for api: {api}")
        self.api = api


@attrs.frozen(kw_only=True)
class ApiProvider:
    """A registered provider: its API id and streaming functions.

    ``stream`` takes API-specific options (``StreamOptions.provider_options``);
    ``stream_simple`` maps the unified ``reasoning`` level onto the API (defaults to ``stream``).
    """

    api: str
    stream: ProviderStreamFn
    stream_simple: ProviderStreamFn | None = None

    def simple(self) -> ProviderStreamFn:
        return self.stream_simple if self.stream_simple is not None else self.stream


class ProviderRegistry:
    """Maps API ids to providers. Registering an API again replaces the earlier provider."""

    def __init__(self) -> None:
        self._providers: dict[str, tuple[ApiProvider, str | None]] = {}

    def register(self, provider: ApiProvider, source_id: str | None = None) -> None:
        """Register ``provider``; ``source_id`` groups registrations for :meth:`unregister`."""
        self._providers[provider.api] = (provider, source_id)

    def unregister(self, source_id: str) -> None:
        """Remove every provider registered with ``source_id``."""
        for api in [api for api, (_, src) in self._providers.items() if src == source_id]:
            del self._providers[api]

    def get(self, api: str) -> ApiProvider | None:
        """Return the provider for ``api``, or ``None``."""
        entry = self._providers.get(api)
        return entry[0] if entry else None

    def resolve(self, api: str) -> ApiProvider:
        """Return the provider for ``api``.

        Raises:
            ProviderNotFound: nothing is registered for ``api``.
        """
        entry = self._providers.get(api)
        if entry is None:
            raise ProviderNotFound(api)
        return entry[0]

    def providers(self) -> list[ApiProvider]:
        """Return every registered provider, in registration order."""
        return [provider for provider, _ in self._providers.values()]

    def clear(self) -> None:
        """Remove every provider."""
        self._providers.clear()


default_registry: Final = ProviderRegistry()
"""The registry the module-level functions and :func:`~pitrio.providers.stream` use by default."""


def register_api_provider(provider: ApiProvider, source_id: str | None = None) -> None:
    """Register ``provider`` in the default registry."""
    default_registry.register(provider, source_id)


def unregister_api_providers(source_id: str) -> None:
    """Remove the default registry's providers registered with ``source_id``."""
    default_registry.unregister(source_id)


def get_api_provider(api: str) -> ApiProvider | None:
    """Return the default registry's provider for ``api``."""
    return default_registry.get(api)
