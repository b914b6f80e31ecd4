"""pi 0.73.1 against pitrio on the six scenarios of ../shared/bench/pi/README.md, in one sitting.

Every job runs pi's scenario script and pitrio's counterpart interleaved (pi, pitrio, pi,
pitrio, ...), each in a fresh process, ``--reps`` times (3); the table shows, per figure, the
median of each side, the min-max of the runs, and the ratio (which side wins, by how much).
Every raw result goes to a JSON file (``--json``).

pi's side needs a copy of ../shared/bench/pi with its packages installed (the shared folder is
read-only)::

    cp -r ../shared/bench/pi /work/pibench && (cd /work/pibench && npm install)
    python bench/compare_pi.py --pi-dir /work/pibench --json /tmp/compare.json
    python bench/compare_pi.py --quick        # smaller N, one repetition: a smoke run
    python bench/compare_pi.py --only loop,cli --reps 1

``--suite http`` runs the HTTP scenarios of ../shared/bench/http instead (pi's ``http_*.mjs``
and pitrio's ``bench/http_*.py``) against one ``llm_server.mjs`` this script starts (from the pi
copy, on a free loopback port; stopped by its process id at the end) and passes to every run
as ``--base-url``. pi's side needs a copy of ../shared/bench/http whose ``node_modules`` holds
pi 0.73.1 (its lock file is bench/pi's, so a link to an installed bench/pi copy's will do)::

    cp -r ../shared/bench/http /work/pihttp && ln -s /work/pibench/node_modules /work/pihttp/
    python bench/compare_pi.py --suite http --pi-dir /work/pihttp --json /tmp/http.json
    python bench/compare_pi.py --suite http --only http_sessions --reps 1
    python bench/compare_pi.py --suite http --stretch --reps 2   # adds 5,000 sessions (openai)

Sessions run at N = 200, 1,000 and 2,000 on both APIs; tool arguments at 1k, 4k, 16k and 64k
characters (pi only up to 16k: it is quadratic, seconds per prompt beyond). A run that reports
errors or wrong answers is flagged on its progress line.

``--pitrio-src DIR`` runs pitrio from a copy of the package (``git archive HEAD pitrio | tar
-x -C DIR``) so that a shared work tree changing during a long run does not change what is
measured.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

BENCH = Path(__file__).resolve().parent
NODE_GC_FLAGS = ("--expose-gc", "--max-old-space-size=8192")


@attrs.frozen
class Job:
    """One scenario run on both sides: pi's script and arguments (none: a pitrio variant
    compared with another job's pi figure), pitrio's."""

    id: str
    pi: tuple[str, ...]
    pitrio: tuple[str, ...]
    node_flags: tuple[str, ...] = ()


@attrs.frozen
class Row:
    """One figure of the table: where it is in each side's result, and which way is better."""

    figure: str
    job: str
    pi: Callable[[dict[str, Any]], float | None]
    pitrio: Callable[[dict[str, Any]], float | None]
    higher_is_better: bool
    pitrio_job: str | None = None  # a pitrio variant job compared with pi's figure of `job`


def key(*path: str) -> Callable[[dict[str, Any]], float | None]:
    def get(result: dict[str, Any]) -> float | None:
        value: Any = result
        for part in path:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value if isinstance(value, int | float) else None

    return get


