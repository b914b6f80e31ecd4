"""``auth.json`` as pi 0.73.1 keeps it: entries, reading, writing, file modes.

The file maps a provider id to one credential::

    {
      "anthropic": {"type": "api_key", "key": "sk-ant-..."},
      "openai-codex": {
        "type": "oauth",
        "refresh": "...", "access": "...", "expires": 1767225600000,
        "accountId": "..."
      }
    }

``key`` is resolved like a ``models.json`` value (``!command``, environment variable name, or
literal). ``expires`` is a Unix time in milliseconds. Fields pitrio does not know (the
``accountId`` above, whole entries of an unknown ``type``) are kept: an entry is held as the
JSON object it was read as, and a write replaces only the entry it changes.

Files are written as pi writes them (``JSON.stringify(data, null, 2)``), mode ``0600``, and a
directory pitrio creates for one is made ``0700``. pitrio writes through a temporary file in the
same directory and ``os.replace``, so a reader never sees half a file.

Blocking file work runs in a worker thread under :func:`auth_file_limiter`, a
:class:`trio.CapacityLimiter` of its own per Trio run: ``providers`` sits below ``sessions`` and
cannot share the sessions' file limiter (:func:`pitrio.sessions.storage._files.file_limiter`), and
credential files are read and written rarely enough that :data:`AUTH_FILE_THREADS` threads
never queue behind session work.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, TypeVar, TypeVarTuple

import attrs
import trio

from pitrio.providers._registry import ProviderError

AUTH_FILE: Final = "auth.json"
"""The name of the credentials file in an agent dir."""

AUTH_FILE_MODE: Final = 0o600
AUTH_DIR_MODE: Final = 0o700

AUTH_FILE_THREADS: Final = 2
"""Worker threads for credential file work per Trio run (reads and writes are rare)."""

_limiter_var: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar(
    "pitrio_auth_file_limiter"
)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class AuthFileError(ProviderError, ValueError):
    """An ``auth.json`` that is not a JSON object of objects.

    Attributes:
        path: the file.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def auth_file_limiter() -> trio.CapacityLimiter:
    """The limiter for credential file work of the current Trio run (created on first use)."""
    try:
        return _limiter_var.get()
    except LookupError:
        limiter = trio.CapacityLimiter(AUTH_FILE_THREADS)
        _limiter_var.set(limiter)
        return limiter


async def run_auth_file_work(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run blocking file work ``fn(*args)`` in a worker thread under :func:`auth_file_limiter`.

    Cancellation waits for the thread to finish (a write is never abandoned half done).
    """
    return await trio.to_thread.run_sync(fn, *args, limiter=auth_file_limiter())


# --------------------------------------------------------------------------- entries


@attrs.frozen(kw_only=True)
class ApiKeyCredential:
    """An ``api_key`` entry: a key, an environment variable name, or a ``!command``."""

    type: Literal["api_key"] = "api_key"
    key: str
    """Unresolved: see :func:`pitrio.providers.resolve_config_value`."""
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    """Fields pitrio does not know, written back unchanged."""

    def to_json(self) -> dict[str, Any]:
        """The entry as stored in ``auth.json``."""
        return {"type": "api_key", "key": self.key, **self.extra}


@attrs.frozen(kw_only=True)
class OAuthCredential:
    """An ``oauth`` entry: an access token, the token that renews it, and its expiry."""

    type: Literal["oauth"] = "oauth"
    refresh: str
    access: str
    expires: int
    """When ``access`` expires, in milliseconds since the Unix epoch."""
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    """Provider fields (``accountId``, ``enterpriseUrl``, ...), written back unchanged."""

    def to_json(self) -> dict[str, Any]:
        """The entry as stored in ``auth.json`` (pi's ``{type: "oauth", ...credentials}``)."""
        return {
            "type": "oauth",
            "refresh": self.refresh,
            "access": self.access,
            "expires": self.expires,
            **self.extra,
        }


AuthCredential: TypeAlias = ApiKeyCredential | OAuthCredential

_OAUTH_FIELDS: Final = frozenset({"type", "refresh", "access", "expires"})


def parse_credential(entry: object) -> AuthCredential | None:
    """The credential an ``auth.json`` entry holds, or ``None`` for one pitrio cannot use
    (an unknown ``type``, a missing or mistyped field): such an entry is left alone."""
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    if kind == "api_key":
        key = entry.get("key")
        if not isinstance(key, str):
            return None
        extra = {k: v for k, v in entry.items() if k not in ("type", "key")}
        return ApiKeyCredential(key=key, extra=extra)
    if kind == "oauth":
        access, refresh, expires = entry.get("access"), entry.get("refresh"), entry.get("expires")
        if not (isinstance(access, str) and isinstance(refresh, str)):
            return None
        if isinstance(expires, bool) or not isinstance(expires, int | float):
            return None
        extra = {k: v for k, v in entry.items() if k not in _OAUTH_FIELDS}
        return OAuthCredential(access=access, refresh=refresh, expires=int(expires), extra=extra)
    return None


# --------------------------------------------------------------------------- files


def read_auth_file(path: str) -> dict[str, Any]:
    """Read ``path`` as pi does (blocking): a missing or empty file holds nothing.

    Raises:
        AuthFileError: the file is not JSON, or not an object.
        OSError: it exists but cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AuthFileError(f"not valid JSON: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise AuthFileError("not a JSON object", path=path)
    return data


def write_auth_file(path: str, data: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``data`` (blocking), mode ``0600``; create its directory ``0700``.

    The text is pi's (two-space indent, no trailing newline); the file is replaced through a
    temporary sibling and ``os.replace``, so it is never seen half written. A symlinked
    ``auth.json`` keeps its link: the file it points to is replaced.
    """
    # Through a symlink to its target (as pi's writeFileSync does), not over the link.
    path = os.path.realpath(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, mode=AUTH_DIR_MODE, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    # mkstemp creates the file 0600 already: the secret is never readable by others.
    fd, temp = tempfile.mkstemp(prefix=".auth.json.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, AUTH_FILE_MODE)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
