"""Argument parsing and dispatch for the ``pitrio`` command.

``pitrio demo ...`` runs the scripted demo; anything else is the agent command, whose flags
follow pi 0.73.1's (``pitrio --help``). Heavy modules are imported only once they are needed,
so ``--version`` and ``--help`` answer at once.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO

import structlog

import pitrio

if TYPE_CHECKING:
    from pitrio.cli._setup import CliArgs

USAGE = """pitrio [options] [messages...]
       pitrio demo [--speed TOKENS_PER_S] [--json]"""

DESCRIPTION = """\
The pi coding agent on Trio. Send messages to a model and print the answer (-p) or every
event as JSON (--mode json). Sessions are saved per working directory and can be continued.

Built-in coding tools (read, bash, edit, write ...) are not available yet: the agent answers
without tools. The interactive mode and --mode rpc are not available yet either.

commands:
  pitrio demo              stream a scripted conversation with a tool call (no API key)"""

EPILOG = """\
examples:
  pitrio -p "List three prime numbers"
  pitrio --provider faux -p "Hello"                 # no API key needed
  echo "Summarise this" | pitrio -p
  pitrio --model openai/gpt-4o-mini -p "Hi"
  pitrio --model anthropic/claude-sonnet-4-5:high -p "Solve this"   # with thinking level
  pitrio -c -p "What did we discuss?"               # continue the last session here
  pitrio --mode json "Hello" | jq -c 'select(.type == "message_end")'

environment:
  ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, GROQ_API_KEY, XAI_API_KEY,
  OPENROUTER_API_KEY, MISTRAL_API_KEY, DEEPSEEK_API_KEY ...   provider API keys
  PITRIO_CODING_AGENT_DIR          config folder (default: ~/.pitrio/agent), holding
                                   settings.json, models.json (custom and local models,
                                   e.g. Ollama) and sessions/
  PITRIO_CODING_AGENT_SESSION_DIR  session folder (overridden by --session-dir)"""


def _agent_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pitrio",
        usage=USAGE,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("messages", nargs="*", metavar="MESSAGE", help="messages to send, in order")
    add("--version", "-v", action="version", version=f"pitrio {pitrio.__version__}")
    add(
        "--print",
        "-p",
        dest="print_mode",
        action="store_true",
        help="non-interactive mode: process the messages, print the answer and exit",
    )
    add(
        "--mode",
        choices=("text", "json", "rpc"),
        help="output mode: text (default) or json (every event as a JSON line)",
    )
    add("--provider", metavar="NAME", help="provider name (alone: its default model)")
    add(
        "--model",
        metavar="PATTERN",
        help='model pattern or id (supports "provider/id" and an optional ":<thinking>")',
    )
    add("--thinking", metavar="LEVEL", help="off, minimal, low, medium, high or xhigh")
    add("--api-key", metavar="KEY", help="API key for the chosen model (default: env vars)")
    add("--system-prompt", metavar="TEXT", help="system prompt (text or a file)")
    add(
        "--append-system-prompt",
        metavar="TEXT",
        action="append",
        default=[],
        help="append text or a file's contents to the system prompt (repeatable)",
    )
    add(
        "--continue",
        "-c",
        dest="continue_session",
        action="store_true",
        help="continue the most recent session of this directory",
    )
    add("--session", metavar="PATH|ID", help="use this session file (or session id prefix)")
    add("--session-dir", metavar="DIR", help="folder for session storage and lookup")
    add("--no-session", action="store_true", help="do not save the session (in memory)")
    add(
        "--stall-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up a response when the server sends nothing for this long (default: 300; "
        "0: never; setting streamStallTimeoutMs)",
    )
    add(
        "--list-models",
        nargs="?",
        const=True,
        metavar="SEARCH",
        help="list the models you have keys for (with an optional fuzzy search)",
    )
    return parser


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}")
    return seconds


def _demo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pitrio demo",
        description="Stream a scripted faux-provider conversation with a tool call.",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=60.0,
        metavar="TOKENS_PER_S",
        help="faux streaming speed in tokens per second; 0 streams as fast as possible "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print every event as a JSON line (pi's format)"
    )
    return parser


def parse_cli_args(argv: Sequence[str]) -> CliArgs:
    """Parse the agent command's arguments (exits with status 2 on a usage error)."""
    from pitrio.cli._setup import CliArgs

    ns = _agent_parser().parse_intermixed_args(list(argv))
    return CliArgs(
        messages=tuple(ns.messages),
        print_mode=ns.print_mode,
        mode=ns.mode,
        provider=ns.provider,
        model=ns.model,
        thinking=ns.thinking,
        api_key=ns.api_key,
        system_prompt=ns.system_prompt,
        append_system_prompt=tuple(ns.append_system_prompt),
        continue_session=ns.continue_session,
        session=ns.session,
        session_dir=ns.session_dir,
        no_session=ns.no_session,
        list_models=ns.list_models,
        stall_timeout=ns.stall_timeout,
    )


