"""The ``google-vertex`` wire API: Gemini's codec on Vertex AI, by API key or ADC.

* :mod:`._request`: URLs, hosts, the key / project / location rules and pi's Vertex thinking
  tables (request side; the body is the Gemini codec's).
* :mod:`._auth`: Application Default Credentials through google-auth (``pitrio[google]``), the
  token cached until shortly before expiry.
* :mod:`._provider`: the stream functions (the response is read by the Gemini codec).
"""

from pitrio._publish import publish as _publish
from pitrio.providers.vertex._auth import REFRESH_MARGIN as REFRESH_MARGIN
from pitrio.providers.vertex._auth import AdcTokenSource as AdcTokenSource
from pitrio.providers.vertex._auth import VertexAuthError as VertexAuthError
from pitrio.providers.vertex._auth import default_token_source as default_token_source
from pitrio.providers.vertex._provider import VERTEX_PROVIDER as VERTEX_PROVIDER
from pitrio.providers.vertex._provider import register_vertex as register_vertex
from pitrio.providers.vertex._provider import vertex_provider as vertex_provider
from pitrio.providers.vertex._request import API as API
from pitrio.providers.vertex._request import location_host as location_host
from pitrio.providers.vertex._request import model_path as model_path
from pitrio.providers.vertex._request import request_url as request_url
from pitrio.providers.vertex._request import resolve_api_key as resolve_api_key

__all__ = [
    "API",
    "REFRESH_MARGIN",
    "VERTEX_PROVIDER",
    "AdcTokenSource",
    "VertexAuthError",
    "default_token_source",
    "location_host",
    "model_path",
    "register_vertex",
    "request_url",
    "resolve_api_key",
    "vertex_provider",
]

_publish(globals(), __all__)
