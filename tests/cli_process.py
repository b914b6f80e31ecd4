"""Running the real ``pitrio`` command in a subprocess, as the CLI and extension tests do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

CLI_GUARD_S: Final = 60
"""Seconds before a hung CLI subprocess fails its test (a guard, not a timing assertion)."""


def run_faux_cli(
    cwd: Path, home: Path, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pitrio --provider faux --no-session ARGS`` in ``cwd`` with ``HOME=home`` and
    no ``PITRIO_*`` / ``PI_*`` variables of the calling environment (plus ``extra_env``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PITRIO_", "PI_"))}
    env["HOME"] = str(home)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "pitrio", "--provider", "faux", "--no-session", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=CLI_GUARD_S,
        check=False,
    )
