"""pi-ai: stream one answer from the faux provider (a scripted model; no key, no network).

Run: python examples/stream_faux.py
"""

import trio

from pitrio.providers import (
    Context,
    UserMessage,
    faux_assistant_message,
    register_faux_provider,
    stream_simple,
)


async def main() -> None:
    faux = register_faux_provider(api="faux")  # a scripted model
    faux.set_responses([faux_assistant_message("Hello from the faux model.")])
    context = Context(messages=[UserMessage(content="Hi!", timestamp=0)])
    async with stream_simple(faux.models[0], context) as events:
        async for event in events:  # start, text_start, text_delta..., text_end, done
            if event.type == "text_delta":
                print(event.delta, end="", flush=True)
        message = await events.result()  # the final AssistantMessage
    print(f"\nstop_reason={message.stop_reason} output_tokens={message.usage.output}")


if __name__ == "__main__":
    trio.run(main)
