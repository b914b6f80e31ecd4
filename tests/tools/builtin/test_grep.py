"""The grep tool: pi 0.73.1's output for the captured cases, with ripgrep and without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pitrio.codec import to_wire
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._grep import GrepTool, find_rg

from pi_data import load_json

CAPTURE = load_json("tools/grep_cases.json")
CASES = {case["name"]: case for case in CAPTURE["cases"]}
RG = find_rg()
# Error texts that are ripgrep's own words; the Python search words them differently.
RG_WORDED = {"invalid_regex"}


def make_tree(root: Path, setup: list[dict[str, Any]]) -> None:
    """Create the files of a capture's ``setup`` under ``root`` (as the capture script does)."""
    root.mkdir(parents=True, exist_ok=True)
    for item in setup:
        target = root / item["path"]
        if item.get("dir"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        text = item.get("text")
        if "lines" in item:
            spec = item["lines"]
            rows = [f"{spec['prefix']}{i}" for i in range(1, spec["count"] + 1)]
            width = spec.get("width")
            text = "".join((row.ljust(width, "x") if width else row) + "\n" for row in rows)
        target.write_bytes(text.encode())


def test_tool_definition_matches_pi() -> None:
    """Name, label, description and parameter schema are pi's."""
    tool = GrepTool(cwd="/")
    assert {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": tool.parameters,
    } == CAPTURE["tool"]


def test_ripgrep_package_is_found() -> None:
    """The rg binary of the ripgrep dependency is found."""
    assert RG is not None


def _body_lines(text: str) -> list[str]:
    return text.split("\n\n[")[0].split("\n")


@pytest.mark.parametrize("engine", ["rg", "python"])
@pytest.mark.parametrize("name", sorted(CASES))
async def test_output_matches_pi(name: str, engine: str, tmp_path: Path) -> None:
    """Each captured search gives pi's text and details, with ripgrep and with the fallback."""
    case = CASES[name]
    root = tmp_path / "root"
    make_tree(root, case["setup"])
    tool = GrepTool(cwd=str(root), rg_path=RG if engine == "rg" else None)
    try:
        result = await tool.execute("call-1", case["args"], lambda _: None)
    except FileToolError as exc:
        assert "error" in case, f"pi succeeded: {case.get('result')}"
        if engine == "rg" or name not in RG_WORDED:
            assert str(exc).replace(str(root), "$ROOT") == case["error"]
        return
    assert "result" in case, f"pi failed: {case.get('error')}"
    ours = json.loads(json.dumps(to_wire(result)).replace(str(root), "$ROOT"))
    if case.get("ordered", True):
        assert ours == case["result"]
    else:
        # ripgrep's threads print files in no fixed order: compare the lines as a multiset.
        ours_text, pi_text = ours["content"][0]["text"], case["result"]["content"][0]["text"]
        assert sorted(_body_lines(ours_text)) == sorted(_body_lines(pi_text))
        assert ours.get("details") == case["result"].get("details")


async def test_fallback_skips_binary_files_and_honours_rgignore(tmp_path: Path) -> None:
    """Without rg, files with NUL bytes and files in .rgignore are not searched."""
    make_tree(
        tmp_path,
        [
            {"path": ".rgignore", "text": "skip.txt\n"},
            {"path": "skip.txt", "text": "needle\n"},
            {"path": "ok.txt", "text": "needle\n"},
        ],
    )
    (tmp_path / "bin.dat").write_bytes(b"needle\0\n")
    result = await GrepTool(cwd=str(tmp_path), rg_path=None).execute(
        "c", {"pattern": "needle"}, lambda _: None
    )
    assert result.content[0].text == "ok.txt:1: needle"  # type: ignore[union-attr]
