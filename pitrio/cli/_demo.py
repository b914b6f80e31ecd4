"""``pitrio demo``: a scripted conversation on the faux provider, streamed to the terminal.

It needs no API key and no network: the faux provider plays the model. The model answers the
question with a tool call, the tool runs, and the model streams its final answer.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import trio

from pitrio.codec import dumps
from pitrio.providers import (
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    Message,
    TextContent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    Tool,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
    stream_simple,
)
from pitrio.providers._stream import now_ms

QUESTION = "What is the weather like in Lisbon right now?"
WEATHER_TOOL = Tool(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def get_weather(city: str) -> str:
    """The demo's tool: a fixed forecast."""
    return f"{city}: 21 °C, clear sky, light wind from the north-west."


def _script(context: Context, *_: Any) -> AssistantMessage:
    """The faux model: call the tool first, then answer from its result."""
    last = context.messages[-1]
    if isinstance(last, ToolResultMessage):
        report = "".join(b.text for b in last.content if isinstance(b, TextContent))
        return faux_assistant_message(
            f"According to the weather service, {report} A good afternoon for a walk "
            "along the Tejo.",
        )
    return faux_assistant_message(
        [
            faux_thinking("The user wants current weather; I should call the weather tool."),
            faux_text("Let me check the weather service."),
            faux_tool_call("get_weather", {"city": "Lisbon"}, id="call_weather_1"),
        ],
        stop_reason="toolUse",
    )


async def _converse(out: TextIO, *, speed: float, json_mode: bool) -> int:
    faux = register_faux_provider(
        api="faux", tokens_per_second=speed if speed > 0 else None, token_size=(1, 2)
    )
    try:
        model = faux.get_model()
        assert model is not None
        faux.set_responses([_script, _script])
        messages: list[Message] = [UserMessage(content=QUESTION, timestamp=now_ms())]
        if not json_mode:
            out.write(f"user> {QUESTION}\n")
        while True:
            context = Context(
                system_prompt="You are a helpful assistant.",
                messages=messages,
                tools=[WEATHER_TOOL],
            )
            async with stream_simple(model, context) as events:
                async for event in events:
                    if json_mode:
                        out.write(dumps(event).decode() + "\n")
                        continue
                    _render(out, event)
                    out.flush()
                reply = await events.result()
            messages.append(reply)
            if reply.stop_reason != "toolUse":
                if not json_mode:
                    out.write("\n")
                return 0 if reply.stop_reason == "stop" else 1
            for call in reply.tool_calls():
                text = get_weather(**call.arguments)
                if not json_mode:
                    out.write(f"\ntool> {call.name} -> {text}\n")
                messages.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text=text)],
                        is_error=False,
                        timestamp=now_ms(),
                    )
                )
    finally:
        faux.unregister()


def _render(out: TextIO, event: object) -> None:
    match event:
        case ThinkingStartEvent():
            out.write("\nassistant (thinking)> ")
        case ThinkingDeltaEvent(delta=delta) | TextDeltaEvent(delta=delta):
            out.write(delta)
        case ToolCallStartEvent():
            out.write("\nassistant (tool call)> ")
        case ToolCallDeltaEvent(delta=delta):
            out.write(delta)
        case ToolCallEndEvent(tool_call=call):
            out.write(f"  [{call.name}]")
        case DoneEvent() | ErrorEvent():
            message = event.message if isinstance(event, DoneEvent) else event.error
            if message.error_message:
                out.write(f"\nerror: {message.error_message}")
        case _:
            if getattr(event, "type", None) == "text_start":
                out.write("\nassistant> ")


def run_demo(*, speed: float, json_mode: bool) -> int:
    """Run the demo conversation; returns the exit status."""
    return trio.run(lambda: _converse(sys.stdout, speed=speed, json_mode=json_mode))
