"""``pitrio load``: counts, timings under virtual time, errors, the summary, the CLI."""

from __future__ import annotations

import io
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.host import LOAD_PRESETS, Histogram, LoadConfig, percentile, run_load
from pitrio.host.load._run import ideal_latency
from pitrio.host.load._script import SCRIPTED_FAILURE

from fixtures_openai_completions import _pieces, chunk, frame, text_chunks
from loopback import Request, ResponseWriter, serve

SUMMARY_KEYS = {
    "preset", "target", "model", "sessions", "prompts_per_session", "answer_chars",
    "tool_call", "tokens_per_second", "ramp_per_s", "aborted", "sessions_started",
    "sessions_completed", "sessions_failed", "prompts_completed", "prompts_failed",
    "create_s", "wall_s", "ideal_latency_s", "sessions_per_s", "ttft_p50_ms", "ttft_p99_ms",
    "ttft_max_ms", "token_lag_mean_ms", "token_lag_p50_ms", "token_lag_p99_ms",
    "token_lag_max_ms", "latency_p50_s", "latency_p99_s", "latency_max_s", "events",
    "events_per_s", "tokens", "text_deltas", "tokens_per_s", "loop_lag_mean_ms",
    "loop_lag_p50_ms", "loop_lag_p99_ms", "loop_lag_max_ms", "rss_baseline_mb", "peak_rss_mb",
    "peak_rss_hwm_mb", "rss_per_session_kb", "host_metrics_before", "host_metrics_after",
    "nodes", "errors", "errors_by_kind", "error_samples", "env",
}  # fmt: skip
"""The summary's keys, as the README's load-testing section documents them."""

# One prompt with the echo call: agent_start, turn_start, user message_start/end, the call's
# message_start, toolcall_start + 6 deltas + toolcall_end, message_end, tool_execution_start/
# end, tool result message_start/end, turn_end, turn_start, message_start, text_start,
# the text deltas, text_end, message_end, turn_end, agent_end: 26 events + the text deltas.
EVENTS_PER_PROMPT_BESIDES_TEXT = 26
ECHO_DELTAS = 6


def config(**changes: Any) -> LoadConfig:
    base = LoadConfig(sessions=4, prompts=2, answer_chars=40, tokens_per_second=50.0)
    return attrs.evolve(base, **changes)


async def test_counts_and_timings_are_exact_under_virtual_time(autojump_clock: Any) -> None:
    """K sessions at 50 tokens/s: exact counts, 20 ms TTFT, zero lag, the ideal latency."""
    summary = await run_load(config())
    text_deltas = 40 // 4
    assert summary["sessions_completed"] == 4
    assert summary["sessions_failed"] == 0
    assert summary["prompts_completed"] == 8
    assert summary["events"] == 8 * (EVENTS_PER_PROMPT_BESIDES_TEXT + text_deltas)
    assert summary["tokens"] == 8 * (ECHO_DELTAS + text_deltas)
    assert summary["text_deltas"] == 8 * text_deltas
    assert summary["errors"] == 0 and summary["errors_by_kind"] == {}
    # The first delta (of the echo call) comes one pacing interval (1 token / 50 per s) late.
    assert summary["ttft_p50_ms"] == summary["ttft_p99_ms"] == 20.0
    assert summary["token_lag_p99_ms"] == summary["token_lag_max_ms"] == 0.0
    assert summary["loop_lag_p99_ms"] == 0.0
    # Every prompt takes exactly one pacing interval per delta, and all start together.
    assert summary["ideal_latency_s"] == 0.32
    assert summary["latency_p50_s"] == summary["latency_max_s"] == 0.32
    assert summary["create_s"] == 0.0
    assert summary["wall_s"] == 0.64
    assert summary["sessions_per_s"] == 6.25
    assert summary["events_per_s"] == round(summary["events"] / 0.64, 1)


async def test_ramp_starts_sessions_at_the_given_rate(autojump_clock: Any) -> None:
    """At 10 sessions/s the fifth session starts 0.4 s in, so the run lasts 0.4 s + a prompt."""
    summary = await run_load(config(sessions=5, prompts=1, ramp=10.0))
    assert summary["sessions_completed"] == 5
    assert summary["create_s"] is None
    assert summary["wall_s"] == 0.72
    assert summary["ttft_max_ms"] == 20.0
    assert summary["token_lag_max_ms"] == 0.0


