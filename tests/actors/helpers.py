"""Shared test scaffolding for the agent actors: a faux model, an echo tool, event capture."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from pitrio.actors import AgentEvent
from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxProvider,
    ProviderRegistry,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    register_faux_provider,
)
from pitrio.tools import AgentTool, AgentToolResult, FunctionTool, ToolUpdateCallback

STRING_VALUE = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
}


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def assistant(content: str | Sequence[Any], stop_reason: StopReason = "stop") -> AssistantMessage:
    return faux_assistant_message(
        content if isinstance(content, str) else list(content), stop_reason=stop_reason
    )


def call(id: str, value: str, name: str = "echo") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"value": value})


def make_faux(**options: Any) -> tuple[FauxProvider, ProviderRegistry]:
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry, **options)
    return faux, registry


def last_is_tool_result(context: Context) -> bool:
    return isinstance(context.messages[-1], ToolResultMessage)


def tool_then_text(
    calls: Sequence[ToolCall], text: str = "done"
) -> Callable[..., AssistantMessage]:
    """A response factory: the tool calls first, then (after tool results) a text answer."""

    def respond(context: Context, *_: Any) -> AssistantMessage:
        if last_is_tool_result(context):
            return assistant(text)
        return assistant(list(calls), stop_reason="toolUse")

    return respond


def echo_tool(
    executed: list[str] | None = None,
    *,
    name: str = "echo",
    gate: Callable[[str], Awaitable[None]] | None = None,
    terminate: bool | None = None,
    execution_mode: Any = None,
) -> AgentTool:
    """An ``echo`` tool that records what it ran and can wait on ``gate(value)``."""

    async def execute(
        call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        if gate is not None:
            await gate(params["value"])
        if executed is not None:
            executed.append(params["value"])
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")],
            details={"value": params["value"]},
            terminate=terminate,
        )

    return FunctionTool(
        name=name,
        label=name.title(),
        description=f"{name} tool",
        parameters=STRING_VALUE,
        fn=execute,
        execution_mode=execution_mode,
    )


class Recorder:
    """Collects every event a subscriber sees."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


async def never(_: Any) -> None:
    await trio.sleep_forever()