def _configure_logging() -> None:
    # The library never configures structlog; the command does: logs go to stderr so that
    # stdout carries only the conversation (or JSON events).
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))


def read_piped_stdin(stdin: IO[bytes] | None, *, is_tty: bool) -> str | None:
    """The text piped to the command, trimmed; ``None`` for a terminal or nothing piped."""
    if stdin is None or is_tty:
        return None
    text = stdin.read().decode("utf-8", errors="replace").strip()
    return text or None


def build_prompts(messages: Sequence[str], stdin_text: str | None) -> list[str]:
    """The prompts to send: piped text joined with the first message (as pi does), then the
    other messages."""
    first = "".join(part for part in (stdin_text, *messages[:1]) if part is not None)
    return ([first] if first else []) + list(messages[1:])


def run_agent_command(
    args: CliArgs,
    *,
    stdin_text: Callable[[], str | None],
    out: BinaryIO,
    err: TextIO,
    env: Mapping[str, str],
    cwd: str,
) -> int:
    """Run the agent command; returns the exit status."""
    from pitrio.cli._setup import CliError, build_runtime, list_models

    def warn(message: str) -> None:
        err.write(f"Warning: {message}\n")

    if args.mode == "rpc":
        err.write("pitrio: --mode rpc is not available yet\n")
        return 2
    if args.list_models is not None:
        table, warnings = list_models(args, env=env)
        for warning in warnings:
            warn(warning)
        out.write(table.encode())
        out.flush()
        return 0
    prompts = build_prompts(args.messages, stdin_text())
    if not prompts and not args.print_mode and args.mode is None:
        # pi would start its interactive mode here.
        _agent_parser().print_usage(err)
        err.write(
            "pitrio: no message given (the interactive mode is not available yet; "
            'try pitrio -p "Hello", or pitrio --help)\n'
        )
        return 2
    try:
        runtime = build_runtime(args, cwd=cwd, env=env, warn=warn, require_auth=bool(prompts))
    except CliError as exc:
        err.write(f"{exc}\n")
        return exc.exit_code

    import trio

    from pitrio.cli._print_mode import PrintMode, run_print_mode

    mode: PrintMode = "json" if args.mode == "json" else "text"
    try:
        return trio.run(
            lambda: run_print_mode(runtime, mode=mode, prompts=prompts, out=out, err=err)
        )
    except BaseException as exc:
        # A session file that is locked by another process, damaged, or changed under us is
        # the user's situation to resolve, not a bug: one line naming the file, never a trace.
        failure = session_failure(exc)
        if failure is None:
            raise
        err.write(f"Error: {' '.join(str(failure).split())}\n")
        return 1


def session_failure(exc: BaseException) -> Exception | None:
    """The :class:`~pitrio.sessions.SessionError` that ended a run, if that is all that did.

    Trio wraps what escapes a nursery in exception groups; a group counts when every
    exception in it is a session error (the first is returned).
    """
    from pitrio.sessions import SessionError

    if isinstance(exc, SessionError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(SessionError)
        while matched is not None and rest is None:
            first = matched.exceptions[0]
            if not isinstance(first, BaseExceptionGroup):
                return first if isinstance(first, SessionError) else None
            matched = first
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pitrio`` command; returns the process exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        if arguments[:1] == ["demo"]:
            demo = _demo_parser().parse_args(arguments[1:])
            _configure_logging()
            from pitrio.cli._demo import run_demo

            return run_demo(speed=demo.speed, json_mode=demo.json)
        args = parse_cli_args(arguments)
        _configure_logging()
        stdin = sys.stdin

        def piped() -> str | None:
            if stdin is None:
                return None
            return read_piped_stdin(stdin.buffer, is_tty=stdin.isatty())

        return run_agent_command(
            args,
            stdin_text=piped,
            out=sys.stdout.buffer,
            err=sys.stderr,
            env=os.environ,
            cwd=os.getcwd(),
        )
    except BrokenPipeError:
        # The reader went away (`pitrio demo --json | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: the session has been closed on the way out (what it saved stays saved).
        return 130
