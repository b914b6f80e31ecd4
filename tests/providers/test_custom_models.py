"""models.json adds and adjusts providers and models as pi-coding-agent 0.73.1 does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from pitrio.providers._custom_models import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    CustomModels,
    ModelsJsonError,
    RequestAuthError,
    load_models_json,
    parse_models_json,
    resolve_config_value,
    strip_json_comments,
)
from pitrio.providers._messages import Model, ModelCost
from pitrio.providers._models import ModelCatalogue, default_catalogue
from pitrio.providers._registry import ProviderError


def _builtin(provider: str, model_id: str, **fields: Any) -> Model:
    defaults: dict[str, Any] = {
        "name": model_id.title(),
        "api": "anthropic-messages",
        "base_url": f"https://api.{provider}.example",
        "context_window": 200_000,
        "max_tokens": 64_000,
        "cost": ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
    }
    return Model(id=model_id, provider=provider, **{**defaults, **fields})


def _base() -> ModelCatalogue:
    return ModelCatalogue(
        [
            _builtin("anthropic", "claude-sonnet-4-5", reasoning=True),
            _builtin(
                "anthropic",
                "claude-opus-4-5",
                reasoning=True,
                thinking_level_map={"xhigh": "max"},
                headers={"anthropic-beta": "x"},
            ),
            _builtin(
                "openrouter",
                "anthropic/claude-sonnet-4",
                api="openai-completions",
                compat={"openRouterRouting": {"order": ["anthropic"]}, "supportsStore": True},
            ),
            _builtin("cloudflare", "kimi", api="openai-completions", compat={"affinity": True}),
        ],
        builtin=False,
    )


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "models.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _models(custom: CustomModels, provider: str) -> dict[str, Model]:
    return {m.id: m for m in custom.catalogue.models(provider)}


OLLAMA = {
    "baseUrl": "http://localhost:11434/v1",
    "api": "openai-completions",
    "apiKey": "ollama",
    "models": [{"id": "llama3.1:8b"}, {"id": "qwen2.5-coder:7b"}],
}


# --------------------------------------------------------------------------- custom providers


def test_minimal_custom_provider_gets_pis_defaults(tmp_path: Path) -> None:
    """Only ``id`` is required: name, reasoning, input, cost, window and max tokens default as in
    pi, and api/baseUrl come from the provider entry."""
    custom = load_models_json(_write(tmp_path, {"providers": {"ollama": OLLAMA}}))
    llama = custom.catalogue.get("ollama", "llama3.1:8b")
    assert llama == Model(
        id="llama3.1:8b",
        name="llama3.1:8b",
        api="openai-completions",
        provider="ollama",
        base_url="http://localhost:11434/v1",
        reasoning=False,
        input=("text",),
        cost=ModelCost(),
        context_window=DEFAULT_CONTEXT_WINDOW,
        max_tokens=DEFAULT_MAX_TOKENS,
    )
    assert (DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS) == (128_000, 16_384)
    assert list(_models(custom, "ollama")) == ["llama3.1:8b", "qwen2.5-coder:7b"]
    assert custom.path == tmp_path / "models.json"


def test_builtin_models_stay_and_the_base_is_not_modified(tmp_path: Path) -> None:
    """The packaged catalogue is kept next to the custom provider, and is itself unchanged."""
    before = default_catalogue.providers()
    custom = load_models_json(_write(tmp_path, {"providers": {"ollama": OLLAMA}}))
    assert custom.catalogue.get("anthropic", "claude-sonnet-4-5") == default_catalogue.get(
        "anthropic", "claude-sonnet-4-5"
    )
    assert custom.catalogue.providers() == [*before, "ollama"]
    assert default_catalogue.providers() == before
    assert default_catalogue.get("ollama", "llama3.1:8b") is None


def test_full_model_definition(tmp_path: Path) -> None:
    """Every field of a model definition is taken over; a model may override api and baseUrl."""
    definition = {
        "id": "qwen3",
        "name": "Qwen 3 (local)",
        "api": "openai-responses",
        "baseUrl": "http://gpu-box:8000/v1",
        "reasoning": True,
        "thinkingLevelMap": {"off": None, "high": "max"},
        "input": ["text", "image"],
        "cost": {"input": 1, "output": 2.5, "cacheRead": 0.1, "cacheWrite": 0},
        "contextWindow": 32768,
        "maxTokens": 4096.0,
    }
    config = {"providers": {"local": {**OLLAMA, "models": [definition]}}}
    model = parse_models_json(config, base=_base()).catalogue.get("local", "qwen3")
    assert model == Model(
        id="qwen3",
        name="Qwen 3 (local)",
        api="openai-responses",
        provider="local",
        base_url="http://gpu-box:8000/v1",
        reasoning=True,
        thinking_level_map={"off": None, "high": "max"},
        input=("text", "image"),
        cost=ModelCost(input=1, output=2.5, cache_read=0.1, cache_write=0),
        context_window=32768,
        max_tokens=4096,
    )
    assert isinstance(model.max_tokens, int)


def test_provider_compat_is_merged_under_model_compat() -> None:
    """Model compat wins key by key over provider compat; routing objects merge key by key."""
    provider = {
        **OLLAMA,
        "compat": {
            "supportsDeveloperRole": False,
            "supportsReasoningEffort": False,
            "openRouterRouting": {"only": ["a"], "order": ["x"]},
        },
        "models": [
            {"id": "plain"},
            {
                "id": "special",
                "compat": {"supportsReasoningEffort": True, "openRouterRouting": {"order": ["y"]}},
            },
        ],
    }
    models = _models(parse_models_json({"providers": {"p": provider}}, base=_base()), "p")
    assert models["plain"].compat == provider["compat"]
    assert models["special"].compat == {
        "supportsDeveloperRole": False,
        "supportsReasoningEffort": True,
        "openRouterRouting": {"only": ["a"], "order": ["y"]},
    }
    assert (
        _models(parse_models_json({"providers": {"p": OLLAMA}}, base=_base()), "p")[
            "llama3.1:8b"
        ].compat
        is None
    )


# --------------------------------------------------------------------------- built-in providers


def test_provider_override_changes_base_url_of_every_builtin_model() -> None:
    """A built-in provider with only ``baseUrl`` keeps its models and routes them via the proxy."""
    base = _base()
    custom = parse_models_json(
        {"providers": {"anthropic": {"baseUrl": "https://proxy.example.com/v1"}}}, base=base
    )
    models = _models(custom, "anthropic")
    assert set(models) == {"claude-sonnet-4-5", "claude-opus-4-5"}
    assert {m.base_url for m in models.values()} == {"https://proxy.example.com/v1"}
    assert models["claude-opus-4-5"].headers == {"anthropic-beta": "x"}
    assert custom.catalogue.get("openrouter", "anthropic/claude-sonnet-4") == base.get(
        "openrouter", "anthropic/claude-sonnet-4"
    )
    assert base.get("anthropic", "claude-sonnet-4-5").base_url == "https://api.anthropic.example"  # type: ignore[union-attr]


def test_provider_compat_override_merges_into_builtin_compat() -> None:
    """Provider-level compat on a built-in provider is merged into each model's compat."""
    custom = parse_models_json(
        {"providers": {"cloudflare": {"compat": {"supportsStore": False}}}}, base=_base()
    )
    assert custom.catalogue.get("cloudflare", "kimi").compat == {  # type: ignore[union-attr]
        "affinity": True,
        "supportsStore": False,
    }


