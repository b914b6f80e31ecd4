"""Model resolution from flags: the same answers as pi 0.73.1 over the same catalogue."""

from __future__ import annotations

from typing import Any

import pytest

from pitrio.cli._model_resolver import (
    Resolved,
    first_available,
    parse_model_pattern,
    resolve_cli_model,
)
from pitrio.providers import Model, default_catalogue

from pi_data import load_json

CAPTURE = load_json("cli/model_patterns.json")
ALL_MODELS = [m for p in default_catalogue.providers() for m in default_catalogue.models(p)]


def shown(result: Resolved) -> dict[str, Any]:
    return {
        "model": f"{result.model.provider}/{result.model.id}" if result.model else None,
        "thinkingLevel": result.thinking_level,
        "warning": result.warning,
        "error": result.error,
    }


@pytest.mark.parametrize("case", CAPTURE["patterns"], ids=lambda c: c["pattern"])
def test_model_pattern_matches_pi(case: dict[str, Any]) -> None:
    expected = {k: case[k] for k in ("model", "thinkingLevel", "warning", "error")}
    assert shown(parse_model_pattern(case["pattern"], ALL_MODELS)) == expected


@pytest.mark.parametrize(
    "case", CAPTURE["cli"], ids=lambda c: f"{c['cliProvider']}-{c['cliModel']}"
)
def test_cli_model_resolution_matches_pi(case: dict[str, Any]) -> None:
    expected = {k: case[k] for k in ("model", "thinkingLevel", "warning", "error")}
    assert shown(resolve_cli_model(case["cliProvider"], case["cliModel"], ALL_MODELS)) == expected


def test_first_available_prefers_pi_provider_order_and_defaults() -> None:
    keyed = {"groq", "anthropic"}

    def has_auth(model: Model) -> bool:
        return model.provider in keyed

    chosen = first_available(ALL_MODELS, has_auth)
    assert chosen is not None
    assert (chosen.provider, chosen.id) == ("anthropic", "claude-opus-4-7")
    assert first_available(ALL_MODELS, lambda m: False) is None
