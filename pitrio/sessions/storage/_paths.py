"""Where session files live: ``<agent dir>/sessions/--<encoded cwd>--/<time>_<id>.jsonl``.

The agent dir is ``$PITRIO_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pitrio/agent`` (pi:
``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``). Each working directory gets its own folder whose
name is the cwd with the leading separator dropped and ``/``, ``\\`` and ``:`` replaced by ``-``,
between ``--`` and ``--`` (pi's naming, so the two tools could share a sessions folder).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from pitrio.codec import loads

AGENT_DIR_ENV: Final = "PITRIO_CODING_AGENT_DIR"
"""Environment variable that overrides the agent dir."""

CONFIG_DIR_NAME: Final = ".pitrio"
"""The config folder in the home directory (pi: ``.pi``)."""

SESSION_FILE_SUFFIX: Final = ".jsonl"

_LEADING_SEPARATOR: Final = re.compile(r"^[/\\]")
_SEPARATORS: Final = re.compile(r"[/\\:]")


def _expand_tilde(path: str) -> str:
    if path == "~":
        return os.path.expanduser("~")
    if path.startswith("~/"):
        return os.path.expanduser("~") + path[1:]
    return path


def agent_dir() -> str:
    """The agent dir: ``$PITRIO_CODING_AGENT_DIR`` or ``~/.pitrio/agent``."""
    configured = os.environ.get(AGENT_DIR_ENV)
    if configured:
        return _expand_tilde(configured)
    return os.path.join(os.path.expanduser("~"), CONFIG_DIR_NAME, "agent")


def get_sessions_dir(agent_dir_path: str | None = None) -> str:
    """The folder that holds one sub-folder of sessions per working directory."""
    return os.path.join(agent_dir_path if agent_dir_path is not None else agent_dir(), "sessions")


def encode_cwd(cwd: str) -> str:
    """The folder name of a working directory's sessions (``/a/b`` -> ``--a-b--``)."""
    return f"--{_SEPARATORS.sub('-', _LEADING_SEPARATOR.sub('', cwd))}--"


def get_default_session_dir(cwd: str, agent_dir_path: str | None = None) -> str:
    """The sessions folder of ``cwd``, created if missing (as pi's ``getDefaultSessionDir``)."""
    directory = os.path.join(get_sessions_dir(agent_dir_path), encode_cwd(cwd))
    os.makedirs(directory, exist_ok=True)
    return directory


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<ISO timestamp with : and . as ->_<session id>.jsonl``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}{SESSION_FILE_SUFFIX}"


# --------------------------------------------------------------------------- listing sessions


@attrs.frozen(kw_only=True)
class SessionInfo:
    """What the session picker shows about one session file (pi's ``SessionInfo``)."""

    path: str
    id: str
    cwd: str
    """The working directory the session was started in (``""`` for very old files)."""
    name: str | None
    """The display name from the latest ``session_info`` entry."""
    parent_session_path: str | None
    """The session this one was forked or branched from."""
    created: datetime
    modified: datetime
    """The latest user or assistant message time (else the header time, else the file mtime)."""
    message_count: int
    first_message: str
    """The first user message's text, or ``"(no messages)"``."""
    all_messages_text: str
    """The text of every user and assistant message, for searching."""


_HEADER_PROBE: Final = 65536
"""Bytes read to find a file's first line when checking that it is a session file."""


def _parse_lenient(data: bytes) -> list[dict[str, Any]]:
    objects = []
    for line in data.split(b"\n"):
        if not line or line.isspace():
            continue
        try:
            obj = loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            objects.append(obj)
    return objects


def _datetime_ms(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _parse_iso(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and "text" in block
        )
    return ""


def read_session_info(path: str) -> SessionInfo | None:
    """Summarise a session file for listing; ``None`` if it is not a readable session file.

    Like pi, listing is lenient: lines that are not JSON are skipped and nothing is migrated.
    """
    try:
        with open(path, "rb") as file:
            data = file.read()
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    objects = _parse_lenient(data)
    if not objects or objects[0].get("type") != "session":
        return None
    header = objects[0]
    message_count = 0
    first_message = ""
    texts: list[str] = []
    name: str | None = None
    last_activity: float | None = None
    for entry in objects:
        kind = entry.get("type")
        if kind == "session_info":
            raw_name = entry.get("name")
            name = raw_name.strip() or None if isinstance(raw_name, str) else None
        if kind != "message":
            continue
        message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            continue
        if "content" not in message or message["role"] not in ("user", "assistant"):
            continue
        stamp = message.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            last_activity = max(last_activity or 0, stamp)
        else:
            parsed = _parse_iso(entry.get("timestamp"))
            if parsed is not None:
                last_activity = max(last_activity or 0, parsed.timestamp() * 1000)
        text = _message_text(message["content"])
        if not text:
            continue
        texts.append(text)
        if not first_message and message["role"] == "user":
            first_message = text
    created = _parse_iso(header.get("timestamp"))
    if last_activity is not None and last_activity > 0:
        modified = _datetime_ms(last_activity)
    else:
        modified = created if created is not None else _datetime_ms(mtime * 1000)
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=str(header.get("id")),
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=created if created is not None else _datetime_ms(mtime * 1000),
        modified=modified,
        message_count=message_count,
        first_message=first_message or "(no messages)",
        all_messages_text=" ".join(texts),
    )


def _session_files(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [os.path.join(directory, n) for n in sorted(names) if n.endswith(SESSION_FILE_SUFFIX)]


def list_session_dir(directory: str) -> list[SessionInfo]:
    """Every readable session file in ``directory``, most recently active first."""
    infos = [info for path in _session_files(directory) if (info := read_session_info(path))]
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos


def list_all_session_dirs(sessions_dir: str | None = None) -> list[SessionInfo]:
    """The sessions of every working directory under ``sessions_dir``, most recent first."""
    root = sessions_dir if sessions_dir is not None else get_sessions_dir()
    try:
        folders = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    infos: list[SessionInfo] = []
    for folder in folders:
        if folder.is_dir():
            infos.extend(
                info for path in _session_files(folder.path) if (info := read_session_info(path))
            )
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos


def is_session_file(path: str) -> bool:
    """True if the file's first line is a session header (pi's ``isValidSessionFile``)."""
    try:
        with open(path, "rb") as file:
            first = file.readline(_HEADER_PROBE)
        header = loads(first)
    except (OSError, ValueError):
        return False
    return (
        isinstance(header, dict)
        and header.get("type") == "session"
        and isinstance(header.get("id"), str)
    )


def find_most_recent_session(directory: str) -> str | None:
    """The session file in ``directory`` modified last (by file mtime), or ``None``."""
    best: tuple[float, str] | None = None
    for path in _session_files(directory):
        if not is_session_file(path):
            continue
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, path)
    return best[1] if best is not None else None
