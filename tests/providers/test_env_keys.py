"""get_env_api_key finds each provider's key in the environment, as pi-ai 0.73.1 does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitrio.providers._env_keys import (
    AUTHENTICATED,
    ENV_API_KEY_VARS,
    env_api_key_vars,
    find_env_keys,
    get_env_api_key,
)
from pitrio.providers._models import default_catalogue

SINGLE_VARIABLE = {
    "openai": "OPENAI_API_KEY",
    "azure-openai-responses": "AZURE_OPENAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "google": "GEMINI_API_KEY",
    "google-vertex": "GOOGLE_CLOUD_API_KEY",
    "groq": "GROQ_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "xai": "XAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "vercel-ai-gateway": "AI_GATEWAY_API_KEY",
    "zai": "ZAI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "minimax": "MINIMAX_API_KEY",
    "minimax-cn": "MINIMAX_CN_API_KEY",
    "moonshotai": "MOONSHOT_API_KEY",
    "moonshotai-cn": "MOONSHOT_API_KEY",
    "huggingface": "HF_TOKEN",
    "fireworks": "FIREWORKS_API_KEY",
    "opencode": "OPENCODE_API_KEY",
    "opencode-go": "OPENCODE_API_KEY",
    "kimi-coding": "KIMI_API_KEY",
    "cloudflare-workers-ai": "CLOUDFLARE_API_KEY",
    "cloudflare-ai-gateway": "CLOUDFLARE_API_KEY",
    "xiaomi": "XIAOMI_API_KEY",
    "xiaomi-token-plan-cn": "XIAOMI_TOKEN_PLAN_CN_API_KEY",
    "xiaomi-token-plan-ams": "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
    "xiaomi-token-plan-sgp": "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
}


@pytest.mark.parametrize("provider", SINGLE_VARIABLE)
def test_provider_key_comes_from_its_variable(provider: str) -> None:
    """Each provider reads pi's variable for it and no other."""
    variable = SINGLE_VARIABLE[provider]
    assert get_env_api_key(provider, {variable: "sk-test"}) == "sk-test"
    others = {name: "x" for name in SINGLE_VARIABLE.values() if name != variable}
    assert get_env_api_key(provider, others) is None


def test_table_is_pis() -> None:
    """The table has pi's 29 providers: the single-variable ones, Anthropic and Copilot."""
    assert set(ENV_API_KEY_VARS) == {*SINGLE_VARIABLE, "anthropic", "github-copilot"}
    assert env_api_key_vars("openai") == ("OPENAI_API_KEY",)
    assert env_api_key_vars("ollama") is None


def test_every_builtin_provider_has_a_credential_source() -> None:
    """Every provider of the packaged catalogue has a key variable, except Bedrock (AWS
    credentials) and OpenAI Codex (OAuth only)."""
    missing = set(default_catalogue.providers()) - set(ENV_API_KEY_VARS)
    assert missing == {"amazon-bedrock", "openai-codex"}


def test_anthropic_oauth_token_wins_over_api_key() -> None:
    """ANTHROPIC_OAUTH_TOKEN takes precedence over ANTHROPIC_API_KEY."""
    both = {"ANTHROPIC_API_KEY": "sk-ant-api", "ANTHROPIC_OAUTH_TOKEN": "sk-ant-oat"}
    assert get_env_api_key("anthropic", both) == "sk-ant-oat"
    assert get_env_api_key("anthropic", {"ANTHROPIC_API_KEY": "sk-ant-api"}) == "sk-ant-api"
    assert find_env_keys("anthropic", both) == ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]


def test_github_copilot_variables_in_order() -> None:
    """Copilot tries COPILOT_GITHUB_TOKEN, then GH_TOKEN, then GITHUB_TOKEN."""
    env = {"GITHUB_TOKEN": "c", "GH_TOKEN": "b"}
    assert get_env_api_key("github-copilot", env) == "b"
    assert get_env_api_key("github-copilot", {**env, "COPILOT_GITHUB_TOKEN": "a"}) == "a"
    assert get_env_api_key("github-copilot", {"GITHUB_TOKEN": "c"}) == "c"


