"""Shared fixtures of the benchmarks, as ../shared/bench/pi/lib/common.mjs defines them."""

from __future__ import annotations

import platform
import resource
from typing import Any

import orjson
import trio

from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxModelDefinition,
    FauxProvider,
    ProviderRegistry,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.tools import AgentToolResult, FunctionTool

WORDS = (
    "the agent calls a tool and streams tokens back to user while context grows with each turn "
    "model reply text"
).split(" ")


def make_text(n: int, seed: int = 12345) -> str:
    """pi's ``makeText``: LCG-chosen words joined by spaces, cut to exactly ``n`` characters."""
    s = seed
    parts: list[str] = []
    length = -1
    while length < n:
        s = (s * 1103515245 + 12345) % 2**32
        word = WORDS[(s >> 16) % 20]
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:n]


def setup_faux(
    *, tokens_per_second: float | None = None, yield_every: int = 1
) -> tuple[FauxProvider, ProviderRegistry]:
    """The benchmark faux provider: one ``faux-1`` model, 4 characters per delta."""
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        provider="faux",
        token_size=(1, 1),
        tokens_per_second=tokens_per_second,
        yield_every=yield_every,
        registry=registry,
        models=[
            FauxModelDefinition(
                id="faux-1",
                name="Faux Model",
                input=("text",),
                context_window=1_000_000,
                max_tokens=16_384,
            )
        ],
    )
    return faux, registry


async def _echo(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=params["text"])], details={})


def echo_tool() -> FunctionTool:
    """The ``echo`` tool of the pi benchmarks."""
    return FunctionTool(
        name="echo",
        label="Echo",
        description="Echo the given text back.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        fn=_echo,
    )


def tool_then_text(final_text: str) -> Any:
    """The response script: a tool result last -> the final text, otherwise an echo call."""
    counter = iter(range(1 << 62))

    def respond(context: Context, *_: Any) -> AssistantMessage:
        if context.messages and isinstance(context.messages[-1], ToolResultMessage):
            return faux_assistant_message(final_text)
        call = faux_tool_call("echo", {"text": "hello world"}, id=f"call_{next(counter)}")
        return faux_assistant_message([call], stop_reason="toolUse")

    return respond


def percentile(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, -(-p * len(sorted_values) // 100) - 1))
    return sorted_values[int(index)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def env() -> dict[str, str]:
    return {"python": platform.python_version(), "trio": trio.__version__}


def emit(result: dict[str, Any]) -> None:
    print(orjson.dumps(result).decode(), flush=True)
