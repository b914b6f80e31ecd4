"""The ``anthropic-messages`` wire API (pi-ai's ``anthropic.ts``).

Request building (:mod:`._request`: messages, tools, thinking, headers and auth) lives apart
from stream reading (:mod:`._reader`: the SSE events into pi's assistant-message events); the
provider (:mod:`._provider`) drives one call from the first to the second.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers.anthropic._provider import ANTHROPIC_PROVIDER as ANTHROPIC_PROVIDER
from pitrio.providers.anthropic._provider import register_anthropic as register_anthropic
from pitrio.providers.anthropic._provider import stream_anthropic as stream_anthropic
from pitrio.providers.anthropic._provider import (
    stream_simple_anthropic as stream_simple_anthropic,
)
from pitrio.providers.anthropic._request import AnthropicOptions as AnthropicOptions

__all__ = [
    "ANTHROPIC_PROVIDER",
    "AnthropicOptions",
    "register_anthropic",
    "stream_anthropic",
    "stream_simple_anthropic",
]

_publish(globals(), __all__)
