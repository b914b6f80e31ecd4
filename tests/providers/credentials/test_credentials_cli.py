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


@pytest.mark.parametrize("provider", ["anthropic", "github-copilot"])
def test_subscription_login_is_refused_with_its_terms(
    provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pitrio auth login anthropic|github-copilot`` is refused; ``--subscription-terms`` first
    prints the provider's terms problem, then says the sign-in is not available."""
    assert main(["auth", "login", provider]) == 1
    assert "--subscription-terms" in capsys.readouterr().err
    assert main(["auth", "login", provider, "--subscription-terms"]) == 1
    err = capsys.readouterr().err
    assert "terms" in err.splitlines()[0] or "reserves" in err.splitlines()[0]
    assert err.rstrip().endswith("subscription sign-in is not available.")


def test_login_unknown_provider_names_the_available_ones(tmp_path: Path) -> None:
    """A provider without a sign-in is an error listing the ones there are."""
    code, _, err = _run(["login", "mistral"], _home(tmp_path))
    assert code == 1
    assert "no sign-in for mistral (available: openai-codex)" in err


def test_codex_has_no_device_code_login(tmp_path: Path) -> None:
    """pi offers no device-code sign-in for OpenAI Codex, so ``--device-code`` is an error."""
    code, _, err = _run(["login", "openai-codex", "--device-code", "--no-browser"], _home(tmp_path))
    assert code == 1
    assert "has no device-code sign-in" in err
