"""before_provider_request and after_provider_response through a real session whose model
talks to a loopback HTTP server, and extension string flags given as ``--name value``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from ext_helpers import Log, make_runner
from test_loader import CLI_EXTENSION, run_cli, write

from pitrio.extensions import ExtensionAPI, ExtensionRunner, open_extension_session
from pitrio.providers import Model, ModelCost, ProviderRegistry, TextContent
from pitrio.providers.openai_completions._provider import register_openai_completions
from pitrio.sessions import SessionManager
from pitrio.sessions.settings._settings import SettingsManager
from pitrio.tools import AgentTool, AgentToolResult, FunctionTool, text_result

from fixtures_openai_completions import chunk, frame, text_stream, usage
from loopback import error_handler, sequence_handler, serve, sse_handler

QUIET_WITHIN = 0.1


def tool_stream(call_id: str) -> bytes:
    """One echo tool call (openai-completions chunks)."""
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "echo", "arguments": json.dumps({"text": call_id})},
    }
    return frame(
        [
            chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
            chunk({}, finish_reason="tool_calls"),
            chunk(choices=False, usage=usage(10, 5)),
        ]
    )


def echo_tool() -> AgentTool:
    async def run(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
        return text_result(f"echo {params.get('text')}")

    return FunctionTool(
        name="echo",
        label="Echo",
        description="echo text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        fn=run,
    )


def http_model(base_url: str) -> Model:
    return Model(
        id="gpt-4o-mini",
        name="GPT-4o mini",
        api="openai-completions",
        provider="openai",
        base_url=base_url,
        input=("text",),
        cost=ModelCost(input=0, output=0, cache_read=0, cache_write=0),
        context_window=128_000,
        max_tokens=16_384,
    )


async def _session(runner: ExtensionRunner, base_url: str) -> Any:
    registry = ProviderRegistry()
    register_openai_completions(registry)
    model = http_model(base_url)
    return open_extension_session(
        runner,
        session_manager=SessionManager.in_memory("/project"),
        settings=SettingsManager.in_memory({}),
        registry=registry,
        model=model,
        models=[model],
        tools=[echo_tool()],
        get_api_key=lambda provider: "test-key",
    )


async def test_provider_hooks_chain_and_fire_once_per_llm_call() -> None:
    """Three tool loops and an answer: context, before_provider_request (B sees A's payload;
    the server gets B's) and after_provider_response (status and headers, A then B) fire once
    per request, in that order, before the assistant message starts."""
    log = Log()

    def a(pi: ExtensionAPI) -> None:
        pi.on("context", lambda e, ctx: log("context") if e.reason == "before_request" else None)
        pi.on("before_provider_request", lambda e, ctx: {**e.payload, "a": 1})
        pi.on(
            "after_provider_response",
            lambda e, ctx: log("response A", (e.status, e.headers.get("x-ratelimit-remaining"))),
        )
        pi.on(
            "message_start",
            lambda e, ctx: log("assistant") if e.message.role == "assistant" else None,
        )

    def b(pi: ExtensionAPI) -> None:
        def request(e: Any, ctx: Any) -> Any:
            log("request B", e.payload.get("a"))
            return {**e.payload, "b": e.payload["a"] + 1}

        pi.on("before_provider_request", request)
        pi.on("after_provider_response", lambda e, ctx: log("response B", e.status))

    headers = {"content-type": "text/event-stream", "x-ratelimit-remaining": "7"}
    handler = sequence_handler(
        sse_handler(tool_stream("c1"), headers=headers),
        sse_handler(tool_stream("c2"), headers=headers),
        sse_handler(tool_stream("c3"), headers=headers),
        sse_handler(text_stream("done"), headers=headers),
    )
    async with serve(handler) as server:
        runner = make_runner(a, b)
        async with await _session(runner, server.url("/v1")) as session:
            await session.prompt("loop")
            assert session.messages[-1].text() == "done"
    one_call = [
        ("context", None),
        ("request B", 1),
        ("response A", (200, "7")),
        ("response B", 200),
        ("assistant", None),
    ]
    assert log.items == one_call * 4
    assert len(server.requests) == 4
    assert all((r.json()["a"], r.json()["b"]) == (1, 2) for r in server.requests)


async def test_after_provider_response_sees_a_final_error_status() -> None:
    """A 429 that ends the request (no retries left) is shown with its headers, once."""
    seen: list[Any] = []
    runner = make_runner(
        lambda pi: pi.on(
            "after_provider_response",
            lambda e, ctx: seen.append((e.status, e.headers.get("retry-after"))),
        )
    )
    handler = error_handler(429, {"error": {"message": "slow down"}}, {"retry-after": "30"})
    async with serve(handler) as server, await _session(runner, server.url("/v1")) as session:
        await session.set_auto_retry_enabled(False)
        await session.prompt("hi")
        assert session.messages[-1].stop_reason == "error"
    assert seen == [(429, "30")]


@pytest.mark.parametrize("event", ["before_provider_request", "after_provider_response"])
async def test_abort_during_a_slow_provider_hook_is_quick(
    event: str, autojump_clock: trio.testing.MockClock
) -> None:
    """abort() while a provider hook hangs: the session is idle within 100 ms."""

    async def hang(e: Any, ctx: Any) -> Any:
        await trio.sleep_forever()

    runner = make_runner(lambda pi: pi.on(event, hang))
    async with (
        serve(sse_handler(text_stream("never"))) as server,
        await _session(runner, server.url("/v1")) as session,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.prompt, "go")
        await trio.testing.wait_all_tasks_blocked()
        assert session.is_streaming
        start = trio.current_time()
        await session.abort()
        assert trio.current_time() - start < QUIET_WITHIN
        assert not session.is_streaming
        last = session.messages[-1]
        assert attrs.has(type(last)) and getattr(last, "stop_reason", None) == "aborted"
        assert not any(isinstance(b, TextContent) and b.text for b in last.content)


# --------------------------------------------------------------------------- CLI flags


def test_cli_string_flag_takes_the_next_word_as_its_value(tmp_path: Path) -> None:
    """--suffix VALUE works like --suffix=VALUE; a word after a boolean flag stays the
    message; a string flag at the end without a value is a usage error."""
    ext = write(tmp_path / "cli_ext.py", CLI_EXTENSION)
    done = run_cli(tmp_path, "-e", str(ext), "--suffix", "?!", "-p", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello?!\n"
    done = run_cli(tmp_path, "-e", str(ext), "-p", "--shout", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: HELLO\n"
    done = run_cli(tmp_path, "-e", str(ext), "-p", "hi", "--suffix")
    assert done.returncode == 2
    assert "--suffix needs a value" in done.stderr


RESOURCES_EXTENSION = """
import pathlib
HERE = pathlib.Path(__file__).parent
def register(pi):
    def discover(event, ctx):
        return {"skillPaths": [str(HERE / "skills" / "deploy" / "SKILL.md")]}
    pi.on("resources_discover", discover)
"""


def test_cli_resources_discover_skill_reaches_the_system_prompt(tmp_path: Path) -> None:
    """A skill path returned by resources_discover is in the system prompt's skills part
    (pitrio --context --full shows the compiled prompt)."""
    ext = write(tmp_path / "ext" / "res.py", RESOURCES_EXTENSION)
    write(
        tmp_path / "ext" / "skills" / "deploy" / "SKILL.md",
        "---\nname: deploy\ndescription: Ship the build to production.\n---\nSteps.\n",
    )
    done = run_cli(tmp_path, "-e", str(ext), "--context", "--full")
    assert done.returncode == 0, done.stderr
    assert "Ship the build to production." in done.stdout
    done = run_cli(tmp_path, "--context", "--full")
    assert "Ship the build to production." not in done.stdout