def test_empty_variable_counts_as_unset() -> None:
    """An empty variable is skipped in favour of the next one, or gives no key."""
    env = {"ANTHROPIC_OAUTH_TOKEN": "", "ANTHROPIC_API_KEY": "sk"}
    assert get_env_api_key("anthropic", env) == "sk"
    assert find_env_keys("anthropic", env) == ["ANTHROPIC_API_KEY"]
    assert get_env_api_key("openai", {"OPENAI_API_KEY": ""}) is None
    assert find_env_keys("openai", {"OPENAI_API_KEY": ""}) is None


def test_unknown_and_local_providers_have_no_key() -> None:
    """Providers pi has no variable for (local servers, custom names) get None."""
    env = {"OPENAI_API_KEY": "sk", "OLLAMA_API_KEY": "x"}
    for provider in ("ollama", "vllm", "lmstudio", "llama.cpp", "my-proxy"):
        assert get_env_api_key(provider, env) is None
        assert find_env_keys(provider, env) is None


def test_default_environment_is_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit mapping the process environment is read."""
    monkeypatch.setenv("GROQ_API_KEY", "gsk_from_env")
    assert get_env_api_key("groq") == "gsk_from_env"
    monkeypatch.delenv("GROQ_API_KEY")
    assert get_env_api_key("groq") is None


# --------------------------------------------------------------------------- Vertex


def _vertex_env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "GOOGLE_CLOUD_PROJECT": "proj",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        **extra,
    }


def _default_adc(home: Path) -> Path:
    path = home / ".config" / "gcloud" / "application_default_credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    return path


def test_vertex_explicit_key_wins(tmp_path: Path) -> None:
    """GOOGLE_CLOUD_API_KEY is used when set, whatever else is configured."""
    _default_adc(tmp_path)
    env = _vertex_env(tmp_path, GOOGLE_CLOUD_API_KEY="AIza-key")
    assert get_env_api_key("google-vertex", env) == "AIza-key"


def test_vertex_application_default_credentials(tmp_path: Path) -> None:
    """The default ADC file plus project and location count as authenticated."""
    assert get_env_api_key("google-vertex", _vertex_env(tmp_path)) is None
    _default_adc(tmp_path)
    assert get_env_api_key("google-vertex", _vertex_env(tmp_path)) == AUTHENTICATED
    gcloud = _vertex_env(tmp_path)
    gcloud["GCLOUD_PROJECT"] = gcloud.pop("GOOGLE_CLOUD_PROJECT")
    assert get_env_api_key("google-vertex", gcloud) == AUTHENTICATED


def test_vertex_needs_project_and_location(tmp_path: Path) -> None:
    """Credentials without a project or a location are not enough."""
    _default_adc(tmp_path)
    no_location = _vertex_env(tmp_path)
    del no_location["GOOGLE_CLOUD_LOCATION"]
    no_project = _vertex_env(tmp_path)
    del no_project["GOOGLE_CLOUD_PROJECT"]
    assert get_env_api_key("google-vertex", no_location) is None
    assert get_env_api_key("google-vertex", no_project) is None


def test_vertex_explicit_credentials_file(tmp_path: Path) -> None:
    """GOOGLE_APPLICATION_CREDENTIALS names the file; when it is missing the default file is
    not consulted."""
    _default_adc(tmp_path)
    key_file = tmp_path / "sa.json"
    env = _vertex_env(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(key_file))
    assert get_env_api_key("google-vertex", env) is None
    key_file.write_text("{}")
    assert get_env_api_key("google-vertex", env) == AUTHENTICATED


# --------------------------------------------------------------------------- Bedrock


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_PROFILE": "dev"},
        {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "secret"},
        {"AWS_BEARER_TOKEN_BEDROCK": "tok"},
        {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"},
        {"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.2/creds"},
        {"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/token"},
    ],
    ids=lambda env: "+".join(env),
)
def test_bedrock_credential_sources(env: dict[str, str]) -> None:
    """Any of the AWS credential sources pi knows makes Bedrock authenticated."""
    assert get_env_api_key("amazon-bedrock", env) == AUTHENTICATED


def test_bedrock_access_key_needs_its_secret() -> None:
    """An access key id alone is not a credential."""
    assert get_env_api_key("amazon-bedrock", {"AWS_ACCESS_KEY_ID": "AKIA"}) is None
    assert get_env_api_key("amazon-bedrock", {}) is None
