"""The ``async with stream_simple(...)`` block: what it raises comes out as itself."""

from __future__ import annotations

import pytest
import trio

from pitrio.providers import (
    Context,
    Model,
    ProviderNotFound,
    ProviderRegistry,
    faux_assistant_message,
    register_faux_provider,
    stream,
    stream_simple,
)


def _faux(text: str) -> tuple[ProviderRegistry, Model]:
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", token_size=(1, 1), registry=registry)
    faux.set_responses([faux_assistant_message(text)])
    model = faux.get_model()
    assert model is not None
    return registry, model


async def test_an_exception_the_block_raises_mid_stream_is_not_lost() -> None:
    """A ValueError raised while the provider still streams comes out bare (it used to be
    swallowed: the cleanup's checkpoint raised Cancelled over it)."""
    registry, model = _faux("x" * 1_000)
    with pytest.raises(ValueError, match="the block's own"):
        async with stream_simple(model, Context(), registry=registry) as events:
            async for event in events:
                if event.type == "text_delta":
                    raise ValueError("the block's own")


async def test_an_exception_after_the_stream_ended_is_raised_bare() -> None:
    """A block that read everything and then raises gets its exception back unwrapped."""
    registry, model = _faux("short")
    with pytest.raises(KeyError):
        async with stream(model, Context(), registry=registry) as events:
            async for _ in events:
                pass
            raise KeyError("after")


async def test_leaving_early_cancels_the_provider_and_an_outer_cancel_passes_through() -> None:
    """Breaking out ends the block at once; a cancellation from outside ends it as Cancelled."""
    registry, model = _faux("y" * 100_000)
    async with stream_simple(model, Context(), registry=registry) as events:
        async for event in events:
            if event.type == "text_delta":
                break
    assert not events.terminated
    registry2, model2 = _faux("z" * 100_000)
    with trio.CancelScope() as outer:
        async with stream_simple(model2, Context(), registry=registry2) as events2:
            async for event in events2:
                if event.type == "text_delta":
                    outer.cancel()
    assert outer.cancelled_caught


async def test_an_unknown_api_raises_provider_not_found_bare() -> None:
    """No provider for the model's API: ProviderNotFound, not an exception group."""
    _, model = _faux("x")
    with pytest.raises(ProviderNotFound):
        async with stream_simple(model, Context(), registry=ProviderRegistry()):
            pass
