"""Argument parsing and dispatch for the ``pitrio`` command.

Kept in one module: pi's flag table and the mode dispatch: one parser, kept next to
what each flag selects.

``pitrio demo ...`` runs the scripted demo; anything else is the agent command, whose flags
follow pi 0.73.1's (``pitrio --help``). Heavy modules are imported only once they are needed,
so ``--version`` and ``--help`` answer at once.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO, cast

import pitrio

if TYPE_CHECKING:
    from pitrio.cli._setup import CliArgs
    from pitrio.providers import ImageContent
    from pitrio.sessions import SessionInfo

USAGE = """pitrio [options] [@files...] [messages...]
       pitrio --export SESSION.jsonl [OUTPUT.html]
       pitrio serve [--port PORT] [options]
       pitrio load [--preset NAME] [--target inproc|ws://HOST:PORT] [options]
       pitrio demo [--speed TOKENS_PER_S] [--json]"""

DESCRIPTION = """\
The pi coding agent on Trio, with pi's read, bash, edit and write tools (grep, find and ls on
request). Send messages to a model and print the answer (-p) or every event as JSON
(--mode json). The system prompt is built from AGENTS.md / CLAUDE.md, SYSTEM.md,
APPEND_SYSTEM.md, skills and prompt templates, as pi builds it. Sessions are saved per working
directory and can be continued (-c), resumed (-r) or forked (--fork).

On a terminal, without -p or --mode, pitrio starts its interactive mode (/hotkeys lists
the keys, / the commands).

commands:
  pitrio serve             serve many sessions over websockets, with a browser page
                           (pitrio serve --help)
  pitrio load              drive many sessions against a host and report latencies
                           (pitrio load --help)
  pitrio demo              stream a scripted conversation with a tool call (no API key)
  pitrio auth status       where API keys come from (also print-api-key, logout)

built-in tools (--tools):
  read   read file contents            grep   search file contents (off by default)
  bash   run bash commands             find   find files by glob (off by default)
  edit   edit files (find/replace)     ls     list a directory (off by default)
  write  create or overwrite files"""

EPILOG = """\
examples:
  pitrio -p "List three prime numbers"
  pitrio --provider faux -p "Hello"                 # no API key needed
  echo "Summarise this" | pitrio -p
  pitrio --model openai/gpt-4o-mini -p "Hi"
  pitrio --model anthropic/claude-sonnet-4-5:high -p "Solve this"   # with thinking level
  pitrio -c -p "What did we discuss?"               # continue the last session here
  pitrio @src/app.py -p "Review this file"          # a file's text joins the first message
  pitrio --tools read,grep,find,ls -p "Review src/" # read-only tools
  pitrio -p "/skill:release 1.2"                    # a skill, or /template args
  pitrio --export session.jsonl out.html            # a session as a self-contained page
  pitrio --mode json "Hello" | jq -c 'select(.type == "message_end")'

