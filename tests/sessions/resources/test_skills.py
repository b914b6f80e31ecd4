"""Skill frontmatter validation, frontmatter parsing and the prompt format equal pi 0.73.1's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pi_resources import load, real_root

from pitrio.sessions.resources import (
    Skill,
    format_skills_for_prompt,
    load_skills_from_dir,
    parse_frontmatter,
)

CAPTURE = load("skills.json")
# pi reports a JavaScript TypeError for a non-string description; pitrio words it itself.
JS_MESSAGES = {"description.trim is not a function": "description must be a string"}


@pytest.mark.parametrize("folder", sorted(CAPTURE["cases"]))
def test_skill_validation_equals_pi(tmp_path: Path, folder: str) -> None:
    """Each SKILL.md loads (or not) with pi's name, description and warning messages."""
    case = CAPTURE["cases"][folder]
    root = real_root(tmp_path)
    directory = root / "skill-cases" / folder
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_bytes(case["content"].encode())
    skills, diagnostics = load_skills_from_dir(str(directory))
    expected_root = "<ROOT>"
    got_skills = [
        {
            "name": s.name,
            "description": s.description,
            "filePath": s.file_path.replace(str(root), expected_root),
            "baseDir": s.base_dir.replace(str(root), expected_root),
            "disableModelInvocation": s.disable_model_invocation,
        }
        for s in skills
    ]
    assert got_skills == case["skills"]
    want: list[dict[str, Any]] = [
        {**d, "message": JS_MESSAGES.get(d["message"], d["message"])} for d in case["diagnostics"]
    ]
    got = [d.to_pi() for d in diagnostics]
    for d in got:
        d["path"] = str(d["path"]).replace(str(root), expected_root)
    assert got == want


FRONTMATTER_PARSER_DIFFERENCES = {"---a: 1\n---\nb"}
"""pi's yaml package reads ``: 1`` as a mapping with an empty key; PyYAML rejects it."""


@pytest.mark.parametrize("case", CAPTURE["frontmatter"], ids=lambda c: repr(c["input"]))
def test_frontmatter_equals_pi(case: dict[str, Any]) -> None:
    """YAML 1.2 core-schema values (yes/on/dates stay strings) and pi's body trimming."""
    if case["input"] in FRONTMATTER_PARSER_DIFFERENCES:
        with pytest.raises(yaml.YAMLError):
            parse_frontmatter(case["input"])
        return
    parsed = parse_frontmatter(case["input"])
    assert parsed.data == case["frontmatter"]
    assert parsed.body == case["body"]


@pytest.mark.parametrize("case", CAPTURE["format"], ids=lambda c: str(len(c["skills"])))
def test_prompt_format_equals_pi(case: dict[str, Any]) -> None:
    """The ``<available_skills>`` block escapes XML and leaves out model-hidden skills."""
    skills = [
        Skill(
            name=s["name"],
            description=s["description"],
            file_path=s["filePath"],
            base_dir="/",
            disable_model_invocation=s["disableModelInvocation"],
        )
        for s in case["skills"]
    ]
    assert format_skills_for_prompt(skills) == case["result"]


def test_gitignored_and_hidden_folders_are_skipped(tmp_path: Path) -> None:
    """Ignore files, dot folders and node_modules hide skills; a SKILL.md stops the descent."""
    for relative in ("a/SKILL.md", "a/inner/SKILL.md", ".hidden/x/SKILL.md", "ign/SKILL.md"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        name = path.parent.name
        path.write_text(f"---\nname: {name}\ndescription: d\n---\n")
    (tmp_path / ".ignore").write_text("ign/\n")
    skills, diagnostics = load_skills_from_dir(str(tmp_path))
    assert [s.name for s in skills] == ["a"]
    assert diagnostics == []
