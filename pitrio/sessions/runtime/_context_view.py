"""``/context``: the effective ContextEnvelope and the transforms behind it, as text or JSON.

Seed 001's debugging surface. :func:`build_context_view` takes what the next request would
start from (the active path replayed; with ``ephemeral``, the ``ephemeral`` hooks run once on
it, nothing persisted) and the transforms of the active path (``context_transform`` entries and
legacy ``compaction`` entries, which stand for ``compaction_apply``). :func:`render_context`
writes the concise summary or, with ``full``, the whole envelope; :func:`context_to_wire` is the
JSON form (RPC ``get_context``).

A transform whose ``display.rendererId`` names a registered renderer is shown by it
(``renderer(transform, options) -> str``; ``options``: ``{"full": bool}``); otherwise by its
``display`` title, summary and markdown, or its transformer name and ops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
import structlog

from pitrio._exceptions import UsageError
from pitrio.actors import AgentMessage
from pitrio.sessions.context._envelope import ContextEnvelope
from pitrio.sessions.context._envelope_wire import envelope_to_wire
from pitrio.sessions.runtime._context_engine import ContextEngine
from pitrio.sessions.storage._entries import CompactionEntry, ContextTransformEntry, SessionEntry

__all__ = [
    "ContextCommand",
    "ContextRenderer",
    "ContextView",
    "build_context_view",
    "context_answer",
    "context_prompt_answer",
    "context_to_wire",
    "is_context_command",
    "parse_context_command",
    "render_context",
    "session_renderers",
]

log = structlog.get_logger(__name__)

ContextRenderer: TypeAlias = Callable[[ContextTransformEntry, Mapping[str, Any]], str]
"""An extension's text renderer for its transforms (``pi.register_context_transform_renderer``)."""

Transform: TypeAlias = ContextTransformEntry | CompactionEntry


@attrs.frozen(kw_only=True)
class ContextCommand:
    """A parsed ``/context`` command line."""

    full: bool = False
    ephemeral: bool = False


@attrs.frozen(kw_only=True)
class ContextView:
    """What ``/context`` shows: the envelope and the transforms of the active path."""

    envelope: ContextEnvelope
    transforms: tuple[Transform, ...]
    ephemeral: bool = False
    """Whether the ephemeral hooks were applied to :attr:`envelope`."""


def parse_context_command(text: str) -> ContextCommand | None:
    """``text`` as a ``/context [--full] [--ephemeral]`` command, or ``None`` if it is not one.

    Raises:
        UsageError: an argument other than the two flags.
    """
    words = text.strip().split()
    if not words or words[0] != "/context":
        return None
    unknown = [word for word in words[1:] if word not in ("--full", "--ephemeral")]
    if unknown:
        raise UsageError(
            f"/context: unknown argument {unknown[0]!r} (usage: /context [--full] [--ephemeral])"
        )
    return ContextCommand(full="--full" in words, ephemeral="--ephemeral" in words)


def _transforms(path: Sequence[SessionEntry]) -> tuple[Transform, ...]:
    return tuple(e for e in path if type(e) in (ContextTransformEntry, CompactionEntry))  # type: ignore[misc]


async def build_context_view(engine: ContextEngine, *, ephemeral: bool = False) -> ContextView:
    """The view of ``engine``'s session now (runs the ephemeral hooks once with ``ephemeral``;
    never persists anything)."""
    envelope = await engine.preview(ephemeral=ephemeral)
    return ContextView(
        envelope=envelope, transforms=_transforms(engine.path()), ephemeral=ephemeral
    )


# --------------------------------------------------------------------------- text


def _size(text: str) -> str:
    return f"{len(text)} chars, ~{(len(text) + 3) // 4} tokens"


def _message_line(message: AgentMessage) -> str:
    role = getattr(message, "role", "?")
    content = getattr(message, "content", None)
    if isinstance(content, str):
        text = content
    elif isinstance(content, Sequence):
        text = " ".join(str(getattr(block, "text", "") or "") for block in content).strip()
    else:
        text = str(getattr(message, "summary", "") or "")
    text = " ".join(text.split())
    return f"{role}: {text[:77] + '...' if len(text) > 80 else text}"


