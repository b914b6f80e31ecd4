"""What the provider tests of the Responses family share: a short request and a run that
collects the event types and the final message."""

from __future__ import annotations

from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    ProviderRegistry,
    StreamOptions,
    UserMessage,
    stream,
    stream_simple,
)


def ask(text: str = "What is 2+2?", system: str | None = "Be brief.") -> Context:
    """A one-message request with a system prompt."""
    return Context(system_prompt=system, messages=[UserMessage(content=text, timestamp=1)])


async def run_types(
    model: Model,
    context: Context,
    options: StreamOptions,
    registry: ProviderRegistry,
    *,
    simple: bool = False,
) -> tuple[list[str], AssistantMessage]:
    """Stream through ``registry``: every event's type, in order, and the final message."""
    open_stream = stream_simple if simple else stream
    async with open_stream(model, context, options, registry=registry) as events:
        types = [event.type async for event in events]
        result = await events.result()
    return types, result
