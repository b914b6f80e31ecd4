"""The websocket host's fan-out over HTTP (issue 30, item 6; no pi counterpart).

Starts ``llm_server.mjs`` (../shared/bench/http) on a free loopback port, a temporary agent
dir whose ``models.json`` adds a provider ``bench`` pointing at it (``--api``; pi's model
string ``bench?answer_chars=400&tps=50``: an echo tool call, then a 400-character answer, paced
at 50 deltas/s), then ``pitrio serve`` with that model (``--no-extensions``, a temporary
session dir) and ``pitrio load --target ws://...`` with ``--sessions`` websocket clients, all
created first and prompted at once (the sessions have the coding tools, not ``echo``: the
server's tool call gets an error result, then the answer; two LLM calls per prompt as in
``http_sessions``). Then the same load in process (``pitrio load --base-url``, no host) beside
it. Every process is stopped by its process id.

Figures (one JSON object on stdout):

* ``host``: events delivered to the clients (the load's ``events``) per second of the run and
  per second of host CPU; host CPU per event (``/proc/PID/stat`` user + system over the load
  run, which also covers creating and closing the sessions); the host's RSS before the clients
  connect, its peak while they run (sampled every 25 ms), and (peak - before) per session; the
  load client's own summary (latencies, token lag, errors) and the server's counters.
* ``inproc``: the same load in one process (``pitrio load`` without ``--target``): its CPU per
  event and RSS per session, for comparison.

    python bench/host_fanout.py --sessions 1000
    python bench/host_fanout.py --sessions 200 --api anthropic-messages --skip-inproc
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SERVER_JS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "http" / "llm_server.mjs"
TOKEN = "fanout-bench-token"
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)/")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakRss:
    """Samples a process's RSS every ``interval`` seconds in a thread; ``stop()`` is the peak."""

    def __init__(self, pid: int, interval: float = 0.025) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            try:
                self.peak = max(self.peak, rss_bytes(self.pid))
            except OSError:
                return

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def start_llm_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [args.node, args.server_js, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{json.loads(process.stdout.readline())['port']}"


def http_get(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def http_post(url: str, body: dict[str, Any]) -> None:
    import urllib.request

    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def write_agent_dir(agent_dir: Path, root: str, api: str, model_id: str) -> None:
    base_url = f"{root}/v1" if api == "openai-completions" else root
    models = {
        "providers": {
            "bench": {
                "baseUrl": base_url,
                "api": api,
                "apiKey": "x",
                "models": [{"id": model_id, "contextWindow": 1_000_000}],
            }
        }
    }
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2))
    (agent_dir / "settings.json").write_text("{}")