def test_custom_models_are_upserted_into_a_builtin_provider() -> None:
    """A custom model replaces the built-in one with its id, or is added; api and baseUrl default
    to the provider's first built-in model; other built-ins stay."""
    custom = parse_models_json(
        {
            "providers": {
                "anthropic": {
                    "models": [
                        {"id": "claude-sonnet-4-5", "name": "Mine", "contextWindow": 1000},
                        {"id": "claude-next"},
                    ]
                }
            }
        },
        base=_base(),
    )
    models = _models(custom, "anthropic")
    assert list(models) == ["claude-sonnet-4-5", "claude-opus-4-5", "claude-next"]
    replaced = models["claude-sonnet-4-5"]
    assert (replaced.name, replaced.context_window, replaced.reasoning) == ("Mine", 1000, False)
    assert replaced.cost == ModelCost()
    assert (models["claude-next"].api, models["claude-next"].base_url) == (
        "anthropic-messages",
        "https://api.anthropic.example",
    )
    assert models["claude-opus-4-5"].name == "Claude-Opus-4-5"


def test_model_overrides_patch_single_builtin_models() -> None:
    """modelOverrides change the named fields, merge cost, thinking map and compat, and ignore
    unknown ids."""
    override = {
        "name": "Sonnet via Bedrock",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 9},
        "thinkingLevelMap": {"minimal": None},
        "contextWindow": 5000,
        "maxTokens": 100,
        "compat": {"openRouterRouting": {"only": ["amazon-bedrock"]}},
    }
    custom = parse_models_json(
        {
            "providers": {
                "openrouter": {
                    "modelOverrides": {"anthropic/claude-sonnet-4": override, "no/such": {}}
                },
                "anthropic": {"modelOverrides": {"claude-opus-4-5": {"thinkingLevelMap": {}}}},
            }
        },
        base=_base(),
    )
    model = custom.catalogue.get("openrouter", "anthropic/claude-sonnet-4")
    assert model is not None
    assert (model.name, model.reasoning, model.input) == (
        "Sonnet via Bedrock",
        True,
        ("text", "image"),
    )
    assert model.cost == ModelCost(input=9, output=15, cache_read=0.3, cache_write=3.75)
    assert model.thinking_level_map == {"minimal": None}
    assert (model.context_window, model.max_tokens) == (5000, 100)
    assert model.compat == {
        "openRouterRouting": {"order": ["anthropic"], "only": ["amazon-bedrock"]},
        "supportsStore": True,
    }
    assert custom.catalogue.get("openrouter", "no/such") is None
    opus = custom.catalogue.get("anthropic", "claude-opus-4-5")
    assert opus is not None and opus.thinking_level_map == {"xhigh": "max"}


