"""The ``google-generative-ai`` provider: Gemini's ``streamGenerateContent`` over SSE.

Ports pi-ai 0.73.1's Google provider (``providers/google.js`` with ``google-shared.js``), which
talks to the Gemini API through the ``@google/genai`` SDK. pitrio speaks the REST wire format
directly: ``POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse`` with the key in the
``x-goog-api-key`` header. Every ``data:`` event is one ``GenerateContentResponse``.

**Blocks.** A part with ``thought: true`` is reasoning, any other part with ``text`` is answer
text; consecutive parts of the same kind grow one block. Gemini sends each function call whole,
so a tool call is reported as ``toolcall_start``, one ``toolcall_delta`` carrying all the
arguments as JSON, and ``toolcall_end``, as pi does. A call without an id (or with an id already
used in this response) gets ``{name}_{epoch ms}_{counter}``.

**Thought signatures** (opaque base64 that lets Gemini resume its reasoning) are kept on the
block whose part carried them: ``thinkingSignature`` on thinking, ``textSignature`` on text and
``thoughtSignature`` on tool calls. On replay a signature is sent back only when the message
came from the same provider and model and the signature is valid base64; pi 0.73.1 has no
"skip validation" sentinel for this API and neither does pitrio.

**Failures.** HTTP errors give the message the Google SDK gives: the JSON error body
(``{"error": {"code": 429, "message": ..., "status": "RESOURCE_EXHAUSTED"}}``), or an equivalent
object built from the status and text of a non-JSON body. An oversized prompt reads "The input
token count ... exceeds the maximum number of tokens allowed", which
:func:`~pitrio.providers.is_context_overflow` recognises.

**Completeness.** Gemini ends an answer with a candidate carrying ``finishReason``. A body that
ends without one is an error ("Stream ended without finishReason: the response was terminated
early", or "Prompt blocked: <blockReason>" when ``promptFeedback`` said so), where pi 0.73.1
reports whatever arrived as a ``stop``.

**Shared codec.** :func:`run_google_stream` runs one request of this codec against a
:class:`GoogleEndpoint` (URL, auth headers, optional request/response envelopes); the
``google-vertex`` and ``google-gemini-cli`` providers use it with their own endpoints, and
:func:`simple_thinking` / :func:`simple_max_tokens` for their unified options.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs

from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingBudgets,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._models import clamp_thinking_level
from pitrio.providers._text import sanitize_surrogates
from pitrio.providers._transform import transform_messages

API: Final = "google-generative-ai"
"""The wire API id this module registers."""

GoogleThinkingLevel: TypeAlias = Literal[
    "THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"
]
"""Gemini's ``thinkingLevel`` values (Gemini 3 and Gemma 4)."""
ToolChoice: TypeAlias = Literal["auto", "none", "any"]

SIMPLE_MAX_TOKENS_CAP: Final = 32_000
"""``stream_simple`` asks for ``min(model.max_tokens, 32000)`` output tokens by default."""

NO_FINISH_MESSAGE: Final = "Stream ended without finishReason: the response was terminated early"
"""The ``errorMessage`` of a body that ends before the answer did ("terminated" makes the
session's retry treat it as the dropped connection it usually is)."""
UNKNOWN_ERROR: Final = "An unknown error occurred"
"""pi's message for a response that finished with an error finish reason (``SAFETY`` ...)."""

_TOOL_CHOICE_MODES: Final[Mapping[str, str]] = {"auto": "AUTO", "none": "NONE", "any": "ANY"}

_ERROR_FINISH_REASONS: Final = frozenset(
    {
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "SAFETY",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "IMAGE_OTHER",
        "RECITATION",
        "FINISH_REASON_UNSPECIFIED",
        "OTHER",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "NO_IMAGE",
    }
)
"""Finish reasons pi knows and maps to ``error``; any other unknown one fails the stream."""

# Budgets (tokens) for Gemini 2.5 models by thinking level, as pi chooses them.
_BUDGETS_25_PRO: Final = {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}
_BUDGETS_25_FLASH_LITE: Final = {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}
_BUDGETS_25_FLASH: Final = {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}
DYNAMIC_THINKING_BUDGET: Final = -1
"""``thinkingBudget: -1`` lets the model decide how much to think (models without a table)."""

_BASE64_SIGNATURE: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_TOOL_CALL_ID_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")
_GEMINI_MAJOR: Final = re.compile(r"^gemini(?:-live)?-(\d+)")

# Ids generated for function calls that came without one; process-wide like pi's counter, so
# two calls in one millisecond still differ.
_tool_call_counter = itertools.count(1)


# --------------------------------------------------------------------------- options


