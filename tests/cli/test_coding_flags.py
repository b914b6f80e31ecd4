"""pi's coding-agent flags: tools, resources, prompts, ``@file``, sessions of pi's directory,
``-r``, ``--fork``, ``--models``, ``--export`` and the flags of missing features.

Most run ``pitrio`` as a real subprocess with the echoing faux model (``You said: ...``), so
what reached the model is what the command printed; a few call the functions the command
runs, with an explicit environment.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from pitrio.cli._coding import select_tool_names
from pitrio.cli._export_html import render_session_html
from pitrio.cli._main import parse_cli_args, run_agent_command
from pitrio.cli._model_resolver import resolve_model_scope
from pitrio.cli._setup import build_runtime
from pitrio.providers import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
    default_catalogue,
    faux_assistant_message,
    faux_tool_call,
)
from pitrio.sessions import SessionManager
from pitrio.sessions.storage._paths import encode_cwd
from pitrio.tools.builtin import BashTool

CLI_GUARD_S = 60
"""A hung command fails the test instead of hanging the suite (not a timing assertion)."""


@attrs.define
class Home:
    """A home directory with a project in it; pitrio's agent dir is the default one."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def cwd(self) -> Path:
        return self.home / "project"

    @property
    def pitrio_dir(self) -> Path:
        return self.home / ".pitrio" / "agent"

    @property
    def pi_dir(self) -> Path:
        return self.home / ".pi" / "agent"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PITRIO_", "PI_"))}
        env["HOME"] = str(self.home)
        env.update(extra)
        return env

    def run(self, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pitrio", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(**extra),
            cwd=self.cwd,
            timeout=CLI_GUARD_S,
            check=False,
        )

    def write(self, path: Path, data: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    def pi_session(self, text: str = "from pi") -> Path:
        """A session file of this project in pi's sessions folder."""
        folder = self.pi_dir / "sessions" / encode_cwd(str(self.cwd))
        manager = SessionManager.create(str(self.cwd), str(folder))
        manager.append_message(_user(text))
        manager.append_message(_assistant(f"You said: {text}"))
        path = manager.get_session_file()
        manager.close()
        assert path is not None
        return Path(path)


def _user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def _assistant(text: str) -> AssistantMessage:
    return faux_assistant_message(text)


@pytest.fixture
def place(tmp_path: Path) -> Home:
    home = Home(tmp_path)
    home.cwd.mkdir(parents=True)
    return home


# --------------------------------------------------------------------------- tools


def test_tool_selection_follows_pi() -> None:
    """Default four; --no-tools and --no-builtin-tools none; --tools wins, in its order."""
    assert select_tool_names(None) == ["read", "bash", "edit", "write"]
    assert select_tool_names(None, no_tools=True) == []
    assert select_tool_names(None, no_builtin_tools=True) == []
    warnings: list[str] = []
    names = select_tool_names(("grep", "read", "grep", "nope"), no_tools=True, warn=warnings.append)
    assert names == ["grep", "read"]
    assert warnings == [
        "Unknown tool 'nope' ignored (built-in tools: read, bash, edit, write, grep, find, ls)"
    ]


def test_tool_flags_parse_as_comma_lists() -> None:
    """``-t`` drops empty names, ``--models`` keeps its items; the short forms work."""
    args = parse_cli_args(["-t", " read, ,ls ", "--models", "a, b:high", "-nt", "-nc"])
    assert args.tools == ("read", "ls")
    assert args.models == ("a", "b:high")
    assert (args.no_tools, args.no_context_files) == (True, True)


def test_tools_run_in_the_session_cwd_with_the_shell_settings(place: Home) -> None:
    """Bash gets shellCommandPrefix and shellPath from the settings; tools use the cwd."""
    place.write(
        place.pitrio_dir / "settings.json",
        {"shellCommandPrefix": "set -o pipefail", "shellPath": "/bin/sh"},
    )
    runtime = build_runtime(
        parse_cli_args(["--provider", "faux", "--no-session", "-p", "x"]),
        cwd=str(place.cwd),
        env=place.env(),
        warn=pytest.fail,
    )
    assert [t.name for t in runtime.tools] == ["read", "bash", "edit", "write"]
    bash = runtime.tools[1]
    assert isinstance(bash, BashTool)
    assert bash.cwd == str(place.cwd)
    assert bash.command_prefix == "set -o pipefail"
    assert bash.operations.shell_path == "/bin/sh"  # type: ignore[attr-defined]


def test_a_shell_path_wrapper_and_the_prefix_confine_every_command(place: Home) -> None:
    """The README's sandboxing recipe: bash runs through the ``shellPath`` wrapper, in the
    session's cwd, after the ``shellCommandPrefix`` line."""
    wrapper = place.write(
        place.root / "jailed-bash", '#!/bin/sh\necho "wrapped in $(pwd)"\nexec /bin/bash "$@"\n'
    )
    wrapper.chmod(0o755)
    place.write(
        place.pitrio_dir / "settings.json",
        {"shellPath": str(wrapper), "shellCommandPrefix": "GREETING=prefixed"},
    )
    script = [
        {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "echo $GREETING"}}]},
        "done",
    ]  # fmt: skip
    path = place.write(place.root / "script.json", script)
    done = place.run("--provider", "faux", "--mode", "json", "go", PITRIO_FAUX_SCRIPT=str(path))
    assert done.returncode == 0, done.stderr
    ends = [
        e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "tool_execution_end"
    ]
    assert ends[0]["result"]["content"][0]["text"] == f"wrapped in {place.cwd}\nprefixed\n"


