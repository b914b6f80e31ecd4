"""OpenAI Responses API streams, in the API's real wire format, for the loopback server.

:class:`ResponsesStream` writes the event sequence the Responses API sends for a response
(``response.created``, ``response.in_progress``, then per output item ``output_item.added``,
its part and delta events, ``output_item.done``, and finally ``response.completed``), with
sequence numbers, item ids and the final ``response`` object filled in consistently. Every
event it produces is checked against the ``openai`` SDK's ``ResponseStreamEvent`` types by
``test_every_fixture_is_a_valid_sdk_event`` in test_openai_responses.py.

``big_stream(chars)`` is a long reasoning + text + tool-call stream for ``bench/sse_parse.py``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Final

from loopback import split_every, sse_bytes

MODEL: Final = "gpt-5-2025-08-07"
CREATED_AT: Final = 1767225600
RESPONSE_ID: Final = "resp_0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"
ENCRYPTED: Final = "gAAAAABpVf3x" + "Q2lwaGVydGV4dC1vZi10aGUtcmVhc29uaW5n" * 6 + "=="

OVERFLOW_MESSAGE: Final = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
OVERFLOW_BODY: Final = {
    "error": {
        "message": OVERFLOW_MESSAGE,
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
}
"""The body of OpenAI's HTTP 400 for a prompt longer than the context window."""