async def test_no_tool_call_answers_at_once(autojump_clock: Any) -> None:
    """Without the echo call a prompt is one turn: 10 structural events and 10 deltas."""
    summary = await run_load(config(tool_call=False, prompts=1))
    # agent_start, turn_start, user message_start/end, message_start, text_start, ..., text_end,
    # message_end, turn_end, agent_end
    assert summary["events"] == 4 * (10 + 10)
    assert summary["tokens"] == summary["text_deltas"] == 40
    assert summary["latency_max_s"] == summary["ideal_latency_s"] == 0.2


async def test_failing_answers_are_counted_by_kind(autojump_clock: Any) -> None:
    """Every second session's answers end with an error: each is counted, once."""
    summary = await run_load(config(fail_every=2))
    assert summary["errors_by_kind"] == {"llm_error": 4}
    assert summary["errors"] == 4
    assert summary["prompts_failed"] == 4
    assert summary["sessions_failed"] == 2
    assert summary["sessions_completed"] == 4
    assert len(summary["error_samples"]) == 4
    assert all(SCRIPTED_FAILURE in sample for sample in summary["error_samples"])
    assert {sample.split(":")[0] for sample in summary["error_samples"]} == {
        "session 1",
        "session 3",
    }


async def test_a_run_past_its_timeout_counts_the_unfinished_sessions(autojump_clock: Any) -> None:
    """Sessions still streaming when --timeout passes are cancelled and counted as timeouts."""
    summary = await run_load(config(tokens_per_second=1.0, answer_chars=400, timeout=5.0))
    assert summary["aborted"] == "timeout after 5.0s"
    assert summary["errors_by_kind"] == {"timeout": 4}
    assert summary["sessions_completed"] == 0
    assert summary["sessions_failed"] == 4


async def test_summary_keys_and_types(autojump_clock: Any) -> None:
    """The summary has exactly the documented keys and is plain JSON."""
    summary = await run_load(config(sessions=2, prompts=1, session_dir="temp"))
    assert set(summary) == SUMMARY_KEYS
    assert json.loads(json.dumps(summary)) == summary
    assert summary["env"]["trio"] == trio.__version__
    assert summary["rss_baseline_mb"] > 0
    assert summary["peak_rss_mb"] >= summary["rss_baseline_mb"]
    assert isinstance(summary["rss_per_session_kb"], float)
    assert summary["host_metrics_before"] is None


async def test_sessions_can_be_written_to_files(autojump_clock: Any, tmp_path: Any) -> None:
    """With a session directory every session leaves its JSONL file there."""
    summary = await run_load(config(sessions=3, prompts=1, session_dir=str(tmp_path)))
    assert summary["errors"] == 0
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 3
    # header, model change, thinking level, user, call, tool result, answer
    assert all(len(f.read_text().splitlines()) >= 5 for f in files)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty", [False, True])
async def test_progress_line(autojump_clock: Any, tty: bool) -> None:
    """The progress line is one line per interval, or one line rewritten on a terminal."""
    stream: io.StringIO = _Tty() if tty else io.StringIO()
    await run_load(config(sessions=2, prompts=3), progress=stream, progress_interval=0.25)
    text = stream.getvalue()
    assert "sessions 2/2 started" in text
    assert "events/s" in text
    if tty:
        assert text.count("\r") >= 3 and text.endswith("\n") and text.count("\n") == 1
    else:
        assert "\r" not in text and len(text.splitlines()) >= 3


def test_presets_reproduce_pi_scenario_3() -> None:
    """The pi-scenario-3 preset is pi's concurrent_sessions.mjs --n=5000 with its defaults."""
    preset = LoadConfig(**LOAD_PRESETS["pi-scenario-3"])
    assert (preset.sessions, preset.prompts, preset.answer_chars) == (5000, 1, 400)
    assert (preset.tokens_per_second, preset.ramp, preset.warmup) == (50.0, 0.0, 5)
    assert preset.tool_call and preset.session_dir is None and preset.target == "inproc"
    # pi's idealMs for the scenario: 6 + 100 deltas at 20 ms.
    assert ideal_latency(preset) == pytest.approx(2.12)


# --------------------------------------------------------------------------- histogram


