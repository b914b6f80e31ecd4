"""Argument parsing and dispatch for the ``pitrio`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import structlog

import pitrio


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pitrio",
        description="The pi agent framework as an actor-model runtime on Trio.",
    )
    parser.add_argument("--version", action="version", version=f"pitrio {pitrio.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="stream a scripted conversation with a tool call (faux provider, no API key)",
        description="Stream a scripted faux-provider conversation with a tool call.",
    )
    demo.add_argument(
        "--speed",
        type=float,
        default=60.0,
        metavar="TOKENS_PER_S",
        help="faux streaming speed in tokens per second; 0 streams as fast as possible "
        "(default: %(default)s)",
    )
    demo.add_argument(
        "--json", action="store_true", help="print every event as a JSON line (pi's format)"
    )
    return parser


def _configure_logging() -> None:
    # The library never configures structlog; the command does: logs go to stderr so that
    # stdout carries only the conversation (or JSON events).
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pitrio`` command; returns the process exit status."""
    args = _parser().parse_args(argv)
    _configure_logging()
    try:
        if args.command == "demo":
            from pitrio.cli._demo import run_demo

            return run_demo(speed=args.speed, json_mode=args.json)
    except BrokenPipeError:
        # The reader went away (`pitrio demo --json | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    _parser().print_help(sys.stderr)
    return 2
