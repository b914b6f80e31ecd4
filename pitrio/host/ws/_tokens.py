"""The host token and the client tokens: grants, expiry, revocation, and their file.

Client tokens are stored as SHA-256 digests, never in clear. A token is 24 random bytes
(:func:`new_token`, 192 bits): nobody can search that space, so a slow password hash
(scrypt, PBKDF2) would buy nothing and would cost CPU on every connection; a digest of a
low-entropy secret would need one, and the host never accepts a client token it did not
generate. The host token is not stored (it comes from the host's configuration).

The file (``tokens.json`` in the host's state folder, mode 0600) is rewritten whole on every
change: written to a temporary file in the same folder (created 0600), flushed, synced and
renamed over the old one, so a crash leaves the old file or the new one, never half of one.

Several hosts may share the file (the nodes of a cluster, whose state folder is on their shared
session storage): a save holds an exclusive ``flock`` on ``tokens.json.lock`` and merges in
the tokens another host wrote since (unless this one revoked them), and :meth:`Tokens.refresh`
re-reads the file when it changed (a token another node created, a grant it added).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable
from typing import Any, Final, TypeAlias, TypeVar

import attrs
import orjson
import trio

from pitrio.sessions import run_file_work

__all__ = ["TOKENS_FILE", "TokenRecord", "Tokens", "TokensFileError", "new_token", "token_digest"]

TOKENS_FILE: Final = "tokens.json"
_FORMAT_VERSION: Final = 1
_ID_PREFIX: Final = "tok_"
_T = TypeVar("_T")


class TokensFileError(Exception):
    """The tokens file exists but cannot be read as one (the host refuses to start rather
    than forget every client's grants)."""


def new_token(nbytes: int) -> str:
    """A random URL-safe token of ``nbytes`` bytes that does not start with ``-`` (one in
    64 would, and a command line then reads ``--token -x...`` as an option)."""
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token


def token_digest(token: str) -> str:
    """The SHA-256 hex digest a client token is stored and looked up by."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.define(kw_only=True)
class TokenRecord:
    """One client token as the host keeps it.

    Attributes:
        id: its public name (``tok_...``): what logs, ``revoke_token`` and ``grant`` may use
            instead of the secret.
        digest: :func:`token_digest` of the secret.
        sessions: the session ids it may open.
        created: when it was made (seconds since the epoch).
        expires: when it stops being accepted (seconds since the epoch), or never.
        tools: the tools its sessions get (``None``: the host's default for client tokens).
    """

    id: str
    digest: str
    sessions: set[str] = attrs.field(factory=set)
    created: float = 0.0
    expires: float | None = None
    tools: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sha256": self.digest,
            "sessions": sorted(self.sessions),
            "created": self.created,
            "expires": self.expires,
            "tools": list(self.tools) if self.tools is not None else None,
        }

    @classmethod
    def from_json(cls, data: Any) -> TokenRecord:
        if not isinstance(data, dict):
            raise TokensFileError("a token entry is not an object")
        id_, digest, sessions = data.get("id"), data.get("sha256"), data.get("sessions", [])
        expires, tools, created = data.get("expires"), data.get("tools"), data.get("created", 0)
        if not isinstance(id_, str) or not isinstance(digest, str) or len(digest) != 64:
            raise TokensFileError("a token entry has no id or sha256")
        if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
            raise TokensFileError(f"token {id_}: sessions must be a list of strings")
        if expires is not None and not isinstance(expires, int | float):
            raise TokensFileError(f"token {id_}: expires must be a number or null")
        if tools is not None and (
            not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
        ):
            raise TokensFileError(f"token {id_}: tools must be a list of strings or null")
        return cls(
            id=id_,
            digest=digest,
            sessions=set(sessions),
            created=float(created) if isinstance(created, int | float) else 0.0,
            expires=float(expires) if expires is not None else None,
            tools=tuple(tools) if tools is not None else None,
        )


class Tokens:
    """The host token and the client tokens, with the sessions each may see.

    A connection is identified by its token's *key*: the host token itself, or a client
    token's record id (the secret is not kept). Changes are in memory at once; :meth:`save`
    writes them (the host awaits it before it answers the command that made them).

    Args:
        host_token: the host token (sees every session, makes client tokens).
        path: the tokens file (``None``: kept in memory only).
        clock: seconds since the epoch, for expiry (wall time: expiry must mean the same
            thing after a restart).
    """

    def __init__(
        self,
        host_token: str,
        path: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.host_token = host_token
        self.path = path
        self._clock = clock
        self._records: dict[str, TokenRecord] = {}
        """By id."""
        self._by_digest: dict[str, TokenRecord] = {}
        self._save_lock = trio.Lock()
        self._revoked: set[str] = set()
        """Ids this host revoked: a save does not merge them back from the file."""
        self._stamp: tuple[int, int, int] | None = None
        """The file's (inode, size, mtime) when last read or written."""
        self.created: dict[str, int] = {}
        """Live sessions each client token created (for the per-token limit)."""
        self._unsaved: set[str] = set()
        """Ids of tokens made here since the last save began: a refresh keeps them."""

    # ------------------------------------------------------------------ file
    #
    # The file's work (its lock, reading, writing) runs in a worker thread on copies; what it
    # read is applied to this object's maps back on the loop, which alone changes them.

    def load(self) -> None:
        """Read the tokens file, if there is one. Blocking: run it in a worker thread, before
        the host serves (nothing else uses this object yet).

        Raises:
            TokensFileError: the file is there but not a tokens file.
        """
        if self.path is None:
            return
        read = _read(self.path)
        if read is None:
            return
        records, self._stamp = read
        self._records = {record.id: record for record in records}
        self._by_digest = {record.digest: record for record in records}

    def _merge(self, records: list[TokenRecord]) -> None:
        """Take in the tokens and grants another host wrote (not the ones this one revoked)."""
        for record in records:
            if record.id in self._revoked:
                continue
            mine = self._records.get(record.id)
            if mine is None:
                self._records[record.id] = record
                self._by_digest[record.digest] = record
            else:
                mine.sessions |= record.sessions

    async def refresh(self) -> None:
        """Re-read the file if another host changed it (no-op without a file).

        The file's tokens replace these (a token another host revoked is gone), except the
        tokens made here and not saved yet, and without the ones revoked here; the grants this
        host holds in memory only (ephemeral sessions) are kept.

        Raises:
            TokensFileError: the file is there but not a tokens file.
        """
        if self.path is None:
            return
        async with self._save_lock:
            work = functools.partial(_read_if_changed, self.path, self._stamp)
            read = await run_file_work(_locked, self.path, work)
            if read is None:
                return
            records, self._stamp = read
            # Revoked here and not saved yet: the file's copy must not bring it back.
            records = [record for record in records if record.id not in self._revoked]
            for record in records:
                mine = self._records.get(record.id)
                if mine is not None:
                    record.sessions |= mine.sessions
            unsaved = [self._records[i] for i in self._unsaved if i in self._records]
            self._records = {record.id: record for record in [*records, *unsaved]}
            self._by_digest = {record.digest: record for record in self._records.values()}

    async def save(self) -> None:
        """Write the tokens as they are now (no-op without a file). Saves run one at a time,
        each writing the state when it starts, so the last one written has every change."""
        if self.path is None:
            return
        async with self._save_lock:
            copies = [attrs.evolve(r, sessions=set(r.sessions)) for r in self._records.values()]
            work = functools.partial(
                _merge_and_write, self.path, self._stamp, copies, frozenset(self._revoked)
            )
            read, self._stamp = await run_file_work(_locked, self.path, work)
            if read is not None:
                self._merge(read)
            self._unsaved.difference_update(copy.id for copy in copies)

    # ------------------------------------------------------------------ who is who

    def authenticate(self, presented: str | None) -> str | None:
        """The key of the token ``presented`` (the host token, or a live client token's id),
        else ``None`` (unknown, revoked or expired)."""
        if not presented:
            return None
        if hmac.compare_digest(presented.encode(), self.host_token.encode()):
            return self.host_token
        record = self._by_digest.get(token_digest(presented))
        if record is None or not self._current(record):
            return None
        return record.id

    def resolve(self, token: str | None = None, token_id: str | None = None) -> str | None:
        """The key of a client token named by its secret or its id (``grant``,
        ``revoke_token``), whether or not it is still current."""
        if token is not None:
            if hmac.compare_digest(token.encode(), self.host_token.encode()):
                return self.host_token
            record = self._by_digest.get(token_digest(token))
            return record.id if record is not None else None
        if token_id is not None and token_id in self._records:
            return token_id
        return None

    def _current(self, record: TokenRecord) -> bool:
        return record.expires is None or self._clock() < record.expires

    def is_host(self, key: str) -> bool:
        return key == self.host_token

    def active(self, key: str) -> bool:
        """Whether ``key`` is the host token or a client token neither revoked nor expired."""
        if key == self.host_token:
            return True
        record = self._records.get(key)
        return record is not None and self._current(record)

    # ------------------------------------------------------------------ changes

    def create(
        self, *, expires: float | None = None, tools: tuple[str, ...] | None = None
    ) -> tuple[str, str]:
        """A new client token that sees no session yet: ``(secret, id)``.

        Args:
            expires: when it stops being accepted (seconds since the epoch).
            tools: the tools its sessions get (``None``: the host's default).
        """
        token = new_token(24)
        record = TokenRecord(
            id=_ID_PREFIX + secrets.token_hex(8),
            digest=token_digest(token),
            created=self._clock(),
            expires=expires,
            tools=tools,
        )
        self._records[record.id] = record
        self._by_digest[record.digest] = record
        self._unsaved.add(record.id)
        return token, record.id

    def revoke(self, key: str) -> bool:
        """Forget a client token; False when there is none of that key."""
        record = self._records.pop(key, None)
        if record is None:
            return False
        self._revoked.add(key)
        self._unsaved.discard(key)
        del self._by_digest[record.digest]
        self.created.pop(key, None)
        return True

    def grant(self, key: str, session_id: str) -> bool:
        """Let ``key`` open ``session_id``; True when that changed what is stored (nothing
        to do for the host token)."""
        record = self._records.get(key)
        if record is None or session_id in record.sessions:
            return False
        record.sessions.add(session_id)
        return True

    # ------------------------------------------------------------------ questions

    def may_open(self, key: str, session_id: str) -> bool:
        if key == self.host_token:
            return True
        record = self._records.get(key)
        return record is not None and self._current(record) and session_id in record.sessions

    def sessions_of(self, key: str) -> frozenset[str] | None:
        """The sessions a client token may open (``None`` for the host token: all)."""
        if key == self.host_token:
            return None
        record = self._records.get(key)
        return frozenset(record.sessions) if record is not None else frozenset()

    def tools_of(self, key: str) -> tuple[str, ...] | None:
        """The tools granted to a client token (``None``: the host's default, or for the
        host token: every tool the factory gives)."""
        record = self._records.get(key)
        return record.tools if record is not None else None


def _write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by this user only."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    finally:
        os.close(dir_fd)


# ------------------------------------------------------------------ the file's work (threads)

Stamp: TypeAlias = tuple[int, int, int]
"""A file's (inode, size, mtime) when last read or written."""


def _locked(path: str, work: Callable[[], _T]) -> _T:
    """Run ``work`` under the exclusive ``flock`` of ``path + ".lock"`` (blocking)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return work()
    finally:
        os.close(fd)  # releases the lock


def _read(path: str) -> tuple[list[TokenRecord], Stamp] | None:
    """The file's records and stamp; None when there is no file.

    Raises:
        TokensFileError: the file is there but not a tokens file.
    """
    try:
        with open(path, "rb") as f:
            stat = os.fstat(f.fileno())
            data = orjson.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise TokensFileError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
        raise TokensFileError(f"{path} is not a tokens file")
    try:
        records = [TokenRecord.from_json(entry) for entry in data["tokens"]]
    except TokensFileError as exc:
        raise TokensFileError(f"{path}: {exc}") from exc
    return records, (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _read_if_changed(path: str, stamp: Stamp | None) -> tuple[list[TokenRecord], Stamp] | None:
    """:func:`_read`, unless the file still has ``stamp`` (or is gone): then None."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    if (stat.st_ino, stat.st_size, stat.st_mtime_ns) == stamp:
        return None
    return _read(path)


def _merge_and_write(
    path: str, stamp: Stamp | None, mine: list[TokenRecord], revoked: frozenset[str]
) -> tuple[list[TokenRecord] | None, Stamp]:
    """Write ``mine`` (copies: merged in place) with the tokens and grants another host wrote
    since ``stamp`` (not the ``revoked`` ones); return what was read, and the new stamp."""
    read = _read_if_changed(path, stamp)
    records = {record.id: record for record in mine}
    for record in read[0] if read is not None else ():
        if record.id in revoked:
            continue
        copy = records.get(record.id)
        if copy is None:
            records[record.id] = attrs.evolve(record, sessions=set(record.sessions))
        else:
            copy.sessions |= record.sessions
    data = {"version": _FORMAT_VERSION, "tokens": [r.to_json() for r in records.values()]}
    _write_private(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))
    stat = os.stat(path)
    return (read[0] if read is not None else None), (stat.st_ino, stat.st_size, stat.st_mtime_ns)
