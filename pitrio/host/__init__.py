"""Front ends that serve sessions to other processes: pi's RPC protocol (``pitrio --mode rpc``)
and the websocket host for many sessions (``pitrio serve``, :class:`Host`, :func:`open_host`).

Layering: ``host`` sits on ``sessions`` (and everything below it) and is used by ``cli``; it
never imports ``cli``.
"""

from __future__ import annotations

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
from pitrio.host.rpc._commands import SessionCommands as SessionCommands
from pitrio.host.rpc._jsonl import MAX_LINE_BYTES as MAX_LINE_BYTES
from pitrio.host.rpc._jsonl import JsonParseError as JsonParseError
from pitrio.host.rpc._jsonl import LineSplitter as LineSplitter
from pitrio.host.rpc._jsonl import LineTooLong as LineTooLong
from pitrio.host.rpc._jsonl import js_json as js_json
from pitrio.host.rpc._jsonl import js_string as js_string
from pitrio.host.rpc._jsonl import parse_json_line as parse_json_line
from pitrio.host.rpc._server import COMMANDS_IN_FLIGHT as COMMANDS_IN_FLIGHT
from pitrio.host.rpc._server import OUTPUT_BUFFER as OUTPUT_BUFFER
from pitrio.host.rpc._server import RpcServer as RpcServer
from pitrio.host.rpc._server import RpcServices as RpcServices
from pitrio.host.rpc._types import RpcRequest as RpcRequest
from pitrio.host.rpc._types import RpcResponse as RpcResponse
from pitrio.host.rpc._types import decode_command as decode_command
from pitrio.host.ws._host import COMMAND_BURST as COMMAND_BURST
from pitrio.host.ws._host import COMMANDS_PER_SECOND as COMMANDS_PER_SECOND
from pitrio.host.ws._host import DEFAULT_PORT as DEFAULT_PORT
from pitrio.host.ws._host import DRAIN_GRACE as DRAIN_GRACE
from pitrio.host.ws._host import IDLE_TIMEOUT as IDLE_TIMEOUT
from pitrio.host.ws._host import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from pitrio.host.ws._host import MAX_SESSIONS_PER_TOKEN as MAX_SESSIONS_PER_TOKEN
from pitrio.host.ws._host import CommandRefused as CommandRefused
from pitrio.host.ws._host import HostConfig as HostConfig
from pitrio.host.ws._host import HostLimits as HostLimits
from pitrio.host.ws._host import OpenedSession as OpenedSession
from pitrio.host.ws._host import SessionFactory as SessionFactory
from pitrio.host.ws._host import SessionRequest as SessionRequest
from pitrio.host.ws._serve import Host as Host
from pitrio.host.ws._serve import open_host as open_host
from pitrio.host.ws._tuning import MANY_SESSIONS_GC_THRESHOLD as MANY_SESSIONS_GC_THRESHOLD
from pitrio.host.ws._tuning import tune_gc_for_many_sessions as tune_gc_for_many_sessions

__all__ = [
    "COMMANDS_IN_FLIGHT",
    "LOAD_PRESETS",
    "MANY_SESSIONS_GC_THRESHOLD",
    "MAX_LINE_BYTES",
    "OUTPUT_BUFFER",
    "Histogram",
    "JsonParseError",
    "LagMonitor",
    "LineSplitter",
    "LineTooLong",
    "LoadConfig",
    "LoadSessionFactory",
    "RpcRequest",
    "RpcResponse",
    "RpcServer",
    "RpcServices",
    "RssSampler",
    "ServedSession",
    "current_rss_bytes",
    "decode_command",
    "echo_tool",
    "js_json",
    "js_string",
    "make_text",
    "open_host",
    "parse_json_line",
    "percentile",
    "register_bench_faux",
    "run_load",
    "tool_then_text",
    "tune_gc_for_many_sessions",
]
