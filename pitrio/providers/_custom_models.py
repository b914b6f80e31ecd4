"""The user's ``models.json``: custom providers and models over the built-in catalogue.

Kept in one module: models.json's schema, its merge over the catalogue and key
resolution are pi's one loader.

Ports pi-coding-agent 0.73.1's handling of ``~/.pi/agent/models.json`` (docs/models.md). The
file looks like::

    {
      "providers": {
        "ollama": {
          "baseUrl": "http://localhost:11434/v1",
          "api": "openai-completions",
          "apiKey": "ollama",
          "compat": {"supportsDeveloperRole": false},
          "models": [{"id": "llama3.1:8b"}]
        },
        "anthropic": {"baseUrl": "https://proxy.example.com/v1"},
        "openrouter": {"modelOverrides": {"anthropic/claude-sonnet-4": {"name": "Sonnet"}}}
      }
    }

``//`` line comments and trailing commas are allowed. How it is applied:

* A provider entry without ``models`` only adjusts a built-in provider: its ``baseUrl``
  replaces every model's base URL, its ``compat`` is merged into every model's ``compat``.
* ``modelOverrides`` patch single built-in models (``name``, ``reasoning``,
  ``thinkingLevelMap``, ``input``, ``cost`` field by field, ``contextWindow``, ``maxTokens``,
  ``compat``); unknown model ids are ignored.
* ``models`` are added to the provider, replacing a built-in model with the same id. Missing
  fields get pi's defaults: ``name`` = ``id``, ``reasoning`` false, ``input`` ``["text"]``,
  zero cost, ``contextWindow`` 128000, ``maxTokens`` 16384; ``api`` and ``baseUrl`` come from the
  model, else the provider entry, else (built-in providers only) the provider's first built-in
  model. Provider ``compat`` is merged under model ``compat``.
* ``apiKey`` and ``headers`` (provider level, and ``headers`` per model or model override) are
  not copied into the models: they are resolved at request time by
  :meth:`CustomModels.resolve_request_auth`. Each value is a shell command when it starts with
  ``!`` (its trimmed standard output), else the value of the environment variable of that name
  when set, else the literal text. ``authHeader: true`` adds ``Authorization: Bearer <key>``.

A malformed file raises :class:`ModelsJsonError` naming the file and every problem found; pi
then keeps the built-in catalogue, and so should the caller.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import attrs
import trio

from pitrio.codec import loads
from pitrio.providers._messages import Model, ModelCost
from pitrio.providers._models import ModelCatalogue, default_catalogue
from pitrio.providers._registry import ProviderError

CONFIG_COMMAND_TIMEOUT: Final = 10.0
"""Seconds a ``!command`` value may run before it is killed and counts as unresolved."""

DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""``contextWindow`` of a custom model that does not give one."""

DEFAULT_MAX_TOKENS: Final = 16_384
"""``maxTokens`` of a custom model that does not give one."""

_EMPTY: Final[Mapping[Any, Any]] = MappingProxyType({})


# --------------------------------------------------------------------------- errors


class ModelsJsonError(ProviderError, ValueError):
    """A ``models.json`` that cannot be used: unreadable, not JSON, or not of pi's shape.

    Attributes:
        path: the file, or ``None`` for a configuration given as data.
        problems: one line per problem (``"providers.x.models.0.id: is required"``).
    """

    def __init__(self, headline: str, problems: list[str], path: Path | None) -> None:
        lines = [headline]
        lines.extend(f"  - {problem}" for problem in problems)
        if path is not None:
            lines.append("")
            lines.append(f"File: {path}")
        super().__init__("\n".join(lines))
        self.path = path
        self.problems = tuple(problems)


class RequestAuthError(ProviderError):
    """An API key or header configured in ``models.json`` could not be resolved for a request.

    Attributes:
        provider: the provider whose request it was.
    """

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(message)
        self.provider = provider


# --------------------------------------------------------------------------- schema

