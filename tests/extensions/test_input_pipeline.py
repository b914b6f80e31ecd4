"""Seed 004's prompt pipeline in every front end: extension commands, then ``input`` on the raw
text, then built-in commands (``/context``) on what ``input`` left, then ``/skill:`` and
``/template`` expansion; through real CLI subprocesses (print, json, RPC), the websocket host
and the Python API."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import trio
import trio.testing
from cli_process import CLI_GUARD_S, run_faux_cli

from pitrio.extensions import ExtensionAPI
from pitrio.providers import UserMessage
from pitrio.sessions import BuiltinCommandResult, SessionManager
from pitrio.sessions.resources import PromptTemplate, Skill
from tests.extensions.ext_helpers import make_faux, make_runner, open_session, reply
from tests.extensions.test_context_examples import text_of
from tests.host.rpc_process import open_rpc
from tests.host.serve_helpers import open_client, open_test_host, text_of_deltas

PIPELINE_EXTENSION = """
import pathlib
SEEN = pathlib.Path(__file__).with_name("seen.txt")
REWRITES = {
    "please show context": "/context",
    "/context": "tell me about the context",
    "/context --full": "/greet Ann Bob",
}
def register(pi):
    def on_input(event, ctx):
        with SEEN.open("a") as seen:
            seen.write(event.text + "\\n")
        if event.text in REWRITES:
            # No "images" key: the prompt's images are kept.
            return {"action": "transform", "text": REWRITES[event.text]}
        return None
    pi.on("input", on_input)
"""

GREET = "Hello $1, from $2"

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    """The extension (writing what input saw to seen.txt) and a project with /greet."""
    extension = tmp_path / "ext" / "pipeline.py"
    extension.parent.mkdir(parents=True)
    extension.write_text(PIPELINE_EXTENSION)
    project = tmp_path / "home" / "project"
    (project / ".pitrio" / "prompts").mkdir(parents=True)
    (project / ".pitrio" / "prompts" / "greet.md").write_text(GREET)
    return extension, project


def _seen(extension: Path) -> list[str]:
    seen = extension.with_name("seen.txt")
    lines = seen.read_text().splitlines() if seen.exists() else []
    seen.unlink(missing_ok=True)
    return lines


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_faux_cli(project, project.parent, *args)


def test_print_mode_runs_input_before_builtins_and_expansion(tmp_path: Path) -> None:
    """pitrio -p: a transform to /context prints the view and calls no model; input sees
    '/greet Ann Bob' raw while the model gets the expansion; a transform of /context reaches
    the model; json mode writes the context line and no run's events."""
    extension, project = _setup(tmp_path)
    shown = _cli(project, "-e", str(extension), "-p", "please show context")
    assert shown.returncode == 0, shown.stderr
    assert "Messages: 0 cached, 0 uncached" in shown.stdout
    assert "You said" not in shown.stdout
    assert _seen(extension) == ["please show context"]

    greeted = _cli(project, "-e", str(extension), "-p", "/greet Ann Bob")
    assert greeted.returncode == 0, greeted.stderr
    assert greeted.stdout == "You said: Hello Ann, from Bob\n"
    assert _seen(extension) == ["/greet Ann Bob"]

    rewritten = _cli(project, "-e", str(extension), "-p", "/context")
    assert rewritten.returncode == 0, rewritten.stderr
    assert rewritten.stdout == "You said: tell me about the context\n"
    # A transform into a template command is expanded after input.
    expanded = _cli(project, "-e", str(extension), "-p", "/context --full")
    assert expanded.stdout == "You said: Hello Ann, from Bob\n"
    _seen(extension)

    lines = _cli(project, "-e", str(extension), "--mode", "json", "please show context")
    assert lines.returncode == 0, lines.stderr
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [r["type"] for r in records] == ["session", "context"]
    assert "Messages: 0 cached, 0 uncached" in records[1]["text"]


async def test_rpc_mode_runs_input_before_builtins_and_expansion(tmp_path: Path) -> None:
    """pitrio --mode rpc: a transform to /context answers the view in the response and starts
    no run; input sees '/greet Ann Bob' raw and the model gets the expansion; a transform
    of /context reaches the model; a transform that names no images keeps the prompt's."""
    extension, project = _setup(tmp_path)
    image = {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(project), "--no-session", "-e", str(extension))
        with trio.fail_after(CLI_GUARD_S):
            shown = await rpc.call({"id": "1", "type": "prompt", "message": "please show context"})
            assert shown["success"] is True, shown
            assert "Messages: 0 cached, 0 uncached" in shown["data"]["text"]
            assert shown["data"]["envelope"]["messages"]["cached"] == []
            messages = await rpc.call({"id": "2", "type": "get_messages"})
            assert messages["data"]["messages"] == []

            await rpc.send({"id": "3", "type": "prompt", "message": "/greet Ann Bob"})
            run = await rpc.until(lambda r: r.get("type") == "agent_end")
            await rpc.send({"id": "4", "type": "prompt", "message": "/context", "images": [image]})
            run += await rpc.until(lambda r: r.get("type") == "agent_end")
            messages = await rpc.call({"id": "5", "type": "get_messages"})
        nursery.cancel_scope.cancel()
    assert sum(r.get("type") == "agent_start" for r in [shown, *run]) == 2
    users = [m for m in messages["data"]["messages"] if m["role"] == "user"]
    answers = [m for m in messages["data"]["messages"] if m["role"] == "assistant"]
    assert [u["content"][0]["text"] for u in users] == [
        "Hello Ann, from Bob",
        "tell me about the context",
    ]
    assert users[1]["content"][1] == image
    assert answers[0]["content"][0]["text"] == "You said: Hello Ann, from Bob"
    assert _seen(extension) == ["please show context", "/greet Ann Bob", "/context"]


