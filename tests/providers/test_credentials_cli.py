"""``pitrio auth status|print-api-key|logout|login`` over real agent dirs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pitrio.cli._auth import auth_main
from pitrio.cli._main import main


def _home(
    tmp_path: Path, pitrio: dict[str, Any] | None = None, pi: dict[str, Any] | None = None
) -> dict[str, str]:
    for folder, data in ((".pitrio", pitrio), (".pi", pi)):
        if data is not None:
            agent = tmp_path / folder / "agent"
            agent.mkdir(parents=True)
            (agent / "auth.json").write_text(json.dumps(data))
    return {"HOME": str(tmp_path)}


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = auth_main(argv, env=env, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_status_lists_sources_without_secrets(tmp_path: Path) -> None:
    """``status`` names each provider's source (pitrio's file, pi's file, a variable) and never
    prints a key."""
    env = _home(
        tmp_path,
        pitrio={"anthropic": {"type": "api_key", "key": "sk-secret-1"}},
        pi={
            "openai-codex": {"type": "oauth", "access": "at-secret", "refresh": "rt", "expires": 0}
        },
    )
    env["GEMINI_API_KEY"] = "sk-secret-2"
    code, out, _ = _run(["status"], env)
    assert code == 0
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines["anthropic"] == f"api_key in {tmp_path}/.pitrio/agent/auth.json"
    assert lines["openai-codex"].startswith("oauth (expires 1970-01-01 00:00 UTC) in ")
    assert lines["openai-codex"].endswith(f"{tmp_path}/.pi/agent/auth.json")
    assert lines["google"] == "environment variable GEMINI_API_KEY"
    assert "secret" not in out


def test_print_api_key_resolves_like_a_request(tmp_path: Path) -> None:
    """``print-api-key`` prints the resolved key (a variable named by pi's entry here); a
    provider without one exits 1."""
    env = _home(tmp_path, pi={"openai": {"type": "api_key", "key": "MY_KEY"}})
    env["MY_KEY"] = "sk-resolved"
    assert _run(["print-api-key", "openai"], env) == (0, "sk-resolved\n", "")
    code, out, err = _run(["print-api-key", "mistral"], env)
    assert (code, out) == (1, "")
    assert "no API key found for mistral" in err


def test_logout_removes_pitrio_entry_and_reports_pi_entry(tmp_path: Path) -> None:
    """``logout`` removes the entry from pitrio's auth.json, leaves pi's and says it is
    still used."""
    entry = {"type": "api_key", "key": "k"}
    env = _home(tmp_path, pitrio={"openai": entry, "x": entry}, pi={"openai": entry})
    code, out, _ = _run(["logout", "openai"], env)
    assert code == 0
    assert "removed from" in out and "pi's entry" in out
    assert json.loads((tmp_path / ".pitrio" / "agent" / "auth.json").read_text()) == {"x": entry}
    assert json.loads((tmp_path / ".pi" / "agent" / "auth.json").read_text()) == {"openai": entry}
    assert _run(["logout", "openai"], env)[0] == 1


def test_login_is_not_available_yet(capsys: pytest.CaptureFixture[str]) -> None:
    """``pitrio auth login`` says logins are not available yet and exits 1."""
    assert main(["auth", "login", "openai-codex"]) == 1
    assert "logins are not available yet" in capsys.readouterr().err
