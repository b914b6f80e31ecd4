"""The agent command's flags: parsing, model and key resolution, sessions, --list-models.

These run in the test process (no subprocess): they call the functions ``pitrio`` runs before
it starts Trio, with an explicit environment and an agent dir under ``tmp_path``.
"""

from __future__ import annotations

import datetime
import io
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from pitrio.cli._faux_cli import echo_reply
from pitrio.cli._main import build_prompts, parse_cli_args, read_piped_stdin
from pitrio.cli._setup import (
    CliArgs,
    CliError,
    Runtime,
    build_runtime,
    format_model_table,
    list_models,
    load_model_setup,
)
from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    UserMessage,
    default_catalogue,
)
from pitrio.sessions import SessionManager


@attrs.define
class Env:
    """An agent dir and project dir under tmp_path, with an environment holding no keys."""

    root: Path
    vars: dict[str, str]
    warnings: list[str] = attrs.field(factory=list)

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    @property
    def cwd(self) -> str:
        return str(self.root / "project")

    def write(self, name: str, data: Any) -> Path:
        path = self.agent_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    def runtime(self, *argv: str, require_auth: bool = True) -> Runtime:
        return build_runtime(
            parse_cli_args(argv),
            cwd=self.cwd,
            env=self.vars,
            warn=self.warnings.append,
            require_auth=require_auth,
        )

    def session_files(self) -> list[Path]:
        return sorted((self.agent_dir / "sessions").glob("*/*.jsonl"))


@pytest.fixture
def env(tmp_path: Path) -> Env:
    (tmp_path / "project").mkdir()
    return Env(
        tmp_path,
        {"HOME": str(tmp_path / "home"), "PITRIO_CODING_AGENT_DIR": str(tmp_path / "agent")},
    )


LOCAL_PROVIDER = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "local-key",
            "headers": {"X-Team": "TEAM_VAR"},
            "models": [{"id": "local-model"}],
        }
    }
}


def shown(model: Model) -> str:
    return f"{model.provider}/{model.id}"


# --------------------------------------------------------------------------- parsing


def test_print_flag_and_messages_parse_in_any_order() -> None:
    """Messages may come before, between and after flags; ``-p`` takes no value of its own."""
    args = parse_cli_args(["first", "--provider", "faux", "-p", "second", "--model", "faux-1"])
    assert args.messages == ("first", "second")
    assert args.print_mode is True
    assert (args.provider, args.model) == ("faux", "faux-1")


def test_list_models_takes_an_optional_search() -> None:
    """``--list-models`` alone lists everything; a following word is a search."""
    assert parse_cli_args(["--list-models"]).list_models is True
    assert parse_cli_args(["--list-models", "sonnet"]).list_models == "sonnet"
    assert parse_cli_args([]).list_models is None


def test_session_flags_and_repeated_system_prompt_appends_parse() -> None:
    """Session flags and the repeatable ``--append-system-prompt`` are read."""
    args = parse_cli_args(
        ["-c", "--session-dir", "/s", "--append-system-prompt", "a", "--append-system-prompt", "b"]
    )
    assert args.continue_session is True
    assert args.session_dir == "/s"
    assert args.append_system_prompt == ("a", "b")
    assert parse_cli_args(["--no-session", "--mode", "json"]).no_session is True


