"""pi-coding-agent's built-in tools: read, write, edit, bash, grep, find, ls.

Part of the tools layer: imports :mod:`pitrio.tools`, :mod:`pitrio.providers` and below, never
``actors``, ``sessions`` or anything above. Each tool is an :class:`~pitrio.tools.AgentTool`
with pi 0.73.1's name, parameters, description, output text and ``details``; blocking file
work runs in worker threads under one shared limiter, and ``write``/``edit`` of one file are
serialised by a :class:`FileMutationQueue`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from pitrio._publish import publish as _publish
from pitrio.tools._tool import AgentTool as _AgentTool
from pitrio.tools.builtin._bash import BashTool as BashTool
from pitrio.tools.builtin._bash import OutputAccumulator as OutputAccumulator
from pitrio.tools.builtin._bash import SpawnContext as SpawnContext
from pitrio.tools.builtin._bash import create_bash_tool as create_bash_tool
from pitrio.tools.builtin._edit import EditTool as EditTool
from pitrio.tools.builtin._edit import create_edit_tool as create_edit_tool
from pitrio.tools.builtin._errors import FileToolError as FileToolError
from pitrio.tools.builtin._find import FindTool as FindTool
from pitrio.tools.builtin._find import create_find_tool as create_find_tool
from pitrio.tools.builtin._grep import GrepTool as GrepTool
from pitrio.tools.builtin._grep import create_grep_tool as create_grep_tool
from pitrio.tools.builtin._ls import LsTool as LsTool
from pitrio.tools.builtin._ls import create_ls_tool as create_ls_tool
from pitrio.tools.builtin._mutation_queue import FileMutationQueue as FileMutationQueue
from pitrio.tools.builtin._mutation_queue import default_mutation_queue as default_mutation_queue
from pitrio.tools.builtin._paths import resolve_to_cwd as resolve_to_cwd
from pitrio.tools.builtin._read import ReadTool as ReadTool
from pitrio.tools.builtin._read import create_read_tool as create_read_tool
from pitrio.tools.builtin._shell import BashExecutionError as BashExecutionError
from pitrio.tools.builtin._shell import BashOperations as BashOperations
from pitrio.tools.builtin._shell import LocalBashOperations as LocalBashOperations
from pitrio.tools.builtin._truncate import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from pitrio.tools.builtin._truncate import DEFAULT_MAX_LINES as DEFAULT_MAX_LINES
from pitrio.tools.builtin._truncate import TruncationResult as TruncationResult
from pitrio.tools.builtin._truncate import format_size as format_size
from pitrio.tools.builtin._truncate import truncate_head as truncate_head
from pitrio.tools.builtin._truncate import truncate_line as truncate_line
from pitrio.tools.builtin._truncate import truncate_tail as truncate_tail
from pitrio.tools.builtin._write import WriteTool as WriteTool
from pitrio.tools.builtin._write import create_write_tool as create_write_tool

_BUILTIN_TOOL_NAMES: Final = ("read", "bash", "edit", "write", "grep", "find", "ls")


def builtin_tool_names() -> list[str]:
    """Return the names of pi's built-in tools, in pi's order (``allToolNames``)."""
    return list(_BUILTIN_TOOL_NAMES)


def create_tool(name: str, cwd: str) -> _AgentTool:
    """Return the built-in tool called ``name`` for ``cwd`` (pi's ``createTool``).

    Raises:
        ValueError: ``name`` is not a built-in tool (``Unknown tool name: NAME``).
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"Unknown tool name: {name}")
    return factory(cwd)


def create_coding_tools(cwd: str) -> list[_AgentTool]:
    """Return pi's default tool set for ``cwd``: read, bash, edit, write (``createCodingTools``)."""
    return [
        create_tool(name, cwd) for name in ("read", "bash", "edit", "write") if name in _FACTORIES
    ]


def create_read_only_tools(cwd: str) -> list[_AgentTool]:
    """Return read, grep, find and ls for ``cwd`` (pi's ``createReadOnlyTools``)."""
    return [create_tool(name, cwd) for name in ("read", "grep", "find", "ls") if name in _FACTORIES]


def create_all_tools(cwd: str) -> dict[str, _AgentTool]:
    """Return every built-in tool for ``cwd`` by name (pi's ``createAllTools``)."""
    return {name: create_tool(name, cwd) for name in _BUILTIN_TOOL_NAMES if name in _FACTORIES}


# name -> factory(cwd); bash, grep and find register here from their own modules.
_FACTORIES: dict[str, Callable[[str], _AgentTool]] = {
    "read": create_read_tool,
    "edit": create_edit_tool,
    "write": create_write_tool,
    "ls": create_ls_tool,
    "bash": create_bash_tool,
    "grep": create_grep_tool,
    "find": create_find_tool,
}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "BashExecutionError",
    "BashOperations",
    "BashTool",
    "EditTool",
    "FileMutationQueue",
    "FileToolError",
    "FindTool",
    "GrepTool",
    "LocalBashOperations",
    "LsTool",
    "OutputAccumulator",
    "ReadTool",
    "SpawnContext",
    "TruncationResult",
    "WriteTool",
    "builtin_tool_names",
    "create_all_tools",
    "create_bash_tool",
    "create_coding_tools",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_only_tools",
    "create_read_tool",
    "create_tool",
    "create_write_tool",
    "default_mutation_queue",
    "format_size",
    "resolve_to_cwd",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

_publish(globals(), __all__)