environment:
  ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, GROQ_API_KEY, XAI_API_KEY,
  OPENROUTER_API_KEY, MISTRAL_API_KEY, DEEPSEEK_API_KEY ...   provider API keys
  PITRIO_CODING_AGENT_DIR          config folder (default: ~/.pitrio/agent), holding
                                   settings.json, models.json (custom and local models,
                                   e.g. Ollama), AGENTS.md, skills/, prompts/ and sessions/
  PI_CODING_AGENT_DIR              pi's config folder (default: ~/.pi/agent): when
                                   PITRIO_CODING_AGENT_DIR is not set, files missing from
                                   pitrio's folder are read from pi's (never written)
  PITRIO_CODING_AGENT_SESSION_DIR  session folder (overridden by --session-dir)
  PITRIO_FAUX_SCRIPT               a JSON file of responses for --provider faux"""


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
        help="output mode: text (default), json (every event as a JSON line) or rpc (pi's RPC "
        "protocol on stdin/stdout)",
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
    add(
        "--resume",
        "-r",
        action="store_true",
        help="pick a session of this directory to resume (a numbered list on a terminal; "
        "otherwise the most recent)",
    )
    add("--fork", metavar="PATH|ID", help="fork this session file (or id prefix) into a new one")
    add("--session-dir", metavar="DIR", help="folder for session storage and lookup")
    add("--no-session", action="store_true", help="do not save the session (in memory)")
    add(
        "--models",
        type=_comma_list(keep_empty=True),
        metavar="PATTERNS",
        help="comma-separated model patterns to cycle through (globs such as anthropic/* and "
        "fuzzy patterns, each with an optional :thinking)",
    )
    add("--no-tools", "-nt", action="store_true", help="disable every tool by default")
    add(
        "--no-builtin-tools",
        "-nbt",
        action="store_true",
        help="disable the built-in tools by default",
    )
    add(
        "--tools",
        "-t",
        type=_comma_list(keep_empty=False),
        metavar="TOOLS",
        help="comma-separated allowlist of tools: read, bash, edit, write, grep, find, ls",
    )
    add(
        "--skill",
        action="append",
        default=[],
        metavar="PATH",
        help="load a skill file or folder (repeatable)",
    )
    add("--no-skills", "-ns", action="store_true", help="disable skill discovery")
    add(
        "--prompt-template",
        action="append",
        default=[],
        metavar="PATH",
        help="load a prompt template file or folder (repeatable)",
    )
    add(
        "--no-prompt-templates",
        "-np",
        action="store_true",
        help="disable prompt template discovery",
    )
    add(
        "--no-context-files",
        "-nc",
        action="store_true",
        help="do not load AGENTS.md / CLAUDE.md files",
    )
    add(
        "--export",
        metavar="FILE",
        help="export a session file to HTML and exit (the first message names the output)",
    )
    add("--verbose", action="store_true", help="say on stderr what the session starts with")
    add("--offline", action="store_true", help="no start-up network use (pitrio makes none)")
    add(
        "--extension",
        "-e",
        action="append",
        default=[],
        metavar="PATH",
        help="load an extension (a .py file or a package directory; repeatable)",
    )
    add(
        "--no-extensions",
        "-ne",
        action="store_true",
        help="do not discover extensions (explicit -e paths still load)",
    )
    add(
        "--theme",
        action="append",
        default=[],
        metavar="NAME|PATH",
        help="load a theme (a built-in name, a file, or a name in the themes folders; "
        "repeatable; the last one is used unless the theme setting names another)",
    )
    add(
        "--no-themes",
        action="store_true",
        help="do not discover themes in the themes folders",
    )
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
    add(
        "--context",
        action="store_true",
        help="print the session's context envelope (/context) and exit, calling no model",
    )
    add("--full", action="store_true", help="with --context: the whole envelope")
    add("--ephemeral", action="store_true", help="with --context: request-only hooks applied")
    return parser


def _comma_list(*, keep_empty: bool) -> Callable[[str], tuple[str, ...]]:
    """pi's comma lists: items trimmed (``--tools`` also drops empty ones)."""

    def parse(value: str) -> tuple[str, ...]:
        items = (item.strip() for item in value.split(","))
        return tuple(item for item in items if keep_empty or item)

    return parse


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
    parser = _agent_parser()
    argv, extension_flags, sentinels = _take_extension_flags(parser, argv)
    ns, unknown = parser.parse_known_intermixed_args(argv)
    # Options nobody knows yet may be flags an extension registers (checked after loading);
    # anything else unknown is the usage error it always was.
    stray = [arg for arg in unknown if not arg.startswith("--") or arg == "--"]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    extension_flags += [arg for arg in unknown if arg not in extension_flags]
    messages = list(ns.messages)
    # A token after an unknown --flag is a message until the flag turns out to take a value:
    # remember where it landed (extension_flag_values) and put its text back.
    candidates: list[tuple[int, int]] = []
    kept = [m for m in messages if not m.startswith("@")]
    for position, message in enumerate(kept):
        if message in sentinels:
            flag_index, value = sentinels[message]
            candidates.append((flag_index, position))
            kept[position] = value
    messages = [sentinels[m][1] if m in sentinels else m for m in messages]
    if ns.context:
        # --context is the /context command in print mode (handled before any model call).
        if messages:
            parser.error("--context takes no message")
        flags = [flag for flag, on in (("--full", ns.full), ("--ephemeral", ns.ephemeral)) if on]
        messages, ns.print_mode = [" ".join(["/context", *flags])], True
    elif ns.full or ns.ephemeral:
        parser.error("--full and --ephemeral go with --context")
    # Imported after parsing: --version and --help exit inside the parser, before the
    # providers, the catalogue and the sessions this import brings in (tests/cli/test_startup.py).
    from pitrio.cli._setup import CliArgs

    return CliArgs(
        messages=tuple(m for m in messages if not m.startswith("@")),
        file_args=tuple(m[1:] for m in messages if m.startswith("@")),
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
        resume=ns.resume,
        fork=ns.fork,
        models=ns.models,
        tools=ns.tools,
        no_tools=ns.no_tools,
        no_builtin_tools=ns.no_builtin_tools,
        skills=tuple(ns.skill),
        no_skills=ns.no_skills,
        prompt_templates=tuple(ns.prompt_template),
        no_prompt_templates=ns.no_prompt_templates,
        no_context_files=ns.no_context_files,
        export=ns.export,
        verbose=ns.verbose,
        offline=ns.offline,
        extensions=tuple(ns.extension),
        no_extensions=ns.no_extensions,
        extension_flags=tuple(extension_flags),
        extension_flag_values=tuple(candidates),
        themes=tuple(ns.theme),
        no_themes=ns.no_themes,
    )


