"""Scenario 6, ``cli_startup`` (mirrors ../shared/bench/pi/scenarios/cli_startup.mjs).

Wall time of ``pitrio --version`` and ``pitrio --help`` (the console script of this Python),
and as references: a bare ``python -c pass`` and ``import pitrio.sessions`` /
``pitrio.actors`` / ``pitrio.providers`` in an otherwise empty interpreter. Each command runs
``--warmup`` times untimed, then ``--runs`` times; the median is reported (hyperfine
``--shell=none`` when it is installed, else a spawn loop, as pi's script does). ``HOME`` and
the agent dirs point into a temporary directory, and the working directory is an empty one.

    python bench/cli_startup.py --runs 10 --warmup 2

Prints one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from _common import emit, env


def commands() -> dict[str, list[str]]:
    python = sys.executable
    script = Path(python).parent / "pitrio"
    # The console script is what a user runs; without one, the same entry point through -c.
    cli = (
        [str(script)]
        if script.exists() and not os.environ.get("PITRIO_BENCH_NO_SCRIPT")
        else [python, "-c", "from pitrio.cli import console_main; console_main()"]
    )
    return {
        "version": [*cli, "--version"],
        "help": [*cli, "--help"],
        "python_baseline": [python, "-c", "pass"],
        "sessions_import": [python, "-c", "import pitrio.sessions"],
        "actors_import": [python, "-c", "import pitrio.actors"],
        "providers_import": [python, "-c", "import pitrio.providers"],
    }


def measure_spawn(argv: list[str], *, runs: int, warmup: int, **options: Any) -> dict[str, Any]:
    times = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, check=False, **options)
        elapsed = (time.perf_counter() - start) * 1e3
        if done.returncode != 0:
            raise SystemExit(f"{argv} exited {done.returncode}")
        if i >= warmup:
            times.append(elapsed)
    return {
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "runs": len(times),
    }


def measure_hyperfine(
    argv: list[str], *, runs: int, warmup: int, tmp: str, **options: Any
) -> dict[str, Any]:
    out = os.path.join(tmp, "hyperfine.json")
    subprocess.run(
        [
            "hyperfine",
            "--shell=none",
            "--warmup",
            str(warmup),
            "--runs",
            str(runs),
            "--export-json",
            out,
            "--style",
            "none",
            " ".join(argv),
        ],
        stdout=subprocess.DEVNULL,
        check=True,
        **options,
    )
    result = orjson.loads(Path(out).read_bytes())["results"][0]
    return {
        "median_ms": round(result["median"] * 1e3, 1),
        "mean_ms": round(result["mean"] * 1e3, 1),
        "min_ms": round(result["min"] * 1e3, 1),
        "runs": len(result["times"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Start-up time of the command (pi scenario 6).")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    # hyperfine splits the command on spaces; the -c fallback has spaces in its argument.
    use_hyperfine = shutil.which("hyperfine") is not None
    with tempfile.TemporaryDirectory(prefix="pitrio-bench-") as tmp:
        cwd = os.path.join(tmp, "cwd")
        os.makedirs(cwd)
        child_env = {
            **os.environ,
            "HOME": os.path.join(tmp, "home"),
            "PITRIO_CODING_AGENT_DIR": os.path.join(tmp, "agent"),
            "PI_CODING_AGENT_DIR": os.path.join(tmp, "pi-agent"),
        }
        results = {}
        for name, argv in commands().items():
            options: dict[str, Any] = {"cwd": cwd, "env": child_env, "stdin": subprocess.DEVNULL}
            if use_hyperfine and not any(" " in part for part in argv):
                results[name] = measure_hyperfine(
                    argv, runs=args.runs, warmup=args.warmup, tmp=tmp, **options
                )
            else:
                results[name] = measure_spawn(argv, runs=args.runs, warmup=args.warmup, **options)
        version = subprocess.run(
            commands()["version"], capture_output=True, text=True, check=False, **options
        )
    emit(
        {
            "scenario": "cli_startup",
            "tool": "hyperfine --shell=none" if use_hyperfine else "spawn loop",
            "version_output": version.stdout.strip(),
            "version_ms": results["version"]["median_ms"],
            "help_ms": results["help"]["median_ms"],
            "python_baseline_ms": results["python_baseline"]["median_ms"],
            "sessions_import_ms": results["sessions_import"]["median_ms"],
            "actors_import_ms": results["actors_import"]["median_ms"],
            "providers_import_ms": results["providers_import"]["median_ms"],
            "details": results,
            "env": env(),
        }
    )


if __name__ == "__main__":
    main()
