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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
import httpx2
import orjson

from pitrio.providers._env_keys import get_env_api_key
from pitrio.providers._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pitrio.providers._http import (
    HTTPStatusError,
    InvalidStreamError,
    apply_on_payload,
    describe_failure,
    failure_diagnostics,
    new_message_builder,
    open_sse,
    response_callback,
    sse_json,
)
from pitrio.providers._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingBudgets,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.providers._models import clamp_thinking_level, with_cost
from pitrio.providers._partial import AssistantMessageBuilder
from pitrio.providers._registry import (
    ApiProvider,
    ProviderError,
    ProviderRegistry,
    default_registry,
)
from pitrio.providers._sse import SSEEvent
from pitrio.providers._stream import AssistantMessageEventStream, now_ms
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


def map_finish_reason(reason: str) -> StopReason:
    """Map Gemini's ``finishReason`` to pi's stop reason.

    Raises:
        ProviderError: a reason pi does not know (``Unhandled stop reason: ...``).
    """
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _ERROR_FINISH_REASONS:
        return "error"
    raise ProviderError(f"Unhandled stop reason: {reason}")


def usage_from_metadata(model: Model, metadata: Mapping[str, Any]) -> Usage:
    """Turn ``usageMetadata`` into pi's usage: thoughts count as output, cached as cache read."""
    cached = metadata.get("cachedContentTokenCount") or 0
    usage = Usage(
        input=(metadata.get("promptTokenCount") or 0) - cached,
        output=(metadata.get("candidatesTokenCount") or 0)
        + (metadata.get("thoughtsTokenCount") or 0),
        cache_read=cached,
        cache_write=0,
        total_tokens=metadata.get("totalTokenCount") or 0,
    )
    return with_cost(model, usage)


def _compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _error_message(exc: BaseException) -> str:
    """The ``errorMessage`` for a failed request, in the Google SDK's words for HTTP errors."""
    if isinstance(exc, HTTPStatusError):
        if "application/json" in exc.headers.get("content-type", ""):
            try:
                return _compact_json(orjson.loads(exc.body))
            except orjson.JSONDecodeError:
                pass
        reason = httpx2.codes.get_reason_phrase(exc.status)
        return _compact_json({"error": {"message": exc.body, "code": exc.status, "status": reason}})
    return describe_failure(exc)


