"""The ``write`` tool (pi 0.73.1 ``core/tools/write.ts``): create or overwrite a file.

Parent directories are created. The reply counts the content's length in UTF-16 code units,
as pi's ``content.length`` does, although it says "bytes".
"""

from __future__ import annotations

import os
from typing import Any, Final

import attrs

from pitrio.tools._result import AgentToolResult, ToolUpdateCallback, text_result
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._io import fs_error, run_sync
from pitrio.tools.builtin._mutation_queue import FileMutationQueue, default_mutation_queue
from pitrio.tools.builtin._paths import resolve_to_cwd
from pitrio.tools.builtin._truncate import utf16_len

WRITE_DESCRIPTION: Final = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
    "Automatically creates parent directories."
)

WRITE_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to write (relative or absolute)",
        },
        "content": {"type": "string", "description": "Content to write to the file"},
    },
    "required": ["path", "content"],
}


def _write(absolute_path: str, content: str) -> None:
    directory = os.path.dirname(absolute_path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise fs_error("write", exc, "mkdir", exc.filename or directory) from exc
    try:
        with open(absolute_path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(content)
    except OSError as exc:
        raise fs_error("write", exc, "open", absolute_path) from exc


@attrs.frozen(kw_only=True, eq=False)
class WriteTool(AgentTool):
    """pi's ``write`` tool, writing paths relative to :attr:`cwd`."""

    cwd: str
    """Directory that relative paths are resolved against."""
    mutation_queue: FileMutationQueue | None = None
    """Queue that serialises writes per file; ``None`` uses the run's shared one."""
    name: str = "write"
    label: str = "write"
    description: str = WRITE_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(WRITE_PARAMETERS))
    execution_mode: None = None

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Write ``params["content"]`` to ``params["path"]``."""
        path: str = params["path"]
        content: str = params["content"]
        absolute = resolve_to_cwd(path, self.cwd)
        queue = self.mutation_queue or default_mutation_queue()
        async with queue.hold(absolute):
            await run_sync(_write, absolute, content)
        return text_result(f"Successfully wrote {utf16_len(content)} bytes to {path}")


def create_write_tool(cwd: str, *, mutation_queue: FileMutationQueue | None = None) -> WriteTool:
    """Return a ``write`` tool for ``cwd`` (pi's ``createWriteTool``)."""
    return WriteTool(cwd=cwd, mutation_queue=mutation_queue)
