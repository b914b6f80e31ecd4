"""pi's usage estimate for faux answers: characters / 4 over a serialisation of the whole
request (``serialize_context``), with a per-session prompt cache like pi's faux."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
import orjson

from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.providers._events import positional_factory
from pitrio.providers._messages import (
    AssistantContentBlock,
    AssistantMessage,
    Context,
    Cost,
    ImageContent,
    Message,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

_estimated_message: Final[Callable[..., AssistantMessage]] = positional_factory(
    AssistantMessage,  # every field the keyword call takes, in the class's order
    tuple(field.name for field in attrs.fields(AssistantMessage) if field.init),
)


def _js_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _estimate_tokens(text: str) -> int:
    # ceil(length / 4) in integers (pi's Math.ceil(text.length / 4)).
    return (_js_length(text) + 3) // 4


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _user_text(content: str | Sequence[TextContent | ImageContent]) -> str:
    if isinstance(content, str):
        return content
    if len(content) == 1 and type(content[0]) is TextContent:  # a prompt: one text block
        return content[0].text
    return "\n".join(
        block.text
        if isinstance(block, TextContent)
        else f"[image:{block.mime_type}:{_js_length(block.data)}]"
        for block in content
    )


def _assistant_text(content: Sequence[AssistantContentBlock]) -> str:
    if len(content) == 1:  # most answers: one block, no list or join
        block = content[0]
        kind = type(block)
        if kind is TextContent:
            return block.text  # type: ignore[union-attr]
        if kind is ToolCall:
            return f"{block.name}:{_json(block.arguments)}"  # type: ignore[union-attr]
    parts = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ThinkingContent):
            parts.append(block.thinking)
        else:
            parts.append(f"{block.name}:{_json(block.arguments)}")
    return "\n".join(parts)


def _tool_result_text(message: ToolResultMessage) -> str:
    parts = [message.tool_name]
    for block in message.content:
        parts.append(_user_text((block,)))
    return "\n".join(parts)


def _message_text(message: Message) -> str:
    if isinstance(message, UserMessage):
        return _user_text(message.content)
    if isinstance(message, AssistantMessage):
        return _assistant_text(message.content)
    if isinstance(message, ToolResultMessage):
        return _tool_result_text(message)
    raise TypeError(f"not a pi-ai message: {message!r}")


def serialize_context(context: Context) -> str:
    """Serialise a request as pi's faux does for its usage estimate (O(context))."""
    system_prompt = context.system_prompt
    parts = [f"system:{system_prompt}"] if system_prompt else []
    append = parts.append
    for message in context.messages:
        # Dispatch on the exact class (one compare each); anything else takes the general path.
        kind = type(message)
        if kind is UserMessage:
            append("user:" + _user_text(message.content))  # type: ignore[arg-type]
        elif kind is AssistantMessage:
            append("assistant:" + _assistant_text(message.content))  # type: ignore[arg-type]
        elif kind is ToolResultMessage:
            append("toolResult:" + _tool_result_text(message))  # type: ignore[arg-type]
        else:
            append(f"{message.role}:{_message_text(message)}")
    if context.tools:
        append(f"tools:{_tools_json(context.tools)}")
    return "\n\n".join(parts)


_tool_json: dict[int, tuple[weakref.ref[Tool], str]] = {}
"""Each live tool definition's JSON, by ``id``: an agent sends the same (frozen) tools with
every request, and encoding them was a third of the usage estimate's cost. An entry leaves
with its tool (weakref callback), so this never outgrows the live tools."""


def _tools_json(tools: Sequence[Tool]) -> str:
    parts = []
    for tool in tools:
        key = id(tool)
        cached = _tool_json.get(key)
        if cached is None or cached[0]() is not tool:
            encoded = _json(PROVIDERS_CODEC.to_wire(tool))

            def forget(ref: weakref.ref[Tool], key: int = key) -> None:
                current = _tool_json.get(key)
                if current is not None and current[0] is ref:
                    del _tool_json[key]

            cached = _tool_json[key] = (weakref.ref(tool, forget), encoded)
        parts.append(cached[1])
    # orjson writes a list as its items' JSON joined by commas, without spaces.
    return f"[{','.join(parts)}]"


def _common_prefix_length(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on the first mismatch: O(n) compares in C, not a Python loop
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_ZERO_COST: Final = Cost()
"""The cost of every faux response (frozen, so one object serves them all)."""
_make_usage: Final = positional_factory(
    Usage, ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")
)


def _with_usage_estimate(
    message: AssistantMessage,
    context: Context,
    options: StreamOptions,
    prompt_cache: dict[str, str],
    api: str,
    provider: str,
    model: str,
) -> AssistantMessage:
    """``message`` with pi's usage estimate and the serving ``api``/``provider``/``model``,
    in one copy (built positionally: ``attrs.evolve`` cost ten times as much)."""
    prompt_text = serialize_context(context)
    prompt_tokens = _estimate_tokens(prompt_text)
    output_tokens = _estimate_tokens(_assistant_text(message.content))
    input_tokens, cache_read, cache_write = prompt_tokens, 0, 0
    session_id = options.session_id
    if session_id and options.cache_retention != "none":
        previous = prompt_cache.get(session_id)
        if previous is not None:
            cached = _common_prefix_length(previous, prompt_text)
            cache_read = _estimate_tokens(previous[:cached])
            cache_write = _estimate_tokens(prompt_text[cached:])
            input_tokens = max(0, prompt_tokens - cache_read)
        else:
            cache_write = prompt_tokens
        prompt_cache[session_id] = prompt_text
    return _estimated_message(
        message.content,
        api,
        provider,
        model,
        message.response_model,
        message.response_id,
        message.diagnostics,
        _make_usage(
            input_tokens,
            output_tokens,
            cache_read,
            cache_write,
            input_tokens + output_tokens + cache_read + cache_write,
            _ZERO_COST,
        ),
        message.stop_reason,
        message.error_message,
        message.timestamp,
        message.extra,
    )
