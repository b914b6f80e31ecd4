"""The ``azure-openai-responses`` wire API: OpenAI's Responses API on Azure OpenAI.

Request building (URL, ``api-key``, ``api-version``, deployment) is in ``_request``; the stream
is read by the ``openai-responses`` provider's reader.
"""

from pitrio._publish import publish as _publish
from pitrio.providers.azure._provider import API as API
from pitrio.providers.azure._provider import (
    AZURE_OPENAI_RESPONSES_PROVIDER as AZURE_OPENAI_RESPONSES_PROVIDER,
)
from pitrio.providers.azure._provider import (
    register_azure_openai_responses as register_azure_openai_responses,
)
from pitrio.providers.azure._provider import (
    stream_azure_openai_responses as stream_azure_openai_responses,
)
from pitrio.providers.azure._provider import (
    stream_simple_azure_openai_responses as stream_simple_azure_openai_responses,
)
from pitrio.providers.azure._request import DEFAULT_AZURE_API_VERSION as DEFAULT_AZURE_API_VERSION
from pitrio.providers.azure._request import AzureOptions as AzureOptions
from pitrio.providers.azure._request import azure_headers as azure_headers
from pitrio.providers.azure._request import azure_url as azure_url
from pitrio.providers.azure._request import build_azure_params as build_azure_params
from pitrio.providers.azure._request import (
    normalize_azure_base_url as normalize_azure_base_url,
)
from pitrio.providers.azure._request import (
    parse_deployment_name_map as parse_deployment_name_map,
)
from pitrio.providers.azure._request import resolve_deployment_name as resolve_deployment_name

__all__ = [
    "API",
    "AZURE_OPENAI_RESPONSES_PROVIDER",
    "DEFAULT_AZURE_API_VERSION",
    "AzureOptions",
    "azure_headers",
    "azure_url",
    "build_azure_params",
    "normalize_azure_base_url",
    "parse_deployment_name_map",
    "register_azure_openai_responses",
    "resolve_deployment_name",
    "stream_azure_openai_responses",
    "stream_simple_azure_openai_responses",
]

_publish(globals(), __all__)
