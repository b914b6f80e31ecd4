"""Context-overflow detection: did this response fail because the prompt was too long?

Ports pi-ai 0.73.1's ``isContextOverflow``. Most providers answer an oversized prompt with an
error whose text says so, each in its own words; :data:`OVERFLOW_PATTERNS` holds one pattern per
phrasing. Some servers do not fail at all:

* z.ai accepts the prompt and reports ``usage.input`` above the context window;
* Xiaomi MiMo truncates the prompt to fill the window exactly and stops with ``length`` and no
  output.

Both are recognised from the usage when the caller passes the model's context window. Ollama
deployments that truncate silently cannot be detected.

Error texts that also mention throttling or rate limits (Bedrock's "Too many tokens, please
wait") are excluded by :data:`NON_OVERFLOW_PATTERNS`, so they are retried rather than compacted.
"""

from __future__ import annotations

import re
from typing import Final

from pitrio.providers._messages import AssistantMessage


def _patterns(*sources: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(source, re.IGNORECASE) for source in sources)


OVERFLOW_PATTERNS: Final = _patterns(
    r"prompt is too long",  # Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
    r"request_too_large",  # Anthropic: HTTP 413, request body over the byte limit
    r"input is too long for requested model",  # Amazon Bedrock
    r"exceeds the context window",  # OpenAI Completions and Responses
    r"input token count.*exceeds the maximum",  # Google Gemini
    r"maximum prompt length is \d+",  # xAI Grok
    r"reduce the length of the messages",  # Groq
    r"maximum context length is \d+ tokens",  # OpenRouter, every backend
    r"exceeds the limit of \d+",  # GitHub Copilot
    r"exceeds the available context size",  # llama.cpp server
    r"greater than the context length",  # LM Studio
    r"context window exceeds limit",  # MiniMax
    r"exceeded model token limit",  # Kimi For Coding
    r"too large for model with \d+ maximum context length",  # Mistral
    r"model_context_window_exceeded",  # z.ai finish_reason surfaced as error text
    r"prompt too long; exceeded (?:max )?context length",  # Ollama
    r"context[_ ]length[_ ]exceeded",  # generic
    r"too many tokens",  # generic
    r"token limit exceeded",  # generic
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",  # Cerebras: 400/413 without a body
)
"""Error-text patterns of an oversized prompt, one per provider phrasing (case-insensitive)."""

NON_OVERFLOW_PATTERNS: Final = _patterns(
    r"^(Throttling error|Service unavailable):",  # Amazon Bedrock's non-overflow errors
    r"rate limit",
    r"too many requests",
)
"""Error-text patterns that rule an overflow out even if an overflow pattern also matches."""

LENGTH_STOP_FILL_RATIO: Final = 0.99
"""A ``length`` stop with no output counts as overflow once input fills this much of the window."""


def get_overflow_patterns() -> list[re.Pattern[str]]:
    """Return a copy of :data:`OVERFLOW_PATTERNS` (pi's ``getOverflowPatterns``)."""
    return list(OVERFLOW_PATTERNS)


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Return whether ``message`` shows that the prompt did not fit the model's context window.

    Args:
        message: a finished assistant message.
        context_window: the model's context window; without it (or with 0) only the error text
            is examined and silent overflows go unnoticed.

    Returns:
        True for an ``error`` whose text matches an overflow pattern and no non-overflow
        pattern; for a ``stop`` whose input plus cache-read tokens exceed ``context_window``;
        for a ``length`` stop with zero output whose input plus cache-read tokens reach 99% of
        ``context_window``.
    """
    error = message.error_message
    if (
        message.stop_reason == "error"
        and error
        and not any(pattern.search(error) for pattern in NON_OVERFLOW_PATTERNS)
        and any(pattern.search(error) for pattern in OVERFLOW_PATTERNS)
    ):
        return True
    if not context_window:
        return False
    usage = message.usage
    prompt_tokens = usage.input + usage.cache_read
    if message.stop_reason == "stop":
        return prompt_tokens > context_window
    if message.stop_reason == "length" and usage.output == 0:
        return prompt_tokens >= context_window * LENGTH_STOP_FILL_RATIO
    return False
