"""pi 0.73.1's own ``RpcClient`` drives ``pitrio --mode rpc`` and pi's own RPC mode side by side.

``tests/pi/rpc_client.mjs`` (node, with the packages of ``tests/pi/package.json``) calls every
``RpcClient`` method against two agents at once: pitrio through ``tests/pi/pitrio-shim.mjs`` and
pi 0.73.1 itself through ``tests/pi/pi-faux-cli.mjs`` (pi's ``main()`` with a faux provider
playing the same script). Each answer of pitrio must equal pi's once what legitimately varies
between two runs is blanked out (timestamps, ids, paths, token estimates, which depend on the
system prompt's length). The differences pitrio still has are listed in
:data:`KNOWN_DIFFERENCES`, each checked to still exist so that the list shrinks as they get fixed.

Needs node and ``tests/pi/node_modules`` (``cd tests/pi && npm ci``; ``.ci/run`` does it): a
missing one fails the test with what to do, it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PI_DIR = Path(__file__).resolve().parent.parent.parent / "pi"
RUN_TIMEOUT = 120
"""Seconds the node script may take at most (it takes a few; this only stops a hang)."""

VOLATILE_KEYS = frozenset(
    {
        "timestamp",
        "usage",  # the faux provider estimates tokens from the request (system prompts differ)
        "tokensBefore",
        "tokens",
        "contextUsage",
        "sessionId",
        "sessionFile",
        "entryId",
        "firstKeptEntryId",
        "path",
        "stderr",
    }
)
"""Keys whose values differ between any two runs; only their JSON type is compared."""

PRIVATE_METHODS = frozenset({"constructor", "handleLine", "send", "getData"})


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string"}.get(
        type(value), type(value).__name__
    )


def normalise(value: Any) -> Any:
    """``value`` with the values under :data:`VOLATILE_KEYS` replaced by their JSON type, and
    the content of a ``message_update``'s message blanked.

    pi's faux provider streams one message object that it keeps filling in, and pi writes an
    event when its turn comes: the ``partial`` of an early ``message_update`` often shows text
    of later deltas (tests/data/pi/README.md, "pushed"), so only the deltas are compared.
    """
    if isinstance(value, dict):
        items = {
            key: f"<{_json_type(item)}>" if key in VOLATILE_KEYS else normalise(item)
            for key, item in value.items()
        }
        if items.get("type") == "message_update":
            for holder in (items.get("message"), items.get("assistantMessageEvent", {})):
                if isinstance(holder, dict):
                    for key in ("message", "partial"):
                        if isinstance(holder.get(key), dict):
                            holder[key] = {**holder[key], "content": "<streaming>"}
                    if "content" in holder and "role" in holder:
                        holder["content"] = "<streaming>"
        return items
    if isinstance(value, list):
        return [normalise(item) for item in value]
    return value


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _replace_text(value: Any, old: str, new: str) -> Any:
    if isinstance(value, list):
        return [_replace_text(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _replace_text(item, old, new) for key, item in value.items()}
    return new if value == old else value


KNOWN_DIFFERENCES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "aborted-tool-text": (
        "an aborted tool call's result reads pitrio's 'Tool execution was aborted' (the run's "
        "cancel scope ends the tool); pi's bash tool answers its own 'Command aborted'",
        lambda v: _replace_text(v, "Tool execution was aborted", "Command aborted"),
    ),
}
"""Where pitrio still answers differently from pi: name -> (what differs, a normaliser that
removes the difference from both sides)."""


def _node_or_fail() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not installed: this test runs pi 0.73.1's RpcClient with node "
            "(install Node.js 20 or newer, then: cd tests/pi && npm ci)"
        )
    if not (PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir():
        pytest.fail(f"pi's packages are not installed: run (cd {PI_DIR} && npm ci)")
    return node


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the node script once for both agents; its parsed output."""
    node = _node_or_fail()
    work = tmp_path_factory.mktemp("pi-rpc-client")
    pitrio_bin = Path(sys.executable).parent / "pitrio"
    assert pitrio_bin.exists(), f"no pitrio executable beside {sys.executable}"
    env = {**os.environ, "PITRIO_BIN": str(pitrio_bin)}
    run = subprocess.run(
        [
            node,
            "rpc_client.mjs",
            f"pitrio=pitrio-shim.mjs={work / 'pitrio'}",
            f"pi=pi-faux-cli.mjs={work / 'pi'}",
        ],
        cwd=PI_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert run.returncode == 0, f"rpc_client.mjs failed ({run.returncode}):\n{run.stderr}"
    result: dict[str, Any] = json.loads(run.stdout)
    result["work"] = str(work)
    return result


def _compare(answers: dict[str, Any], skip: str | None = None) -> dict[str, tuple[Any, Any]]:
    """The steps whose normalised answers differ: step -> (pi's, pitrio's)."""
    fixes = [fix for name, (_, fix) in KNOWN_DIFFERENCES.items() if name != skip]
    differing = {}
    for step, theirs in answers["pi"].items():
        ours = answers["pitrio"].get(step)
        expected, got = normalise(theirs), normalise(ours)
        for fix in fixes:
            expected, got = fix(expected), fix(got)
        # Key order is part of the protocol (pi's records byte for byte): compare as JSON text.
        if json.dumps(expected) != json.dumps(got):
            differing[step] = (expected, got)
    return differing


def test_every_rpc_client_method_is_called(answers: dict[str, Any]) -> None:
    """The script calls each public method of pi's RpcClient on both agents."""
    public = set(answers["methods"]) - PRIVATE_METHODS
    assert len(public) >= 30
    for agent in ("pi", "pitrio"):
        assert public - set(answers[agent]["called"]["value"]) == set()


def test_pitrio_answers_rpc_client_as_pi_does(answers: dict[str, Any]) -> None:
    """Every answer and event stream pitrio gives RpcClient equals pi's (volatile values
    blanked, known differences aside)."""
    assert set(answers["pitrio"]) == set(answers["pi"])
    differing = _compare(answers)
    report = "\n".join(
        f"{step}:\n  pi:     {json.dumps(pi)[:2000]}\n  pitrio: {json.dumps(ours)[:2000]}"
        for step, (pi, ours) in differing.items()
    )
    assert differing == {}, report


@pytest.mark.parametrize("name", sorted(KNOWN_DIFFERENCES))
def test_known_difference_still_exists(answers: dict[str, Any], name: str) -> None:
    """Each listed difference is still there (once fixed, its entry must go)."""
    assert _compare(answers, skip=name) != {}, (
        f"pitrio now answers as pi does here: remove KNOWN_DIFFERENCES[{name!r}]"
    )


def test_answers_are_what_the_session_did(answers: dict[str, Any]) -> None:
    """pitrio's answers hold what happened (so pi and pitrio cannot agree on nothing)."""
    got = {step: answer.get("value", answer) for step, answer in answers["pitrio"].items()}
    assert got["getState"]["model"]["id"] == "faux-1"
    assert [m["id"] for m in got["getAvailableModels"]] == ["faux-1"]
    assert answers["pitrio"]["setModelUnknown"] == {"error": "Model not found: faux/no-such-model"}
    texts = [
        block["text"]
        for message in got["getMessages"]
        for block in (message.get("content") or [])
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    for text in ("Hello back.", "Change of plan", "Steered.", "And then this", "Followed up."):
        assert text in texts
    assert got["getStateWhileBusy"]["isStreaming"] is True
    assert got["bash"]["exitCode"] == 3 and got["bash"]["output"] == "from bash\n"
    assert got["compact"]["summary"] == "Noted."
    assert got["fork"] == {"text": "Hello", "cancelled": False}
    assert answers["pitrio"]["forkUnknown"] == {"error": "Invalid entry ID for forking"}
    assert got["getStateAfterSwitch"]["sessionFile"] == got["getState"]["sessionFile"]
    assert got["getStateAfterSwitch"]["sessionName"] == "A named session"
    exported = Path(got["exportHtml"]["path"])
    assert exported.is_file() and exported.read_text(encoding="utf-8").startswith("<!DOCTYPE")
    assert got["eventTypes"].count("agent_end") == 4
