"""Front ends that serve sessions to other processes: pi's RPC protocol (``pitrio --mode rpc``).

Layering: ``host`` sits on ``sessions`` (and everything below it) and is used by ``cli``; it
never imports ``cli``.
"""

from __future__ import annotations

from pitrio.host._jsonl import MAX_LINE_BYTES as MAX_LINE_BYTES
from pitrio.host._jsonl import JsonParseError as JsonParseError
from pitrio.host._jsonl import LineSplitter as LineSplitter
from pitrio.host._jsonl import LineTooLong as LineTooLong
from pitrio.host._jsonl import js_json as js_json
from pitrio.host._jsonl import js_string as js_string
from pitrio.host._jsonl import parse_json_line as parse_json_line
from pitrio.host._rpc import COMMANDS_IN_FLIGHT as COMMANDS_IN_FLIGHT
from pitrio.host._rpc import OUTPUT_BUFFER as OUTPUT_BUFFER
from pitrio.host._rpc import RpcServer as RpcServer
from pitrio.host._rpc import RpcServices as RpcServices
from pitrio.host._rpc_types import RpcResponse as RpcResponse
from pitrio.host._rpc_types import decode_command as decode_command

__all__ = [
    "COMMANDS_IN_FLIGHT",
    "MAX_LINE_BYTES",
    "OUTPUT_BUFFER",
    "JsonParseError",
    "LineSplitter",
    "LineTooLong",
    "RpcResponse",
    "RpcServer",
    "RpcServices",
    "decode_command",
    "js_json",
    "js_string",
    "parse_json_line",
]
