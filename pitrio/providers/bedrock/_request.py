"""The ConverseStream request body, built as pi 0.73.1 builds its ``ConverseStreamCommand``.

* **Messages.** The conversation goes through
  :func:`~pitrio.providers._transform.transform_messages` (foreign tool-call ids rewritten to
  ``^[a-zA-Z0-9_-]{1,64}$``). User text and images become ``{"text"}`` and ``{"image":
  {"format", "source": {"bytes"}}}`` blocks (the bytes base64 in JSON, as the SDK sends a blob);
  consecutive tool results share one user message of ``toolResult`` blocks with ``status``
  ``success`` or ``error``; assistant messages keep text, ``toolUse`` and ``reasoningContent``
  blocks, dropping empty ones and the whole message when nothing is left. Claude models replay
  signed reasoning with its signature and unsigned reasoning as plain text; other models get
  reasoning without a signature (they refuse the field).
* **Prompt caching.** For Claude models that support it (4.x, 3.7 Sonnet, 3.5 Haiku, or any
  model with ``AWS_BEDROCK_FORCE_CACHE=1``) and retention other than ``none``, a ``cachePoint``
  (``ttl: "1h"`` for ``long``) follows the system prompt and ends the last user message.
* **Thinking.** For Claude reasoning models with ``reasoning`` set,
  ``additionalModelRequestFields`` carries ``thinking`` (adaptive with an ``output_config``
  effort for Opus 4.6/4.7 and Sonnet 4.6, else ``enabled`` with ``budget_tokens``), ``display``
  (``summarized`` unless told otherwise; left out for GovCloud) and, for budget models, the
  interleaved-thinking beta.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._registry import ProviderError
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages

INTERLEAVED_THINKING_BETA: Final = "interleaved-thinking-2025-05-14"
DEFAULT_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 16384,  # Claude has no xhigh budget: high's
}
IMAGE_FORMATS: Final[Mapping[str, str]] = {
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}

ThinkingDisplay: TypeAlias = Literal["summarized", "omitted"]
ToolChoice: TypeAlias = "Literal['auto', 'any', 'none'] | Mapping[str, Any]"

_TOOL_ID_INVALID: Final = re.compile(r"[^a-zA-Z0-9_-]")
_SEPARATORS: Final = re.compile(r"[\s_.:]+")
_OPTION_FIELDS: Final = (
    "region",
    "profile",
    "tool_choice",
    "interleaved_thinking",
    "thinking_display",
    "request_metadata",
    "bearer_token",
)
_OPTION_NAMES: Final = {
    **{name: name for name in _OPTION_FIELDS},
    **{re.sub(r"_(\w)", lambda m: m.group(1).upper(), name): name for name in _OPTION_FIELDS},
}


@attrs.frozen(kw_only=True)
class BedrockOptions:
    """The options only this API has (pi's ``BedrockOptions`` minus the common ones).

    Read from ``StreamOptions.provider_options`` (snake_case or pi's camelCase keys; others
    ignored). ``reasoning`` and ``thinking_budgets`` are the common ``StreamOptions`` fields.
    """

    region: str | None = None
    """The AWS region (else ``AWS_REGION``, ``AWS_DEFAULT_REGION`` ...; see ``_auth``)."""
    profile: str | None = None
    """The AWS profile whose credentials and region are used (needs ``pitrio[aws]``)."""
    tool_choice: ToolChoice | None = None
    """``"auto"``, ``"any"``, ``"none"`` or ``{"type": "tool", "name": ...}``."""
    interleaved_thinking: bool = True
    """Ask budget-thinking Claude models for interleaved thinking (a beta)."""
    thinking_display: ThinkingDisplay | None = None
    """How Claude returns thinking; ``summarized`` unless told otherwise."""
    request_metadata: Mapping[str, str] | None = None
    """Tags for cost allocation (``requestMetadata``)."""
    bearer_token: str | None = attrs.field(default=None, repr=False)
    """A Bedrock API key (else ``AWS_BEARER_TOKEN_BEDROCK``)."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> BedrockOptions:
        """Read the options from a ``provider_options`` mapping (unknown keys ignored)."""
        if not data:
            return cls()
        values = {_OPTION_NAMES[key]: value for key, value in data.items() if key in _OPTION_NAMES}
        if values.get("interleaved_thinking") is None:
            values.pop("interleaved_thinking", None)
        return cls(**values)


# --------------------------------------------------------------------------- model traits


def _candidates(model: Model) -> list[str]:
    values = [model.id, model.name] if model.name else [model.id]
    out = []
    for value in values:
        lower = value.lower()
        out += [lower, _SEPARATORS.sub("-", lower)]
    return out


def is_claude(model: Model) -> bool:
    """Whether the model is Anthropic's Claude (by id, or by name for application profiles)."""
    model_id = model.id.lower()
    name = (model.name or "").lower()
    return (
        "anthropic.claude" in model_id
        or "anthropic/claude" in model_id
        or "anthropic.claude" in name
        or "anthropic/claude" in name
        or "claude" in name
    )


def supports_adaptive_thinking(model: Model) -> bool:
    """Opus 4.6/4.7 and Sonnet 4.6 think adaptively, with an effort instead of a budget."""
    return any(
        marker in value
        for value in _candidates(model)
        for marker in ("opus-4-6", "opus-4-7", "sonnet-4-6")
    )


def supports_prompt_caching(model: Model, env: Mapping[str, str] | None = None) -> bool:
    """Whether cache points may be sent (see the module docstring)."""
    candidates = _candidates(model)
    if not any("claude" in value for value in candidates):
        return (os.environ if env is None else env).get("AWS_BEDROCK_FORCE_CACHE") == "1"
    return any(
        "-4-" in value or "claude-3-7-sonnet" in value or "claude-3-5-haiku" in value
        for value in candidates
    )


def map_thinking_level_to_effort(model: Model, level: ThinkingLevel) -> str:
    """The adaptive-thinking effort for ``level`` (native ``xhigh`` on Opus 4.7)."""
    if level == "xhigh" and any("opus-4-7" in value for value in _candidates(model)):
        return "xhigh"
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    if level in ("minimal", "low"):
        return "low"
    if level == "medium":
        return "medium"
    return "high"


def _is_gov_cloud(model: Model, region: str | None) -> bool:
    if region and region.lower().startswith("us-gov-"):
        return True
    model_id = model.id.lower()
    return model_id.startswith("us-gov.") or model_id.startswith("arn:aws-us-gov:")


# --------------------------------------------------------------------------- body


def normalize_tool_call_id(tool_call_id: str, model: Model, source: AssistantMessage) -> str:
    """Rewrite a foreign tool-call id to Bedrock's ``^[a-zA-Z0-9_-]{1,64}$``."""
    return _TOOL_ID_INVALID.sub("_", tool_call_id)[:64]


def resolve_cache_retention(retention: str | None) -> str:
    """The retention in effect: the option, else ``long`` with ``PI_CACHE_RETENTION=long``."""
    if retention:
        return retention
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"


def _cache_point(retention: str) -> dict[str, Any]:
    point: dict[str, Any] = {"type": "default"}
    if retention == "long":
        point["ttl"] = "1h"
    return {"cachePoint": point}


def _image(image: ImageContent) -> dict[str, Any]:
    image_format = IMAGE_FORMATS.get(image.mime_type)
    if image_format is None:
        raise ProviderError(f"Unknown image type: {image.mime_type}")
    return {"image": {"format": image_format, "source": {"bytes": image.data}}}


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    return {
        "toolResult": {
            "toolUseId": message.tool_call_id,
            "content": [
                _image(block)
                if isinstance(block, ImageContent)
                else {"text": sanitize_surrogates(block.text)}
                for block in message.content
            ],
            "status": "error" if message.is_error else "success",
        }
    }


def _assistant_blocks(message: AssistantMessage, signed: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"text": sanitize_surrogates(block.text)})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.arguments}}
            )
        elif isinstance(block, ThinkingContent):
            if not block.thinking.strip():
                continue
            text = sanitize_surrogates(block.thinking)
            if not signed:
                blocks.append({"reasoningContent": {"reasoningText": {"text": text}}})
            elif not block.thinking_signature or not block.thinking_signature.strip():
                # Bedrock refuses reasoning without its signature: replay it as text.
                blocks.append({"text": text})
            else:
                reasoning = {"text": text, "signature": block.thinking_signature}
                blocks.append({"reasoningContent": {"reasoningText": reasoning}})
    return blocks


