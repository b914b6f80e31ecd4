"""Mistral chat requests as pi 0.73.1 sends them through ``@mistralai/mistralai``.

``POST {baseUrl}/v1/chat/completions`` with ``stream: true`` and the key as a Bearer token. The
body is the SDK's ``ChatCompletionStreamRequest`` in its wire (snake_case) form:

* the system prompt as a leading ``system`` message;
* user content as a string, or text and ``image_url`` chunks (a data URL); images are dropped
  for a model without image input, and a message left empty says so;
* assistant content as ``text`` and ``thinking`` chunks (the cross-provider transform has made
  another model's reasoning plain text), tool calls with their arguments as a JSON string
  (plus the fields the SDK always writes: ``prefix: false``, and ``index: 0`` on each call);
* tool results as ``tool`` messages: the text (``[tool error] `` first when it failed, a
  placeholder when there is none), then the images as ``image_url`` chunks;
* tool-call ids as Mistral demands them: 9 alphanumeric characters (an id of that form is kept,
  others hashed with pi's ``shortHash``), the same within one request for a call and its result;
* ``x-affinity: <sessionId>`` so Mistral reuses the prompt's KV cache, unless a header of that
  name is given;
* reasoning: ``prompt_mode: "reasoning"`` for Magistral-style models, ``reasoning_effort`` for
  ``mistral-small-2603``/``mistral-small-latest``/``mistral-medium-3.5`` (the model's
  ``thinkingLevelMap`` value, else ``"high"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages
from pitrio.providers.openai_responses._request import short_hash

API: Final = "mistral-conversations"
"""The wire API id of Mistral's native chat API."""
CHAT_PATH: Final = "/v1/chat/completions"
AFFINITY_HEADER: Final = "x-affinity"
TOOL_CALL_ID_LENGTH: Final = 9
_NOT_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")
IMAGE_OMITTED: Final = "(image omitted: model does not support images)"
_REASONING_EFFORT_MODELS: Final = frozenset(
    {"mistral-small-2603", "mistral-small-latest", "mistral-medium-3.5"}
)

PromptMode: TypeAlias = Literal["reasoning"]
ToolChoice: TypeAlias = str | Mapping[str, Any]
"""``auto``/``none``/``any``/``required``, or pi's ``{type: "function", function: {name}}``."""


@attrs.frozen(kw_only=True)
class MistralOptions:
    """API-specific options, read from ``StreamOptions.provider_options`` (pi's
    ``MistralOptions``: ``toolChoice``, ``promptMode``, ``reasoningEffort``, or snake_case)."""

    tool_choice: ToolChoice | None = None
    prompt_mode: PromptMode | None = None
    reasoning_effort: str | None = None

    @classmethod
    def from_provider_options(cls, options: Mapping[str, Any] | None) -> MistralOptions:
        """Read the options from a ``provider_options`` mapping (missing keys are unset)."""
        if not options:
            return cls()
        return cls(
            tool_choice=options.get("toolChoice", options.get("tool_choice")),
            prompt_mode=options.get("promptMode", options.get("prompt_mode")),
            reasoning_effort=options.get("reasoningEffort", options.get("reasoning_effort")),
        )


def uses_reasoning_effort(model: Model) -> bool:
    """Whether ``model`` takes ``reasoning_effort`` (pi's list) rather than a prompt mode."""
    return model.id in _REASONING_EFFORT_MODELS


def uses_prompt_mode(model: Model) -> bool:
    """Whether a reasoning ``model`` is switched to reasoning with ``prompt_mode``."""
    return model.reasoning and not uses_reasoning_effort(model)


def simple_reasoning(model: Model, level: ThinkingLevel | None) -> MistralOptions:
    """The reasoning fields pi's ``streamSimpleMistral`` derives from a (clamped) level."""
    if not model.reasoning or level is None:
        return MistralOptions()
    if uses_reasoning_effort(model):
        mapped = (model.thinking_level_map or {}).get(level)
        return MistralOptions(reasoning_effort=mapped or "high")
    return MistralOptions(prompt_mode="reasoning")


def derive_tool_call_id(tool_call_id: str, attempt: int = 0) -> str:
    """pi's Mistral id for ``tool_call_id``: its alphanumerics when they are exactly 9, else the
    first 9 alphanumerics of pi's ``shortHash`` (of ``"<seed>:<attempt>"`` after a collision)."""
    cleaned = _NOT_ALNUM.sub("", tool_call_id)
    if attempt == 0 and len(cleaned) == TOOL_CALL_ID_LENGTH:
        return cleaned
    seed = cleaned or tool_call_id
    if attempt:
        seed = f"{seed}:{attempt}"
    return _NOT_ALNUM.sub("", short_hash(seed))[:TOOL_CALL_ID_LENGTH]


def tool_call_id_normalizer() -> Callable[[str], str]:
    """Map ids to distinct Mistral ids, the same id always to the same one (one per request,
    so a call and its result agree); a collision takes the next attempt, as pi does."""
    forward: dict[str, str] = {}
    owners: dict[str, str] = {}

    def normalize(tool_call_id: str) -> str:
        known = forward.get(tool_call_id)
        if known is not None:
            return known
        attempt = 0
        while True:
            candidate = derive_tool_call_id(tool_call_id, attempt)
            owner = owners.get(candidate)
            if owner is None or owner == tool_call_id:
                forward[tool_call_id] = candidate
                owners[candidate] = tool_call_id
                return candidate
            attempt += 1

    return normalize


