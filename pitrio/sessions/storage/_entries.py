"""The session file's records: header, the nine entry types, and the coding agent's messages.

Kept in one module: the file format's record types, one table of wire classes that
the codec registers together.

A session file is JSONL: a :class:`SessionHeader` line, then one :data:`SessionEntry` per line
(seed 002 s.7.3-7.4, Appendix B). Entries form a tree through ``id``/``parentId``. Every class
here is a :func:`~pitrio.codec.wire` type, so the codec writes exactly pi's JSON; an entry of a
``type`` this version does not know decodes to :class:`UnknownEntry`, which keeps its JSON
verbatim and is written back unchanged.

The message kinds pi-coding-agent adds to ``AgentMessage`` (``bashExecution``, ``custom``,
``branchSummary``, ``compactionSummary``; seed 002 Appendix A.2) are defined here too
(:data:`SESSION_MESSAGE_TYPES`); the sessions codec (:mod:`pitrio.sessions.storage._codec`) decodes
them wherever an ``AgentMessage`` is expected, so a transcript holding them round-trips. Their
conversion for the LLM lives with the rest of the message handling.

Attribute order follows the order in which pi builds each object, so a file written by pitrio
reads like one written by pi (optional fields that are set come last, as the codec writes them).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio._exceptions import PitrioError
from pitrio.actors import AgentMessage, ExtensionMessage
from pitrio.codec import extra_field, wire
from pitrio.providers import ImageContent, TextContent, UserContentBlock
from pitrio.sessions.storage._context_ops import ContextPatchOp, ContextTransformDisplay

CURRENT_SESSION_VERSION: Final = 3
"""The session file format version pitrio writes (pi 0.73.1's ``CURRENT_SESSION_VERSION``)."""

EntryType: TypeAlias = Literal[
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_transform",
    "ephemeral",
]
"""The ``type`` of each entry kind this version knows."""


# --------------------------------------------------------------------------- errors


class SessionError(PitrioError):
    """Root of the session layer's errors."""


class SessionFileCorrupt(SessionError, ValueError):
    """A session file line that cannot be read (not JSON, or not the shape of its entry type).

    A torn *last* line is not an error (a crash can leave one); it is skipped and reported in
    the manager's ``load_problems``.

    Attributes:
        path: the file.
        line_no: the 1-based line number.
        reason: what is wrong with the line.
    """

    def __init__(self, path: str, line_no: int, reason: str) -> None:
        super().__init__(f"{path}:{line_no}: {reason}")
        self.path = path
        self.line_no = line_no
        self.reason = reason


class SessionEntryNotFound(SessionError, LookupError):
    """An operation named an entry id the session does not hold.

    Attributes:
        entry_id: the id that was not found.
    """

    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id


class SessionWriteError(SessionError, OSError):
    """Writing a session file failed (disk full, permissions ...).

    Attributes:
        path: the file that could not be written.
    """

    def __init__(self, path: str, cause: OSError) -> None:
        super().__init__(cause.errno, f"cannot write session file {path}: {cause.strerror}")
        self.path = path


class SessionLocked(SessionError):
    """Another writer holds the session file: one process (one writer) per file at a time.

    Attributes:
        path: the session file.
        pid: the process holding the lock, where the system tells (Linux ``/proc/locks``),
            else ``None``. It may be this very process (a second manager on the same file).
    """

    def __init__(self, path: str, pid: int | None) -> None:
        if pid is None:
            holder = "another process"
        elif pid == os.getpid():
            holder = f"another session of this process (pid {pid})"
        else:
            holder = f"another process (pid {pid})"
        super().__init__(
            f"Session file {path} is in use by {holder}; "
            "only one process may write a session at a time"
        )
        self.path = path
        self.pid = pid


class SessionFileChanged(SessionError):
    """The session file changed on disk after it was read (another process wrote to it).

    Appending to it would graft this process's entries onto a tree it has not seen, so the
    writer refuses; reopen the file to continue from what is on disk.

    Attributes:
        path: the session file.
        expected_size: its size (bytes) when this process read or last wrote it.
        actual_size: its size now (``None``: it no longer exists).
    """

    def __init__(self, path: str, expected_size: int, actual_size: int | None) -> None:
        now = "it was removed" if actual_size is None else f"it now has {actual_size} bytes"
        super().__init__(
            f"Session file {path} was changed by another process since it was read "
            f"({expected_size} bytes then, {now}); reopen it to continue"
        )
        self.path = path
        self.expected_size = expected_size
        self.actual_size = actual_size


# --------------------------------------------------------------------------- timestamps and ids


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)


def iso_timestamp(ms: int) -> str:
    """Format epoch milliseconds as JavaScript's ``Date.prototype.toISOString`` does."""
    seconds, millis = divmod(ms, 1000)
    t = time.gmtime(seconds)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{millis:03d}Z"
    )


def timestamp_ms(iso: str) -> int:
    """Parse an ISO 8601 timestamp to epoch milliseconds (JavaScript's ``Date.parse``).

    A timestamp without an offset is read as UTC. Text that is not a timestamp gives 0 (where
    JavaScript would produce ``NaN``, which pi writes as ``null``; a number field cannot hold it).
    """
    try:
        parsed = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) // _ONE_MS