def test_unknown_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown short flag exits with status 2 and the usage; an unknown ``--flag`` is kept
    for the extensions (tests/extensions/test_cli.py: a usage error if none registers it)."""
    with pytest.raises(SystemExit) as exc:
        parse_cli_args(["-Z"])
    assert exc.value.code == 2
    assert "usage: pitrio" in capsys.readouterr().err
    assert parse_cli_args(["--frobnicate"]).extension_flags == ("--frobnicate",)


def test_piped_stdin_is_joined_with_the_first_message() -> None:
    """Piped text comes first, glued to the first message as pi glues them; the rest follow."""
    assert build_prompts(["a", "b"], "piped\n") == ["piped\na", "b"]
    assert build_prompts([], "only stdin") == ["only stdin"]
    assert build_prompts(["a"], None) == ["a"]
    assert build_prompts([], None) == []


def test_stdin_is_read_only_when_it_is_not_a_terminal() -> None:
    """A terminal is not read; piped text is trimmed; blank input is no input."""
    assert read_piped_stdin(io.BytesIO(b"  hello \n"), is_tty=False) == "hello"
    assert read_piped_stdin(io.BytesIO(b"ignored"), is_tty=True) is None
    assert read_piped_stdin(io.BytesIO(b" \n"), is_tty=False) is None
    assert read_piped_stdin(None, is_tty=False) is None


# --------------------------------------------------------------------------- models and keys


def test_no_key_anywhere_explains_how_to_set_up_a_provider(env: Env) -> None:
    """Without any key the error names the key variables, models.json and the faux provider."""
    with pytest.raises(CliError) as exc:
        env.runtime("-p", "hi")
    message = str(exc.value)
    assert exc.value.exit_code == 1
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "Ollama"):
        assert name in message
    assert str(env.agent_dir / "models.json") in message
    assert "--provider faux" in message


def test_provider_faux_needs_no_key(env: Env) -> None:
    """``--provider faux`` alone selects faux/faux-1."""
    runtime = env.runtime("--provider", "faux", "-p", "hi")
    assert shown(runtime.model) == "faux/faux-1"
    runtime.session_manager.close()


def test_env_key_selects_that_providers_default_model(env: Env) -> None:
    """With only OPENAI_API_KEY set, the default model is pi's default for openai."""
    env.vars["OPENAI_API_KEY"] = "sk-test"
    runtime = env.runtime("-p", "hi")
    assert shown(runtime.model) == "openai/gpt-5.4"
    runtime.session_manager.close()


def test_local_models_json_provider_counts_as_configured(env: Env) -> None:
    """A models.json provider with an apiKey is chosen when no environment key is set."""
    env.write("models.json", LOCAL_PROVIDER)
    runtime = env.runtime("-p", "hi")
    assert shown(runtime.model) == "local/local-model"
    runtime.session_manager.close()


def test_settings_default_model_wins_over_the_first_available(env: Env) -> None:
    """``defaultProvider``/``defaultModel`` in settings.json choose the model."""
    env.vars["OPENAI_API_KEY"] = "sk-test"
    env.write("settings.json", {"defaultProvider": "openai", "defaultModel": "gpt-4o-mini"})
    runtime = env.runtime("-p", "hi")
    assert shown(runtime.model) == "openai/gpt-4o-mini"
    runtime.session_manager.close()


def test_settings_default_without_a_key_fails_with_setup_help(env: Env) -> None:
    """A default model whose provider has no key is an error that says how to add one."""
    env.write("settings.json", {"defaultProvider": "anthropic", "defaultModel": "claude-opus-4-7"})
    with pytest.raises(CliError) as exc:
        env.runtime("-p", "hi")
    assert str(exc.value).startswith("No API key found for anthropic.")
    assert "ANTHROPIC_API_KEY" in str(exc.value)


def test_model_flag_with_thinking_suffix_and_thinking_flag(env: Env) -> None:
    """``--model provider/id:level`` sets the level; ``--thinking`` overrides it."""
    env.vars["ANTHROPIC_API_KEY"] = "sk-ant"
    runtime = env.runtime("--model", "anthropic/claude-sonnet-4-5:high", "-p", "hi")
    assert (shown(runtime.model), runtime.thinking_level) == (
        "anthropic/claude-sonnet-4-5",
        "high",
    )
    runtime.session_manager.close()
    runtime = env.runtime(
        "--model", "anthropic/claude-sonnet-4-5:high", "--thinking", "low", "-p", "hi"
    )
    assert runtime.thinking_level == "low"
    runtime.session_manager.close()


