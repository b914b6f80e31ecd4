"""``PITRIO_ACCELERATORS``: ``0`` switches the generated decoders off (read once, at import),
anything else leaves them on, and pi's session captures load to the same entries either way."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest

import pitrio

CHILD = Path(__file__).parent.parent / "accelerators_child.py"
DATA = Path(__file__).parent.parent.parent / "data" / "pi"


@cache
def run_child(setting: str | None) -> dict[str, Any]:
    """What the child script decodes with ``PITRIO_ACCELERATORS`` set to ``setting`` (unset
    for ``None``)."""
    env = dict(os.environ)
    env.pop("PITRIO_ACCELERATORS", None)
    if setting is not None:
        env["PITRIO_ACCELERATORS"] = setting
    # The pitrio under test, whatever the child's sys.path would find first.
    root = str(Path(pitrio.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(CHILD), str(DATA)],
        env=env,
        stdout=subprocess.PIPE,
        check=True,
        timeout=120,
    )
    # The last line (the loader logs the torn capture's skipped line before it).
    result: dict[str, Any] = orjson.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize(("setting", "enabled"), [("0", False), (None, True), ("1", True)])
def test_the_environment_switches_the_generated_decoders(
    setting: str | None, enabled: bool
) -> None:
    """Off: no generated function for any class, no entry builders; on: both."""
    result = run_child(setting)
    assert result["enabled"] is enabled
    assert result["message_entry_fast"] is enabled
    assert (result["entry_builders"] > 0) is enabled


def test_captures_load_the_same_with_and_without_the_generated_decoders() -> None:
    """Every capture file: the same header, entries (types, values, unknown keys) and
    problems, decoded by the generated functions or by cattrs' alone."""
    on, off = run_child("1")["files"], run_child("0")["files"]
    assert len(on) >= 10 and on.keys() == off.keys()
    for name in on:
        assert on[name] == off[name], name