def _take_extension_flags(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[list[str], list[str], dict[str, tuple[int, str]]]:
    """Take the long options the parser does not know out of ``argv`` (they may be flags
    extensions register, known only once they are loaded), so that argparse does not mistake
    the messages around them for stray arguments.

    Returns the remaining argv, the flags taken, and for each flag followed by a plain word
    (not ``-...`` or ``@...``, as pi), a sentinel standing in that word's place in argv:
    sentinel -> (the flag's index, the word). A string flag takes the word as its value
    (``--name value``); for a boolean flag it stays a message.
    """
    known = [option for option in parser._option_string_actions if option.startswith("--")]
    remaining: list[str] = []
    flags: list[str] = []
    sentinels: dict[str, tuple[int, str]] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            remaining += [arg, *argv[index:]]
            break
        name = arg.partition("=")[0]
        if not arg.startswith("--") or any(option.startswith(name) for option in known):
            remaining.append(arg)
            continue
        flags.append(arg)
        following = argv[index] if index < len(argv) else None
        if "=" not in arg and following is not None and not following.startswith(("-", "@")):
            sentinel = f"\x00pitrio-flag-value-{len(sentinels)}\x00"
            sentinels[sentinel] = (len(flags) - 1, following)
            remaining.append(sentinel)
            index += 1
    return remaining, flags, sentinels


def _configure_logging() -> None:
    # The library never configures structlog; the command does: logs go to stderr so that
    # stdout carries only the conversation (or JSON events). Imported here: structlog pulls in
    # asyncio, which --version and --help do not need.
    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))


def read_piped_stdin(stdin: IO[bytes] | None, *, is_tty: bool) -> str | None:
    """The text piped to the command, trimmed; ``None`` for a terminal or nothing piped."""
    if stdin is None or is_tty:
        return None
    text = stdin.read().decode("utf-8", errors="replace").strip()
    return text or None


def build_prompts(
    messages: Sequence[str], stdin_text: str | None, file_text: str = ""
) -> list[str]:
    """The prompts to send: piped text, the ``@file`` text and the first message joined into
    one (as pi's ``buildInitialMessage`` joins them), then the other messages."""
    first = "".join(part for part in (stdin_text, file_text, *messages[:1]) if part)
    return ([first] if first else []) + list(messages[1:])