def test_custom_model_replaces_an_overridden_builtin() -> None:
    """Custom models are merged after overrides, so a same-id definition wins."""
    custom = parse_models_json(
        {
            "providers": {
                "anthropic": {
                    "modelOverrides": {"claude-sonnet-4-5": {"name": "Override"}},
                    "models": [{"id": "claude-sonnet-4-5", "name": "Definition"}],
                }
            }
        },
        base=_base(),
    )
    assert custom.catalogue.get("anthropic", "claude-sonnet-4-5").name == "Definition"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- file handling


def test_comments_and_trailing_commas_are_allowed(tmp_path: Path) -> None:
    """``//`` comments and trailing commas are stripped, but not inside strings."""
    text = """{
      // local models
      "providers": {
        "ollama": {
          "baseUrl": "http://localhost:11434/v1", // the default port
          "api": "openai-completions",
          "apiKey": "a//b,]",
          "models": [{"id": "m", "name": "say \\"hi\\" // not a comment",},],
        },
      },
    }"""
    custom = load_models_json(_write(tmp_path, text))
    model = custom.catalogue.get("ollama", "m")
    assert model is not None
    assert model.base_url == "http://localhost:11434/v1"
    assert model.name == 'say "hi" // not a comment'
    assert custom.provider_configs["ollama"].api_key == "a//b,]"


def test_strip_json_comments_leaves_plain_json_alone() -> None:
    """JSON without comments or trailing commas is unchanged."""
    text = '{"a": "x, }", "b": [1, 2], "c": "//"}'
    assert strip_json_comments(text) == text


def test_missing_file_means_builtin_models_only(tmp_path: Path) -> None:
    """No models.json is no error: the result holds a copy of the base catalogue."""
    base = _base()
    custom = load_models_json(tmp_path / "absent.json", base=base)
    assert custom.catalogue is not base
    assert custom.catalogue.providers() == base.providers()
    assert custom.catalogue.models("anthropic") == base.models("anthropic")
    assert custom.provider_configs == {}


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    """A syntax error is reported with the file's path."""
    path = _write(tmp_path, '{"providers": {"ollama": }')
    with pytest.raises(ModelsJsonError) as caught:
        load_models_json(path)
    error = caught.value
    assert str(error).startswith("Failed to parse models.json: ")
    assert str(error).endswith(f"\n\nFile: {path}")
    assert error.path == path
    assert isinstance(error, ProviderError) and isinstance(error, ValueError)


