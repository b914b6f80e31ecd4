"""``--provider faux``: a model that needs no key and no network, for trying the CLI out.

It answers every request from the request itself: ``You said: <last user message>``, and from
the second user message on it adds how many user messages the conversation holds, so a
continued session (``-c``) shows that the earlier exchange reached the model. The answer is
streamed in deltas of four characters, like a real model's tokens.

**A scripted faux model** (``PITRIO_FAUX_SCRIPT``): when the variable names a JSON file, the
faux model plays that file's responses in order instead of echoing, one per request, so a
whole coding session (tool calls and all) can be driven through the real command. The file
holds a list of responses (or ``{"responses": [...]}``); each response is

* a string: a text answer;
* or an object ``{"content": ..., "stopReason": ..., "errorMessage": ...}`` whose ``content``
  is a string or a list of pi's assistant blocks: ``{"type": "text", "text": ...}``,
  ``{"type": "thinking", "thinking": ...}``, ``{"type": "toolCall", "name": ...,
  "arguments": {...}, "id": ...}`` (``id`` optional). ``stopReason`` defaults to ``toolUse``
  when there is a tool call, else ``stop``.

A request after the last response ends with pi's faux error ``No more faux responses queued``.

``PITRIO_FAUX_TOKENS_PER_SECOND`` paces the stream (a "token" being four characters), so that a
browser or a test can watch an answer arrive; unset or ``0``, it streams as fast as it can.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, Final, cast

from pitrio._exceptions import PitrioError
from pitrio.codec import loads
from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxProvider,
    FauxState,
    Model,
    ProviderRegistry,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

FAUX_PROVIDER: Final = "faux"
FAUX_API: Final = "faux"
FAUX_TOKEN_SIZE: Final = (1, 1)
"""One "token" (four characters) per delta."""
FAUX_SCRIPT_ENV: Final = "PITRIO_FAUX_SCRIPT"
"""Environment variable naming a JSON file of scripted faux responses (module docstring)."""
FAUX_SPEED_ENV: Final = "PITRIO_FAUX_TOKENS_PER_SECOND"
"""Environment variable pacing the faux stream, in tokens per second (module docstring)."""
_STOP_REASONS: Final = ("stop", "length", "toolUse", "error", "aborted")


class FauxScriptError(PitrioError, ValueError):
    """The ``PITRIO_FAUX_SCRIPT`` file cannot be read or is not a list of responses.

    Attributes:
        path: the script file.
        reason: what is wrong with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Invalid faux script {path}: {reason}")
        self.path = path
        self.reason = reason


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(b.text for b in message.content if isinstance(b, TextContent))


def echo_reply(context: Context) -> str:
    """The faux model's answer to ``context`` (deterministic)."""
    users = [m for m in context.messages if isinstance(m, UserMessage)]
    if not users:
        return "You said nothing."
    reply = f"You said: {_user_text(users[-1])}"
    if len(users) > 1:
        reply += f" (message {len(users)} in this conversation)"
    return reply


def _block(raw: Any, where: str) -> TextContent | ThinkingContent | ToolCall:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a content block must be an object")
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return TextContent(text=raw["text"])
    if kind == "thinking" and isinstance(raw.get("thinking"), str):
        return ThinkingContent(thinking=raw["thinking"])
    if kind == "toolCall" and isinstance(raw.get("name"), str):
        arguments = raw.get("arguments", {})
        call_id = raw.get("id")
        if not isinstance(arguments, dict) or not isinstance(call_id, str | None):
            raise ValueError(f"{where}: toolCall needs an arguments object and a string id")
        return faux_tool_call(raw["name"], arguments, id=call_id)
    raise ValueError(f"{where}: not a text, thinking or toolCall block: {raw!r}")


def parse_faux_script(data: Any) -> list[AssistantMessage]:
    """The responses of a faux script document (see the module docstring).

    Raises:
        ValueError: the document is not a list of responses.
    """
    if isinstance(data, dict) and "responses" in data:
        data = data["responses"]
    if not isinstance(data, list):
        raise ValueError('expected a list of responses (or {"responses": [...]})')
    responses = []
    for index, raw in enumerate(data):
        where = f"response {index + 1}"
        if isinstance(raw, str):
            responses.append(faux_assistant_message(raw))
            continue
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: a response is a string or an object")
        content = raw.get("content", "")
        if isinstance(content, str):
            blocks: list[TextContent | ThinkingContent | ToolCall] = [TextContent(text=content)]
        elif isinstance(content, list):
            blocks = [_block(block, where) for block in content]
        else:
            raise ValueError(f"{where}: content is a string or a list of blocks")
        has_call = any(isinstance(block, ToolCall) for block in blocks)
        stop = raw.get("stopReason", "toolUse" if has_call else "stop")
        if stop not in _STOP_REASONS:
            raise ValueError(f"{where}: stopReason must be one of {', '.join(_STOP_REASONS)}")
        error = raw.get("errorMessage")
        if not isinstance(error, str | None):
            raise ValueError(f"{where}: errorMessage must be a string")
        responses.append(
            faux_assistant_message(
                blocks, stop_reason=cast("StopReason", stop), error_message=error
            )
        )
    return responses


def load_faux_script(path: str) -> list[AssistantMessage]:
    """Read a faux script file (blocking; the command reads it once at start-up).

    Raises:
        FauxScriptError: the file cannot be read, is not JSON, or not a list of responses.
    """
    try:
        with open(path, "rb") as file:
            data = loads(file.read())
    except OSError as exc:
        raise FauxScriptError(path, exc.strerror or str(exc)) from exc
    except ValueError as exc:
        raise FauxScriptError(path, f"not JSON ({exc})") from exc
    try:
        return parse_faux_script(data)
    except ValueError as exc:
        raise FauxScriptError(path, str(exc)) from exc


class _EchoForever:
    """The echo response that queues itself again for the next request.

    A callable object holding the provider weakly: the provider queues it, so a nested
    function naming itself and the provider would be a cycle left to the cycle collector when
    a session's registry is dropped.
    """

    __slots__ = ("_provider",)

    def __init__(self, provider: FauxProvider) -> None:
        self._provider = weakref.ref(provider)

    def __call__(
        self, context: Context, options: StreamOptions, state: FauxState, model: Model
    ) -> AssistantMessage:
        # The faux provider consumes one queued response per request: queue the next one.
        provider = self._provider()
        if provider is not None:
            provider.append_responses([self])
        return faux_assistant_message(echo_reply(context))


def register_echo_faux(
    registry: ProviderRegistry, env: Mapping[str, str] | None = None
) -> FauxProvider:
    """Register the faux provider (model ``faux/faux-1``) in ``registry``: it echoes, or plays
    the script that ``env[PITRIO_FAUX_SCRIPT]`` names (no ``env``: it echoes).

    Raises:
        FauxScriptError: the script cannot be used.
    """
    speed_text = env.get(FAUX_SPEED_ENV, "") if env is not None else ""
    try:
        speed = float(speed_text or 0)
    except ValueError:
        speed = -1.0
    if not speed >= 0:  # also refuses NaN
        raise FauxScriptError(FAUX_SPEED_ENV, f"not a number of tokens per second: {speed_text!r}")
    faux = register_faux_provider(
        api=FAUX_API,
        provider=FAUX_PROVIDER,
        token_size=FAUX_TOKEN_SIZE,
        tokens_per_second=speed or None,
        registry=registry,
    )
    script = env.get(FAUX_SCRIPT_ENV) if env is not None else None
    if script:
        faux.set_responses(load_faux_script(script))
        return faux

    respond = _EchoForever(faux)
    faux.set_responses([respond])
    return faux