def convert_messages(context: Context, model: Model, retention: str) -> list[dict[str, Any]]:
    """The ``messages`` of the request (see the module docstring)."""
    result: list[dict[str, Any]] = []
    signed = is_claude(model)
    messages = transform_messages(context.messages, model, normalize_tool_call_id)
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                content = [{"text": sanitize_surrogates(message.content)}]
            else:
                content = [
                    _image(block)
                    if isinstance(block, ImageContent)
                    else {"text": sanitize_surrogates(block.text)}
                    for block in message.content
                ]
            result.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message, signed)
            if blocks:
                result.append({"role": "assistant", "content": blocks})
        else:
            results = [_tool_result(message)]
            while i < len(messages) and isinstance(messages[i], ToolResultMessage):
                following = messages[i]
                assert isinstance(following, ToolResultMessage)
                results.append(_tool_result(following))
                i += 1
            result.append({"role": "user", "content": results})
    if retention != "none" and supports_prompt_caching(model) and result:
        last = result[-1]
        if last["role"] == "user":
            last["content"].append(_cache_point(retention))
    return result


def _system(prompt: str | None, model: Model, retention: str) -> list[dict[str, Any]] | None:
    if not prompt:
        return None
    blocks: list[dict[str, Any]] = [{"text": sanitize_surrogates(prompt)}]
    if retention != "none" and supports_prompt_caching(model):
        blocks.append(_cache_point(retention))
    return blocks


