"""The command line's extension sessions: the built-ins an extension may activate
(``pi.set_active_tools``) and ``ctx.reload()`` (resources, system prompt, hooks), through the
real CLI in print mode with the faux provider and real files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_process import run_faux_cli

TOOLS_EXTENSION = """
import json, os

def register(pi):
    log = os.environ["EXT_LOG"]

    def write(record):
        with open(log, "a") as f:
            f.write(json.dumps(record) + "\\n")

    def start(event, ctx):
        pi.set_active_tools([*pi.get_active_tools(), "grep"])
        write({"all": [t.name for t in pi.get_all_tools()]})

    def context(event, ctx):
        if event.envelope is not None:
            write({"request_tools": list(event.envelope.tool_names)})

    pi.on("session_start", start)
    pi.on("context", context)
"""

RELOAD_EXTENSION = """
import json, os, pathlib

def register(pi):
    log = os.environ["EXT_LOG"]
    template = os.environ["EXT_TEMPLATE"]

    def write(record):
        with open(log, "a") as f:
            f.write(json.dumps(record) + "\\n")

    async def rl(args, ctx):
        pathlib.Path(ctx.cwd, "AGENTS.md").write_text("Reloaded project rule: be brief.\\n")
        pathlib.Path(template).write_text("Hello $1 from the template")
        await ctx.reload()

    def discover(event, ctx):
        write({"event": "resources_discover", "reason": event.reason})
        return {"prompt_paths": [template]} if event.reason == "reload" else None

    def before(event, ctx):
        write({"event": "before_agent_start", "system_prompt": event.system_prompt})

    pi.register_command("rl", description="reload", handler=rl)
    pi.on("resources_discover", discover)
    pi.on("session_start", lambda e, c: write({"event": "session_start", "reason": e.reason}))
    pi.on("session_shutdown", lambda e, c: write({"event": "session_shutdown", "reason": e.reason}))
    pi.on("before_agent_start", before)
"""


def run_cli(
    tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    cwd = home / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    return run_faux_cli(cwd, home, *args, extra_env=extra_env)


def records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_set_active_tools_turns_on_a_builtin_the_session_started_without(tmp_path: Path) -> None:
    """An extension's session_start adds grep; the next request's tool list has it (pi makes
    every built-in available when --tools is not given)."""
    ext = tmp_path / "tools_ext.py"
    ext.write_text(TOOLS_EXTENSION)
    log = tmp_path / "log.jsonl"
    done = run_cli(tmp_path, "-e", str(ext), "-p", "hi", extra_env={"EXT_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    found = records(log)
    assert found[0]["all"] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    assert {"request_tools": ["read", "bash", "edit", "write", "grep"]} in found


def test_no_builtin_tools_still_lets_an_extension_activate_them(tmp_path: Path) -> None:
    """--no-builtin-tools starts without built-ins but keeps them available, as pi."""
    ext = tmp_path / "tools_ext.py"
    ext.write_text(TOOLS_EXTENSION)
    log = tmp_path / "log.jsonl"
    done = run_cli(
        tmp_path,
        "--no-builtin-tools",
        "-e",
        str(ext),
        "-p",
        "hi",
        extra_env={"EXT_LOG": str(log)},
    )
    assert done.returncode == 0, done.stderr
    assert {"request_tools": ["grep"]} in records(log)


def test_tools_flag_is_an_allow_list(tmp_path: Path) -> None:
    """With --tools only the named built-ins exist (pi's allow-list): grep stays unknown."""
    ext = tmp_path / "tools_ext.py"
    ext.write_text(TOOLS_EXTENSION)
    log = tmp_path / "log.jsonl"
    done = run_cli(
        tmp_path, "--tools", "read", "-e", str(ext), "-p", "hi", extra_env={"EXT_LOG": str(log)}
    )
    assert done.returncode == 0, done.stderr
    found = records(log)
    assert found[0]["all"] == ["read"]
    assert {"request_tools": ["read"]} in found


def test_ctx_reload_reloads_resources_and_fires_the_hooks_in_pis_order(tmp_path: Path) -> None:
    """A command's ctx.reload(): session_shutdown then session_start then resources_discover
    (reason "reload"); the new AGENTS.md is in the next system prompt and the template the
    reload discovered expands in the next prompt."""
    ext = tmp_path / "reload_ext.py"
    ext.write_text(RELOAD_EXTENSION)
    log = tmp_path / "log.jsonl"
    template = tmp_path / "greet.md"
    done = run_cli(
        tmp_path,
        "-e",
        str(ext),
        "-p",
        "/rl",
        "/greet world",
        extra_env={"EXT_LOG": str(log), "EXT_TEMPLATE": str(template)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: Hello world from the template\n"
    found = records(log)
    assert [(r["event"], r.get("reason")) for r in found] == [
        ("resources_discover", "startup"),
        ("session_start", "startup"),
        ("session_shutdown", "reload"),
        ("session_start", "reload"),
        ("resources_discover", "reload"),
        ("before_agent_start", None),
        ("session_shutdown", "quit"),
    ]
    assert "Reloaded project rule: be brief." in str(found[-2]["system_prompt"])
