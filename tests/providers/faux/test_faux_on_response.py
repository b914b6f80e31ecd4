"""The faux provider reports a response per request, as pi's does (``onResponse``)."""

from __future__ import annotations

from typing import Any

from pitrio.providers import (
    Context,
    Model,
    ProviderRegistry,
    ProviderResponse,
    StreamOptions,
    complete_simple,
    faux_assistant_message,
    register_faux_provider,
)


async def test_on_response_sees_a_200_without_headers_for_every_request() -> None:
    """Each request, the one past the script included, calls on_response once with status 200,
    no headers and the request's model; an async callback is awaited."""
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", registry=registry)
    faux.set_responses([faux_assistant_message("one")])
    model = faux.get_model()
    assert model is not None
    seen: list[tuple[ProviderResponse, Model]] = []

    async def on_response(response: ProviderResponse, model: Model) -> Any:
        seen.append((response, model))

    options = StreamOptions(on_response=on_response)
    first = await complete_simple(model, Context(), options, registry=registry)
    second = await complete_simple(model, Context(), options, registry=registry)
    assert first.text() == "one"
    assert second.stop_reason == "error"  # no scripted response left
    assert [(r.status, dict(r.headers), m) for r, m in seen] == [(200, {}, model)] * 2
