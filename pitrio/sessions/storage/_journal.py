"""What a host keeps next to a session file to survive a crash: the epoch, the answer in flight.

Two small files sit beside ``<name>.jsonl`` (neither ends in ``.jsonl``, so listing sessions,
pi's included, never takes them for sessions):

``<name>.jsonl.epoch``
    The number of the session's latest opening by a host, one line (``3``).
    :func:`next_epoch` reads it, adds one and writes it back atomically, so a reopening's
    epoch is greater than every earlier one's; a missing or unreadable file counts as 0.
    It is a file of its own rather than an entry of the session: an entry per opening would
    grow the file with host bookkeeping and become pi's leaf (pi's loader takes the last entry
    as the leaf), and reopening a session would write to it.

``<name>.jsonl.inflight``
    The journal of the assistant message being streamed: the message's header (the
    :class:`~pitrio.providers.AssistantMessage` wire object without its ``content``) on the
    first line, then one content block per line (text, thinking, tool call with its arguments
    so far). The host rewrites it (a temporary file renamed over it) while the answer streams
    and deletes it once the message ends. It holds at most ``max_bytes``
    (:data:`JOURNAL_MAX_BYTES`): the blocks that fit, the last text or thinking block cut to
    fit, a tool call that does not fit left out. A reader keeps the complete lines of a torn
    file (an operating system crash can leave one; a killed process cannot, the rename being
    atomic).

:func:`recover_interrupted_turn` closes the turn a crash interrupted, before the session is
opened again: a session file whose last entry is a user message or a tool result (the turn
had not answered yet) gets an assistant message with what the journal holds (nothing when
there is no journal, or one older than that entry), ``stopReason`` ``"aborted"`` and
:data:`HOST_STOPPED_MESSAGE`, as pi records an answer that was aborted.

Every function here blocks on the file system: call them with
:func:`~pitrio.sessions.storage._files.run_file_work`.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Final

import attrs
import orjson

from pitrio.providers import (
    AssistantContentBlock,
    AssistantMessage,
    TextContent,
    ThinkingContent,
)
from pitrio.sessions.storage._codec import SESSIONS_CODEC
from pitrio.sessions.storage._entries import (
    CURRENT_SESSION_VERSION,
    SessionMessageEntry,
    generate_id,
    iso_timestamp,
    random_entry_id,
)
from pitrio.sessions.storage._files import (
    FILE_MODE,
    lock_session_file,
    write_all,
    write_file_atomically,
)

__all__ = [
    "EPOCH_SUFFIX",
    "HOST_STOPPED_MESSAGE",
    "JOURNAL_MAX_BYTES",
    "JOURNAL_SUFFIX",
    "delete_journal",
    "encode_journal",
    "epoch_path",
    "journal_path",
    "next_epoch",
    "read_epoch",
    "read_journal",
    "recover_interrupted_turn",
    "write_epoch",
    "write_journal",
]

EPOCH_SUFFIX: Final = ".epoch"
JOURNAL_SUFFIX: Final = ".inflight"
JOURNAL_MAX_BYTES: Final = 256 * 1024
"""The most a journal holds (bytes of its file): a longer answer is recovered cut to this."""
HOST_STOPPED_MESSAGE: Final = "Request was aborted: the host stopped before the answer ended"
"""The ``errorMessage`` of the message that closes an interrupted turn (pi's aborted
requests say ``Request was aborted``)."""
_JOURNAL_VERSION: Final = 1
_CLOSING_ROLES: Final = frozenset({"user", "toolResult"})
"""A session file ending with a message of these roles is waiting for an answer."""


def epoch_path(session_file: str) -> str:
    return session_file + EPOCH_SUFFIX


def journal_path(session_file: str) -> str:
    return session_file + JOURNAL_SUFFIX


# --------------------------------------------------------------------------- epochs


def read_epoch(session_file: str) -> int:
    """The epoch of the session's latest opening; 0 if none was recorded (or it is unreadable)."""
    try:
        with open(epoch_path(session_file), "rb") as file:
            value = int(file.read(32).strip() or b"0")
    except (OSError, ValueError):
        return 0
    return max(value, 0)


