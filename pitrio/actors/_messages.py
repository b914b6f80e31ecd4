"""``AgentMessage``: what an agent's transcript holds (pi-agent-core ``AgentMessage``).

The three pi-ai messages plus any message kind a layer above adds (pi extends the union by
declaration merging; pitrio by subclassing :class:`ExtensionMessage` and calling
:func:`register_agent_message`). A message whose role nobody registered decodes to an
:class:`OpaqueMessage` that keeps its JSON untouched, so a transcript from a newer pi survives a
load/save round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from pitrio.codec import register_tagged_union, register_type
from pitrio.providers import (
    AssistantMessage,
    Message,
    PartialAssistantMessage,
    ToolResultMessage,
    UserMessage,
)


class ExtensionMessage:
    """Base class of the message kinds upper layers add (``bashExecution``, ``custom`` ...).

    Subclasses are wire classes with a fixed ``role`` attribute; :func:`convert_to_llm` drops
    them unless the caller's converter maps them to pi-ai messages.
    """

    role: str


@attrs.frozen
class OpaqueMessage(ExtensionMessage):
    """A message of a role this process does not know, kept as its raw JSON."""

    data: Mapping[str, Any]

    @property
    def role(self) -> str:  # type: ignore[override]
        return str(self.data.get("role"))


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | ExtensionMessage
"""A transcript entry: a pi-ai message or an extension message."""

StreamingMessage: TypeAlias = AgentMessage | PartialAssistantMessage
"""What ``message_start``/``message_update`` carry: a partial while the model streams."""

_AGENT_MESSAGE_TYPES: dict[str, type] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
}


def register_agent_message(role: str, cls: type) -> None:
    """Decode messages with ``role`` as ``cls`` wherever an ``AgentMessage`` is expected."""
    _AGENT_MESSAGE_TYPES[role] = cls


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the messages an LLM understands: user, assistant and tool results (pi's default)."""
    return [
        m for m in messages if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage)
    ]


register_type(OpaqueMessage, encode=lambda message: dict(message.data))
register_tagged_union(
    AgentMessage, "role", _AGENT_MESSAGE_TYPES, fallback=lambda data: OpaqueMessage(dict(data))
)
register_tagged_union(
    StreamingMessage, "role", _AGENT_MESSAGE_TYPES, fallback=lambda data: OpaqueMessage(dict(data))
)
