"""The find tool: pi 0.73.1's output for the captured cases, globs and ignore rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pitrio.codec import to_wire
from pitrio.tools.builtin._errors import FileToolError
from pitrio.tools.builtin._find import FdGlob, FindTool, glob_to_regex

from pi_data import load_json

CAPTURE = load_json("tools/find_cases.json")
CASES = {case["name"]: case for case in CAPTURE["cases"]}


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
    tool = FindTool(cwd="/")
    assert {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": tool.parameters,
    } == CAPTURE["tool"]


@pytest.mark.parametrize("name", sorted(CASES))
async def test_output_matches_pi(name: str, tmp_path: Path) -> None:
    """Each captured search gives pi's (fd's) text and details."""
    case = CASES[name]
    root = tmp_path / "root"
    make_tree(root, case["setup"])
    tool = FindTool(cwd=str(root))
    try:
        result = await tool.execute("call-1", case["args"], lambda _: None)
    except FileToolError as exc:
        assert str(exc).replace(str(root), "$ROOT") == case["error"]
        return
    ours = json.loads(json.dumps(to_wire(result)).replace(str(root), "$ROOT"))
    if case.get("ordered", True):
        assert ours == case["result"]
    else:
        # fd picked these under a limit in the order its threads found them; the walk here is
        # sorted, so compare the notice and the count.
        ours_text, pi_text = ours["content"][0]["text"], case["result"]["content"][0]["text"]
        assert ours_text.split("\n\n")[1] == pi_text.split("\n\n")[1]
        assert len(ours_text.split("\n")) == len(pi_text.split("\n"))
        assert ours["details"] == case["result"]["details"]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "/r/a/b.py", True),
        ("*.py", "/r/a/b.PY", True),
        ("*.PY", "/r/a/b.py", False),
        ("src/*.py", "/r/src/x.py", True),
        ("src/*.py", "/r/src/deep/x.py", False),
        ("src/**/*.py", "/r/src/deep/er/x.py", True),
        ("src/**/*.py", "/r/src/x.py", True),
        ("/r/src/*", "/r/src/x", True),
        ("/r/src/*", "/other/r/src/x", False),
        ("*.{js,ts}", "/r/x.ts", True),
        ("[!a]*.txt", "/r/a1.txt", False),
        ("[!a]*.txt", "/r/b1.txt", True),
        ("file?.txt", "/r/file1.txt", True),
        ("**", "/r/anything/at/all", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    """Patterns match names, or whole paths when they contain a slash, with smart case."""
    assert FdGlob.compile(pattern).matches(path) is expected


def test_glob_escapes_regex_characters() -> None:
    """Characters special to regexes match themselves."""
    assert glob_to_regex("a+b(1).txt", literal_separator=True) == r"a\+b\(1\)\.txt"


async def test_ignore_precedence(tmp_path: Path) -> None:
    """Deeper rules win, negations re-include, .ignore beats .gitignore, ignored dirs are pruned."""
    make_tree(
        tmp_path / "r",
        [
            {"path": ".git/HEAD", "text": ""},
            {"path": ".gitignore", "text": "*.gen\nout/\n"},
            {"path": "sub/.gitignore", "text": "!keep.gen\n"},
            {"path": "sub/keep.gen", "text": ""},
            {"path": "sub/drop.gen", "text": ""},
            {"path": "out/x.txt", "text": ""},
            {"path": ".ignore", "text": "!top.gen\n"},
            {"path": "top.gen", "text": ""},
            {"path": "other.gen", "text": ""},
        ],
    )
    result = await FindTool(cwd=str(tmp_path / "r")).execute("c", {"pattern": "*.gen"}, print)
    assert result.content[0].text == "sub/keep.gen\ntop.gen"  # type: ignore[union-attr]


async def test_gitignore_applies_without_a_repository(tmp_path: Path) -> None:
    """As with fd's --no-require-git, .gitignore counts outside a git repository too."""
    make_tree(
        tmp_path / "r", [{"path": ".gitignore", "text": "*.log\n"}, {"path": "a.log", "text": ""}]
    )
    (tmp_path / "r" / "b.txt").write_text("")
    result = await FindTool(cwd=str(tmp_path / "r")).execute("c", {"pattern": "*"}, print)
    assert result.content[0].text == ".gitignore\nb.txt"  # type: ignore[union-attr]


async def test_limit_keeps_the_first_in_sorted_order(tmp_path: Path) -> None:
    """With a limit, the first results of the sorted walk are kept and pi's notice added."""
    make_tree(tmp_path / "r", [{"path": f"f{i}.txt", "text": ""} for i in range(5)])
    result = await FindTool(cwd=str(tmp_path / "r")).execute(
        "c", {"pattern": "*.txt", "limit": 2}, print
    )
    assert result.content[0].text == (  # type: ignore[union-attr]
        "f0.txt\nf1.txt\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert result.details == {"resultLimitReached": 2}


async def test_a_search_root_a_parent_gitignore_ignores_lists_its_files(tmp_path: Path) -> None:
    """As fd (ignore rules never apply to the search root), ``path`` naming a folder that a
    parent's .gitignore ignores lists that folder's files; rules on the files themselves still
    apply."""
    make_tree(
        tmp_path / "r",
        [
            {"path": ".git/HEAD", "text": ""},
            {"path": ".gitignore", "text": "build/\ndist\n*.log\n"},
            {"path": "build/a.txt", "text": ""},
            {"path": "build/sub/b.txt", "text": ""},
            {"path": "build/skip.log", "text": ""},
            {"path": "dist/c.txt", "text": ""},
        ],
    )
    tool = FindTool(cwd=str(tmp_path / "r"))
    result = await tool.execute("c", {"pattern": "*", "path": "build"}, print)
    assert result.content[0].text == "a.txt\nsub/\nsub/b.txt"  # type: ignore[union-attr]
    result = await tool.execute("c", {"pattern": "*.txt", "path": "dist"}, print)
    assert result.content[0].text == "c.txt"  # type: ignore[union-attr]
    result = await tool.execute("c", {"pattern": "*.txt"}, print)
    assert result.content[0].text == "No files found matching pattern"  # type: ignore[union-attr]
