"""Cross-provider message handoff: make a conversation replayable on a (possibly different) model.

A conversation may mix responses from several providers and models. Before a provider sends
the history it calls :func:`transform_messages`, which ports pi-ai 0.73.1's
``transformMessages``:

* Images in user messages and tool results become a text placeholder when the target model
  does not accept images (one placeholder per run of adjacent images).
* Assistant messages from the same model (same provider, API and model id) keep their blocks
  as they are, signatures included. From any other model:

  - redacted thinking (opaque, encrypted) is dropped;
  - empty thinking is dropped, other thinking becomes a plain text block;
  - text blocks lose their provider signature;
  - tool calls lose their Google thought signature and get their id rewritten by the
    provider's ``normalize_tool_call_id`` callback; later tool results follow the new id.

  A same-model thinking block with an empty text is kept only when it carries a signature
  (OpenAI's encrypted reasoning).
* Assistant messages that ended in ``error`` or ``aborted`` are left out: they are incomplete
  turns, and replaying them can make the provider reject the request.
* A tool call that has no result before the next assistant or user message, or before the end
  of the conversation, gets a synthetic error result ``"No result provided"``, because every
  provider requires a result for each call.

The function is pure: it never mutates its inputs (they are frozen) and returns the original
message objects wherever nothing had to change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeAlias, TypeVar

import attrs

from pitrio.providers._messages import (
    AssistantContentBlock,
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContentBlock,
    UserMessage,
)
from pitrio.providers._stream import now_ms

NormalizeToolCallId: TypeAlias = Callable[[str, Model, AssistantMessage], str]
"""A provider's tool-call id rewriter: ``(id, target model, source assistant message) -> id``.

Called only for tool calls made by a different model than the target, e.g. to shorten the
450-character ids of the OpenAI Responses API to Anthropic's ``^[a-zA-Z0-9_-]{1,64}$``.
"""

_WithImages = TypeVar("_WithImages", UserMessage, ToolResultMessage)

NO_RESULT_PROVIDED: Final = "No result provided"
"""Text of the synthetic error result given to a tool call that never got one."""

NON_VISION_USER_IMAGE_PLACEHOLDER: Final = "(image omitted: model does not support images)"
"""Replaces images in user messages for a model whose ``input`` lacks ``"image"``."""

NON_VISION_TOOL_IMAGE_PLACEHOLDER: Final = "(tool image omitted: model does not support images)"
"""Replaces images in tool results for a model whose ``input`` lacks ``"image"``."""


def transform_messages(
    messages: Iterable[Message],
    model: Model,
    normalize_tool_call_id: NormalizeToolCallId | None = None,
) -> list[Message]:
    """Prepare a conversation for replay on ``model`` (see the module docstring).

    Args:
        messages: the conversation, oldest first; it is not modified.
        model: the model the conversation is about to be sent to.
        normalize_tool_call_id: the target provider's tool-call id rewriter, applied to tool
            calls from other models; ``None`` keeps ids as they are.

    Returns:
        A new list; unchanged messages are the same objects as in ``messages``.
    """
    images_ok = "image" in model.input
    id_map: dict[str, str] = {}
    transformed: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            transformed.append(_transform_assistant(message, model, normalize_tool_call_id, id_map))
        elif isinstance(message, ToolResultMessage):
            if not images_ok:
                message = _without_images(message, NON_VISION_TOOL_IMAGE_PLACEHOLDER)
            new_id = id_map.get(message.tool_call_id)
            if new_id is not None and new_id != message.tool_call_id:
                message = attrs.evolve(message, tool_call_id=new_id)
            transformed.append(message)
        else:
            if not images_ok and not isinstance(message.content, str):
                message = _without_images(message, NON_VISION_USER_IMAGE_PLACEHOLDER)
            transformed.append(message)
    return _answer_orphaned_tool_calls(transformed)


def _is_same_model(message: AssistantMessage, model: Model) -> bool:
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def _transform_assistant(
    message: AssistantMessage,
    model: Model,
    normalize_tool_call_id: NormalizeToolCallId | None,
    id_map: dict[str, str],
) -> AssistantMessage:
    same = _is_same_model(message, model)
    content: list[AssistantContentBlock] = []
    changed = False
    for block in message.content:
        new = _transform_block(block, same, model, message, normalize_tool_call_id, id_map)
        if new is not block:
            changed = True
        if new is not None:
            content.append(new)
    return attrs.evolve(message, content=content) if changed else message


def _transform_block(
    block: AssistantContentBlock,
    same: bool,
    model: Model,
    message: AssistantMessage,
    normalize_tool_call_id: NormalizeToolCallId | None,
    id_map: dict[str, str],
) -> AssistantContentBlock | None:
    if isinstance(block, ThinkingContent):
        if block.redacted:
            # Opaque encrypted reasoning only the model that produced it can read.
            return block if same else None
        if same and block.thinking_signature:
            return block  # kept even when empty: OpenAI's encrypted reasoning has no text
        if not block.thinking.strip():
            return None
        return block if same else TextContent(text=block.thinking)
    if isinstance(block, TextContent):
        # pi rebuilds the block from its text alone, dropping signature and unknown keys.
        return block if same else TextContent(text=block.text)
    if same:
        return block
    call = block
    if call.thought_signature:
        call = attrs.evolve(call, thought_signature=None)
    if normalize_tool_call_id is not None:
        new_id = normalize_tool_call_id(block.id, model, message)
        if new_id != block.id:
            id_map[block.id] = new_id
            call = attrs.evolve(call, id=new_id)
    return call


def _replace_images(
    content: Sequence[UserContentBlock], placeholder: str
) -> tuple[UserContentBlock, ...] | None:
    """Return ``content`` with image runs replaced by ``placeholder``, or ``None`` if no image."""
    if not any(isinstance(block, ImageContent) for block in content):
        return None
    result: list[UserContentBlock] = []
    after_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not after_placeholder:
                result.append(TextContent(text=placeholder))
            after_placeholder = True
            continue
        result.append(block)
        after_placeholder = block.text == placeholder
    return tuple(result)


def _without_images(message: _WithImages, placeholder: str) -> _WithImages:
    if isinstance(message.content, str):
        return message
    content = _replace_images(message.content, placeholder)
    return message if content is None else attrs.evolve(message, content=content)


def _answer_orphaned_tool_calls(messages: list[Message]) -> list[Message]:
    """Drop errored/aborted assistant turns and give unanswered tool calls an error result."""
    result: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()

    def flush() -> None:
        nonlocal pending, answered
        if not pending:
            return
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=(TextContent(text=NO_RESULT_PROVIDED),),
                        is_error=True,
                        timestamp=now_ms(),
                    )
                )
        pending = []
        answered = set()

    for message in messages:
        if isinstance(message, AssistantMessage):
            flush()
            if message.stop_reason in ("error", "aborted"):
                continue
            calls = message.tool_calls()
            if calls:
                pending = calls
                answered = set()
            result.append(message)
        elif isinstance(message, ToolResultMessage):
            # pi 0.73.1 keeps every tool result, even one whose call was in a skipped turn.
            answered.add(message.tool_call_id)
            result.append(message)
        else:
            flush()
            result.append(message)
    flush()
    return result
