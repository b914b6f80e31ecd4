"""``pitrio --export FILE [OUT]``: a session file as one self-contained HTML page.

pi 0.73.1 writes an interactive page (its TUI renderer in JavaScript, the session embedded);
pitrio writes static HTML with inline CSS, no script and nothing fetched: the header, then the
current branch (from the first entry to the last one appended) with user and assistant
messages, thinking, tool calls with their arguments, tool results (errors marked), user bash
runs, summaries of compactions and branches, model and thinking-level changes. Images are
inlined as ``data:`` URLs. Every piece of session text is HTML-escaped.

As in pi, the page goes to ``OUT``, else ``pitrio-session-<file name>.html`` in the current
directory, and the file is only read (an older session version is migrated in memory).
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pitrio._exceptions import PitrioError
from pitrio.codec import to_wire
from pitrio.sessions import SessionError, load_session_file

OUTPUT_PREFIX: Final = "pitrio-session-"

CSS: Final = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
  background: #f6f7f9; color: #1d2430; }
main { max-width: 58rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; }
header { border-bottom: 1px solid #d8dde5; margin-bottom: 1.25rem; }
h1 { font-size: 1.35rem; margin: 0 0 .35rem; }
.meta { color: #5b6575; font-size: .85rem; }
.entry { background: #fff; border: 1px solid #dde2ea; border-radius: 8px; margin: .75rem 0;
  padding: .6rem .9rem; }
.entry > .role { font-size: .75rem; font-weight: 600; letter-spacing: .04em;
  text-transform: uppercase; color: #5b6575; margin-bottom: .3rem; }
.user { border-left: 4px solid #3b7ddd; }
.assistant { border-left: 4px solid #2f9e6f; }
.toolResult { border-left: 4px solid #8a63d2; background: #fbfaff; }
.toolResult.error { border-left-color: #d64545; background: #fff8f8; }
.bashExecution { border-left: 4px solid #b7791f; }
.summary { border-left: 4px solid #718096; background: #f9fafb; }
.note { color: #5b6575; font-size: .85rem; margin: .4rem .2rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { background: #f1f3f6; border-radius: 6px; padding: .5rem .7rem; margin: .4rem 0;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, Menlo,
  Consolas, monospace; }
details.thinking { color: #5b6575; font-style: italic; margin: .3rem 0; }
details.thinking summary { cursor: pointer; font-style: normal; font-size: .85rem; }
.tool-call { border: 1px dashed #b9a7e3; border-radius: 6px; padding: .3rem .6rem;
  margin: .4rem 0; }
.tool-name { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; }
.error-text { color: #b42323; }
img { max-width: 100%; border-radius: 4px; margin: .3rem 0; }
"""