def test_histogram_of_one_repeated_value_reports_it() -> None:
    """A percentile is clamped to what was seen, so repeated values come back exactly."""
    histogram = Histogram([0.02] * 7)
    assert histogram.percentile(50) == histogram.percentile(99) == 0.02
    assert Histogram().percentile(50) is None


@settings(deadline=None, max_examples=200)
@given(st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=300))
def test_histogram_percentiles_are_within_a_percent(values: list[float]) -> None:
    """Histogram percentiles are within 0.8 % (or 1 µs) of the exact nearest-rank ones."""
    histogram = Histogram(values)
    ordered = sorted(values)
    for p in (1, 50, 90, 99, 100):
        exact = percentile(ordered, p)
        approx = histogram.percentile(p)
        assert approx is not None
        assert math.isclose(approx, exact, rel_tol=1 / 128, abs_tol=1e-6)


# --------------------------------------------------------------------------- OpenAI-compatible


def _tool_call_stream() -> bytes:
    args = '{"text":"hello world"}'
    chunks = [chunk({"role": "assistant", "content": None, "refusal": None})]
    chunks.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "echo", "arguments": ""},
                    }
                ]
            }
        )
    )
    chunks += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
        for part in _pieces(args, 4)
    ]
    chunks.append(chunk({}, finish_reason="tool_calls"))
    return frame(chunks)


async def _echo_then_answer(request: Request, writer: ResponseWriter) -> None:
    """The benchmark script as a server: an echo call, then (after its result) an answer."""
    messages = request.json()["messages"]
    body = (
        frame(text_chunks("Here is the echo result.", piece=4))
        if messages[-1]["role"] == "tool"
        else _tool_call_stream()
    )
    await writer.start()
    await writer.write(body)