def random_entry_id() -> str:
    """Eight random hex digits (pi: the first 8 characters of a random UUID)."""
    return os.urandom(4).hex()


def uuid7() -> str:
    """A time-ordered UUID version 7 (RFC 9562), as pi uses for session ids."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


MAX_ID_ATTEMPTS: Final = 100
"""Random ids tried before giving up on a short one (pi's ``generateId``)."""


def generate_id(taken: Mapping[str, Any] | set[str], new_id: Callable[[], str]) -> str:
    """Return an id from ``new_id`` that is not in ``taken``; a full UUID if 100 tries collide."""
    for _ in range(MAX_ID_ATTEMPTS):
        candidate = new_id()
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


# --------------------------------------------------------------------------- coding-agent messages


def _content(
    content: str | Iterable[TextContent | ImageContent],
) -> str | tuple[UserContentBlock, ...]:
    if isinstance(content, str | tuple):
        return content
    return tuple(content)


@wire
@attrs.frozen(kw_only=True)
class BashExecutionMessage(ExtensionMessage):
    """A command the user ran with ``!`` / ``!!`` and its output (role ``bashExecution``)."""

    role: Literal["bashExecution"] = attrs.field(default="bashExecution", init=False)
    command: str
    output: str
    exit_code: int | None = None
    """``None`` when the command was cancelled or the exit code is unknown."""
    cancelled: bool
    truncated: bool
    full_output_path: str | None = None
    timestamp: int
    exclude_from_context: bool | None = None
    """True for ``!!`` commands: kept in the session, never sent to the model."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CustomMessage(ExtensionMessage):
    """A message an extension injected into the context (role ``custom``)."""

    role: Literal["custom"] = attrs.field(default="custom", init=False)
    custom_type: str
    content: str | tuple[UserContentBlock, ...] = attrs.field(converter=_content)
    display: bool
    details: Any = None
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class BranchSummaryMessage(ExtensionMessage):
    """The summary of a branch the conversation came back from (role ``branchSummary``)."""

    role: Literal["branchSummary"] = attrs.field(default="branchSummary", init=False)
    summary: str
    from_id: str
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CompactionSummaryMessage(ExtensionMessage):
    """The summary that replaces compacted history (role ``compactionSummary``)."""

    role: Literal["compactionSummary"] = attrs.field(default="compactionSummary", init=False)
    summary: str
    tokens_before: int
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ContextTransformMessage(ExtensionMessage):
    """A transcript-only note that a context transform was applied (role ``contextTransform``,
    seed 001's ``display.showInChat``); never sent to the model, never part of the envelope."""

    role: Literal["contextTransform"] = attrs.field(default="contextTransform", init=False)
    transformer_name: str | None = None
    title: str
    summary: str | None = None
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


SESSION_MESSAGE_TYPES: Final[Mapping[str, type]] = {
    "contextTransform": ContextTransformMessage,
    "bashExecution": BashExecutionMessage,
    "custom": CustomMessage,
    "branchSummary": BranchSummaryMessage,
    "compactionSummary": CompactionSummaryMessage,
}
"""Role -> class of the message kinds the coding agent adds to ``AgentMessage``."""


def create_branch_summary_message(
    summary: str, from_id: str, timestamp: str
) -> BranchSummaryMessage:
    """The context message of a ``branch_summary`` entry (``timestamp`` is the entry's ISO time)."""
    return BranchSummaryMessage(summary=summary, from_id=from_id, timestamp=timestamp_ms(timestamp))


def create_compaction_summary_message(
    summary: str, tokens_before: int, timestamp: str
) -> CompactionSummaryMessage:
    """The context message of a ``compaction`` entry (``timestamp`` is the entry's ISO time)."""
    return CompactionSummaryMessage(
        summary=summary, tokens_before=tokens_before, timestamp=timestamp_ms(timestamp)
    )


def create_custom_message(
    custom_type: str,
    content: str | Iterable[TextContent | ImageContent],
    display: bool,
    details: Any,
    timestamp: str,
) -> CustomMessage:
    """The context message of a ``custom_message`` entry (``timestamp`` is the entry's ISO time)."""
    return CustomMessage(
        custom_type=custom_type,
        content=content,
        display=display,
        details=details,
        timestamp=timestamp_ms(timestamp),
    )


# --------------------------------------------------------------------------- header and entries


@wire
@attrs.frozen(kw_only=True)
class SessionHeader:
    """The first line of a session file; not part of the entry tree."""

    type: Literal["session"] = attrs.field(default="session", init=False)
    version: int = CURRENT_SESSION_VERSION
    id: str
    """The session id (a UUID; pi uses version 7)."""
    timestamp: str
    """Creation time, ISO 8601."""
    cwd: str
    """The working directory the session belongs to."""
    parent_session: str | None = None
    """Path of the session file this one was forked or branched from."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionMessageEntry:
    """A message of the conversation (user, assistant, tool result or an extension kind)."""

    # The loader decodes a line to these fields without the object (pitrio._wire_fast.FIELDS).
    __wire_fields__ = True

    type: Literal["message"] = attrs.field(default="message", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    message: AgentMessage
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingLevelChangeEntry:
    """The thinking level was changed."""

    type: Literal["thinking_level_change"] = attrs.field(
        default="thinking_level_change", init=False
    )
    id: str
    parent_id: str | None
    timestamp: str
    thinking_level: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ModelChangeEntry:
    """The model was switched."""

    type: Literal["model_change"] = attrs.field(default="model_change", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    provider: str
    model_id: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CompactionEntry:
    """Earlier history was summarised; the context keeps entries from ``first_kept_entry_id``."""

    type: Literal["compaction"] = attrs.field(default="compaction", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    """Implementation data (pi's default: ``readFiles`` / ``modifiedFiles``)."""
    from_hook: bool | None = None
    """True when an extension produced the compaction."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class BranchSummaryEntry:
    """A summary of the branch that was left, placed where the conversation continues."""

    type: Literal["branch_summary"] = attrs.field(default="branch_summary", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    from_id: str
    """The entry the branch was left from (``"root"`` for a branch from before the first entry)."""
    summary: str
    details: Any = None
    from_hook: bool | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CustomEntry:
    """Extension state kept in the session; never part of the LLM context."""

    type: Literal["custom"] = attrs.field(default="custom", init=False)
    custom_type: str
    data: Any = None
    id: str
    parent_id: str | None
    timestamp: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class CustomMessageEntry:
    """A message an extension injected; part of the LLM context as a ``custom`` message."""

    type: Literal["custom_message"] = attrs.field(default="custom_message", init=False)
    custom_type: str
    content: str | tuple[UserContentBlock, ...] = attrs.field(converter=_content)
    display: bool
    details: Any = None
    id: str
    parent_id: str | None
    timestamp: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class LabelEntry:
    """Sets (or, with an empty or missing ``label``, clears) a bookmark on ``target_id``."""

    type: Literal["label"] = attrs.field(default="label", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    label: str | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class SessionInfoEntry:
    """Session metadata: the display name (an empty name clears it)."""

    type: Literal["session_info"] = attrs.field(default="session_info", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    name: str | None = None
    extra: dict[str, Any] | None = extra_field()


def _ops(items: Iterable[ContextPatchOp]) -> tuple[ContextPatchOp, ...]:
    return items if isinstance(items, tuple) else tuple(items)


@wire
@attrs.frozen(kw_only=True)
class ContextTransformEntry:
    """A persisted context patch (seed 001): replayed in order when the envelope is rebuilt."""

    type: Literal["context_transform"] = attrs.field(default="context_transform", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    reason: str
    """``before_request`` or ``turn_end``."""
    patch: tuple[ContextPatchOp, ...] = attrs.field(converter=_ops)
    transformer_name: str | None = None
    display: ContextTransformDisplay | None = None
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class EphemeralEntry:
    """A request-only context patch, logged for inspection and never replayed (seed 001)."""

    type: Literal["ephemeral"] = attrs.field(default="ephemeral", init=False)
    id: str
    parent_id: str | None
    timestamp: str
    patch: tuple[ContextPatchOp, ...] = attrs.field(converter=_ops)
    transformer_name: str | None = None
    extra: dict[str, Any] | None = extra_field()


@attrs.frozen
class UnknownEntry:
    """An entry of a type this version does not know, kept as its JSON and written back as is.

    It takes part in the tree like any entry (pi does not check entry types either).
    """

    data: Mapping[str, Any]

    @property
    def type(self) -> str:
        """The entry's ``type`` as written."""
        value = self.data.get("type")
        return value if isinstance(value, str) else ""

    @property
    def id(self) -> str:
        """The entry's id, or ``""`` when it has none (then it cannot be found by id)."""
        value = self.data.get("id")
        return value if isinstance(value, str) else ""

    @property
    def parent_id(self) -> str | None:
        """The parent id, or ``None``."""
        value = self.data.get("parentId")
        return value if isinstance(value, str) else None

    @property
    def timestamp(self) -> str:
        """The ISO timestamp, or ``""``."""
        value = self.data.get("timestamp")
        return value if isinstance(value, str) else ""


SessionEntry: TypeAlias = (
    SessionMessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | ContextTransformEntry
    | EphemeralEntry
    | UnknownEntry
)
"""One line of the entry tree (everything after the header)."""

FileEntry: TypeAlias = SessionHeader | SessionEntry
"""Any line of a session file."""

ENTRY_TYPES: Final[Mapping[str, type]] = {
    "message": SessionMessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
}
"""Entry ``type`` -> class, for the nine kinds pi 0.73.1 writes."""

CONTEXT_ENTRY_TYPES: Final[Mapping[str, type]] = {
    "context_transform": ContextTransformEntry,
    "ephemeral": EphemeralEntry,
}
"""Entry ``type`` -> class, for seed 001's two entry kinds (pi 0.73.1 skips them on load)."""


def is_assistant_entry(entry: SessionEntry) -> bool:
    """True for a ``message`` entry holding an assistant message (what ends the lazy flush)."""
    return type(entry) is SessionMessageEntry and entry.message.role == "assistant"