async def test_python_api_prompt_returns_a_builtin_answer_and_expands_after_input() -> None:
    """AgentSession.prompt: '/context' returns a BuiltinCommandResult with no run; input sees
    the raw template command; steer and follow_up expand templates; send_user_message sends
    its text as written."""
    seen: list[str] = []

    def register(pi: ExtensionAPI) -> None:
        pi.on("input", lambda event, ctx: seen.append(event.text))

    faux, registry = make_faux()
    faux.set_responses([reply(), reply()])
    greet = PromptTemplate(name="greet", description="", content=GREET, file_path="/p/greet.md")
    async with open_session(
        make_runner(register),
        faux,
        registry,
        manager=SessionManager.in_memory("/project"),
        prompt_templates=[greet],
    ) as session:
        answered = await session.prompt("/context")
        assert isinstance(answered, BuiltinCommandResult) and answered.name == "context"
        assert "Messages: 0 cached" in answered.text
        assert faux.state.call_count == 0
        assert await session.prompt("/greet Ann Bob") is None
        await session.send_user_message("/greet Cy Di")
        assert session.prompt_templates == (greet,)
    users = [text_of(m) for m in session.messages if isinstance(m, UserMessage)]
    assert users == ["Hello Ann, from Bob", "/greet Cy Di"]
    assert seen == ["/context", "/greet Ann Bob", "/greet Cy Di"]


async def test_steer_and_follow_up_expand_templates() -> None:
    """steer and follow_up queue the expansion of a template command (pi's steer/followUp)."""
    faux, registry = make_faux()
    release = trio.Event()

    async def slow(*_: Any) -> Any:
        await release.wait()
        return reply()()

    faux.set_responses([slow, reply(), reply()])
    greet = PromptTemplate(name="greet", description="", content=GREET, file_path="/p/greet.md")
    async with (
        open_session(make_runner(), faux, registry, prompt_templates=[greet]) as session,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        await session.steer("/greet A B")
        await session.follow_up("/greet C D")
        release.set()
    users = [text_of(m) for m in session.messages if isinstance(m, UserMessage)]
    assert users == ["go", "Hello A, from B", "Hello C, from D"]


async def test_websocket_host_sessions_expand_templates_and_answer_context(
    tmp_path: Path,
) -> None:
    """pitrio serve: a session's prompt expands the project's /greet template in the session
    and a /context prompt is answered with the view as data, without a run."""
    (tmp_path / ".pitrio" / "prompts").mkdir(parents=True)
    (tmp_path / ".pitrio" / "prompts" / "greet.md").write_text(GREET)
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        created = await client.call({"type": "create_session"})
        sid = created["data"]["session"]
        shown = await client.call({"type": "prompt", "session": sid, "message": "/context"})
        assert shown["success"] is True
        assert "Messages: 0 cached, 0 uncached" in shown["data"]["text"]
        await client.send({"type": "prompt", "session": sid, "message": "/greet Ann Bob"})
        frames = await client.until(lambda f: f.get("type") == "agent_end")
    assert text_of_deltas(frames) == "You said: Hello Ann, from Bob"


async def test_an_unreadable_skill_is_sent_as_written_and_reported(tmp_path: Path) -> None:
    """/skill:name expands a readable skill after input; one whose file is gone is sent as
    written and reported as a skill_expansion extension error of the skill's path (pi)."""
    folder = tmp_path / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: deploy\ndescription: d\n---\nShip it.\n")
    deploy = Skill(
        name="deploy", description="d", file_path=str(folder / "SKILL.md"), base_dir=str(folder)
    )
    gone = Skill(
        name="gone", description="g", file_path=str(tmp_path / "gone.md"), base_dir=str(tmp_path)
    )
    seen: list[str] = []
    runner = make_runner(lambda pi: pi.on("input", lambda event, ctx: seen.append(event.text)))
    faux, registry = make_faux()
    faux.set_responses([reply(), reply()])
    async with open_session(runner, faux, registry, skills=[deploy, gone]) as session:
        await session.prompt("/skill:deploy now")
        await session.prompt("/skill:gone now")
    users = [text_of(m) for m in session.messages if isinstance(m, UserMessage)]
    assert users[0].startswith(f'<skill name="deploy" location="{folder / "SKILL.md"}">')
    assert users[0].endswith("Ship it.\n</skill>\n\nnow")
    assert users[1] == "/skill:gone now"
    assert seen == ["/skill:deploy now", "/skill:gone now"]
    [error] = runner.errors
    assert (error.extension_path, error.event) == (gone.file_path, "skill_expansion")


async def test_send_user_message_does_not_run_extension_commands() -> None:
    """An extension's send_user_message('/cmd ...') reaches the model as written; the command
    registered under that name does not run (pi's sendUserMessage skips the command check)."""
    ran: list[str] = []

    def register(pi: ExtensionAPI) -> None:
        pi.register_command("deploy", lambda args, ctx: ran.append(args))

    faux, registry = make_faux()
    faux.set_responses([reply(), reply()])
    async with open_session(make_runner(register), faux, registry) as session:
        await session.prompt("/deploy now")
        assert ran == ["now"] and faux.state.call_count == 0
        await session.send_user_message("/deploy later")
    users = [text_of(m) for m in session.messages if isinstance(m, UserMessage)]
    assert users == ["/deploy later"]
    assert ran == ["now"]
