"""What a client token's sessions may do with their tools (docs/host-protocol.md, "Tool
isolation").

A session opened for a client token is *confined*: it gets only the tools the token was
granted (by default :data:`DEFAULT_CLIENT_TOOLS`, read-only), its file tools may name only
paths inside the host's roots and outside the host's own folders (sessions, state, the agent
dir), its ``write`` and ``edit`` never touch a file that shapes what a later session loads
(:func:`is_protected`), and its ``bash`` (tool and user command), when granted, runs through
the host's sandbox command if one is set.

Paths are checked with ``realpath`` (every symlink followed) just before the tool runs. A
confined session without ``bash`` cannot make a symlink, so nothing can change a checked path
between the check and the write; with ``bash`` granted, the sandbox is what confines it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from pitrio._exceptions import UsageError
from pitrio.sessions import run_file_work
from pitrio.tools import AgentTool, AgentToolResult, ToolUpdateCallback
from pitrio.tools.builtin import resolve_to_cwd

__all__ = [
    "DEFAULT_CLIENT_TOOLS",
    "PROTECTED_FOLDERS",
    "PROTECTED_NAMES",
    "ConfinedTool",
    "Confinement",
    "PathRefused",
    "confine_tools",
    "is_protected",
    "sandbox_command",
]

DEFAULT_CLIENT_TOOLS: Final = ("read", "grep", "find", "ls")
"""The tools a client token's sessions get unless the host grants more."""
PROTECTED_NAMES: Final = frozenset(
    {
        "agents.md",
        "claude.md",
        "system.md",
        "append_system.md",
        "settings.json",
        "models.json",
        "auth.json",
        "keybindings.json",
    }
)
"""File names (any case) a confined session never writes: context files and system prompts
the next session reads, and the agent dir's configuration."""
PROTECTED_FOLDERS: Final = frozenset({".pitrio", ".pi", ".agents", ".claude", ".git"})
"""Folders a confined session never writes inside: project settings, extensions, skills and
prompts live in the first four; ``.git`` holds hooks that run as the user."""
_WRITING_TOOLS: Final = frozenset({"write", "edit"})


class PathRefused(Exception):
    """A confined tool named a path it may not use (the model sees the message)."""


@attrs.frozen(kw_only=True)
class Confinement:
    """Where a client token's session may read and write.

    Attributes:
        roots: folders its file tools may name (realpaths are compared).
        hidden: folders inside them it may not name (the host's session and state folders,
            the agent dir).
        sandbox: the argv bash runs under (``sandboxCommand``), empty: none configured.
    """

    roots: tuple[str, ...]
    hidden: tuple[str, ...] = ()
    sandbox: tuple[str, ...] = ()

    def check(self, path: str, *, writing: bool) -> str:
        """The real path of ``path`` (already absolute), if the session may use it.

        Blocking (``realpath`` reads the file system): run it in a worker thread.

        Raises:
            PathRefused: outside the roots, inside a hidden folder, or (``writing``) a
                protected file.
        """
        resolved = os.path.realpath(path)
        root = next((r for r in _real(self.roots) if _inside(resolved, r)), None)
        if root is None:
            raise PathRefused(
                f"Path {path} resolves to {resolved}, outside the folders this session may use"
            )
        if any(_inside(resolved, folder) for folder in _real(self.hidden)):
            raise PathRefused(f"Path {path} is in a folder of the host this session may not use")
        # What lies above the root is the host's choice; below it, the session's.
        named = os.path.basename(os.path.normpath(path))
        if writing and (is_protected(os.path.relpath(resolved, root)) or is_protected(named)):
            raise PathRefused(
                f"Path {path} is protected: a client session may not write context files "
                "(AGENTS.md, SYSTEM.md ...), settings, skills, prompts or extensions"
            )
        return resolved


def is_protected(path: str) -> bool:
    """Whether ``path`` names a file a confined session may not write (see
    :data:`PROTECTED_NAMES`, :data:`PROTECTED_FOLDERS`)."""
    parts = [part.lower() for part in path.split(os.sep) if part and part != "."]
    if parts and parts[-1] in PROTECTED_NAMES:
        return True
    return any(part in PROTECTED_FOLDERS for part in parts)


def _real(folders: Iterable[str]) -> list[str]:
    return [os.path.realpath(folder) for folder in folders]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class ConfinedTool(AgentTool):
    """A built-in file tool whose ``path`` argument is checked by a :class:`Confinement`
    before the tool runs; it is otherwise the wrapped tool (name, schema, output)."""

    def __init__(self, inner: AgentTool, confinement: Confinement, cwd: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.label = inner.label
        self.description = inner.description
        self.parameters = inner.parameters
        self.execution_mode = inner.execution_mode
        self._confinement = confinement
        self._cwd = cwd
        self._writing = inner.name in _WRITING_TOOLS

    def prepare_arguments(self, args: Any) -> Any:
        return self.inner.prepare_arguments(args)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        path = params.get("path")
        # grep, find and ls default to the session's folder (inside a root by construction).
        target = path if isinstance(path, str) and path else "."
        await run_file_work(self._check, target)
        return await self.inner.execute(call_id, params, on_update)

    def _check(self, path: str) -> None:
        self._confinement.check(resolve_to_cwd(path, self._cwd), writing=self._writing)


_FILE_TOOLS: Final = frozenset({"read", "write", "edit", "grep", "find", "ls"})


def confine_tools(
    tools: Sequence[AgentTool], confinement: Confinement, cwd: str
) -> tuple[AgentTool, ...]:
    """``tools`` with each built-in file tool wrapped in a :class:`ConfinedTool` (``bash``
    is confined by its operations, other tools are the host's own extensions')."""
    return tuple(
        ConfinedTool(tool, confinement, cwd) if tool.name in _FILE_TOOLS else tool for tool in tools
    )


def sandbox_command(value: object) -> tuple[str, ...]:
    """The ``sandboxCommand`` setting as an argv prefix: a list of strings, or one string
    split as a shell would (``"bwrap --ro-bind / / --"``); unset: empty (no sandbox).

    Raises:
        UsageError: set to anything else: a confined session is not opened with a sandbox
            it cannot read (its bash would run unconfined).
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return tuple(value)
    raise UsageError(
        "Invalid setting sandboxCommand: expected a list of strings or a string; "
        "a client session is not opened without the sandbox it names"
    )
