"""pi 0.73.1 opens a session file with context_transform and ephemeral entries and a
transcript-only contextTransform message (``tests/pi/open-session.mjs``, pi's own
SessionManager and convertToLlm; needs node and ``tests/pi/node_modules``: ``cd tests/pi &&
npm ci``; a missing one fails the test with what to do, it never skips)."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import trio

from pitrio.extensions import ExtensionAPI
from pitrio.sessions import SessionManager
from tests.extensions.ext_helpers import make_faux, make_runner, open_session
from tests.extensions.test_context_examples import Recorder

PI_DIR = pathlib.Path(__file__).resolve().parents[1] / "pi"
NODE_TIMEOUT = 60
"""Seconds the node script may take at most (it takes about one; this only stops a hang)."""


def _transforms(pi: ExtensionAPI) -> None:
    def handler(event: Any, ctx: Any) -> Any:
        if event.reason == "before_request":
            cached = event.state.envelope.messages.cached
            note = {"role": "user", "content": "[marker]", "timestamp": 1}
            return {
                "transformerName": "marker",
                "display": {"title": "Marker", "showInChat": True},
                "patch": [
                    {
                        "op": "messages_cached_replace",
                        "messages": [*cached, note],
                        "invalidateCacheReason": "marker",
                    }
                ],
            }
        if event.reason == "ephemeral":
            note = {"role": "user", "content": "[request-only]", "timestamp": 1}
            return {"patch": [{"op": "messages_uncached_append", "messages": [note]}]}
        return None

    pi.on("context", handler)


async def test_pi_opens_a_file_with_context_entries(tmp_path: pathlib.Path) -> None:
    """pi reads the file, skips the entry types it does not know, and sends what it holds as
    messages: no transform, no ephemeral note, no contextTransform message."""
    node = shutil.which("node")
    assert node is not None, "node is needed (pi 0.73.1 runs on it)"
    assert (PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir(), (
        "run `cd tests/pi && npm ci` first"
    )
    faux, registry = make_faux()
    faux.set_responses([Recorder(), Recorder()])
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    async with open_session(make_runner(_transforms), faux, registry, manager=manager) as s:
        await s.prompt("one")
        await s.prompt("two")
    path = manager.get_session_file()
    assert path is not None
    text = await trio.Path(path).read_text()
    written = [json.loads(line) for line in text.splitlines()]
    kinds = {record["type"] for record in written}
    assert {"context_transform", "ephemeral"} <= kinds
    roles = [r["message"]["role"] for r in written if r["type"] == "message"]
    assert "contextTransform" in roles
    with trio.fail_after(NODE_TIMEOUT):
        done = await trio.run_process(
            [node, str(PI_DIR / "open-session.mjs"), path],
            cwd=PI_DIR,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    assert seen["entryTypes"] == [r["type"] for r in written[1:]]
    # pi's agent gets the message entries (the transcript-only one too, as an unknown role)...
    assert seen["roles"] == roles
    # ...and its convertToLlm drops the unknown role: the model sees the plain conversation.
    assert seen["llm"] == [
        {"role": "user", "text": "one"},
        {"role": "assistant", "text": "ok"},
        {"role": "user", "text": "two"},
        {"role": "assistant", "text": "ok"},
    ]
