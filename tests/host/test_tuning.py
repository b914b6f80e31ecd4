"""The commands that hold many sessions space out the cycle collector; the library does not."""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys

from pitrio.cli._load import load_main
from pitrio.host.ws._tuning import MANY_SESSIONS_GC_THRESHOLD


def test_pitrio_load_in_process_sets_the_many_sessions_gc_threshold() -> None:
    """An in-process `pitrio load` run leaves the process with MANY_SESSIONS_GC_THRESHOLD."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        out = io.StringIO()
        status = load_main(["--sessions", "2", "--prompts", "1", "--quiet"], stdout=out)
        assert status == 0
        assert json.loads(out.getvalue())["errors"] == 0
        assert gc.get_threshold() == MANY_SESSIONS_GC_THRESHOLD
    finally:
        gc.set_threshold(*before)


def test_importing_and_using_the_library_leaves_the_threshold_alone() -> None:
    """A fresh interpreter that imports pitrio.host and pitrio.sessions keeps CPython's
    default threshold (only the two commands change it)."""
    code = (
        "import gc; d = gc.get_threshold(); import pitrio.host, pitrio.sessions; "
        "assert gc.get_threshold() == d, gc.get_threshold(); print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