def chat_url(model: Model) -> str:
    """``{baseUrl}/v1/chat/completions`` (the SDK's server URL plus its path)."""
    return model.base_url.rstrip("/") + CHAT_PATH


def request_headers(model: Model, options: StreamOptions, api_key: str) -> dict[str, str]:
    """Bearer auth, the model's and the options' headers, and ``x-affinity`` (see the doc)."""
    headers: dict[str, str] = {"Authorization": f"Bearer {api_key}"}
    extra = {**(model.headers or {}), **(options.headers or {})}
    headers.update(extra)
    # Exact-name check as pi: only a header spelled ``x-affinity`` suppresses the session's.
    if options.session_id and AFFINITY_HEADER not in extra:
        headers[AFFINITY_HEADER] = options.session_id
    return headers


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _data_url(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": f"data:{image.mime_type};base64,{image.data}"}


def convert_messages(messages: Sequence[Message], supports_images: bool) -> list[dict[str, Any]]:
    """Turn (already transformed) messages into Mistral chat messages."""
    result: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            _add_user(result, message, supports_images)
        elif isinstance(message, AssistantMessage):
            _add_assistant(result, message)
        else:
            result.append(_tool_message(message, supports_images))
    return result


def _add_user(result: list[dict[str, Any]], message: UserMessage, supports_images: bool) -> None:
    if isinstance(message.content, str):
        result.append({"role": "user", "content": sanitize_surrogates(message.content)})
        return
    had_images = False
    content: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            content.append({"type": "text", "text": sanitize_surrogates(block.text)})
        else:
            had_images = True
            if supports_images:
                content.append(_data_url(block))
    if content:
        result.append({"role": "user", "content": content})
    elif had_images:
        result.append({"role": "user", "content": IMAGE_OMITTED})


def _add_assistant(result: list[dict[str, Any]], message: AssistantMessage) -> None:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"type": "text", "text": sanitize_surrogates(block.text)})
        elif isinstance(block, ThinkingContent):
            if block.thinking.strip():
                text = sanitize_surrogates(block.thinking)
                parts.append({"type": "thinking", "thinking": [{"type": "text", "text": text}]})
        else:
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": _json(block.arguments or {})},
                    "index": 0,  # the SDK's default, which it always writes
                }
            )
    if not parts and not calls:
        return
    converted: dict[str, Any] = {"role": "assistant"}
    if parts:
        converted["content"] = parts
    if calls:
        converted["tool_calls"] = calls
    converted["prefix"] = False  # the SDK's default, which it always writes
    result.append(converted)


def _tool_result_text(text: str, has_images: bool, supports_images: bool, is_error: bool) -> str:
    trimmed = text.strip()
    prefix = "[tool error] " if is_error else ""
    if trimmed:
        suffix = (
            "\n[tool image omitted: model does not support images]"
            if has_images and not supports_images
            else ""
        )
        return f"{prefix}{trimmed}{suffix}"
    if has_images:
        return prefix + ("(see attached image)" if supports_images else IMAGE_OMITTED)
    return prefix + "(no tool output)"


def _tool_message(message: ToolResultMessage, supports_images: bool) -> dict[str, Any]:
    text = "\n".join(
        sanitize_surrogates(block.text)
        for block in message.content
        if isinstance(block, TextContent)
    )
    images = [block for block in message.content if isinstance(block, ImageContent)]
    content: list[dict[str, Any]] = [
        {
            "type": "text",
            "text": _tool_result_text(text, bool(images), supports_images, message.is_error),
        }
    ]
    if supports_images:
        content += [_data_url(image) for image in images]
    return {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "name": message.tool_name,
        "content": content,
    }


def convert_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Tools as Mistral function tools (``strict: false``, as pi sends them)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": False,
            },
        }
        for tool in tools
    ]


def map_tool_choice(choice: ToolChoice) -> Any:
    """pi's tool choice as Mistral's: a mode string, or a named function."""
    if isinstance(choice, str):
        return choice
    function = choice.get("function") or {}
    return {"type": "function", "function": {"name": function.get("name")}}


def build_request_body(
    model: Model, context: Context, options: StreamOptions, mistral: MistralOptions
) -> dict[str, Any]:
    """The JSON body of a streaming chat request (ids normalised for this one request)."""
    normalize = tool_call_id_normalizer()
    history = transform_messages(
        context.messages, model, lambda tool_call_id, _target, _source: normalize(tool_call_id)
    )
    messages = convert_messages(history, "image" in model.input)
    if context.system_prompt:
        messages.insert(
            0, {"role": "system", "content": sanitize_surrogates(context.system_prompt)}
        )
    body: dict[str, Any] = {"model": model.id, "stream": True, "messages": messages}
    if context.tools:
        body["tools"] = convert_tools(context.tools)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if mistral.tool_choice:
        body["tool_choice"] = map_tool_choice(mistral.tool_choice)
    if mistral.prompt_mode:
        body["prompt_mode"] = mistral.prompt_mode
    if mistral.reasoning_effort:
        body["reasoning_effort"] = mistral.reasoning_effort
    return body
