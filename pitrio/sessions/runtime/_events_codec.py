"""The running session's wire codec: the session codec plus ``AgentSessionEvent``.

Derived from :data:`~pitrio.sessions.storage._codec.SESSIONS_CODEC`, which it never changes:
the events a session publishes (``agent_start`` .. ``agent_end``, ``auto_retry_*``,
``compaction_*`` ...) are a runtime vocabulary that session files never hold.
"""

from __future__ import annotations

from typing import Final

from pitrio.codec import WireCodec, make_codec
from pitrio.sessions.runtime._agent_session_types import (
    AGENT_SESSION_EVENT_TYPES,
    AgentSessionEvent,
)
from pitrio.sessions.storage._codec import SESSIONS_CODEC

__all__ = ["EVENTS_CODEC"]


def _build() -> WireCodec:
    codec = make_codec(SESSIONS_CODEC, name="session-events")
    codec.register_tagged_union(AgentSessionEvent, "type", AGENT_SESSION_EVENT_TYPES)
    return codec.seal()


EVENTS_CODEC: Final = _build()
"""The codec of session events (sealed; a superset of the session file's codec)."""