@attrs.frozen(kw_only=True)
class GoogleThinking:
    """The ``thinking`` option of :func:`stream_google` (pi's ``GoogleOptions.thinking``)."""

    enabled: bool
    budget_tokens: int | None = None
    """``thinkingBudget`` in tokens (Gemini 2.5); ``-1`` is dynamic, ``0`` is off."""
    level: GoogleThinkingLevel | None = None
    """``thinkingLevel`` (Gemini 3, Gemma 4); takes precedence over ``budget_tokens``."""


@attrs.frozen(kw_only=True)
class GoogleOptions:
    """API-specific options, read from ``StreamOptions.provider_options``.

    ``provider_options`` may hold pi's keys (``toolChoice``, ``thinking: {enabled,
    budgetTokens, level}``) or their snake_case spellings; ``thinking`` may also be a
    :class:`GoogleThinking`.
    """

    tool_choice: ToolChoice | None = None
    thinking: GoogleThinking | None = None

    @classmethod
    def from_provider_options(cls, options: Mapping[str, Any] | None) -> GoogleOptions:
        """Read the options pi's ``streamGoogle`` takes from a ``provider_options`` mapping."""
        if not options:
            return cls()
        tool_choice = options.get("toolChoice", options.get("tool_choice"))
        raw = options.get("thinking")
        thinking: GoogleThinking | None
        if raw is None or isinstance(raw, GoogleThinking):
            thinking = raw
        elif isinstance(raw, Mapping):
            thinking = GoogleThinking(
                enabled=bool(raw.get("enabled")),
                budget_tokens=raw.get("budgetTokens", raw.get("budget_tokens")),
                level=raw.get("level"),
            )
        else:
            raise TypeError(f"provider_options['thinking'] must be a mapping, got {raw!r}")
        return cls(tool_choice=tool_choice, thinking=thinking)


# --------------------------------------------------------------------------- model families


def is_gemini3_pro(model_id: str) -> bool:
    """Whether ``model_id`` names a Gemini 3 Pro model (``thinkingLevel`` LOW/HIGH only)."""
    return re.search(r"gemini-3(?:\.\d+)?-pro", model_id.lower()) is not None


def is_gemini3_flash(model_id: str) -> bool:
    """Whether ``model_id`` names a Gemini 3 Flash (or Flash-Lite) model."""
    return re.search(r"gemini-3(?:\.\d+)?-flash", model_id.lower()) is not None


def is_gemma4(model_id: str) -> bool:
    """Whether ``model_id`` names a Gemma 4 model (``thinkingLevel`` MINIMAL/HIGH)."""
    return re.search(r"gemma-?4", model_id.lower()) is not None


def requires_tool_call_id(model_id: str) -> bool:
    """Whether a model served through Google's APIs needs ids on function calls and responses."""
    return model_id.startswith(("claude-", "gpt-oss-"))


def _gemini_major_version(model_id: str) -> int | None:
    match = _GEMINI_MAJOR.match(model_id.lower())
    return int(match.group(1)) if match else None


def supports_multimodal_function_response(model_id: str) -> bool:
    """Whether images may go inside ``functionResponse.parts`` (Gemini 3+ and non-Gemini)."""
    major = _gemini_major_version(model_id)
    return major is None or major >= 3


def disabled_thinking_config(model: Model) -> dict[str, Any]:
    """The ``thinkingConfig`` that turns visible thinking off for ``model``.

    Gemini 3 and Gemma 4 cannot switch thinking off, so they get their lowest level without
    ``includeThoughts``; Gemini 2.x takes a zero budget.
    """
    if is_gemini3_pro(model.id):
        return {"thinkingLevel": "LOW"}
    if is_gemini3_flash(model.id) or is_gemma4(model.id):
        return {"thinkingLevel": "MINIMAL"}
    return {"thinkingBudget": 0}


def thinking_level_for(effort: ThinkingLevel, model: Model) -> GoogleThinkingLevel | None:
    """Map a pi thinking level to Gemini's ``thinkingLevel`` for a level-based model."""
    if is_gemini3_pro(model.id):
        if effort in ("minimal", "low"):
            return "LOW"
        if effort in ("medium", "high"):
            return "HIGH"
    if is_gemma4(model.id):
        if effort in ("minimal", "low"):
            return "MINIMAL"
        if effort in ("medium", "high"):
            return "HIGH"
    levels: dict[str, GoogleThinkingLevel] = {
        "minimal": "MINIMAL",
        "low": "LOW",
        "medium": "MEDIUM",
        "high": "HIGH",
    }
    return levels.get(effort)


