"""is_context_overflow recognises every provider's way of saying "prompt too long", as pi does."""

from __future__ import annotations

import pytest

from pitrio.providers._messages import AssistantMessage, StopReason, Usage
from pitrio.providers._overflow import (
    NON_OVERFLOW_PATTERNS,
    OVERFLOW_PATTERNS,
    get_overflow_patterns,
    is_context_overflow,
)


def _message(
    stop_reason: StopReason = "error",
    error: str | None = None,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read: int = 0,
) -> AssistantMessage:
    return AssistantMessage(
        content=(),
        api="openai-completions",
        provider="test",
        model="m",
        stop_reason=stop_reason,
        error_message=error,
        usage=Usage(input=input_tokens, output=output_tokens, cache_read=cache_read),
        timestamp=0,
    )


# Error texts as the providers send them (HTTP status prefix plus body or SDK message).
OVERFLOW_ERRORS = {
    "anthropic": (
        '400 {"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 213462 tokens > 200000 maximum"},'
        '"request_id":"req_011CUxyz"}'
    ),
    "anthropic-413": (
        '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}'
    ),
    "bedrock": "ValidationException: Input is too long for requested model.",
    "openai-responses": (
        "Your input exceeds the context window of this model. Please adjust your input and try "
        "again."
    ),
    "openai-completions": (
        '400 {"error":{"message":"Your input exceeds the context window of this model.",'
        '"type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}'
    ),
    "google": (
        '{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum '
        'number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}'
    ),
    "xai": (
        "400 This model's maximum prompt length is 131072 but the request contains 537812 tokens."
    ),
    "groq": "400 Please reduce the length of the messages or completion.",
    "openrouter": (
        "400 This endpoint's maximum context length is 128000 tokens. However, you requested "
        "about 150234 tokens (140234 of text input, 10000 in the output). Please reduce the "
        'length of either one, or use the "middle-out" transform to compress your prompt '
        "automatically."
    ),
    "github-copilot": "400 prompt token count of 139342 exceeds the limit of 128000",
    "llama.cpp": (
        '400 {"error":{"code":400,"message":"the request exceeds the available context size, '
        'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,'
        '"n_ctx":8192}}'
    ),
    "lm-studio": (
        "400 Trying to keep the first 5000 tokens when context the overflows. However, the "
        "number of tokens to keep from the initial prompt is greater than the context length."
    ),
    "minimax": "400 invalid params, context window exceeds limit (2013)",
    "kimi-coding": "400 Your request exceeded model token limit: 262144 (requested: 301722)",
    "mistral": (
        '400 {"object":"error","message":"Prompt contains 140000 tokens and 0 draft tokens, too '
        'large for model with 131072 maximum context length","type":"invalid_request_error"}'
    ),
    "zai": "Provider finish_reason: model_context_window_exceeded",
    "ollama": '400 {"error":"prompt too long; exceeded max context length by 1200 tokens"}',
    "ollama-short": "prompt too long; exceeded context length by 12 tokens",
    "generic-code": "context_length_exceeded",
    "generic-words": "Context length exceeded for this model",
    "generic-too-many": "Too many tokens in the request",
    "generic-limit": "Token limit exceeded",
    "cerebras-400": "400 status code (no body)",
    "cerebras-413": "413 status code (no body)",
}


@pytest.mark.parametrize("error", OVERFLOW_ERRORS.values(), ids=OVERFLOW_ERRORS.keys())
def test_provider_overflow_errors_are_detected(error: str) -> None:
    """Each provider's overflow error, as sent, is recognised."""
    assert is_context_overflow(_message("error", error))


def test_every_pattern_is_exercised_by_a_provider_error() -> None:
    """Each of pi's overflow patterns matches at least one of the realistic errors above."""
    for pattern in OVERFLOW_PATTERNS:
        assert any(pattern.search(error) for error in OVERFLOW_ERRORS.values()), pattern.pattern