def _only_context(messages: Sequence[str], piped: str | None) -> bool:
    from pitrio.sessions.envelope import is_context_command

    return not piped and bool(messages) and all(is_context_command(m) for m in messages)


def pick_from_terminal(
    err: TextIO, read_line: Callable[[], str], env: Mapping[str, str]
) -> Callable[[Sequence[SessionInfo]], SessionInfo | None]:
    """``-r`` on a terminal: a numbered list on stderr, the choice read from stdin."""
    from pitrio.cli._sessions_cli import format_session_choice
    from pitrio.sessions.resources import resolve_agent_dirs

    def pick(sessions: Sequence[SessionInfo]) -> SessionInfo | None:
        dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
        err.write("Sessions of this directory (most recent first):\n")
        for index, info in enumerate(sessions, 1):
            err.write(format_session_choice(index, info, dirs.is_fallback(info.path)) + "\n")
        err.write(f"Resume which session? [1-{len(sessions)}, Enter to cancel] ")
        err.flush()
        answer = read_line().strip()
        if answer.isdigit() and 1 <= int(answer) <= len(sessions):
            return sessions[int(answer) - 1]
        return None

    return pick


def export_session(args: CliArgs, *, out: BinaryIO, err: TextIO, cwd: str) -> int:
    """``--export FILE [OUT]``: write the session as HTML; prints where, as pi does."""
    from pitrio.cli._export_html import ExportError, export_session_file

    output = args.messages[0] if args.messages else None
    try:
        written = export_session_file(args.export or "", output, cwd=cwd)
    except ExportError as exc:
        err.write(f"Error: {exc}\n")
        return 1
    out.write(f"Exported to: {written}\n".encode())
    out.flush()
    return 0