def test_invalid_thinking_level_is_a_warning(env: Env) -> None:
    """An unknown ``--thinking`` value is reported and ignored, as pi does."""
    runtime = env.runtime("--provider", "faux", "--thinking", "extreme", "-p", "hi")
    assert runtime.thinking_level is None
    assert env.warnings == [
        'Invalid thinking level "extreme". Valid values: off, minimal, low, medium, high, xhigh'
    ]
    runtime.session_manager.close()


def test_unknown_model_and_provider_are_errors(env: Env) -> None:
    """Unknown names fail before any session is created."""
    with pytest.raises(CliError, match='Model "no-such-model" not found'):
        env.runtime("--model", "no-such-model", "-p", "hi")
    with pytest.raises(CliError, match='Unknown provider "nope"'):
        env.runtime("--provider", "nope", "-p", "hi")
    assert env.session_files() == []


def test_api_key_flag_authorises_the_chosen_provider(env: Env) -> None:
    """``--api-key`` is the key of the chosen model's provider and needs a chosen model."""
    runtime = env.runtime("--model", "openai/gpt-4o-mini", "--api-key", "sk-flag", "-p", "hi")
    credentials = runtime.setup.credentials
    assert credentials.key("openai") == "sk-flag"
    assert credentials.key("anthropic") is None
    runtime.session_manager.close()
    with pytest.raises(CliError, match="--api-key requires a model"):
        env.runtime("--api-key", "sk-flag", "-p", "hi")


async def test_request_auth_order_flag_then_env_then_models_json(env: Env) -> None:
    """Requests carry --api-key, else the env key, else models.json's key, plus its headers."""
    env.write("models.json", LOCAL_PROVIDER)
    env.vars["TEAM_VAR"] = "blue"
    setup = load_model_setup(str(env.agent_dir), env.vars)
    local = next(m for m in setup.models if m.provider == "local")
    options = await setup.credentials.authorize(local, StreamOptions())
    assert options.api_key == "local-key"
    assert options.headers == {"X-Team": "blue"}
    setup.credentials.set_runtime_key("local", "from-flag")
    options = await setup.credentials.authorize(local, StreamOptions())
    assert options.api_key == "from-flag"
    openai = next(m for m in setup.models if m.provider == "openai")
    env.vars["OPENAI_API_KEY"] = "sk-env"
    assert (await setup.credentials.authorize(openai, StreamOptions())).api_key == "sk-env"


def test_broken_models_json_is_a_warning_and_builtins_stay(env: Env) -> None:
    """A models.json that does not parse is reported; the built-in models remain usable."""
    env.write("models.json", "{not json")
    env.vars["OPENAI_API_KEY"] = "sk-test"
    runtime = env.runtime("-p", "hi")
    assert shown(runtime.model) == "openai/gpt-5.4"
    assert len(env.warnings) == 1
    assert env.warnings[0].startswith("errors loading models.json:")
    runtime.session_manager.close()


# --------------------------------------------------------------------------- sessions


def test_default_session_is_a_file_in_the_cwd_folder(env: Env) -> None:
    """Without session flags the session is file-backed under the agent dir's sessions."""
    runtime = env.runtime("--provider", "faux", "-p", "hi")
    path = runtime.session_manager.get_session_file()
    assert path is not None
    assert Path(path).parent.parent == env.agent_dir / "sessions"
    runtime.session_manager.close()


def test_no_session_is_in_memory(env: Env) -> None:
    """``--no-session`` keeps the session in memory."""
    runtime = env.runtime("--provider", "faux", "--no-session", "-p", "hi")
    assert runtime.session_manager.get_session_file() is None
    assert not (env.agent_dir / "sessions").exists()


