"""Every runnable example in ``examples/`` runs to the end (they are the README's first steps)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_to_the_end(example: Path, tmp_path: Path) -> None:
    """The example exits 0 with the agent dir in a temporary folder and no API keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PITRIO_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    done = subprocess.run(
        [sys.executable, str(example)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "the example printed nothing"


def test_there_are_examples() -> None:
    """The examples folder holds one example per layer at least."""
    assert len(EXAMPLES) >= 5
