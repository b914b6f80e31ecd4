"""``list_sessions``: the sessions a token may see, live or on disk."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from pitrio.host.ws._host import LiveSession
from pitrio.sessions import SessionInfo, SessionManager, run_file_work

__all__ = ["list_visible_sessions"]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def list_visible_sessions(
    session_dir: str, live: Sequence[LiveSession], allowed: Collection[str] | None
) -> list[dict[str, Any]]:
    """One entry per session: the live ones in ``live`` first, then the files of
    ``session_dir`` that are not live and whose id is in ``allowed`` (``None``: any).

    Each entry: ``session``, ``live``, ``sessionFile``, ``name``, ``cwd``, ``lastActivity``
    (ISO 8601 UTC: the last user or assistant message, else the file's creation),
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
            # The epoch of the session's current opening goes here once sessions have one.
            "seq": agent.seq,
            "isStreaming": agent.is_streaming,
            "clients": len(session.clients),
        }
        listed.append(entry)
    for info in infos:  # most recently active first
        if info.id in live_ids or info.path in live_files:
            continue
        if allowed is not None and info.id not in allowed:
            continue
        listed.append(
            {
                "session": info.id,
                "live": False,
                "sessionFile": info.path,
                "name": info.name,
                "cwd": info.cwd,
                "lastActivity": _iso(info.modified),
                # The epoch of its last opening goes here once sessions have one.
            }
        )
    return listed
