"""The ``google-gemini-cli`` wire API: Cloud Code Assist with credentials the user supplies.

No login and no client impersonation; see :mod:`._request` and the README for the terms risk.

* :mod:`._request`: credentials, URL and the request/response envelopes.
* :mod:`._provider`: the stream functions (body and chunks are the Gemini codec's).
"""

from pitrio._publish import publish as _publish
from pitrio.providers.gemini_cli._provider import GEMINI_CLI_PROVIDER as GEMINI_CLI_PROVIDER
from pitrio.providers.gemini_cli._provider import register_gemini_cli as register_gemini_cli
from pitrio.providers.gemini_cli._provider import stream_gemini_cli as stream_gemini_cli
from pitrio.providers.gemini_cli._provider import (
    stream_simple_gemini_cli as stream_simple_gemini_cli,
)
from pitrio.providers.gemini_cli._request import API as API
from pitrio.providers.gemini_cli._request import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from pitrio.providers.gemini_cli._request import CodeAssistCredentials as CodeAssistCredentials
from pitrio.providers.gemini_cli._request import resolve_credentials as resolve_credentials

__all__ = [
    "API",
    "DEFAULT_BASE_URL",
    "GEMINI_CLI_PROVIDER",
    "CodeAssistCredentials",
    "register_gemini_cli",
    "resolve_credentials",
    "stream_gemini_cli",
    "stream_simple_gemini_cli",
]

_publish(globals(), __all__)
