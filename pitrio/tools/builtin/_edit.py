"""The ``edit`` tool (pi 0.73.1 ``core/tools/edit.ts``): exact-text replacements in one file.

Each ``edits[]`` entry is matched against the original file (see
:mod:`pitrio.tools.builtin._edit_diff` for the matching rules). A UTF-8 BOM is kept, and the
file keeps its line endings: CRLF when its first line break is CRLF, LF otherwise. The
``details`` carry pi's numbered diff and the first changed line.

Arguments in older shapes are accepted by :meth:`EditTool.prepare_arguments`: ``edits`` sent
as a JSON string, pi's single ``oldText``/``newText``, and the seed's ``old_text``/``new_text``.
"""

from __future__ import annotations

import os
from typing import Any, Final

import attrs
import orjson

from pitrio.providers import TextContent
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback
from pitrio.tools._tool import AgentTool
from pitrio.tools.builtin._edit_diff import (
    Replacement,
    apply_edits_to_normalized_content,
    detect_line_ending,
    generate_diff_string,
    normalize_to_lf,
    restore_line_endings,
    strip_bom,
)
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._io import error_code, fs_error, run_sync
from pitrio.tools.builtin._mutation_queue import FileMutationQueue, default_mutation_queue
from pitrio.tools.builtin._paths import resolve_to_cwd

EDIT_DESCRIPTION: Final = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a "
    "unique, non-overlapping region of the original file. If two changes affect the same block "
    "or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not "
    "include large unchanged regions just to connect distant changes."
)

EDIT_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to edit (relative or absolute)",
        },
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": (
                            "Exact text for one targeted replacement. It must be unique in the "
                            "original file and must not overlap with any other edits[].oldText "
                            "in the same call."
                        ),
                    },
                    "newText": {
                        "type": "string",
                        "description": "Replacement text for this targeted edit.",
                    },
                },
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
            "description": (
                "One or more targeted replacements. Each edit is matched against the original "
                "file, not incrementally. Do not include overlapping or nested edits. If two "
                "changes touch the same block or nearby lines, merge them into one edit instead."
            ),
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}


def prepare_edit_arguments(args: Any) -> Any:
    """Bring older argument shapes to ``{path, edits: [{oldText, newText}]}``.

    ``edits`` given as a JSON string is parsed (some models send it so); a top-level
    ``oldText``/``newText`` pair (pi's legacy form) or ``old_text``/``new_text`` pair (the seed's
    form) becomes one more entry of ``edits``.
    """
    if not isinstance(args, dict):
        return args
    if isinstance(args.get("edits"), str):
        try:
            parsed = orjson.loads(args["edits"])
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
    for old_key, new_key in (("oldText", "newText"), ("old_text", "new_text")):
        old_text, new_text = args.get(old_key), args.get(new_key)
        if isinstance(old_text, str) and isinstance(new_text, str):
            edits = list(args["edits"]) if isinstance(args.get("edits"), list) else []
            edits.append({"oldText": old_text, "newText": new_text})
            rest = {k: v for k, v in args.items() if k not in (old_key, new_key)}
            return {**rest, "edits": edits}
    return args


def _edit_file(absolute_path: str, path: str, edits: list[Replacement]) -> tuple[str, str]:
    """Apply ``edits`` to the file and write it back (runs in a worker thread).

    Returns:
        The LF-normalised content before and after, for the diff.
    """
    if not os.access(absolute_path, os.R_OK | os.W_OK):
        try:
            os.stat(absolute_path)
            code = "EACCES"
        except OSError as exc:
            code = error_code(exc)
        raise FileToolError(
            f"Could not edit file: {path}. Error code: {code}.",
            tool_name="edit",
            path=path,
            code=code,
        )
    try:
        with open(absolute_path, "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except IsADirectoryError as exc:
        raise fs_error("edit", exc, "read", None) from exc
    except OSError as exc:
        raise fs_error("edit", exc, "open", absolute_path) from exc
    bom, content = strip_bom(raw)
    ending = detect_line_ending(content)
    base, new = apply_edits_to_normalized_content(normalize_to_lf(content), edits, path)
    final = bom + restore_line_endings(new, ending)
    try:
        with open(absolute_path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(final)
    except OSError as exc:
        raise fs_error("edit", exc, "open", absolute_path) from exc
    return base, new


@attrs.frozen(kw_only=True, eq=False)
class EditTool(AgentTool):
    """pi's ``edit`` tool, editing paths relative to :attr:`cwd`."""

    cwd: str
    """Directory that relative paths are resolved against."""
    mutation_queue: FileMutationQueue | None = None
    """Queue that serialises edits per file; ``None`` uses the run's shared one."""
    name: str = "edit"
    label: str = "edit"
    description: str = EDIT_DESCRIPTION
    parameters: dict[str, Any] = attrs.field(factory=lambda: dict(EDIT_PARAMETERS))
    execution_mode: None = None

    def prepare_arguments(self, args: Any) -> Any:
        """Accept older argument shapes; see :func:`prepare_edit_arguments`."""
        return prepare_edit_arguments(args)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        """Apply ``params["edits"]`` to ``params["path"]``."""
        raw_edits = params.get("edits")
        if not isinstance(raw_edits, list) or not raw_edits:
            raise FileToolError(
                "Edit tool input is invalid. edits must contain at least one replacement.",
                tool_name="edit",
            )
        path: str = params["path"]
        edits = [Replacement(e["oldText"], e["newText"]) for e in raw_edits]
        absolute = resolve_to_cwd(path, self.cwd)
        queue = self.mutation_queue or default_mutation_queue()
        async with queue.hold(absolute):
            base, new = await run_sync(_edit_file, absolute, path, edits)
        diff = generate_diff_string(base, new)
        details: dict[str, Any] = {"diff": diff.diff}
        if diff.first_changed_line is not None:
            details["firstChangedLine"] = diff.first_changed_line
        text = f"Successfully replaced {len(edits)} block(s) in {path}."
        return AgentToolResult(content=(TextContent(text=text),), details=details)


def create_edit_tool(cwd: str, *, mutation_queue: FileMutationQueue | None = None) -> EditTool:
    """Return an ``edit`` tool for ``cwd`` (pi's ``createEditTool``)."""
    return EditTool(cwd=cwd, mutation_queue=mutation_queue)
