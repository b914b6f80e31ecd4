"""``pitrio load``: many scripted conversations at once, measured.

N sessions, each a scripted conversation (``prompts`` prompts; with ``tool_call`` every
prompt makes the model call the ``echo`` tool once before answering, as in pi's benchmark
scenarios), started at ``ramp`` sessions per second (0: all together, as pi's scenario 3:
every session is created first, then every prompt is sent at once). The model is the faux
provider paced at ``tokens_per_second`` with a ``answer_chars``-character answer, or a real
OpenAI-compatible server (``base_url``). The sessions run in this process
(:class:`InprocTarget`) or in a running ``pitrio serve`` reached over websockets
(:class:`~pitrio.host.load._ws.WsTarget`).

Structure: one nursery holds everything: the session runners, the sessions they serve, the
collector, the RSS sampler, the loop-lag monitor and the progress line. Runners send one
:class:`~pitrio.host.load._report.PromptResult` per prompt through a bounded channel to the
collector; when every runner has closed its clone of the channel the collector returns and the
run is over. Time is :func:`trio.current_time` throughout, so under ``MockClock`` the figures
are exact.
"""

from __future__ import annotations

import gc
import math
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Protocol, TextIO

import orjson
import trio

from pitrio.host.load._config import LOAD_PRESETS as LOAD_PRESETS
from pitrio.host.load._config import LoadConfig, RunContext, StartGate
from pitrio.host.load._measure import (
    LagMonitor,
    RssSampler,
    current_rss_bytes,
    peak_rss_bytes,
    reset_peak_rss,
)
from pitrio.host.load._report import (
    LoadTally,
    ProgressLine,
    PromptObserver,
    PromptResult,
    distribution_fields,
    environment,
)
from pitrio.host.load._script import (
    BENCH_CWD,
    ECHO_ARGUMENTS,
    LoadSessionFactory,
    ServedSession,
    endless,
    make_text,
    prompt_text,
    register_bench_faux,
    tool_then_text,
)
from pitrio.providers import Model, ProviderRegistry, open_http_client, register_builtin_providers
from pitrio.sessions import SessionManager

RESULT_BUFFER: Final = 256
"""Prompt results waiting for the collector. It does O(tokens) work per result, far less than
producing them cost, so the buffer only absorbs bursts (every session finishing at once)."""
RSS_INTERVAL: Final = 0.025
"""pi's scenario 3 samples the RSS every 25 ms."""
LAG_RESOLUTION: Final = 0.010
"""pi's scenario 3 measures the event-loop delay with a 10 ms resolution."""
SETTLE_S: Final = 0.1
"""pi's scenario 3 waits 100 ms after the warm-up (and a GC) before taking the baseline RSS."""
PLACEHOLDER_API_KEY: Final = "pitrio-load"
"""Sent to an OpenAI-compatible server when no key is configured (local servers ignore it)."""


def ideal_latency(config: LoadConfig) -> float | None:
    """Seconds one faux prompt takes with zero overhead: one pacing delay per delta (pi's
    ``idealMs``); None when unpaced or not faux."""
    tps = config.paced
    if tps is None or config.base_url is not None or config.target != "inproc":
        return None

    def delays(n: int) -> float:
        return sum(math.ceil(min(4, n - i * 4) / 4) / tps for i in range(math.ceil(n / 4)))

    answer = delays(config.answer_chars)
    return answer + delays(len(orjson.dumps(ECHO_ARGUMENTS))) if config.tool_call else answer


class Target(Protocol):
    """Where the sessions run: in this process or in a websocket host."""

    def open(self) -> AbstractAsyncContextManager[None]:
        """Set up for the run (a shared HTTP client, a temporary directory)."""
        ...

    async def warm_up(self, nursery: trio.Nursery) -> None:
        """Run the warm-up sessions, if any."""
        ...

    async def host_metrics(self) -> dict[str, float] | None:
        """The host's ``/metrics`` gauges, if it has some."""
        ...

    async def run_session(
        self, index: int, ctx: RunContext, results: trio.MemorySendChannel[PromptResult]
    ) -> None:
        """Run session ``index``'s conversation, sending a result per prompt; close
        ``results`` at the end."""
        ...


# --------------------------------------------------------------------------- in process


