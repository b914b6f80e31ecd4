"""The scripted ``faux`` provider (pi-ai's ``registerFauxProvider``): scripted responses or
factories, streamed with pi's event protocol, at unlimited speed or ``tokens_per_second``.

Kept apart from the wire providers (it speaks no wire format); ``pitrio.providers`` re-exports
its public names.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers.faux._provider import DEFAULT_YIELD_EVERY as DEFAULT_YIELD_EVERY
from pitrio.providers.faux._provider import FauxModelDefinition as FauxModelDefinition
from pitrio.providers.faux._provider import FauxProvider as FauxProvider
from pitrio.providers.faux._provider import FauxResponse as FauxResponse
from pitrio.providers.faux._provider import FauxState as FauxState
from pitrio.providers.faux._provider import ResponseFactory as ResponseFactory
from pitrio.providers.faux._provider import faux_assistant_message as faux_assistant_message
from pitrio.providers.faux._provider import faux_text as faux_text
from pitrio.providers.faux._provider import faux_thinking as faux_thinking
from pitrio.providers.faux._provider import faux_tool_call as faux_tool_call
from pitrio.providers.faux._provider import register_faux_provider as register_faux_provider
from pitrio.providers.faux._usage import serialize_context as serialize_context

__all__ = [
    "DEFAULT_YIELD_EVERY",
    "FauxModelDefinition",
    "FauxProvider",
    "FauxResponse",
    "FauxState",
    "ResponseFactory",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "register_faux_provider",
    "serialize_context",
]

_publish(globals(), __all__)
