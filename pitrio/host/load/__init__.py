"""The load harness (``pitrio load``): many sessions in process or over websocket, measured;
and the scripted workload of pi's benchmark scenarios it and ``bench/`` run.

Sits on nothing else in ``host``.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.host.load._config import LOAD_PRESETS as LOAD_PRESETS
from pitrio.host.load._config import LoadConfig as LoadConfig
from pitrio.host.load._measure import Histogram as Histogram
from pitrio.host.load._measure import LagMonitor as LagMonitor
from pitrio.host.load._measure import RssSampler as RssSampler
from pitrio.host.load._measure import current_rss_bytes as current_rss_bytes
from pitrio.host.load._measure import percentile as percentile
from pitrio.host.load._run import run_load as run_load
from pitrio.host.load._script import LoadSessionFactory as LoadSessionFactory
from pitrio.host.load._script import ServedSession as ServedSession
from pitrio.host.load._script import echo_tool as echo_tool
from pitrio.host.load._script import make_text as make_text
from pitrio.host.load._script import register_bench_faux as register_bench_faux
from pitrio.host.load._script import tool_then_text as tool_then_text
from pitrio.host.load._ws import HostCommandFailed as HostCommandFailed

__all__ = [
    "LOAD_PRESETS",
    "Histogram",
    "HostCommandFailed",
    "LagMonitor",
    "LoadConfig",
    "LoadSessionFactory",
    "RssSampler",
    "ServedSession",
    "current_rss_bytes",
    "echo_tool",
    "make_text",
    "percentile",
    "register_bench_faux",
    "run_load",
    "tool_then_text",
]

_publish(globals(), __all__)