def test_the_pattern_list_is_pis() -> None:
    """pitrio has pi 0.73.1's twenty overflow patterns and three exclusions, case-insensitive."""
    assert len(OVERFLOW_PATTERNS) == 20
    assert len(NON_OVERFLOW_PATTERNS) == 3
    assert all(p.flags & 2 for p in (*OVERFLOW_PATTERNS, *NON_OVERFLOW_PATTERNS))


def test_get_overflow_patterns_returns_a_copy() -> None:
    """The returned list can be changed without affecting detection."""
    patterns = get_overflow_patterns()
    assert patterns == list(OVERFLOW_PATTERNS)
    patterns.clear()
    assert is_context_overflow(_message("error", "prompt is too long: 5 tokens > 4 maximum"))


NOT_OVERFLOW = {
    "rate-limit": "429 Rate limit reached for requests: too many tokens per minute",
    "too-many-requests": "429 Too Many Requests: too many tokens, slow down",
    "bedrock-throttling": "Throttling error: Too many tokens, please wait before trying again.",
    "bedrock-unavailable": "Service unavailable: prompt is too long for the current capacity",
    "overloaded": '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "server-error": "500 Internal server error",
    "cerebras-prefixed": "Error: 400 status code (no body)",
    "auth": '401 {"error":{"message":"Incorrect API key provided"}}',
}


@pytest.mark.parametrize("error", NOT_OVERFLOW.values(), ids=NOT_OVERFLOW.keys())
def test_other_errors_are_not_overflow(error: str) -> None:
    """Rate limits, throttling and ordinary failures are not mistaken for overflow."""
    assert not is_context_overflow(_message("error", error), 200_000)


def test_bedrock_throttling_exception_name_is_not_excluded() -> None:
    """Only Bedrock's formatted "Throttling error:" prefix is excluded, as in pi."""
    error = "ThrottlingException: Too many tokens, please wait before trying again."
    assert is_context_overflow(_message("error", error))


@pytest.mark.parametrize("stop_reason", ["stop", "length", "toolUse", "aborted"])
def test_error_text_only_counts_on_an_error_stop(stop_reason: StopReason) -> None:
    """An overflow-looking error text on a message that did not fail is ignored."""
    assert not is_context_overflow(_message(stop_reason, "prompt is too long"))


def test_error_without_text_is_not_overflow() -> None:
    """An error stop with no error message says nothing about overflow."""
    assert not is_context_overflow(_message("error", None, input_tokens=10**6), 1000)
    assert not is_context_overflow(_message("error", ""), 1000)


def test_silent_overflow_is_detected_from_usage() -> None:
    """z.ai: a successful response whose input plus cache reads exceed the window is overflow."""
    assert is_context_overflow(_message("stop", input_tokens=200_001), 200_000)
    assert is_context_overflow(_message("stop", input_tokens=150_000, cache_read=50_001), 200_000)
    assert not is_context_overflow(_message("stop", input_tokens=200_000), 200_000)
    assert not is_context_overflow(
        _message("stop", input_tokens=150_000, cache_read=50_000), 200_000
    )


def test_silent_overflow_needs_the_context_window() -> None:
    """Without a context window (or with 0) usage is not examined."""
    assert not is_context_overflow(_message("stop", input_tokens=10**7))
    assert not is_context_overflow(_message("stop", input_tokens=10**7), 0)


def test_silent_overflow_only_for_a_stop() -> None:
    """A tool-use stop with a large input is not treated as a silent overflow."""
    assert not is_context_overflow(_message("toolUse", input_tokens=500_000), 200_000)


def test_length_stop_with_a_full_window_and_no_output_is_overflow() -> None:
    """Xiaomi MiMo: truncated input fills the window (99% or more) and nothing is generated."""
    assert is_context_overflow(_message("length", input_tokens=99_000), 100_000)
    assert is_context_overflow(_message("length", input_tokens=50_000, cache_read=49_000), 100_000)
    assert not is_context_overflow(_message("length", input_tokens=98_999), 100_000)
    assert not is_context_overflow(
        _message("length", input_tokens=99_500, output_tokens=1), 100_000
    )
    assert not is_context_overflow(_message("length", input_tokens=99_500))
