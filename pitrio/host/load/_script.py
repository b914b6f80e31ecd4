"""The scripted workload of pi's benchmark scenarios, shared by ``pitrio load`` and ``bench/``.

pi's baseline benchmarks (``lib/common.mjs``, ``lib/session.mjs``) define one workload: the
faux provider with a single ``faux-1`` model cutting text into deltas of 4 characters (paced
at a given tokens/s, or not at all), a deterministic text generator (``makeText``), an ``echo``
tool, and a response script that calls ``echo`` once and then answers with the final text. The
sessions share one registry and one set of settings (pi defaults: auto-compaction and retry on)
and get pi's default coding-agent system prompt for the ``echo`` tool alone.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Final

import trio

from pitrio.providers import (
    DEFAULT_YIELD_EVERY,
    AssistantMessage,
    Context,
    FauxModelDefinition,
    FauxProvider,
    FauxState,
    Model,
    ProviderRegistry,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pitrio.sessions import AgentSession, SessionManager, SettingsManager
from pitrio.sessions.resources import build_system_prompt
from pitrio.tools import AgentToolResult, FunctionTool

WORDS: Final = tuple(
    "the agent calls a tool and streams tokens back to user while context grows with each turn "
    "model reply text".split(" ")
)
"""The 20 words of pi's ``makeText``."""
BENCH_CWD: Final = "/bench/cwd"
"""The working directory every benchmark session names (nothing is read from it)."""
ECHO_ARGUMENTS: Final = {"text": "hello world"}
"""What the scripted ``echo`` call passes (22 JSON characters: 6 deltas)."""
SCRIPTED_FAILURE: Final = "load harness: scripted failure"
"""The ``errorMessage`` of a scripted failing answer (not a transient error: never retried)."""
_SESSION_NUMBER: Final = re.compile(r"session (\d+)\b")


def make_text(n: int, seed: int = 12345) -> str:
    """pi's ``makeText``: LCG-chosen words joined by spaces, cut to exactly ``n`` characters."""
    s = seed
    parts: list[str] = []
    length = -1
    while length < n:
        s = (s * 1103515245 + 12345) % 2**32
        word = WORDS[(s >> 16) % 20]
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:n]


def prompt_text(session: int, index: int) -> str:
    """The ``index``-th prompt of session ``session`` (the first is pi's scenario 3 prompt)."""
    if index == 0:
        return f"session {session}: please echo hello world"
    return f"session {session} prompt {index + 1}: please echo hello world"


def register_bench_faux(
    *, tokens_per_second: float | None = None, yield_every: int = DEFAULT_YIELD_EVERY
) -> tuple[FauxProvider, ProviderRegistry]:
    """The benchmark faux provider in a registry of its own: one ``faux-1`` model (pi's
    definition), 4 characters per delta, paced at ``tokens_per_second`` when given."""
    registry = ProviderRegistry()
    faux = register_faux_provider(
        api="faux",
        provider="faux",
        token_size=(1, 1),
        tokens_per_second=tokens_per_second,
        yield_every=yield_every,
        registry=registry,
        models=[
            FauxModelDefinition(
                id="faux-1",
                name="Faux Model",
                input=("text",),
                context_window=1_000_000,
                max_tokens=16_384,
            )
        ],
    )
    return faux, registry


async def _echo(call_id: str, params: dict[str, Any], on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=params["text"])], details={})


def echo_tool() -> FunctionTool:
    """The ``echo`` tool of the pi benchmarks: its result is its ``text`` argument."""
    return FunctionTool(
        name="echo",
        label="Echo",
        description="Echo the given text back.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        fn=_echo,
    )


def _session_number(context: Context) -> int | None:
    first = next((m for m in context.messages if isinstance(m, UserMessage)), None)
    if first is None:
        return None
    content = first.content
    if isinstance(content, str):
        text = content
    else:
        text = next((b.text for b in content if isinstance(b, TextContent)), "")
    match = _SESSION_NUMBER.match(text)
    return int(match.group(1)) if match else None