def start_host(
    args: argparse.Namespace, env: dict[str, str], work: Path, model_id: str
) -> tuple[subprocess.Popen[str], int]:
    """``pitrio serve`` on a free port: the process and its port (read from its stderr)."""
    profile = ["-m", "cProfile", "-o", args.host_profile] if args.host_profile else []
    process = subprocess.Popen(
        [sys.executable, *profile, "-m", "pitrio", "serve", "--port", "0", "--token", TOKEN,
         "--provider", "bench", "--model", model_id, "--no-extensions",
         "--session-dir", str(work / "sessions"), "--root", str(work)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if found := LISTENING.search(line):
            # Keep draining stderr so the host never blocks on a full pipe.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, int(found.group(1))
        if len(lines) > 50:
            break
    process.kill()
    raise SystemExit("pitrio serve did not start:\n" + "".join(lines))


def load(
    args: argparse.Namespace, env: dict[str, str], work: Path, extra: list[str]
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "pitrio", "load", "--sessions", str(args.sessions),
            "--ramp", "0", "--prompts", "1", "--tps", str(args.tps), "--quiet",
            "--timeout", str(args.timeout), *extra]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        failed = f"pitrio load failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        raise SystemExit(failed) from None
    result["_process_cpu_s"] = (after.ru_utime + after.ru_stime) - (
        before.ru_utime + before.ru_stime
    )
    return result


def server_counters(root: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests": after["requests"] - before["requests"],
        "connections_opened": after["connections_total"] - before["connections_total"],
        "deltas_written": after["deltas_written"] - before["deltas_written"],
        "cpu_s": round(after["cpu_s"] - before["cpu_s"], 3),
        "pacing_late_ms_p99": after.get("pacing_late_ms_p99"),
    }


LOAD_KEYS = (
    "sessions_completed", "sessions_failed", "errors", "errors_by_kind", "error_samples",
    "create_s", "wall_s", "latency_p50_s", "latency_p99_s", "ttft_p50_ms", "ttft_p99_ms",
    "token_lag_p50_ms", "token_lag_p99_ms", "loop_lag_p99_ms", "events", "events_per_s",
    "text_deltas", "rss_per_session_kb", "peak_rss_mb",
)  # fmt: skip


def run_host(
    args: argparse.Namespace, root: str, env: dict[str, str], work: Path
) -> dict[str, Any]:
    host, port = start_host(args, env, work, args.model_id)
    try:
        time.sleep(0.5)
        rss_before = rss_bytes(host.pid)
        cpu_before = cpu_s(host.pid)
        server_before = http_get(f"{root}/bench/stats?reset=lateness")
        sampler = PeakRss(host.pid)
        started = time.perf_counter()
        result = load(args, {**env, "PITRIO_HOST_TOKEN": TOKEN}, work,
                      ["--target", f"ws://127.0.0.1:{port}", "--token", TOKEN])  # fmt: skip
        elapsed = time.perf_counter() - started
        peak = sampler.stop()
        host_cpu = cpu_s(host.pid) - cpu_before
        server_after = http_get(f"{root}/bench/stats")
        rss_after = rss_bytes(host.pid)
    finally:
        host.terminate()
        host.wait(30)
    events = result.get("events") or 0
    return {
        "events_delivered": events,
        "events_per_s": round(events / result["wall_s"]) if result.get("wall_s") else None,
        "host_cpu_s": round(host_cpu, 3),
        "host_cpu_share_of_one_core": round(host_cpu / result["wall_s"], 3)
        if result.get("wall_s")
        else None,
        "host_cpu_us_per_event": round(host_cpu * 1e6 / events, 2) if events else None,
        "host_cpu_ms_per_session": round(host_cpu * 1e3 / args.sessions, 3),
        "host_rss_before_mb": round(rss_before / 2**20, 1),
        "host_peak_rss_mb": round(peak / 2**20, 1),
        "host_rss_after_mb": round(rss_after / 2**20, 1),
        "host_peak_rss_per_session_kb": round((peak - rss_before) / 1024 / args.sessions, 1),
        "load_process_s": round(elapsed, 2),
        "load": {k: result.get(k) for k in LOAD_KEYS},
        "load_client_rss_per_session_kb": result.get("rss_per_session_kb"),
        "load_client_cpu_s": round(result["_process_cpu_s"], 3),
        "llm_server": server_counters(root, server_before, server_after),
    }


def run_inproc(
    args: argparse.Namespace, root: str, env: dict[str, str], work: Path
) -> dict[str, Any]:
    if args.api != "openai-completions":
        return {"skipped": "pitrio load --base-url speaks openai-completions only"}
    extra = ["--base-url", f"{root}/v1", "--model", args.model_id, "--api-key-env", "BENCH_KEY"]
    env = {**env, "BENCH_KEY": "x"}
    # The same command with one session: the process's fixed cost (imports, start, exit).
    fixed = load(argparse.Namespace(**{**vars(args), "sessions": 1}), env, work, extra)
    server_before = http_get(f"{root}/bench/stats?reset=lateness")
    started = time.perf_counter()
    result = load(args, env, work, extra)
    elapsed = time.perf_counter() - started
    cpu = result["_process_cpu_s"] - fixed["_process_cpu_s"]
    server_after = http_get(f"{root}/bench/stats")
    events = result.get("events") or 0
    return {
        "events_per_s": result.get("events_per_s"),
        "load_process_s": round(elapsed, 2),
        "load": {k: result.get(k) for k in LOAD_KEYS},
        "note": "CPU of the pitrio load process (sessions and harness) less a 1-session run's",
        "process_cpu_s": round(result["_process_cpu_s"], 3),
        "fixed_cpu_s": round(fixed["_process_cpu_s"], 3),
        "cpu_us_per_event": round(cpu * 1e6 / events, 2) if events else None,
        "cpu_ms_per_session": round(cpu * 1e3 / args.sessions, 3),
        "events": events,
        "llm_server": server_counters(root, server_before, server_after),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--api", default="openai-completions",
                        choices=("openai-completions", "anthropic-messages"))  # fmt: skip
    parser.add_argument("--tps", type=int, default=50)
    parser.add_argument("--answer-chars", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--server-js", default=str(SERVER_JS))
    parser.add_argument("--node", default="node")
    parser.add_argument("--skip-inproc", action="store_true")
    parser.add_argument("--host-profile", help="run the host under cProfile, stats to this file")
    args = parser.parse_args()
    args.model_id = f"bench?answer_chars={args.answer_chars}&tps={args.tps}"

    server, root = start_llm_server(args)
    try:
        with tempfile.TemporaryDirectory(prefix="host-fanout-") as tmp:
            work = Path(tmp)
            write_agent_dir(work / "agent", root, args.api, args.model_id)
            (work / "home").mkdir()
            env = {
                **os.environ,
                "PITRIO_CODING_AGENT_DIR": str(work / "agent"),
                "HOME": str(work / "home"),
                # This tree's pitrio, whatever the interpreter has installed.
                "PYTHONPATH": os.environ.get("PYTHONPATH") or str(Path(__file__).parents[1]),
            }
            http_post(f"{root}/bench/prepare", {"model": args.model_id})
            load_before = os.getloadavg()[0]
            host = run_host(args, root, env, work)
            inproc = {"skipped": "--skip-inproc"} if args.skip_inproc else None
            if inproc is None:
                inproc = run_inproc(args, root, env, work)
    finally:
        server.terminate()
        server.wait(10)
    print(
        json.dumps(
            {
                "scenario": "host_fanout",
                "api": args.api,
                "sessions": args.sessions,
                "model": args.model_id,
                "host": host,
                "inproc": inproc,
                "loadavg_1m_before": load_before,
                "loadavg_1m_after": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
