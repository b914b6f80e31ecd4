"""Shared pieces of the HTTP benchmarks, as ../shared/bench/http/lib/common.mjs defines them.

The scenarios run against ``llm_server.mjs`` (../shared/bench/http), a Node loopback LLM server
speaking OpenAI chat completions and Anthropic messages SSE: given with ``--base-url ROOT``, or
started by the script on a free loopback port (and stopped by its process id at the end). The
model string selects the server's behaviour, so it is pi's, byte for byte
(``bench?answer_chars=A&tps=T[&tool_text_chars=K]``); the model is pi's (provider ``bench``,
16,384 max tokens, API key ``"x"``).

CPU figures are :func:`time.process_time` over the timed region (user + system, every thread of
the process), as pi's ``process.cpuUsage()``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pitrio.providers import Model, ModelCost, ProviderRegistry, register_builtin_providers
from pitrio.providers._http import current_http_client

API_KEY = "x"
PROVIDER = "bench"
APIS = ("openai-completions", "anthropic-messages")
SERVER_JS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "http" / "llm_server.mjs"


def add_server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="root URL of a running llm_server.mjs (no /v1)")
    parser.add_argument("--server-js", default=str(SERVER_JS), help="llm_server.mjs to start")
    parser.add_argument("--node", default="node")
    parser.add_argument("--api", default="openai-completions", choices=APIS)


def root_of(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


@contextmanager
def llm_server(args: argparse.Namespace) -> Iterator[str]:
    """The server's root URL: ``--base-url``, or a server started here for the block."""
    if args.base_url:
        yield root_of(args.base_url)
        return
    process = subprocess.Popen(
        [args.node, args.server_js, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        yield f"http://127.0.0.1:{first['port']}"
    finally:
        process.terminate()
        process.wait(10)


def http_model(
    root: str, api: str, *, answer_chars: int, tps: int, tool_text_chars: int | None = None
) -> Model:
    """pi's ``makeHttpModel``: the server's behaviour is in the model id."""
    model_id = f"bench?answer_chars={answer_chars}&tps={tps}"
    if tool_text_chars is not None:
        model_id += f"&tool_text_chars={tool_text_chars}"
    return Model(
        id=model_id,
        name="bench",
        api=api,
        provider=PROVIDER,
        base_url=f"{root}/v1" if api == "openai-completions" else root,
        reasoning=False,
        input=("text",),
        cost=ModelCost(input=0, output=0, cache_read=0, cache_write=0),
        context_window=1_000_000,
        max_tokens=16_384,
    )


def registry() -> ProviderRegistry:
    providers = ProviderRegistry()
    register_builtin_providers(providers)
    return providers


def get_api_key(_provider: str) -> str:
    return API_KEY


async def server_stats(root: str, *, reset_lateness: bool = False) -> dict[str, Any] | None:
    """``GET /bench/stats`` through the shared client (as pi's scenarios use their fetch)."""
    client = current_http_client()
    assert client is not None, "open_http_client() first"
    url = f"{root}/bench/stats" + ("?reset=lateness" if reset_lateness else "")
    try:
        response = await client.get(url)
        value: dict[str, Any] = response.json()
    except Exception:
        return None
    return value


async def prepare(root: str, model: Model) -> None:
    """``POST /bench/prepare``: the server builds that model string's response bytes now."""
    client = current_http_client()
    assert client is not None, "open_http_client() first"
    await client.post(f"{root}/bench/prepare", json={"model": model.id}, timeout=120)


def server_delta(
    before: dict[str, Any] | None, after: dict[str, Any] | None, wall_s: float
) -> dict[str, Any]:
    """pi's ``serverDelta``: the server's counters over the timed region."""
    if not before or not after:
        return {"server_stats": None}

    def d(name: str) -> Any:
        return after[name] - before[name]

    cpu = d("cpu_s")
    return {
        "server_requests": d("requests"),
        "server_tool_call_responses": d("tool_call_responses"),
        "server_text_responses": d("text_responses"),
        "server_responses_aborted": d("responses_aborted"),
        "server_bad_requests": d("bad_requests"),
        "server_connections_opened": d("connections_total"),
        "server_deltas_written": d("deltas_written"),
        "server_cpu_s": round(cpu, 3),
        "server_cpu_share_of_one_core": round(cpu / wall_s, 3) if wall_s else None,
        "server_pacing_late_ms_p50": after.get("pacing_late_ms_p50"),
        "server_pacing_late_ms_p99": after.get("pacing_late_ms_p99"),
        "server_pacing_late_ms_max": after.get("pacing_late_ms_max"),
    }


def cpu_s() -> float:
    """CPU seconds of this process so far (user + system, all threads)."""
    return time.process_time()


def loadavg_1m() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def mb(n: float) -> float:
    return n / (1024 * 1024)


def env_info() -> dict[str, Any]:
    import platform

    import trio

    return {
        "python": platform.python_version(),
        "trio": trio.__version__,
        "loadavg_1m": loadavg_1m(),
        "pid": os.getpid(),
    }
