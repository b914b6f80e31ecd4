"""Every ``ctx.ui`` method exists in every mode, with pi 0.73.1's behaviour there: print mode's
no-op context and RPC mode's context (what it forwards as ``extension_ui_request`` records and
what it answers itself), through real CLI subprocesses. The interactive mode's answers are
tested through the pty (tests/tui/test_tui_custom.py, test_tui_editor_component.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from cli_process import CLI_GUARD_S, run_faux_cli

from pitrio.extensions import ExtensionUI, HeadlessUI, UiBridge
from tests.host.rpc_process import open_rpc

PROBE_EXTENSION = """
import json, pathlib

OUT = pathlib.Path(__file__).with_name("ui.json")


class Component:
    def render(self, width):
        return ["component"]


async def probe(args, ctx):
    ui = ctx.ui
    got = {"has_ui": ctx.has_ui}
    got["custom"] = await ui.custom(lambda tui, theme, keys, done: Component())
    got["set_footer"] = ui.set_footer(lambda tui, theme: Component())
    got["set_editor_component"] = ui.set_editor_component(lambda tui, theme, keys: Component())
    got["get_editor_component"] = ui.get_editor_component()
    got["get_editor_text"] = ui.get_editor_text()
    got["paste_to_editor"] = ui.paste_to_editor("pasted text")
    got["set_tools_expanded"] = ui.set_tools_expanded(True)
    got["get_tools_expanded"] = ui.get_tools_expanded()
    got["set_header"] = ui.set_header(lambda tui, theme: Component())
    got["set_working_message"] = ui.set_working_message("busy")
    ui.set_widget("factory", lambda tui, theme: Component())
    ui.set_widget("lines", ["a widget line"])
    ui.set_status("probe", "probing")
    ui.set_title("probe title")
    ui.notify("probe done")
    OUT.write_text(json.dumps(got))


def register(pi):
    pi.register_command("probe", probe, description="call every ctx.ui method")
"""

NO_TERMINAL = {
    "custom": None,
    "set_footer": None,
    "set_editor_component": None,
    "get_editor_component": None,
    "get_editor_text": "",
    "paste_to_editor": None,
    "set_tools_expanded": None,
    "get_tools_expanded": False,
    "set_header": None,
    "set_working_message": None,
}


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    extension = tmp_path / "ext" / "probe.py"
    extension.parent.mkdir(parents=True)
    extension.write_text(PROBE_EXTENSION)
    project = tmp_path / "home" / "project"
    project.mkdir(parents=True)
    return extension, project


def test_every_protocol_method_is_on_the_headless_and_rpc_contexts() -> None:
    """The protocol names every method the interactive mode offers; both contexts have them."""
    names = [n for n in dir(ExtensionUI) if not n.startswith("_")]
    for name in (
        "custom",
        "set_footer",
        "set_editor_component",
        "set_header",
        "set_working_message",
    ):
        assert name in names
    for ui in (HeadlessUI(), UiBridge(_never)):
        missing = [name for name in names if not hasattr(ui, name)]
        assert missing == [], (type(ui).__name__, missing)


async def _never(record: dict[str, Any]) -> None:
    raise AssertionError("nothing is sent")


def test_print_mode_answers_as_pis_no_op_context(tmp_path: Path) -> None:
    """pitrio -p /probe: no AttributeError; custom answers None, the editor text is empty,
    the rest do nothing; notify still reaches stderr."""
    extension, project = _setup(tmp_path)
    done = run_faux_cli(project, project.parent, "-e", str(extension), "-p", "/probe")
    assert done.returncode == 0, done.stderr
    assert "AttributeError" not in done.stderr
    assert "probe done" in done.stderr
    got = json.loads(extension.with_name("ui.json").read_text())
    assert got == {"has_ui": False, **NO_TERMINAL}


async def test_rpc_mode_forwards_what_pi_forwards_and_answers_the_rest(tmp_path: Path) -> None:
    """pitrio --mode rpc, prompt /probe: custom, set_footer, set_header, set_editor_component,
    set_working_message and a widget factory send nothing; paste_to_editor becomes set_editor_text; lines widgets, status,
    title and notify are forwarded in order."""
    extension, project = _setup(tmp_path)
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(project), "--no-session", "-e", str(extension))
        with trio.fail_after(CLI_GUARD_S):
            # As pi: the prompt is answered when accepted, the command runs after.
            answer = await rpc.call({"id": "1", "type": "prompt", "message": "/probe"})
            records = await rpc.until(lambda r: r.get("method") == "notify")
        nursery.cancel_scope.cancel()
    assert answer["success"] is True, answer
    requests = [r for r in records if r.get("type") == "extension_ui_request"]
    for request in requests:
        del request["id"]
    assert requests == [
        {"type": "extension_ui_request", "method": "set_editor_text", "text": "pasted text"},
        {
            "type": "extension_ui_request",
            "method": "setWidget",
            "widgetKey": "lines",
            "widgetLines": ["a widget line"],
        },
        {
            "type": "extension_ui_request",
            "method": "setStatus",
            "statusKey": "probe",
            "statusText": "probing",
        },
        {"type": "extension_ui_request", "method": "setTitle", "title": "probe title"},
        {
            "type": "extension_ui_request",
            "method": "notify",
            "message": "probe done",
            "notifyType": "info",
        },
    ]
    got = json.loads(extension.with_name("ui.json").read_text())
    assert got == {"has_ui": True, **NO_TERMINAL}