def write_epoch(session_file: str, epoch: int) -> None:
    """Record ``epoch`` as the session's latest opening (atomically, synced to disk).

    Raises:
        SessionWriteError: the file could not be written.
    """
    write_file_atomically(epoch_path(session_file), [b"%d\n" % epoch])


def next_epoch(session_file: str) -> int:
    """Record and return the epoch of a new opening: one more than the latest recorded.

    Raises:
        SessionWriteError: the file could not be written.
    """
    epoch = read_epoch(session_file) + 1
    write_epoch(session_file, epoch)
    return epoch


# --------------------------------------------------------------------------- the journal


def _encoded(value: Any) -> bytes:
    return orjson.dumps(SESSIONS_CODEC.to_wire(value)) + b"\n"


def _cut(block: AssistantContentBlock, budget: int) -> bytes | None:
    """``block`` (text or thinking) encoded in at most ``budget`` bytes with its text cut; None
    when nothing of it fits (or it is a tool call, whose arguments cannot be cut)."""
    if isinstance(block, TextContent):
        text = block.text

        def shortened(keep: int) -> AssistantContentBlock:
            return attrs.evolve(block, text=text[:keep])
    elif isinstance(block, ThinkingContent):
        text = block.thinking

        def shortened(keep: int) -> AssistantContentBlock:
            return attrs.evolve(block, thinking=text[:keep])
    else:
        return None
    keep = len(text)
    # Escapes and UTF-8 make a character 1 to 6 bytes: shrink by the overshoot until it fits.
    while keep > 0:
        line = _encoded(shortened(keep))
        if len(line) <= budget:
            return line
        keep = min(keep - 1, keep * budget // len(line))
    return None


def encode_journal(message: AssistantMessage, max_bytes: int = JOURNAL_MAX_BYTES) -> bytes:
    """The journal file's bytes for ``message``: the header line, then the blocks that fit in
    ``max_bytes`` (the header is always written)."""
    header = SESSIONS_CODEC.to_wire(attrs.evolve(message, content=()))
    lines = [orjson.dumps({"v": _JOURNAL_VERSION, "message": header}) + b"\n"]
    budget = max_bytes - len(lines[0])
    for block in message.content:
        line = _encoded(block)
        if len(line) > budget:
            cut = _cut(block, budget)
            if cut is not None:
                lines.append(cut)
            break
        lines.append(line)
        budget -= len(line)
    return b"".join(lines)


def write_journal(
    session_file: str, message: AssistantMessage, max_bytes: int = JOURNAL_MAX_BYTES
) -> int:
    """Replace the session's journal with ``message`` (bounded by ``max_bytes``); return the
    bytes written.

    The new content goes to a temporary file renamed over the journal, so a process killed
    at any moment leaves the previous journal or the new one, whole. Not synced to disk: the
    journal is for a crash of the process (whose written pages the kernel keeps), and a
    sync per interval per streaming session would cost more than it protects.

    Raises:
        OSError: the file could not be written.
    """
    path = journal_path(session_file)
    data = encode_journal(message, max_bytes)
    temp = path + ".tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return len(data)


def delete_journal(session_file: str) -> None:
    """Remove the session's journal (nothing if there is none)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal_path(session_file))


def read_journal(session_file: str) -> AssistantMessage | None:
    """The message the journal holds: its header and every complete block line, up to the
    first line that does not decode (a torn file keeps what it has before the tear); None
    without a journal or with a header that does not decode."""
    try:
        with open(journal_path(session_file), "rb") as file:
            data = file.read()
    except OSError:
        return None
    lines = data.split(b"\n")[:-1]  # what follows the last newline is torn
    if not lines:
        return None
    try:
        record = orjson.loads(lines[0])
        header = {**record["message"], "content": []}
        message = SESSIONS_CODEC.from_wire(AssistantMessage, header)
    except Exception:
        return None
    blocks: list[AssistantContentBlock] = []
    for line in lines[1:]:
        try:
            blocks.append(SESSIONS_CODEC.from_wire(AssistantContentBlock, orjson.loads(line)))
        except Exception:
            break
    return attrs.evolve(message, content=tuple(blocks))


# --------------------------------------------------------------------------- recovery


def _objects(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of the file's lines, in order (lines that do not parse are skipped, as
    pi's loader skips them)."""
    objects = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            parsed = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(parsed, dict):
            objects.append(parsed)
    return objects


def _model_of(entries: list[dict[str, Any]]) -> tuple[str, str, str]:
    """(api, provider, model) of the latest assistant message or model change."""
    for entry in reversed(entries):
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict):
            if message.get("role") == "assistant":
                fields = (message.get("api"), message.get("provider"), message.get("model"))
                if all(isinstance(f, str) for f in fields):
                    return fields  # type: ignore[return-value]
        elif entry.get("type") == "model_change":
            provider, model = entry.get("provider"), entry.get("modelId")
            if isinstance(provider, str) and isinstance(model, str):
                return "", provider, model
    return "", "", ""