def test_non_utf8_file_is_a_parse_error(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are reported, not raised as UnicodeDecodeError."""
    path = tmp_path / "models.json"
    path.write_bytes(b'{"providers": {"\xff": {}}}')
    with pytest.raises(ModelsJsonError, match=r"Failed to parse models\.json"):
        load_models_json(path)


def test_unreadable_path_is_reported(tmp_path: Path) -> None:
    """A directory in place of the file is a read error naming it."""
    path = tmp_path / "models.json"
    path.mkdir()
    with pytest.raises(ModelsJsonError, match=r"Failed to read models\.json") as caught:
        load_models_json(path)
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        ([], ["root: [] is not of type 'object'"]),
        ({}, ["providers: is required"]),
        (
            {"providers": {"x": {"models": [{"name": "n"}]}}},
            ["providers.x.models.0.id: is required"],
        ),
        (
            {"providers": {"x": {"apiKey": "", "headers": {"h": 1}}}},
            [
                "providers.x.apiKey: '' should be non-empty",
                "providers.x.headers.h: 1 is not of type 'string'",
            ],
        ),
        (
            {"providers": {"x": {"models": [{"id": "m", "cost": {"input": 1}}]}}},
            [
                "providers.x.models.0.cost.output: is required",
                "providers.x.models.0.cost.cacheRead: is required",
                "providers.x.models.0.cost.cacheWrite: is required",
            ],
        ),
        (
            {
                "providers": {
                    "x": {"models": [{"id": "m", "input": ["video"], "contextWindow": "1"}]}
                }
            },
            [
                "providers.x.models.0.contextWindow: '1' is not of type 'number'",
                "providers.x.models.0.input.0: 'video' is not one of ['text', 'image']",
            ],
        ),
        (
            {"providers": {"x": {"compat": {"supportsLongCacheRetention": "yes"}}}},
            ["providers.x.compat.supportsLongCacheRetention: 'yes' is not of type 'boolean'"],
        ),
        (
            {"providers": {"x": {"baseUrl": "http://h", "compat": "fast"}}},
            ["providers.x.compat: 'fast' is not of type 'object'"],
        ),
    ],
)
def test_schema_errors_list_each_problem_with_its_path(
    tmp_path: Path, data: Any, problems: list[str]
) -> None:
    """Every schema violation is listed with its dotted path, under the file's name."""
    path = _write(tmp_path, data)
    with pytest.raises(ModelsJsonError) as caught:
        load_models_json(path, base=_base())
    assert caught.value.problems == tuple(problems)
    message = str(caught.value)
    assert message.startswith("Invalid models.json schema:\n")
    assert all(f"  - {problem}" in message for problem in problems)
    assert message.endswith(f"File: {path}")


def test_unknown_keys_are_allowed() -> None:
    """Keys pi does not know are ignored, as TypeBox objects allow them."""
    provider = {**OLLAMA, "comment": "mine", "models": [{"id": "m", "note": 1}]}
    custom = parse_models_json({"providers": {"p": provider}, "version": 2}, base=_base())
    assert custom.catalogue.get("p", "m") is not None


@pytest.mark.parametrize(
    ("provider", "problem"),
    [
        (
            {},
            'Provider p: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models".',
        ),
        (
            {"models": []},
            'Provider p: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models".',
        ),
        (
            {"api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]},
            'Provider p: "baseUrl" is required when defining custom models.',
        ),
        (
            {"api": "openai-completions", "baseUrl": "http://h", "models": [{"id": "m"}]},
            'Provider p: "apiKey" is required when defining custom models.',
        ),
        (
            {"baseUrl": "http://h", "apiKey": "k", "models": [{"id": "m"}]},
            'Provider p, model m: no "api" specified. Set at provider or model level.',
        ),
        (
            {**OLLAMA, "models": [{"id": "m", "contextWindow": 0}]},
            "Provider p, model m: invalid contextWindow",
        ),
        (
            {**OLLAMA, "models": [{"id": "m", "maxTokens": -1}]},
            "Provider p, model m: invalid maxTokens",
        ),
    ],
)
def test_configuration_errors_are_pis(provider: dict[str, Any], problem: str) -> None:
    """A provider that lacks what it needs is reported in pi's words."""
    with pytest.raises(ModelsJsonError) as caught:
        parse_models_json({"providers": {"p": provider}}, base=_base())
    assert caught.value.problems == (problem,)
    assert str(caught.value).startswith("Invalid models.json:\n")
    assert caught.value.path is None


def test_builtin_provider_models_need_no_endpoint_or_key() -> None:
    """Custom models on a built-in provider inherit endpoint and auth, so none is required."""
    custom = parse_models_json(
        {"providers": {"anthropic": {"models": [{"id": "x"}]}}}, base=_base()
    )
    assert custom.catalogue.get("anthropic", "x") is not None


def test_empty_headers_or_compat_object_is_enough_for_an_override() -> None:
    """As in pi, an empty ``headers`` or ``compat`` object counts as an override."""
    parse_models_json({"providers": {"anthropic": {"headers": {}}}}, base=_base())
    custom = parse_models_json({"providers": {"anthropic": {"compat": {}}}}, base=_base())
    assert custom.catalogue.get("anthropic", "claude-sonnet-4-5").compat == {}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- request auth


async def test_api_key_literal_or_environment_variable() -> None:
    """A key naming a set variable resolves to its value; otherwise it is used literally."""
    custom = parse_models_json(
        {
            "providers": {
                "a": {**OLLAMA, "apiKey": "MY_KEY"},
                "b": {**OLLAMA, "apiKey": "sk-literal"},
            }
        },
        base=_base(),
    )
    env = {"MY_KEY": "sk-from-env", "EMPTY": ""}
    a = await custom.resolve_request_auth(custom.catalogue.get("a", "llama3.1:8b"), env=env)  # type: ignore[arg-type]
    b = await custom.resolve_request_auth(custom.catalogue.get("b", "llama3.1:8b"), env=env)  # type: ignore[arg-type]
    assert (a.api_key, a.headers) == ("sk-from-env", None)
    assert b.api_key == "sk-literal"
    assert await resolve_config_value("EMPTY", env=env) == "EMPTY"
    assert custom.has_configured_auth("a")
    assert not custom.has_configured_auth("anthropic")


async def test_api_key_from_a_shell_command() -> None:
    """``!command`` runs through the shell and its trimmed output is the key, on every request."""
    custom = parse_models_json(
        {"providers": {"p": {**OLLAMA, "apiKey": "!printf '  sk-%s\\n' cmd; echo oops >&2"}}},
        base=_base(),
    )
    model = custom.catalogue.get("p", "llama3.1:8b")
    assert model is not None
    auth = await custom.resolve_request_auth(model)
    assert auth.api_key == "sk-cmd"
    assert await custom.provider_api_key("p") == "sk-cmd"


async def test_failing_command_is_a_request_auth_error() -> None:
    """A command that fails or prints nothing does not resolve, and the error names it."""
    for command in ("exit 3", "true"):
        custom = parse_models_json(
            {"providers": {"p": {**OLLAMA, "apiKey": f"!{command}"}}}, base=_base()
        )
        model = custom.catalogue.get("p", "llama3.1:8b")
        assert model is not None
        with pytest.raises(RequestAuthError) as caught:
            await custom.resolve_request_auth(model)
        assert str(caught.value) == (
            f'Failed to resolve API key for provider "p" from shell command: {command}'
        )
        assert caught.value.provider == "p"
        assert await custom.provider_api_key("p") is None


async def test_stored_api_key_wins_and_the_command_is_not_run(tmp_path: Path) -> None:
    """A key from the credential store or environment takes precedence over models.json."""
    marker = tmp_path / "ran"
    custom = parse_models_json(
        {"providers": {"p": {**OLLAMA, "apiKey": f"!touch {marker}; echo k"}}}, base=_base()
    )
    auth = await custom.resolve_request_auth(
        custom.catalogue.get("p", "llama3.1:8b"),  # type: ignore[arg-type]
        api_key="sk-stored",
    )
    assert auth.api_key == "sk-stored"
    assert not marker.exists()


async def test_command_that_hangs_times_out(autojump_clock: trio.testing.MockClock) -> None:
    """A command running past the timeout is killed, with its children, and gives no value."""
    assert await resolve_config_value("!sleep 600; echo late") is None


async def test_headers_merge_in_pis_order() -> None:
    """Model headers < provider headers < models.json model headers; values resolve like keys."""
    custom = parse_models_json(
        {
            "providers": {
                "anthropic": {
                    "headers": {"x-a": "PROVIDER_TOKEN", "x-b": "provider", "x-c": "provider"},
                    "models": [{"id": "m", "headers": {"x-c": "!echo model"}}],
                    "modelOverrides": {"claude-opus-4-5": {"headers": {"anthropic-beta": "y"}}},
                }
            }
        },
        base=_base(),
    )
    env = {"PROVIDER_TOKEN": "tok"}
    m = await custom.resolve_request_auth(custom.catalogue.get("anthropic", "m"), env=env)  # type: ignore[arg-type]
    assert m.headers == {"x-a": "tok", "x-b": "provider", "x-c": "model"}
    assert m.api_key is None
    opus = custom.catalogue.get("anthropic", "claude-opus-4-5")
    assert opus is not None and opus.headers == {"anthropic-beta": "x"}
    resolved = await custom.resolve_request_auth(opus, env=env)
    assert resolved.headers == {
        "anthropic-beta": "y",
        "x-a": "tok",
        "x-b": "provider",
        "x-c": "provider",
    }


async def test_header_command_failure_names_the_header() -> None:
    """A header whose command fails stops the request with the header's name."""
    custom = parse_models_json(
        {"providers": {"anthropic": {"headers": {"x-secret": "!false"}}}}, base=_base()
    )
    model = custom.catalogue.get("anthropic", "claude-sonnet-4-5")
    assert model is not None
    with pytest.raises(RequestAuthError, match='provider "anthropic" header "x-secret" from shell'):
        await custom.resolve_request_auth(model)


async def test_auth_header_adds_bearer_token() -> None:
    """``authHeader: true`` sends the resolved key as ``Authorization: Bearer``."""
    custom = parse_models_json(
        {"providers": {"p": {**OLLAMA, "apiKey": "KEY_VAR", "authHeader": True}}}, base=_base()
    )
    model = custom.catalogue.get("p", "llama3.1:8b")
    assert model is not None
    auth = await custom.resolve_request_auth(model, env={"KEY_VAR": "sk-1"})
    assert auth.headers == {"Authorization": "Bearer sk-1"}


async def test_auth_header_without_a_key_is_an_error() -> None:
    """``authHeader`` on a provider with no key cannot build the header."""
    custom = parse_models_json(
        {"providers": {"anthropic": {"authHeader": True, "baseUrl": "http://proxy"}}}, base=_base()
    )
    model = custom.catalogue.get("anthropic", "claude-sonnet-4-5")
    assert model is not None
    with pytest.raises(RequestAuthError, match='No API key found for "anthropic"'):
        await custom.resolve_request_auth(model)


async def test_custom_model_without_headers_clears_override_headers() -> None:
    """A custom model replacing an overridden one takes its own (absent) headers, as in pi."""
    custom = parse_models_json(
        {
            "providers": {
                "anthropic": {
                    "modelOverrides": {"claude-sonnet-4-5": {"headers": {"x-o": "1"}}},
                    "models": [{"id": "claude-sonnet-4-5"}],
                }
            }
        },
        base=_base(),
    )
    model = custom.catalogue.get("anthropic", "claude-sonnet-4-5")
    assert model is not None
    assert (await custom.resolve_request_auth(model)).headers is None


async def test_no_models_json_means_no_extra_auth() -> None:
    """A bare CustomModels (the fallback after an error) adds nothing to a request."""
    base = _base()
    custom = CustomModels(catalogue=base)
    model = base.get("anthropic", "claude-opus-4-5")
    assert model is not None
    auth = await custom.resolve_request_auth(model, api_key="sk")
    assert (auth.api_key, auth.headers) == ("sk", {"anthropic-beta": "x"})


def test_a_catalogue_copy_is_independent_of_its_original() -> None:
    """A model added to a copy is not in the original, nor one added to the original in the
    copy; both keep the models they had."""
    original = _base()
    copy = original.copy()
    before = [(p, [m.id for m in original.models(p)]) for p in original.providers()]
    assert [(p, [m.id for m in copy.models(p)]) for p in copy.providers()] == before
    copy.add(_builtin("anthropic", "only-in-copy"))
    original.add(_builtin("openrouter", "only-in-original", api="openai-completions"))
    assert copy.get("anthropic", "only-in-copy") is not None
    assert original.get("anthropic", "only-in-copy") is None
    assert original.get("openrouter", "only-in-original") is not None
    assert copy.get("openrouter", "only-in-original") is None
    second = original.copy()
    second.add(_builtin("anthropic", "only-in-second"))
    assert copy.get("anthropic", "only-in-second") is None
    assert original.get("anthropic", "only-in-second") is None


@pytest.mark.pins_internals
def test_a_catalogue_copy_shares_the_tables_until_a_change() -> None:
    """A host builds a catalogue per session: the copy of the built-in one costs no tables
    of its own until a model is added to it."""
    copy = default_catalogue.copy()
    assert copy._models is default_catalogue._models
    copy.add(_builtin("anthropic", "only-in-copy"))
    assert copy._models is not default_catalogue._models
