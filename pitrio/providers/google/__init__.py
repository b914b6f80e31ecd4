"""The ``google-generative-ai`` wire API (pi-ai's ``google.ts``), whose codec the Vertex and
Cloud Code Assist providers share.

Request building (:mod:`._request`: contents, tools, thinking config, the endpoint) lives apart
from stream reading (:mod:`._reader`: the chunks into pi's assistant-message events); the
provider (:mod:`._provider`) drives one call.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers.google._provider import google_provider as google_provider
from pitrio.providers.google._provider import register_google as register_google
from pitrio.providers.google._provider import stream_google as stream_google
from pitrio.providers.google._provider import stream_simple_google as stream_simple_google
from pitrio.providers.google._request import GoogleEndpoint as GoogleEndpoint
from pitrio.providers.google._request import GoogleOptions as GoogleOptions
from pitrio.providers.google._request import GoogleThinking as GoogleThinking

__all__ = [
    "GoogleEndpoint",
    "GoogleOptions",
    "GoogleThinking",
    "google_provider",
    "register_google",
    "stream_google",
    "stream_simple_google",
]

_publish(globals(), __all__)