_STRING: Final = {"type": "string", "minLength": 1}
_NUMBER: Final = {"type": "number"}
_BOOLEAN: Final = {"type": "boolean"}
_STRING_MAP: Final = {"type": "object", "additionalProperties": {"type": "string"}}
_INPUT: Final = {"type": "array", "items": {"enum": ["text", "image"]}}
_THINKING_LEVEL_MAP: Final = {
    "type": "object",
    "properties": {
        level: {"type": ["string", "null"]}
        for level in ("off", "minimal", "low", "medium", "high", "xhigh")
    },
}
_PERCENTILES: Final = {
    "type": "object",
    "properties": {key: _NUMBER for key in ("p50", "p75", "p90", "p99")},
}
_PRICE: Final = {"type": ["number", "string"]}
_OPENROUTER_ROUTING: Final = {
    "type": "object",
    "properties": {
        "allow_fallbacks": _BOOLEAN,
        "require_parameters": _BOOLEAN,
        "data_collection": {"enum": ["deny", "allow"]},
        "zdr": _BOOLEAN,
        "enforce_distillable_text": _BOOLEAN,
        "order": {"type": "array", "items": {"type": "string"}},
        "only": {"type": "array", "items": {"type": "string"}},
        "ignore": {"type": "array", "items": {"type": "string"}},
        "quantizations": {"type": "array", "items": {"type": "string"}},
        "sort": {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "by": {"type": "string"},
                        "partition": {"type": ["string", "null"]},
                    },
                },
            ]
        },
        "max_price": {
            "type": "object",
            "properties": {
                key: _PRICE for key in ("prompt", "completion", "image", "audio", "request")
            },
        },
        "preferred_min_throughput": {"anyOf": [_NUMBER, _PERCENTILES]},
        "preferred_max_latency": {"anyOf": [_NUMBER, _PERCENTILES]},
    },
}
_VERCEL_ROUTING: Final = {
    "type": "object",
    "properties": {
        "only": {"type": "array", "items": {"type": "string"}},
        "order": {"type": "array", "items": {"type": "string"}},
    },
}
_COMPAT: Final = {
    # pi accepts any one of the three APIs' compat shapes; unknown keys are allowed.
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "supportsStore": _BOOLEAN,
                "supportsDeveloperRole": _BOOLEAN,
                "supportsReasoningEffort": _BOOLEAN,
                "supportsUsageInStreaming": _BOOLEAN,
                "maxTokensField": {"enum": ["max_completion_tokens", "max_tokens"]},
                "requiresToolResultName": _BOOLEAN,
                "requiresAssistantAfterToolResult": _BOOLEAN,
                "requiresThinkingAsText": _BOOLEAN,
                "requiresReasoningContentOnAssistantMessages": _BOOLEAN,
                "thinkingFormat": {
                    "enum": [
                        "openai",
                        "openrouter",
                        "deepseek",
                        "zai",
                        "qwen",
                        "qwen-chat-template",
                    ]
                },
                "cacheControlFormat": {"const": "anthropic"},
                "openRouterRouting": _OPENROUTER_ROUTING,
                "vercelGatewayRouting": _VERCEL_ROUTING,
                "supportsStrictMode": _BOOLEAN,
                "supportsLongCacheRetention": _BOOLEAN,
            },
        },
        {
            "type": "object",
            "properties": {
                "sendSessionIdHeader": _BOOLEAN,
                "supportsLongCacheRetention": _BOOLEAN,
            },
        },
        {
            "type": "object",
            "properties": {
                "supportsEagerToolInputStreaming": _BOOLEAN,
                "supportsLongCacheRetention": _BOOLEAN,
            },
        },
    ]
}
_COST: Final = {
    "type": "object",
    "required": ["input", "output", "cacheRead", "cacheWrite"],
    "properties": {key: _NUMBER for key in ("input", "output", "cacheRead", "cacheWrite")},
}
_MODEL_DEFINITION: Final = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": _STRING,
        "name": _STRING,
        "api": _STRING,
        "baseUrl": _STRING,
        "reasoning": _BOOLEAN,
        "thinkingLevelMap": _THINKING_LEVEL_MAP,
        "input": _INPUT,
        "cost": _COST,
        "contextWindow": _NUMBER,
        "maxTokens": _NUMBER,
        "headers": _STRING_MAP,
        "compat": _COMPAT,
    },
}
_MODEL_OVERRIDE: Final = {
    "type": "object",
    "properties": {
        "name": _STRING,
        "reasoning": _BOOLEAN,
        "thinkingLevelMap": _THINKING_LEVEL_MAP,
        "input": _INPUT,
        "cost": {
            "type": "object",
            "properties": {key: _NUMBER for key in ("input", "output", "cacheRead", "cacheWrite")},
        },
        "contextWindow": _NUMBER,
        "maxTokens": _NUMBER,
        "headers": _STRING_MAP,
        "compat": _COMPAT,
    },
}
_PROVIDER: Final = {
    "type": "object",
    "properties": {
        "name": _STRING,
        "baseUrl": _STRING,
        "apiKey": _STRING,
        "api": _STRING,
        "headers": _STRING_MAP,
        "compat": _COMPAT,
        "authHeader": _BOOLEAN,
        "models": {"type": "array", "items": _MODEL_DEFINITION},
        "modelOverrides": {"type": "object", "additionalProperties": _MODEL_OVERRIDE},
    },
}
MODELS_JSON_SCHEMA: Final[Mapping[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["providers"],
    "properties": {"providers": {"type": "object", "additionalProperties": _PROVIDER}},
}
"""JSON schema of ``models.json`` (pi's TypeBox schema; unknown keys are allowed, as in pi)."""


@functools.cache
def _validator() -> Any:
    # Built on first use: `import pitrio.providers` (and every `pitrio` start) does not import
    # jsonschema, a large import, when no models.json is read.
    import jsonschema  # type: ignore[import-untyped]

    return jsonschema.Draft202012Validator(MODELS_JSON_SCHEMA)


def _schema_problems(data: Any) -> list[str]:
    import jsonschema

    problems = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.path))):
        if error.context:
            # An anyOf (compat): report the member error that got furthest, not the whole union.
            error = jsonschema.exceptions.best_match(error.context)
        path = ".".join(str(part) for part in error.absolute_path)
        if error.validator == "required":
            missing = [key for key in error.validator_value if key not in error.instance]
            for key in missing:
                problems.append(f"{path + '.' if path else ''}{key}: is required")
            continue
        problems.append(f"{path or 'root'}: {error.message}")
    # jsonschema reports each missing key of one object as a separate `required` error.
    return list(dict.fromkeys(problems))


