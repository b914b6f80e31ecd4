"""The ``mistral-conversations`` wire API: Mistral's native chat streaming.

* :mod:`._request`: the request (body, headers, tool-call ids, reasoning options).
* :mod:`._stream`: reading the streamed chunks into pi's events.
* :mod:`._provider`: the stream functions.
"""

from pitrio._publish import publish as _publish
from pitrio.providers.mistral._provider import MISTRAL_PROVIDER as MISTRAL_PROVIDER
from pitrio.providers.mistral._provider import register_mistral as register_mistral
from pitrio.providers.mistral._provider import stream_mistral as stream_mistral
from pitrio.providers.mistral._provider import stream_simple_mistral as stream_simple_mistral
from pitrio.providers.mistral._request import API as API
from pitrio.providers.mistral._request import MistralOptions as MistralOptions
from pitrio.providers.mistral._request import build_request_body as build_request_body
from pitrio.providers.mistral._stream import NO_FINISH_MESSAGE as NO_FINISH_MESSAGE
from pitrio.providers.mistral._stream import MistralStreamError as MistralStreamError
from pitrio.providers.mistral._stream import map_stop_reason as map_stop_reason

__all__ = [
    "API",
    "MISTRAL_PROVIDER",
    "NO_FINISH_MESSAGE",
    "MistralOptions",
    "MistralStreamError",
    "build_request_body",
    "map_stop_reason",
    "register_mistral",
    "stream_mistral",
    "stream_simple_mistral",
]

_publish(globals(), __all__)
