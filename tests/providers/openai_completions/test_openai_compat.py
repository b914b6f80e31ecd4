"""Compatibility flags and presets for OpenAI-compatible servers shape requests as pi's do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import httpx2
import pytest

from pitrio.providers import (
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    stream_simple,
)
from pitrio.providers._http import open_http_client
from pitrio.providers.openai_completions._compat import (
    OPENAI_COMPATIBLE_PRESETS,
    CompletionsCompat,
    UnknownPreset,
    detect_compat,
    get_compat,
    mistral_tool_call_id_normalizer,
    openai_compatible_model,
)
from pitrio.providers.openai_completions._provider import register_openai_completions

from fixtures_openai_completions import (
    SYSTEM_PROMPT,
    TIME_TOOL,
    WEATHER_TOOL,
    history,
    load_pi_cases,
    run_pi_case,
    text_stream,
)
from loopback import serve, sse_handler

# pi's docs and catalogue: each preset's URL and key variable.
PRESET_TABLE = {
    "ollama": ("http://localhost:11434/v1", ()),
    "vllm": ("http://localhost:8000/v1", ()),
    "llama.cpp": ("http://localhost:8080/v1", ()),
    "lmstudio": ("http://localhost:1234/v1", ()),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "xai": ("https://api.x.ai/v1", ("XAI_API_KEY",)),
    "openrouter": ("https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "cerebras": ("https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",)),
    "mistral": ("https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
    "deepseek": ("https://api.deepseek.com", ("DEEPSEEK_API_KEY",)),
}


@pytest.fixture
def registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    register_openai_completions(registry)
    return registry


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with open_http_client() as client:
        yield client


def generic(base_url: str = "https://example.com/v1", **kwargs: Any) -> Model:
    defaults: dict[str, Any] = {
        "id": "some-model",
        "name": "Some model",
        "api": "openai-completions",
        "provider": "custom",
        "base_url": base_url,
        "context_window": 1000,
        "max_tokens": 100,
    }
    defaults.update(kwargs)
    return Model(**defaults)


# --------------------------------------------------------------------------- detection


def test_unknown_servers_get_openai_defaults() -> None:
    """A server pi knows nothing about gets standard OpenAI behaviour."""
    assert detect_compat(generic()) == CompletionsCompat()


@pytest.mark.parametrize(
    ("provider", "url", "expected"),
    [
        (
            "cerebras",
            "https://x/v1",
            {"supports_store": False, "supports_developer_role": False},
        ),
        (
            "custom",
            "https://api.cerebras.ai/v1",
            {"supports_store": False, "supports_developer_role": False},
        ),
        (
            "xai",
            "https://x/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "supports_reasoning_effort": False,
            },
        ),
        (
            "deepseek",
            "https://x/v1",
            {
                "thinking_format": "deepseek",
                "requires_reasoning_content_on_assistant_messages": True,
            },
        ),
        (
            "custom",
            "https://api.deepseek.com",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "thinking_format": "deepseek",
                "requires_reasoning_content_on_assistant_messages": True,
            },
        ),
        (
            "zai",
            "https://x/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "supports_reasoning_effort": False,
                "thinking_format": "zai",
            },
        ),
        (
            "moonshotai",
            "https://x/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "supports_reasoning_effort": False,
                "max_tokens_field": "max_tokens",
                "supports_strict_mode": False,
            },
        ),
        (
            "custom",
            "https://llm.chutes.ai/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "max_tokens_field": "max_tokens",
            },
        ),
        (
            "cloudflare-workers-ai",
            "https://x/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "supports_long_cache_retention": False,
            },
        ),
        (
            "cloudflare-ai-gateway",
            "https://x/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "supports_reasoning_effort": False,
                "max_tokens_field": "max_tokens",
                "supports_strict_mode": False,
                "supports_long_cache_retention": False,
            },
        ),
        ("openrouter", "https://x/v1", {"thinking_format": "openrouter"}),
        ("custom", "https://openrouter.ai/api/v1", {"thinking_format": "openrouter"}),
        (
            "opencode",
            "https://x/v1",
            {"supports_store": False, "supports_developer_role": False},
        ),
    ],
)
def test_detection_from_provider_and_url(provider: str, url: str, expected: dict[str, Any]) -> None:
    """pi's detection: the provider id or a known host in the base URL sets the flags."""
    detected = detect_compat(generic(url, provider=provider))
    assert detected == attrs.evolve(CompletionsCompat(), **expected)