# --------------------------------------------------------------------------- resources, prompts


def test_agents_md_skill_and_template_shape_the_prompt_and_the_message(place: Home) -> None:
    """AGENTS.md and a skill reach the system prompt; /template and /skill: are expanded."""
    place.write(place.cwd / "AGENTS.md", "Always answer in haiku.")
    place.write(
        place.cwd / ".pitrio" / "skills" / "release" / "SKILL.md",
        "---\nname: release\ndescription: Cut a release.\n---\nBump the version.",
    )
    place.write(place.cwd / ".pitrio" / "prompts" / "greet.md", "Hello $1, from $2")
    done = place.run("--provider", "faux", "--verbose", "-p", "/greet Ann Bob")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: Hello Ann, from Bob\n"
    assert f"Context file: {place.cwd / 'AGENTS.md'}" in done.stderr
    assert "Skill: release" in done.stderr
    assert "Prompt template: /greet" in done.stderr
    skill = place.run("--provider", "faux", "-p", "/skill:release 2.0")
    assert skill.stdout.startswith('You said: <skill name="release" location=')
    assert "Bump the version.\n</skill>\n\n2.0\n" in skill.stdout
    bare = place.run("--provider", "faux", "--no-prompt-templates", "-p", "/greet Ann")
    assert bare.stdout == "You said: /greet Ann\n"


def test_file_arguments_join_stdin_and_the_first_message(place: Home) -> None:
    """``@file`` text comes between piped text and the first message, as in pi."""
    place.write(place.cwd / "notes.txt", "buy milk")
    done = place.run("--provider", "faux", "-p", "@notes.txt", "Summarise", stdin="Piped. ")
    assert done.returncode == 0, done.stderr
    name = place.cwd / "notes.txt"
    assert done.stdout == f'You said: Piped.<file name="{name}">\nbuy milk\n</file>\nSummarise\n'


def test_a_missing_file_argument_fails_with_pi_s_message(place: Home) -> None:
    """A missing ``@file`` is ``Error: File not found: PATH`` and exit status 1."""
    done = place.run("--provider", "faux", "-p", "@nope.txt", "hi")
    assert done.returncode == 1
    assert done.stderr == f"Error: File not found: {place.cwd / 'nope.txt'}\n"