# --------------------------------------------------------------------------- JSON with comments

_STRING_OR_LINE_COMMENT: Final = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')
_STRING_OR_TRAILING_COMMA: Final = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])')


def strip_json_comments(text: str) -> str:
    """Remove ``//`` line comments and trailing commas from JSON text, leaving strings alone."""
    text = _STRING_OR_LINE_COMMENT.sub(
        lambda m: m.group() if m.group().startswith('"') else "", text
    )
    return _STRING_OR_TRAILING_COMMA.sub(
        lambda m: m.group(1) if m.group(1) is not None else m.group(), text
    )


# --------------------------------------------------------------------------- config values


async def resolve_config_value(value: str, *, env: Mapping[str, str] | None = None) -> str | None:
    """Resolve a ``models.json`` ``apiKey`` or header value, as pi does at request time.

    Args:
        value: ``"!command"`` runs ``command`` with ``/bin/sh`` (stdin and stderr discarded;
            it and its children are killed after :data:`CONFIG_COMMAND_TIMEOUT` seconds or
            when the caller is cancelled) and uses its trimmed standard output; any other
            value names an environment variable whose non-empty value is used, and is
            otherwise used literally.
        env: the environment variables to look names up in; ``None`` reads :data:`os.environ`.
            A command always runs in the process environment.

    Returns:
        The value, or ``None`` when a command fails, times out or prints nothing. Nothing is
        cached: a command runs on every call (pi leaves caching to the command).
    """
    if value.startswith("!"):
        return await _run_command(value[1:])
    environ = os.environ if env is None else env
    return environ.get(value) or value


async def _kill_process_group(process: trio.Process) -> None:
    # The shell may have started children that hold stdout open; kill them all, at once (a
    # credential helper that overran its time has nothing to save).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


async def _run_command(command: str) -> str | None:
    with trio.move_on_after(CONFIG_COMMAND_TIMEOUT):
        try:
            done = await trio.run_process(
                command,
                shell=True,
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                stderr=subprocess.DEVNULL,
                check=False,
                # Own process group (same session, so the command can still use /dev/tty).
                process_group=0,
                deliver_cancel=_kill_process_group,
            )
        except OSError:
            return None
        if done.returncode != 0:
            return None
        return done.stdout.decode("utf-8", errors="replace").strip() or None
    return None


async def _resolve_or_raise(
    value: str, description: str, provider: str, env: Mapping[str, str] | None
) -> str:
    resolved = await resolve_config_value(value, env=env)
    if resolved is not None:
        return resolved
    if value.startswith("!"):
        raise RequestAuthError(
            f"Failed to resolve {description} from shell command: {value[1:]}", provider=provider
        )
    raise RequestAuthError(f"Failed to resolve {description}", provider=provider)