def test_anthropic_models_on_openrouter_use_cache_control() -> None:
    """OpenRouter models named anthropic/... get Anthropic-style cache markers."""
    claude = generic(provider="openrouter", id="anthropic/claude-sonnet-4")
    assert detect_compat(claude).cache_control_format == "anthropic"
    gemini = generic(provider="openrouter", id="google/gemini-2.5-pro")
    assert detect_compat(gemini).cache_control_format is None


def test_explicit_compat_overrides_detection() -> None:
    """A model's compat keys win over detection; null keys and unknown keys are ignored."""
    model = generic(
        "https://api.x.ai/v1",
        provider="xai",
        compat={
            "supportsStore": True,
            "maxTokensField": "max_tokens",
            "supportsDeveloperRole": None,
            "somethingNew": 1,
        },
    )
    compat = get_compat(model)
    assert compat.supports_store is True
    assert compat.max_tokens_field == "max_tokens"
    assert compat.supports_developer_role is False  # null -> detected value
    assert compat.supports_reasoning_effort is False


# --------------------------------------------------------------------------- presets


def test_presets_are_the_ten_named_servers() -> None:
    """The presets name pi's base URLs and API-key variables; local servers need no key."""
    assert set(OPENAI_COMPATIBLE_PRESETS) == set(PRESET_TABLE)
    for name, (url, env) in PRESET_TABLE.items():
        preset = OPENAI_COMPATIBLE_PRESETS[name]
        assert (preset.base_url, preset.api_key_env) == (url, env)
        assert preset.local == (env == ())


@pytest.mark.parametrize("name", sorted(PRESET_TABLE))
def test_preset_flags_do_not_depend_on_the_url(name: str) -> None:
    """A preset model resolves to the same flags at its real URL and behind a proxy, so tests
    against a loopback server show what the real service receives."""
    real = openai_compatible_model(name, "some-model")
    proxied = openai_compatible_model(name, "some-model", base_url="http://127.0.0.1:9/v1")
    assert get_compat(real) == get_compat(proxied)


def test_preset_model_takes_catalogue_values() -> None:
    """A model the catalogue knows keeps its window, prices and reasoning settings."""
    model = openai_compatible_model("deepseek", "deepseek-v4-pro")
    assert model.api == "openai-completions"
    assert model.provider == "deepseek"
    assert model.base_url == "https://api.deepseek.com"
    assert model.reasoning is True
    assert model.context_window == 1_000_000
    assert model.thinking_level_map is not None and model.thinking_level_map["xhigh"] == "max"
    assert model.cost.input > 0


