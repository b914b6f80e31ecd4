"""Every model of the bundled catalogue (``pitrio/providers/models.json``) can be used: its
wire API has a provider in the default registry."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

import pitrio.providers
from pitrio.providers import default_catalogue, default_registry

MODELS_JSON = Path(pitrio.providers.__file__).parent / "models.json"


# APIs whose providers other engineers are building (issue 31, items 1-3). The lead removes
# this list when their branches are merged; strict=True makes a forgotten entry fail.
def models_by_api() -> dict[str, list[tuple[str, str]]]:
    """``api -> [(provider, model id)]`` as the bundled file lists them."""
    grouped: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for provider, models in json.loads(MODELS_JSON.read_text()).items():
        for model_id, model in models.items():
            grouped[model["api"]].append((provider, model_id))
    return dict(grouped)


BY_API = models_by_api()


def test_catalogue_covers_the_known_apis() -> None:
    counts = {api: len(models) for api, models in BY_API.items()}
    assert counts["google-vertex"] == 13 and counts["mistral-conversations"] == 28
    assert sum(len(models) for models in BY_API.values()) == sum(
        len(default_catalogue.models(p)) for p in default_catalogue.providers()
    )


@pytest.mark.parametrize("api", sorted(BY_API))
def test_every_model_resolves_to_an_implemented_api(api: str) -> None:
    unresolved = []
    for provider, model_id in BY_API[api]:
        model = default_catalogue.get(provider, model_id)
        assert model is not None, f"{provider}/{model_id} is not in the catalogue"
        assert model.api == api
        if default_registry.get(model.api) is None:
            unresolved.append(f"{provider}/{model_id}")
    assert not unresolved, f"no provider for {api}: {unresolved}"