def closing_message(
    recovered: AssistantMessage | None, model: tuple[str, str, str], now_ms: int
) -> AssistantMessage:
    """The assistant message that closes an interrupted turn: ``recovered``'s content and
    usage (none without it), ``stopReason`` ``"aborted"``, :data:`HOST_STOPPED_MESSAGE`."""
    if recovered is not None:
        return attrs.evolve(recovered, stop_reason="aborted", error_message=HOST_STOPPED_MESSAGE)
    api, provider, model_id = model
    return AssistantMessage(
        content=(),
        api=api,
        provider=provider,
        model=model_id,
        stop_reason="aborted",
        error_message=HOST_STOPPED_MESSAGE,
        timestamp=now_ms,
    )


def recover_interrupted_turn(
    session_file: str, *, now_ms: int | None = None
) -> AssistantMessage | None:
    """Close the turn a crash left open in ``session_file`` and delete its journal.

    If the file's last entry is a user message or a tool result, append (under the file's
    write lock) an assistant message that answers it: the journal's content when the journal
    is of this turn (its message started at or after that entry), else empty; ``stopReason``
    ``"aborted"``, ``errorMessage`` :data:`HOST_STOPPED_MESSAGE`. Otherwise (the turn ended,
    the file is empty or of an older version, which the loader migrates first) nothing is
    written. The journal is deleted either way.

    Returns:
        The message appended, or None.

    Raises:
        SessionLocked: another writer holds the file.
        SessionFileChanged: the file does not exist.
        OSError: the file could not be read or written.
    """
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    fd = lock_session_file(session_file, create=False)
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
        appended = _close_turn(fd, session_file, data, now)
    finally:
        os.close(fd)
    delete_journal(session_file)
    return appended


def _close_turn(fd: int, session_file: str, data: bytes, now_ms: int) -> AssistantMessage | None:
    entries = _objects(data)
    if len(entries) < 2 or entries[0].get("type") != "session":
        return None
    if entries[0].get("version") != CURRENT_SESSION_VERSION:
        return None
    last = entries[-1]
    message = last.get("message")
    if last.get("type") != "message" or not isinstance(message, dict):
        return None
    if message.get("role") not in _CLOSING_ROLES or not isinstance(last.get("id"), str):
        return None
    recovered = read_journal(session_file)
    waiting_since = message.get("timestamp")
    if (
        recovered is not None
        and isinstance(waiting_since, int)
        and recovered.timestamp < waiting_since
    ):
        recovered = None  # an answer before this entry, whose journal was not deleted yet
    closing = closing_message(recovered, _model_of(entries), now_ms)
    taken = {entry["id"] for entry in entries if isinstance(entry.get("id"), str)}
    entry = SessionMessageEntry(
        id=generate_id(taken, random_entry_id),
        parent_id=last["id"],
        timestamp=iso_timestamp(now_ms),
        message=closing,
    )
    line = SESSIONS_CODEC.dumps(entry) + b"\n"
    if data and not data.endswith(b"\n"):
        line = b"\n" + line  # a torn last line stays a line of its own (the loader skips it)
    write_all(fd, line)
    return closing
