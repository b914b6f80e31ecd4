"""Where a provider's API key comes from: ``--api-key``, ``auth.json``, the environment.

Ports pi-coding-agent 0.73.1's ``AuthStorage.getApiKey``. For a provider, in order:

1. a runtime key (``--api-key``), set with :meth:`CredentialStore.set_runtime_key`;
2. its ``auth.json`` entry: an ``api_key`` entry's ``key`` resolved like a ``models.json``
   value (:func:`~pitrio.providers.resolve_config_value`; a ``!command``'s answer is kept for
   the store's lifetime, as pi keeps it for the process's), an ``oauth`` entry's ``access``
   token, renewed first when it is about to expire;
3. its environment variable (:func:`~pitrio.providers.get_env_api_key`).

The ``apiKey`` of ``models.json`` comes last; :meth:`CustomModels.resolve_request_auth
<pitrio.providers.CustomModels.resolve_request_auth>` applies it when the store has no key. An
entry in ``auth.json`` decides, as in pi: a ``!command`` that fails, or an OAuth token that is
expired and cannot be renewed, gives no key rather than falling through to the environment.

Files:
    The store reads a list of ``auth.json`` files, pitrio's first, then pi's (see
    :meth:`pitrio.sessions.resources.AgentDirs.auth_paths`); a provider's entry is taken from
    the first file that has one. pitrio writes new entries (``set``, ``remove``) only to the
    first file. The one write pitrio makes into pi's directory: an OAuth token read from pi's
    ``auth.json`` and renewed by pitrio is written back there (under pi's lock, see
    :mod:`._lock`), because the server has rotated the refresh token and the copy pi holds no
    longer works; pi and pitrio then keep sharing one sign-in.

Refresh:
    A token is renewed when less than :data:`REFRESH_MARGIN` seconds remain. In one Trio run,
    one task renews a provider's token while the others asking for it (through any store)
    wait for that result.
    Across processes the file lock decides: the renewing task takes the lock, reads the file
    again, and renews only if the token there still needs it (another process may have
    renewed it meanwhile). Waiting for the lock can be cancelled; once the lock is held the
    request for a new token and the write of its answer are shielded from the caller's
    cancellation and bounded by :data:`REFRESH_TIMEOUT`, so a prompt aborted mid-refresh
    never loses a rotated refresh token.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

import attrs
import structlog
import trio

from pitrio._exceptions import UsageError
from pitrio.channels import open_body_nursery
from pitrio.providers._custom_models import resolve_config_value
from pitrio.providers._env_keys import find_env_keys, get_env_api_key
from pitrio.providers.credentials._auth_file import (
    AUTH_DIR_MODE,
    AuthCredential,
    AuthFileError,
    OAuthCredential,
    parse_credential,
    read_auth_file,
    run_auth_file_work,
    write_auth_file,
)
from pitrio.providers.credentials._lock import (
    LOCK_STALE,
    AuthLockCompromised,
    AuthLockTimeout,
    acquire_auth_lock,
    keep_lock_fresh,
    release_auth_lock,
)
from pitrio.providers.credentials._refresh import TokenRefreshError, TokenRefreshers

log = structlog.get_logger(__name__)

REFRESH_MARGIN: Final = 300.0
"""Seconds before ``expires`` from which a token is renewed before use."""

REFRESH_TIMEOUT: Final = 60.0
"""Seconds the shielded part of a refresh (token request, write) may take."""


_REFRESH_FAILURES: Final = (
    TokenRefreshError,
    AuthFileError,
    AuthLockTimeout,
    AuthLockCompromised,
    OSError,
)


def _ensure_dir(directory: str) -> None:
    if not os.path.isdir(directory):
        os.makedirs(directory, mode=AUTH_DIR_MODE, exist_ok=True)


@attrs.define
class _Flight:
    """One refresh in progress in this process; its waiters read the result when ``done``."""

    done: trio.Event = attrs.field(factory=trio.Event)
    finished: bool = False
    result: OAuthCredential | None = None
    error: Exception | None = None


_flights_var: trio.lowlevel.RunVar[dict[tuple[str, str], _Flight]] = trio.lowlevel.RunVar(
    "pitrio_oauth_refreshes"
)
"""(auth.json path, provider) -> the refresh in progress, for every store of a Trio run."""

_file_locks_var: trio.lowlevel.RunVar[dict[str, trio.Lock]] = trio.lowlevel.RunVar(
    "pitrio_auth_file_locks"
)
"""auth.json path -> the lock tasks of a Trio run take before the file lock."""

T = TypeVar("T")


def _in_run(var: trio.lowlevel.RunVar[dict[Any, T]]) -> dict[Any, T]:
    try:
        return var.get()
    except LookupError:
        table: dict[Any, T] = {}
        var.set(table)
        return table


@attrs.frozen(kw_only=True)
class AuthStatus:
    """Whether a provider has credentials, and from where (pi's ``getAuthStatus``; no secret)."""

    configured: bool
    """An ``auth.json`` entry exists (the other sources are not "configured" in pi's sense)."""
    source: Literal["stored", "runtime", "environment"] | None = None
    label: str | None = None
    """``--api-key``, the environment variable's name, or the ``auth.json`` path."""


class CredentialStore:
    """API keys and OAuth tokens for providers, from ``auth.json`` files and the environment.

    Build one with :meth:`load` (reads the files now). Stores of one Trio run share their
    refreshes in progress (keyed by file and provider), so sessions that each built their own
    store (``pitrio serve`` does) still renew a token once.

    Args:
        paths: the ``auth.json`` files, pitrio's first (written), then pi's (read, and written
            only to store a token renewed from it); none for a store of runtime keys and
            environment variables only.
        env: the environment for key variables and ``api_key`` entries naming a variable;
            ``None`` reads :data:`os.environ`.
        refreshers: the refresh function per provider; none by default.
        clock: the wall clock in seconds (token expiry, lock staleness).
        lock_stale: seconds after which an ``auth.json`` lock nobody refreshes is taken over.
    """

    def __init__(
        self,
        paths: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        refreshers: TokenRefreshers | None = None,
        clock: Callable[[], float] = time.time,
        lock_stale: float = LOCK_STALE,
    ) -> None:
        self.paths: tuple[str, ...] = tuple(os.path.abspath(p) for p in paths)
        self.env = env
        self.refreshers = refreshers if refreshers is not None else TokenRefreshers()
        self._clock = clock
        self._lock_stale = lock_stale
        self._data: list[dict[str, Any]] = [{} for _ in self.paths]
        self._runtime: dict[str, str] = {}
        self._commands: dict[str, str | None] = {}
        self.errors: list[Exception] = []
        """Files that could not be read (pi's ``drainErrors``); such a file counts as empty."""

    @classmethod
    def load(
        cls,
        paths: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        refreshers: TokenRefreshers | None = None,
        clock: Callable[[], float] = time.time,
    ) -> CredentialStore:
        """A store with its files read now (blocking: call it at start-up, as pi does)."""
        store = cls(paths, env=env, refreshers=refreshers, clock=clock)
        for index, path in enumerate(store.paths):
            store._data[index] = store._read_or_record(path)
        return store

    def _read_or_record(self, path: str) -> dict[str, Any]:
        try:
            return read_auth_file(path)
        except (AuthFileError, OSError) as exc:
            self.errors.append(exc)
            return {}

    async def reload(self) -> None:
        """Read every file again (a file that cannot be read counts as empty)."""
        for index, path in enumerate(self.paths):
            self._data[index] = await run_auth_file_work(self._read_or_record, path)

    # ----------------------------------------------------------------------- lookups

    def set_runtime_key(self, provider: str, key: str) -> None:
        """Use ``key`` for ``provider`` before anything stored (``--api-key``; not saved)."""
        self._runtime[provider] = key

    def runtime_key(self, provider: str) -> str | None:
        """The runtime key of ``provider``, if one was set."""
        return self._runtime.get(provider)

    def remove_runtime_key(self, provider: str) -> None:
        """Forget the runtime key of ``provider``."""
        self._runtime.pop(provider, None)

    def get(self, provider: str) -> tuple[AuthCredential, str] | None:
        """The stored credential of ``provider`` and the file it is in (first file first)."""
        for path, data in zip(self.paths, self._data, strict=True):
            credential = parse_credential(data.get(provider))
            if credential is not None:
                return credential, path
        return None

    def providers(self) -> list[str]:
        """The providers with a usable ``auth.json`` entry, in file order."""
        seen: dict[str, None] = {}
        for data in self._data:
            for provider, entry in data.items():
                if parse_credential(entry) is not None:
                    seen.setdefault(provider, None)
        return list(seen)

    def has_auth(self, provider: str) -> bool:
        """Whether ``provider`` has a runtime key, an ``auth.json`` entry or a key variable
        (pi's ``hasAuth``: nothing is run and no token renewed, so the key may still fail)."""
        return (
            provider in self._runtime
            or self.get(provider) is not None
            or get_env_api_key(provider, self.env) is not None
        )

    def auth_status(self, provider: str) -> AuthStatus:
        """Where ``provider``'s credentials come from, without resolving or renewing them."""
        found = self.get(provider)
        if found is not None:
            return AuthStatus(configured=True, source="stored", label=found[1])
        if provider in self._runtime:
            return AuthStatus(configured=False, source="runtime", label="--api-key")
        names = find_env_keys(provider, self.env)
        if names:
            return AuthStatus(configured=False, source="environment", label=names[0])
        return AuthStatus(configured=False)

    async def api_key(self, provider: str) -> str | None:
        """The key for a request to ``provider`` (see the module docstring for the order).

        Raises:
            TokenRefreshError: its OAuth token has expired and renewing it failed.
        """
        runtime = self._runtime.get(provider)
        if runtime:
            return runtime
        found = self.get(provider)
        if found is not None:
            credential, _ = found
            if isinstance(credential, OAuthCredential):
                return await self._oauth_key(provider, credential)
            return await self._resolve_cached(credential.key)
        return get_env_api_key(provider, self.env)

    async def _resolve_cached(self, value: str) -> str | None:
        if not value.startswith("!"):
            return await resolve_config_value(value, env=self.env)
        if value not in self._commands:
            # A failure is kept too (pi caches whatever the command gave).
            self._commands[value] = await resolve_config_value(value, env=self.env)
        return self._commands[value]

    # ----------------------------------------------------------------------- writes

    async def set(self, provider: str, credential: AuthCredential) -> None:
        """Store ``credential`` for ``provider`` in pitrio's ``auth.json`` (the first file).

        Raises:
            UsageError: the store has no file.
        """
        await self._update(self._own_path(), provider, credential.to_json())

    async def remove(self, provider: str) -> bool:
        """Remove ``provider``'s entry from pitrio's ``auth.json``; whether there was one.

        pi's ``auth.json`` is left alone: an entry there still counts afterwards.

        Raises:
            UsageError: the store has no file.
        """
        path = self._own_path()
        if provider not in self._data[0]:
            await self.reload()
            if provider not in self._data[0]:
                return False
        await self._update(path, provider, None)
        return True

    def _own_path(self) -> str:
        if not self.paths:
            raise UsageError("this CredentialStore has no auth.json to write")
        return self.paths[0]

    async def _update(self, path: str, provider: str, entry: dict[str, Any] | None) -> None:
        index = self.paths.index(path)
        async with self._file_lock(path):
            await run_auth_file_work(_ensure_dir, os.path.dirname(path))
            lock = await acquire_auth_lock(path, stale=self._lock_stale, clock=self._clock)
            with trio.CancelScope(shield=True):
                try:
                    data = await run_auth_file_work(read_auth_file, path)
                    if entry is None:
                        data.pop(provider, None)
                    else:
                        data[provider] = entry
                    lock.check()
                    await run_auth_file_work(write_auth_file, path, data)
                    self._data[index] = data
                finally:
                    await release_auth_lock(lock)

    def _file_lock(self, path: str) -> trio.Lock:
        return _in_run(_file_locks_var).setdefault(path, trio.Lock())

    # ----------------------------------------------------------------------- refresh

    def _needs_refresh(self, credential: OAuthCredential) -> bool:
        return self._clock() * 1000 >= credential.expires - REFRESH_MARGIN * 1000

    def _still_valid(self, credential: OAuthCredential) -> bool:
        return self._clock() * 1000 < credential.expires

    async def _oauth_key(self, provider: str, credential: OAuthCredential) -> str | None:
        if not self._needs_refresh(credential):
            return credential.access
        if self.refreshers.get(provider) is None:
            # Nothing can renew it (pi has no key for an OAuth provider it does not know);
            # use it while it lasts.
            return credential.access if self._still_valid(credential) else None
        try:
            renewed = await self._refresh_once(provider)
        except _REFRESH_FAILURES as exc:
            log.warning("oauth_refresh_failed", provider=provider, error=str(exc))
            found = self.get(provider)
            current = found[0] if found is not None else None
            if isinstance(current, OAuthCredential) and self._still_valid(current):
                return current.access
            if isinstance(exc, TokenRefreshError):
                raise
            raise TokenRefreshError(
                f"Could not renew the OAuth token of {provider}: {exc}", provider=provider
            ) from exc
        return renewed.access if renewed is not None else None

    async def _refresh_once(self, provider: str) -> OAuthCredential | None:
        """Renew ``provider``'s token, or wait for the task of this process that is doing so
        (from any store of this Trio run that reads the same file)."""
        found = self.get(provider)
        if found is None:
            return None
        key = (found[1], provider)
        flights = _in_run(_flights_var)
        while (flight := flights.get(key)) is not None:
            await flight.done.wait()
            if flight.finished:
                if flight.error is not None:
                    raise TokenRefreshError(
                        f"Could not renew the OAuth token of {provider}: {flight.error}",
                        provider=provider,
                    ) from flight.error
                if flight.result is not None:
                    # The leader's store wrote the file; this store's copy is older.
                    await self.reload()
                return flight.result
            # Its task was cancelled before it held the lock: try again, maybe as the leader.
        flight = flights[key] = _Flight()
        try:
            flight.result = await self._refresh_locked(provider, found[1])
            flight.finished = True
            return flight.result
        except Exception as exc:
            flight.error = exc
            flight.finished = True
            raise
        finally:
            del flights[key]
            flight.done.set()

    async def _refresh_locked(self, provider: str, path: str) -> OAuthCredential | None:
        async with self._file_lock(path):
            lock = await acquire_auth_lock(path, stale=self._lock_stale, clock=self._clock)
            # From here on a rotated refresh token is at stake: the caller's cancellation waits.
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + REFRESH_TIMEOUT
                try:
                    async with open_body_nursery() as nursery:
                        nursery.start_soon(
                            functools.partial(keep_lock_fresh, lock, clock=self._clock)
                        )
                        renewed = await self._refresh_in_file(provider, path, lock.check)
                        nursery.cancel_scope.cancel()
                finally:
                    await release_auth_lock(lock)
            # The token is stored; now a cancelled caller stops here, as it asked to.
            await trio.lowlevel.checkpoint_if_cancelled()
            if scope.cancelled_caught:
                raise TokenRefreshError(
                    f"Renewing the OAuth token of {provider} took over {REFRESH_TIMEOUT:g} s",
                    provider=provider,
                )
            return renewed

    async def _refresh_in_file(
        self, provider: str, path: str, check_lock: Callable[[], None]
    ) -> OAuthCredential | None:
        index = self.paths.index(path)
        data = await run_auth_file_work(read_auth_file, path)
        self._data[index] = data
        credential = parse_credential(data.get(provider))
        if not isinstance(credential, OAuthCredential):
            return None  # signed out meanwhile
        if not self._needs_refresh(credential):
            log.debug("oauth_refreshed_elsewhere", provider=provider, path=path)
            return credential
        refresh = self.refreshers.get(provider)
        if refresh is None:
            return credential if self._still_valid(credential) else None
        try:
            renewed = await refresh(credential)
        except TokenRefreshError:
            raise
        except Exception as exc:
            raise TokenRefreshError(
                f"Could not renew the OAuth token of {provider}: {exc}", provider=provider
            ) from exc
        check_lock()
        data = {**data, provider: renewed.to_json()}
        await run_auth_file_work(write_auth_file, path, data)
        self._data[index] = data
        log.info("oauth_refreshed", provider=provider, path=path)
        return renewed