def run_agent_command(
    args: CliArgs,
    *,
    stdin_text: Callable[[], str | None],
    out: BinaryIO,
    err: TextIO,
    env: Mapping[str, str],
    cwd: str,
    stdin_is_tty: bool = False,
    read_line: Callable[[], str] | None = None,
) -> int:
    """Run the agent command; returns the exit status.

    Args:
        stdin_text: reads the piped prompt text (``None`` for a terminal or nothing piped).
        stdin_is_tty / read_line: ``-r`` on a terminal asks which session, reading the answer
            with ``read_line``; otherwise it takes the most recent.
    """
    from pitrio.cli._errors import session_failure
    from pitrio.cli._sessions_cli import fork_conflicts
    from pitrio.cli._setup import CliError, build_runtime, list_models

    def warn(message: str) -> None:
        err.write(f"Warning: {message}\n")

    def notice(message: str) -> None:
        err.write(f"{message}\n")

    if args.export is not None:
        return export_session(args, out=out, err=err, cwd=cwd)
    for flag in args.unsupported():
        err.write(f"pitrio: {flag} is not supported yet; ignored\n")
    if args.mode == "rpc":
        from pitrio.cli._rpc_mode import run_rpc_command

        return run_rpc_command(args, err=err, env=env, cwd=cwd)
    if args.list_models is not None:
        table, warnings = list_models(args, env=env)
        for warning in warnings:
            warn(warning)
        out.write(table.encode())
        out.flush()
        return 0
    conflict = fork_conflicts(
        fork=args.fork,
        session=args.session,
        continue_session=args.continue_session,
        resume=args.resume,
        no_session=args.no_session,
    )
    if conflict is not None:
        err.write(f"{conflict}\n")
        return 1
    pick = (
        pick_from_terminal(err, read_line, env)
        if args.resume and stdin_is_tty and read_line is not None
        else None
    )
    if not args.print_mode and args.mode is None and stdin_is_tty:
        # pi's mode selection: no -p, no --mode and a terminal -> the interactive mode.
        from pitrio.cli._interactive import run_interactive_command, stdout_is_terminal

        if stdout_is_terminal(out):
            return run_interactive_command(args, err=err, env=env, cwd=cwd, pick=pick)
    piped = stdin_text()
    has_input = bool(build_prompts(args.messages, piped)) or bool(args.file_args)
    if not has_input and not args.print_mode and args.mode is None:
        _agent_parser().print_usage(err)
        err.write(
            "pitrio: no message given (the interactive mode needs a terminal on stdin and "
            'stdout; try pitrio -p "Hello", or pitrio --help)\n'
        )
        return 2
    if not has_input:
        # -p (or --mode json) with nothing to send: a usage mistake, not a silent success.
        err.write('pitrio: no message given and nothing piped on stdin (try pitrio -p "Hello")\n')
        return 2
    from pitrio.cli._extensions import discover_resources, load_cli_extensions

    try:
        runner, args = load_cli_extensions(args, cwd=cwd, env=env, err=err)
        runtime = build_runtime(
            args,
            cwd=cwd,
            env=env,
            warn=warn,
            # /context alone calls no model, so it needs no key.
            require_auth=has_input and not _only_context(args.messages, piped),
            notice=notice,
            pick=pick,
        )
    except CliError as exc:
        err.write(f"{exc}\n")
        return exc.exit_code
    import attrs

    runtime = attrs.evolve(runtime, extensions=runner)

    import trio

    from pitrio.cli._print_mode import PrintMode, run_print_mode

    mode: PrintMode = "json" if args.mode == "json" else "text"

    async def run() -> int:
        nonlocal runtime
        from pitrio.sessions import run_file_work

        runtime = await discover_resources(runtime)
        from pitrio.sessions.resources import FileArgumentError, process_file_arguments

        file_text, images = "", cast("tuple[ImageContent, ...]", ())
        if args.file_args:
            try:
                files = await run_file_work(
                    functools.partial(
                        process_file_arguments,
                        args.file_args,
                        cwd=cwd,
                        auto_resize_images=runtime.auto_resize_images,
                    )
                )
            except FileArgumentError as exc:
                runtime.session_manager.close()
                err.write(f"Error: {exc}\n")
                return 1
            file_text, images = files.text, files.images
        prompts = build_prompts(args.messages, piped, file_text)
        return await run_print_mode(
            runtime, mode=mode, prompts=prompts, images=images, out=out, err=err
        )

    try:
        return trio.run(run)
    except BaseException as exc:
        # A session file that is locked by another process, damaged, or changed under us is
        # the user's situation to resolve, not a bug: one line naming the file, never a trace.
        failure = session_failure(exc)
        if failure is None:
            raise
        err.write(f"Error: {' '.join(str(failure).split())}\n")
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pitrio`` command; returns the process exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        if arguments[:1] == ["demo"]:
            demo = _demo_parser().parse_args(arguments[1:])
            _configure_logging()
            from pitrio.cli._demo import run_demo

            return run_demo(speed=demo.speed, json_mode=demo.json)
        if arguments[:1] == ["serve"]:
            _configure_logging()
            from pitrio.cli._serve import serve_main

            return serve_main(arguments[1:])
        if arguments[:1] == ["auth"]:
            from pitrio.cli._auth import auth_main

            return auth_main(arguments[1:], out=sys.stdout, err=sys.stderr)
        if arguments[:1] == ["load"]:
            _configure_logging()
            from pitrio.cli._load import load_main

            return load_main(arguments[1:])
        args = parse_cli_args(arguments)
        _configure_logging()
        stdin = sys.stdin

        def piped() -> str | None:
            if stdin is None:
                return None
            return read_piped_stdin(stdin.buffer, is_tty=stdin.isatty())

        is_tty = stdin is not None and stdin.isatty()
        return run_agent_command(
            args,
            stdin_text=piped,
            out=sys.stdout.buffer,
            err=sys.stderr,
            env=os.environ,
            cwd=os.getcwd(),
            stdin_is_tty=is_tty,
            read_line=sys.stdin.readline if is_tty else None,
        )
    except BrokenPipeError:
        # The reader went away (`pitrio demo --json | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: the session has been closed on the way out (what it saved stays saved).
        return 130