def thinking_budget_for(
    model: Model, effort: ThinkingLevel, budgets: ThinkingBudgets | None
) -> int | None:
    """Return the ``thinkingBudget`` for a budget-based model (custom budgets win)."""
    if budgets is not None and effort != "xhigh":
        custom: int | None = getattr(budgets, effort)
        if custom is not None:
            return custom
    if "2.5-pro" in model.id:
        table = _BUDGETS_25_PRO
    elif "2.5-flash-lite" in model.id:
        table = _BUDGETS_25_FLASH_LITE
    elif "2.5-flash" in model.id:
        table = _BUDGETS_25_FLASH
    else:
        return DYNAMIC_THINKING_BUDGET
    return table.get(effort)


# --------------------------------------------------------------------------- request


def _valid_signature(signature: str | None) -> bool:
    # Signatures are bytes on the wire (base64); anything else would make the request fail.
    if not signature or len(signature) % 4:
        return False
    return _BASE64_SIGNATURE.fullmatch(signature) is not None


def _replay_signature(same_model: bool, signature: str | None) -> str | None:
    return signature if same_model and _valid_signature(signature) else None


def _inline_data(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """Turn the conversation into Gemini ``contents`` (after the cross-provider transform)."""
    needs_ids = requires_tool_call_id(model.id)

    def normalize_id(tool_call_id: str, _model: Model, _source: AssistantMessage) -> str:
        if not needs_ids:
            return tool_call_id
        return _TOOL_CALL_ID_UNSAFE.sub("_", tool_call_id)[:64]

    contents: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, normalize_id):
        if isinstance(message, UserMessage):
            _add_user(contents, message)
        elif isinstance(message, AssistantMessage):
            _add_assistant(contents, message, model, needs_ids)
        else:
            _add_tool_result(contents, message, model, needs_ids)
    return contents


def _add_user(contents: list[dict[str, Any]], message: UserMessage) -> None:
    if isinstance(message.content, str):
        contents.append({"role": "user", "parts": [{"text": sanitize_surrogates(message.content)}]})
        return
    parts = [
        {"text": sanitize_surrogates(block.text)}
        if isinstance(block, TextContent)
        else _inline_data(block)
        for block in message.content
    ]
    if parts:
        contents.append({"role": "user", "parts": parts})


def _add_assistant(
    contents: list[dict[str, Any]], message: AssistantMessage, model: Model, needs_ids: bool
) -> None:
    same_model = message.provider == model.provider and message.model == model.id
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if not block.text or not block.text.strip():
                continue
            part: dict[str, Any] = {"text": sanitize_surrogates(block.text)}
            signature = _replay_signature(same_model, block.text_signature)
        elif isinstance(block, ThinkingContent):
            if not block.thinking or not block.thinking.strip():
                continue
            if not same_model:
                # Another model's reasoning is plain context here (no tags: the model would
                # imitate them).
                parts.append({"text": sanitize_surrogates(block.thinking)})
                continue
            part = {"thought": True, "text": sanitize_surrogates(block.thinking)}
            signature = _replay_signature(same_model, block.thinking_signature)
        else:
            call: dict[str, Any] = {"name": block.name, "args": block.arguments}
            if needs_ids:
                call["id"] = block.id
            part = {"functionCall": call}
            signature = _replay_signature(same_model, block.thought_signature)
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    if parts:
        contents.append({"role": "model", "parts": parts})


def _add_tool_result(
    contents: list[dict[str, Any]], message: ToolResultMessage, model: Model, needs_ids: bool
) -> None:
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    images = (
        [block for block in message.content if isinstance(block, ImageContent)]
        if "image" in model.input
        else []
    )
    nested_images = supports_multimodal_function_response(model.id)
    value = sanitize_surrogates(text) if text else ("(see attached image)" if images else "")
    image_parts = [_inline_data(image) for image in images]
    response: dict[str, Any] = {
        "name": message.tool_name,
        "response": {"error": value} if message.is_error else {"output": value},
    }
    if images and nested_images:
        response["parts"] = image_parts
    if needs_ids:
        response["id"] = message.tool_call_id
    part = {"functionResponse": response}
    # All function responses of one turn go in a single user content (Cloud Code Assist
    # requires it, and it is what Gemini itself produces).
    last = contents[-1] if contents else None
    if (
        last is not None
        and last["role"] == "user"
        and any("functionResponse" in p for p in last["parts"])
    ):
        last["parts"].append(part)
    else:
        contents.append({"role": "user", "parts": [part]})
    if images and not nested_images:
        # Gemini before 3 cannot take images in a function response: send them as a user turn.
        contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *image_parts]})


def convert_tools(tools: Sequence[Tool]) -> list[dict[str, Any]] | None:
    """Turn tools into one ``functionDeclarations`` tool with full JSON-schema parameters."""
    if not tools:
        return None
    return [
        {
            "functionDeclarations": [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": tool.parameters,
                }
                for tool in tools
            ]
        }
    ]