def test_preset_model_defaults_and_overrides() -> None:
    """An unknown model gets pi's models.json defaults; arguments and compat override."""
    model = openai_compatible_model("ollama", "llama3.1:8b")
    assert (model.name, model.context_window, model.max_tokens) == ("llama3.1:8b", 128000, 16384)
    assert model.input == ("text",)
    assert model.reasoning is False
    assert model.cost == ModelCost()
    assert model.compat == {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    custom = openai_compatible_model(
        "ollama",
        "gpt-oss:20b",
        base_url="http://gpu-box:11434/v1",
        reasoning=True,
        input=("text", "image"),
        context_window=32768,
        compat={"supportsReasoningEffort": True},
    )
    assert custom.base_url == "http://gpu-box:11434/v1"
    assert custom.reasoning and custom.input == ("text", "image")
    assert custom.context_window == 32768
    assert get_compat(custom).supports_reasoning_effort is True
    assert get_compat(custom).supports_developer_role is False


def test_unknown_preset_is_named() -> None:
    """Asking for a preset that does not exist lists the known ones."""
    with pytest.raises(UnknownPreset, match="ollama"):
        openai_compatible_model("nope", "m")


# The request body each preset gets for a reasoning model with thinking on ("medium"), a
# system prompt, tools and a replayed tool round: what pi sends to that service.
EXPECTED_BODIES: dict[str, dict[str, Any]] = {
    "ollama": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": True,
        "reasoning": {},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "vllm": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": True,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "llama.cpp": {
        "system_role": "system",
        "max_field": "max_tokens",
        "store": True,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "lmstudio": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": True,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "groq": {
        "system_role": "developer",
        "max_field": "max_completion_tokens",
        "store": True,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "xai": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": False,
        "reasoning": {},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "openrouter": {
        "system_role": "developer",
        "max_field": "max_completion_tokens",
        "store": True,
        "reasoning": {"reasoning": {"effort": "medium"}},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "cerebras": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": False,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
    "mistral": {
        "system_role": "system",
        "max_field": "max_tokens",
        "store": False,
        "reasoning": {"reasoning_effort": "medium"},
        "tool_name": True,
        "thinking_replay": "text",
    },
    "deepseek": {
        "system_role": "system",
        "max_field": "max_completion_tokens",
        "store": False,
        "reasoning": {"thinking": {"type": "enabled"}, "reasoning_effort": "medium"},
        "tool_name": False,
        "thinking_replay": "reasoning_content",
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED_BODIES))
async def test_preset_flags_shape_the_request(
    name: str, registry: ProviderRegistry, client: Any
) -> None:
    """Each preset's flags decide system role, output cap field, store, usage streaming,
    reasoning parameters, tool-result names and how reasoning is replayed."""
    expected = EXPECTED_BODIES[name]
    async with serve(sse_handler(text_stream())) as server:
        model = openai_compatible_model(
            name, "reasoner-model", base_url=server.url("/v1"), reasoning=True, max_tokens=4096
        )
        context = Context(
            system_prompt=SYSTEM_PROMPT,
            messages=history(model),
            tools=(WEATHER_TOOL, TIME_TOOL),
        )
        options = StreamOptions(api_key="k", reasoning="medium")
        async with stream_simple(model, context, options, registry=registry) as events:
            async for _ in events:
                pass
    body = server.requests[0].json()
    messages = body["messages"]
    assert messages[0] == {"role": expected["system_role"], "content": SYSTEM_PROMPT}
    assert body[expected["max_field"]] == 4096
    other = {"max_tokens", "max_completion_tokens"} - {expected["max_field"]}
    assert not other & set(body)
    assert ("store" in body) == expected["store"]
    assert body["stream_options"] == {"include_usage": True}
    reasoning_keys = {"reasoning_effort", "reasoning", "thinking", "enable_thinking"}
    assert {k: body[k] for k in reasoning_keys & set(body)} == expected["reasoning"]
    tool_message = next(m for m in messages if m["role"] == "tool")
    assert ("name" in tool_message) == expected["tool_name"]
    if expected["tool_name"]:
        assert tool_message["name"] == "get_weather"
    assistant = next(m for m in messages if m["role"] == "assistant")
    if expected["thinking_replay"] == "text":
        assert assistant["content"] == [
            {"type": "text", "text": "The user wants the weather."},
            {"type": "text", "text": "Checking the forecast."},
        ]
        assert "reasoning_content" not in assistant
    else:
        assert assistant["reasoning_content"] == "The user wants the weather."
        assert assistant["content"] == "Checking the forecast."
    strict = [tool["function"].get("strict") for tool in body["tools"]]
    assert strict == [False, False]


async def test_local_presets_need_no_key(
    registry: ProviderRegistry, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server is called without Authorization when no key is configured; a remote
    preset reads its key variable."""
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with serve(sse_handler(text_stream())) as server:
        local = openai_compatible_model("lmstudio", "qwen", base_url=server.url("/v1"))
        async with stream_simple(local, history_context(), registry=registry) as events:
            result = [event async for event in events]
        assert result[-1].type == "done"
        monkeypatch.setenv("GROQ_API_KEY", "gsk-secret")
        remote = openai_compatible_model("groq", "llama-3.3-70b-versatile", base_url=server.url())
        async with stream_simple(remote, history_context(), registry=registry) as events:
            result = [event async for event in events]
        assert result[-1].type == "done"
    assert "authorization" not in server.requests[0].headers
    assert server.requests[1].headers["authorization"] == "Bearer gsk-secret"


def history_context() -> Context:
    return Context(messages=[UserMessage(content="Hi", timestamp=1)])


# --------------------------------------------------------------------------- every flag

FLAG_CASES = {case["name"]: case for case in load_pi_cases() if case["name"].startswith("flag_")}


def _expect_flag(name: str, body: dict[str, Any], headers: dict[str, str]) -> None:
    """What each compat flag does to the request (the same cases are checked against pi)."""
    messages = body["messages"]
    roles = [m["role"] for m in messages]
    assistant = next(m for m in messages if m["role"] == "assistant")
    tool = next(m for m in messages if m["role"] == "tool")
    match name:
        case "flag_supportsStore_false":
            assert "store" not in body
        case "flag_supportsDeveloperRole_false":
            assert roles[0] == "system"
        case "flag_supportsReasoningEffort_false":
            assert "reasoning_effort" not in body
        case "flag_supportsUsageInStreaming_false":
            assert "stream_options" not in body
        case "flag_maxTokensField_max_tokens":
            assert body["max_tokens"] == 16384 and "max_completion_tokens" not in body
        case "flag_requiresToolResultName":
            assert tool["name"] == "get_weather"
        case "flag_requiresAssistantAfterToolResult":
            index = roles.index("tool")
            assert messages[index + 1] == {
                "role": "assistant",
                "content": "I have processed the tool results.",
            }
            assert (
                messages[index + 2]["content"][0]["text"] == "Attached image(s) from tool result:"
            )
        case "flag_requiresThinkingAsText":
            assert assistant["content"][0] == {
                "type": "text",
                "text": "The user wants the weather.",
            }
        case "flag_requiresReasoningContentOnAssistantMessages":
            assert all("reasoning_content" in m for m in messages if m["role"] == "assistant")
        case "flag_thinkingFormat_openrouter":
            assert body["reasoning"] == {"effort": "medium"}
        case "flag_thinkingFormat_deepseek":
            assert body["thinking"] == {"type": "enabled"}
            assert body["reasoning_effort"] == "medium"
        case "flag_thinkingFormat_zai" | "flag_thinkingFormat_qwen":
            assert body["enable_thinking"] is True
            assert "reasoning_effort" not in body
        case "flag_thinkingFormat_qwen_chat_template":
            assert body["chat_template_kwargs"] == {
                "enable_thinking": True,
                "preserve_thinking": True,
            }
        case "flag_zaiToolStream":
            assert body["tool_stream"] is True
        case "flag_supportsStrictMode_false":
            assert all("strict" not in tool["function"] for tool in body["tools"])
        case "flag_cacheControlFormat_anthropic":
            marker = {"type": "ephemeral", "ttl": "1h"}
            assert messages[0]["content"] == [
                {"type": "text", "text": SYSTEM_PROMPT, "cache_control": marker}
            ]
            assert body["tools"][-1]["cache_control"] == marker
            assert messages[-1]["content"][-1]["cache_control"] == marker
        case "flag_sendSessionAffinityHeaders":
            for header in ("session_id", "x-client-request-id", "x-session-affinity"):
                assert headers[header] == "session-flags"
        case "flag_supportsLongCacheRetention_false":
            assert "prompt_cache_retention" not in body
            assert "prompt_cache_key" not in body
        case "flag_openRouterRouting":
            assert body["provider"] == {"order": ["anthropic", "google"], "allow_fallbacks": False}
        case "flag_vercelGatewayRouting":
            assert body["providerOptions"] == {
                "gateway": {"only": ["anthropic"], "order": ["anthropic", "bedrock"]}
            }
        case _:
            raise AssertionError(f"no expectation for {name}")


@pytest.mark.parametrize("name", sorted(FLAG_CASES))
async def test_each_compat_flag_changes_the_request(
    name: str, registry: ProviderRegistry, client: Any
) -> None:
    """Setting one compat flag on a generic server model changes the body as pi's flag does."""
    request, _ = await run_pi_case(FLAG_CASES[name], registry)
    _expect_flag(name, request.json(), request.headers)


def test_every_pi_compat_flag_has_a_case() -> None:
    """Each flag of pi's OpenAICompletionsCompat is exercised by a flag case."""
    flags = {
        "supportsStore",
        "supportsDeveloperRole",
        "supportsReasoningEffort",
        "supportsUsageInStreaming",
        "maxTokensField",
        "requiresToolResultName",
        "requiresAssistantAfterToolResult",
        "requiresThinkingAsText",
        "requiresReasoningContentOnAssistantMessages",
        "thinkingFormat",
        "openRouterRouting",
        "vercelGatewayRouting",
        "zaiToolStream",
        "supportsStrictMode",
        "cacheControlFormat",
        "sendSessionAffinityHeaders",
        "supportsLongCacheRetention",
    }
    covered = {key for case in FLAG_CASES.values() for key in case["model"]["compat"]}
    assert covered == flags


# --------------------------------------------------------------------------- Mistral ids


def test_mistral_ids_are_nine_alphanumerics() -> None:
    """Foreign ids become distinct 9-character alphanumeric ids; conforming ids are kept."""
    normalize = mistral_tool_call_id_normalizer()
    a = normalize("toolu_01A09q90qw90lq917835lq9")
    b = normalize("call_abc123|fc_0123")
    assert len(a) == len(b) == 9
    assert a.isalnum() and b.isalnum() and a != b
    assert normalize("toolu_01A09q90qw90lq917835lq9") == a
    assert normalize("abcDEF123") == "abcDEF123"
    # Cleaned to an id already handed out to another call: a different id is derived.
    clash = normalize("abc-DEF-123")
    assert clash != "abcDEF123" and len(clash) == 9 and clash.isalnum()
    assert mistral_tool_call_id_normalizer()("abc-DEF-123") == "abcDEF123"


async def test_mistral_preset_rewrites_foreign_tool_call_ids(
    registry: ProviderRegistry, client: Any
) -> None:
    """Tool calls from another provider reach Mistral with 9-character ids, results matching."""
    foreign = AssistantMessage(
        content=[ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="get_weather", arguments={})],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4-5",
        stop_reason="toolUse",
        timestamp=2,
    )
    result = ToolResultMessage(
        tool_call_id="toolu_01A09q90qw90lq917835lq9",
        tool_name="get_weather",
        content=[TextContent(text="Sunny")],
        is_error=False,
        timestamp=3,
    )
    context = Context(messages=[UserMessage(content="Hi", timestamp=1), foreign, result])
    async with serve(sse_handler(text_stream())) as server:
        model = openai_compatible_model("mistral", "mistral-large-latest", base_url=server.url())
        async with stream_simple(
            model, context, StreamOptions(api_key="k"), registry=registry
        ) as s:
            async for _ in s:
                pass
    messages = server.requests[0].json()["messages"]
    call_id = messages[1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum()
    assert messages[2]["tool_call_id"] == call_id
    assert messages[2]["name"] == "get_weather"
