"""The ContextEnvelope of seed 001, for the layers above the sessions layer.

One import point for the envelope (:class:`ContextEnvelope` and its parts), the patch ops,
:func:`apply_patch`, the ``context`` and ``message_end`` results, the wire forms and the
``/context`` views (:mod:`pitrio.sessions._context_view`).
"""

from __future__ import annotations

from pitrio.sessions._context_ops import (
    CONTEXT_PATCH_OP_TYPES,
    CompactionApplyOp,
    ContextPatchOp,
    ContextTransformDisplay,
    MessagesCachedReplaceOp,
    MessagesUncachedAppendOp,
    OptionsSetOp,
    SystemPart,
    SystemPartRemoveOp,
    SystemPartSetOp,
    SystemPartsReplaceOp,
    ToolDefinition,
    ToolsRemoveOp,
    ToolsReplaceOp,
)
from pitrio.sessions._envelope import (
    ContextEnvelope,
    ContextMessages,
    ContextMeta,
    ContextPatchError,
    ContextReason,
    ContextResult,
    GenerationOptions,
    MessageEndResult,
    SystemPrompt,
    apply_patch,
    replace_messages,
    unknown_tool_names,
)
from pitrio.sessions._envelope_wire import decode_context_result, decode_patch, envelope_to_wire

__all__ = [
    "CONTEXT_PATCH_OP_TYPES",
    "CompactionApplyOp",
    "ContextEnvelope",
    "ContextMessages",
    "ContextMeta",
    "ContextPatchError",
    "ContextPatchOp",
    "ContextReason",
    "ContextResult",
    "ContextTransformDisplay",
    "GenerationOptions",
    "MessageEndResult",
    "MessagesCachedReplaceOp",
    "MessagesUncachedAppendOp",
    "OptionsSetOp",
    "SystemPart",
    "SystemPartRemoveOp",
    "SystemPartSetOp",
    "SystemPartsReplaceOp",
    "SystemPrompt",
    "ToolDefinition",
    "ToolsRemoveOp",
    "ToolsReplaceOp",
    "apply_patch",
    "decode_context_result",
    "decode_patch",
    "envelope_to_wire",
    "replace_messages",
    "unknown_tool_names",
]
