"""The Gemini cases of ``fixtures_google`` replayed on Vertex AI (express mode, API key).

Every case whose model the catalogue also lists under ``google-vertex`` is run by pitrio and by
``tests/data/pi/providers/vertex_capture.mjs`` (pi 0.73.1's ``streamGoogleVertex``), which
records what pi sends and emits (``python fixtures_vertex.py`` in ``tests/providers`` writes the
cases file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import attrs

from pitrio.codec import to_wire
from pitrio.providers import Model, default_catalogue

from fixtures_google import CASES as GOOGLE_CASES
from fixtures_google import Case, pi_options

API_KEY = "test-vertex-key"
CASES_FILE = Path(__file__).parents[1] / "data" / "pi" / "providers" / "vertex_cases.json"


def vertex_model(model_id: str, base_url: str = "http://127.0.0.1:1") -> Model:
    found = default_catalogue.get("google-vertex", model_id)
    assert found is not None, model_id
    return attrs.evolve(found, base_url=base_url)


CASES: list[Case] = [
    attrs.evolve(case, options=attrs.evolve(case.options, api_key=API_KEY))
    for case in GOOGLE_CASES
    if default_catalogue.get("google-vertex", case.model_id) is not None
]


def pi_cases() -> dict[str, Any]:
    """The cases as ``vertex_capture.mjs`` reads them."""
    return {
        "cases": [
            {
                "name": case.name,
                "mode": "simple" if case.simple else "stream",
                "model": to_wire(vertex_model(case.model_id)),
                "context": to_wire(case.context),
                "options": pi_options(case),
                "response": {
                    "status": case.status,
                    "contentType": case.content_type,
                    "body": case.body.decode(),
                },
            }
            for case in CASES
        ]
    }


def main() -> None:
    """Write the cases file for ``vertex_capture.mjs``."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else CASES_FILE
    path.write_text(json.dumps(pi_cases(), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
