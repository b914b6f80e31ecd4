"""The actors layer's wire codec: the tools codec plus ``AgentMessage`` and ``AgentEvent``.

Built once, here, and sealed; the sessions codec derives from it. The ``AgentMessage`` union
reads its table live: pi-ai's three roles, then the roles users add with
:func:`~pitrio.actors.register_agent_message` (that registry is consulted on every decode, so it
reaches this codec and every codec derived from it without changing either), then
:class:`OpaqueMessage` for a role nobody knows.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from typing import Any, Final

from pitrio.actors._events import AGENT_EVENT_TYPES, AgentEvent
from pitrio.actors._messages import (
    PI_AI_MESSAGE_TYPES,
    REGISTERED_AGENT_MESSAGES,
    AgentMessage,
    OpaqueMessage,
    StreamingMessage,
)
from pitrio.codec import WireCodec, make_codec
from pitrio.tools._codec import TOOLS_CODEC

__all__ = ["ACTORS_CODEC", "register_agent_messages"]


def _opaque(data: Mapping[str, Any]) -> OpaqueMessage:
    return OpaqueMessage(dict(data))


def register_agent_messages(codec: WireCodec, own: Mapping[str, type]) -> None:
    """Teach ``codec`` the ``AgentMessage`` union with a layer's own message kinds.

    The table is pi-ai's roles, then ``own``, then the users' registry (live), then
    :class:`OpaqueMessage`. The sessions codec calls this with its four kinds.
    """
    table: Mapping[str, type] = ChainMap(
        dict(PI_AI_MESSAGE_TYPES),
        dict(own),
        # Live: a role registered later is found too.
        REGISTERED_AGENT_MESSAGES,  # type: ignore[arg-type]
    )
    for union in (AgentMessage, StreamingMessage):
        codec.register_tagged_union(union, "role", table, fallback=_opaque)


def _build() -> WireCodec:
    codec = make_codec(TOOLS_CODEC, name="actors")
    codec.register_type(OpaqueMessage, encode=lambda message: dict(message.data))
    register_agent_messages(codec, {})
    codec.register_tagged_union(AgentEvent, "type", AGENT_EVENT_TYPES)
    return codec.seal()


ACTORS_CODEC: Final = _build()
"""The actors layer's codec (sealed; derived from the tools codec)."""
