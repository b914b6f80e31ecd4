"""The built-in file tools answer every captured case exactly as pi 0.73.1's own tools did.

tests/data/pi/tools/tools.json is written by tests/data/pi/tools/capture.mjs, which runs pi's
``createTool(name, root).execute(...)`` on files it creates under a fresh root; this test
creates the same files under a fresh temporary root and compares content, details, thrown
messages and the files afterwards, with the root written as ``$ROOT``.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from pitrio.codec import to_wire
from pitrio.tools.builtin import create_tool

from pi_data import PI_DATA, load_json

CAPTURE = load_json("tools/tools.json")
CASES = {case["name"]: case for case in CAPTURE["cases"]}
SUMMARY_OVER = 4096


def _file_bytes(spec: dict[str, Any]) -> bytes:
    if "text" in spec:
        return spec["text"].encode("utf-8")
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    if "lines" in spec:
        lines = spec["lines"]
        text = "\n".join(
            f"{lines['prefix']}{i}{lines.get('suffix', '')}" for i in range(1, lines["count"] + 1)
        )
        return (text + ("\n" if lines.get("trailing") else "")).encode("utf-8")
    if "repeat" in spec:
        return (spec["repeat"]["unit"] * spec["repeat"]["count"]).encode("utf-8")
    if "concat" in spec:
        return b"".join(_file_bytes(part) for part in spec["concat"])
    raise AssertionError(f"unknown file kind {spec}")


def make_files(root: Path, setup: list[dict[str, Any]]) -> None:
    """Create a fresh ``root`` holding the files of a case's ``setup``."""
    root.mkdir()
    for spec in setup:
        target = root / spec["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if spec.get("dir"):
            target.mkdir(parents=True, exist_ok=True)
        elif "symlink" in spec:
            os.symlink(spec["symlink"], target)
        elif "many" in spec:
            target.mkdir(parents=True, exist_ok=True)
            many = spec["many"]
            for i in range(many["count"]):
                (target / f"{many['prefix']}{str(i).zfill(many['pad'])}").write_bytes(b"")
        else:
            target.write_bytes(_file_bytes(spec))


def relativise(value: Any, root: str) -> Any:
    """Write ``root`` as ``$ROOT`` and summarise long strings as capture.mjs does."""
    if isinstance(value, str):
        text = value.replace(root, "$ROOT")
        if len(text) <= SUMMARY_OVER:
            return text
        return {
            "$summary": {
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "chars": len(text),
                "head": text[:100],
                "tail": text[-100:],
            }
        }
    if isinstance(value, list | tuple):
        return [relativise(item, root) for item in value]
    if isinstance(value, dict):
        return {key: relativise(item, root) for key, item in value.items()}
    return value


def absolutise(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace("$ROOT", root)
    if isinstance(value, list):
        return [absolutise(item, root) for item in value]
    if isinstance(value, dict):
        return {key: absolutise(item, root) for key, item in value.items()}
    return value


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = base64.b64encode(path.read_bytes()).decode()
    return dict(sorted(out.items()))


async def run_case(case: dict[str, Any], root: Path) -> dict[str, Any]:
    """Run one captured case with pitrio's tool and record it in the capture's shape."""
    make_files(root, case["setup"])
    tool = create_tool(case["tool"], str(root))
    args = absolutise(case["args"], str(root))
    record: dict[str, Any] = {}
    if "prepared" in case:
        args = tool.prepare_arguments(args)
        record["prepared"] = relativise(args, str(root))
    try:
        result = await tool.execute(f"call-{case['name']}", args, lambda _: None)
    except Exception as exc:
        record["error"] = relativise(str(exc), str(root))
    else:
        record["result"] = relativise(to_wire(result), str(root))
    if case["tool"] in ("write", "edit"):
        record["after"] = snapshot(root)
    return record


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {key: case[key] for key in ("prepared", "error", "result", "after") if key in case}


def test_capture_is_from_pi_0_73_1() -> None:
    """The reference data was captured from pi 0.73.1 by the script next to it."""
    assert CAPTURE["piVersion"] == "0.73.1"
    assert (PI_DATA / "tools" / "capture.mjs").is_file()


@pytest.mark.parametrize("name", ["read", "write", "edit", "ls"])
def test_tool_definition_matches_pi(name: str) -> None:
    """Name, label, description and parameter schema are pi's."""
    tool = create_tool(name, "/")
    ours = {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": dict(tool.parameters),
    }
    assert ours == CAPTURE["tools"][name]


SAME_AS_PI = [name for name, case in CASES.items() if "pitrioDiffers" not in case]


@pytest.mark.parametrize("name", SAME_AS_PI)
async def test_output_matches_pi(name: str, tmp_path: Path) -> None:
    """The tool's result (or error message) and the files afterwards equal pi's."""
    case = CASES[name]
    assert await run_case(case, tmp_path / "root") == expected(case)
