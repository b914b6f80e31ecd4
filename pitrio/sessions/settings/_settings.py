"""Settings: the global and the project ``settings.json``, merged (pi's ``SettingsManager``).

Kept in one module: pi's settings table: every setting with its default and getter
in one place.

Two JSON files configure the coding agent:

* global: ``<agent dir>/settings.json``; the agent dir is ``$PITRIO_CODING_AGENT_DIR`` or
  ``~/.pitrio/agent``;
* project: ``<cwd>/.pitrio/settings.json``.

The effective settings are the global object with the project object merged over it, as pi
merges them: a top-level key of the project file replaces the global one, except that when both
values are objects their keys are merged (one level: ``{**global[k], **project[k]}``). Keys this
module does not know are kept, read and written back untouched.

A file that is not valid JSON (or not a JSON object) is not fatal, as in pi: its scope counts
as empty, a :class:`SettingsFileError` naming the file is recorded (:meth:`SettingsManager.
drain_errors`), and that file is never written, so nothing in it is lost. Pass ``strict=True``
to raise the error instead.

A known key whose value has the wrong type (``{"retry": "yes"}``, ``{"compaction":
{"reserveTokens": "x"}}``) is not fatal either: a :class:`SettingsValueError` naming the file and
the key is recorded for :meth:`SettingsManager.drain_errors` (never raised, even with
``strict=True``: the value has a default) and that key alone reads as its default; the other
keys of the same object keep their values. pi ignores such values without a word.

Writes (``set_*``) go to the global file. Like pi, a write re-reads the file and replaces only
the keys this process changed, so a concurrent edit of another key survives; the new text is
written to a temporary file and renamed over the old one, so a crash never leaves half a file.
The ``set_*`` methods write synchronously (scripts, tests, the CLI before Trio starts); inside
a Trio run use their ``aset_*`` twins, which change the settings at once and do the file work
in a worker thread under the shared :func:`~pitrio.sessions.file_limiter`, one save at a time.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeAlias

import attrs
import orjson
import trio

from pitrio._exceptions import PitrioError
from pitrio.channels import REPLAY_RING
from pitrio.sessions.storage._files import run_file_work
from pitrio.sessions.storage._paths import CONFIG_DIR_NAME
from pitrio.sessions.storage._paths import agent_dir as default_agent_dir

__all__ = [
    "BranchSummarySettings",
    "CompactionSettings",
    "FileSettingsStorage",
    "InMemorySettingsStorage",
    "ProviderRetrySettings",
    "RetrySettings",
    "SettingsError",
    "SettingsFileError",
    "SettingsManager",
    "SettingsScope",
    "SettingsStorage",
    "SettingsValueError",
    "check_settings_types",
    "deep_merge_settings",
    "migrate_settings",
]

SETTINGS_FILE: Final = "settings.json"

SettingsScope: TypeAlias = Literal["global", "project"]
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]

# pi's defaults (settings-manager.js, docs/settings.md).
DEFAULT_COMPACTION_ENABLED: Final = True
DEFAULT_RESERVE_TOKENS: Final = 16384
DEFAULT_KEEP_RECENT_TOKENS: Final = 20000
DEFAULT_RETRY_ENABLED: Final = True
DEFAULT_MAX_RETRIES: Final = 3
DEFAULT_BASE_DELAY_MS: Final = 2000
DEFAULT_MAX_RETRY_DELAY_MS: Final = 60000
DEFAULT_QUEUE_MODE: Final = "one-at-a-time"


# --------------------------------------------------------------------------- errors


class SettingsError(PitrioError):
    """Root of the settings errors."""


class SettingsFileError(SettingsError, ValueError):
    """A settings file could not be read or is not a JSON object.

    Attributes:
        path: the file (or ``"<memory:global>"`` for in-memory storage).
        scope: ``"global"`` or ``"project"``.
    """

    def __init__(self, path: str, scope: SettingsScope, reason: str) -> None:
        super().__init__(f"Invalid {scope} settings file {path}: {reason}")
        self.path = path
        self.scope = scope


class SettingsValueError(SettingsError, ValueError):
    """A known settings key has a value of the wrong type; its default is used instead.

    Attributes:
        path: the file (or ``"<memory:global>"`` for in-memory storage).
        scope: ``"global"`` or ``"project"``.
        key: the dotted key, e.g. ``"compaction.reserveTokens"``.
        value: the value found.
        expected: what the key takes, in words (``"a number"``).
    """

    def __init__(
        self, path: str, scope: SettingsScope, key: str, value: Any, expected: str
    ) -> None:
        shown = orjson.dumps(value).decode()
        if len(shown) > VALUE_SHOWN_LIMIT:
            shown = shown[:VALUE_SHOWN_LIMIT] + "..."
        super().__init__(
            f"Invalid setting {key} in {path}: expected {expected}, got {shown}; using the default"
        )
        self.path = path
        self.scope = scope
        self.key = key
        self.value = value
        self.expected = expected


# --------------------------------------------------------------------------- value types

VALUE_SHOWN_LIMIT: Final = 60
"""Characters of a wrongly typed value quoted in its warning."""

_Expected: TypeAlias = Literal["string", "boolean", "number"] | tuple[str, ...]
"""A scalar JSON type, or the strings a key accepts."""

SETTINGS_TYPES: Final[Mapping[str, Any]] = {
    "defaultProvider": "string",
    "defaultModel": "string",
    "defaultThinkingLevel": "string",
    "steeringMode": ("all", "one-at-a-time"),
    "followUpMode": ("all", "one-at-a-time"),
    "sessionDir": "string",
    "streamStallTimeoutMs": "number",
    "replayRingSize": "number",
    "compaction": {
        "enabled": "boolean",
        "reserveTokens": "number",
        "keepRecentTokens": "number",
    },
    "retry": {
        "enabled": "boolean",
        "maxRetries": "number",
        "baseDelayMs": "number",
        "provider": {"timeoutMs": "number", "maxRetries": "number", "maxRetryDelayMs": "number"},
    },
    "branchSummary": {"reserveTokens": "number", "skipPrompt": "boolean"},
}
"""The keys this module reads and what each takes (a nested mapping is a JSON object). Other
keys are pi's or an extension's: kept as they are and never checked here."""


def _describe(expected: _Expected | Mapping[str, Any]) -> str:
    if isinstance(expected, Mapping):
        return "an object"
    if isinstance(expected, tuple):
        return " or ".join(f'"{choice}"' for choice in expected)
    return "a number" if expected == "number" else f"a {expected}"


def _fits(value: Any, expected: _Expected | Mapping[str, Any]) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(value, dict)
    if isinstance(expected, tuple):
        return value in expected
    if expected == "number":
        # JSON true is an int to Python; a boolean is never accepted where a number is expected.
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, bool if expected == "boolean" else str)


def check_settings_types(
    settings: Mapping[str, Any], path: str, scope: SettingsScope
) -> list[SettingsValueError]:
    """Return one :class:`SettingsValueError` per known key of ``settings`` with a wrong type.

    ``null`` counts as unset (as in pi) and unknown keys are not checked. A wrongly typed
    object is reported once, not key by key.
    """
    errors: list[SettingsValueError] = []
    _check_types(errors, path, scope, settings, SETTINGS_TYPES, "")
    return errors


def _check_types(
    errors: list[SettingsValueError],
    path: str,
    scope: SettingsScope,
    document: Mapping[str, Any],
    types: Mapping[str, Any],
    prefix: str,
) -> None:
    # A module function, not a nested one calling itself: that closure would be a reference
    # cycle (function -> cell -> function) left to the cycle collector on every settings load.
    for key, expected in types.items():
        value = document.get(key)
        if value is None:
            continue
        if not _fits(value, expected):
            errors.append(SettingsValueError(path, scope, prefix + key, value, _describe(expected)))
        elif isinstance(expected, Mapping):
            _check_types(errors, path, scope, value, expected, f"{prefix}{key}.")


# --------------------------------------------------------------------------- typed views


@attrs.frozen(kw_only=True)
class CompactionSettings:
    """``compaction.*`` (seed 002 s.8.3)."""

    enabled: bool = DEFAULT_COMPACTION_ENABLED
    """Compact automatically (manual compaction works either way)."""
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    """Tokens kept free for the response: compact when context > window - reserve."""
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    """Roughly how many recent tokens survive a compaction unsummarised."""


@attrs.frozen(kw_only=True)
class RetrySettings:
    """``retry.*``: the agent-level retry of transient errors (seed 002 s.5.8)."""

    enabled: bool = DEFAULT_RETRY_ENABLED
    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay_ms: int = DEFAULT_BASE_DELAY_MS
    """Attempt n waits ``base_delay_ms * 2 ** (n - 1)`` milliseconds (no server-requested delay)."""
    max_delay_ms: int = DEFAULT_MAX_RETRY_DELAY_MS
    """Cap on a server-requested delay (``retry-after``); ``0``: no cap. Read from
    ``retry.provider.maxRetryDelayMs`` (pi's legacy ``retry.maxDelayMs`` migrates there)."""


@attrs.frozen(kw_only=True)
class ProviderRetrySettings:
    """``retry.provider.*``: passed to the providers with every request."""

    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int = DEFAULT_MAX_RETRY_DELAY_MS
    """A server-requested delay longer than this fails the request at once (0: no cap)."""


@attrs.frozen(kw_only=True)
class BranchSummarySettings:
    """``branchSummary.*``."""

    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    skip_prompt: bool = False


# --------------------------------------------------------------------------- storage


class SettingsStorage(Protocol):
    """Where the two settings documents live (files, or memory for tests and embedding)."""

    def read(self, scope: SettingsScope) -> str | None:
        """Return the text of ``scope``'s document, or ``None`` when there is none."""
        ...

    def write(self, scope: SettingsScope, text: str) -> None:
        """Replace ``scope``'s document with ``text``."""
        ...

    def describe(self, scope: SettingsScope) -> str:
        """Return a name for ``scope``'s document to use in error messages (its path)."""
        ...


class FileSettingsStorage:
    """The two ``settings.json`` files.

    Args:
        cwd: the project directory (its ``.pitrio/settings.json`` is the project scope).
        agent_dir_path: the agent dir (default: ``$PITRIO_CODING_AGENT_DIR`` or
            ``~/.pitrio/agent``).
    """

    def __init__(
        self, cwd: str | os.PathLike[str], agent_dir_path: str | os.PathLike[str] | None = None
    ):
        base = Path(agent_dir_path) if agent_dir_path is not None else Path(default_agent_dir())
        self.global_path = base / SETTINGS_FILE
        self.project_path = Path(cwd) / CONFIG_DIR_NAME / SETTINGS_FILE

    def _path(self, scope: SettingsScope) -> Path:
        return self.global_path if scope == "global" else self.project_path

    def read(self, scope: SettingsScope) -> str | None:
        path = self._path(scope)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def write(self, scope: SettingsScope, text: str) -> None:
        path = self._path(scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the file, then rename: readers see the old or the new text, never half.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def describe(self, scope: SettingsScope) -> str:
        return str(self._path(scope))


class InMemorySettingsStorage:
    """Settings documents held in memory (pi's ``InMemorySettingsStorage``)."""

    def __init__(self, global_text: str | None = None, project_text: str | None = None) -> None:
        self.documents: dict[SettingsScope, str | None] = {
            "global": global_text,
            "project": project_text,
        }

    def read(self, scope: SettingsScope) -> str | None:
        return self.documents[scope]

    def write(self, scope: SettingsScope, text: str) -> None:
        self.documents[scope] = text

    def describe(self, scope: SettingsScope) -> str:
        return f"<memory:{scope}>"


# --------------------------------------------------------------------------- merging, migration


def deep_merge_settings(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``overrides`` over ``base`` as pi does: objects merge one level deep, others replace.

    ``None`` in ``overrides`` (JSON ``null`` kept as undefined) leaves the base value.
    """
    result = dict(base)
    for key, value in overrides.items():
        if value is None:
            continue
        current = base.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            result[key] = {**current, **value}
        else:
            result[key] = value
    return result


def migrate_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Rewrite old keys in place as pi's ``migrateSettings`` does, and return ``settings``."""
    if "queueMode" in settings and "steeringMode" not in settings:
        settings["steeringMode"] = settings.pop("queueMode")
    if "transport" not in settings and isinstance(settings.get("websockets"), bool):
        settings["transport"] = "websocket" if settings.pop("websockets") else "sse"
    skills = settings.get("skills")
    if isinstance(skills, dict):
        if "enableSkillCommands" in skills and "enableSkillCommands" not in settings:
            settings["enableSkillCommands"] = skills["enableSkillCommands"]
        directories = skills.get("customDirectories")
        if isinstance(directories, list) and directories:
            settings["skills"] = directories
        else:
            del settings["skills"]
    retry = settings.get("retry")
    if isinstance(retry, dict):
        provider = retry.get("provider") if isinstance(retry.get("provider"), dict) else None
        legacy = retry.get("maxDelayMs")
        if (
            isinstance(legacy, int | float)
            and not isinstance(legacy, bool)
            and (provider is None or provider.get("maxRetryDelayMs") is None)
        ):
            retry["provider"] = {**(provider or {}), "maxRetryDelayMs": legacy}
        retry.pop("maxDelayMs", None)
    return settings


def _parse(text: str, where: str, scope: SettingsScope) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SettingsFileError(where, scope, f"not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise SettingsFileError(where, scope, f"expected a JSON object, got {type(data).__name__}")
    return migrate_settings(data)


def _dump(settings: Mapping[str, Any]) -> str:
    return orjson.dumps(settings, option=orjson.OPT_INDENT_2).decode()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bool(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _optional_number(value: Any) -> int | None:
    # JSON true is an int to Python; a boolean is never accepted where a number is expected.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _number(value: Any, default: int) -> int:
    found = _optional_number(value)
    return default if found is None else found


def _section(settings: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = settings.get(key)
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- the manager


class SettingsManager:
    """The merged global + project settings, with typed getters and persisting setters.

    Create with :meth:`create` (files), :meth:`in_memory` (tests, embedding) or
    :meth:`from_storage`. Getters read the merged view; setters change the global scope,
    update the merged view and write the global document at once (keys changed by this
    process only, merged into the document as it is on disk).

    Error handling:
        A document that cannot be parsed counts as ``{}``; the :class:`SettingsFileError` is
        kept for :meth:`drain_errors` (or raised with ``strict=True``), and that scope is never
        written, so the broken file stays as the user left it. Errors while writing are
        recorded the same way and do not interrupt the caller.
    """

    def __init__(
        self,
        storage: SettingsStorage,
        global_settings: dict[str, Any],
        project_settings: dict[str, Any],
        errors: list[SettingsFileError] | None = None,
    ) -> None:
        self._storage = storage
        self._global = global_settings
        self._project = project_settings
        self._errors: list[SettingsError] = list(errors or ())
        self._unwritable: set[SettingsScope] = {e.scope for e in errors or ()}
        self._modified: dict[str, set[str] | None] = {}
        self._overrides: dict[str, Any] = {}
        self._save_lock = trio.Lock()  # one asynchronous save at a time
        self._merged = self._merge()

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        agent_dir: str | os.PathLike[str] | None = None,
        *,
        strict: bool = False,
    ) -> SettingsManager:
        """Load the settings files of ``cwd`` (default: the current directory) and ``agent_dir``.

        Raises:
            SettingsFileError: with ``strict=True``, when a file is not a JSON object.
        """
        storage = FileSettingsStorage(cwd if cwd is not None else Path.cwd(), agent_dir)
        return cls.from_storage(storage, strict=strict)

    @classmethod
    def in_memory(
        cls,
        settings: Mapping[str, Any] | None = None,
        project: Mapping[str, Any] | None = None,
    ) -> SettingsManager:
        """Return a manager that never touches the file system.

        Args:
            settings: the global document (deep-copied).
            project: the project document (deep-copied).
        """
        storage = InMemorySettingsStorage(
            _dump(migrate_settings(copy.deepcopy(dict(settings or {})))),
            _dump(migrate_settings(copy.deepcopy(dict(project)))) if project is not None else None,
        )
        return cls.from_storage(storage, strict=True)

    @classmethod
    def from_storage(cls, storage: SettingsStorage, *, strict: bool = False) -> SettingsManager:
        """Load both scopes from ``storage``.

        Raises:
            SettingsFileError: with ``strict=True``, when a document is not a JSON object.
        """
        errors: list[SettingsFileError] = []
        loaded: dict[SettingsScope, dict[str, Any]] = {}
        for scope in ("global", "project"):
            try:
                loaded[scope] = _load(storage, scope)
            except SettingsFileError as exc:
                if strict:
                    raise
                errors.append(exc)
                loaded[scope] = {}
        manager = cls(storage, loaded["global"], loaded["project"], errors)
        for loaded_scope, document in loaded.items():
            manager._check_types(loaded_scope, document)
        return manager

    def _check_types(self, scope: SettingsScope, document: Mapping[str, Any]) -> None:
        self._errors.extend(check_settings_types(document, self._storage.describe(scope), scope))

    def _merge(self) -> dict[str, Any]:
        merged = deep_merge_settings(self._global, self._project)
        return deep_merge_settings(merged, self._overrides) if self._overrides else merged

    # ------------------------------------------------------------------ documents

    @property
    def storage(self) -> SettingsStorage:
        """Where the documents live."""
        return self._storage

    @property
    def settings(self) -> dict[str, Any]:
        """A deep copy of the merged settings (unknown keys included)."""
        return copy.deepcopy(self._merged)

    @property
    def global_settings(self) -> dict[str, Any]:
        """A deep copy of the global document."""
        return copy.deepcopy(self._global)

    @property
    def project_settings(self) -> dict[str, Any]:
        """A deep copy of the project document."""
        return copy.deepcopy(self._project)

    def get(self, key: str, default: Any = None) -> Any:
        """Return a deep copy of the merged value of a top-level key (any key, known or not)."""
        return copy.deepcopy(self._merged.get(key, default))

    def drain_errors(self) -> list[SettingsError]:
        """Return and forget the errors recorded while loading and saving."""
        errors, self._errors = self._errors, []
        return errors

    def reload(self) -> None:
        """Re-read both documents; a scope that fails to parse keeps its previous value."""
        for scope in ("global", "project"):
            try:
                data = _load(self._storage, scope)
            except SettingsFileError as exc:
                self._errors.append(exc)
                self._unwritable.add(scope)
                continue
            self._unwritable.discard(scope)
            self._check_types(scope, data)
            if scope == "global":
                self._global = data
            else:
                self._project = data
        self._modified.clear()
        self._merged = self._merge()

    def apply_overrides(self, overrides: Mapping[str, Any]) -> None:
        """Merge ``overrides`` over the effective settings for this process (never saved)."""
        self._overrides = deep_merge_settings(self._overrides, copy.deepcopy(dict(overrides)))
        self._merged = self._merge()

    def set_global(self, key: str, value: Any, nested: str | None = None) -> None:
        """Set a global key (or ``key.nested``) and save the global document.

        ``value`` ``None`` removes the key.
        """
        self._change(key, value, nested)
        self._save_global()

    async def aset_global(self, key: str, value: Any, nested: str | None = None) -> None:
        """:meth:`set_global` with the file work in a worker thread (see the module docstring).

        The new value is visible to the getters before this returns control to the caller's
        first checkpoint; a cancelled caller still gets its save finished.
        """
        self._change(key, value, nested)
        await self._asave_global()

    def change_global(self, key: str, value: Any, nested: str | None = None) -> None:
        """Change a global key in memory only; the next save (``aset_*``) writes it.

        For synchronous callers in a Trio program (the AgentSession's setters): the value is
        visible at once, and the session's actor saves it off the event loop.
        """
        self._change(key, value, nested)

    def _change(self, key: str, value: Any, nested: str | None) -> None:
        if nested is None:
            if value is None:
                self._global.pop(key, None)
            else:
                self._global[key] = copy.deepcopy(value)
            self._modified[key] = None
        else:
            section = self._global.get(key)
            if not isinstance(section, dict):
                section = {}
                self._global[key] = section
            if value is None:
                section.pop(nested, None)
            else:
                section[nested] = copy.deepcopy(value)
            if key not in self._modified:
                self._modified[key] = {nested}
            elif (fields := self._modified[key]) is not None:  # None: the whole key is marked
                fields.add(nested)
        self._merged = self._merge()

    def _pending(self) -> tuple[dict[str, set[str] | None], dict[str, Any]] | None:
        """What a save must write, copied so that a worker thread can use it alone."""
        if "global" in self._unwritable:
            return None  # never overwrite a file we could not parse
        modified = {k: None if v is None else set(v) for k, v in self._modified.items()}
        values = {key: copy.deepcopy(self._global.get(key)) for key in modified}
        return modified, values

    def _saved(self, modified: Mapping[str, set[str] | None], outcome: _SaveOutcome) -> None:
        """Record the outcome of a save of ``modified`` (in the caller's thread)."""
        if outcome.error is not None:
            self._errors.append(outcome.error)
            if outcome.unreadable:
                self._unwritable.add("global")
            return
        for key, nested in modified.items():
            # A key changed again while the save ran stays marked for the next save.
            if key in self._modified and self._modified[key] == nested:
                del self._modified[key]

    def _save_global(self) -> None:
        pending = self._pending()
        if pending is not None:
            self._saved(pending[0], _write_global(self._storage, *pending))

    async def _asave_global(self) -> None:
        async with self._save_lock:
            pending = self._pending()
            if pending is not None:
                error = await run_file_work(_write_global, self._storage, *pending)
                self._saved(pending[0], error)

    # ------------------------------------------------------------------ typed getters

    @property
    def default_provider(self) -> str | None:
        """``defaultProvider``."""
        return _str(self._merged.get("defaultProvider"))

    @property
    def default_model(self) -> str | None:
        """``defaultModel``."""
        return _str(self._merged.get("defaultModel"))

    @property
    def default_thinking_level(self) -> str | None:
        """``defaultThinkingLevel`` (``None`` when unset)."""
        return _str(self._merged.get("defaultThinkingLevel"))

    @property
    def steering_mode(self) -> QueueMode:
        """``steeringMode`` (default ``"one-at-a-time"``)."""
        return "all" if self._merged.get("steeringMode") == "all" else DEFAULT_QUEUE_MODE

    @property
    def follow_up_mode(self) -> QueueMode:
        """``followUpMode`` (default ``"one-at-a-time"``)."""
        return "all" if self._merged.get("followUpMode") == "all" else DEFAULT_QUEUE_MODE

    @property
    def session_dir(self) -> str | None:
        """``sessionDir`` with a leading ``~`` expanded."""
        value = _str(self._merged.get("sessionDir"))
        if value == "~" or (value and value.startswith("~/")):
            return str(Path.home()) + value[1:]
        return value

    @property
    def stream_stall_timeout_ms(self) -> int | None:
        """``streamStallTimeoutMs``: how long a response may send nothing before it fails.

        ``None`` (unset) leaves the provider's default (generous: minutes); ``0`` turns the
        check off. pitrio's own setting: pi has no stall timeout.
        """
        return _optional_number(self._merged.get("streamStallTimeoutMs"))

    @property
    def replay_ring_size(self) -> int:
        """``replayRingSize``: how many recent events a session keeps so that a client can
        resume from its cursor (default :data:`~pitrio.channels.REPLAY_RING`). pitrio's own
        setting: pi has no replay."""
        value = _optional_number(self._merged.get("replayRingSize"))
        return REPLAY_RING if value is None or value < 0 else int(value)

    def compaction_settings(self) -> CompactionSettings:
        """``compaction.*`` with pi's defaults."""
        section = _section(self._merged, "compaction")
        return CompactionSettings(
            enabled=_bool(section.get("enabled"), DEFAULT_COMPACTION_ENABLED),
            reserve_tokens=_number(section.get("reserveTokens"), DEFAULT_RESERVE_TOKENS),
            keep_recent_tokens=_number(section.get("keepRecentTokens"), DEFAULT_KEEP_RECENT_TOKENS),
        )

    def retry_settings(self) -> RetrySettings:
        """``retry.*`` with pi's defaults."""
        section = _section(self._merged, "retry")
        return RetrySettings(
            enabled=_bool(section.get("enabled"), DEFAULT_RETRY_ENABLED),
            max_retries=_number(section.get("maxRetries"), DEFAULT_MAX_RETRIES),
            base_delay_ms=_number(section.get("baseDelayMs"), DEFAULT_BASE_DELAY_MS),
            max_delay_ms=self.provider_retry_settings().max_retry_delay_ms,
        )

    def provider_retry_settings(self) -> ProviderRetrySettings:
        """``retry.provider.*`` with pi's defaults."""
        section = _section(_section(self._merged, "retry"), "provider")
        return ProviderRetrySettings(
            timeout_ms=_optional_number(section.get("timeoutMs")),
            max_retries=_optional_number(section.get("maxRetries")),
            max_retry_delay_ms=_number(section.get("maxRetryDelayMs"), DEFAULT_MAX_RETRY_DELAY_MS),
        )

    def branch_summary_settings(self) -> BranchSummarySettings:
        """``branchSummary.*`` with pi's defaults."""
        section = _section(self._merged, "branchSummary")
        return BranchSummarySettings(
            reserve_tokens=_number(section.get("reserveTokens"), DEFAULT_RESERVE_TOKENS),
            skip_prompt=_bool(section.get("skipPrompt"), False),
        )

    # ------------------------------------------------------------------ setters (global scope)

    def set_default_model_and_provider(self, provider: str, model_id: str) -> None:
        """Remember ``provider``/``model_id`` as the default model."""
        self._global["defaultProvider"] = provider
        self._modified["defaultProvider"] = None
        self.set_global("defaultModel", model_id)

    def set_default_thinking_level(self, level: str) -> None:
        """Remember ``level`` as the default thinking level."""
        self.set_global("defaultThinkingLevel", level)

    def set_steering_mode(self, mode: QueueMode) -> None:
        """Remember the steering queue mode."""
        self.set_global("steeringMode", mode)

    def set_follow_up_mode(self, mode: QueueMode) -> None:
        """Remember the follow-up queue mode."""
        self.set_global("followUpMode", mode)

    def set_compaction_enabled(self, enabled: bool) -> None:
        """Turn auto-compaction on or off."""
        self.set_global("compaction", enabled, nested="enabled")

    def set_retry_enabled(self, enabled: bool) -> None:
        """Turn auto-retry on or off."""
        self.set_global("retry", enabled, nested="enabled")

    # ------------------------------------------------------------------ async twins (in Trio)

    async def aset_default_model_and_provider(self, provider: str, model_id: str) -> None:
        """:meth:`set_default_model_and_provider`, saved in a worker thread."""
        self._global["defaultProvider"] = provider
        self._modified["defaultProvider"] = None
        await self.aset_global("defaultModel", model_id)

    async def aset_default_thinking_level(self, level: str) -> None:
        """:meth:`set_default_thinking_level`, saved in a worker thread."""
        await self.aset_global("defaultThinkingLevel", level)

    async def aset_steering_mode(self, mode: QueueMode) -> None:
        """:meth:`set_steering_mode`, saved in a worker thread."""
        await self.aset_global("steeringMode", mode)

    async def aset_follow_up_mode(self, mode: QueueMode) -> None:
        """:meth:`set_follow_up_mode`, saved in a worker thread."""
        await self.aset_global("followUpMode", mode)

    async def aset_compaction_enabled(self, enabled: bool) -> None:
        """:meth:`set_compaction_enabled`, saved in a worker thread."""
        await self.aset_global("compaction", enabled, nested="enabled")

    async def aset_retry_enabled(self, enabled: bool) -> None:
        """:meth:`set_retry_enabled`, saved in a worker thread."""
        await self.aset_global("retry", enabled, nested="enabled")


@attrs.frozen
class _SaveOutcome:
    error: SettingsFileError | None = None
    unreadable: bool = False
    """The file on disk could not be parsed: never write it."""


def _write_global(
    storage: SettingsStorage,
    modified: Mapping[str, set[str] | None],
    values: Mapping[str, Any],
) -> _SaveOutcome:
    """Merge the ``modified`` keys (their new ``values``) into the global document on disk.

    Pure file work on its arguments, so it may run in a worker thread.
    """
    try:
        current = _load(storage, "global")
    except SettingsFileError as exc:
        return _SaveOutcome(exc, unreadable=True)
    merged = dict(current)
    for key, nested in modified.items():
        value = values.get(key)
        if nested is not None and isinstance(value, dict):
            base = current.get(key)
            section = dict(base) if isinstance(base, dict) else {}
            for name in nested:
                if name in value:
                    section[name] = value[name]
                else:
                    section.pop(name, None)
            merged[key] = section
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    try:
        storage.write("global", _dump(merged))
    except OSError as exc:
        where = storage.describe("global")
        return _SaveOutcome(SettingsFileError(where, "global", f"could not write: {exc}"))
    return _SaveOutcome()


def _load(storage: SettingsStorage, scope: SettingsScope) -> dict[str, Any]:
    where = storage.describe(scope)
    try:
        text = storage.read(scope)
    except OSError as exc:
        raise SettingsFileError(where, scope, f"could not read: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SettingsFileError(where, scope, f"not UTF-8 text ({exc})") from exc
    return {} if text is None else _parse(text, where, scope)
