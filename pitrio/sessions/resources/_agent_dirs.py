"""Which agent dirs pitrio reads and writes, so a pi user's setup is found.

pitrio's own agent dir is ``$PITRIO_CODING_AGENT_DIR`` or ``~/.pitrio/agent``; everything
pitrio writes (sessions, settings changes, its own ``auth.json``) goes there. pi's agent dir
(``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``) is a fallback when it exists and
``PITRIO_CODING_AGENT_DIR`` is not set: ``models.json`` and ``settings.json`` missing from
pitrio's dir are read from pi's, with a one-line notice, and pi's sessions are listed for
``-r`` / ``-c``. The fallback is per file, so the first session pitrio saves (which creates
``~/.pitrio/agent``) does not hide pi's models.json on the next run.

``auth.json`` falls back per *provider* rather than per file (:meth:`AgentDirs.auth_paths`,
read by :class:`pitrio.providers.credentials.CredentialStore`): a provider without an entry in
pitrio's file takes pi's entry. pi's dir is never modified, with one exception: an OAuth token
read from pi's ``auth.json`` and renewed by pitrio is written back there, under pi's lock,
since the renewal rotates the refresh token that pi's copy holds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import attrs

PITRIO_AGENT_DIR_ENV: Final = "PITRIO_CODING_AGENT_DIR"
PI_AGENT_DIR_ENV: Final = "PI_CODING_AGENT_DIR"
PITRIO_CONFIG_DIR_NAME: Final = ".pitrio"
PI_CONFIG_DIR_NAME: Final = ".pi"
SESSIONS_DIR_NAME: Final = "sessions"
AUTH_FILE_NAME: Final = "auth.json"


def _expand_tilde(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return home + path[1:]
    return path


@attrs.frozen(kw_only=True)
class AgentDirs:
    """pitrio's agent dir (written) and pi's dirs (read only, possibly none)."""

    write_dir: str
    fallback_dirs: tuple[str, ...] = ()

    def config_file(self, name: str) -> str:
        """Where to read ``name`` from: pitrio's dir if the file is there, else the first
        fallback that has it, else pitrio's path (which does not exist yet)."""
        own = os.path.join(self.write_dir, name)
        if os.path.exists(own):
            return own
        for directory in self.fallback_dirs:
            candidate = os.path.join(directory, name)
            if os.path.exists(candidate):
                return candidate
        return own

    def is_fallback(self, path: str) -> bool:
        """True if ``path`` lies in one of pi's dirs (so must not be written)."""
        target = os.path.abspath(path)
        return any(
            target == d or target.startswith(d.rstrip(os.sep) + os.sep)
            for d in map(os.path.abspath, self.fallback_dirs)
        )

    def fallback_notice(self, path: str) -> str | None:
        """The one-line notice for a file read from pi's dir (``None`` for pitrio's own)."""
        if not self.is_fallback(path):
            return None
        return (
            f"pitrio: using {path} from pi's agent dir (read only; pitrio writes to "
            f"{self.write_dir})"
        )

    def session_dirs(self) -> tuple[str, ...]:
        """The sessions folders to list for ``-r`` / ``-c``: pitrio's, then pi's that exist."""
        own = os.path.join(self.write_dir, SESSIONS_DIR_NAME)
        others = tuple(
            path
            for path in (os.path.join(d, SESSIONS_DIR_NAME) for d in self.fallback_dirs)
            if os.path.isdir(path)
        )
        return (own, *others)

    def auth_paths(self) -> tuple[str, ...]:
        """The ``auth.json`` files credentials are read from: pitrio's, then pi's (which need
        not exist). A provider's entry is taken from the first file that has one."""
        return tuple(os.path.join(d, AUTH_FILE_NAME) for d in (self.write_dir, *self.fallback_dirs))

    def resource_dir(self) -> str:
        """The agent dir for skills, prompts, ``AGENTS.md`` and ``SYSTEM.md``: pitrio's if it
        exists, else pi's (when there is one), else pitrio's."""
        if os.path.isdir(self.write_dir):
            return self.write_dir
        return next((d for d in self.fallback_dirs if os.path.isdir(d)), self.write_dir)


def resolve_agent_dirs(
    env: Mapping[str, str] | None = None, *, home: str | None = None
) -> AgentDirs:
    """pitrio's agent dir and pi's read-only fallback for this environment.

    Args:
        env: the environment (default: ``os.environ``).
        home: the home directory (default: the user's).
    """
    env = os.environ if env is None else env
    home = home if home is not None else os.path.expanduser("~")
    configured = env.get(PITRIO_AGENT_DIR_ENV)
    if configured:
        # An explicit pitrio dir is the whole story: no guessing at pi's.
        return AgentDirs(write_dir=os.path.abspath(_expand_tilde(configured, home)))
    write_dir = os.path.join(home, PITRIO_CONFIG_DIR_NAME, "agent")
    pi_configured = env.get(PI_AGENT_DIR_ENV)
    pi_dir = os.path.abspath(
        _expand_tilde(pi_configured, home)
        if pi_configured
        else os.path.join(home, PI_CONFIG_DIR_NAME, "agent")
    )
    if not os.path.isdir(pi_dir) or os.path.abspath(write_dir) == pi_dir:
        return AgentDirs(write_dir=write_dir)
    return AgentDirs(write_dir=write_dir, fallback_dirs=(pi_dir,))
