"""What ``pitrio --version`` and ``--help`` import: structure, never time (speed is in bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Runs the command's entry point in a fresh interpreter and prints the pitrio modules (and the
# heavy third-party ones) it imported before argparse exited.
_PROBE = """
import contextlib, io, json, sys
from pitrio.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""

# What --version and --help must not pay for: every provider and the model catalogue
# (pitrio.providers), the sessions and the agent runtime, and the libraries only they need.
_HEAVY = (
    "pitrio.providers",
    "pitrio.sessions",
    "pitrio.actors",
    "pitrio.tools",
    "trio",
    "httpx",
    "httpx2",
    "httpcore2",
)


def _imported(flag: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, flag],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=60,
        check=True,
    )
    modules: list[str] = json.loads(done.stdout)
    return modules


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_provider_session_or_runtime(flag: str) -> None:
    """``pitrio --version`` / ``--help`` answer without importing providers, sessions or Trio."""
    modules = _imported(flag)
    assert "pitrio.cli._main" in modules  # the probe really ran the command
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in _HEAVY)]
    assert heavy == []


def test_importing_sessions_leaves_jsonschema_for_the_first_validation() -> None:
    """``import pitrio.sessions`` does not import jsonschema (it is loaded on first use)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, pitrio.sessions; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = json.loads(done.stdout)
    assert "pitrio.sessions" in modules
    assert [m for m in modules if m == "jsonschema" or m.startswith("jsonschema.")] == []