def test_session_dir_flag_and_env(env: Env, tmp_path: Path) -> None:
    """``--session-dir`` beats PITRIO_CODING_AGENT_SESSION_DIR, which beats the default."""
    env.vars["PITRIO_CODING_AGENT_SESSION_DIR"] = str(tmp_path / "from-env")
    runtime = env.runtime("--provider", "faux", "-p", "hi")
    assert runtime.session_manager.get_session_dir() == str(tmp_path / "from-env")
    runtime.session_manager.close()
    runtime = env.runtime("--provider", "faux", "--session-dir", str(tmp_path / "flag"), "-p", "x")
    assert runtime.session_manager.get_session_dir() == str(tmp_path / "flag")
    runtime.session_manager.close()


def _saved_session(env: Env, text: str) -> SessionManager:
    manager = SessionManager.create(env.cwd, env.agent_dir / "sessions" / "--project--")
    manager.append_model_change("faux", "faux-1")
    manager.append_message(UserMessage(content=text, timestamp=1))
    manager.append_message(
        AssistantMessage(
            content=(TextContent(text="ok"),),
            api="faux",
            provider="faux",
            model="faux-1",
            stop_reason="stop",
            timestamp=2,
        )
    )
    manager.close()
    return manager


def test_session_id_prefix_opens_that_session_and_restores_its_model(env: Env) -> None:
    """``--session <id prefix>`` opens the matching session of the directory and its model."""
    saved = _saved_session(env, "earlier")
    args = ("--session", saved.get_session_id()[:8], "--session-dir")
    runtime = env.runtime(*args, str(env.agent_dir / "sessions" / "--project--"), "-p", "x")
    assert runtime.session_manager.get_session_file() == saved.get_session_file()
    assert shown(runtime.model) == "faux/faux-1"
    runtime.session_manager.close()
    with pytest.raises(CliError, match="No session found matching 'ffffffff'"):
        env.runtime("--session", "ffffffff", "-p", "x")


def test_session_from_a_missing_directory_is_refused(env: Env, tmp_path: Path) -> None:
    """A session recorded in a directory that no longer exists is an error, as in pi."""
    manager = SessionManager.create(tmp_path / "gone", tmp_path / "elsewhere")
    manager.append_message(UserMessage(content="hi", timestamp=1))
    manager.append_message(
        AssistantMessage(
            content=(), api="faux", provider="faux", model="faux-1", stop_reason="stop", timestamp=2
        )
    )
    manager.close()
    path = manager.get_session_file()
    assert path is not None
    with pytest.raises(CliError, match="Stored session working directory does not exist"):
        env.runtime("--provider", "faux", "--session", path, "-p", "hi")


# --------------------------------------------------------------------------- prompt, models table


def test_system_prompt_from_file_with_appends_date_and_cwd(env: Env, tmp_path: Path) -> None:
    """``--system-prompt`` may name a file; appends follow; date and cwd end the prompt."""
    (tmp_path / "prompt.md").write_text("Be a pirate.")
    runtime = env.runtime(
        "--system-prompt",
        str(tmp_path / "prompt.md"),
        "--append-system-prompt",
        "Say arr.",
        "--append-system-prompt",
        "Twice.",
        "--no-session",
        "--provider",
        "faux",
    )
    prompt = runtime.resources.load().build_system_prompt(
        list(runtime.tool_names), today=datetime.date(2025, 3, 4)
    )
    assert prompt == (
        "Be a pirate.\n\nSay arr.\n\nTwice.\n"
        f"Current date: 2025-03-04\nCurrent working directory: {env.cwd}"
    )
    default = env.runtime("--no-session", "--provider", "faux").resources.load()
    assert default.build_system_prompt(["read"]).startswith(
        "You are an expert coding assistant operating inside pitrio"
    )