def jobs(quick: bool) -> list[Job]:
    prompts = "200" if quick else "2000"
    warmup = "20" if quick else "100"
    n_small, n_large = ("100", "300") if quick else ("1000", "5000")
    idle = "1000" if quick else "10000"
    big, small = ("250000", "100000") if quick else ("1000000", "100000")
    entries = "2000" if quick else "10000"
    turns = "50" if quick else "200"
    runs = "3" if quick else "10"

    def loop(mode: str, *extra: str, suffix: str = "") -> Job:
        job = Job(
            f"loop_overhead/{mode}{suffix}",
            (
                "scenarios/loop_overhead.mjs",
                f"--mode={mode}",
                f"--prompts={prompts}",
                f"--warmup={warmup}",
            ),
            ("loop_overhead.py", "--mode", mode, "--prompts", prompts, "--warmup", warmup, *extra),
        )
        return attrs.evolve(job, pi=()) if extra else job

    return [
        loop("reset"),
        loop("reset", "--yield-every", "1", suffix="_y1"),
        loop("provider"),
        loop("provider", "--call", "start_stream", suffix="_started"),
        Job("call_floor", (), ("call_floor.py", "--prompts", prompts)),
        loop("session"),
        loop("session-accumulate"),
        Job(
            "stream_throughput/big",
            ("scenarios/stream_throughput.mjs", f"--chars={big}"),
            ("stream_throughput.py", "--chars", big),
        ),
        Job(
            "stream_throughput/small",
            ("scenarios/stream_throughput.mjs", f"--chars={small}"),
            ("stream_throughput.py", "--chars", small),
        ),
        Job(
            "concurrent_sessions/small",
            ("scenarios/concurrent_sessions.mjs", f"--n={n_small}"),
            ("concurrent_sessions.py", "--n", n_small),
            NODE_GC_FLAGS,
        ),
        Job(
            "concurrent_sessions/small_tuned",
            (),
            ("concurrent_sessions.py", "--n", n_small, "--tune-gc"),
        ),
        Job(
            "concurrent_sessions/large",
            ("scenarios/concurrent_sessions.mjs", f"--n={n_large}"),
            ("concurrent_sessions.py", "--n", n_large),
            NODE_GC_FLAGS,
        ),
        Job(
            "idle_memory",
            ("scenarios/idle_memory.mjs", f"--n={idle}"),
            ("idle_memory.py", "--n", idle),
            NODE_GC_FLAGS,
        ),
        Job(
            "session_persistence",
            ("scenarios/session_persistence.mjs", f"--turns={turns}", f"--entries={entries}"),
            ("session_io.py", "--turns", turns, "--entries", entries),
        ),
        Job(
            "cli_startup",
            ("scenarios/cli_startup.mjs", f"--runs={runs}"),
            ("cli_startup.py", "--runs", runs),
        ),
    ]


