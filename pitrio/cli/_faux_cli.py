"""``--provider faux``: a model that needs no key and no network, for trying the CLI out.

It answers every request from the request itself: ``You said: <last user message>``, and from
the second user message on it adds how many user messages the conversation holds, so a
continued session (``-c``) shows that the earlier exchange reached the model. The answer is
streamed in deltas of four characters, like a real model's tokens.
"""

from __future__ import annotations

from typing import Final

from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxProvider,
    FauxState,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    UserMessage,
    faux_assistant_message,
    register_faux_provider,
)

FAUX_PROVIDER: Final = "faux"
FAUX_API: Final = "faux"
FAUX_TOKEN_SIZE: Final = (1, 1)
"""One "token" (four characters) per delta."""


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


def register_echo_faux(registry: ProviderRegistry) -> FauxProvider:
    """Register the echoing faux provider (model ``faux/faux-1``) in ``registry``."""
    faux = register_faux_provider(
        api=FAUX_API, provider=FAUX_PROVIDER, token_size=FAUX_TOKEN_SIZE, registry=registry
    )

    def respond(
        context: Context, options: StreamOptions, state: FauxState, model: Model
    ) -> AssistantMessage:
        # The faux provider consumes one queued response per request: queue the next one.
        faux.append_responses([respond])
        return faux_assistant_message(echo_reply(context))

    faux.set_responses([respond])
    return faux
