"""From command-line flags to a ready-to-serve AgentSession: models, keys, settings, session.

pi's ``main`` does this work in ``createAgentSessionServices`` / ``buildSessionOptions`` /
``createSessionManager``; the rules are the same:

* **Models** are the built-in catalogue with the user's ``<agent dir>/models.json`` applied
  (a broken file is reported and the built-in catalogue used), plus ``faux/faux-1``.
* **API keys**, for each request: ``--api-key`` (for the chosen model's provider), else the
  provider's environment variable (:func:`~pitrio.providers.get_env_api_key`), else the
  ``apiKey`` of ``models.json``; the ``headers`` of ``models.json`` are sent too. A provider
  "has auth" when one of these is present; ``faux`` always has.
* **Model**: ``--model`` (with ``--provider``) as :func:`resolve_cli_model` resolves it; else
  ``--provider`` alone picks that provider's default model (pi ignores ``--provider`` without
  ``--model``); else a continued session's model if its provider has auth; else the settings'
  ``defaultProvider``/``defaultModel``; else the first model with auth in pi's order of
  preference (never ``faux``, which must be asked for). No model: :func:`setup_help`.
* **Session**: ``--no-session`` in memory; ``--session PATH|ID`` opens a file (or the session of
  this directory whose id starts with ID); ``-c`` continues the most recent session of the
  directory; otherwise a new file. Files go to ``--session-dir``, else
  ``$PITRIO_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting, else the directory's
  folder under ``<agent dir>/sessions/``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, cast

import attrs

from pitrio._exceptions import PitrioError
from pitrio.cli._faux_cli import FAUX_PROVIDER, register_echo_faux
from pitrio.cli._model_resolver import (
    DEFAULT_MODEL_PER_PROVIDER,
    THINKING_LEVELS,
    _locale_key,
    first_available,
    resolve_cli_model,
)
from pitrio.providers import (
    ApiProvider,
    AssistantMessageEventStream,
    Context,
    CustomModels,
    Model,
    ModelCatalogue,
    ModelsJsonError,
    ModelThinkingLevel,
    ProviderRegistry,
    ProviderStreamFn,
    StreamOptions,
    default_catalogue,
    default_registry,
    get_env_api_key,
    load_models_json,
)
from pitrio.sessions import (
    SessionError,
    SessionManager,
    SettingsManager,
    get_default_session_dir,
    get_sessions_dir,
)
from pitrio.sessions._paths import AGENT_DIR_ENV, CONFIG_DIR_NAME

SESSION_DIR_ENV: Final = "PITRIO_CODING_AGENT_SESSION_DIR"
"""Environment variable naming the session folder (pi: ``PI_CODING_AGENT_SESSION_DIR``)."""
MODELS_FILE: Final = "models.json"

Mode = Literal["text", "json", "rpc"]

DEFAULT_SYSTEM_PROMPT: Final = (
    "You are an expert coding assistant operating inside pitrio, a coding agent harness.\n\n"
    "No tools are available in this version of pitrio: answer from the conversation alone.\n\n"
    "Guidelines:\n"
    "- Be concise in your responses"
)
"""The system prompt when ``--system-prompt`` is not given (pi's names its coding tools)."""

SETUP_KEY_VARS: Final = (
    ("ANTHROPIC_API_KEY", "Anthropic"),
    ("OPENAI_API_KEY", "OpenAI"),
    ("GEMINI_API_KEY", "Google Gemini"),
    ("OPENROUTER_API_KEY", "OpenRouter"),
    ("GROQ_API_KEY", "Groq"),
    ("XAI_API_KEY", "xAI"),
    ("MISTRAL_API_KEY", "Mistral"),
    ("DEEPSEEK_API_KEY", "DeepSeek"),
)
"""The key variables the setup help names (every provider's is in ``ENV_API_KEY_VARS``)."""


class CliError(PitrioError):
    """The command cannot go on: the message goes to stderr, the process exits ``exit_code``.

    Attributes:
        exit_code: 1 for a failure, 2 for a usage mistake (as argparse).
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@attrs.frozen(kw_only=True)
class CliArgs:
    """The parsed command line of the agent command (see ``pitrio --help``)."""

    messages: tuple[str, ...] = ()
    print_mode: bool = False
    mode: Mode | None = None
    provider: str | None = None
    model: str | None = None
    thinking: str | None = None
    api_key: str | None = None
    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    continue_session: bool = False
    session: str | None = None
    session_dir: str | None = None
    no_session: bool = False
    list_models: str | bool | None = None
    """``True`` lists every available model; a string filters them."""
    stall_timeout: float | None = None
    """``--stall-timeout``: seconds without a byte before a response fails (0: never)."""


def setup_help(agent_dir: str) -> str:
    """How to configure a provider (shown when no model can be used)."""
    models_path = os.path.join(agent_dir, MODELS_FILE)
    width = max(len(name) for name, _ in SETUP_KEY_VARS)
    keys = "\n".join(
        f"      export {name}=...{' ' * (width - len(name))}  # {label}"
        for name, label in SETUP_KEY_VARS
    )
    return (
        "To use a model provider, do one of:\n"
        "  - put its API key in the environment, for example:\n"
        f"{keys}\n"
        "  - pass a key with --api-key KEY and choose the model with --model PROVIDER/ID\n"
        "  - for a local or self-hosted server (Ollama, vLLM, llama.cpp, LM Studio), describe\n"
        f"    it in {models_path}, for example:\n"
        '      {"providers": {"ollama": {"baseUrl": "http://localhost:11434/v1",\n'
        '        "api": "openai-completions", "apiKey": "ollama",\n'
        '        "models": [{"id": "llama3.1:8b"}]}}}\n'
        '  - or try pitrio without any key: pitrio --provider faux -p "Hello"'
    )


def no_model_message(agent_dir: str) -> str:
    """The error when no provider is configured."""
    return f"No models available: no API key is configured.\n\n{setup_help(agent_dir)}"


def no_key_message(provider: str, agent_dir: str) -> str:
    """The error when the chosen model's provider has no key."""
    return f"No API key found for {provider}.\n\n{setup_help(agent_dir)}"


# --------------------------------------------------------------------------- models and keys


class Credentials:
    """Where API keys come from: ``--api-key``, the environment, ``models.json``."""

    def __init__(self, custom: CustomModels, env: Mapping[str, str]) -> None:
        self.custom = custom
        self.env = env
        self._runtime_keys: dict[str, str] = {}

    def set_runtime_key(self, provider: str, key: str) -> None:
        """Use ``key`` for every request to ``provider`` (``--api-key``)."""
        self._runtime_keys[provider] = key

    def key(self, provider: str) -> str | None:
        """The key from ``--api-key`` or the environment (``models.json`` comes later)."""
        runtime = self._runtime_keys.get(provider)
        return runtime if runtime is not None else get_env_api_key(provider, self.env)

    def has_auth(self, model: Model) -> bool:
        """Whether requests to ``model`` would carry credentials (nothing is run)."""
        provider = model.provider
        return (
            provider == FAUX_PROVIDER
            or self.key(provider) is not None
            or self.custom.has_configured_auth(provider)
        )

    async def authorize(self, model: Model, options: StreamOptions) -> StreamOptions:
        """Add the key and the ``models.json`` headers to a request's options.

        Raises:
            RequestAuthError: a ``models.json`` value did not resolve (the request then ends
                with that error).
        """
        key = options.api_key or self.key(model.provider)
        auth = await self.custom.resolve_request_auth(model, api_key=key, env=self.env)
        headers = {**(auth.headers or {}), **(options.headers or {})}
        return attrs.evolve(options, api_key=auth.api_key, headers=headers or None)


def _authorizing(
    provider: ApiProvider, credentials: Credentials, settings: SettingsManager | None
) -> ApiProvider:
    def wrap(fn: ProviderStreamFn) -> ProviderStreamFn:
        async def stream(
            model: Model,
            context: Context,
            options: StreamOptions,
            out: AssistantMessageEventStream,
        ) -> None:
            options = await credentials.authorize(model, options)
            if settings is not None and options.stall_timeout_ms is None:
                # streamStallTimeoutMs (or --stall-timeout, applied as an override), read per
                # request; a value the session already put in the options wins.
                stall = settings.stream_stall_timeout_ms
                if stall is not None:
                    options = attrs.evolve(options, stall_timeout_ms=stall)
            await fn(model, context, options, out)

        return stream

    return ApiProvider(
        api=provider.api, stream=wrap(provider.stream), stream_simple=wrap(provider.simple())
    )


@attrs.frozen(kw_only=True)
class ModelSetup:
    """The models the command can use, their credentials, and the registry that serves them."""

    models: tuple[Model, ...]
    """Every model: the catalogue with ``models.json`` applied, then ``faux/faux-1``."""
    credentials: Credentials
    registry: ProviderRegistry
    """The built-in providers, each adding the credentials to its requests, and ``faux``."""
    warnings: tuple[str, ...] = ()

    def available(self) -> list[Model]:
        """The models that have credentials."""
        return [m for m in self.models if self.credentials.has_auth(m)]


def load_model_setup(
    agent_dir: str, env: Mapping[str, str], settings: SettingsManager | None = None
) -> ModelSetup:
    """Read ``models.json`` and build the models, credentials and provider registry.

    Args:
        settings: when given, every request gets its ``streamStallTimeoutMs``.
    """
    warnings: list[str] = []
    try:
        custom = load_models_json(os.path.join(agent_dir, MODELS_FILE))
    except ModelsJsonError as exc:
        warnings.append(f"errors loading models.json:\n{exc}")
        custom = CustomModels(catalogue=ModelCatalogue(_all(default_catalogue), builtin=False))
    credentials = Credentials(custom, env)
    registry = ProviderRegistry()
    for provider in default_registry.providers():
        registry.register(_authorizing(provider, credentials, settings), "pitrio:cli")
    faux = register_echo_faux(registry)
    models = (*_all(custom.catalogue), *faux.models)
    return ModelSetup(
        models=models, credentials=credentials, registry=registry, warnings=tuple(warnings)
    )


def _all(catalogue: ModelCatalogue) -> list[Model]:
    return [m for provider in catalogue.providers() for m in catalogue.models(provider)]


def _find(models: Sequence[Model], provider: str, model_id: str) -> Model | None:
    return next((m for m in models if m.provider == provider and m.id == model_id), None)


def resolve_flags_model(
    args: CliArgs, models: Sequence[Model]
) -> tuple[Model | None, str | None, list[str]]:
    """The model and thinking level ``--provider``/``--model`` ask for, and warnings.

    Raises:
        CliError: unknown provider or model.
    """
    if args.model:
        resolved = resolve_cli_model(args.provider, args.model, models)
        if resolved.error is not None:
            raise CliError(f"Error: {resolved.error}")
        warnings = [resolved.warning] if resolved.warning else []
        return resolved.model, resolved.thinking_level, warnings
    if args.provider:
        wanted = args.provider.lower()
        same = [m for m in models if m.provider.lower() == wanted]
        if not same:
            hint = "Use --list-models to see available providers/models."
            raise CliError(f'Error: Unknown provider "{args.provider}". {hint}')
        default_id = DEFAULT_MODEL_PER_PROVIDER.get(same[0].provider)
        return next((m for m in same if m.id == default_id), same[0]), None, []
    return None, None, []


def choose_model(
    flags: tuple[Model | None, str | None],
    setup: ModelSetup,
    settings: SettingsManager,
    manager: SessionManager,
) -> tuple[Model | None, str | None, list[str]]:
    """The session's model (see the module docstring) and a warning if a continued session's
    model could not be restored.

    Args:
        flags: what :func:`resolve_flags_model` found: a model and a thinking level.
    """
    model, thinking = flags
    if model is not None:
        return model, thinking, []
    models = setup.models
    context = manager.build_session_context()
    fallback: str | None = None
    if context.messages and context.model is not None:
        saved = context.model
        restored = _find(models, saved.provider, saved.model_id)
        if restored is not None and setup.credentials.has_auth(restored):
            return restored, thinking, []
        fallback = f"Could not restore model {saved.provider}/{saved.model_id}"
    provider, model_id = settings.default_provider, settings.default_model
    if provider and model_id:
        model = _find(models, provider, model_id)
    if model is None:
        keyed = [m for m in models if m.provider != FAUX_PROVIDER]
        model = first_available(keyed, setup.credentials.has_auth)
    warnings = []
    if fallback is not None and model is not None:
        warnings.append(f"{fallback}. Using {model.provider}/{model.id}")
    return model, thinking, warnings


# --------------------------------------------------------------------------- sessions


def resolve_session_dir(
    args: CliArgs, env: Mapping[str, str], settings: SettingsManager
) -> str | None:
    """``--session-dir``, else ``$PITRIO_CODING_AGENT_SESSION_DIR``, else the setting."""
    if args.session_dir:
        return args.session_dir
    configured = env.get(SESSION_DIR_ENV)
    if configured:
        return _expand_tilde(configured)
    return settings.session_dir


def _session_path(arg: str, cwd: str, session_dir: str, sessions_root: str) -> str:
    """A ``--session`` value: a path as it is, else the id prefix of a session of ``cwd``."""
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        return arg
    for info in SessionManager.list_sessions(cwd, session_dir):
        if info.id.startswith(arg):
            return info.path
    elsewhere = [s for s in SessionManager.list_all_sessions(sessions_root) if s.id.startswith(arg)]
    if elsewhere:
        # pi asks whether to fork it into this directory; there is no one to ask here.
        found = elsewhere[0]
        raise CliError(
            f"Session {found.id} belongs to another project ({found.cwd}). "
            f"Open it by its path: --session {found.path}"
        )
    raise CliError(f"No session found matching '{arg}'")


def open_session_manager(
    args: CliArgs, cwd: str, session_dir: str | None, agent_dir: str
) -> SessionManager:
    """The SessionManager the flags ask for.

    Args:
        session_dir: the folder of this directory's sessions (``None``: the default one under
            ``agent_dir``).

    Raises:
        CliError: no session matches ``--session``, the file is damaged, or the directory it
            was recorded in no longer exists.
    """
    if args.no_session:
        return SessionManager.in_memory(cwd)
    try:
        directory = session_dir or get_default_session_dir(cwd, agent_dir)
        if args.session:
            path = _session_path(args.session, cwd, directory, get_sessions_dir(agent_dir))
            # An opened file's new sessions go next to it unless a folder was named (pi).
            manager = SessionManager.open(path, session_dir)
        elif args.continue_session:
            manager = SessionManager.continue_recent(cwd, directory)
        else:
            return SessionManager.create(cwd, directory)
    except (SessionError, OSError) as exc:
        raise CliError(f"Error: {exc}") from exc
    session_cwd = manager.get_cwd()
    if manager.get_session_file() and session_cwd and not os.path.isdir(session_cwd):
        manager.close()
        raise CliError(
            f"Stored session working directory does not exist: {session_cwd}\n"
            f"Session file: {manager.get_session_file()}\n"
            f"Current working directory: {cwd}"
        )
    return manager


# --------------------------------------------------------------------------- system prompt


def _prompt_input(value: str, what: str, warn: Callable[[str], None]) -> str:
    """A prompt flag's value: the contents of the file it names, else the text itself."""
    if os.path.exists(value):
        try:
            return Path(value).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            warn(f"Could not read {what} file {value}: {exc}")
    return value


def build_system_prompt(
    args: CliArgs, cwd: str, warn: Callable[[str], None], today: datetime.date | None = None
) -> str:
    """The base prompt (``--system-prompt``: text or a file), the appended parts, the date
    and the working directory, laid out as pi lays out a custom prompt."""
    prompt = (
        _prompt_input(args.system_prompt, "system prompt", warn)
        if args.system_prompt
        else DEFAULT_SYSTEM_PROMPT
    )
    appended = [_prompt_input(v, "append system prompt", warn) for v in args.append_system_prompt]
    if appended:
        prompt += "\n\n" + "\n\n".join(appended)
    date = (today or datetime.date.today()).isoformat()
    return f"{prompt}\nCurrent date: {date}\nCurrent working directory: {cwd.replace(os.sep, '/')}"


# --------------------------------------------------------------------------- the runtime


@attrs.frozen(kw_only=True)
class Runtime:
    """Everything ``open_agent_session`` needs."""

    session_manager: SessionManager
    settings: SettingsManager
    model: Model
    thinking_level: ModelThinkingLevel | None
    setup: ModelSetup
    system_prompt: str
    agent_dir: str

    def session_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`~pitrio.sessions.open_agent_session`."""
        return {
            "session_manager": self.session_manager,
            "settings": self.settings,
            "model": self.model,
            "thinking_level": self.thinking_level,
            "system_prompt": self.system_prompt,
            "models": self.setup.available(),
            "registry": self.setup.registry,
            "has_auth": self.setup.credentials.has_auth,
        }


def build_runtime(
    args: CliArgs,
    *,
    cwd: str,
    env: Mapping[str, str],
    warn: Callable[[str], None],
    require_auth: bool = True,
) -> Runtime:
    """Build the runtime the flags describe.

    Args:
        cwd: the working directory.
        env: the environment (keys, agent and session dirs).
        warn: called with each warning as it is found (before any error is raised).
        require_auth: fail at once when the chosen model has no key (there is a prompt).

    Raises:
        CliError: a flag names an unknown model or session, or no model can be used.
    """
    agent_dir = _agent_dir(env)
    settings = SettingsManager.create(cwd, agent_dir)
    for error in settings.drain_errors():
        warn(str(error))
    if args.stall_timeout is not None:
        settings.apply_overrides({"streamStallTimeoutMs": round(args.stall_timeout * 1000)})
    setup = load_model_setup(agent_dir, env, settings)
    for warning in setup.warnings:
        warn(warning)
    flags_model, thinking, flag_warnings = resolve_flags_model(args, setup.models)
    for warning in flag_warnings:
        warn(warning)
    if args.thinking is not None:
        if args.thinking in THINKING_LEVELS:
            thinking = args.thinking
        else:
            valid = ", ".join(THINKING_LEVELS)
            warn(f'Invalid thinking level "{args.thinking}". Valid values: {valid}')
    if args.api_key and flags_model is None:
        raise CliError(
            "Error: --api-key requires a model to be specified via --model or --provider"
        )
    manager = open_session_manager(args, cwd, resolve_session_dir(args, env, settings), agent_dir)
    try:
        model, thinking, model_warnings = choose_model(
            (flags_model, thinking), setup, settings, manager
        )
        for warning in model_warnings:
            warn(warning)
        if model is None:
            raise CliError(no_model_message(agent_dir))
        if args.api_key:
            setup.credentials.set_runtime_key(model.provider, args.api_key)
        if require_auth and not setup.credentials.has_auth(model):
            raise CliError(no_key_message(model.provider, agent_dir))
    except BaseException:
        manager.close()
        raise
    return Runtime(
        session_manager=manager,
        settings=settings,
        model=model,
        thinking_level=cast("ModelThinkingLevel | None", thinking),
        setup=setup,
        system_prompt=build_system_prompt(args, manager.get_cwd(), warn),
        agent_dir=agent_dir,
    )


def _agent_dir(env: Mapping[str, str]) -> str:
    configured = env.get(AGENT_DIR_ENV)
    if configured:
        return _expand_tilde(configured)
    return os.path.join(os.path.expanduser("~"), CONFIG_DIR_NAME, "agent")


def _expand_tilde(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return os.path.expanduser("~") + path[1:]
    return path


# --------------------------------------------------------------------------- --list-models


def _token_count(count: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "K")):
        if count >= size:
            value = count / size
            return f"{value:.0f}{suffix}" if value.is_integer() else f"{value:.1f}{suffix}"
    return str(count)


def _fuzzy_matches(token: str, text: str) -> bool:
    """pi-tui's fuzzy match: the token's characters appear in order in the text; ``abc12``
    may also match as ``12abc``."""

    def subsequence(query: str) -> bool:
        rest = iter(text)
        return all(ch in rest for ch in query)

    token, text = token.lower(), text.lower()
    if subsequence(token):
        return True
    letters = token.rstrip("0123456789")
    digits = token[len(letters) :]
    if letters.isalpha() and letters.isascii() and digits:
        return subsequence(digits + letters)
    digits = token.rstrip("abcdefghijklmnopqrstuvwxyz")
    letters = token[len(digits) :]
    return bool(digits.isdigit() and letters) and subsequence(letters + digits)


def format_model_table(models: Sequence[Model], search: str | None = None) -> str:
    """pi's ``--list-models`` table: provider, model, context, max-out, thinking, images."""
    if search:
        tokens = search.split()
        models = [
            m for m in models if all(_fuzzy_matches(t, f"{m.provider} {m.id}") for t in tokens)
        ]
        if not models:
            return f'No models matching "{search}"\n'
    ordered = sorted(models, key=lambda m: (_locale_key(m.provider), _locale_key(m.id)))
    header = ("provider", "model", "context", "max-out", "thinking", "images")
    rows = [header] + [
        (
            m.provider,
            m.id,
            _token_count(m.context_window),
            _token_count(m.max_tokens),
            "yes" if m.reasoning else "no",
            "yes" if "image" in m.input else "no",
        )
        for m in ordered
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines) + "\n"


def _matching(models: Sequence[Model], search: str) -> list[Model]:
    tokens = search.split()
    return [m for m in models if all(_fuzzy_matches(t, f"{m.provider} {m.id}") for t in tokens)]


def keyless_hint(setup: ModelSetup, search: str | None, agent_dir: str) -> str | None:
    """Why ``--list-models`` shows less than the user may expect, or ``None``.

    Models are listed only for providers with a configured key. When no provider has one
    (only ``faux`` is listed), or a search matches nothing listed but matches models of
    providers without a key, say so and how to configure a key (:func:`setup_help`).
    """
    keyed = [m for m in setup.available() if m.provider != FAUX_PROVIDER]
    if search is None:
        if keyed:
            return None
        return (
            "Only the keyless faux model is listed: models are listed only for providers with "
            f"a configured API key, and none is configured.\n\n{setup_help(agent_dir)}"
        )
    if _matching(setup.available(), search):
        return None
    unkeyed = [m for m in _matching(setup.models, search) if not setup.credentials.has_auth(m)]
    if not unkeyed:
        return None
    providers = sorted({m.provider for m in unkeyed}, key=_locale_key)
    shown = ", ".join(providers[:LISTED_PROVIDERS])
    if len(providers) > LISTED_PROVIDERS:
        shown += f" and {len(providers) - LISTED_PROVIDERS} more"
    count = f"{len(unkeyed)} model{'s' if len(unkeyed) != 1 else ''}"
    return (
        "Models are listed only for providers with a configured API key.\n"
        f"{count} of providers without a key match: {shown}.\n\n{setup_help(agent_dir)}"
    )


LISTED_PROVIDERS: Final = 5
"""Providers named in :func:`keyless_hint` before "and N more"."""


def list_models(args: CliArgs, *, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """The ``--list-models`` output (models with credentials) and warnings.

    When keys are the reason the list is short or empty, :func:`keyless_hint` follows the
    table (pi only says ``No models matching``).
    """
    agent_dir = _agent_dir(env)
    setup = load_model_setup(agent_dir, env)
    search = args.list_models if isinstance(args.list_models, str) else None
    table = format_model_table(setup.available(), search)
    hint = keyless_hint(setup, search, agent_dir)
    if hint is not None:
        table += f"\n{hint}\n"
    return table, list(setup.warnings)
