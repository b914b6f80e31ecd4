"""pi-ai's message, content, usage, model and tool types (seed 002 Appendices A, D, E, F).

Attribute names are snake_case; :mod:`pitrio.codec` writes them as pi's camelCase keys, leaves
``None`` optionals out and keeps unknown keys in ``extra``. Discriminators (``role``, ``type``)
are fixed attributes, not constructor arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio.codec import extra_field, wire

_SHARED: Final = {"shared": True}
"""Field metadata: values that repeat from message to message are decoded as one shared string
each (see ``pitrio._wire_fast.SHARED``)."""

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh"]
ModelThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
CacheRetention: TypeAlias = Literal["none", "short", "long"]
Transport: TypeAlias = Literal["sse", "websocket", "websocket-cached", "auto"]
InputKind: TypeAlias = Literal["text", "image"]
Api: TypeAlias = str
"""A wire API id: ``"openai-completions"``, ``"anthropic-messages"``, ``"faux"``, ..."""


# --------------------------------------------------------------------------- content blocks


@wire
@attrs.frozen(kw_only=True)
class TextContent:
    """A text block."""

    type: Literal["text"] = attrs.field(default="text", init=False)
    text: str
    text_signature: str | None = None
    """Provider-specific replay data (OpenAI responses message id/phase)."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ThinkingContent:
    """A reasoning block; ``thinking_signature`` lets the provider verify it on replay."""

    type: Literal["thinking"] = attrs.field(default="thinking", init=False)
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None
    """True when the provider redacted the reasoning; the payload is in the signature."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ImageContent:
    """A base64 image."""

    type: Literal["image"] = attrs.field(default="image", init=False)
    data: str
    mime_type: str
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class ToolCall:
    """A tool call requested by the model."""

    type: Literal["toolCall"] = attrs.field(default="toolCall", init=False)
    id: str
    name: str = attrs.field(metadata=_SHARED)
    arguments: dict[str, Any] = attrs.field(factory=dict)
    thought_signature: str | None = None
    """Google-specific: the thought signature that must accompany the call on replay."""
    extra: dict[str, Any] | None = extra_field()


UserContentBlock: TypeAlias = TextContent | ImageContent
AssistantContentBlock: TypeAlias = TextContent | ThinkingContent | ToolCall
ContentBlock: TypeAlias = TextContent | ThinkingContent | ImageContent | ToolCall


def _blocks(items: Iterable[Any]) -> tuple[Any, ...]:
    return items if isinstance(items, tuple) else tuple(items)


def _user_content(
    content: str | Iterable[UserContentBlock],
) -> str | tuple[UserContentBlock, ...]:
    return content if isinstance(content, str) else _blocks(content)


def _assistant_content(
    content: Iterable[AssistantContentBlock],
) -> tuple[AssistantContentBlock, ...]:
    return _blocks(content)


def _result_content(content: Iterable[UserContentBlock]) -> tuple[UserContentBlock, ...]:
    return _blocks(content)


# --------------------------------------------------------------------------- usage


@wire
@attrs.frozen(kw_only=True)
class Cost:
    """Dollar cost of one response, by token class."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class Usage:
    """Token counts of one response and their cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = attrs.field(factory=Cost)
    extra: dict[str, Any] | None = extra_field()


EMPTY_USAGE = Usage()
"""All-zero usage (pi's default before a provider reports any)."""


# --------------------------------------------------------------------------- messages


@wire
@attrs.frozen(kw_only=True)
class UserMessage:
    """A user turn: a string or text and image blocks."""

    role: Literal["user"] = attrs.field(default="user", init=False)
    content: str | tuple[UserContentBlock, ...] = attrs.field(converter=_user_content)
    timestamp: int
    """Milliseconds since the epoch."""
    extra: dict[str, Any] | None = extra_field()


@wire
@attrs.frozen(kw_only=True)
class AssistantMessage:
    """A finished model response."""

    role: Literal["assistant"] = attrs.field(default="assistant", init=False)
    content: tuple[AssistantContentBlock, ...] = attrs.field(converter=_assistant_content)
    # Values that repeat from message to message: decoded as one shared string each.
    api: Api = attrs.field(metadata=_SHARED)
    provider: str = attrs.field(metadata=_SHARED)
    model: str = attrs.field(metadata=_SHARED)
    response_model: str | None = attrs.field(default=None, metadata=_SHARED)
    response_id: str | None = None
    diagnostics: list[dict[str, Any]] | None = None
    usage: Usage = EMPTY_USAGE
    stop_reason: StopReason
    error_message: str | None = None
    timestamp: int
    extra: dict[str, Any] | None = extra_field()

    def tool_calls(self) -> list[ToolCall]:
        """Return the tool-call blocks in order."""
        return [block for block in self.content if isinstance(block, ToolCall)]

    def text(self) -> str:
        """Return the concatenated text blocks."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


@wire
@attrs.frozen(kw_only=True)
class ToolResultMessage:
    """The result of one tool call, sent back to the model."""

    role: Literal["toolResult"] = attrs.field(default="toolResult", init=False)
    tool_call_id: str
    tool_name: str = attrs.field(metadata=_SHARED)
    content: tuple[UserContentBlock, ...] = attrs.field(converter=_result_content)
    details: Any = None
    is_error: bool
    timestamp: int
    extra: dict[str, Any] | None = extra_field()


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
"""What a provider understands (pi-ai's ``Message``)."""


# --------------------------------------------------------------------------- tools, context


@wire
@attrs.frozen(kw_only=True)
class Tool:
    """A tool the model may call; ``parameters`` is a JSON schema (pi builds it with TypeBox)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    extra: dict[str, Any] | None = extra_field()


def _messages(items: Iterable[Message]) -> tuple[Message, ...]:
    return _blocks(items)


def _tools(items: Iterable[Tool] | None) -> tuple[Tool, ...] | None:
    return None if items is None else _blocks(items)


@wire
@attrs.frozen(kw_only=True)
class Context:
    """One request's input: system prompt, messages, tools."""

    system_prompt: str | None = None
    messages: tuple[Message, ...] = attrs.field(default=(), converter=_messages)
    tools: tuple[Tool, ...] | None = attrs.field(default=None, converter=_tools)
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- models


@wire
@attrs.frozen(kw_only=True)
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    extra: dict[str, Any] | None = extra_field()


def _inputs(items: Iterable[InputKind]) -> tuple[InputKind, ...]:
    return _blocks(items)


@wire
@attrs.frozen(kw_only=True)
class Model:
    """A model of the catalogue (seed 002 Appendix E)."""

    id: str
    name: str
    api: Api
    provider: str
    base_url: str
    reasoning: bool = False
    thinking_level_map: dict[str, str | None] | None = None
    """pi thinking level -> provider value; ``None`` marks a level unsupported."""
    input: tuple[InputKind, ...] = attrs.field(default=("text",), converter=_inputs)
    cost: ModelCost = attrs.field(factory=ModelCost)
    context_window: int
    max_tokens: int
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    """Compatibility overrides for OpenAI/Anthropic-compatible servers (pi's ``compat``)."""
    extra: dict[str, Any] | None = extra_field()


# --------------------------------------------------------------------------- stream options

OnPayload: TypeAlias = Callable[[Any, Model], Any]
"""Called with the provider request body before it is sent; a non-None return replaces it."""


@attrs.frozen(kw_only=True)
class ProviderResponse:
    """The HTTP answer to a provider request, before its body is read (pi-ai's ``onResponse``
    argument): the status and the response headers (lower-case names)."""

    status: int
    headers: Mapping[str, str]


OnResponse: TypeAlias = Callable[[ProviderResponse, Model], Any]
"""Called once per request with the final response's status and headers (sync or async)."""


@attrs.frozen(kw_only=True)
class ThinkingBudgets:
    """Token budgets per thinking level (token-budget providers only)."""

    minimal: int | None = None
    low: int | None = None
    medium: int | None = None
    high: int | None = None


@attrs.frozen(kw_only=True)
class StreamOptions:
    """Options every provider accepts (pi-ai ``StreamOptions``, ``SimpleStreamOptions``).

    There is no abort signal: cancel the stream (``AssistantMessageEventStream.abort()``) or
    the enclosing Trio scope.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    api_key: str | None = None
    transport: Transport | None = None
    cache_retention: CacheRetention | None = None
    session_id: str | None = None
    on_payload: OnPayload | None = None
    on_response: OnResponse | None = None
    """Called once per request when the response that ends its retries arrives, before its
    body is read (see :func:`pitrio.providers._http.open_sse`)."""
    headers: Mapping[str, str] | None = None
    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    stall_timeout_ms: int | None = None
    """Give up a stream after this long without a byte from the server (``None``: 300 s or
    ``timeout_ms`` if longer; ``0``: never, as pi). See :mod:`pitrio.providers._http`."""
    metadata: Mapping[str, Any] | None = None
    reasoning: ThinkingLevel | None = None
    """Thinking level for ``stream_simple`` (``None`` = off)."""
    thinking_budgets: ThinkingBudgets | None = None
    provider_options: Mapping[str, Any] | None = None
    """API-specific options for ``stream`` (pi's ``ProviderStreamOptions``)."""