def rows(quick: bool) -> list[Row]:
    n_small, n_large = ("100", "300") if quick else ("1,000", "5,000")
    idle = "1,000" if quick else "10,000"
    big, small = ("250 KB", "100 KB") if quick else ("1 MB", "100 KB")
    entries = "2,000" if quick else "10,000"
    prompts = "200" if quick else "2,000"
    per_call = key("per_turn_us")
    return [
        Row("Agent loop reset, prompts/s (1)", "loop_overhead/reset", key("prompts_per_s"),
            key("prompts_per_s"), True),
        Row("  same, pitrio with a checkpoint per delta (1)", "loop_overhead/reset",
            key("prompts_per_s"), key("prompts_per_s"), True, pitrio_job="loop_overhead/reset_y1"),
        Row("faux provider alone, µs per LLM call (1)", "loop_overhead/provider", per_call,
            per_call, False),
        Row("  same, pitrio via start_stream in one nursery, as pi's detached call (1)",
            "loop_overhead/provider", per_call, per_call, False,
            pitrio_job="loop_overhead/provider_started"),
        Row("  same, the floor of that shape on CPython, no pitrio code (call_floor.py)",
            "loop_overhead/provider", per_call, key("built_us_per_call"), False,
            pitrio_job="call_floor"),
        Row("fresh AgentSession per prompt, prompts/s (1)", "loop_overhead/session",
            key("prompts_per_s"), key("prompts_per_s"), True),
        Row(f"one AgentSession, {prompts} prompts kept, prompts/s (1)",
            "loop_overhead/session-accumulate", key("prompts_per_s"), key("prompts_per_s"), True),
        Row(f"{big} answer through an Agent, deltas/s (2)", "stream_throughput/big",
            key("text_deltas_per_s"), key("text_deltas_per_s"), True),
        Row(f"{small} answer through an Agent, deltas/s (2)", "stream_throughput/small",
            key("text_deltas_per_s"), key("text_deltas_per_s"), True),
        Row(f"{n_small} sessions at 50 tok/s, wall s (3; ideal 2.12)",
            "concurrent_sessions/small", key("wall_s"), key("wall_s"), False),
        Row("  same, event-loop lag p99 ms", "concurrent_sessions/small", key("lag_p99_ms"),
            key("lag_p99_ms"), False),
        Row("  same, pitrio with tune_gc_for_many_sessions(), wall s", "concurrent_sessions/small",
            key("wall_s"), key("wall_s"), False, pitrio_job="concurrent_sessions/small_tuned"),
        Row("  same, pitrio with tune_gc_for_many_sessions(), lag p99 ms",
            "concurrent_sessions/small", key("lag_p99_ms"), key("lag_p99_ms"), False,
            pitrio_job="concurrent_sessions/small_tuned"),
        Row(f"{n_large} sessions at 50 tok/s, wall s (3)", "concurrent_sessions/large",
            key("wall_s"), key("wall_s"), False),
        Row("  same, event-loop lag p99 ms", "concurrent_sessions/large", key("lag_p99_ms"),
            key("lag_p99_ms"), False),
        Row("  same, peak RSS per session KB", "concurrent_sessions/large",
            key("peak_rss_per_session_kb"), key("peak_rss_per_session_kb"), False),
        Row(f"idle AgentSession RSS KB at N={idle} (4)", "idle_memory",
            key("rss_per_session_kb"), key("rss_per_session_kb"), False),
        Row(f"open a {entries}-entry session, ms (5)", "session_persistence",
            key("reopen", "open_ms"), key("reopen", "open_ms"), False),
        Row("  full restore (open + AgentSession), ms (5)", "session_persistence",
            key("reopen", "restore_agent_session_ms"), key("reopen", "restore_agent_session_ms"),
            False),
        Row("  AgentSession turn p50, persisted, ms (5)", "session_persistence",
            key("turn_ms_p50_persisted"), key("agent_session", "turn_ms_p50_persisted"), False),
        Row("`--version`, ms (6)", "cli_startup", key("version_ms"), key("version_ms"), False),
        Row("`--help`, ms (6)", "cli_startup", key("help_ms"), key("help_ms"), False),
        Row("import the SDK (pi-coding-agent / pitrio.sessions), ms (6)", "cli_startup",
            key("sdk_import_ms"), key("sessions_import_ms"), False),
    ]  # fmt: skip


def http_sizes(quick: bool, stretch: bool) -> tuple[list[str], list[str], list[int]]:
    """Session counts, the counts run on both APIs, tool-argument lengths of the HTTP suite."""
    if quick:
        return ["100", "300"], ["300"], [1000, 4000]
    counts = ["200", "1000", "2000", *(["5000"] if stretch else [])]
    return counts, ["200", "1000", "2000"], [1000, 4000, 16000, 64000]


PI_TOOL_CHARS_MAX = 16000  # pi takes seconds per prompt above this (quadratic): pitrio only


