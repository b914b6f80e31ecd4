"""The ``bedrock-converse-stream`` provider: Amazon Bedrock's ConverseStream API.

Ports pi-ai 0.73.1's ``amazon-bedrock`` provider without the AWS SDK:

* ``_request``: the request body (messages, system, ``toolConfig``, ``inferenceConfig``, cache
  points, Claude's thinking fields in ``additionalModelRequestFields``).
* ``_auth``: authentication in pi's order (``AWS_BEDROCK_SKIP_AUTH``, a bearer token, SigV4
  with the environment's keys, then the full AWS chain through the optional ``pitrio[aws]``
  extra) and the region rules.
* ``_eventstream``: the ``application/vnd.amazon.eventstream`` binary framing, decoded
  incrementally with both CRCs checked.
* ``_transport``: the signed request and the raw response body on the shared HTTP client.
* ``_stream``: ConverseStream events to pi's events, and the stream functions.

The request goes to ``POST {endpoint}/model/{modelId}/converse-stream``.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers._registry import ProviderRegistry as _ProviderRegistry
from pitrio.providers._registry import default_registry as _default_registry
from pitrio.providers.bedrock._eventstream import EventStreamDecoder as EventStreamDecoder
from pitrio.providers.bedrock._eventstream import EventStreamError as EventStreamError
from pitrio.providers.bedrock._eventstream import EventStreamMessage as EventStreamMessage
from pitrio.providers.bedrock._request import BedrockOptions as BedrockOptions
from pitrio.providers.bedrock._stream import API as API
from pitrio.providers.bedrock._stream import BEDROCK_PROVIDER as BEDROCK_PROVIDER
from pitrio.providers.bedrock._stream import stream_bedrock as stream_bedrock
from pitrio.providers.bedrock._stream import stream_simple_bedrock as stream_simple_bedrock
from pitrio.providers.bedrock._transport import BedrockHTTPError as BedrockHTTPError
from pitrio.providers.bedrock._transport import BedrockServiceError as BedrockServiceError


def register_bedrock(registry: _ProviderRegistry = _default_registry) -> None:
    """Register the ``bedrock-converse-stream`` provider in ``registry``."""
    registry.register(BEDROCK_PROVIDER)


__all__ = [
    "API",
    "BEDROCK_PROVIDER",
    "BedrockHTTPError",
    "BedrockOptions",
    "BedrockServiceError",
    "EventStreamDecoder",
    "EventStreamError",
    "EventStreamMessage",
    "register_bedrock",
    "stream_bedrock",
    "stream_simple_bedrock",
]

_publish(globals(), __all__)
