"""Shared fixtures of the benchmarks, as ../shared/bench/pi/lib/common.mjs defines them."""

from __future__ import annotations

import platform
import resource
from typing import Any

import orjson
import trio

from pitrio.providers import (
    AssistantMessage,
    Context,
    FauxModelDefinition,
    FauxProvider,
    ProviderRegistry,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.tools import AgentToolResult, FunctionTool

WORDS = (
    "the agent calls a tool and streams tokens back to user while context grows with each turn "
    "model reply text"
).split(" ")


def make_text(n: int, seed: int = 12345) -> str:
    """pi's ``makeText``: LCG-chosen words joined by spaces, cut to exactly ``n`` characters."""
    s = seed
    parts: list[str] = []
    length = -1
    while length < n:
        s = (s * 1103515245 + 12345) % 2**32
        word = WORDS[(s >> 16) % 20]
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:n]


def setup_faux(
    *, tokens_per_second: float | None = None, yield_every: int = 1
) -> tuple[FauxProvider, ProviderRegistry]:
    """The benchmark faux provider: one ``faux-1`` model, 4 characters per delta."""
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        provider="faux",
        token_size=(1, 1),
        tokens_per_second=tokens_per_second,
        yield_every=yield_every,
        registry=registry,
        models=[
            FauxModelDefinition(
                id="faux-1",
                name="Faux Model",
                input=("text",),
                context_window=1_000_000,
                max_tokens=16_384,
            )
        ],
    )
    return faux, registry


async def _echo(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=params["text"])], details={})


def echo_tool() -> FunctionTool:
    """The ``echo`` tool of the pi benchmarks."""
    return FunctionTool(
        name="echo",
        label="Echo",
        description="Echo the given text back.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        fn=_echo,
    )


def tool_then_text(final_text: str) -> Any:
    """The response script: a tool result last -> the final text, otherwise an echo call."""
    counter = iter(range(1 << 62))

    def respond(context: Context, *_: Any) -> AssistantMessage:
        if context.messages and isinstance(context.messages[-1], ToolResultMessage):
            return faux_assistant_message(final_text)
        call = faux_tool_call("echo", {"text": "hello world"}, id=f"call_{next(counter)}")
        return faux_assistant_message([call], stop_reason="toolUse")

    return respond


def percentile(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, -(-p * len(sorted_values) // 100) - 1))
    return sorted_values[int(index)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def env() -> dict[str, str]:
    return {"python": platform.python_version(), "trio": trio.__version__}


def emit(result: dict[str, Any]) -> None:
    print(orjson.dumps(result).decode(), flush=True)


# --------------------------------------------------------------------------- memory and lag


def current_rss_bytes() -> int:
    """The process's resident set size now (``process.memoryUsage().rss``), from /proc."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


class RssSampler:
    """pi's ``startRssSampler``: the RSS every ``interval`` seconds on the event loop, the peak.

    Run ``nursery.start_soon(sampler.run)``; ``stop()`` takes a last sample and returns the peak.
    """

    def __init__(self, interval: float = 0.025) -> None:
        self.interval = interval
        self.peak = current_rss_bytes()
        self.samples = 0
        self._scope = trio.CancelScope()

    def _tick(self) -> None:
        self.samples += 1
        self.peak = max(self.peak, current_rss_bytes())

    async def run(self) -> None:
        with self._scope:
            while True:
                await trio.sleep(self.interval)
                self._tick()

    def stop(self) -> int:
        self._scope.cancel()
        self._tick()
        return self.peak


class LagMonitor:
    """Event-loop lag as pi measures it: a task sleeps ``resolution`` seconds in a loop and
    records how much later than asked it woke up (0 = no lag).

    Run ``nursery.start_soon(monitor.run)``; ``stop()`` returns pi's ``lag_*_ms`` fields.
    """

    def __init__(self, resolution: float = 0.010) -> None:
        self.resolution = resolution
        self.lags: list[float] = []
        self._scope = trio.CancelScope()

    async def run(self) -> None:
        clock = trio.current_time
        with self._scope:
            while True:
                start = clock()
                await trio.sleep(self.resolution)
                self.lags.append(max(0.0, clock() - start - self.resolution))

    def stop(self) -> dict[str, float | None]:
        self._scope.cancel()
        lags = sorted(self.lags)
        if not lags:
            return {"lag_mean_ms": None, "lag_p50_ms": None, "lag_p99_ms": None}
        return {
            "lag_mean_ms": round(sum(lags) / len(lags) * 1e3, 3),
            "lag_p50_ms": round(percentile(lags, 50) * 1e3, 3),
            "lag_p99_ms": round(percentile(lags, 99) * 1e3, 3),
            "lag_max_ms": round(lags[-1] * 1e3, 3),
            "lag_resolution_ms": self.resolution * 1e3,
            "lag_samples": len(lags),
        }


# --------------------------------------------------------------------------- AgentSessions

BENCH_CWD = "/bench/cwd"


class SessionFactory:
    """pi's ``lib/session.mjs``: AgentSessions sharing one registry and settings (pi defaults:
    auto-compaction and retry on), in memory, with only the ``echo`` tool and pi's default
    coding-agent system prompt for that tool set (pi builds it when the resource loader gives
    none)."""

    def __init__(self, faux: FauxProvider, registry: ProviderRegistry) -> None:
        from pitrio.sessions import SettingsManager
        from pitrio.sessions.resources import build_system_prompt

        self.faux = faux
        self.registry = registry
        self.settings = SettingsManager.in_memory({})
        self.tool = echo_tool()
        self.system_prompt = build_system_prompt(cwd=BENCH_CWD, selected_tools=["echo"])

    def create(self, manager: Any = None) -> Any:
        """One AgentSession, not yet served (``await nursery.start(session.run)``)."""
        from pitrio.sessions import AgentSession, SessionManager

        session = AgentSession(
            session_manager=manager or SessionManager.in_memory(BENCH_CWD),
            settings=self.settings,
            registry=self.registry,
            model=self.faux.get_model(),
            models=self.faux.models,
            thinking_level="off",
            tools=[self.tool],
            system_prompt=self.system_prompt,
        )
        # As pi's bench clears agent.sessionId: the faux provider's per-session prompt cache
        # (a faux-only artifact) must not be counted.
        session.agent.session_id = None
        return session

    async def start(self, nursery: trio.Nursery, manager: Any = None) -> Served:
        """Create one AgentSession and serve it in ``nursery`` under its own cancel scope."""
        served = Served(self.create(manager))
        await nursery.start(served.serve)
        return served


class Served:
    """An AgentSession served in a shared nursery; :meth:`dispose` is pi's ``dispose()``."""

    __slots__ = ("scope", "session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.scope = trio.CancelScope()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with self.scope:
            await self.session.run(task_status=task_status)

    async def dispose(self) -> None:
        """Close the session (abort, hooks), then stop its tasks."""
        await self.session.aclose()
        self.scope.cancel()