class _Stream:
    """Turns the response's chunks into pi's events (one instance per response)."""

    def __init__(
        self, model: Model, builder: AssistantMessageBuilder, out: AssistantMessageEventStream
    ) -> None:
        self.model = model
        self.builder = builder
        self.out = out
        self.current: int | None = None  # index of the open text or thinking block
        self.tool_call_ids: set[str] = set()
        self.finished = False  # a candidate carried a finishReason
        self.block_reason: str | None = None  # promptFeedback.blockReason, if any

    async def close_block(self) -> None:
        index = self.current
        if index is None:
            return
        self.current = None
        builder = self.builder
        partial = builder.snapshot()
        content = builder.text_of(index)
        if builder.kind(index) == "text":
            await self.out.emit(TextEndEvent(content_index=index, content=content, partial=partial))
        else:
            await self.out.emit(
                ThinkingEndEvent(content_index=index, content=content, partial=partial)
            )

    async def chunk(self, chunk: Mapping[str, Any]) -> None:
        builder = self.builder
        if "error" in chunk and not chunk.get("candidates"):
            # The SDK's wording for an error object in the stream. (pi reads an SSE-framed error
            # as an empty chunk and ends with "stop"; pitrio reports it.)
            error = chunk["error"] if isinstance(chunk["error"], Mapping) else {}
            raise ProviderError(f"got status: {error.get('status')}. {_compact_json(chunk)}")
        response_id = chunk.get("responseId")
        if response_id and not builder.header.response_id:
            builder.update(response_id=response_id)
        candidates = chunk.get("candidates") or ()
        candidate: Mapping[str, Any] = candidates[0] if candidates else {}
        content = candidate.get("content") or {}
        for part in content.get("parts") or ():
            text = part.get("text")
            if text is not None:
                await self.text_part(
                    text, part.get("thought") is True, part.get("thoughtSignature")
                )
            call = part.get("functionCall")
            if call is not None:  # pi tests the object, so an empty call still counts
                await self.function_call(call, part.get("thoughtSignature"))
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            self.block_reason = str(feedback["blockReason"])
        finish = candidate.get("finishReason")
        if finish:
            self.finished = True
            stop_reason = map_finish_reason(finish)
            if self.tool_call_ids:
                stop_reason = "toolUse"
            builder.update(stop_reason=stop_reason)
        metadata = chunk.get("usageMetadata")
        if metadata is not None:
            builder.update(usage=usage_from_metadata(self.model, metadata))

    async def text_part(self, text: str, thinking: bool, signature: str | None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"part text is not a string: {text!r}")
        builder = self.builder
        out = self.out
        kind = "thinking" if thinking else "text"
        index = self.current
        if index is None or builder.kind(index) != kind:
            await self.close_block()
            index = builder.add_thinking() if thinking else builder.add_text()
            self.current = index
            start = ThinkingStartEvent if thinking else TextStartEvent
            await out.emit(start(content_index=index, partial=builder.snapshot()))
        builder.append(index, text)
        if signature:  # keep the last non-empty signature of the block
            builder.set_signature(index, signature)
        delta = ThinkingDeltaEvent if thinking else TextDeltaEvent
        await out.emit(delta(content_index=index, delta=text, partial=builder.snapshot()))

    async def function_call(self, call: Mapping[str, Any], signature: str | None) -> None:
        await self.close_block()
        builder = self.builder
        out = self.out
        name = call.get("name")
        provided = call.get("id")
        if provided and provided not in self.tool_call_ids:
            call_id = provided
        else:
            # pi writes `${name}_${Date.now()}_${++counter}`: a missing name reads "undefined".
            call_id = (
                f"{name if name is not None else 'undefined'}_{now_ms()}_{next(_tool_call_counter)}"
            )
        self.tool_call_ids.add(call_id)
        args = call.get("args")
        arguments: dict[str, Any] = dict(args) if isinstance(args, Mapping) else {}
        index = builder.add_tool_call(
            id=call_id,
            name=name or "",
            arguments=arguments,
            thought_signature=signature or None,
        )
        await out.emit(ToolCallStartEvent(content_index=index, partial=builder.snapshot()))
        delta = _compact_json(arguments)
        builder.append(index, delta)
        await out.emit(
            ToolCallDeltaEvent(content_index=index, delta=delta, partial=builder.snapshot())
        )
        tool_call = builder.block(index)
        assert isinstance(tool_call, ToolCall)
        await out.emit(
            ToolCallEndEvent(content_index=index, tool_call=tool_call, partial=builder.snapshot())
        )


# --------------------------------------------------------------------------- providers


async def _read_events(
    state: _Stream,
    events: AsyncIterator[SSEEvent],
    unwrap: Callable[[Mapping[str, Any]], Any] | None = None,
) -> None:
    """Feed every event to ``state``; stop reading at the first bad one and raise its error
    (:func:`open_sse` finishes the response's generators)."""
    async for event in events:
        try:
            chunk = sse_json(event)
            if unwrap is not None and isinstance(chunk, Mapping):
                chunk = unwrap(chunk)
            if not isinstance(chunk, Mapping):
                raise InvalidStreamError(f"Invalid stream chunk (not an object): {event.data!r}")
            await state.chunk(chunk)
        except ProviderError:
            raise
        except (AttributeError, TypeError, ValueError) as exc:  # a chunk of the wrong shape
            snippet = event.data if len(event.data) <= 200 else event.data[:200] + "..."
            raise InvalidStreamError(f"Invalid stream chunk ({exc}): {snippet}") from exc
    if not state.finished:
        if state.block_reason is not None:
            raise ProviderError(f"Prompt blocked: {state.block_reason}")
        raise ProviderError(NO_FINISH_MESSAGE)
    await state.close_block()


async def _gemini_endpoint(model: Model, options: StreamOptions) -> GoogleEndpoint:
    api_key = options.api_key or get_env_api_key(model.provider) or ""
    return GoogleEndpoint(url=request_url(model), headers=_request_headers(model, options, api_key))


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    google: GoogleOptions,
    out: AssistantMessageEventStream,
) -> None:
    await run_google_stream(API, model, context, options, google, out, _gemini_endpoint)