async def _resolve_headers(
    headers: Mapping[str, str] | None,
    description: str,
    provider: str,
    env: Mapping[str, str] | None,
) -> dict[str, str] | None:
    if not headers:
        return None
    return {
        name: await _resolve_or_raise(value, f'{description} header "{name}"', provider, env)
        for name, value in headers.items()
    }


# --------------------------------------------------------------------------- result


@attrs.frozen(kw_only=True)
class ProviderRequestConfig:
    """A provider's request settings from ``models.json``, unresolved (see the module docstring)."""

    api_key: str | None = None
    """Literal key, environment variable name, or ``!command``."""
    headers: Mapping[str, str] | None = None
    """Header name -> literal, environment variable name, or ``!command``."""
    auth_header: bool = False
    """Send ``Authorization: Bearer <api key>``."""


@attrs.frozen(kw_only=True)
class RequestAuth:
    """The API key and extra headers for one request."""

    api_key: str | None
    """The key to send, or ``None`` when neither the caller nor ``models.json`` has one."""
    headers: Mapping[str, str] | None
    """Headers to send, or ``None`` when there are none."""


@attrs.frozen(kw_only=True)
class CustomModels:
    """A catalogue with ``models.json`` applied, and the request settings it configured.

    Build one with :func:`load_models_json` or :func:`parse_models_json`. Constructed directly
    with only ``catalogue``, it stands for "no models.json" (the fallback after an error).
    """

    catalogue: ModelCatalogue
    """Built-in models with provider and model overrides applied, plus the custom models."""
    path: Path | None = None
    """The file it was loaded from."""
    provider_configs: Mapping[str, ProviderRequestConfig] = _EMPTY
    """Provider -> its ``apiKey``/``headers``/``authHeader`` (only providers that set one)."""
    model_headers: Mapping[tuple[str, str], Mapping[str, str]] = _EMPTY
    """``(provider, model id)`` -> the ``headers`` of a custom model or model override."""

    def has_configured_auth(self, provider: str) -> bool:
        """Return whether ``models.json`` gives ``provider`` an API key (nothing is run)."""
        config = self.provider_configs.get(provider)
        return config is not None and config.api_key is not None

    async def provider_api_key(
        self, provider: str, *, env: Mapping[str, str] | None = None
    ) -> str | None:
        """Resolve the ``apiKey`` of ``provider``; ``None`` if unset or it does not resolve."""
        config = self.provider_configs.get(provider)
        if config is None or config.api_key is None:
            return None
        return await resolve_config_value(config.api_key, env=env)

    async def resolve_request_auth(
        self,
        model: Model,
        *,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RequestAuth:
        """Resolve the API key and headers to send with a request to ``model``.

        Headers are merged in this order, later winning: ``model.headers``, the provider's
        ``headers``, the model's ``headers`` from ``models.json``; ``authHeader`` then adds
        ``Authorization: Bearer <key>``.

        Args:
            model: the model of the request.
            api_key: a key from the caller's credential store or the environment (pi's
                AuthStorage: runtime override, auth.json, :func:`get_env_api_key`); it wins
                over the ``models.json`` ``apiKey``, which is resolved only without it.
            env: environment for variable-name values; ``None`` reads :data:`os.environ`.

        Raises:
            RequestAuthError: a configured value did not resolve (a command failed), or
                ``authHeader`` is set and there is no key.
        """
        provider = model.provider
        config = self.provider_configs.get(provider, ProviderRequestConfig())
        key = api_key
        if key is None and config.api_key is not None:
            key = await _resolve_or_raise(
                config.api_key, f'API key for provider "{provider}"', provider, env
            )
        provider_headers = await _resolve_headers(
            config.headers, f'provider "{provider}"', provider, env
        )
        model_headers = await _resolve_headers(
            self.model_headers.get((provider, model.id)),
            f'model "{provider}/{model.id}"',
            provider,
            env,
        )
        headers: dict[str, str] = {}
        for part in (model.headers, provider_headers, model_headers):
            if part:
                headers.update(part)
        if config.auth_header:
            if not key:
                raise RequestAuthError(f'No API key found for "{provider}"', provider=provider)
            headers["Authorization"] = f"Bearer {key}"
        return RequestAuth(api_key=key, headers=headers or None)


# --------------------------------------------------------------------------- loading


def load_models_json(
    path: str | os.PathLike[str], *, base: ModelCatalogue | None = None
) -> CustomModels:
    """Read ``models.json`` and apply it to the built-in catalogue.

    The file is read synchronously (it is small; pi re-reads it whenever the model list is
    shown). A missing file is no error: the result holds the built-in models unchanged.

    Args:
        path: the file, usually ``~/.pi/agent/models.json``.
        base: the catalogue to build on; ``None`` uses the packaged built-in catalogue. It is
            not modified.

    Raises:
        ModelsJsonError: the file cannot be read, is not JSON, or does not have pi's shape;
            the message names the file and lists the problems.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return CustomModels(catalogue=_copy(default_catalogue if base is None else base), path=file)
    except OSError as exc:
        raise ModelsJsonError(f"Failed to read models.json: {exc}", [], file) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelsJsonError(f"Failed to parse models.json: {exc}", [], file) from exc
    try:
        data = loads(strip_json_comments(text))
    except ValueError as exc:
        raise ModelsJsonError(f"Failed to parse models.json: {exc}", [], file) from exc
    return parse_models_json(data, path=file, base=base)


def parse_models_json(
    data: Any, *, path: str | os.PathLike[str] | None = None, base: ModelCatalogue | None = None
) -> CustomModels:
    """Apply an already parsed ``models.json`` to the built-in catalogue.

    Args:
        data: the parsed JSON.
        path: where it came from, for error messages and :attr:`CustomModels.path`.
        base: the catalogue to build on; ``None`` uses the packaged built-in catalogue. It is
            not modified.

    Raises:
        ModelsJsonError: ``data`` does not have pi's shape, or a provider lacks what it needs
            (see the problems listed in the message).
    """
    file = None if path is None else Path(path)
    base = default_catalogue if base is None else base
    problems = _schema_problems(data)
    if problems:
        raise ModelsJsonError("Invalid models.json schema:", problems, file)
    providers: dict[str, dict[str, Any]] = data["providers"]
    builtin = set(base.providers())
    problems = list(_config_problems(providers, builtin))
    if problems:
        raise ModelsJsonError("Invalid models.json:", problems, file)

    configs: dict[str, ProviderRequestConfig] = {}
    model_headers: dict[tuple[str, str], Mapping[str, str]] = {}
    for name, entry in providers.items():
        if entry.get("apiKey") or entry.get("headers") is not None or entry.get("authHeader"):
            configs[name] = ProviderRequestConfig(
                api_key=entry.get("apiKey"),
                headers=MappingProxyType(dict(entry["headers"])) if "headers" in entry else None,
                auth_header=bool(entry.get("authHeader")),
            )
        for model_id, override in entry.get("modelOverrides", {}).items():
            _store_headers(model_headers, name, model_id, override.get("headers"))

    catalogue = ModelCatalogue(_builtin_models(base, providers), builtin=False)
    for model in _custom_models(providers, base, builtin, model_headers):
        catalogue.add(model)
    return CustomModels(
        catalogue=catalogue,
        path=file,
        provider_configs=MappingProxyType(configs),
        model_headers=MappingProxyType(model_headers),
    )


def _copy(catalogue: ModelCatalogue) -> ModelCatalogue:
    return catalogue.copy()


def _config_problems(providers: Mapping[str, Any], builtin: set[str]) -> Iterator[str]:
    for name, entry in providers.items():
        models = entry.get("models", [])
        if not models:
            if not (
                entry.get("baseUrl")
                or entry.get("headers") is not None
                or entry.get("compat") is not None
                or entry.get("modelOverrides")
            ):
                yield (
                    f'Provider {name}: must specify "baseUrl", "headers", "compat", '
                    '"modelOverrides", or "models".'
                )
            continue
        if name not in builtin:
            # A new provider needs an endpoint and a key; a built-in one inherits them.
            if not entry.get("baseUrl"):
                yield f'Provider {name}: "baseUrl" is required when defining custom models.'
            if not entry.get("apiKey"):
                yield f'Provider {name}: "apiKey" is required when defining custom models.'
        for definition in models:
            model_id = definition["id"]
            if name not in builtin and not entry.get("api") and not definition.get("api"):
                yield (
                    f'Provider {name}, model {model_id}: no "api" specified. '
                    "Set at provider or model level."
                )
            if definition.get("contextWindow", 1) <= 0:
                yield f"Provider {name}, model {model_id}: invalid contextWindow"
            if definition.get("maxTokens", 1) <= 0:
                yield f"Provider {name}, model {model_id}: invalid maxTokens"


def _merge_compat(
    base: Mapping[str, Any] | None, override: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Overlay ``override`` on ``base``; the two routing objects are merged key by key."""
    if override is None:
        return None if base is None else dict(base)
    base = base or {}
    merged = {**base, **override}
    for key in ("openRouterRouting", "vercelGatewayRouting"):
        # pi tests the routing objects for presence (an empty one counts).
        if base.get(key) is not None or override.get(key) is not None:
            merged[key] = {**(base.get(key) or {}), **(override.get(key) or {})}
    return merged


def _count(value: Any) -> Any:
    # JSON numbers may be written 128000.0; the catalogue keeps token counts as ints.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _override_model(model: Model, override: Mapping[str, Any]) -> Model:
    changes: dict[str, Any] = {}
    if "name" in override:
        changes["name"] = override["name"]
    if "reasoning" in override:
        changes["reasoning"] = override["reasoning"]
    if "thinkingLevelMap" in override:
        changes["thinking_level_map"] = {
            **(model.thinking_level_map or {}),
            **override["thinkingLevelMap"],
        }
    if "input" in override:
        changes["input"] = override["input"]
    if "contextWindow" in override:
        changes["context_window"] = _count(override["contextWindow"])
    if "maxTokens" in override:
        changes["max_tokens"] = _count(override["maxTokens"])
    if "cost" in override:
        cost = override["cost"]
        changes["cost"] = ModelCost(
            input=float(cost.get("input", model.cost.input)),
            output=float(cost.get("output", model.cost.output)),
            cache_read=float(cost.get("cacheRead", model.cost.cache_read)),
            cache_write=float(cost.get("cacheWrite", model.cost.cache_write)),
        )
    changes["compat"] = _merge_compat(model.compat, override.get("compat"))
    return attrs.evolve(model, **changes)


def _builtin_models(base: ModelCatalogue, providers: Mapping[str, Any]) -> Iterator[Model]:
    for name in base.providers():
        entry = providers.get(name, _EMPTY)
        base_url = entry.get("baseUrl")
        compat = entry.get("compat")
        overrides = entry.get("modelOverrides", _EMPTY)
        for model in base.models(name):
            if base_url or compat is not None:
                model = attrs.evolve(
                    model,
                    base_url=base_url or model.base_url,
                    compat=_merge_compat(model.compat, compat),
                )
            override = overrides.get(model.id)
            if override is not None:
                model = _override_model(model, override)
            yield model


def _custom_models(
    providers: Mapping[str, Any],
    base: ModelCatalogue,
    builtin: set[str],
    model_headers: dict[tuple[str, str], Mapping[str, str]],
) -> Iterator[Model]:
    for name, entry in providers.items():
        definitions = entry.get("models", [])
        if not definitions:
            continue
        # A built-in provider's custom models inherit its first model's API and base URL.
        first = base.models(name)[:1] if name in builtin else []
        for definition in definitions:
            api = definition.get("api") or entry.get("api") or (first[0].api if first else None)
            base_url = (
                definition.get("baseUrl")
                or entry.get("baseUrl")
                or (first[0].base_url if first else None)
            )
            if not api or not base_url:
                continue  # pi skips such a model silently
            model_id = definition["id"]
            _store_headers(model_headers, name, model_id, definition.get("headers"))
            cost = definition.get("cost")
            yield Model(
                id=model_id,
                name=definition.get("name", model_id),
                api=api,
                provider=name,
                base_url=base_url,
                reasoning=definition.get("reasoning", False),
                thinking_level_map=definition.get("thinkingLevelMap"),
                input=definition.get("input", ("text",)),
                cost=ModelCost(
                    input=float(cost["input"]),
                    output=float(cost["output"]),
                    cache_read=float(cost["cacheRead"]),
                    cache_write=float(cost["cacheWrite"]),
                )
                if cost is not None
                else ModelCost(),
                context_window=_count(definition.get("contextWindow", DEFAULT_CONTEXT_WINDOW)),
                max_tokens=_count(definition.get("maxTokens", DEFAULT_MAX_TOKENS)),
                compat=_merge_compat(entry.get("compat"), definition.get("compat")),
            )


def _store_headers(
    table: dict[tuple[str, str], Mapping[str, str]],
    provider: str,
    model_id: str,
    headers: Mapping[str, str] | None,
) -> None:
    # A later definition without headers clears an earlier one's (a custom model after an
    # override of the same id), as in pi.
    if headers:
        table[(provider, model_id)] = MappingProxyType(dict(headers))
    else:
        table.pop((provider, model_id), None)
