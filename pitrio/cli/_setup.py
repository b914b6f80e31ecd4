"""From command-line flags to a ready-to-serve AgentSession: models, keys, settings, session.

Kept in one module: the chain from flags to a session (models, keys, settings,
resources) runs in this order once.

pi's ``main`` does this work in ``createAgentSessionServices`` / ``buildSessionOptions`` /
``createSessionManager``; the rules are the same:

* **Agent dirs**: pitrio's (``$PITRIO_CODING_AGENT_DIR`` or ``~/.pitrio/agent``) is where
  everything is written; when that variable is not set, ``models.json`` and ``settings.json``
  missing there are read from pi's (``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``) with a
  one-line notice (:func:`~pitrio.sessions.resources.resolve_agent_dirs`).
* **Models** are the built-in catalogue with the user's ``models.json`` applied (a broken
  file is reported and the built-in catalogue used), plus ``faux/faux-1``.
* **API keys**, for each request: ``--api-key`` (for the chosen model's provider), else its
  ``auth.json`` entry (pitrio's file, then pi's; OAuth tokens renewed), else the provider's
  environment variable (:class:`~pitrio.providers.credentials.CredentialStore`), else the
  ``apiKey`` of ``models.json``; the ``headers`` of ``models.json`` are sent too. A provider
  "has auth" when one of these is present; ``faux`` always has.
* **Model**: ``--model`` (with ``--provider``) as :func:`resolve_cli_model` resolves it; else
  ``--provider`` alone picks that provider's default model (pi ignores ``--provider`` without
  ``--model``); else, for a new session with ``--models`` (or ``enabledModels``), the
  settings' default if it is in that list, else its first model; else a continued session's
  model if its provider has auth; else the settings' ``defaultProvider``/``defaultModel``;
  else the first model with auth in pi's order of preference (never ``faux``, which must be
  asked for). No model: :func:`setup_help`.
* **Session**: see :mod:`pitrio.cli._sessions_cli`. Files go to ``--session-dir``, else
  ``$PITRIO_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting, else the directory's
  folder under ``<agent dir>/sessions/``.
* **Tools and resources**: see :mod:`pitrio.cli._coding`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, cast

import attrs

from pitrio.cli._coding import (
    AgentDirSettingsStorage,
    ResourceRequest,
    available_tool_names,
    create_session_tools,
    resource_dir,
    select_tool_names,
    setting_value,
)
from pitrio.cli._errors import CliError as CliError
from pitrio.cli._faux_cli import FAUX_PROVIDER, FauxScriptError, register_echo_faux
from pitrio.cli._model_resolver import (
    DEFAULT_MODEL_PER_PROVIDER,
    THINKING_LEVELS,
    _locale_key,
    first_available,
    resolve_cli_model,
    resolve_model_scope,
)
from pitrio.cli._sessions_cli import PickSession, open_session_manager
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
from pitrio.providers.credentials import AUTH_FILE, CredentialStore, default_refreshers
from pitrio.sessions import ScopedModel, SessionManager, SettingsManager
from pitrio.sessions.resources import AgentDirs, resolve_agent_dirs
from pitrio.tools import AgentTool
from pitrio.tools.builtin import BashOperations

SESSION_DIR_ENV: Final = "PITRIO_CODING_AGENT_SESSION_DIR"
"""Environment variable naming the session folder (pi: ``PI_CODING_AGENT_SESSION_DIR``)."""
MODELS_FILE: Final = "models.json"

Mode = Literal["text", "json", "rpc"]

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


@attrs.frozen(kw_only=True)
class CliArgs:
    """The parsed command line of the agent command (see ``pitrio --help``)."""

    messages: tuple[str, ...] = ()
    file_args: tuple[str, ...] = ()
    """``@file`` arguments, without the ``@``."""
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
    resume: bool = False
    fork: str | None = None
    models: tuple[str, ...] | None = None
    """``--models`` patterns (``None``: the ``enabledModels`` setting)."""
    tools: tuple[str, ...] | None = None
    no_tools: bool = False
    no_builtin_tools: bool = False
    skills: tuple[str, ...] = ()
    no_skills: bool = False
    prompt_templates: tuple[str, ...] = ()
    no_prompt_templates: bool = False
    no_context_files: bool = False
    export: str | None = None
    verbose: bool = False
    offline: bool = False
    extensions: tuple[str, ...] = ()
    no_extensions: bool = False
    extension_flags: tuple[str, ...] = ()
    """Options the parser did not know: flags registered by extensions (``--name``,
    ``--name=value``, ``--name value``), checked once the extensions are loaded."""
    extension_flag_values: tuple[tuple[int, int], ...] = ()
    """(index in :attr:`extension_flags`, index in :attr:`messages`): the word after that
    flag, which is its value if the flag takes one (then it is no message)."""
    themes: tuple[str, ...] = ()
    no_themes: bool = False

    def unsupported(self) -> list[str]:
        """The flags given for features pitrio does not have yet (none now: ``--theme`` and
        ``--no-themes`` are the interactive mode's, and the other modes ignore them, as pi's
        do)."""
        return []


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
    """Where API keys come from: ``--api-key``, ``auth.json``, the environment (the
    :class:`~pitrio.providers.credentials.CredentialStore`), then ``models.json``."""

    def __init__(
        self, custom: CustomModels, env: Mapping[str, str], store: CredentialStore | None = None
    ) -> None:
        self.custom = custom
        self.env = env
        self.store = store if store is not None else CredentialStore((), env=env)

    def set_runtime_key(self, provider: str, key: str) -> None:
        """Use ``key`` for every request to ``provider`` (``--api-key``)."""
        self.store.set_runtime_key(provider, key)

    def key(self, provider: str) -> str | None:
        """The key from ``--api-key`` or the environment (no ``auth.json``: its values may
        need a command or a token refresh; :meth:`authorize` resolves them)."""
        runtime = self.store.runtime_key(provider)
        return runtime if runtime is not None else get_env_api_key(provider, self.env)

    def has_auth(self, model: Model) -> bool:
        """Whether requests to ``model`` would carry credentials (nothing is run)."""
        provider = model.provider
        return (
            provider == FAUX_PROVIDER
            or self.store.has_auth(provider)
            or self.custom.has_configured_auth(provider)
        )

    async def authorize(self, model: Model, options: StreamOptions) -> StreamOptions:
        """Add the key and the ``models.json`` headers to a request's options.

        Raises:
            RequestAuthError: a ``models.json`` value did not resolve, or an expired OAuth
                token could not be renewed (the request then ends with that error).
        """
        key = options.api_key or await self.store.api_key(model.provider)
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
        """The models that have credentials.

        Credentials belong to a provider, so each provider is checked once (some 30 checks
        for some 1,000 models; ``pitrio serve`` asks this for every session it opens).
        """
        checked: dict[str, bool] = {}
        has_auth = self.credentials.has_auth
        found = []
        for model in self.models:
            usable = checked.get(model.provider)
            if usable is None:
                usable = checked[model.provider] = has_auth(model)
            if usable:
                found.append(model)
        return found


def load_model_setup(
    agent_dir: str,
    env: Mapping[str, str],
    settings: SettingsManager | None = None,
    *,
    models_path: str | None = None,
    auth_paths: Sequence[str] | None = None,
) -> ModelSetup:
    """Read ``models.json`` and build the models, credentials and provider registry.

    Args:
        agent_dir: the folder whose ``models.json`` is read (unless ``models_path`` is given).
        settings: when given, every request gets its ``streamStallTimeoutMs``.
        models_path: the ``models.json`` to read.
        auth_paths: the ``auth.json`` files (default: ``agent_dir``'s).

    Raises:
        CliError: ``$PITRIO_FAUX_SCRIPT`` names a script that cannot be used.
    """
    warnings: list[str] = []
    try:
        custom = load_models_json(models_path or os.path.join(agent_dir, MODELS_FILE))
    except ModelsJsonError as exc:
        warnings.append(f"errors loading models.json:\n{exc}")
        custom = CustomModels(catalogue=ModelCatalogue(_all(default_catalogue), builtin=False))
    paths = auth_paths if auth_paths is not None else (os.path.join(agent_dir, AUTH_FILE),)
    store = CredentialStore.load(paths, env=env, refreshers=default_refreshers())
    warnings.extend(f"errors loading auth.json: {exc}" for exc in store.errors)
    credentials = Credentials(custom, env, store)
    registry = ProviderRegistry()
    for provider in default_registry.providers():
        registry.register(_authorizing(provider, credentials, settings), "pitrio:cli")
    try:
        faux = register_echo_faux(registry, env)
    except FauxScriptError as exc:
        raise CliError(f"Error: {exc}") from exc
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
    scoped: Sequence[tuple[Model, str | None]] = (),
) -> tuple[Model | None, str | None, list[str]]:
    """The session's model (see the module docstring) and a warning if a continued session's
    model could not be restored.

    Args:
        flags: what :func:`resolve_flags_model` found: a model and a thinking level.
        scoped: the ``--models`` list with each entry's thinking level.
    """
    model, thinking = flags
    if model is not None:
        return model, thinking, []
    models = setup.models
    context = manager.build_session_context()
    if scoped and not context.messages:
        provider, model_id = settings.default_provider, settings.default_model
        chosen = next(
            (s for s in scoped if (s[0].provider, s[0].id) == (provider, model_id)), scoped[0]
        )
        return chosen[0], thinking if thinking is not None else chosen[1], []
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


# --------------------------------------------------------------------------- the runtime


@attrs.frozen(kw_only=True)
class Runtime:
    """Everything ``open_agent_session`` needs, and what to load for the system prompt."""

    session_manager: SessionManager
    settings: SettingsManager
    model: Model
    thinking_level: ModelThinkingLevel | None
    setup: ModelSetup
    agent_dir: str
    """pitrio's agent dir (where everything is written)."""
    dirs: AgentDirs
    tool_names: tuple[str, ...] = ()
    tools: tuple[AgentTool, ...] = ()
    available_tools: tuple[AgentTool, ...] = ()
    """Built-in tools the session starts without that ``pi.set_active_tools`` may turn on
    (:func:`~pitrio.cli._coding.available_tool_names`)."""
    scoped_models: tuple[ScopedModel, ...] = ()
    resources: ResourceRequest
    """The resources the system prompt is built from (loaded when the session starts)."""
    base_resources: ResourceRequest | None = None
    """:attr:`resources` before ``resources_discover`` added paths (``None``: the same);
    ``ctx.reload()`` starts from it."""
    verbose: bool = False
    auto_resize_images: bool = True
    """pi's ``images.autoResize`` (the read tool and ``@file`` images)."""
    extensions: Any = None
    """The :class:`~pitrio.extensions.ExtensionRunner` the session's hooks come from (``None``:
    no extension machinery at all)."""

    def session_options(self, system_prompt: str) -> dict[str, Any]:
        """Keyword arguments for :func:`~pitrio.sessions.open_agent_session`."""
        return {
            "session_manager": self.session_manager,
            "settings": self.settings,
            "model": self.model,
            "thinking_level": self.thinking_level,
            "system_prompt": system_prompt,
            "tools": self.tools,
            "models": self.setup.available(),
            "scoped_models": self.scoped_models,
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
    notice: Callable[[str], None] | None = None,
    pick: PickSession | None = None,
    bash_operations: BashOperations | None = None,
    home: str | None = None,
) -> Runtime:
    """Build the runtime the flags describe.

    Args:
        cwd: the working directory.
        env: the environment (keys, agent and session dirs).
        warn: called with each warning as it is found (before any error is raised).
        require_auth: fail at once when the chosen model has no key (there is a prompt).
        notice: called with each notice (a file read from pi's dir, a session of pi's
            copied); default: ``warn``.
        pick: chooses the session for ``-r`` (default: the most recent).
        bash_operations: how the bash tool runs commands (default: the local shell).
        home: the home directory (default: ``env["HOME"]``, else the user's).

    Raises:
        CliError: a flag names an unknown model or session, or no model can be used.
    """
    tell = notice if notice is not None else warn
    dirs = resolve_agent_dirs(env, home=home or env.get("HOME") or None)
    agent_dir = dirs.write_dir
    told: set[str] = set()

    def config_file(name: str) -> str:
        path = dirs.config_file(name)
        message = dirs.fallback_notice(path)
        if message is not None and path not in told:
            told.add(path)
            tell(message)
        return path

    config_file("settings.json")
    settings = SettingsManager.from_storage(AgentDirSettingsStorage(cwd, dirs))
    for error in settings.drain_errors():
        warn(str(error))
    if args.stall_timeout is not None:
        settings.apply_overrides({"streamStallTimeoutMs": round(args.stall_timeout * 1000)})
    setup = load_model_setup(
        agent_dir,
        env,
        settings,
        models_path=config_file(MODELS_FILE),
        auth_paths=dirs.auth_paths(),
    )
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
    patterns = args.models
    if patterns is None:
        patterns = setting_value(settings, "enabledModels", list, warn)
    scoped: list[tuple[Model, str | None]] = []
    if patterns:
        scoped, scope_warnings = resolve_model_scope(patterns, setup.available())
        for warning in scope_warnings:
            warn(warning)
    if args.api_key and flags_model is None and not scoped:
        raise CliError(
            "Error: --api-key requires a model to be specified via --model, --provider or --models"
        )
    manager = open_session_manager(
        args.session,
        cwd=cwd,
        dirs=dirs,
        session_dir=resolve_session_dir(args, env, settings),
        no_session=args.no_session,
        fork=args.fork,
        resume=args.resume,
        continue_session=args.continue_session,
        pick=pick,
        notice=tell,
    )
    try:
        model, thinking, model_warnings = choose_model(
            (flags_model, thinking), setup, settings, manager, scoped
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
    session_cwd = manager.get_cwd()
    tool_names = select_tool_names(
        args.tools, no_tools=args.no_tools, no_builtin_tools=args.no_builtin_tools, warn=warn
    )
    auto_resize = setting_value(settings, "images.autoResize", bool, warn)
    available_names = available_tool_names(args.tools, tool_names, no_tools=args.no_tools)
    all_tools = create_session_tools(
        [*tool_names, *available_names],
        session_cwd,
        command_prefix=setting_value(settings, "shellCommandPrefix", str, warn),
        shell_path=setting_value(settings, "shellPath", str, warn),
        auto_resize_images=auto_resize is not False,
        bash_operations=bash_operations,
    )
    tools, available_tools = all_tools[: len(tool_names)], all_tools[len(tool_names) :]
    resources = ResourceRequest(
        cwd=session_cwd,
        resource_dir=resource_dir(dirs),
        global_settings=settings.global_settings,
        project_settings=settings.project_settings,
        skill_paths=args.skills,
        prompt_template_paths=args.prompt_templates,
        no_skills=args.no_skills,
        no_prompt_templates=args.no_prompt_templates,
        no_context_files=args.no_context_files,
        system_prompt=args.system_prompt,
        append_system_prompt=args.append_system_prompt or None,
    )
    return Runtime(
        session_manager=manager,
        settings=settings,
        model=model,
        thinking_level=cast("ModelThinkingLevel | None", thinking),
        setup=setup,
        agent_dir=agent_dir,
        dirs=dirs,
        tool_names=tuple(tool_names),
        tools=tuple(tools),
        available_tools=tuple(available_tools),
        scoped_models=tuple(
            ScopedModel(model=m, thinking_level=cast("ModelThinkingLevel | None", level))
            for m, level in scoped
        ),
        resources=resources,
        verbose=args.verbose,
        auto_resize_images=auto_resize is not False,
    )


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
    dirs = resolve_agent_dirs(env, home=env.get("HOME") or None)
    agent_dir = dirs.write_dir
    setup = load_model_setup(
        agent_dir, env, models_path=dirs.config_file(MODELS_FILE), auth_paths=dirs.auth_paths()
    )
    search = args.list_models if isinstance(args.list_models, str) else None
    table = format_model_table(setup.available(), search)
    hint = keyless_hint(setup, search, agent_dir)
    if hint is not None:
        table += f"\n{hint}\n"
    return table, list(setup.warnings)
