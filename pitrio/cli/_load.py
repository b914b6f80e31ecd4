"""``pitrio load``: the load harness (:func:`pitrio.host.run_load`).

Runs many scripted conversations at once (in this process, or against a running ``pitrio
serve``), writes a live progress line to stderr and one JSON summary object to stdout. The
README's "Load testing" section lists the summary's keys.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import attrs
import orjson
import trio

USAGE = (
    "pitrio load [--preset NAME] [--sessions N] [--target inproc|ws://HOST:PORT[,ws://...]] "
    "[options]"
)

EPILOG = """\
presets:
  pi-scenario-3   pi's benchmark scenario 3: 5,000 in-memory sessions, 5 warm-up sessions,
                  all created first and prompted at once; each prompt an echo tool call then
                  a 400-character answer, faux model at 50 tokens/s
  smoke           20 sessions ramped in at 20/s, 2 prompts each, 80-character answers, 100
                  tokens/s

examples:
  pitrio load --preset smoke
  pitrio load --preset pi-scenario-3 > scenario3.json
  pitrio load --sessions 200 --ramp 50 --prompts 3 --tokens-per-second 30
  pitrio load --target ws://127.0.0.1:8765 --token "$TOKEN" --sessions 100
  pitrio load --target ws://10.0.0.1:8765,ws://10.0.0.2:8765 --token "$TOKEN" -n 3000
  pitrio load --base-url http://127.0.0.1:8000/v1 --model qwen2.5 --sessions 20"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    from pitrio.host import LOAD_PRESETS

    parser = argparse.ArgumentParser(
        prog="pitrio load",
        usage=USAGE,
        description="Run many scripted sessions at once and report throughput, time to first "
        "token, per-token lag, event-loop lag, memory per session and errors (JSON on stdout).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--preset", choices=sorted(LOAD_PRESETS), help="start from a named configuration")
    add("--sessions", "-n", type=_positive_int, help="sessions to run (default 10)")
    add("--prompts", type=_positive_int, help="prompts per session, in turn (default 1)")
    add("--answer-chars", type=_positive_int, help="faux answer size in characters (400)")
    add("--tokens-per-second", "--tps", type=_non_negative, help="faux pace (50; 0: unpaced)")
    add(
        "--no-tool",
        dest="tool_call",
        action="store_false",
        default=None,
        help="answer without calling the echo tool first",
    )
    add("--ramp", type=_non_negative, help="sessions started per second (0: all at once)")
    add("--warmup", type=_positive_int, help="in-process warm-up sessions (0)")
    add("--timeout", type=_non_negative, help="stop after this many seconds (600)")
    add("--fail-every", type=_positive_int, help="faux: every k-th session's answers fail")
    add(
        "--target",
        action="append",
        help="inproc (default) or ws://HOST:PORT of a running pitrio serve; several "
        "(comma-separated or repeated: a cluster's nodes) share the sessions in turn",
    )
    add("--token", help="the host's bearer token (default: $PITRIO_HOST_TOKEN)")
    add("--base-url", help="an OpenAI-compatible server (http://HOST:PORT/v1) instead of faux")
    add("--model", help="the server's model id (--base-url), or provider/id for a host")
    add("--api-key-env", help="variable holding the server's API key (OPENAI_API_KEY)")
    add(
        "--session-dir",
        help='in-process: write session files here ("temp": a temporary '
        "directory); default: in memory",
    )
    add("--quiet", "-q", action="store_true", help="no progress line")
    add("--fail-on-error", action="store_true", help="exit 1 when any error was counted")
    return parser


_FIELDS = (
    "sessions",
    "prompts",
    "answer_chars",
    "tokens_per_second",
    "tool_call",
    "ramp",
    "warmup",
    "timeout",
    "fail_every",
    "target",
    "token",
    "base_url",
    "model",
    "api_key_env",
    "session_dir",
)


def build_config(args: argparse.Namespace) -> Any:
    """The :class:`~pitrio.host.LoadConfig` of parsed options: the preset's values, then the
    options given."""
    from pitrio.host import LOAD_PRESETS, LoadConfig

    values: dict[str, Any] = dict(LOAD_PRESETS[args.preset]) if args.preset else {}
    for field in _FIELDS:
        value = getattr(args, field)
        if field == "target" and value is not None:
            value = ",".join(value)
        if value is not None:
            values[field] = value
    remote = values.get("target", "inproc") != "inproc" or values.get("base_url") is not None
    if remote and args.tokens_per_second is None:
        # The pace is the server's: unless told, report the plain gaps between tokens.
        values["tokens_per_second"] = None
    return attrs.evolve(LoadConfig(**values), preset=args.preset)


def load_main(argv: Sequence[str], *, stdout: TextIO | None = None) -> int:
    """Run ``pitrio load``; returns the exit status."""
    from pitrio.host import run_load

    args = _parser().parse_args(list(argv))
    config = build_config(args)
    from pitrio.host.load._ws import split_targets

    targets = split_targets(config.target)
    if config.target != "inproc" and (
        not targets or not all(t.startswith(("ws://", "wss://")) for t in targets)
    ):
        sys.stderr.write(
            f"pitrio load: --target must be inproc or ws://... (several: comma-separated), "
            f"not {config.target}\n"
        )
        return 2
    if config.base_url is not None and config.target != "inproc":
        sys.stderr.write("pitrio load: --base-url runs sessions in process (--target inproc)\n")
        return 2
    progress = None if args.quiet else sys.stderr
    if config.target == "inproc":
        from pitrio.host.ws._tuning import tune_gc_for_many_sessions

        tune_gc_for_many_sessions()  # this process holds the sessions
    try:
        summary = trio.run(lambda: run_load(config, progress=progress))
    except KeyboardInterrupt:
        return 130
    out = stdout or sys.stdout
    out.write(orjson.dumps(summary).decode() + "\n")
    out.flush()
    return 1 if args.fail_on_error and summary["errors"] else 0