RATE_LIMIT_BODY: Final = {
    "error": {
        "message": "Rate limit reached for gpt-5 in organization org-abc on tokens per min (TPM): "
        "Limit 30000, Used 29954, Requested 1200. Please try again in 2.308s.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
SERVER_ERROR_BODY: Final = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


class ResponsesStream:
    """Builds one Responses API event stream.

    Methods append the events of one output item each; :meth:`completed` (or :meth:`failed`,
    :meth:`incomplete`) ends the stream. :attr:`events` holds the payloads, :meth:`sse` the
    bytes the server sends.
    """

    def __init__(
        self,
        *,
        response_id: str = RESPONSE_ID,
        model: str = MODEL,
        reasoning: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        service_tier: str = "auto",
    ) -> None:
        self.events: list[dict[str, Any]] = []
        self.output: list[dict[str, Any]] = []
        self._id = response_id
        self._model = model
        self._reasoning = reasoning or {"effort": None, "summary": None}
        self._tools = tools or []
        self._tier = service_tier
        self._items = 0
        self._emit("response.created", response=self._response("in_progress", [], None))
        self._emit("response.in_progress", response=self._response("in_progress", [], None))

    # ------------------------------------------------------------------ plumbing

    def _emit(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": len(self.events)}
        event.update(fields)
        self.events.append(event)

    def _response(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: dict[str, Any] | None,
        *,
        error: dict[str, Any] | None = None,
        incomplete: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": CREATED_AT,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": incomplete,
            "instructions": None,
            "max_output_tokens": None,
            "max_tool_calls": None,
            "model": self._model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "prompt_cache_key": None,
            "reasoning": self._reasoning,
            "safety_identifier": None,
            "service_tier": self._tier,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": self._tools,
            "top_logprobs": 0,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": None,
            "metadata": {},
        }

    def _item_id(self, prefix: str) -> str:
        self._items += 1
        return f"{prefix}_0a1b2c3d4e5f6071{self._items:02d}8293a4b5c6d7e8f90a1b2c3d4e5f6071"

    # ------------------------------------------------------------------ output items

    def reasoning(
        self, parts: list[list[str]], *, encrypted: str | None = ENCRYPTED
    ) -> dict[str, Any]:
        """A reasoning item whose summary parts stream as the given deltas."""
        index = len(self.output)
        item_id = self._item_id("rs")
        added: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        if encrypted is not None:
            added["encrypted_content"] = None
        self._emit("response.output_item.added", output_index=index, item=added)
        summary = []
        for n, deltas in enumerate(parts):
            common = {"item_id": item_id, "output_index": index, "summary_index": n}
            self._emit(
                "response.reasoning_summary_part.added",
                **common,
                part={"type": "summary_text", "text": ""},
            )
            for delta in deltas:
                self._emit("response.reasoning_summary_text.delta", **common, delta=delta)
            text = "".join(deltas)
            self._emit("response.reasoning_summary_text.done", **common, text=text)
            self._emit(
                "response.reasoning_summary_part.done",
                **common,
                part={"type": "summary_text", "text": text},
            )
            summary.append({"type": "summary_text", "text": text})
        done: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summary}
        if encrypted is not None:
            done["encrypted_content"] = encrypted
        self._emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return done

    def message(self, deltas: list[str], *, phase: str | None = None) -> dict[str, Any]:
        """An assistant message item whose one ``output_text`` part streams as ``deltas``."""
        index = len(self.output)
        item_id = self._item_id("msg")
        added: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        if phase is not None:
            added["phase"] = phase
        self._emit("response.output_item.added", output_index=index, item=added)
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        self._emit(
            "response.content_part.added",
            **common,
            part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        )
        for delta in deltas:
            self._emit("response.output_text.delta", **common, delta=delta, logprobs=[])
        text = "".join(deltas)
        self._emit("response.output_text.done", **common, text=text, logprobs=[])
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        self._emit("response.content_part.done", **common, part=part)
        done = dict(added, status="completed", content=[part])
        self._emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return done

    def reasoning_text(self, deltas: list[str]) -> dict[str, Any]:
        """A reasoning item with raw reasoning text (open-weight models) instead of a summary."""
        index = len(self.output)
        item_id = self._item_id("rs")
        added = {"id": item_id, "type": "reasoning", "summary": []}
        self._emit("response.output_item.added", output_index=index, item=added)
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        empty = {"type": "reasoning_text", "text": ""}
        self._emit("response.content_part.added", **common, part=empty)
        for delta in deltas:
            self._emit("response.reasoning_text.delta", **common, delta=delta)
        text = "".join(deltas)
        self._emit("response.reasoning_text.done", **common, text=text)
        part = {"type": "reasoning_text", "text": text}
        self._emit("response.content_part.done", **common, part=part)
        done = dict(added, content=[part])
        self._emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return done

    def refusal(self, deltas: list[str]) -> dict[str, Any]:
        """An assistant message whose one part is a refusal streamed as ``deltas``."""
        index = len(self.output)
        item_id = self._item_id("msg")
        added = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        self._emit("response.output_item.added", output_index=index, item=added)
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        self._emit("response.content_part.added", **common, part={"type": "refusal", "refusal": ""})
        for delta in deltas:
            self._emit("response.refusal.delta", **common, delta=delta)
        refusal = "".join(deltas)
        self._emit("response.refusal.done", **common, refusal=refusal)
        part = {"type": "refusal", "refusal": refusal}
        self._emit("response.content_part.done", **common, part=part)
        done = dict(added, status="completed", content=[part])
        self._emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return done

    def function_call(self, name: str, call_id: str, chunks: list[str]) -> dict[str, Any]:
        """A function call whose JSON arguments stream as ``chunks``."""
        index = len(self.output)
        item_id = self._item_id("fc")
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        }
        self._emit("response.output_item.added", output_index=index, item=item)
        for chunk in chunks:
            self._emit(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=chunk,
            )
        arguments = "".join(chunks)
        self._emit(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
        done = dict(item, status="completed", arguments=arguments)
        self._emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return done

    # ------------------------------------------------------------------ endings

    def completed(
        self,
        *,
        input_tokens: int = 1200,
        cached_tokens: int = 0,
        output_tokens: int = 300,
        reasoning_tokens: int = 0,
        status: str = "completed",
    ) -> ResponsesStream:
        """End with ``response.completed`` (or ``response.incomplete`` for that status)."""
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": cached_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        }
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        response = self._response(status, self.output, usage, incomplete=incomplete)
        kind = "response.incomplete" if status == "incomplete" else "response.completed"
        self._emit(kind, response=response)
        return self

    def failed(self, code: str, message: str) -> ResponsesStream:
        """End with ``response.failed`` carrying ``error``."""
        error = {"code": code, "message": message}
        self._emit("response.failed", response=self._response("failed", [], None, error=error))
        return self

    def error(self, code: str | None, message: str) -> ResponsesStream:
        """End with a stream-level ``error`` event."""
        self._emit("error", code=code, message=message, param=None)
        return self

    def sse(self) -> bytes:
        """The stream as the server sends it: ``event:`` lines named after each type."""
        return sse_bytes((event["type"], event) for event in self.events)


# --------------------------------------------------------------------------- named fixtures

WEATHER_TOOL: Final = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}

TEXT_DELTAS: Final = ["Hello", ", world", "! How can", " I help", " you today?"]
SUMMARY_PARTS: Final = [
    ["**Considering", " the question**\n\nThe user", " asks about 2+2."],
    ["**Answering**\n\n", "It is 4."],
]
PARIS_CHUNKS: Final = ['{"ci', 'ty":', ' "Pa', "ris", '", "u', 'nit"', ': "c"', "}"]
TOKYO_CHUNKS: Final = ['{"', "city", '":"', "Tok", 'yo"', "}"]


def text_stream() -> ResponsesStream:
    """A plain text answer."""
    stream = ResponsesStream()
    stream.message(TEXT_DELTAS)
    return stream.completed(input_tokens=25, output_tokens=12)


def thinking_stream() -> ResponsesStream:
    """Reasoning with two summary parts and encrypted content, then text with a phase."""
    stream = ResponsesStream(reasoning={"effort": "medium", "summary": "detailed"})
    stream.reasoning(SUMMARY_PARTS)
    stream.message(["The answer", " is 4."], phase="final_answer")
    return stream.completed(input_tokens=40, output_tokens=90, reasoning_tokens=64)


def tool_calls_stream() -> ResponsesStream:
    """Reasoning, then two function calls (a parallel pair) with finely split arguments."""
    stream = ResponsesStream(reasoning={"effort": "low", "summary": "auto"}, tools=[WEATHER_TOOL])
    stream.reasoning([["Two cities: call the tool twice."]])
    stream.function_call("get_weather", "call_Paris0123456789abcdef", PARIS_CHUNKS)
    stream.function_call("get_weather", "call_Tokyo0123456789abcdef", TOKYO_CHUNKS)
    return stream.completed(input_tokens=310, output_tokens=70, reasoning_tokens=20)


def reasoning_text_stream() -> ResponsesStream:
    """Raw reasoning text (no summary, no encrypted content), then a refusal."""
    stream = ResponsesStream(model="gpt-oss-120b", reasoning={"effort": "low", "summary": None})
    stream.reasoning_text(["The user wants", " something I", " cannot do."])
    stream.refusal(["I'm sorry,", " I can't help", " with that."])
    return stream.completed(input_tokens=50, output_tokens=30, reasoning_tokens=10)


def usage_stream() -> ResponsesStream:
    """Text with cached input tokens, served on the flex tier."""
    stream = ResponsesStream(service_tier="flex")
    stream.message(["Cached."])
    return stream.completed(
        input_tokens=120_000, cached_tokens=100_000, output_tokens=2_000, reasoning_tokens=500
    )


def incomplete_stream() -> ResponsesStream:
    """Text cut by ``max_output_tokens``: ends with ``response.incomplete``."""
    stream = ResponsesStream()
    stream.message(["This answer is cut"])
    return stream.completed(input_tokens=30, output_tokens=16, status="incomplete")


def failed_stream() -> ResponsesStream:
    """A response that fails after it started: ``response.failed`` with a server error.

    (A prompt over the context window is refused before streaming, with :data:`OVERFLOW_BODY`;
    the SDK's ``ResponseError.code`` has no overflow code.)
    """
    return ResponsesStream().failed("server_error", "The model failed to generate a response.")


def error_event_stream() -> ResponsesStream:
    """Text that breaks off with a stream-level ``error`` event."""
    stream = ResponsesStream()
    stream.events.append(
        {
            "type": "response.output_item.added",
            "sequence_number": len(stream.events),
            "output_index": 0,
            "item": {
                "id": "msg_err",
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        }
    )
    return stream.error("server_error", "The server had an error processing your request.")


def all_fixtures() -> dict[str, list[dict[str, Any]]]:
    """Every named fixture's events, for the SDK validation test."""
    return {
        "text": text_stream().events,
        "thinking": thinking_stream().events,
        "tool_calls": tool_calls_stream().events,
        "usage": usage_stream().events,
        "reasoning_text": reasoning_text_stream().events,
        "incomplete": incomplete_stream().events,
        "failed": failed_stream().events,
        "error_event": error_event_stream().events,
    }


def big_stream(chars: int) -> bytes:
    """A realistic stream of about ``chars`` characters of reasoning, text and tool arguments.

    Deltas are a few tokens each, as the API sends them: about half of the characters are
    reasoning summary, 40% text, the rest the JSON arguments of one tool call.
    """
    words = (
        "the quick brown fox jumps over a lazy dog while pondering tokens streams and "
        "structured concurrency in trio nurseries "
    ).split(" ")

    def deltas(total: int) -> list[str]:
        out: list[str] = []
        size = 0
        i = 0
        while size < total:
            delta = " " + words[i % len(words)] + ("," if i % 7 == 3 else "")
            out.append(delta)
            size += len(delta)
            i += 1
        return out

    stream = ResponsesStream(reasoning={"effort": "high", "summary": "auto"}, tools=[WEATHER_TOOL])
    stream.reasoning([deltas(chars // 2)])
    stream.message(deltas(chars * 2 // 5))
    arguments = json.dumps({"city": "".join(deltas(max(1, chars // 10)))})
    stream.function_call("get_weather", "call_big0123456789abcdefgh", split_every_str(arguments, 7))
    return stream.completed(input_tokens=5000, output_tokens=chars // 4).sse()


def split_every_str(text: str, size: int) -> list[str]:
    """Cut ``text`` into pieces of ``size`` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunked(stream: ResponsesStream, size: int) -> list[bytes]:
    """The stream's bytes cut into ``size``-byte writes (split inside events and UTF-8)."""
    return split_every(stream.sse(), size)


# --------------------------------------------------------------------------- cases run on pi

PNG_1PX: Final = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
T0: Final = 1735689600000
PREVIOUS_REASONING: Final = {
    "id": "rs_prev0123456789abcdef",
    "type": "reasoning",
    "encrypted_content": ENCRYPTED,
    "summary": [{"type": "summary_text", "text": "Check the map, then the weather."}],
}
LONG_MESSAGE_ID: Final = "msg_" + "legacy-id-" * 8


def _assistant(
    content: list[dict[str, Any]],
    *,
    model: str = "gpt-5",
    provider: str = "openai",
    api: str = "openai-responses",
    stop_reason: str = "toolUse",
    at: int = 0,
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop_reason,
        "timestamp": T0 + at,
    }


def _result(call_id: str, content: list[dict[str, Any]], at: int) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "get_weather",
        "content": content,
        "isError": False,
        "timestamp": T0 + at,
    }


def _call(call_id: str, city: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": "get_weather", "arguments": {"city": city}}


WEATHER_TOOL_PI: Final = {
    "name": "get_weather",
    "description": "Get the current weather for a city",
    "parameters": WEATHER_TOOL["parameters"],
}

REPLAY_CONTEXT: Final = {
    "systemPrompt": "You are a helpful assistant.",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What's the weather in Paris, Tokyo and Oslo? A map:"},
                {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
            ],
            "timestamp": T0,
        },
        # Same model: reasoning item, message id and phase, call_id|item_id all kept.
        _assistant(
            [
                {
                    "type": "thinking",
                    "thinking": "Check the map, then the weather.",
                    "thinkingSignature": json.dumps(PREVIOUS_REASONING),
                },
                {
                    "type": "text",
                    "text": "Let me look.",
                    "textSignature": json.dumps(
                        {"v": 1, "id": "msg_prev0123456789", "phase": "commentary"}
                    ),
                },
                _call("call_prev1|fc_prev0123456789", "Paris"),
            ],
            at=1,
        ),
        _result(
            "call_prev1|fc_prev0123456789",
            [
                {"type": "text", "text": "Sunny, 21C"},
                {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
            ],
            2,
        ),
        # Same model, legacy text signature with an id over 64 characters: shortened by hash.
        _assistant(
            [
                {"type": "text", "text": "Paris is sunny.", "textSignature": LONG_MESSAGE_ID},
                _call("call_img|fc_img0123", "Paris"),
            ],
            at=3,
        ),
        _result(
            "call_img|fc_img0123", [{"type": "image", "data": PNG_1PX, "mimeType": "image/png"}], 4
        ),
        # Another provider: thinking becomes text, the tool call id is normalised.
        _assistant(
            [
                {"type": "thinking", "thinking": "Now Tokyo.", "thinkingSignature": "EqQBCkYI"},
                _call("toolu_01A09q90qw90lq917835lq9", "Tokyo"),
            ],
            model="claude-sonnet-4-5",
            provider="anthropic",
            api="anthropic-messages",
            at=5,
        ),
        _result("toolu_01A09q90qw90lq917835lq9", [{"type": "text", "text": "Rainy, 14C"}], 6),
        # Codex (same wire format, another provider): the item id is replaced by a hash.
        _assistant(
            [_call("call_cdx|fc_codex-item.0123456789", "Oslo")],
            model="gpt-5.1-codex",
            provider="openai-codex",
            api="openai-codex-responses",
            at=7,
        ),
        _result("call_cdx|fc_codex-item.0123456789", [{"type": "text", "text": "Snow, -3C"}], 8),
        # Same provider, other model: fc_ item ids are dropped; an unanswered call gets a result.
        _assistant(
            [
                {"type": "text", "text": "Checking twice.", "textSignature": "msg_mini"},
                _call("call_mini1|fc_mini1", "Oslo"),
                _call("call_mini2|fc_mini2", "Bergen"),
            ],
            model="gpt-5-mini",
            at=9,
        ),
        _result("call_mini1|fc_mini1", [{"type": "text", "text": "Snow, -3C"}], 10),
        # An aborted turn is left out.
        _assistant([{"type": "text", "text": "Half a"}], stop_reason="aborted", at=11),
        {"role": "user", "content": "Thanks! Summarize.", "timestamp": T0 + 12},
    ],
    "tools": [WEATHER_TOOL_PI],
}


def pi_cases(catalogue: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The requests run through pi's provider and ours, with the streams the server answers.

    Args:
        catalogue: the built-in models as pi's JSON, ``{provider: {id: model}}``.

    Each case names the function (``stream`` or ``simple``), the model (pi's JSON), the context
    (pi's JSON), the options (pi's option names) and the SSE body served.
    """
    simple_context = {
        "systemPrompt": "Be brief.",
        "messages": [{"role": "user", "content": "What is 2+2?", "timestamp": T0}],
    }
    key = {"apiKey": "sk-test", "maxRetries": 0}
    models = catalogue["openai"]
    image_context = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
                ],
                "timestamp": T0,
            }
        ]
    }
    return [
        {
            "name": "text",
            "fn": "stream",
            "model": models["gpt-4.1"],
            "context": simple_context,
            "options": {
                **key,
                "sessionId": "session-1",
                "temperature": 0.5,
                "maxTokens": 1000,
                "headers": {"X-Trace": "abc"},
            },
            "sse": text_stream().sse().decode(),
        },
        {
            "name": "thinking",
            "fn": "simple",
            "model": models["gpt-5"],
            "context": simple_context,
            "options": {**key, "reasoning": "high", "sessionId": "session-2"},
            "sse": thinking_stream().sse().decode(),
        },
        {
            "name": "thinking_off",
            "fn": "simple",
            "model": models["gpt-5.2"],
            "context": simple_context,
            "options": {**key, "cacheRetention": "none", "sessionId": "session-3"},
            "sse": text_stream().sse().decode(),
        },
        {
            "name": "tool_calls",
            "fn": "stream",
            "model": models["gpt-5"],
            "context": REPLAY_CONTEXT,
            "options": {
                **key,
                "reasoningEffort": "low",
                "reasoningSummary": "concise",
                "sessionId": "session-4",
                "cacheRetention": "long",
            },
            "sse": tool_calls_stream().sse().decode(),
        },
        {
            "name": "usage",
            "fn": "stream",
            "model": models["gpt-5.5"],
            "context": simple_context,
            "options": {**key, "serviceTier": "flex"},
            "sse": usage_stream().sse().decode(),
        },
        {
            "name": "reasoning_text",
            "fn": "stream",
            "model": models["gpt-5"],
            "context": simple_context,
            "options": {**key, "reasoningEffort": "low"},
            "sse": reasoning_text_stream().sse().decode(),
        },
        {
            "name": "failed",
            "fn": "stream",
            "model": models["gpt-4.1"],
            "context": simple_context,
            "options": key,
            "sse": failed_stream().sse().decode(),
        },
        {
            "name": "copilot",
            "fn": "simple",
            "model": catalogue["github-copilot"]["gpt-5-mini"],
            "context": image_context,
            "options": {**key, "reasoning": "minimal", "sessionId": "session-5"},
            "sse": text_stream().sse().decode(),
        },
        {
            "name": "cloudflare_gateway",
            "fn": "stream",
            "model": catalogue["cloudflare-ai-gateway"]["gpt-5.1"],
            "context": simple_context,
            "options": {**key, "headers": {"cf-aig-metadata": '{"user":"u1"}'}},
            "sse": text_stream().sse().decode(),
        },
        {
            "name": "error_event",
            "fn": "stream",
            "model": models["gpt-4.1"],
            "context": simple_context,
            "options": key,
            "sse": error_event_stream().sse().decode(),
        },
    ]


PI_DATA_DIR: Final = Path(__file__).parent.parent / "data" / "pi" / "providers"
PI_INPUT: Final = PI_DATA_DIR / "openai_responses.input.json"
PI_OUTPUT: Final = PI_DATA_DIR / "openai_responses.pi.json"


def catalogue_models() -> dict[str, dict[str, dict[str, Any]]]:
    """pitrio's built-in models as pi's JSON, ``{provider: {id: model}}``."""
    raw = resources.files("pitrio.providers").joinpath("models.json").read_bytes()
    catalogue: dict[str, dict[str, dict[str, Any]]] = json.loads(raw)
    return catalogue


def pi_input_text() -> str:
    """The content of :data:`PI_INPUT` for the current fixtures."""
    return json.dumps(pi_cases(catalogue_models()), indent=1, ensure_ascii=False) + "\n"


def write_pi_input() -> None:
    """Write :data:`PI_INPUT` (then run openai_responses_capture.mjs to refresh the pi output)."""
    PI_DATA_DIR.mkdir(parents=True, exist_ok=True)
    PI_INPUT.write_text(pi_input_text(), encoding="utf-8")
