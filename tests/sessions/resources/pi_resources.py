"""Helpers that rebuild the fixture of tests/data/pi/resources/ and map pi's output to pitrio's."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent.parent.parent / "data" / "pi" / "resources"
CAPTURE_DATE = dt.date(2026, 5, 4)
PI_CONFIG = ".pi"
PITRIO_CONFIG = ".pitrio"

# The documented differences between pi's default prompt and pitrio's: the product name, and
# the documentation paths (pi's package dir, "<PI_PACKAGE>" in the capture).
PRODUCT_SUBSTITUTIONS = (
    ("operating inside pi, a coding", "operating inside pitrio, a coding"),
    (
        "Pi documentation (read only when the user asks about pi itself",
        "Pitrio documentation (read only when the user asks about pitrio itself",
    ),
    ("pi packages (docs/packages.md)", "pitrio packages (docs/packages.md)"),
    ("When working on pi topics", "When working on pitrio topics"),
    ("Always read pi .md files", "Always read pitrio .md files"),
)
DOCS = ("<DOCS>/README.md", "<DOCS>/docs", "<DOCS>/examples")


def load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def make_fixture(root: Path, capture: dict[str, Any]) -> None:
    """Write the capture's fixture tree under ``root`` with pitrio's config folder name."""
    for relative, content in capture["fixture"].items():
        path = root / relative.replace("{CONFIG}", PITRIO_CONFIG)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
    for relative in capture["dirs"]:
        (root / relative).mkdir(parents=True, exist_ok=True)


def pi_to_pitrio(value: Any, root: Path) -> Any:
    """pi's captured JSON as pitrio should produce it for the fixture at ``root``."""
    text = json.dumps(value)
    for old, new in PRODUCT_SUBSTITUTIONS:
        text = text.replace(old, new)
    text = text.replace("<PI_PACKAGE>/", "<DOCS>/")
    text = text.replace(f"/{PI_CONFIG}/", f"/{PITRIO_CONFIG}/")
    return json.loads(text.replace("<ROOT>", str(root)))


def scrub(text: str, root: Path) -> str:
    return text.replace(str(root), "<ROOT>")


def real_root(tmp_path: Path) -> Path:
    # Paths are compared as strings: resolve symlinks in the temp dir (macOS /var -> /private).
    return Path(os.path.realpath(tmp_path))
