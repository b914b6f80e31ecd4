"""Reading session files: parse every line once, migrate old versions, decode the entries.

A torn last line (a crash during a write) is skipped and reported, but only in a real session
file, one whose first line is a session header; any other line that is not a valid entry raises
:class:`SessionFileCorrupt` with its line number. A file whose first line is not a header (a
user's text file, a binary blob, a header torn by a crash) is not a session file and is
refused, so nothing is ever written to it. A file with no lines at all (empty, or only
whitespace) is a new session, as in pi.

Nothing is modified on disk while loading except the rewrite of a migrated file, which takes
the file's write lock first (see :mod:`._files`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal, cast

import attrs
import orjson
import structlog

from pitrio.codec import WireFormatError, loads
from pitrio.sessions.storage._codec import ENTRY_BUILDERS, SESSIONS_CODEC, decode_entry
from pitrio.sessions.storage._entries import (
    CURRENT_SESSION_VERSION,
    SessionEntry,
    SessionFileCorrupt,
    SessionHeader,
    random_entry_id,
)
from pitrio.sessions.storage._entry_columns import EntryColumns
from pitrio.sessions.storage._files import replace_locked
from pitrio.sessions.storage._migrations import migrate_session_entries, session_version

log = structlog.get_logger("pitrio.sessions.storage._persistence")


@attrs.frozen
class LoadProblem:
    """Something the loader skipped instead of failing (reported, never silent)."""

    path: str
    line_no: int
    """1-based line number."""
    kind: Literal["torn_last_line", "extra_header"]
    """``torn_last_line``: the last line is not complete JSON (a crash during a write);
    ``extra_header``: a second session header (older pi versions wrote one on a re-flush)."""
    detail: str


@attrs.frozen
class FileTail:
    """What the loader saw at the end of the file, so a writer can append cleanly."""

    size: int
    """File size when it was read."""
    good_size: int
    """Bytes up to the end of the last complete line (``< size`` after a torn last line)."""


def _as_columns(entries: EntryColumns | list[SessionEntry]) -> EntryColumns:
    return entries if isinstance(entries, EntryColumns) else EntryColumns(entries)


@attrs.frozen
class LoadedSession:
    """A parsed, migrated, decoded session file.

    The entries are held as :class:`EntryColumns` (message entries built when first asked
    for); :attr:`entries` builds them all.
    """

    path: str
    header: SessionHeader | None
    """``None`` when the file holds no lines at all."""
    columns: EntryColumns = attrs.field(converter=_as_columns, alias="entries")
    """The entries in file order (a list of entries given to the constructor is converted)."""
    problems: tuple[LoadProblem, ...]
    migrated: bool
    """True when the file was an older version (and, if asked, has been rewritten)."""
    tail: FileTail | None
    """The end of the file as read (``None`` when it was not read from disk)."""

    @property
    def entries(self) -> list[SessionEntry]:
        """Every entry in file order, built."""
        return self.columns.all()


_NOT_A_SESSION = "not a session file: the first line is not a session header"


class _Lines:
    """The parsed lines of a file, one at a time; notes a torn last line as it meets it.

    Iterating lazily lets the loader decode each line and drop its JSON object at once: a
    long session then never holds every parsed dict alongside every decoded entry, which
    would make the cyclic garbage collector rescan hundreds of thousands of live objects.
    """

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.problems: list[LoadProblem] = []
        self.good_size = len(data)
        self.lines = data.split(b"\n")
        last = len(self.lines) - 1
        while last >= 0 and (not self.lines[last] or self.lines[last].isspace()):
            last -= 1
        self.last = last
        """Index of the last line that is not blank."""
        self.next = 0
        """Index of the first line not read yet."""

    def header(self) -> tuple[int, Any]:
        """The first line that is not blank, parsed: ``(line number, object)``, or ``(0,
        None)`` for a file without lines.

        Raises:
            SessionFileCorrupt: it is not a session header.
        """
        lines = self.lines
        for index in range(self.last + 1):
            line = lines[index]
            if not line or line.isspace():
                continue
            self.next = index + 1
            try:
                obj = loads(line)
            except ValueError as exc:
                # No header before it: a foreign file, or a header torn by a crash. Either
                # way nothing here may be overwritten.
                raise SessionFileCorrupt(self.path, index + 1, f"{_NOT_A_SESSION} ({exc})") from exc
            if not isinstance(obj, dict):
                raise SessionFileCorrupt(
                    self.path, index + 1, f"{_NOT_A_SESSION}, got {line[:80]!r}"
                )
            if obj.get("type") != "session" or not isinstance(obj.get("id"), str):
                raise SessionFileCorrupt(self.path, index + 1, _NOT_A_SESSION)
            return index + 1, obj
        self.next = len(lines)
        return 0, None

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        """The lines after the header: ``(line number, object)``."""
        for index in range(self.next, self.last + 1):
            obj = self.parse(index)
            if obj is not None:
                yield index + 1, obj

    def parse(self, index: int) -> dict[str, Any] | None:
        """Line ``index`` (after the header) parsed; ``None`` for a blank line or a torn last
        line (noted in ``problems``).

        Raises:
            SessionFileCorrupt: the line is not JSON (and not the last), or not an object.
        """
        line = self.lines[index]
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if not line or line.isspace():
                return None
            try:
                obj = loads(line)  # JSON from JavaScript may escape a lone surrogate
            except ValueError as exc:
                if index == self.last:
                    self.good_size = sum(len(before) + 1 for before in self.lines[:index])
                    detail = f"torn last line skipped ({len(line)} bytes): {exc}"
                    self.problems.append(
                        LoadProblem(self.path, index + 1, "torn_last_line", detail)
                    )
                    return None
                raise SessionFileCorrupt(self.path, index + 1, f"not valid JSON: {exc}") from exc
        if type(obj) is not dict:
            raise SessionFileCorrupt(
                self.path, index + 1, f"expected a JSON object, got {line[:80]!r}"
            )
        return cast(dict[str, Any], obj)


def load_session_file(
    path: str,
    *,
    new_id: Callable[[], str] = random_entry_id,
    rewrite_migrated: bool = True,
) -> LoadedSession:
    """Read a session file: parse, migrate to the current version, decode.

    Blocking file work: from Trio, call it through
    :func:`~pitrio.sessions.run_file_work`.

    Args:
        path: the file (must exist).
        new_id: source of the ids the v1 -> v2 migration assigns.
        rewrite_migrated: after migrating an older file, write it back in the current version
            (atomically, holding the file's write lock). ``False`` leaves the file untouched
            (forking from it, listing).

    Returns:
        The header (``None`` for a file without lines), the entries in file order, and what
        was skipped. A torn last line is logged as a warning and listed in ``problems``.

    Raises:
        SessionFileCorrupt: the first line is not a session header (a foreign or damaged
            file), a line other than the last is not JSON, a line is not a JSON object, or a
            line does not have the shape of its entry type.
        SessionLocked: a migrated file is written by another process (not rewritten).
        SessionFileChanged: a migrated file changed while it was read (not rewritten).
        OSError: the file cannot be read.
    """
    with open(path, "rb") as file:
        data = file.read()
    return _load(path, data, new_id, rewrite_migrated)


def _load(
    path: str, data: bytes, new_id: Callable[[], str], rewrite_migrated: bool
) -> LoadedSession:
    lines = _Lines(path, data)
    first_line, first = lines.header()
    if first is None:
        return LoadedSession(path, None, EntryColumns(), (), False, FileTail(len(data), len(data)))
    migrated = session_version([first]) < CURRENT_SESSION_VERSION
    raws: list[Any] | None = None
    if migrated:
        # Old files are rare and small: migrate them whole, as the migrations expect.
        rest = list(lines)
        raws = [first, *(obj for _, obj in rest)]
        migrate_session_entries(raws, new_id)
    try:
        header = SESSIONS_CODEC.from_wire(SessionHeader, first)
    except WireFormatError as exc:
        raise SessionFileCorrupt(path, first_line, str(exc)) from exc

    problems = lines.problems
    if raws is None:
        entries = _decode_lines(lines)
    else:
        entries = EntryColumns()
        for line_no, obj in rest:
            entry = _decode(path, line_no, obj, problems)
            if entry is not None:
                entries.add(entry)
    for problem in problems:
        if problem.kind == "torn_last_line":
            log.warning(
                "session_line_skipped", path=path, line_no=problem.line_no, detail=problem.detail
            )
    tail = FileTail(size=len(data), good_size=lines.good_size)
    # Rewritten only once every line decoded: a damaged file stays as it was.
    if raws is not None and rewrite_migrated:
        size = replace_locked(
            path, [SESSIONS_CODEC.dumps(obj) + b"\n" for obj in raws], expected_size=len(data)
        )
        tail = FileTail(size=size, good_size=size)
        log.info("session_file_migrated", path=path)
    problems.sort(key=lambda problem: problem.line_no)
    return LoadedSession(path, header, entries, tuple(problems), migrated, tail)


def _decode_lines(lines: _Lines) -> EntryColumns:
    """Parse and decode the lines after the header, each line's JSON dropped once decoded.

    The loop of a session load (every line of a long session goes through it): the common
    line, a JSON object that decodes, takes no call beyond parsing and decoding it. A message
    entry is kept as its parts (see :class:`EntryColumns`): its wrapper, decoded with the rest
    of the line, is freed at once, so it never counts toward the collector's next full pass.
    """
    columns = EntryColumns()
    add_entry = columns.entries.append
    add_id = columns.ids.append
    add_parent = columns.parents.append
    add_time = columns.times.append
    add_message = columns.messages.append
    source = lines.lines
    parse = orjson.loads
    # The entry class's generated decoder, straight from the tag (decode_entry's fast path
    # without its call), or decode_entry where there is none (an unknown tag, or the
    # accelerators off): a line that does not decode takes the careful path below, which
    # decodes it again through decode_entry and reports what fails.
    builders = ENTRY_BUILDERS
    # A message line without unknown keys: the same generated checks, giving the entry's
    # fields without building it (pitrio._wire_fast.FIELDS); one with unknown keys gives up
    # and takes the careful path, which builds the entry with them.
    message_fields = getattr(builders.get("message"), "fields", None)
    unbuilt = 0
    for index in range(lines.next, lines.last + 1):
        try:
            obj = parse(source[index])
            if type(obj) is dict:
                tag = obj.get("type")
                if tag == "message" and message_fields is not None:
                    entry_id, parent_id, timestamp, message = message_fields(obj)
                    add_entry(None)
                    unbuilt += 1
                    add_id(entry_id)
                    add_parent(parent_id)
                    add_time(timestamp)
                    add_message(message)
                    continue
                if tag != "session":
                    decode: Callable[[Any], Any] = builders.get(tag, decode_entry)
                    decoded = decode(obj)
                    add_id(decoded.id)
                    add_parent(decoded.parent_id)
                    add_entry(decoded)
                    add_time(None)
                    add_message(None)
                    continue
        except Exception:
            pass
        # Anything else (a blank, torn, damaged or foreign line, a second header, an entry
        # that does not decode) is sorted out, or reported, line by line.
        obj = lines.parse(index)
        if obj is not None:
            entry = _decode(lines.path, index + 1, obj, lines.problems)
            if entry is not None:
                columns.add(entry)
    columns.unbuilt += unbuilt
    return columns


def _decode(
    path: str, line_no: int, obj: dict[str, Any], problems: list[LoadProblem]
) -> SessionEntry | None:
    if obj.get("type") == "session":
        problems.append(
            LoadProblem(path, line_no, "extra_header", "a second session header was skipped")
        )
        return None
    try:
        return decode_entry(obj)
    except WireFormatError as exc:
        raise SessionFileCorrupt(path, line_no, str(exc)) from exc
