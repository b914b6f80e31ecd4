"""Seed 001's three examples (examples/extensions/) loaded by the real loader, on the faux
provider, checked against what the provider received, the session file and a reopen."""

from __future__ import annotations

import pathlib
from typing import Any

from pitrio.extensions import ExtensionRunner, HeadlessUI, load_extension
from pitrio.providers import AssistantMessage, Context, TextContent, faux_assistant_message
from pitrio.sessions import SessionManager
from pitrio.sessions.envelope import build_context_view, render_context
from pitrio.sessions.storage._entries import (
    ContextTransformEntry,
    EphemeralEntry,
    SessionMessageEntry,
)
from tests.extensions.ext_helpers import make_faux, open_session

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "extensions"


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


class Recorder:
    """A faux response that records each request's Context and answers ``ok``."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def __call__(self, context: Context, *_: Any) -> AssistantMessage:
        self.contexts.append(context)
        return faux_assistant_message("ok")

    def texts(self, index: int) -> list[str]:
        return [text_of(m) for m in self.contexts[index].messages]


async def _runner(name: str, cwd: str) -> ExtensionRunner:
    runner = ExtensionRunner(cwd=cwd, ui=HeadlessUI())
    assert await load_extension(runner, str(EXAMPLES / f"{name}.py")), runner.load_errors
    return runner


async def _run(name: str, tmp_path: pathlib.Path, prompts: list[str]) -> tuple[Recorder, str]:
    runner = await _runner(name, str(tmp_path))
    faux, registry = make_faux()
    recorder = Recorder()
    faux.set_responses([recorder for _ in prompts])
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    async with open_session(runner, faux, registry, manager=manager) as session:
        for prompt in prompts:
            await session.prompt(prompt)
    path = manager.get_session_file()
    assert path is not None
    return recorder, path


async def _replayed(path: str) -> Any:
    """The envelope of the reopened file, built by a session with no extension at all."""
    faux, registry = make_faux()
    runner = ExtensionRunner(cwd="/", ui=HeadlessUI())
    async with open_session(runner, faux, registry, manager=SessionManager.open(path)) as s:
        return await build_context_view(s.context_engine)


async def test_persistent_marker_reaches_every_later_request(tmp_path: pathlib.Path) -> None:
    """The marker is persisted as a context_transform and is in every later request."""
    recorder, path = await _run("persistent_marker", tmp_path, ["one", "two"])
    assert recorder.texts(0) == ["one", "[marker]"]
    assert recorder.texts(1) == ["one", "[marker]", "ok", "two", "[marker]"]
    entries = SessionManager.open(path).get_entries()
    transforms = [e for e in entries if isinstance(e, ContextTransformEntry)]
    assert [(t.reason, t.transformer_name) for t in transforms] == [
        ("before_request", "marker"),
        ("before_request", "marker"),
    ]
    view = await _replayed(path)
    assert [text_of(m) for m in view.envelope.messages.cached] == [*recorder.texts(1), "ok"]
    assert "Marker [marker] (before_request: messages_cached_replace)" in render_context(view)


async def test_ephemeral_context_reaches_the_request_but_never_the_replay(
    tmp_path: pathlib.Path,
) -> None:
    """The request-only message is sent last on each request, logged, and never replayed."""
    recorder, path = await _run("ephemeral_context", tmp_path, ["one", "two"])
    assert recorder.texts(0) == ["one", "[request-only]"]
    assert recorder.texts(1) == ["one", "ok", "two", "[request-only]"]
    entries = SessionManager.open(path).get_entries()
    assert len([e for e in entries if isinstance(e, EphemeralEntry)]) == 2
    messages = [text_of(e.message) for e in entries if isinstance(e, SessionMessageEntry)]
    assert "[request-only]" not in messages
    view = await _replayed(path)
    assert [text_of(m) for m in view.envelope.messages.all] == ["one", "ok", "two", "ok"]


async def test_system_policy_persists_into_later_system_prompts(tmp_path: pathlib.Path) -> None:
    """The turn_end policy part is persisted and ends every later request's system prompt."""
    recorder, path = await _run("system_policy", tmp_path, ["one", "two", "three"])
    policy = "\n\n# Policy\n\nNever output secrets."
    first, second, third = (c.system_prompt or "" for c in recorder.contexts)
    assert not first.endswith(policy)
    assert second == first + policy and third == second
    transforms = [
        e for e in SessionManager.open(path).get_entries() if isinstance(e, ContextTransformEntry)
    ]
    assert [(t.reason, t.transformer_name) for t in transforms] == [("turn_end", "system-policy")]
    view = await _replayed(path)
    assert view.envelope.system.compiled.endswith(policy)
    assert [p.name for p in view.envelope.system.parts][-1] == "policy"
    # Its renderer is used by /context when the extension is loaded; without it, the title.
    runner = await _runner("system_policy", str(tmp_path))
    rendered = render_context(view, renderers=runner.context_transform_renderers())
    assert "policy part set (" in rendered
    assert "System policy [system-policy]" in render_context(view)