def tool_then_text(final_text: str, *, tool_call: bool = True, fail_every: int = 0) -> Any:
    """pi's response script, as a factory for the faux queue.

    A request whose last message is a tool result (or any request, without ``tool_call``) gets
    ``final_text``; any other request gets one ``echo`` call. With ``fail_every`` = k, the
    final answers of every k-th session (the prompt's ``session <i>:`` with i + 1 divisible by
    k) end with ``stopReason: "error"`` and :data:`SCRIPTED_FAILURE` instead.
    """
    counter = itertools.count()
    # The answer's one text block, made once: blocks are frozen, so every answer may share it.
    final = (TextContent(text=final_text),)

    def respond(context: Context, *_: Any) -> AssistantMessage:
        last = context.messages[-1] if context.messages else None
        if tool_call and not isinstance(last, ToolResultMessage):
            call = faux_tool_call("echo", dict(ECHO_ARGUMENTS), id=f"call_{next(counter)}")
            return faux_assistant_message((call,), stop_reason="toolUse")
        if fail_every > 0:
            number = _session_number(context)
            if number is not None and (number + 1) % fail_every == 0:
                return faux_assistant_message(
                    final_text, stop_reason="error", error_message=SCRIPTED_FAILURE
                )
        return faux_assistant_message(final)

    return respond


def endless(faux: FauxProvider, respond: Any) -> Any:
    """Wrap a response factory so that it queues itself again on every request: the faux queue
    then never runs dry, however many sessions and prompts share it."""

    def again(context: Context, options: StreamOptions, state: FauxState, model: Model) -> Any:
        faux.append_responses([again])
        return respond(context, options, state, model)

    return again


class LoadSessionFactory:
    """pi's ``lib/session.mjs``: AgentSessions sharing one registry and one set of settings.

    The settings are pi's defaults in memory (auto-compaction and retry on); each session has
    only the ``echo`` tool and pi's default coding-agent system prompt for that tool set.

    Args:
        registry: where the sessions find their provider.
        model: the model every session uses.
        models: the models the sessions know (for restoring and cycling).
        get_api_key: provider name -> API key (a real server's key), as for the Agent.
    """

    def __init__(
        self,
        registry: ProviderRegistry,
        model: Model,
        *,
        models: list[Model] | None = None,
        get_api_key: Any = None,
    ) -> None:
        self.registry = registry
        self.model = model
        self.models = models if models is not None else [model]
        self.get_api_key = get_api_key
        self.settings = SettingsManager.in_memory({})
        self.tool = echo_tool()
        self.system_prompt = build_system_prompt(cwd=BENCH_CWD, selected_tools=["echo"])

    def create(self, manager: SessionManager | None = None) -> AgentSession:
        """One AgentSession, not yet served (``await nursery.start(session.run)``)."""
        options: dict[str, Any] = {}
        if self.get_api_key is not None:
            options["get_api_key"] = self.get_api_key
        session = AgentSession(
            session_manager=manager or SessionManager.in_memory(BENCH_CWD),
            settings=self.settings,
            registry=self.registry,
            model=self.model,
            models=self.models,
            thinking_level="off",
            tools=[self.tool],
            system_prompt=self.system_prompt,
            # As pi's bench clears agent.sessionId: the faux provider's per-session prompt
            # cache (a faux-only artifact) must not be counted.
            provider_session_id=False,
            **options,
        )
        return session

    async def start(
        self, nursery: trio.Nursery, manager: SessionManager | None = None
    ) -> ServedSession:
        """Create one AgentSession and serve it in ``nursery`` under its own cancel scope."""
        served = ServedSession(self.create(manager))
        await nursery.start(served.serve)
        return served


class ServedSession:
    """An AgentSession served in a shared nursery; :meth:`dispose` is pi's ``dispose()``.

    Resource handling:
        :meth:`serve` runs the session under a cancel scope of its own, so one session can be
        stopped without its siblings in the same nursery.
    """

    __slots__ = ("scope", "session")

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.scope = trio.CancelScope()

    async def serve(
        self, *, task_status: trio.TaskStatus[AgentSession] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the session until :meth:`dispose`."""
        run = self.session.run(task_status=task_status)
        del task_status  # nursery.start's status, not to be kept by an idle session's frame
        with self.scope:
            await run

    async def dispose(self) -> None:
        """Close the session (abort, hooks), then stop its tasks."""
        await self.session.aclose()
        self.scope.cancel()
