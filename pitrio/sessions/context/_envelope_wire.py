"""The ContextEnvelope's wire forms: patch ops and ``context`` results decoded from JSON, and
the envelope as JSON (``/context --full``, RPC ``get_context``).

Kept apart from :mod:`pitrio.sessions.context._envelope` because it needs the sessions codec, which
registers the session event types, which name the envelope's types: the envelope module stays
below the codec so the three do not import each other in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pitrio.codec import WireFormatError
from pitrio.sessions.context._envelope import (
    ContextEnvelope,
    ContextPatchError,
    ContextPatchOp,
    ContextResult,
)
from pitrio.sessions.storage._codec import SESSIONS_CODEC
from pitrio.sessions.storage._context_ops import CONTEXT_PATCH_OP_TYPES, ContextTransformDisplay

__all__ = ["decode_context_result", "decode_patch", "envelope_to_wire"]


def decode_patch(data: Any) -> tuple[ContextPatchOp, ...]:
    """Decode patch ops from their wire form (a list of camelCase JSON objects; values may
    also be the envelope's objects, such as its messages).

    Raises:
        ContextPatchError: ``data`` is not a list of ops of a known ``op`` and shape.
    """
    if isinstance(data, Mapping) or not isinstance(data, Sequence) or isinstance(data, str):
        raise ContextPatchError(f"a patch is a list of ops, got {type(data).__name__}")
    ops: list[ContextPatchOp] = []
    for index, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise ContextPatchError("an op is a JSON object", index=index)
        name = item.get("op")
        if not isinstance(name, str) or name not in CONTEXT_PATCH_OP_TYPES:
            known = ", ".join(CONTEXT_PATCH_OP_TYPES)
            raise ContextPatchError(
                f"unknown op {name!r} (expected one of: {known})",
                op=name if isinstance(name, str) else None,
                index=index,
            )
        try:
            # An op written by hand may hold objects (the envelope's own messages) beside
            # JSON: to_wire makes it all JSON (and leaves JSON as it is).
            data_item = SESSIONS_CODEC.to_wire(dict(item))
            ops.append(SESSIONS_CODEC.from_wire(CONTEXT_PATCH_OP_TYPES[name], data_item))
        except (WireFormatError, TypeError, ValueError, KeyError) as exc:
            raise ContextPatchError(f"malformed: {exc}", op=name, index=index) from exc
    return tuple(ops)


def decode_context_result(data: Mapping[str, Any]) -> ContextResult:
    """Decode a ``context`` handler's result from its wire form (``patch``, ``transformerName``,
    ``display``).

    Raises:
        ContextPatchError: the patch or the display is malformed.
    """
    display = data.get("display")
    try:
        decoded = (
            None if display is None else SESSIONS_CODEC.from_wire(ContextTransformDisplay, display)
        )
    except (WireFormatError, TypeError, ValueError, KeyError) as exc:
        raise ContextPatchError(f"malformed display: {exc}") from exc
    name = data.get("transformerName")
    return ContextResult(
        patch=decode_patch(data.get("patch") or []),
        transformer_name=name if isinstance(name, str) else None,
        display=decoded,
    )


def envelope_to_wire(envelope: ContextEnvelope) -> dict[str, Any]:
    """The envelope as JSON-ready data (camelCase), for ``/context --full`` and RPC."""
    to_wire = SESSIONS_CODEC.to_wire
    meta = envelope.meta
    options = envelope.options
    return {
        "system": {
            "parts": [to_wire(part) for part in envelope.system.parts],
            "compiled": envelope.system.compiled,
        },
        "tools": [to_wire(tool) for tool in envelope.tools],
        "messages": {
            "cached": [to_wire(m) for m in envelope.messages.cached],
            "uncached": [to_wire(m) for m in envelope.messages.uncached],
        },
        "options": {
            key: value
            for key, value in (
                ("reasoning", options.reasoning),
                ("temperature", options.temperature),
                ("maxTokens", options.max_tokens),
            )
            if value is not None
        },
        "meta": {
            key: value
            for key, value in (
                ("model", None if meta.model is None else f"{meta.model.provider}/{meta.model.id}"),
                ("limit", meta.limit),
                ("turnIndex", meta.turn_index),
                ("requestIndex", meta.request_index),
                ("sessionId", meta.session_id),
            )
            if value is not None
        },
    }