def build_request_body(
    model: Model, context: Context, options: StreamOptions, google: GoogleOptions
) -> dict[str, Any]:
    """Return the JSON body of a ``streamGenerateContent`` request, as the SDK writes it for pi."""
    body: dict[str, Any] = {"contents": convert_messages(model, context)}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens is not None:
        generation["maxOutputTokens"] = options.max_tokens
    if context.system_prompt:
        body["systemInstruction"] = {
            "role": "user",
            "parts": [{"text": sanitize_surrogates(context.system_prompt)}],
        }
    if context.tools:
        body["tools"] = convert_tools(context.tools)
        if google.tool_choice:
            mode = _TOOL_CHOICE_MODES.get(google.tool_choice, "AUTO")
            body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    thinking = google.thinking
    if thinking is not None and thinking.enabled and model.reasoning:
        config: dict[str, Any] = {"includeThoughts": True}
        if thinking.level is not None:
            config["thinkingLevel"] = thinking.level
        elif thinking.budget_tokens is not None:
            config["thinkingBudget"] = thinking.budget_tokens
        generation["thinkingConfig"] = config
    elif thinking is not None and model.reasoning:
        generation["thinkingConfig"] = disabled_thinking_config(model)
    body["generationConfig"] = generation
    return body


def request_url(model: Model) -> str:
    """``{baseUrl}/models/{id}:streamGenerateContent?alt=sse`` (tuned models keep their prefix)."""
    name = model.id if model.id.startswith(("models/", "tunedModels/")) else f"models/{model.id}"
    return f"{model.base_url.rstrip('/')}/{name}:streamGenerateContent?alt=sse"


def _request_headers(model: Model, options: StreamOptions, api_key: str) -> dict[str, str]:
    return request_headers(model, options, {"x-goog-api-key": api_key} if api_key else {})


def request_headers(
    model: Model, options: StreamOptions, auth: Mapping[str, str]
) -> dict[str, str]:
    """``auth`` headers, then the model's headers, then the options' (later ones win)."""
    headers = dict(auth)
    headers.update(model.headers or {})
    headers.update(options.headers or {})
    return headers


@attrs.frozen(kw_only=True)
class GoogleEndpoint:
    """Where one request of the Gemini codec goes, and how its body and chunks are wrapped.

    The Vertex AI and Cloud Code Assist providers speak the same ``GenerateContent`` codec as
    the Gemini API on other URLs; Cloud Code Assist also wraps the request
    (``{project, model, request}``) and every streamed response (``{response: ...}``).
    """

    url: str
    headers: Mapping[str, str]
    wrap_body: Callable[[dict[str, Any]], Any] | None = None
    """Turns the ``GenerateContentRequest`` body into what is sent (before ``on_payload``)."""
    unwrap_chunk: Callable[[Mapping[str, Any]], Any] | None = None
    """Turns one decoded ``data:`` event into a ``GenerateContentResponse``."""


EndpointResolver: TypeAlias = Callable[[Model, StreamOptions], Awaitable[GoogleEndpoint]]
"""Resolves a request's endpoint (may fetch a token); a failure becomes the error event."""


# --------------------------------------------------------------------------- response


def simple_max_tokens(model: Model, options: StreamOptions) -> int | None:
    """``options.max_tokens``, else ``min(model.max_tokens, 32000)`` (pi's simple options)."""
    if options.max_tokens is None and model.max_tokens > 0:
        return min(model.max_tokens, SIMPLE_MAX_TOKENS_CAP)
    return options.max_tokens


def simple_thinking(
    model: Model,
    options: StreamOptions,
    *,
    levels_for: Callable[[Model], bool] | None = None,
    budget_for: Callable[[Model, ThinkingLevel, ThinkingBudgets | None], int | None] = (
        thinking_budget_for
    ),
) -> GoogleThinking:
    """The ``thinking`` option pi's simple stream derives from ``options.reasoning``.

    ``levels_for`` says which models take a ``thinkingLevel`` (default: Gemini 3 and Gemma 4);
    the others get ``budget_for``'s ``thinkingBudget``. No reasoning turns thinking off.
    """
    if options.reasoning is None:
        return GoogleThinking(enabled=False)
    clamped = clamp_thinking_level(model, options.reasoning)
    effort: ThinkingLevel = "high" if clamped == "off" else clamped
    uses_levels = (
        levels_for(model)
        if levels_for is not None
        else is_gemini3_pro(model.id) or is_gemini3_flash(model.id) or is_gemma4(model.id)
    )
    if uses_levels:
        return GoogleThinking(enabled=True, level=thinking_level_for(effort, model))
    return GoogleThinking(
        enabled=True, budget_tokens=budget_for(model, effort, options.thinking_budgets)
    )