def http_jobs(quick: bool, stretch: bool = False) -> list[Job]:
    """The scenarios of ../shared/bench/http; ``--base-url`` is added to every run."""
    prompts, warmup = ("100", "10") if quick else ("500", "50")
    counts, both_apis, tool_chars = http_sizes(quick, stretch)
    chars = "250000" if quick else "1000000"
    apis = {"openai": "openai-completions", "anthropic": "anthropic-messages"}
    jobs: list[Job] = []
    for short, api in apis.items():
        jobs.append(
            Job(
                f"http_loop/{short}",
                ("scenarios/http_loop.mjs", "--api", api, "--prompts", prompts,
                 "--warmup", warmup),
                ("http_loop.py", "--api", api, "--prompts", prompts, "--warmup", warmup),
            )
        )  # fmt: skip
    for n in counts:
        for short, api in apis.items():
            if short == "anthropic" and n not in both_apis:
                continue
            jobs.append(
                Job(
                    f"http_sessions/{short}_n{n}",
                    ("scenarios/http_sessions.mjs", "--n", n, "--api", api),
                    ("http_sessions.py", "--n", n, "--api", api),
                    NODE_GC_FLAGS,
                )
            )
    for short, api in apis.items():
        jobs.append(
            Job(
                f"http_stream/{short}",
                ("scenarios/http_stream.mjs", "--api", api, "--chars", chars),
                ("http_stream.py", "--api", api, "--chars", chars),
            )
        )
    for k in tool_chars:
        for short, api in apis.items():
            pi = ("scenarios/http_loop.mjs", "--api", api, "--tool-text-chars", str(k),
                  "--prompts", "5", "--warmup", "1")  # fmt: skip
            jobs.append(
                Job(
                    f"http_tool_args/{short}_{k // 1000}k",
                    pi if k <= PI_TOOL_CHARS_MAX else (),
                    ("http_loop.py", "--api", api, "--tool-text-chars", str(k),
                     "--prompts", "5", "--warmup", "1"),
                )
            )  # fmt: skip
    return jobs


def per_char(chars: int) -> Callable[[dict[str, Any]], float | None]:
    """A prompt's p50 in microseconds per character of streamed tool arguments (``chars``
    1000: in milliseconds per prompt)."""

    def get(result: dict[str, Any]) -> float | None:
        value = key("per_prompt_us_p50")(result)
        return None if value is None else value / chars

    return get


def http_rows(quick: bool, stretch: bool = False) -> list[Row]:
    counts, both_apis, tool_chars = http_sizes(quick, stretch)
    big = "250 KB" if quick else "1 MB"
    rows_: list[Row] = []
    for short in ("openai", "anthropic"):
        job = f"http_loop/{short}"
        rows_ += [
            Row(f"H1 agent loop, {short}, prompts/s", job, key("prompts_per_s"),
                key("prompts_per_s"), True),
            Row("  same, client CPU µs per prompt", job, key("client_cpu_us_per_prompt"),
                key("client_cpu_us_per_prompt"), False),
        ]  # fmt: skip
    for n in counts:
        for api in ("openai", "anthropic"):
            if api == "anthropic" and n not in both_apis:
                continue
            job = f"http_sessions/{api}_n{n}"
            rows_ += [
                Row(f"H2 {n} sessions, {api}, wall s (ideal 2.12)", job, key("wall_s"),
                    key("wall_s"), False),
                Row("  same, client CPU ms per session", job, key("client_cpu_ms_per_session"),
                    key("client_cpu_ms_per_session"), False),
                Row("  same, event-loop lag p99 ms", job, key("lag_p99_ms"), key("lag_p99_ms"),
                    False),
                Row("  same, peak RSS per session KB", job, key("peak_rss_per_session_kb"),
                    key("peak_rss_per_session_kb"), False),
                Row(f"  same, TCP connections opened (requests = {2 * int(n)})", job,
                    key("server_connections_opened"), key("server_connections_opened"), False),
            ]  # fmt: skip
    for short in ("openai", "anthropic"):
        job = f"http_stream/{short}"
        rows_ += [
            Row(f"H3 {big} answer, {short}, deltas/s", job, key("text_deltas_per_s"),
                key("text_deltas_per_s"), True),
            Row("  same, client CPU µs per delta", job, key("client_cpu_us_per_delta"),
                key("client_cpu_us_per_delta"), False),
        ]  # fmt: skip
    for short in ("openai", "anthropic"):
        for k in tool_chars:
            job = f"http_tool_args/{short}_{k // 1000}k"
            rows_ += [
                Row(f"H1 with {k // 1000}k characters of streamed tool arguments, {short}, ms "
                    "per prompt (p50)", job, per_char(1000), per_char(1000), False),
                Row("  same, µs per argument character", job, per_char(k), per_char(k), False),
            ]  # fmt: skip
    return rows_


