"""Shared fixtures of the benchmarks, as ../shared/bench/pi/lib/common.mjs defines them.

The workload (faux provider, ``make_text``, the ``echo`` tool, the response script, the session
construction) and the measuring tools (RSS sampler, loop-lag monitor, percentile) live in
:mod:`pitrio.host`, where ``pitrio load`` uses them too; this module gives them the names the
benchmark scripts use.
"""

from __future__ import annotations

import platform
import resource
from typing import Any

import orjson
import trio

from pitrio.host import LagMonitor, RssSampler, current_rss_bytes, percentile
from pitrio.host.load import LoadSessionFactory, echo_tool, make_text, tool_then_text
from pitrio.host.load import ServedSession as Served
from pitrio.host.load import register_bench_faux as setup_faux
from pitrio.host.load._script import BENCH_CWD, WORDS
from pitrio.providers import FauxProvider, ProviderRegistry

__all__ = [
    "BENCH_CWD",
    "WORDS",
    "LagMonitor",
    "RssSampler",
    "Served",
    "SessionFactory",
    "current_rss_bytes",
    "echo_tool",
    "emit",
    "env",
    "make_text",
    "peak_rss_mb",
    "percentile",
    "setup_faux",
    "tool_then_text",
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def env() -> dict[str, str]:
    return {"python": platform.python_version(), "trio": trio.__version__}


def emit(result: dict[str, Any]) -> None:
    print(orjson.dumps(result).decode(), flush=True)


class SessionFactory(LoadSessionFactory):
    """pi's ``lib/session.mjs`` on the benchmark faux provider (see LoadSessionFactory)."""

    def __init__(self, faux: FauxProvider, registry: ProviderRegistry) -> None:
        model = faux.get_model()
        assert model is not None
        super().__init__(registry, model, models=faux.models)
        self.faux = faux
