"""Front ends that serve sessions to other processes: pi's RPC protocol (``pitrio --mode rpc``)
and the websocket host for many sessions (``pitrio serve``, :class:`Host`, :func:`open_host`).

Layering: ``host`` sits on ``sessions`` (and everything below it) and is used by ``cli``; it
never imports ``cli``.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish
from pitrio.host.load import LOAD_PRESETS as LOAD_PRESETS
from pitrio.host.load import Histogram as Histogram
from pitrio.host.load import LagMonitor as LagMonitor
from pitrio.host.load import LoadConfig as LoadConfig
from pitrio.host.load import RssSampler as RssSampler
from pitrio.host.load import current_rss_bytes as current_rss_bytes
from pitrio.host.load import percentile as percentile
from pitrio.host.load import run_load as run_load
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
from pitrio.host.rpc._types import InvalidCommand as InvalidCommand
from pitrio.host.rpc._types import RpcRequest as RpcRequest
from pitrio.host.rpc._types import RpcResponse as RpcResponse
from pitrio.host.rpc._types import UnknownCommand as UnknownCommand
from pitrio.host.rpc._types import decode_command as decode_command
from pitrio.host.ws._factory import CODING_TOOLS as CODING_TOOLS
from pitrio.host.ws._factory import CodingSessionFactory as CodingSessionFactory
from pitrio.host.ws._factory import build_tools as build_tools
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
from pitrio.host.ws._policy import DEFAULT_CLIENT_TOOLS as DEFAULT_CLIENT_TOOLS
from pitrio.host.ws._policy import ConfinedTool as ConfinedTool
from pitrio.host.ws._policy import Confinement as Confinement
from pitrio.host.ws._policy import confine_tools as confine_tools
from pitrio.host.ws._policy import sandbox_command as sandbox_command
from pitrio.host.ws._serve import Host as Host
from pitrio.host.ws._serve import open_host as open_host
from pitrio.host.ws._tuning import MANY_SESSIONS_GC_THRESHOLD as MANY_SESSIONS_GC_THRESHOLD
from pitrio.host.ws._tuning import tune_gc_for_many_sessions as tune_gc_for_many_sessions

_MOVED_TO_LOAD = frozenset(
    {
        "LoadSessionFactory",
        "ServedSession",
        "echo_tool",
        "make_text",
        "register_bench_faux",
        "tool_then_text",
    }
)


def __getattr__(name: str) -> object:
    # The benchmark workload lives in pitrio.host.load; bench/ still imports it from here.
    if name in _MOVED_TO_LOAD:
        from pitrio.host import load

        return getattr(load, name)
    raise AttributeError(f"module 'pitrio.host' has no attribute {name!r}")


__all__ = [
    "CODING_TOOLS",
    "COMMANDS_IN_FLIGHT",
    "COMMANDS_PER_SECOND",
    "COMMAND_BURST",
    "DEFAULT_CLIENT_TOOLS",
    "DEFAULT_PORT",
    "DRAIN_GRACE",
    "IDLE_TIMEOUT",
    "LOAD_PRESETS",
    "MANY_SESSIONS_GC_THRESHOLD",
    "MAX_FRAME_BYTES",
    "MAX_LINE_BYTES",
    "MAX_SESSIONS_PER_TOKEN",
    "OUTPUT_BUFFER",
    "CodingSessionFactory",
    "CommandRefused",
    "ConfinedTool",
    "Confinement",
    "Histogram",
    "Host",
    "HostConfig",
    "HostLimits",
    "InvalidCommand",
    "JsonParseError",
    "LagMonitor",
    "LineSplitter",
    "LineTooLong",
    "LoadConfig",
    "OpenedSession",
    "RpcRequest",
    "RpcResponse",
    "RpcServer",
    "RpcServices",
    "RssSampler",
    "SessionCommands",
    "SessionFactory",
    "SessionRequest",
    "UnknownCommand",
    "build_tools",
    "confine_tools",
    "current_rss_bytes",
    "decode_command",
    "js_json",
    "js_string",
    "open_host",
    "parse_json_line",
    "percentile",
    "run_load",
    "sandbox_command",
    "tune_gc_for_many_sessions",
]

_publish(globals(), __all__)
