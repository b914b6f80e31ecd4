"""pi-agent-core: an Agent that calls a tool, then answers (faux model: no key needed).

Run: python examples/agent_tool.py
"""

from typing import Any

import trio

from pitrio.actors import open_agent
from pitrio.providers import (
    AssistantMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.tools import tool


@tool(
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
)
async def get_weather(call_id: str, params: dict[str, Any], on_update: Any) -> str:
    """Current weather for a city."""
    return f"{params['city']}: 21 °C"


async def main() -> None:
    faux = register_faux_provider(api="faux")
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("get_weather", {"city": "Lisbon"})], stop_reason="toolUse"
            ),
            faux_assistant_message("It is 21 °C in Lisbon."),
        ]
    )
    async with open_agent(model=faux.get_model(), tools=[get_weather]) as agent:
        # A subscriber sees every event in order (agent_start, turn_start, message_start, ...).
        agent.subscribe(lambda event: print(event.type) if "tool" in event.type else None)
        await agent.prompt("Weather in Lisbon?")  # returns when the run has ended
    print([message.role for message in agent.messages])
    answer = agent.messages[-1]
    assert isinstance(answer, AssistantMessage)
    print(answer.text())


if __name__ == "__main__":
    trio.run(main)