class InprocTarget:
    """AgentSessions in this process, served in the run's nursery."""

    def __init__(self, config: LoadConfig) -> None:
        self.config = config
        self.session_dir: str | None = None
        self._temp_dir: str | None = None
        if config.base_url is None:
            faux, registry = register_bench_faux(tokens_per_second=config.paced)
            respond = tool_then_text(
                make_text(config.answer_chars),
                tool_call=config.tool_call,
                fail_every=config.fail_every,
            )
            faux.set_responses([endless(faux, respond)])
            model = faux.get_model()
            assert model is not None  # the faux provider always has faux-1
            self.factory = LoadSessionFactory(registry, model, models=faux.models)
        else:
            registry = ProviderRegistry()
            register_builtin_providers(registry)
            model = Model(
                id=config.model or "default",
                name=config.model or "default",
                api="openai-completions",
                provider="openai-compatible",
                base_url=config.base_url,
                context_window=128_000,
                max_tokens=16_384,
            )
            key = os.environ.get(config.api_key_env or "OPENAI_API_KEY") or PLACEHOLDER_API_KEY
            self.factory = LoadSessionFactory(registry, model, get_api_key=lambda _: key)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[None]:
        directory = self.config.session_dir
        if directory == "temp":
            directory = self._temp_dir = tempfile.mkdtemp(prefix="pitrio-load-")
        self.session_dir = directory
        try:
            if self.config.base_url is None:
                yield
            else:
                # One connection pool for every session; no cap below the session count.
                async with open_http_client(limits=_unlimited_pool()):
                    yield
        finally:
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def open(self) -> AbstractAsyncContextManager[None]:
        """Create the temporary session directory and the shared HTTP client, if needed."""
        return self._open()

    def _manager(self) -> SessionManager | None:
        if self.session_dir is None:
            return None
        return SessionManager.create(BENCH_CWD, self.session_dir)

    async def warm_up(self, nursery: trio.Nursery) -> None:
        """pi's warm-up: ``warmup`` sessions run one prompt together, then are disposed."""
        if self.config.warmup <= 0:
            return
        warm = [await self.factory.start(nursery) for _ in range(self.config.warmup)]
        async with trio.open_nursery() as prompts:
            for served in warm:
                prompts.start_soon(served.session.prompt, "warm up")
        for served in warm:
            await served.dispose()

    async def host_metrics(self) -> dict[str, float] | None:
        """In process there is no separate host."""
        return None

    async def run_session(
        self, index: int, ctx: RunContext, results: trio.MemorySendChannel[PromptResult]
    ) -> None:
        """Create, serve and drive one AgentSession; dispose it at the end."""
        async with results:
            observer = PromptObserver(ctx.tally, ctx.config.paced)
            try:
                served = ServedSession(self.factory.create(self._manager()))
                await ctx.nursery.start(served.serve)
            except Exception as exc:
                ctx.tally.error(index, f"create:{type(exc).__name__}", str(exc))
                ctx.gate.arrived()
                return
            served.session.subscribe(observer.on_event)
            ctx.tally.created += 1
            ctx.gate.arrived()
            await ctx.gate.wait()
            for k in range(ctx.config.prompts):
                observer.begin()
                error = None
                try:
                    await served.session.prompt(prompt_text(index, k))
                except Exception as exc:
                    error = (f"exception:{type(exc).__name__}", str(exc))
                last = k == ctx.config.prompts - 1
                await results.send(observer.finish(index, last=last, error=error))
            await served.dispose()


def _unlimited_pool() -> Any:
    import httpx2

    return httpx2.Limits(max_connections=None, max_keepalive_connections=None)


def make_target(config: LoadConfig) -> Target:
    """The target ``config.target`` names."""
    if config.target == "inproc":
        return InprocTarget(config)
    from pitrio.host.load._ws import WsTarget

    return WsTarget(config)


# --------------------------------------------------------------------------- the run


async def _launch(
    target: Target, ctx: RunContext, send: trio.MemorySendChannel[PromptResult]
) -> None:
    config = ctx.config
    start = trio.current_time()
    async with send:
        for index in range(config.sessions):
            if config.ramp > 0:
                await trio.sleep_until(start + index / config.ramp)
            ctx.tally.started += 1
            ctx.nursery.start_soon(target.run_session, index, ctx, send.clone())