def test_flags_of_missing_features_are_announced_not_sent(place: Home) -> None:
    """``--theme`` (the interactive mode's; print mode ignores it, as pi's) and a missing
    ``-e`` file (reported) do not become prompt text."""
    done = place.run(
        "--provider", "faux", "-e", "ext.py", "--theme", "dark.json", "--no-extensions",
        "--offline", "-p", "hello",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello\n"
    assert "--theme" not in done.stderr
    assert f"Failed to load extension {place.cwd / 'ext.py'}" in done.stderr


# --------------------------------------------------------------------------- pi's directory


def test_pi_models_and_settings_are_read_with_one_notice_each(place: Home) -> None:
    """Without pitrio's files, pi's settings.json and models.json are used, never written."""
    settings = place.write(
        place.pi_dir / "settings.json", {"defaultProvider": "faux", "defaultModel": "faux-1"}
    )
    models = place.write(place.pi_dir / "models.json", {"providers": {}})
    before = {p: p.read_bytes() for p in (settings, models)}
    done = place.run("-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hi\n"
    for path in (settings, models):
        assert done.stderr.count(f"pitrio: using {path} from pi's agent dir") == 1
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in place.pi_dir.rglob("*")) == ["models.json", "settings.json"]


def test_pi_resources_stay_after_pitrio_saved_a_session(place: Home) -> None:
    """pi's AGENTS.md and skills are used on every run, also once pitrio's dir exists."""
    place.write(place.pi_dir / "AGENTS.md", "Be brief.")
    for _ in range(2):
        done = place.run("--provider", "faux", "--verbose", "-p", "hi")
        assert done.returncode == 0, done.stderr
        assert f"Context file: {place.pi_dir / 'AGENTS.md'}" in done.stderr
    assert list((place.pitrio_dir / "sessions").glob("*/*.jsonl"))
    place.write(place.pitrio_dir / "AGENTS.md", "Be pitrio.")
    own = place.run("--provider", "faux", "--verbose", "-p", "hi")
    assert f"Context file: {place.pitrio_dir / 'AGENTS.md'}" in own.stderr
    assert str(place.pi_dir) not in own.stderr


def test_continue_copies_a_pi_session_and_leaves_it_alone(place: Home) -> None:
    """``-c`` finds pi's session, continues a copy in pitrio's folder, then that copy."""
    original = place.pi_session()
    before = original.read_bytes()
    first = place.run("--provider", "faux", "-c", "-p", "again")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "You said: again (message 2 in this conversation)\n"
    assert f"pitrio: {original} is pi's session; continuing in a copy" in first.stderr
    assert original.read_bytes() == before
    copies = list((place.pitrio_dir / "sessions").glob("*/*.jsonl"))
    assert len(copies) == 1
    header = json.loads(copies[0].read_text().splitlines()[0])
    assert header["parentSession"] == str(original)
    second = place.run("--provider", "faux", "-c", "-p", "third")
    assert second.stdout == "You said: third (message 3 in this conversation)\n"
    assert "continuing in a copy" not in second.stderr
    assert list((place.pitrio_dir / "sessions").glob("*/*.jsonl")) == copies


def test_resume_takes_the_most_recent_without_a_terminal(place: Home) -> None:
    """``-r`` with piped input resumes the most recent session of this directory."""
    place.run("--provider", "faux", "-p", "one")
    done = place.run("--provider", "faux", "-r", "-p", "two")
    assert done.stdout == "You said: two (message 2 in this conversation)\n"


def test_resume_on_a_terminal_lists_sessions_and_reads_a_number(place: Home) -> None:
    """On a terminal ``-r`` shows a numbered list (pi's sessions marked) and reads a choice."""
    place.pi_session("old pi talk")
    place.run("--provider", "faux", "-p", "newest")
    out, err = io.BytesIO(), io.StringIO()
    code = run_agent_command(
        parse_cli_args(["--provider", "faux", "-r", "-p", "go on"]),
        stdin_text=lambda: None,
        out=out,
        err=err,
        env=place.env(),
        cwd=str(place.cwd),
        stdin_is_tty=True,
        read_line=lambda: "2\n",
    )
    assert code == 0, err.getvalue()
    listing = err.getvalue().splitlines()
    assert listing[0] == "Sessions of this directory (most recent first):"
    assert "newest" in listing[1]
    assert "old pi talk" in listing[2]
    assert listing[2].endswith("[pi]")
    assert out.getvalue() == b"You said: go on (message 2 in this conversation)\n"
    cancelled = run_agent_command(
        parse_cli_args(["--provider", "faux", "-r", "-p", "x"]),
        stdin_text=lambda: None,
        out=io.BytesIO(),
        err=(err := io.StringIO()),
        env=place.env(),
        cwd=str(place.cwd),
        stdin_is_tty=True,
        read_line=lambda: "\n",
    )
    assert cancelled == 0
    assert err.getvalue().endswith("No session selected\n")


def test_fork_copies_a_session_by_id_prefix(place: Home) -> None:
    """``--fork ID`` starts a new file holding the old conversation; the old one is unchanged."""
    place.run("--provider", "faux", "-p", "one")
    (source,) = list((place.pitrio_dir / "sessions").glob("*/*.jsonl"))
    before = source.read_bytes()
    session_id = json.loads(before.splitlines()[0])["id"]
    done = place.run("--provider", "faux", "--fork", session_id[:8], "-p", "two")
    assert done.stdout == "You said: two (message 2 in this conversation)\n"
    assert source.read_bytes() == before
    assert len(list((place.pitrio_dir / "sessions").glob("*/*.jsonl"))) == 2
    clash = place.run("--provider", "faux", "--fork", session_id, "-c", "-p", "x")
    assert clash.returncode == 1
    assert clash.stderr == "Error: --fork cannot be combined with --continue\n"


# --------------------------------------------------------------------------- models


def test_model_scope_takes_globs_patterns_and_thinking_levels() -> None:
    """``--models``: globs over provider/id or id, fuzzy patterns, ``:level``; no duplicates."""
    models = [m for p in ("anthropic", "openai") for m in default_catalogue.models(p)]
    scoped, warnings = resolve_model_scope(
        ["anthropic/claude-sonnet-4-5*:high", "claude-sonnet-4-5", "gpt-4o-mini", "zzz*"],
        models,
    )
    shown = [(f"{m.provider}/{m.id}", level) for m, level in scoped]
    assert shown[0] == ("anthropic/claude-sonnet-4-5", "high")
    assert all(name.startswith("anthropic/claude-sonnet-4-5") for name, _ in shown[:-1])
    assert shown[-1] == ("openai/gpt-4o-mini", None)
    assert warnings == ['No models match pattern "zzz*"']


def test_models_flag_picks_the_first_scoped_model_for_a_new_session(place: Home) -> None:
    """With ``--models`` and no ``--model``, a new session starts on the first in scope."""
    runtime = build_runtime(
        parse_cli_args(["--models", "faux-1:low", "--no-session", "-p", "x"]),
        cwd=str(place.cwd),
        env=place.env(),
        warn=pytest.fail,
    )
    assert (runtime.model.provider, runtime.model.id) == ("faux", "faux-1")
    assert [s.model.id for s in runtime.scoped_models] == ["faux-1"]
    assert runtime.scoped_models[0].thinking_level == "low"


# --------------------------------------------------------------------------- export


def test_export_writes_an_escaped_self_contained_page(place: Home) -> None:
    """``--export FILE OUT`` renders messages, thinking, tool calls and results, escaped."""
    manager = SessionManager.create(str(place.cwd), str(place.root / "s"))
    manager.append_message(_user("<script>alert(1)</script> & more"))
    call = faux_tool_call("bash", {"command": "ls <dir>"}, id="c1")
    thinking = ThinkingContent(thinking="Let me look.")
    manager.append_message(faux_assistant_message([thinking, call], stop_reason="toolUse"))
    manager.append_message(
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="bash",
            content=[TextContent(text="ls: cannot access '<dir>'")],
            is_error=True,
            timestamp=2,
        )
    )
    manager.append_message(_assistant("Done."))
    path = manager.get_session_file()
    manager.close()
    assert path is not None
    done = place.run("--export", path, "page.html")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Exported to: page.html\n"
    page = (place.cwd / "page.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert "<script>" not in page
    assert "Let me look." in page
    assert "ls &lt;dir&gt;" in page
    assert "ls: cannot access &#x27;&lt;dir&gt;&#x27;" in page
    assert "tool result" in page
    assert "(error)" in page
    assert "Done." in page
    default = place.run("--export", path)
    assert default.stdout == f"Exported to: pitrio-session-{Path(path).stem}.html\n"
    missing = place.run("--export", "nope.jsonl")
    assert (missing.returncode, missing.stderr) == (1, "Error: File not found: nope.jsonl\n")


def test_export_shows_only_the_current_branch() -> None:
    """Entries of an abandoned branch are left out of the page."""
    header = {"type": "session", "id": "s", "cwd": "/w", "timestamp": "t"}

    def message(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "t",
            "message": {"role": "user", "content": text, "timestamp": 1},
        }

    page = render_session_html(
        header,
        [message("a", None, "root"), message("b", "a", "abandoned"), message("c", "a", "kept")],
    )
    assert "root" in page
    assert "kept" in page
    assert "abandoned" not in page
