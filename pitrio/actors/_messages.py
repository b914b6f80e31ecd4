"""``AgentMessage``: what an agent's transcript holds (pi-agent-core ``AgentMessage``).

The three pi-ai messages plus any message kind a layer above or a user adds (pi extends the
union by declaration merging). A layer above teaches its own codec its kinds (the sessions codec
knows ``bashExecution``, ``custom``, ...); a user subclasses :class:`ExtensionMessage` and calls
:func:`register_agent_message`. A message whose role nobody registered decodes to an
:class:`OpaqueMessage` that keeps its JSON untouched, so a transcript from a newer pi survives a
load/save round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, TypeAlias

import attrs

from pitrio._exceptions import UsageError
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

PI_AI_MESSAGE_TYPES: Final[Mapping[str, type]] = MappingProxyType(
    {"user": UserMessage, "assistant": AssistantMessage, "toolResult": ToolResultMessage}
)
"""Role -> class of the three pi-ai messages."""

_registered_messages: dict[str, type] = {}

REGISTERED_AGENT_MESSAGES: Final[Mapping[str, type]] = MappingProxyType(_registered_messages)
"""Role -> class of the custom message kinds users registered (a live, read-only view)."""


def register_agent_message(role: str, cls: type) -> None:
    """Decode messages with ``role`` as ``cls`` wherever an ``AgentMessage`` is expected.

    pi adds message kinds by declaration merging, which is process-wide, and so is this: the
    role is known from now on to the actors codec and to every codec derived from it (the
    sessions codec, so a session file holding such messages round-trips). Those codecs look the
    role up in this registry each time they meet an unknown role, so registering changes no
    codec, and registering late (after messages were decoded) is fine. A role some layer
    defines itself (``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary`` in
    :mod:`pitrio.sessions`) keeps that layer's class in that layer's codec.

    Args:
        role: the message's ``role`` value.
        cls: a :func:`~pitrio.codec.wire` class, normally an :class:`ExtensionMessage` subclass,
            whose ``role`` attribute is fixed to ``role``.

    Raises:
        UsageError: ``role`` is one of pi-ai's message roles.
    """
    if role in PI_AI_MESSAGE_TYPES:
        raise UsageError(f"{role!r} is a pi-ai message role and cannot be re-registered")
    _registered_messages[role] = cls


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the messages an LLM understands: user, assistant and tool results (pi's default)."""
    return [
        m for m in messages if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage)
    ]
