"""``list_sessions``: the sessions a token may see, live or on disk."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from pitrio.host.ws._host import LiveSession
from pitrio.sessions import SessionInfo, SessionManager, run_file_work
from pitrio.sessions.storage._journal import read_epoch

__all__ = ["list_visible_sessions"]


def _epochs(paths: list[str]) -> dict[str, int]:
    return {path: read_epoch(path) for path in paths}


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def list_visible_sessions(
    session_dir: str, live: Sequence[LiveSession], allowed: Collection[str] | None
) -> list[dict[str, Any]]:
    """One entry per session: the live ones in ``live`` first, then the files of
    ``session_dir`` that are not live and whose id is in ``allowed`` (``None``: any).

    Each entry: ``session``, ``live``, ``sessionFile``, ``name``, ``cwd``, ``lastActivity``
    (ISO 8601 UTC: the last user or assistant message, else the file's creation), ``epoch``
    (the live opening's; for a file, its last opening's, 0 if a host never opened it),
    and for live sessions ``seq``, ``isStreaming`` and ``clients``. The files are read in a
    worker thread (every file of the folder: the cost grows with the folder).
    """
    infos: list[SessionInfo] = await run_file_work(
        SessionManager.list_sessions, session_dir, session_dir
    )
    by_path = {info.path: info for info in infos}
    listed: list[dict[str, Any]] = []
    live_ids = set()
    live_files = set()
    for session in live:
        live_ids.add(session.id)
        agent = session.session
        path = agent.session_file
        if path is not None:
            live_files.add(path)
        info = by_path.get(path) if path is not None else None
        entry: dict[str, Any] = {
            "session": session.id,
            "live": True,
            "sessionFile": path,
            "name": agent.session_name,
            "cwd": agent.session_manager.get_cwd(),
            "lastActivity": _iso(info.modified) if info is not None else None,
            "epoch": session.epoch,
            "seq": agent.seq,
            "isStreaming": agent.is_streaming,
            "clients": len(session.clients),
        }
        listed.append(entry)
    closed = [
        info
        for info in infos  # most recently active first
        if info.id not in live_ids
        and info.path not in live_files
        and (allowed is None or info.id in allowed)
    ]
    epochs = await run_file_work(_epochs, [info.path for info in closed])
    for info in closed:
        listed.append(
            {
                "session": info.id,
                "live": False,
                "sessionFile": info.path,
                "name": info.name,
                "cwd": info.cwd,
                "lastActivity": _iso(info.modified),
                "epoch": epochs[info.path],
            }
        )
    return listed
