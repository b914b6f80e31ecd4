"""Which session the command runs in: new, ``-c``, ``-r``, ``--session``, ``--fork``.

Sessions of this directory are looked up in pitrio's sessions folder and, unless a session
folder was named (``--session-dir``, ``$PITRIO_CODING_AGENT_SESSION_DIR``, the ``sessionDir``
setting), in pi's too (:meth:`~pitrio.sessions.resources.AgentDirs.session_dirs`). pitrio
never writes into pi's directory: a session of pi's that is continued, resumed or opened is
first copied into pitrio's folder (a fork, whose header names pi's file as its parent), with a
one-line notice, and the copy is what grows. The next ``-c`` finds the copy, the newest file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Final

from pitrio.cli._errors import CliError
from pitrio.sessions import (
    SessionError,
    SessionInfo,
    SessionManager,
    get_default_session_dir,
)
from pitrio.sessions.resources import AgentDirs
from pitrio.sessions.storage._paths import encode_cwd, find_most_recent_session, list_session_dir

PickSession = Callable[[Sequence[SessionInfo]], "SessionInfo | None"]
"""Asks the user to choose a session for ``-r`` (``None``: nothing chosen)."""

FIRST_MESSAGE_SHOWN: Final = 60
"""Characters of a session's first message in the ``-r`` list."""


def _looks_like_path(arg: str) -> bool:
    return "/" in arg or "\\" in arg or arg.endswith(".jsonl")


class SessionFinder:
    """Where this directory's sessions are, in pitrio's folder and pi's.

    Args:
        cwd: the working directory.
        dirs: pitrio's agent dir and pi's.
        session_dir: a session folder named by flag, environment or setting (then pi's
            folders are not searched), else ``None``.
    """

    def __init__(self, cwd: str, dirs: AgentDirs, session_dir: str | None) -> None:
        self.cwd = cwd
        self.dirs = dirs
        self.explicit = session_dir is not None
        self.own_folder = session_dir or os.path.join(self.dirs.session_dirs()[0], encode_cwd(cwd))
        roots = self.dirs.session_dirs()
        self.roots = roots[:1] if self.explicit else roots
        self.folders = [self.own_folder] + (
            [] if self.explicit else [os.path.join(root, encode_cwd(cwd)) for root in roots[1:]]
        )

    def ensure_own_folder(self) -> str:
        """Create pitrio's folder for this directory (when it is the default one)."""
        if self.explicit:
            return self.own_folder
        return get_default_session_dir(self.cwd, self.dirs.write_dir)

    def is_foreign(self, path: str) -> bool:
        """True for a file in pi's directory (pitrio must not write it)."""
        return self.dirs.is_fallback(path)

    def local_sessions(self) -> list[SessionInfo]:
        """This directory's sessions in every folder, most recently active first."""
        infos = [info for folder in self.folders for info in list_session_dir(folder)]
        infos.sort(key=lambda info: info.modified, reverse=True)
        return infos

    def most_recent(self) -> str | None:
        """The session file of this directory modified last, in any folder."""
        best: tuple[int, str] | None = None
        for folder in self.folders:
            path = find_most_recent_session(folder)
            if path is None:
                continue
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue
            if best is None or mtime > best[0]:
                best = (mtime, path)
        return best[1] if best is not None else None

    def find(self, arg: str) -> tuple[str, bool]:
        """A ``--session`` / ``--fork`` value as a file: ``(path, local)``.

        ``local`` is False when the id prefix matched a session of another directory.

        Raises:
            CliError: no session matches.
        """
        if _looks_like_path(arg):
            return arg, True
        for info in self.local_sessions():
            if info.id.startswith(arg):
                return info.path, True
        for root in self.roots:
            for info in SessionManager.list_all_sessions(root):
                if info.id.startswith(arg):
                    return info.path, False
        raise CliError(f"No session found matching '{arg}'")


def format_session_choice(index: int, info: SessionInfo, foreign: bool) -> str:
    """One line of the ``-r`` list: number, time, message count, name or first message."""
    when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
    text = " ".join((info.name or info.first_message).split())
    if len(text) > FIRST_MESSAGE_SHOWN:
        text = text[: FIRST_MESSAGE_SHOWN - 3] + "..."
    count = f"{info.message_count} msg{'s' if info.message_count != 1 else ''}"
    return f"{index:>3}. {when}  {count:>8}  {text}{'  [pi]' if foreign else ''}"


