"""The system prompt and resources pitrio loads equal pi 0.73.1's for the captured fixture tree.

tests/data/pi/resources/capture_resources.mjs ran pi's own DefaultResourceLoader and
createAgentSession on the same tree (with ``.pi`` where pitrio has ``.pitrio``). The documented
differences: the product name (pi_resources.PRODUCT_SUBSTITUTIONS), the documentation paths, and
two diagnostics pi produces by accident (below).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pi_resources import (
    CAPTURE_DATE,
    DOCS,
    load,
    make_fixture,
    pi_to_pitrio,
    real_root,
)

from pitrio.sessions.resources import (
    ContextFile,
    Resources,
    build_system_prompt,
    expand_skill_command,
    load_resources,
)
from pitrio.sessions.resources._system_prompt import documentation_paths

CAPTURE = load("resources.json")
OWN_MESSAGES = (
    "name ",
    "description is required",
    "description exceeds",
    "skill path does not exist",
    "Skill path does not exist",
    "Prompt template path does not exist",
    "skill path is not a markdown file",
)


def _load(root: Path, options: dict[str, Any]) -> Resources:
    cwd = root / options["cwd"]

    def settings(path: Path) -> dict[str, Any] | None:
        return json.loads(path.read_text()) if path.exists() else None

    return load_resources(
        str(cwd),
        str(root / "agent"),
        global_settings=settings(root / "agent" / "settings.json"),
        project_settings=settings(cwd / ".pitrio" / "settings.json"),
        skill_paths=[
            p.replace("<ROOT>", str(root)) for p in options.get("additionalSkillPaths") or []
        ],
        prompt_template_paths=options.get("additionalPromptTemplatePaths") or [],
        no_skills=options.get("noSkills", False),
        no_prompt_templates=options.get("noPromptTemplates", False),
        no_context_files=options.get("noContextFiles", False),
        home=str(root / "home"),
    )


def _comparable(diagnostics: list[dict[str, Any]], cwd: Path) -> list[dict[str, Any]]:
    out = []
    for d in diagnostics:
        # pi checks --skill/--prompt-template paths against the process cwd (not the session's),
        # so the capture (run elsewhere) has "does not exist" errors for relative paths that do
        # exist; pi's CLI always runs in the session cwd, where they do not appear.
        if d["type"] == "error" and (cwd / d["path"]).exists():
            continue
        # A YAML syntax error's message is the parser's own prose (pi: the yaml package).
        if not d["message"].startswith(OWN_MESSAGES):
            d = {**d, "message": "<parser error>"}
        out.append(d)
    return out


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = real_root(tmp_path_factory.mktemp("pi-resources"))
    make_fixture(root, CAPTURE)
    return root


@pytest.mark.parametrize("name", sorted(CAPTURE["scenarios"]))
def test_system_prompt_equals_pi(fixture_root: Path, name: str) -> None:
    """The whole system prompt equals pi's, up to the product name and the docs paths."""
    scenario = CAPTURE["scenarios"][name]
    expected = pi_to_pitrio(scenario, fixture_root)
    resources = _load(fixture_root, scenario["options"])
    prompt = resources.build_system_prompt(
        scenario["options"].get("tools"), today=CAPTURE_DATE, docs=DOCS
    )
    assert prompt == expected["systemPrompt"]


@pytest.mark.parametrize("name", sorted(CAPTURE["scenarios"]))
def test_resources_equal_pi(fixture_root: Path, name: str) -> None:
    """Skills, templates, context files, prompt files and diagnostics are pi's, in pi's order."""
    scenario = CAPTURE["scenarios"][name]
    expected = pi_to_pitrio(scenario, fixture_root)
    cwd = fixture_root / scenario["options"]["cwd"]
    resources = _load(fixture_root, scenario["options"])
    skills = [
        {
            "name": s.name,
            "description": s.description,
            "filePath": s.file_path,
            "baseDir": s.base_dir,
            "disableModelInvocation": s.disable_model_invocation,
        }
        for s in resources.skills
    ]
    assert skills == expected["skills"]
    prompts = [
        {
            "name": p.name,
            "description": p.description,
            "argumentHint": p.argument_hint,
            "content": p.content,
            "filePath": p.file_path,
        }
        for p in resources.prompts
    ]
    assert prompts == expected["prompts"]
    assert [{"path": c.path, "content": c.content} for c in resources.context_files] == expected[
        "contextFiles"
    ]
    assert resources.system_prompt == expected["customSystemPrompt"]
    assert list(resources.append_system_prompt) == expected["appendSystemPrompt"]
    for got, want in (
        (resources.skill_diagnostics, expected["skillDiagnostics"]),
        (resources.prompt_diagnostics, expected["promptDiagnostics"]),
    ):
        assert _comparable([d.to_pi() for d in got], cwd) == _comparable(want, cwd)


@pytest.mark.parametrize("name", sorted(CAPTURE["scenarios"]))
def test_skill_command_expansion_equals_pi(fixture_root: Path, name: str) -> None:
    """``/skill:name args`` expands to pi's ``<skill>`` block; unknown names pass through."""
    scenario = CAPTURE["scenarios"][name]
    expected = pi_to_pitrio(scenario, fixture_root)
    resources = _load(fixture_root, scenario["options"])
    for text, result in expected["skillExpansions"].items():
        assert expand_skill_command(text, resources.skills) == result


def test_default_prompt_names_pitrio_and_its_docs(tmp_path: Path) -> None:
    """Without overrides the prompt says pitrio and points at pitrio's README, not pi's."""
    prompt = build_system_prompt(cwd=str(tmp_path))
    readme, _docs, examples = documentation_paths()
    assert "operating inside pitrio, a coding agent harness" in prompt
    assert f"- Main documentation: {readme}\n" in prompt
    assert f"- Examples: {examples} (extensions" in prompt
    assert " pi " not in prompt and "inside pi," not in prompt
    assert Path(readme).is_file()  # the checkout's README.md


def test_windows_cwd_and_context_formatting() -> None:
    """Backslashes in cwd become slashes and each context file gets a ``## path`` section."""
    prompt = build_system_prompt(
        cwd="C:\\work\\repo",
        custom_prompt="Custom.",
        context_files=[ContextFile("/a/AGENTS.md", "A")],
        selected_tools=[],
    )
    assert prompt.endswith("\nCurrent working directory: C:/work/repo")
    assert "# Project Context\n\nProject-specific instructions and guidelines:\n\n" in prompt
    assert "## /a/AGENTS.md\n\nA\n\n" in prompt
