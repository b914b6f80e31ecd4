"""``SessionManager``: a session as an append-only tree of entries, in memory or in a file.

Kept in one module: pi's SessionManager API, one class over the tree, the writer and
the loader.

Each entry has an ``id`` and a ``parentId``; the *leaf* is the current position. Appending adds
a child of the leaf and moves the leaf to it; :meth:`SessionManager.branch` moves the leaf back
to an earlier entry so the next append starts a new branch; nothing is ever modified or deleted.
:meth:`SessionManager.build_session_context` turns the path to the leaf into the LLM context.

The API is pi 0.73.1's ``SessionManager`` with Python names (``appendMessage`` ->
:meth:`~SessionManager.append_message`, ``SessionManager.list`` ->
:meth:`~SessionManager.list_sessions` ...). It is synchronous and usable without Trio: an
in-memory session never touches a file, and a file-backed one writes through a
:class:`~pitrio.sessions.SessionFileWriter` (lazy first flush, one ``os.write`` per entry).
In a running session a :class:`~pitrio.sessions.Persistence` actor takes over the writing
(``async with open_persistence(manager)``), and :meth:`~SessionManager.wait_persisted` tells
when an entry is on disk.

One writer per session file: a manager takes the file's exclusive OS lock (``flock``) when it
first writes to it (or creates it), and keeps it until :meth:`SessionManager.close`; while a
:class:`~pitrio.sessions.Persistence` actor serves the manager the lock is taken when the actor
starts (for an existing file) and released when it stops. A second writer, in another process
or in this one, gets :class:`~pitrio.sessions.SessionLocked` naming the file and the holder's
pid; a writer whose file was written by someone else since it was read gets
:class:`~pitrio.sessions.SessionFileChanged` instead of forking the tree behind their back.
Reading (opening a file and never appending, listing, building a context) takes no lock. See
:mod:`pitrio.sessions.storage._files`.

Blocking file work from Trio: the constructors that read files, listing and
:meth:`~SessionManager.set_session_file` have ``a``-prefixed async twins
(:meth:`~SessionManager.aopen`, :meth:`~SessionManager.acontinue_recent`,
:meth:`~SessionManager.afork_from`, :meth:`~SessionManager.alist_sessions` ...) that run the
file work in a worker thread under the shared :func:`~pitrio.sessions.file_limiter`.

Differences from pi, all on bad input or crashes: a corrupt line raises
:class:`SessionFileCorrupt` instead of being dropped silently, and a file whose first line is
not a session header (a user's text file, a binary blob, a torn header) is refused where pi
would overwrite it with a new session; a torn last line of a real session file is cut off
before the next append instead of having new lines glued to it; a migrated file is replaced
atomically; forking an old-version file migrates the copy; pi has no write lock.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import trio

from pitrio._exceptions import UsageError
from pitrio.providers import UserMessage, now_ms
from pitrio.sessions.storage._codec import SESSIONS_CODEC
from pitrio.sessions.storage._entries import (
    LabelEntry,
    SessionEntry,
    SessionEntryNotFound,
    SessionError,
    SessionHeader,
    SessionMessageEntry,
    generate_id,
    iso_timestamp,
    random_entry_id,
    uuid7,
)
from pitrio.sessions.storage._entry_columns import EntryColumns
from pitrio.sessions.storage._files import replace_locked, run_file_work, write_file_atomically
from pitrio.sessions.storage._loader import FileTail, LoadedSession, LoadProblem, load_session_file
from pitrio.sessions.storage._paths import (
    SessionInfo,
    find_most_recent_session,
    get_default_session_dir,
    list_all_session_dirs,
    list_session_dir,
    session_file_name,
)
from pitrio.sessions.storage._persistence import Persistence
from pitrio.sessions.storage._tree import Clock as Clock
from pitrio.sessions.storage._tree import IdSource as IdSource
from pitrio.sessions.storage._tree import SessionTree
from pitrio.sessions.storage._tree import SessionTreeNode as SessionTreeNode
from pitrio.sessions.storage._writer import SessionFileWriter


def _line(entry: Any) -> bytes:
    return SESSIONS_CODEC.dumps(entry) + b"\n"


class SessionManager(SessionTree):
    """A conversation session: an append-only tree of entries with a movable leaf.

    Create one with :meth:`create`, :meth:`open`, :meth:`continue_recent`, :meth:`in_memory`
    or :meth:`fork_from`. Every ``append_*`` method adds a child of the current leaf, makes it
    the leaf and returns its id.

    Args:
        cwd: the working directory recorded in the header.
        session_dir: the folder for new session files (``""`` for in-memory sessions).
        session_file: a file to open (or to create at that path); ``None`` starts a new session.
        persist: write to files (``False``: in memory only).
        clock: epoch milliseconds for timestamps (default: the wall clock).
        new_id: entry id candidates (default: 8 random hex digits).
        new_session_id: session ids (default: a UUID version 7).

    Resource handling:
        A file-backed manager keeps its file's descriptor open after the first write;
        :meth:`close` (or ``with``) releases it. A later append reopens it.
    """

    def __init__(
        self,
        *,
        cwd: str,
        session_dir: str,
        session_file: str | None,
        persist: bool,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
        _loaded: LoadedSession | None = None,
    ) -> None:
        super().__init__(clock=clock or now_ms, new_id=new_id or random_entry_id)
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._new_session_id = new_session_id or uuid7
        self._session_id = ""
        self._session_file: str | None = None
        self._header: SessionHeader | None = None
        self._writer: SessionFileWriter | None = None
        self._persistence: Persistence | None = None
        self._write_at_once = False
        self.load_problems: tuple[LoadProblem, ...] = ()
        """What the last file load skipped (a torn last line ...), see :class:`LoadProblem`."""
        if persist and session_dir:
            os.makedirs(session_dir, exist_ok=True)
        if session_file is not None:
            self._set_session_file(session_file, _loaded)
        else:
            self.new_session()

    # ------------------------------------------------------------------ constructors

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """A new file-backed session (the file appears with the first assistant message).

        Args:
            cwd: the working directory.
            session_dir: where to put the file (default: the cwd's folder under the agent dir).
            clock, new_id, new_session_id: see the class.
        """
        cwd = os.fspath(cwd)
        directory = (
            os.fspath(session_dir) if session_dir is not None else get_default_session_dir(cwd)
        )
        return cls(
            cwd=cwd,
            session_dir=directory,
            session_file=None,
            persist=True,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        cwd_override: str | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """Open a session file (migrating it if it is an older version); missing: create it.

        Args:
            path: the session file.
            session_dir: the folder for sessions started from this one (default: the file's).
            cwd_override: use this cwd instead of the header's.
            clock, new_id, new_session_id: see the class.

        An existing file is only read, except that an older version is rewritten in the
        current one and an empty file gets a header (as pi does); both take the file's write
        lock. Appending takes the lock (see the module notes).

        Blocking file work: from Trio use :meth:`aopen`.

        Raises:
            SessionFileCorrupt: the file is not a session file (its first line is not a
                session header) or a line is damaged; the file is left as it is.
            SessionLocked: the file must be rewritten (migration, empty file) but another
                process writes it.
        """
        path = os.path.abspath(os.fspath(path))
        loaded: LoadedSession | None = None
        cwd = cwd_override
        if os.path.exists(path):
            loaded = load_session_file(path, new_id=new_id or random_entry_id)
            if cwd is None and loaded.header is not None:
                cwd = loaded.header.cwd
        directory = os.fspath(session_dir) if session_dir is not None else os.path.dirname(path)
        return cls(
            cwd=cwd if cwd is not None else os.getcwd(),
            session_dir=directory,
            session_file=path,
            persist=True,
            _loaded=loaded,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """Open the most recently modified session of ``cwd``, or create a new one."""
        cwd = os.fspath(cwd)
        directory = (
            os.fspath(session_dir) if session_dir is not None else get_default_session_dir(cwd)
        )
        recent = find_most_recent_session(directory)
        return cls(
            cwd=cwd,
            session_dir=directory,
            session_file=recent,
            persist=True,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """A session that is never written to a file."""
        cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
        return cls(
            cwd=cwd,
            session_dir="",
            session_file=None,
            persist=False,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        target_cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """Copy a session (from any project) into a new file of ``target_cwd``.

        The new header records ``source_path`` as its parent session; the entries are copied
        as they are (migrated to the current version if the source is older; the source file is
        not modified).

        Raises:
            SessionError: the source is empty or has no header.
            SessionFileCorrupt: the source is damaged.
        """
        source = os.fspath(source_path)
        target = os.fspath(target_cwd)
        loaded = load_session_file(source, new_id=new_id or random_entry_id, rewrite_migrated=False)
        if loaded.header is None:
            raise SessionError(f"Cannot fork: source session file is empty or invalid: {source}")
        directory = (
            os.fspath(session_dir) if session_dir is not None else get_default_session_dir(target)
        )
        os.makedirs(directory, exist_ok=True)
        session_id = (new_session_id or uuid7)()
        timestamp = iso_timestamp((clock or now_ms)())
        path = os.path.join(directory, session_file_name(timestamp, session_id))
        header = SessionHeader(
            id=session_id, timestamp=timestamp, cwd=target, parent_session=source
        )
        lines = [_line(header), *map(_line, loaded.entries)]
        write_file_atomically(path, lines)
        size = sum(map(len, lines))
        fork = LoadedSession(path, header, loaded.columns, (), False, FileTail(size, size))
        return cls(
            cwd=target,
            session_dir=directory,
            session_file=path,
            persist=True,
            _loaded=fork,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )

    @staticmethod
    def list_sessions(
        cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """The sessions of ``cwd``, most recently active first (pi's ``SessionManager.list``)."""
        directory = (
            os.fspath(session_dir)
            if session_dir is not None
            else get_default_session_dir(os.fspath(cwd))
        )
        return list_session_dir(directory)

    @staticmethod
    def list_all_sessions(sessions_dir: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
        """The sessions of every working directory, most recently active first."""
        return list_all_session_dirs(os.fspath(sessions_dir) if sessions_dir is not None else None)

    # ------------------------------------------------------------------ async twins

    @classmethod
    async def acreate(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """:meth:`create` from Trio (the session folder is made in a worker thread)."""
        create = functools.partial(
            cls.create, cwd, session_dir, clock=clock, new_id=new_id, new_session_id=new_session_id
        )
        return await run_file_work(create)

    @classmethod
    async def aopen(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        cwd_override: str | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """:meth:`open` from Trio: loading and migrating run in a worker thread under the
        shared :func:`~pitrio.sessions.file_limiter`; same arguments and errors."""
        open_ = functools.partial(
            cls.open,
            path,
            session_dir,
            cwd_override,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )
        return await run_file_work(open_)

    @classmethod
    async def acontinue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """:meth:`continue_recent` from Trio (finding and loading run in a worker thread)."""
        resume = functools.partial(
            cls.continue_recent,
            cwd,
            session_dir,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )
        return await run_file_work(resume)

    @classmethod
    async def afork_from(
        cls,
        source_path: str | os.PathLike[str],
        target_cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        new_session_id: IdSource | None = None,
    ) -> Self:
        """:meth:`fork_from` from Trio (reading and writing run in a worker thread)."""
        fork = functools.partial(
            cls.fork_from,
            source_path,
            target_cwd,
            session_dir,
            clock=clock,
            new_id=new_id,
            new_session_id=new_session_id,
        )
        return await run_file_work(fork)

    @classmethod
    async def alist_sessions(
        cls, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """:meth:`list_sessions` from Trio (the files are read in a worker thread)."""
        return await run_file_work(cls.list_sessions, cwd, session_dir)

    @classmethod
    async def alist_all_sessions(
        cls, sessions_dir: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """:meth:`list_all_sessions` from Trio (the files are read in a worker thread)."""
        return await run_file_work(cls.list_all_sessions, sessions_dir)

    # ------------------------------------------------------------------ session files

    def set_session_file(self, session_file: str | os.PathLike[str]) -> None:
        """Switch to another session file (resume); a missing file starts a new session there.

        Blocking file work: from Trio use :meth:`aset_session_file`.

        Raises:
            SessionFileCorrupt: the file is not a session file or a line is damaged (the
                current session is kept).
            SessionLocked: a Persistence actor serves this manager and another writer holds
                the file (the current session is kept).
        """
        self._set_session_file(os.fspath(session_file), None)

    async def aset_session_file(self, session_file: str | os.PathLike[str]) -> None:
        """:meth:`set_session_file` with the file work in a worker thread (see
        :func:`~pitrio.sessions.run_file_work`); the switch itself happens in the caller."""
        self._barrier()
        path, loaded = await run_file_work(self._locate_and_read, os.fspath(session_file))
        self._install_session_file(path, loaded)

    def _locate_and_read(self, session_file: str) -> tuple[str, LoadedSession | None]:
        path = os.path.abspath(session_file)
        return path, self._read_session_file(path)

    def _set_session_file(self, session_file: str, loaded: LoadedSession | None) -> None:
        self._barrier()
        path = os.path.abspath(session_file)
        if loaded is None:
            loaded = self._read_session_file(path)
        self._install_session_file(path, loaded)

    def _read_session_file(self, path: str) -> LoadedSession | None:
        """Load ``path`` (``None``: missing); blocking file work that changes no state here."""
        if not os.path.exists(path):
            return None
        loaded = load_session_file(path, new_id=self._new_id, rewrite_migrated=self._persist)
        return self._claim_empty_file(loaded)

    def _claim_empty_file(self, loaded: LoadedSession) -> LoadedSession:
        """An empty file becomes a new session there with its header written at once, so
        later appends never land in a file without one (as pi does)."""
        if loaded.header is not None or not self._persist:
            return loaded
        header = SessionHeader(
            id=self._new_session_id(), timestamp=iso_timestamp(self._clock()), cwd=self._cwd
        )
        expected = loaded.tail.size if loaded.tail is not None else 0
        size = replace_locked(loaded.path, [_line(header)], expected_size=expected)
        return LoadedSession(loaded.path, header, [], loaded.problems, False, FileTail(size, size))

    def _install_session_file(self, path: str, loaded: LoadedSession | None) -> None:
        self._barrier()
        if loaded is None:
            self.new_session()
            self._session_file = path
            if self._persist:
                self._switch_writer(SessionFileWriter(path))
                self._writer_add_header()
            return
        loaded = self._claim_empty_file(loaded)
        header = loaded.header
        if header is None:  # in memory: an empty file is a new session
            self.new_session()
            self._session_file = path
            return
        writer: SessionFileWriter | None = None
        if self._persist:
            writer = SessionFileWriter(path, written=1 + len(loaded.columns), tail=loaded.tail)
            if self._persistence is not None:
                # A running session locks the file before switching to it, so a refused
                # file leaves the current session as it was.
                if self._writer is not None and self._writer.path == path:
                    self._writer.close()
                writer.acquire()
        self.load_problems = loaded.problems
        self._session_file = path
        self._header = header
        self._session_id = header.id
        self._entries = loaded.columns
        self._build_index()
        if writer is not None:
            self._switch_writer(writer)

    def new_session(
        self, *, id: str | None = None, parent_session: str | None = None
    ) -> str | None:
        """Start a new, empty session (the current one stays as it is on disk).

        Args:
            id: the session id (default: a new UUID version 7).
            parent_session: the path recorded as ``parentSession`` in the header.

        Returns:
            The new session's file path (written lazily), or ``None`` in memory.
        """
        self._barrier()
        self._session_id = id or self._new_session_id()
        timestamp = iso_timestamp(self._clock())
        self._header = SessionHeader(
            id=self._session_id, timestamp=timestamp, cwd=self._cwd, parent_session=parent_session
        )
        self._entries = EntryColumns()
        self._build_index()
        self.load_problems = ()
        if self._persist:
            self._session_file = os.path.join(
                self._session_dir, session_file_name(timestamp, self._session_id)
            )
            self._switch_writer(SessionFileWriter(self._session_file))
            self._writer_add_header()
        return self._session_file

    def _writer_add_header(self) -> None:
        assert self._writer is not None and self._header is not None
        self._writer.add([_line(self._header)], flush=self._write_at_once)

    def write_at_once(self) -> None:
        """Write the file from now on without waiting for an answer: what is held back (the
        header) now, every later entry as it is appended (new sessions' headers too), and a
        user message before the append returns, so before any subscriber of a running
        session sees its ``message_end`` (the session records an entry first).

        pi, and pitrio's CLI, create a session's file lazily with its first assistant
        message. The host and RPC modes call this once the session is built, so that it
        exists on disk from its creation on and a prompt whose answer a crash cut short is
        found again. In memory: nothing to write.

        Blocking (it may write the file): call it before the session runs, from a worker
        thread in async code.

        Raises:
            SessionLocked, SessionFileChanged, SessionWriteError: as
                :meth:`SessionFileWriter.add`.
        """
        self._write_at_once = True
        writer = self._writer
        if writer is not None:
            self._barrier()
            writer.add((), flush=True)

    # ------------------------------------------------------------------ writing

    def _switch_writer(self, writer: SessionFileWriter | None) -> None:
        self._barrier()
        if self._writer is not None and self._writer is not writer:
            self._writer.retire()
        self._writer = writer

    def _barrier(self) -> None:
        """Let queued writes reach the current file before anything switches or rewrites it."""
        if self._persistence is not None:
            self._persistence.drain()

    def attach_persistence(self, persistence: Persistence) -> None:
        """Hand appends to a running :class:`~pitrio.sessions.Persistence` actor (it calls
        this when it starts; use :func:`~pitrio.sessions.open_persistence`).

        An existing session file is locked now, so a second writer is refused at the start of
        its session rather than at its first answer.

        Raises:
            UsageError: another actor is attached.
            SessionLocked: another writer holds the session file.
            SessionFileChanged: the file changed on disk since it was read.
        """
        if self._persistence is not None:
            raise UsageError("this session already has a Persistence actor")
        writer = self._writer
        if writer is not None and writer.written > 0:
            writer.acquire()
        self._persistence = persistence

    def detach_persistence(self, persistence: Persistence) -> None:
        """Write synchronously again and release the file's lock (the actor calls this when
        it stops; a later append takes the lock again)."""
        if self._persistence is persistence:
            self._persistence = None
            if self._writer is not None:
                self._writer.close()

    @property
    def persistence(self) -> Persistence | None:
        """The actor writing this session, while one runs."""
        return self._persistence

    def is_entry_persisted(self, entry_id: str) -> bool:
        """True once the entry is in the session file (always false in memory)."""
        index = self._pos.get(entry_id)
        writer = self._writer
        return index is not None and writer is not None and index + 1 < writer.written

    async def wait_persisted(self, entry_id: str) -> bool:
        """Wait until the entry is on disk.

        Before the session's first assistant message nothing is written (lazy first flush),
        so this waits for one. Without a running :class:`Persistence` actor writes happen at
        append time and this only reports.

        Returns:
            True once the entry is on disk; False if it never will be (in memory, another
            session file was started, or the actor stopped with the entry held back).
        """
        writer = self._writer
        while not self.is_entry_persisted(entry_id):
            persistence = self._persistence
            if persistence is None or writer is None or self._writer is not writer:
                await trio.lowlevel.checkpoint()
                return self.is_entry_persisted(entry_id)
            await persistence.wait_progress()
        await trio.lowlevel.checkpoint()
        return True

    async def flush(self) -> None:
        """Wait until the running :class:`Persistence` actor has handled every append so far."""
        persistence = self._persistence
        if persistence is not None:
            await persistence.wait_processed(persistence.submitted)
        else:
            await trio.lowlevel.checkpoint()

    def stop_writing(self) -> None:
        """Write nothing more to the session file, from now on: entries appended later (and
        any queued for a running :class:`~pitrio.sessions.Persistence` actor) stay in memory
        only, and the file's lock is released. For a session whose file another writer owns
        now (a cluster node that lost the session's lease). Not undone."""
        if self._writer is not None:
            self._writer.fence()

    def guard_writes(self, guard: Callable[[], bool]) -> None:
        """Ask ``guard()`` before every write to the session file from now on; the first
        False stops the writing for good, as :meth:`stop_writing` (nothing of that write
        reaches the file). For a cluster node, whose right to write the file ends when its
        lease lapses, by its own clock, even before it hears so. No-op without a file."""
        if self._writer is not None:
            self._writer.guard = guard

    def close(self) -> None:
        """Release the file descriptor (entries held back before the first answer are kept)."""
        self._barrier()
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _write_entry(self, entry: SessionEntry) -> None:
        writer = self._writer
        if writer is not None:
            line = SESSIONS_CODEC.dumps(entry) + b"\n"
            flush = self._has_assistant or self._write_at_once
            persistence = self._persistence
            if persistence is not None:
                persistence.submit(writer, line, flush)
                if self._write_at_once and _is_prompt(entry):
                    persistence.drain()  # on disk before the prompt's message_end goes out
            else:
                writer.add((line,), flush=flush)

    # ------------------------------------------------------------------ reading

    def is_persisted(self) -> bool:
        """True for a file-backed session (pi's ``isPersisted``)."""
        return self._persist

    def get_cwd(self) -> str:
        """The working directory."""
        return self._cwd

    def get_session_dir(self) -> str:
        """The folder for this session's files (``""`` in memory)."""
        return self._session_dir

    def get_session_id(self) -> str:
        """The session id (a UUID)."""
        return self._session_id

    def get_session_file(self) -> str | None:
        """The session file path (``None`` in memory)."""
        return self._session_file if self._persist else None

    def get_header(self) -> SessionHeader | None:
        """The session header."""
        return self._header

    # ------------------------------------------------------------------ branching (files)

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Make a new session of the path to ``leaf_id`` (labels on it carried over) and switch
        to it (pi's ``/fork`` and ``/clone``).

        The new header names the current file as its parent. The new file is written at once if
        the path holds an assistant message, otherwise with the first one.

        Returns:
            The new session file, or ``None`` in memory.

        Raises:
            SessionEntryNotFound: no such entry.
        """
        previous_file = self._session_file
        path = self.get_branch(leaf_id)
        if not path:
            raise SessionEntryNotFound(leaf_id)
        kept = [entry for entry in path if type(entry) is not LabelEntry]
        kept_ids = {entry.id for entry in kept}
        session_id = self._new_session_id()
        timestamp = iso_timestamp(self._clock())
        header = SessionHeader(
            id=session_id,
            timestamp=timestamp,
            cwd=self._cwd,
            parent_session=previous_file if self._persist else None,
        )
        labels: list[SessionEntry] = []
        parent_id = kept[-1].id if kept else None
        taken = set(kept_ids)
        for target_id, label in self._labels.items():
            if target_id not in kept_ids:
                continue
            label_id = generate_id(taken, self._new_id)
            taken.add(label_id)
            labels.append(
                LabelEntry(
                    id=label_id,
                    parent_id=parent_id,
                    timestamp=self._label_times[target_id],
                    target_id=target_id,
                    label=label,
                )
            )
            parent_id = label_id
        self._barrier()
        self._session_id = session_id
        self._header = header
        self._entries = EntryColumns(kept + labels)
        self._build_index()
        self.load_problems = ()
        if not self._persist:
            return None
        self._session_file = os.path.join(
            self._session_dir, session_file_name(timestamp, session_id)
        )
        writer = SessionFileWriter(self._session_file)
        self._switch_writer(writer)
        writer.add(
            [_line(header), *map(_line, kept + labels)],
            flush=self._has_assistant or self._write_at_once,
        )
        return self._session_file


def _is_prompt(entry: SessionEntry) -> bool:
    return type(entry) is SessionMessageEntry and type(entry.message) is UserMessage