def last_json(stdout: str) -> dict[str, Any] | None:
    """The last JSON object a scenario printed (pitrio's stream bench ends with a summary)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and not value.get("summary"):
            return value
    return None


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout}s"}
    result = last_json(done.stdout)
    if result is None:
        return {"error": f"no JSON result (exit {done.returncode})", "stderr": done.stderr[-2000:]}
    result["_seconds"] = round(time.perf_counter() - start, 1)
    return result


def summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 10_000:
        return f"{value / 1000:,.0f}k"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def cell(stats: dict[str, float] | None) -> str:
    if stats is None:
        return "-"
    text = fmt(stats["median"])
    if stats["min"] != stats["max"]:
        text += f" ({fmt(stats['min'])}-{fmt(stats['max'])})"
    return text


def ratio(pi: float | None, pitrio: float | None, higher_is_better: bool) -> str:
    if not pi or not pitrio:
        return "-"
    pitrio_better = pitrio > pi if higher_is_better else pitrio < pi
    factor = max(pi, pitrio) / min(pi, pitrio)
    if factor < 1.05:
        return "even"
    return f"{'pitrio' if pitrio_better else 'pi'} {factor:.1f}x"


def table(
    all_rows: list[Row], raw: dict[str, dict[str, list[dict[str, Any]]]]
) -> tuple[str, list[dict[str, Any]]]:
    lines = ["| figure (scenario) | pi 0.73.1 | pitrio | ratio |", "|---|---|---|---|"]
    data = []
    for row in all_rows:
        pi_runs = raw.get(row.job, {}).get("pi", [])
        pitrio_runs = raw.get(row.pitrio_job or row.job, {}).get("pitrio", [])
        pi_values = [v for v in map(row.pi, pi_runs) if v is not None]
        pitrio_values = [v for v in map(row.pitrio, pitrio_runs) if v is not None]
        if not pi_runs and not pitrio_runs:
            continue
        pi_stats, pitrio_stats = summary(pi_values), summary(pitrio_values)
        verdict = ratio(
            pi_stats["median"] if pi_stats else None,
            pitrio_stats["median"] if pitrio_stats else None,
            row.higher_is_better,
        )
        lines.append(f"| {row.figure} | {cell(pi_stats)} | {cell(pitrio_stats)} | {verdict} |")
        data.append(
            {"figure": row.figure, "pi": pi_stats, "pitrio": pitrio_stats, "ratio": verdict}
        )
    return "\n".join(lines), data


def start_server(node: str, pi_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """Start pi's ``llm_server.mjs`` on a free loopback port: the process and its root URL."""
    process = subprocess.Popen(
        [node, "llm_server.mjs", "--port", "0"],
        cwd=pi_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    port = orjson.loads(process.stdout.readline())["port"]
    return process, f"http://127.0.0.1:{port}"


def run_all(
    args: argparse.Namespace,
    selected: list[Job],
    reps: int,
    raw: dict[str, dict[str, list[dict[str, Any]]]],
    pi_dir: Path,
    pi_env: dict[str, str],
    pitrio_env: dict[str, str],
    base_url: tuple[str, ...],
) -> None:
    """Every job ``reps`` times, pi then pitrio, each run in a fresh process."""
    for rep in range(1, reps + 1):
        for job in selected:
            for side in ("pi", "pitrio"):
                if side == "pi" and not job.pi:
                    continue
                if side == "pi":
                    argv = [args.node, *job.node_flags, *job.pi, *base_url]
                    result = run(argv, pi_dir, pi_env, args.timeout)
                else:
                    argv = [sys.executable, *job.pitrio, *base_url]
                    result = run(argv, BENCH, pitrio_env, args.timeout)
                result["_loadavg_1m"] = os.getloadavg()[0]
                raw[job.id][side].append(result)
                note = result.get("error") or f"{result.get('_seconds')} s"
                # A run that measured wrong answers is not a figure: say so where it is seen.
                if result.get("errors") or result.get("bad_answers"):
                    note += (
                        f" (CHECK: errors {result.get('errors')}, bad answers "
                        f"{result.get('bad_answers')})"
                    )
                print(f"[rep {rep}/{reps}] {job.id} {side}: {note}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="pi 0.73.1 and pitrio, interleaved, as a table.")
    parser.add_argument("--suite", default="faux", choices=("faux", "http"))
    parser.add_argument(
        "--pi-dir", help="a copy of bench/pi (or, --suite http, of bench/http), installed"
    )
    parser.add_argument("--pitrio-src", help="run pitrio from this copy of the package")
    parser.add_argument("--reps", type=int, help="runs per side and job (default 3, quick 1)")
    parser.add_argument("--quick", action="store_true", help="small N, for a smoke run")
    parser.add_argument(
        "--stretch", action="store_true", help="--suite http: also 5,000 sessions (openai)"
    )
    parser.add_argument("--only", help="comma-separated job id prefixes (loop,stream,cli,...)")
    parser.add_argument("--json", help="write every raw result and the table here")
    parser.add_argument("--node", default="node")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per run, in seconds")
    args = parser.parse_args()
    reps = args.reps or (1 if args.quick else 3)
    http = args.suite == "http"
    pi_dir = Path(args.pi_dir or ("/work/pihttp" if http else "/work/pibench")).resolve()
    if not (pi_dir / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir():
        raise SystemExit(f"{pi_dir}: not an installed copy of pi's bench (see this module's doc)")
    prefixes = args.only.split(",") if args.only else None
    all_jobs = http_jobs(args.quick, args.stretch) if http else jobs(args.quick)
    selected = [job for job in all_jobs if not prefixes or job.id.startswith(tuple(prefixes))]

    pi_env = {**os.environ, "PI_CODING_AGENT_DIR": str(pi_dir / "tmp" / "agent")}
    (pi_dir / "tmp" / "agent").mkdir(parents=True, exist_ok=True)
    pitrio_env = dict(os.environ)
    # This tree's pitrio (not whatever the interpreter has installed), or the copy given.
    pitrio_env["PYTHONPATH"] = str(Path(args.pitrio_src or BENCH.parent).resolve())
    server = start_server(args.node, pi_dir) if http else None
    base_url: tuple[str, ...] = ("--base-url", server[1]) if server else ()

    started = datetime.datetime.now().astimezone()
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {
        job.id: {"pi": [], "pitrio": []} for job in selected
    }
    try:
        run_all(args, selected, reps, raw, pi_dir, pi_env, pitrio_env, base_url)
    finally:
        if server is not None:
            server[0].terminate()
            server[0].wait(10)

    text, data = table(http_rows(args.quick, args.stretch) if http else rows(args.quick), raw)

    node = subprocess.run([args.node, "--version"], capture_output=True, text=True, check=False)
    runs = f"median (min-max) of {reps} runs each" if reps > 1 else "one run each"
    header = (
        f"pi 0.73.1 (node {node.stdout.strip()}) and pitrio (CPython "
        f"{platform.python_version()}), {started:%Y-%m-%d}, {os.cpu_count()} CPUs, interleaved, "
        f"{runs}{', --quick' if args.quick else ''}"
    )
    print(header)
    print()
    print(text)
    if args.json:
        Path(args.json).write_bytes(
            orjson.dumps(
                {
                    "meta": {
                        "started": started.isoformat(),
                        "reps": reps,
                        "quick": args.quick,
                        "header": header,
                        "commit": subprocess.run(
                            ["git", "rev-parse", "HEAD"], cwd=BENCH, capture_output=True, text=True,
                            check=False,
                        ).stdout.strip(),
                    },
                    "table": data,
                    "runs": raw,
                },
                option=orjson.OPT_INDENT_2,
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()