def _tool_config(tools: Sequence[Tool] | None, choice: ToolChoice | None) -> dict[str, Any] | None:
    if not tools or choice == "none":
        return None
    config: dict[str, Any] = {
        "tools": [
            {
                "toolSpec": {
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": {"json": tool.parameters},
                }
            }
            for tool in tools
        ]
    }
    if choice == "auto":
        config["toolChoice"] = {"auto": {}}
    elif choice == "any":
        config["toolChoice"] = {"any": {}}
    elif isinstance(choice, Mapping) and choice.get("type") == "tool":
        config["toolChoice"] = {"tool": {"name": choice["name"]}}
    return config


def additional_model_request_fields(
    model: Model, options: StreamOptions, bedrock: BedrockOptions, region: str | None
) -> dict[str, Any] | None:
    """Claude's thinking fields, or ``None`` (see the module docstring)."""
    level = options.reasoning
    if not level or not model.reasoning or not is_claude(model):
        return None
    display = None if _is_gov_cloud(model, region) else (bedrock.thinking_display or "summarized")
    fields: dict[str, Any]
    if supports_adaptive_thinking(model):
        thinking: dict[str, Any] = {"type": "adaptive"}
        if display is not None:
            thinking["display"] = display
        fields = {
            "thinking": thinking,
            "output_config": {"effort": map_thinking_level_to_effort(model, level)},
        }
    else:
        key = "high" if level == "xhigh" else level
        custom = getattr(options.thinking_budgets, key, None) if options.thinking_budgets else None
        budget = custom if custom is not None else DEFAULT_THINKING_BUDGETS[level]
        thinking = {"type": "enabled", "budget_tokens": budget}
        if display is not None:
            thinking["display"] = display
        fields = {"thinking": thinking}
        if bedrock.interleaved_thinking:
            fields["anthropic_beta"] = [INTERLEAVED_THINKING_BETA]
    return fields


def build_command(
    model: Model,
    context: Context,
    options: StreamOptions,
    bedrock: BedrockOptions,
    region: str | None,
) -> dict[str, Any]:
    """The command input as pi builds it: ``modelId`` plus the JSON body's fields.

    ``region`` is the configured region (for the GovCloud rule), not the resolved one.
    """
    retention = resolve_cache_retention(options.cache_retention)
    inference: dict[str, Any] = {}
    if options.max_tokens is not None:
        inference["maxTokens"] = options.max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    command: dict[str, Any] = {
        "modelId": model.id,
        "messages": convert_messages(context, model, retention),
        "system": _system(context.system_prompt, model, retention),
        "inferenceConfig": inference,
        "toolConfig": _tool_config(context.tools, bedrock.tool_choice),
        "additionalModelRequestFields": additional_model_request_fields(
            model, options, bedrock, region
        ),
    }
    if bedrock.request_metadata is not None:
        command["requestMetadata"] = dict(bedrock.request_metadata)
    return {key: value for key, value in command.items() if value is not None}
