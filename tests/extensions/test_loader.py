"""Loading extensions from real files: the load order of seed 004, failure isolation, entry
points, and -e / --no-extensions / extension flags through the real CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_process import run_faux_cli

from pitrio.extensions import ExtensionRunner, load_extensions


def recorder(name: str) -> str:
    """An extension that appends its name to the shared ORDER list when registered and adds
    ' [name]' to every input."""
    return f"""
import builtins
def register(pi):
    builtins.PITRIO_TEST_ORDER.append({name!r})
    pi.on("input", lambda e, ctx: {{"action": "transform", "text": e.text + " [{name}]"}})
"""


@pytest.fixture
def order(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import builtins

    found: list[str] = []
    monkeypatch.setattr(builtins, "PITRIO_TEST_ORDER", found, raising=False)
    return found


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_load_order_is_project_then_global_then_explicit(
    tmp_path: Path, order: list[str]
) -> None:
    """Project extensions load first (by name), then global ones, then -e paths in order; a
    package directory loads through its __init__.py."""
    cwd, agent = tmp_path / "project", tmp_path / "agent"
    write(cwd / ".pitrio" / "extensions" / "b_project.py", recorder("b_project"))
    write(cwd / ".pitrio" / "extensions" / "a_project.py", recorder("a_project"))
    write(agent / "extensions" / "pkg" / "__init__.py", recorder("global_pkg"))
    write(agent / "extensions" / "notes.txt", "not an extension")
    explicit = write(tmp_path / "elsewhere" / "explicit.py", recorder("explicit"))
    runner = ExtensionRunner(cwd=str(cwd))
    await load_extensions(runner, agent_dir=str(agent), explicit=[str(explicit)])
    assert order == ["a_project", "b_project", "global_pkg", "explicit"]
    assert runner.load_errors == []
    result = await runner.input("x", None, "interactive")
    assert result is not None and result.text == "x [a_project] [b_project] [global_pkg] [explicit]"


async def test_failing_extensions_are_reported_and_skipped(
    tmp_path: Path, order: list[str]
) -> None:
    """A syntax error, a raising register and a missing register are recorded with their
    path; the extensions around them load."""
    ext = tmp_path / "project" / ".pitrio" / "extensions"
    write(ext / "a_ok.py", recorder("a_ok"))
    write(ext / "b_syntax.py", "def register(pi):\n    return (\n")
    write(
        ext / "c_raises.py",
        "def register(pi):\n    pi.on('input', print)\n    raise RuntimeError('nope')\n",
    )
    write(ext / "d_none.py", "X = 1\n")
    write(ext / "e_ok.py", recorder("e_ok"))
    runner = ExtensionRunner(cwd=str(tmp_path / "project"))
    await load_extensions(
        runner, agent_dir=str(tmp_path / "agent"), explicit=[str(tmp_path / "missing.py")]
    )
    assert order == ["a_ok", "e_ok"]
    assert [ext.path.rsplit("/", 1)[-1] for ext in runner.extensions] == ["a_ok.py", "e_ok.py"]
    errors = {Path(e.path).name: e.error for e in runner.load_errors}
    assert set(errors) == {"b_syntax.py", "c_raises.py", "d_none.py", "missing.py"}
    assert errors["b_syntax.py"].startswith("SyntaxError")
    assert errors["c_raises.py"] == "RuntimeError: nope"
    assert "register" in errors["d_none.py"]
    assert "does not exist" in errors["missing.py"]


async def test_async_register_and_no_extensions(tmp_path: Path, order: list[str]) -> None:
    """An async register is awaited; --no-extensions skips discovery but loads -e paths."""
    write(tmp_path / "project" / ".pitrio" / "extensions" / "p.py", recorder("p"))
    explicit = write(
        tmp_path / "x.py",
        "import builtins\nasync def register(pi):\n    builtins.PITRIO_TEST_ORDER.append('x')\n",
    )
    runner = ExtensionRunner(cwd=str(tmp_path / "project"))
    await load_extensions(
        runner, agent_dir=str(tmp_path / "agent"), explicit=[str(explicit)], no_extensions=True
    )
    assert order == ["x"]


async def test_entry_point_extensions_load_after_global_ones(
    tmp_path: Path, order: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package installed with a pitrio.extensions entry point (a real dist-info on sys.path)
    loads after the discovered extensions and before -e ones."""
    site = tmp_path / "site"
    write(site / "pitrio_test_entry_ext.py", recorder("entry_point"))
    info = site / "pitrio_test_entry_ext-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: pitrio-test-entry-ext\nVersion: 1.0\n")
    write(info / "entry_points.txt", "[pitrio.extensions]\nentry = pitrio_test_entry_ext\n")
    monkeypatch.syspath_prepend(str(site))
    write(tmp_path / "agent" / "extensions" / "g.py", recorder("global"))
    explicit = write(tmp_path / "e.py", recorder("explicit"))
    runner = ExtensionRunner(cwd=str(tmp_path / "project"))
    await load_extensions(runner, agent_dir=str(tmp_path / "agent"), explicit=[str(explicit)])
    assert order == ["global", "entry_point", "explicit"]
    order.clear()
    runner = ExtensionRunner(cwd=str(tmp_path / "project"))
    await load_extensions(runner, agent_dir=str(tmp_path / "agent"), no_extensions=True)
    assert order == []


# --------------------------------------------------------------------------- the CLI


CLI_EXTENSION = """
def register(pi):
    pi.register_flag("shout", type="boolean", default=False, description="upper-case input")
    pi.register_flag("suffix", type="string", default="")
    def on_input(event, ctx):
        text = event.text + pi.get_flag("suffix")
        return {"action": "transform", "text": text.upper() if pi.get_flag("shout") else text}
    pi.on("input", on_input)
    def broken(event, ctx):
        raise RuntimeError("agent_end handler broke")
    pi.on("agent_end", broken)
"""


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    cwd = home / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    return run_faux_cli(cwd, home, *args)


def test_cli_loads_e_paths_parses_their_flags_and_reports_handler_errors(tmp_path: Path) -> None:
    """-e loads a file; its --shout / --suffix=... flags reach get_flag; a handler error is
    printed as pi's 'Extension error (PATH): ...' and the run still answers."""
    ext = write(tmp_path / "cli_ext.py", CLI_EXTENSION)
    done = run_cli(tmp_path, "-e", str(ext), "--shout", "--suffix=!", "-p", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: HELLO!\n"
    assert f"Extension error ({ext}): agent_end handler broke" in done.stderr


def test_cli_no_extensions_skips_discovered_ones_but_keeps_e(tmp_path: Path) -> None:
    """--no-extensions: the project's extension does not load, the -e one does."""
    project_ext = tmp_path / "home" / "project" / ".pitrio" / "extensions" / "p.py"
    write(
        project_ext,
        'def register(pi):\n    pi.on("input", lambda e, c: {"action": "transform", "text": "project"})\n',
    )
    ext = write(tmp_path / "cli_ext.py", CLI_EXTENSION)
    done = run_cli(tmp_path, "-p", "hi")
    assert done.stdout == "You said: project\n", done.stderr
    done = run_cli(tmp_path, "--no-extensions", "-e", str(ext), "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hi\n"


def test_cli_unknown_long_flag_is_still_a_usage_error(tmp_path: Path) -> None:
    """A --flag no loaded extension registers exits with status 2."""
    done = run_cli(tmp_path, "--frobnicate", "-p", "hi")
    assert done.returncode == 2
    assert "unrecognized arguments: --frobnicate" in done.stderr