async def test_openai_compatible_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a chat-completions server each prompt is two requests with the key, all counted."""
    monkeypatch.setenv("LOAD_TEST_KEY", "sk-load")
    async with serve(_echo_then_answer) as server:
        summary = await run_load(
            LoadConfig(
                sessions=3,
                prompts=2,
                tokens_per_second=None,
                base_url=server.url("/v1"),
                model="m1",
                api_key_env="LOAD_TEST_KEY",
            )
        )
    assert summary["errors"] == 0, summary["error_samples"]
    assert summary["sessions_completed"] == 3 and summary["prompts_completed"] == 6
    assert len(server.requests) == 12
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer sk-load"}
    assert {r.json()["model"] for r in server.requests} == {"m1"}
    assert summary["text_deltas"] == 6 * len(_pieces("Here is the echo result.", 4))
    # Tool-call argument deltas are counted too (how many per call is the provider's business).
    tool_deltas = summary["tokens"] - summary["text_deltas"]
    assert tool_deltas >= 6 * 6 and tool_deltas % 6 == 0
    assert summary["ttft_p50_ms"] is not None and summary["tokens_per_second"] is None
    assert summary["model"] == "openai-compatible m1"


# --------------------------------------------------------------------------- the command

PITRIO_LOAD = [sys.executable, "-m", "pitrio", "load"]


def test_cli_prints_one_json_summary() -> None:
    """``pitrio load --sessions 3 ...`` as a real process prints a JSON summary and exits 0."""
    done = subprocess.run(
        [*PITRIO_LOAD, "--sessions", "3", "--answer-chars", "8", "--tps", "0", "--prompts", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    assert set(summary) == SUMMARY_KEYS
    assert summary["sessions_completed"] == 3 and summary["prompts_completed"] == 6
    assert summary["tokens"] == 6 * (6 + 2) and summary["errors"] == 0


def test_cli_fail_on_error_and_bad_target() -> None:
    """--fail-on-error exits 1 when errors were counted; a bad --target exits 2."""
    base = [*PITRIO_LOAD, "--quiet", "--tps", "0"]
    failing = subprocess.run(
        [*base, "--sessions", "2", "--fail-every", "2", "--fail-on-error"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failing.returncode == 1, failing.stderr
    assert json.loads(failing.stdout)["errors_by_kind"] == {"llm_error": 1}
    bad = subprocess.run(
        [*base, "--target", "tcp://x"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "--target" in bad.stderr


# --------------------------------------------------------------------------- websocket target

PITRIO_SERVE = [sys.executable, "-m", "pitrio", "serve"]
QUIET_3x2 = ["--quiet", "--sessions", "3", "--prompts", "2"]
HOST_ANSWER = "Hello from the host, streamed in deltas."


def _start_host(tmp_path: Any) -> tuple[subprocess.Popen[str], str, str]:
    """``pitrio serve --port 0`` with the faux model playing a script; its port and token."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([HOST_ANSWER] * 12))
    env = {
        **os.environ,
        "PITRIO_FAUX_SCRIPT": str(script),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),  # this tree's pitrio
    }
    env.pop("PITRIO_HOST_TOKEN", None)
    host = subprocess.Popen(
        [
            *PITRIO_SERVE,
            "--port",
            "0",
            "--provider",
            "faux",
            "--session-dir",
            f"{tmp_path}/sessions",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert host.stderr is not None
    for line in host.stderr:
        if line.startswith("pitrio serve: listening on "):
            words = dict(w.split("=", 1) for w in line.split() if "=" in w)
            port = line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0]
            return host, port, words["token"]
    host.kill()
    host.communicate()
    raise AssertionError(f"pitrio serve did not start (exit {host.wait()})")


def test_websocket_target_against_pitrio_serve(tmp_path: Any) -> None:
    """``pitrio load --target ws://...`` drives sessions in a real ``pitrio serve`` process,
    as ephemeral sessions that leave no file in the host's session folder."""
    host, port, token = _start_host(tmp_path)
    try:
        done = subprocess.run(
            [*PITRIO_LOAD, "--target", f"ws://127.0.0.1:{port}", "--token", token, *QUIET_3x2],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        host.terminate()
        # (The host logs little for three sessions: its stderr pipe cannot fill meanwhile.)
        host.communicate(timeout=60)
    assert host.returncode == 0
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["errors"] == 0, summary["error_samples"]
    assert summary["sessions_completed"] == 3 and summary["prompts_completed"] == 6
    assert summary["model"] == "host default" and summary["tokens_per_second"] is None
    # The host may coalesce deltas for a slow client, never lose text: at most one per token.
    assert 6 <= summary["text_deltas"] <= 6 * len(HOST_ANSWER) // 4
    assert summary["host_metrics_after"]["pitrio_host_sessions_created_total"] == 3
    # Load sessions are ephemeral: nothing is left in the host's session folder.
    assert list((tmp_path / "sessions").glob("**/*.jsonl")) == []


def test_websocket_target_without_a_host_counts_connect_errors(tmp_path: Any) -> None:
    """Nothing listening: every session is one ``ws_connect`` error and the run still ends."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = subprocess.run(
        [*PITRIO_LOAD, "--target", f"ws://127.0.0.1:{port}", "--token", "t", "-q", "-n", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["errors_by_kind"] == {"ws_connect": 2}, summary["error_samples"]
    assert summary["sessions_completed"] == 0 and summary["sessions_failed"] == 2
    assert summary["host_metrics_before"] is None


def test_websocket_targets_spread_sessions_over_several_hosts(tmp_path: Any) -> None:
    """``--target a,b`` (or repeated): sessions go to the hosts in turn, and ``nodes``
    reports each one's sessions, events and its /metrics (the second host is a cluster-less
    one: the load harness does not care)."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, port_1, token_1 = _start_host(tmp_path / "one")
    second, port_2, _ = _start_host(tmp_path / "two")
    try:
        # Each host has its own token: the load's --token is one, so the other refuses it
        # unless both share it; the refusals land on that node.
        done = subprocess.run(
            [
                *PITRIO_LOAD,
                "--target",
                f"ws://127.0.0.1:{port_1}",
                "--target",
                f"ws://127.0.0.1:{port_2}",
                "--token",
                token_1,
                *QUIET_3x2,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for host in (first, second):
            host.terminate()
            host.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    one, two = summary["nodes"]
    assert one["target"] == f"ws://127.0.0.1:{port_1}" and one["sessions"] == 2
    assert two["target"] == f"ws://127.0.0.1:{port_2}" and two["sessions"] == 1
    assert one["sessions_completed"] == 2 and one["errors"] == 0 and one["events"] > 0
    assert one["host_rss_mb"] > 0
    assert two["sessions_completed"] == 0 and two["errors"] == 1
    assert summary["errors_by_kind"] == {"ws_rejected:401": 1}
    assert set(summary["host_metrics_after"]) == {one["target"], two["target"]}
    assert summary["host_metrics_after"][two["target"]] is None
