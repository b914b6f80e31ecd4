"""The ``openai-completions`` wire API (pi-ai's ``openai-completions.ts``) and the compatibility
presets of OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, Groq, xAI, ...).

Request building (:mod:`._request`: messages, tools, thinking, cache markers, headers; with
:mod:`._compat`, the per-server flags) lives apart from stream reading (:mod:`._reader`: the
chunks into pi's assistant-message events); the provider (:mod:`._provider`) drives one call.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.providers.openai_completions._compat import CompletionsCompat as CompletionsCompat
from pitrio.providers.openai_completions._compat import UnknownPreset as UnknownPreset
from pitrio.providers.openai_completions._compat import detect_compat as detect_compat
from pitrio.providers.openai_completions._compat import get_compat as get_compat
from pitrio.providers.openai_completions._compat import get_preset as get_preset
from pitrio.providers.openai_completions._compat import (
    openai_compatible_model as openai_compatible_model,
)
from pitrio.providers.openai_completions._provider import (
    OPENAI_COMPLETIONS_PROVIDER as OPENAI_COMPLETIONS_PROVIDER,
)
from pitrio.providers.openai_completions._provider import (
    register_openai_completions as register_openai_completions,
)
from pitrio.providers.openai_completions._provider import (
    stream_openai_completions as stream_openai_completions,
)
from pitrio.providers.openai_completions._provider import (
    stream_simple_openai_completions as stream_simple_openai_completions,
)
from pitrio.providers.openai_completions._request import FinishReasonError as FinishReasonError
from pitrio.providers.openai_completions._request import MissingApiKey as MissingApiKey
from pitrio.providers.openai_completions._request import StreamErrorChunk as StreamErrorChunk
from pitrio.providers.openai_completions._request import (
    TruncatedStreamError as TruncatedStreamError,
)

__all__ = [
    "OPENAI_COMPLETIONS_PROVIDER",
    "CompletionsCompat",
    "FinishReasonError",
    "MissingApiKey",
    "StreamErrorChunk",
    "TruncatedStreamError",
    "UnknownPreset",
    "detect_compat",
    "get_compat",
    "get_preset",
    "openai_compatible_model",
    "register_openai_completions",
    "stream_openai_completions",
    "stream_simple_openai_completions",
]

_publish(globals(), __all__)
