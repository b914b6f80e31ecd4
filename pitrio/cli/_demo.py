"""``pitrio demo``: a scripted agent conversation on the faux provider, streamed to the terminal.

It needs no API key and no network: the faux provider plays the model. An Agent runs the loop:
the model answers the question with a tool call, the tool runs, and the model streams its final
answer. ``--json`` prints every AgentEvent as pi's JSON instead.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import trio

from pitrio.actors import AgentEvent, MessageUpdateEvent, ToolExecutionEndEvent, open_agent
from pitrio.actors._codec import ACTORS_CODEC
from pitrio.providers import (
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    ProviderRegistry,
    TextContent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.tools import FunctionTool

QUESTION = "What is the weather like in Lisbon right now?"


async def get_weather(call_id: str, params: dict[str, Any], on_update: Any) -> str:
    """The demo's tool: a fixed forecast."""
    await trio.sleep(0.2)
    return f"{params['city']}: 21 °C, clear sky, light wind from the north-west."


WEATHER_TOOL = FunctionTool(
    name="get_weather",
    label="Weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    fn=get_weather,
)


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
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        tokens_per_second=speed if speed > 0 else None,
        token_size=(1, 2),
        registry=registry,
    )
    faux.set_responses([_script, _script])

    reader_gone = False

    def on_event(event: AgentEvent) -> None:
        nonlocal reader_gone
        if reader_gone:
            return
        try:
            _print_event(event)
        except BrokenPipeError:
            # The reader went away (`pitrio demo --json | head`): stop the run quietly.
            reader_gone = True
            agent.abort()

    def _print_event(event: AgentEvent) -> None:
        if json_mode:
            out.write(ACTORS_CODEC.dumps(event).decode() + "\n")
            return
        match event:
            case MessageUpdateEvent(assistant_message_event=inner):
                _render(out, inner)
            case ToolExecutionEndEvent(tool_name=name, result=result):
                text = "".join(b.text for b in result.content if isinstance(b, TextContent))
                out.write(f"\ntool> {name} -> {text}\n")
            case _:
                pass
        out.flush()

    async with open_agent(
        model=faux.get_model(),
        registry=registry,
        system_prompt="You are a helpful assistant.",
        tools=[WEATHER_TOOL],
    ) as agent:
        agent.subscribe(on_event)
        if not json_mode:
            out.write(f"user> {QUESTION}\n")
        await agent.prompt(QUESTION)
    if reader_gone:
        return 0
    if not json_mode:
        out.write("\n")
    last = agent.messages[-1]
    return 0 if isinstance(last, AssistantMessage) and last.stop_reason == "stop" else 1


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
            pass
        case _:
            if getattr(event, "type", None) == "text_start":
                out.write("\nassistant> ")


def run_demo(*, speed: float, json_mode: bool) -> int:
    """Run the demo conversation; returns the exit status."""
    return trio.run(lambda: _converse(sys.stdout, speed=speed, json_mode=json_mode))
