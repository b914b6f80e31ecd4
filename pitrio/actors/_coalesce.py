"""``merge_agent_events``: how a coalescing subscriber folds a burst of streamed deltas.

A host client that falls behind does not need every ``message_update``: two consecutive
updates of the same content block with deltas of the same kind say the same as one update whose
delta is both deltas concatenated and whose partial message is the newer one. Every other
event (starts, ends, tool events, turn and agent events) is structural and never merged.
"""

from __future__ import annotations

import attrs

from pitrio.actors._events import AgentEvent, MessageUpdateEvent
from pitrio.providers import TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent

__all__ = ["merge_agent_events"]

_DELTAS = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)


def merge_agent_events(older: object, newer: object) -> AgentEvent | None:
    """One event standing for ``older`` then ``newer``, or ``None`` if they must stay apart.

    Merges two ``message_update`` events whose assistant-message events are deltas of the same
    kind for the same content block: the delta texts are concatenated and the newer partial
    message wins. Never raises.
    """
    if type(older) is not MessageUpdateEvent or type(newer) is not MessageUpdateEvent:
        return None
    a, b = older.assistant_message_event, newer.assistant_message_event
    if type(a) is not type(b) or not isinstance(a, _DELTAS) or not isinstance(b, _DELTAS):
        return None
    if a.content_index != b.content_index:
        return None
    merged = attrs.evolve(b, delta=a.delta + b.delta)
    return attrs.evolve(newer, assistant_message_event=merged)
