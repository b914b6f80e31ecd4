"""The ``openai-codex-responses`` wire API: the Responses API of ChatGPT's Codex backend.

Request building (URL, headers, body) is in ``_request``, pi's retry rules in ``_retry``,
stream reading in ``_stream``. SSE only: the websocket transport pi prefers is not built.
"""

from pitrio._publish import publish as _publish
from pitrio.providers.codex._provider import API as API
from pitrio.providers.codex._provider import (
    OPENAI_CODEX_RESPONSES_PROVIDER as OPENAI_CODEX_RESPONSES_PROVIDER,
)
from pitrio.providers.codex._provider import (
    register_openai_codex_responses as register_openai_codex_responses,
)
from pitrio.providers.codex._provider import (
    resolve_codex_service_tier as resolve_codex_service_tier,
)
from pitrio.providers.codex._provider import (
    stream_openai_codex_responses as stream_openai_codex_responses,
)
from pitrio.providers.codex._provider import (
    stream_simple_openai_codex_responses as stream_simple_openai_codex_responses,
)
from pitrio.providers.codex._request import DEFAULT_CODEX_BASE_URL as DEFAULT_CODEX_BASE_URL
from pitrio.providers.codex._request import DEFAULT_INSTRUCTIONS as DEFAULT_INSTRUCTIONS
from pitrio.providers.codex._request import CodexOptions as CodexOptions
from pitrio.providers.codex._request import build_codex_body as build_codex_body
from pitrio.providers.codex._request import codex_account_id as codex_account_id
from pitrio.providers.codex._request import codex_headers as codex_headers
from pitrio.providers.codex._request import codex_url as codex_url
from pitrio.providers.codex._retry import MAX_RETRIES as MAX_RETRIES
from pitrio.providers.codex._retry import CodexHTTPError as CodexHTTPError
from pitrio.providers.codex._retry import codex_error_message as codex_error_message
from pitrio.providers.codex._retry import is_retryable as is_retryable
from pitrio.providers.codex._retry import is_terminal_quota as is_terminal_quota
from pitrio.providers.codex._stream import CodexApiError as CodexApiError
from pitrio.providers.codex._stream import process_codex_stream as process_codex_stream

__all__ = [
    "API",
    "DEFAULT_CODEX_BASE_URL",
    "DEFAULT_INSTRUCTIONS",
    "MAX_RETRIES",
    "OPENAI_CODEX_RESPONSES_PROVIDER",
    "CodexApiError",
    "CodexHTTPError",
    "CodexOptions",
    "build_codex_body",
    "codex_account_id",
    "codex_error_message",
    "codex_headers",
    "codex_url",
    "is_retryable",
    "is_terminal_quota",
    "process_codex_stream",
    "register_openai_codex_responses",
    "resolve_codex_service_tier",
    "stream_openai_codex_responses",
    "stream_simple_openai_codex_responses",
]

_publish(globals(), __all__)
