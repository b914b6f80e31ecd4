"""Shared pieces of compaction and branch summarisation: file tracking and serialisation.

* File operations: the ``read``/``write``/``edit`` tool calls of the summarised messages give
  the ``<read-files>`` / ``<modified-files>`` lists appended to a summary and the
  ``readFiles`` / ``modifiedFiles`` of its ``details`` (tracked cumulatively across summaries).
* :func:`serialize_conversation` renders messages as tagged text so the summarising model
  reads a transcript rather than continuing a conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs
import orjson

from pitrio.providers import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "FileOperations",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "format_file_operations",
    "serialize_conversation",
]

TOOL_RESULT_MAX_CHARS: Final = 2000
"""Characters of a tool result kept when serialising for a summary (pi's limit)."""


# --------------------------------------------------------------------------- file operations


@attrs.define
class FileOperations:
    """Paths touched by ``read``, ``write`` and ``edit`` tool calls (insertion-ordered sets)."""

    read: dict[str, None] = attrs.field(factory=dict)
    written: dict[str, None] = attrs.field(factory=dict)
    edited: dict[str, None] = attrs.field(factory=dict)

    def add_details(self, details: Any) -> None:
        """Take the ``readFiles``/``modifiedFiles`` of a previous summary's ``details``."""
        if not isinstance(details, dict):
            return
        read = details.get("readFiles")
        if isinstance(read, list):
            for path in read:
                if isinstance(path, str):
                    self.read[path] = None
        modified = details.get("modifiedFiles")
        if isinstance(modified, list):
            for path in modified:
                if isinstance(path, str):
                    self.edited[path] = None


def extract_file_ops_from_message(message: object, ops: FileOperations) -> None:
    """Record the file paths of ``message``'s ``read``/``write``/``edit`` tool calls."""
    if not isinstance(message, AssistantMessage):
        return
    for block in message.content:
        if not isinstance(block, ToolCall):
            continue
        path = block.arguments.get("path") if isinstance(block.arguments, dict) else None
        if not isinstance(path, str) or not path:
            continue
        if block.name == "read":
            ops.read[path] = None
        elif block.name == "write":
            ops.written[path] = None
        elif block.name == "edit":
            ops.edited[path] = None


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """Return ``(read_files, modified_files)``: sorted, read-only files exclude modified ones."""
    modified = set(ops.edited) | set(ops.written)
    read_only = sorted(path for path in ops.read if path not in modified)
    return read_only, sorted(modified)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """Return the ``<read-files>``/``<modified-files>`` sections appended to a summary."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


# --------------------------------------------------------------------------- serialisation


def _js_json(value: Any) -> str:
    # JSON.stringify's compact form (orjson writes the same separators).
    return orjson.dumps(value).decode()


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[... {len(text) - limit} more characters truncated]"


def _text_of(blocks: Iterable[object]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


def serialize_conversation(messages: Sequence[Message]) -> str:
    """Render LLM messages as ``[User]: ...`` / ``[Assistant]: ...`` text for a summariser.

    Call :func:`~pitrio.sessions.convert_to_llm` first for the coding-agent message kinds.
    Tool results are cut to :data:`TOOL_RESULT_MAX_CHARS` characters.
    """
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            content = message.content
            text = content if isinstance(content, str) else _text_of(content)
            if text:
                parts.append(f"[User]: {text}")
        elif isinstance(message, AssistantMessage):
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[str] = []
            for block in message.content:
                if isinstance(block, TextContent):
                    texts.append(block.text)
                elif isinstance(block, ThinkingContent):
                    thinking.append(block.thinking)
                elif isinstance(block, ToolCall):
                    args = block.arguments if isinstance(block.arguments, dict) else {}
                    rendered = ", ".join(f"{key}={_js_json(value)}" for key, value in args.items())
                    calls.append(f"{block.name}({rendered})")
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(message, ToolResultMessage):
            text = _text_of(message.content)
            if text:
                parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)