def test_model_table_filters_fuzzily_and_sorts_like_pi() -> None:
    """Rows are sorted by provider then id (punctuation before digits before letters); every
    search word must appear in order in "provider id", or with its letters and digits swapped."""
    base = default_catalogue.get("openai", "gpt-4o-mini")
    assert base is not None

    def model(provider: str, model_id: str, **changes: Any) -> Model:
        return attrs.evolve(base, provider=provider, id=model_id, **changes)

    models = [
        model("zeta", "o4-mini"),
        model("openai", "gpt-4o-mini", context_window=1_500_000, max_tokens=16_384),
        model("openai", "gpt-4-turbo"),
        model("openai", "_4o-mini"),
        model("acme", "large-2", reasoning=True, input=("text",)),
    ]
    lines = format_model_table(models, "4o mini").splitlines()
    assert lines[0].split() == ["provider", "model", "context", "max-out", "thinking", "images"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1]) for r in rows] == [
        ("openai", "_4o-mini"),
        ("openai", "gpt-4o-mini"),
        ("zeta", "o4-mini"),
    ]
    assert rows[1][2:] == ["1.5M", "16.4K", "no", "yes"]
    assert len({len(line) for line in lines}) == 1  # columns padded to one width
    everything = [line.split() for line in format_model_table(models).splitlines()[1:]]
    assert everything[0] == ["acme", "large-2", "128K", "16.4K", "yes", "no"]
    assert format_model_table(models, "zzzz") == 'No models matching "zzzz"\n'


def table_providers(output: str) -> list[str]:
    """The provider column of a --list-models table (the rows before any blank line)."""
    rows = output.split("\n\n")[0].splitlines()[1:]
    return [line.split()[0] for line in rows]


def test_list_models_shows_only_models_with_keys(env: Env) -> None:
    """Without keys only faux is listed; a key adds its provider's models."""
    table, _ = list_models(CliArgs(list_models=True), env=env.vars)
    assert table_providers(table) == ["faux"]
    env.vars["GROQ_API_KEY"] = "gsk"
    table, _ = list_models(CliArgs(list_models=True), env=env.vars)
    assert set(table_providers(table)) == {"faux", "groq"}


def test_a_search_without_keys_explains_that_keys_are_the_reason(env: Env) -> None:
    """``--list-models sonnet`` with no key says models need a key, and how to set one."""
    output, _ = list_models(CliArgs(list_models="sonnet"), env=env.vars)
    first, _, rest = output.partition("\n")
    assert first == 'No models matching "sonnet"'
    assert "Models are listed only for providers with a configured API key" in rest
    assert "anthropic" in rest.split("\n\n")[0]
    assert "export ANTHROPIC_API_KEY=..." in rest
    assert "--provider faux" in rest


def test_a_listing_without_keys_says_why_only_faux_is_listed(env: Env) -> None:
    """``--list-models`` with no key lists faux and says that keys are missing."""
    output, _ = list_models(CliArgs(list_models=True), env=env.vars)
    assert "models are listed only for providers with a configured API key" in output
    assert "export OPENAI_API_KEY=..." in output


def test_no_hint_when_keys_are_not_the_reason(env: Env) -> None:
    """With a key, a listing and a search that matches nothing at all carry no hint."""
    env.vars["GROQ_API_KEY"] = "gsk"
    output, _ = list_models(CliArgs(list_models=True), env=env.vars)
    assert "configured API key" not in output
    output, _ = list_models(CliArgs(list_models="zzzzqqq"), env=env.vars)
    assert output == 'No models matching "zzzzqqq"\n'
    output, _ = list_models(CliArgs(list_models="sonnet"), env=env.vars)
    assert "Models are listed only for providers with a configured API key" in output


def test_faux_reply_echoes_the_last_user_message_and_counts_turns() -> None:
    """The faux model answers from the context it is sent."""
    first = Context(messages=[UserMessage(content="hello", timestamp=1)])
    assert echo_reply(first) == "You said: hello"
    second = Context(
        messages=[
            *first.messages,
            AssistantMessage(
                content=(),
                api="faux",
                provider="faux",
                model="faux-1",
                stop_reason="stop",
                timestamp=2,
            ),
            UserMessage(content=[TextContent(text="again")], timestamp=3),
        ]
    )
    assert echo_reply(second) == "You said: again (message 2 in this conversation)"