def _transform_lines(
    transform: Transform, renderers: Mapping[str, Callable[..., Any]], full: bool
) -> list[str]:
    if isinstance(transform, CompactionEntry):
        return [
            f"- compaction (compaction_apply, {transform.tokens_before} tokens before)",
            f"  kept from entry {transform.first_kept_entry_id}",
        ]
    ops = ", ".join(op.op for op in transform.patch) or "no ops"
    name = transform.transformer_name or "context"
    display = transform.display
    renderer = renderers.get(display.renderer_id or "") if display is not None else None
    if renderer is not None:
        try:
            rendered = str(renderer(transform, {"full": full}))
        except Exception:  # a renderer's bug must not break /context: fall back
            log.exception("context_renderer_failed", renderer_id=display and display.renderer_id)
        else:
            head = f"- {name} ({transform.reason}: {ops})"
            return [head, *("  " + line for line in rendered.splitlines())]
    if display is None:
        return [f"- {name} ({transform.reason}: {ops})"]
    lines = [f"- {display.title} [{name}] ({transform.reason}: {ops})"]
    if display.summary:
        lines.append(f"  {display.summary}")
    if display.markdown:
        lines.extend("  " + line for line in display.markdown.splitlines())
    return lines


def render_context(
    view: ContextView,
    *,
    full: bool = False,
    renderers: Mapping[str, Callable[..., Any]] | None = None,
) -> str:
    """``/context``'s text: the summary, or with ``full`` the whole envelope as JSON after it."""
    envelope = view.envelope
    renderers = renderers or {}
    lines = ["Context envelope" + (" (ephemeral hooks applied)" if view.ephemeral else "")]
    meta = envelope.meta
    if meta.model is not None:
        lines.append(f"Model: {meta.model.provider}/{meta.model.id}")
    lines.append(f"System prompt: {_size(envelope.system.compiled)}")
    lines.extend(f"  {part.name}: {_size(part.text)}" for part in envelope.system.parts)
    names = ", ".join(envelope.tool_names) or "none"
    lines.append(f"Tools ({len(envelope.tools)}): {names}")
    messages = envelope.messages
    lines.append(f"Messages: {len(messages.cached)} cached, {len(messages.uncached)} uncached")
    lines.extend(f"  (uncached) {_message_line(m)}" for m in messages.uncached)
    options = {k: v for k, v in envelope_to_wire(envelope)["options"].items() if v is not None}
    if options:
        lines.append("Options: " + ", ".join(f"{k}={v}" for k, v in options.items()))
    lines.append(f"Transforms on the active path ({len(view.transforms)}):")
    for transform in view.transforms:
        lines.extend(_transform_lines(transform, renderers, full))
    if not view.transforms:
        lines.append("  none")
    if full:
        lines.append("")
        lines.append(json.dumps(envelope_to_wire(envelope), indent=2, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def context_to_wire(view: ContextView) -> dict[str, Any]:
    """The view as JSON-ready data: ``envelope`` (:func:`envelope_to_wire`), ``transforms``
    (id, reason, transformerName, ops, display) and ``ephemeral``."""
    transforms: list[dict[str, Any]] = []
    for transform in view.transforms:
        if isinstance(transform, CompactionEntry):
            transforms.append(
                {"id": transform.id, "reason": "compaction", "ops": ["compaction_apply"]}
            )
            continue
        item: dict[str, Any] = {
            "id": transform.id,
            "reason": transform.reason,
            "transformerName": transform.transformer_name,
            "ops": [op.op for op in transform.patch],
        }
        display = transform.display
        if display is not None:
            item["display"] = {
                key: value
                for key, value in (
                    ("title", display.title),
                    ("summary", display.summary),
                    ("markdown", display.markdown),
                    ("rendererId", display.renderer_id),
                )
                if value is not None
            }
        transforms.append(item)
    return {
        "envelope": envelope_to_wire(view.envelope),
        "transforms": transforms,
        "ephemeral": view.ephemeral,
    }


# --------------------------------------------------------------------------- sessions


def is_context_command(text: str) -> bool:
    """Whether ``text`` is a ``/context`` command (valid or not)."""
    words = text.split(maxsplit=1)
    return bool(words) and words[0] == "/context"


def session_renderers(session: Any) -> Mapping[str, Callable[..., Any]]:
    """The ``/context`` renderers of ``session``'s hooks (an extension runner's), or none."""
    found = getattr(session.hooks, "context_transform_renderers", None)
    return found() if callable(found) else {}


async def context_answer(session: Any, *, full: bool, ephemeral: bool) -> dict[str, Any]:
    """RPC's answer for ``session`` (an AgentSession): :func:`context_to_wire` plus ``text``,
    the rendered view."""
    view = await build_context_view(session.context_engine, ephemeral=ephemeral)
    data = context_to_wire(view)
    data["text"] = render_context(view, full=full, renderers=session_renderers(session))
    return data


async def context_prompt_answer(session: Any, text: str) -> dict[str, Any]:
    """:func:`context_answer` for a ``/context [--full] [--ephemeral]`` prompt text.

    Raises:
        UsageError: the text has an unknown argument.
    """
    command = parse_context_command(text) or ContextCommand()
    return await context_answer(session, full=command.full, ephemeral=command.ephemeral)
