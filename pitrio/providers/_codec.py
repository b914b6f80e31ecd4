"""The providers layer's wire codec: pi-ai's messages, content blocks and stream events.

Built once, here, after the types are defined, and sealed: nothing above this layer can change
what it knows (tools, actors and sessions derive their own codecs from it). Every module of this
layer encodes and decodes with :data:`PROVIDERS_CODEC`.
"""

from __future__ import annotations

from typing import Any, Final

from pitrio.codec import WireCodec, WireFormatError, make_codec
from pitrio.providers._events import ASSISTANT_MESSAGE_EVENT_TYPES, AssistantMessageEvent
from pitrio.providers._messages import (
    AssistantContentBlock,
    AssistantMessage,
    ContentBlock,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContentBlock,
    UserMessage,
)
from pitrio.providers._partial import PartialAssistantMessage

__all__ = ["PROVIDERS_CODEC"]


def _build() -> WireCodec:
    codec = make_codec(name="providers")

    def decode_user_content(data: Any) -> str | tuple[UserContentBlock, ...]:
        # pi's UserMessage.content is a plain string or a list of text/image blocks.
        if isinstance(data, str):
            return data
        if isinstance(data, list):
            return tuple(codec.from_wire(UserContentBlock, block) for block in data)
        raise WireFormatError(
            f"user content must be a string or a list of blocks, got {data!r}",
            type_name="UserMessage",
        )

    codec.register_type(str | tuple[UserContentBlock, ...], decode=decode_user_content)
    codec.register_tagged_union(UserContentBlock, "type", [TextContent, ImageContent])
    codec.register_tagged_union(
        AssistantContentBlock, "type", [TextContent, ThinkingContent, ToolCall]
    )
    codec.register_tagged_union(
        ContentBlock, "type", [TextContent, ThinkingContent, ImageContent, ToolCall]
    )
    codec.register_tagged_union(Message, "role", [UserMessage, AssistantMessage, ToolResultMessage])
    # A partial message (message_start/update while the model streams) is written as the
    # AssistantMessage it is so far, and read back as one.
    codec.register_type(
        PartialAssistantMessage, encode=lambda partial: codec.to_wire(partial.to_message())
    )
    codec.register_type(
        AssistantMessage | PartialAssistantMessage,
        decode=lambda data: codec.from_wire(AssistantMessage, data),
    )
    codec.register_tagged_union(AssistantMessageEvent, "type", ASSISTANT_MESSAGE_EVENT_TYPES)
    return codec.seal()


PROVIDERS_CODEC: Final = _build()
"""The providers layer's codec (sealed)."""