class ExportError(PitrioError):
    """The session cannot be exported (missing, not a session, unwritable output).

    Attributes:
        path: the file concerned.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _text(text: str, css: str = "text") -> str:
    return f'<div class="{css}">{_e(text)}</div>'


def _image(block: Mapping[str, Any]) -> str:
    mime = str(block.get("mimeType", "image/png"))
    data = str(block.get("data", ""))
    return f'<img alt="image" src="data:{_e(mime)};base64,{_e(data)}">'


def _content(content: Any) -> str:
    """User or tool-result content: a string or text and image blocks."""
    if isinstance(content, str):
        return _text(content)
    parts = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(_text(str(block.get("text", ""))))
        elif block.get("type") == "image":
            parts.append(_image(block))
    return "".join(parts)


def _arguments(arguments: Any) -> str:
    return json.dumps(arguments, indent=2, ensure_ascii=False)


def _assistant(message: Mapping[str, Any]) -> str:
    parts = []
    for block in message.get("content", ()):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_text(str(block.get("text", ""))))
        elif kind == "thinking":
            thinking = str(block.get("thinking", ""))
            if block.get("redacted"):
                thinking = thinking or "(redacted)"
            parts.append(
                '<details class="thinking" open><summary>thinking</summary>'
                f"{_text(thinking)}</details>"
            )
        elif kind == "toolCall":
            parts.append(
                '<div class="tool-call">tool call <span class="tool-name">'
                f"{_e(block.get('name', ''))}</span>"
                f"<pre>{_e(_arguments(block.get('arguments', {})))}</pre></div>"
            )
    stop = message.get("stopReason")
    if stop in ("error", "aborted"):
        error = message.get("errorMessage") or f"Request {stop}"
        parts.append(_text(str(error), "text error-text"))
    model = f"{message.get('provider', '')}/{message.get('model', '')}".strip("/")
    usage = message.get("usage")
    tokens = ""
    if isinstance(usage, dict):
        tokens = f" · {usage.get('input', 0)} in / {usage.get('output', 0)} out tokens"
    role = f"assistant <span class='meta'>{_e(model)}{_e(tokens)}</span>"
    return _entry("assistant", role, "".join(parts))


def _entry(css: str, role: str, body: str) -> str:
    return f'<section class="entry {css}"><div class="role">{role}</div>{body}</section>\n'


def _message(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "user":
        return _entry("user", "user", _content(message.get("content", "")))
    if role == "assistant":
        return _assistant(message)
    if role == "toolResult":
        failed = bool(message.get("isError"))
        label = f'tool result <span class="tool-name">{_e(message.get("toolName", ""))}</span>' + (
            " (error)" if failed else ""
        )
        return _entry(
            "toolResult error" if failed else "toolResult",
            label,
            _content(message.get("content", "")),
        )
    if role == "bashExecution":
        code = message.get("exitCode")
        status = "cancelled" if message.get("cancelled") else f"exit code {code}"
        body = f"<pre>$ {_e(message.get('command', ''))}\n{_e(message.get('output', ''))}</pre>"
        return _entry("bashExecution", f"user bash · {_e(status)}", body)
    if role == "custom":
        if not message.get("display", True):
            return ""
        label = f"custom · {_e(message.get('customType', ''))}"
        return _entry("summary", label, _content(message.get("content", "")))
    if role in ("branchSummary", "compactionSummary"):
        return _entry("summary", _e(role), _text(str(message.get("summary", ""))))
    return _entry("summary", _e(role or "message"), f"<pre>{_e(_arguments(message))}</pre>")


def _render_entry(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        return _message(entry["message"])
    if kind == "model_change":
        return (
            f'<p class="note">model: {_e(entry.get("provider"))}/{_e(entry.get("modelId"))}</p>\n'
        )
    if kind == "thinking_level_change":
        return f'<p class="note">thinking level: {_e(entry.get("thinkingLevel"))}</p>\n'
    if kind == "compaction":
        body = _text(str(entry.get("summary", "")))
        return _entry("summary", "compaction summary (earlier messages)", body)
    if kind == "branch_summary":
        return _entry("summary", "branch summary", _text(str(entry.get("summary", ""))))
    if kind == "custom_message" and entry.get("display", True):
        label = f"custom · {_e(entry.get('customType', ''))}"
        return _entry("summary", label, _content(entry.get("content", "")))
    return ""


def current_branch(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries from the root to the last one appended (the session's leaf)."""
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    if not entries or len(by_id) != len(entries):
        return entries
    branch = []
    current: dict[str, Any] | None = entries[-1]
    seen: set[str] = set()
    while current is not None and current["id"] not in seen:
        seen.add(current["id"])
        branch.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    branch.reverse()
    return branch


def render_session_html(header: Mapping[str, Any], entries: Iterable[dict[str, Any]]) -> str:
    """The page for a session's header and entries (pi's JSON objects)."""
    entry_list = list(entries)
    names = [
        str(e["name"])
        for e in entry_list
        if e.get("type") == "session_info" and isinstance(e.get("name"), str) and e["name"]
    ]
    title = names[-1] if names else f"Session {header.get('id', '')}"
    branch = current_branch(entry_list)
    body = "".join(_render_entry(entry) for entry in branch)
    meta = (
        f"{_e(header.get('timestamp', ''))} · {_e(header.get('cwd', ''))} · "
        f"{len(branch)} entries on this branch of {len(entry_list)}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f'<header><h1>{_e(title)}</h1><p class="meta">{meta}</p></header>\n'
        f"{body}</main>\n</body>\n</html>\n"
    )


def export_session_file(path: str, output: str | None = None, *, cwd: str) -> str:
    """Write the HTML page of the session file ``path``; returns where it was written.

    Args:
        output: the page's path (relative to ``cwd``); default
            ``pitrio-session-<file name without .jsonl>.html`` in ``cwd``.

    Raises:
        ExportError: the file is missing or not a session, or the page cannot be written.
    """
    source = os.path.join(cwd, path)
    if not os.path.exists(source):
        raise ExportError(f"File not found: {path}", path)
    try:
        loaded = load_session_file(source, rewrite_migrated=False)
    except (SessionError, OSError) as exc:
        raise ExportError(f"Cannot export {path}: {exc}", path) from exc
    if loaded.header is None:
        raise ExportError(f"Cannot export {path}: the file is empty", path)
    page = render_session_html(to_wire(loaded.header), [to_wire(e) for e in loaded.entries])
    if output is None:
        name = os.path.basename(path)
        name = name.removesuffix(".jsonl")
        output = f"{OUTPUT_PREFIX}{name}.html"
    target = os.path.join(cwd, output)
    try:
        with open(target, "w", encoding="utf-8") as file:
            file.write(page)
    except OSError as exc:
        raise ExportError(f"Cannot write {output}: {exc.strerror or exc}", output) from exc
    return output
