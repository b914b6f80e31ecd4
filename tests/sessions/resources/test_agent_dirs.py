"""pitrio writes to its own agent dir and reads a pi user's ``~/.pi/agent`` as a fallback."""

from __future__ import annotations

from pathlib import Path

from pitrio.sessions.resources import resolve_agent_dirs


def test_no_pi_dir_means_no_fallback(tmp_path: Path) -> None:
    """Without ``~/.pi/agent`` only pitrio's dir is used."""
    dirs = resolve_agent_dirs({}, home=str(tmp_path))
    assert dirs.write_dir == str(tmp_path / ".pitrio" / "agent")
    assert dirs.fallback_dirs == ()
    assert dirs.config_file("models.json") == str(tmp_path / ".pitrio" / "agent" / "models.json")


def test_pi_files_are_read_until_pitrio_has_its_own(tmp_path: Path) -> None:
    """models.json comes from pi's dir (with a notice) until pitrio's dir has one."""
    pi_dir = tmp_path / ".pi" / "agent"
    (pi_dir / "sessions").mkdir(parents=True)
    (pi_dir / "models.json").write_text("{}")
    dirs = resolve_agent_dirs({}, home=str(tmp_path))
    assert dirs.fallback_dirs == (str(pi_dir),)
    path = dirs.config_file("models.json")
    assert path == str(pi_dir / "models.json")
    notice = dirs.fallback_notice(path)
    assert notice is not None and str(pi_dir / "models.json") in notice
    assert dirs.resource_dir() == str(pi_dir)
    assert dirs.session_dirs() == (
        str(tmp_path / ".pitrio" / "agent" / "sessions"),
        str(pi_dir / "sessions"),
    )
    own = tmp_path / ".pitrio" / "agent"
    own.mkdir(parents=True)
    (own / "models.json").write_text("{}")
    assert dirs.config_file("models.json") == str(own / "models.json")
    assert dirs.fallback_notice(str(own / "models.json")) is None
    assert dirs.config_file("settings.json") == str(own / "settings.json")
    assert dirs.resource_dir() == str(own)


def test_environment_variables(tmp_path: Path) -> None:
    """``PI_CODING_AGENT_DIR`` moves pi's dir; ``PITRIO_CODING_AGENT_DIR`` wins and disables it."""
    pi_dir = tmp_path / "elsewhere"
    pi_dir.mkdir()
    dirs = resolve_agent_dirs({"PI_CODING_AGENT_DIR": str(pi_dir)}, home=str(tmp_path))
    assert dirs.fallback_dirs == (str(pi_dir),)
    explicit = resolve_agent_dirs(
        {"PI_CODING_AGENT_DIR": str(pi_dir), "PITRIO_CODING_AGENT_DIR": "~/mine"},
        home=str(tmp_path),
    )
    assert explicit.write_dir == str(tmp_path / "mine")
    assert explicit.fallback_dirs == ()
