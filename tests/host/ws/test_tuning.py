"""The commands that hold many sessions space out the cycle collector; the library does not."""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys

import pytest

from pitrio.cli._load import load_main
from pitrio.host.ws._tuning import (
    GC_TUNING_ENV,
    MANY_SESSIONS_GC_THRESHOLD,
    tune_gc_for_many_sessions,
)


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


def test_pitrio_gc_tuning_0_keeps_the_default_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PITRIO_GC_TUNING=0`` (to measure without the tuning) leaves the threshold alone;
    any other value tunes."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        monkeypatch.setenv(GC_TUNING_ENV, "0")
        tune_gc_for_many_sessions()
        assert gc.get_threshold() == (700, 10, 10)
        monkeypatch.setenv(GC_TUNING_ENV, "1")
        tune_gc_for_many_sessions()
        assert gc.get_threshold() == MANY_SESSIONS_GC_THRESHOLD
    finally:
        gc.set_threshold(*before)