async def run_google_stream(
    api: str,
    model: Model,
    context: Context,
    options: StreamOptions,
    google: GoogleOptions,
    out: AssistantMessageEventStream,
    endpoint: EndpointResolver,
) -> None:
    """Stream one ``streamGenerateContent`` response of the Gemini codec into ``out``.

    The message is labelled ``api``; ``endpoint`` gives the URL, headers and wrapping. Every
    failure (resolving the endpoint included) ends the stream with an error event.
    """
    builder = new_message_builder(model)
    builder.update(api=api)
    out.attach(builder)
    try:
        target = await endpoint(model, options)
        body: Any = build_request_body(model, context, options, google)
        if target.wrap_body is not None:
            body = target.wrap_body(body)
        body = await apply_on_payload(options, body, model)
        async with open_sse(
            target.url,
            headers=dict(target.headers),
            body=body,
            timeout_ms=options.timeout_ms,
            max_retries=options.max_retries,
            max_retry_delay_ms=options.max_retry_delay_ms,
            stall_timeout_ms=options.stall_timeout_ms,
            on_response=response_callback(options, model),
        ) as events:
            await out.emit(StartEvent(partial=builder.snapshot()))
            await _read_events(_Stream(model, builder, out), events, target.unwrap_chunk)
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderError(UNKNOWN_ERROR)
    except Exception as exc:  # failures are data: the stream ends with an error event
        builder.update(
            stop_reason="error",
            error_message=_error_message(exc),
            diagnostics=failure_diagnostics(exc, builder.header.diagnostics),
        )
        await out.emit(ErrorEvent(reason="error", error=builder.build()))
        return
    stop_reason = builder.stop_reason
    assert stop_reason in ("stop", "length", "toolUse")
    await out.emit(DoneEvent(reason=stop_reason, message=builder.build()))


async def stream_google(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream a Gemini response with API-specific options (pi's ``streamGoogle``).

    ``options.provider_options`` holds :class:`GoogleOptions` (``toolChoice``, ``thinking``).
    Thinking is only configured when ``thinking`` is given.
    """
    google = GoogleOptions.from_provider_options(options.provider_options)
    await _run(model, context, options, google, out)


async def stream_simple_google(
    model: Model, context: Context, options: StreamOptions, out: AssistantMessageEventStream
) -> None:
    """Stream a Gemini response from the unified options (pi's ``streamSimpleGoogle``).

    ``options.reasoning`` picks ``thinkingLevel`` (Gemini 3, Gemma 4) or ``thinkingBudget``
    (others, ``options.thinking_budgets`` overriding pi's table); no reasoning turns visible
    thinking off. ``max_tokens`` defaults to ``min(model.max_tokens, 32000)``.

    Raises:
        ProviderError: no API key in the options or the environment (as pi, before any event).
    """
    api_key = options.api_key or get_env_api_key(model.provider)
    if not api_key:
        raise ProviderError(f"No API key for provider: {model.provider}")
    base = attrs.evolve(options, api_key=api_key, max_tokens=simple_max_tokens(model, options))
    google = GoogleOptions.from_provider_options(options.provider_options)
    thinking = simple_thinking(model, options)
    await _run(model, context, base, attrs.evolve(google, thinking=thinking), out)


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


google_provider: Final = ApiProvider(
    api=API, stream=stream_google, stream_simple=stream_simple_google
)
"""The ``google-generative-ai`` provider, ready to register."""


def register_google(registry: ProviderRegistry = default_registry) -> None:
    """Register the ``google-generative-ai`` provider in ``registry``."""
    registry.register(google_provider)


__all__ = [
    "API",
    "EndpointResolver",
    "GoogleEndpoint",
    "GoogleOptions",
    "GoogleThinking",
    "GoogleThinkingLevel",
    "build_request_body",
    "convert_messages",
    "convert_tools",
    "google_provider",
    "map_finish_reason",
    "register_google",
    "request_headers",
    "request_url",
    "run_google_stream",
    "simple_max_tokens",
    "simple_thinking",
    "stream_google",
    "stream_simple_google",
    "usage_from_metadata",
]