def open_session_manager(
    args_session: str | None,
    *,
    cwd: str,
    dirs: AgentDirs,
    session_dir: str | None,
    no_session: bool = False,
    fork: str | None = None,
    resume: bool = False,
    continue_session: bool = False,
    pick: PickSession | None = None,
    notice: Callable[[str], None] = lambda message: None,
) -> SessionManager:
    """The SessionManager the flags ask for (see the module docstring).

    Args:
        args_session: ``--session PATH|ID``.
        session_dir: a session folder named by flag, environment or setting, else ``None``.
        pick: chooses a session for ``-r`` (``None``: the most recent).
        notice: told when a session of pi's is copied.

    Raises:
        CliError: no session matches, a file is damaged or locked, the directory a session
            was recorded in no longer exists, or ``-r`` chose nothing (exit status 0).
    """
    if no_session:
        return SessionManager.in_memory(cwd)
    finder = SessionFinder(cwd, dirs, session_dir)
    try:
        manager = _choose(
            finder,
            args_session=args_session,
            fork=fork,
            resume=resume,
            continue_session=continue_session,
            session_dir=session_dir,
            pick=pick,
            notice=notice,
        )
    except SessionError as exc:
        raise CliError(f"Error: {exc}") from exc
    except OSError as exc:
        # The folder cannot be created, read or written: say which folder, and the way out.
        where = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        raise CliError(
            f"Error: cannot use the session directory {finder.own_folder} ({where}); "
            "run with --no-session to not save the session"
        ) from exc
    session_cwd = manager.get_cwd()
    if manager.get_session_file() and session_cwd and not os.path.isdir(session_cwd):
        manager.close()
        raise CliError(
            f"Stored session working directory does not exist: {session_cwd}\n"
            f"Session file: {manager.get_session_file()}\n"
            f"Current working directory: {cwd}"
        )
    return manager


def _copy_of_foreign(
    finder: SessionFinder, path: str, notice: Callable[[str], None]
) -> SessionManager:
    manager = SessionManager.fork_from(path, finder.cwd, finder.ensure_own_folder())
    notice(
        f"pitrio: {path} is pi's session; continuing in a copy, "
        f"{manager.get_session_file()} (pi's file is not changed)"
    )
    return manager


def _choose(
    finder: SessionFinder,
    *,
    args_session: str | None,
    fork: str | None,
    resume: bool,
    continue_session: bool,
    session_dir: str | None,
    pick: PickSession | None,
    notice: Callable[[str], None],
) -> SessionManager:
    if fork:
        path, _ = finder.find(fork)
        if not os.path.exists(path):
            raise CliError(f"Error: File not found: {path}")
        return SessionManager.fork_from(path, finder.cwd, finder.ensure_own_folder())
    if args_session:
        path, local = finder.find(args_session)
        if not local:
            # pi asks whether to fork it into this directory; there is no one to ask here.
            info = next(
                i
                for r in finder.roots
                for i in SessionManager.list_all_sessions(r)
                if i.path == path
            )
            raise CliError(
                f"Session {info.id} belongs to another project ({info.cwd}). "
                f"Open it by its path: --session {info.path}"
            )
        if finder.is_foreign(path):
            if not os.path.exists(path):
                raise CliError(f"Error: File not found: {path} (pitrio does not write in pi's dir)")
            return _copy_of_foreign(finder, path, notice)
        # An opened file's new sessions go next to it unless a folder was named (pi).
        return SessionManager.open(path, session_dir)
    if resume:
        sessions = finder.local_sessions()
        if not sessions:
            notice("pitrio: no session to resume in this directory; starting a new one")
            return SessionManager.create(finder.cwd, finder.ensure_own_folder())
        chosen = pick(sessions) if pick is not None else sessions[0]
        if chosen is None:
            raise CliError("No session selected", exit_code=0)
        if finder.is_foreign(chosen.path):
            return _copy_of_foreign(finder, chosen.path, notice)
        return SessionManager.open(chosen.path, session_dir)
    if continue_session:
        recent = finder.most_recent()
        if recent is not None and finder.is_foreign(recent):
            return _copy_of_foreign(finder, recent, notice)
        return SessionManager.continue_recent(finder.cwd, finder.ensure_own_folder())
    return SessionManager.create(finder.cwd, finder.ensure_own_folder())


def fork_conflicts(
    *, fork: str | None, session: str | None, continue_session: bool, resume: bool, no_session: bool
) -> str | None:
    """pi's error when ``--fork`` is combined with another session flag, else ``None``."""
    if not fork:
        return None
    flags = [
        flag
        for flag, given in (
            ("--session", bool(session)),
            ("--continue", continue_session),
            ("--resume", resume),
            ("--no-session", no_session),
        )
        if given
    ]
    return f"Error: --fork cannot be combined with {', '.join(flags)}" if flags else None
