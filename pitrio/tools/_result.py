"""pi-agent-core's ``AgentToolResult``: what a tool returns and what it streams as updates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import attrs

from pitrio.codec import extra_field, wire
from pitrio.providers import ImageContent, TextContent


def _content(
    content: Iterable[TextContent | ImageContent],
) -> tuple[TextContent | ImageContent, ...]:
    return content if isinstance(content, tuple) else tuple(content)


@wire
@attrs.frozen(kw_only=True)
class AgentToolResult:
    """The outcome (or a partial update) of one tool execution.

    On the wire it is pi's ``{content, details, terminate?}``. ``details`` is left out when it is
    ``None`` (pi's ``undefined``); pi's own results always carry one, usually ``{}``.
    """

    content: tuple[TextContent | ImageContent, ...] = attrs.field(converter=_content)
    """Text and image blocks sent back to the model (any iterable is accepted)."""
    details: Any = None
    """Structured data for logs and UIs; the model never sees it."""
    terminate: bool | None = None
    """Hint to stop after this tool batch; the agent stops only if every result in the batch
    sets it to ``True``."""
    extra: dict[str, Any] | None = extra_field()


ToolUpdateCallback: TypeAlias = Callable[[AgentToolResult], None]
"""Receives a tool's partial results while it runs (pi's ``AgentToolUpdateCallback``).

It is synchronous and must return quickly: the agent turns each call into a
``tool_execution_update`` event and never blocks the tool on it.
"""


def text_result(text: str, details: Any = None) -> AgentToolResult:
    """Return a result with a single text block.

    Args:
        text: the text the model sees.
        details: optional structured data for logs and UIs.
    """
    return AgentToolResult(content=(TextContent(text=text),), details=details)


def error_result(message: str) -> AgentToolResult:
    """Return pi's error tool result, ``{content: [{type: "text", text: message}], details: {}}``.

    The agent sends this (with ``isError: true``) when a tool is missing, its arguments are
    invalid, a hook blocks it, or it raises.
    """
    return AgentToolResult(content=(TextContent(text=message),), details={})