async def run_load(
    config: LoadConfig,
    *,
    progress: TextIO | None = None,
    progress_interval: float = 1.0,
    target: Target | None = None,
) -> dict[str, Any]:
    """Run the load ``config`` describes and return the JSON summary (README: its keys).

    Args:
        config: what to run.
        progress: where to write the live progress line (None: nowhere).
        progress_interval: seconds between progress lines.
        target: where the sessions run (default: the one ``config.target`` names).
    """
    target = target if target is not None else make_target(config)
    tally = LoadTally(sessions=config.sessions)
    mb = 2**20
    async with target.open(), trio.open_nursery() as nursery:
        await target.warm_up(nursery)
        gc.collect()
        await trio.sleep(SETTLE_S)
        rss_baseline = current_rss_bytes()
        hwm_reset = reset_peak_rss()
        metrics_before = await target.host_metrics()

        sampler = RssSampler(RSS_INTERVAL)
        nursery.start_soon(sampler.run)
        loop_lag = LagMonitor(LAG_RESOLUTION)
        nursery.start_soon(loop_lag.run)
        line = None
        if progress is not None:
            line = ProgressLine(
                progress,
                tally,
                interval=progress_interval,
                rss=lambda: sampler.last,
                loop_lag_p99=loop_lag.p99,
            )
            nursery.start_soon(line.run)

        hold = config.ramp <= 0
        ctx = RunContext(config, tally, nursery, StartGate(config.sessions, hold))
        send, receive = trio.open_memory_channel[PromptResult](RESULT_BUFFER)
        collected = trio.Event()

        async def collect() -> None:
            await tally.collect(receive)
            collected.set()

        nursery.start_soon(collect)
        started = trio.current_time()
        create_s = None
        prompts_from = started
        with trio.move_on_after(config.timeout) as deadline:
            nursery.start_soon(_launch, target, ctx, send)
            if hold:
                await ctx.gate.ready.wait()
                prompts_from = trio.current_time()
                create_s = prompts_from - started
                ctx.gate.go.set()
            await collected.wait()
        ended = trio.current_time()
        lag_fields = loop_lag.stop()
        peak = sampler.stop()
        if line is not None:
            line.stop()
        hwm = peak_rss_bytes() if hwm_reset else None
        metrics_after = await target.host_metrics()
        nursery.cancel_scope.cancel()

    if deadline.cancelled_caught:
        tally.timed_out()
    wall = ended - prompts_from
    n = max(1, config.sessions)
    # A websocket target reports each of its addresses (the nodes of a cluster).
    node_report = getattr(target, "node_report", None)
    ideal = ideal_latency(config)
    # The answer size and the tool call are the harness's script only with its own faux model.
    scripted = config.base_url is None and config.target == "inproc"
    if config.target != "inproc":
        model_name = f"host {config.model or 'default'}"
    elif config.base_url is not None:
        model_name = f"openai-compatible {config.model}"
    else:
        model_name = "faux"
    return {
        "preset": config.preset,
        "target": config.target,
        "model": model_name,
        "sessions": config.sessions,
        "prompts_per_session": config.prompts,
        "answer_chars": config.answer_chars if scripted else None,
        "tool_call": config.tool_call if scripted else None,
        "tokens_per_second": config.paced,
        "ramp_per_s": config.ramp,
        "aborted": f"timeout after {config.timeout}s" if deadline.cancelled_caught else None,
        "sessions_started": tally.started,
        "sessions_completed": tally.sessions_completed,
        "sessions_failed": len(tally.failed_sessions),
        "prompts_completed": tally.prompts_completed,
        "prompts_failed": tally.prompts_failed,
        "create_s": None if create_s is None else round(create_s, 3),
        "wall_s": round(wall, 3),
        "ideal_latency_s": None if ideal is None else round(ideal, 3),
        "sessions_per_s": round(tally.sessions_completed / wall, 3) if wall > 0 else None,
        **distribution_fields(tally),
        "events": tally.events,
        "events_per_s": round(tally.events / wall, 1) if wall > 0 else None,
        "tokens": tally.tokens,
        "text_deltas": tally.text_deltas,
        "tokens_per_s": round(tally.tokens / wall, 1) if wall > 0 else None,
        "loop_lag_mean_ms": lag_fields.get("lag_mean_ms"),
        "loop_lag_p50_ms": lag_fields.get("lag_p50_ms"),
        "loop_lag_p99_ms": lag_fields.get("lag_p99_ms"),
        "loop_lag_max_ms": lag_fields.get("lag_max_ms"),
        "rss_baseline_mb": round(rss_baseline / mb, 1),
        "peak_rss_mb": round(peak / mb, 1),
        "peak_rss_hwm_mb": None if hwm is None else round(hwm / mb, 1),
        "rss_per_session_kb": round((peak - rss_baseline) / 1024 / n, 1),
        "host_metrics_before": metrics_before,
        "host_metrics_after": metrics_after,
        "nodes": node_report(wall, metrics_after) if node_report is not None else None,
        "errors": tally.errors,
        "errors_by_kind": dict(sorted(tally.errors_by_kind.items())),
        "error_samples": tally.error_samples,
        "env": environment(),
    }
