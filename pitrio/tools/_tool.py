"""pi-agent-core's ``AgentTool``: the tool protocol, a function-backed tool and its decorator."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, TypeAlias, overload

import attrs
import trio

from pitrio._exceptions import UsageError
from pitrio.providers import Tool
from pitrio.tools._exceptions import ToolNotFound
from pitrio.tools._result import AgentToolResult, ToolUpdateCallback, text_result

ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]
"""Whether a tool may run concurrently with the other calls of its batch (pi's
``ToolExecutionMode``). ``"sequential"`` on any called tool makes the whole batch sequential."""

ToolFunction: TypeAlias = Callable[
    [str, dict[str, Any], ToolUpdateCallback],
    Awaitable[AgentToolResult | str] | AgentToolResult | str,
]
"""What :class:`FunctionTool` wraps: ``fn(call_id, params, on_update)``, async or sync, returning
an :class:`AgentToolResult` or a ``str`` (which becomes a single text block)."""


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


class AgentTool(abc.ABC):
    """A tool the agent can run: pi-agent-core's ``AgentTool``.

    Subclass it, give the subclass ``name``, ``label``, ``description`` and ``parameters`` (as
    class attributes, properties or attrs fields) and implement :meth:`execute`. For a tool that is
    just a function, use :func:`tool` instead.

    ``parameters`` is a JSON schema (pi builds it with TypeBox), normally ``{"type": "object",
    ...}``. The agent validates and coerces each call's arguments against it (see
    :func:`~pitrio.tools.validate_tool_arguments`) and caches the compiled validator for as long
    as ``parameters`` is the same object: replace the mapping to change the schema, do not mutate
    it in place.

    The tools codec encodes every ``AgentTool``, of any subclass, as ``{"name", "label",
    "description", "parameters"}`` (plus ``executionMode`` when set), which is what
    ``JSON.stringify`` makes of a pi tool.
    """

    name: str
    """What the model calls the tool by."""
    label: str
    """Human-readable name for UIs."""
    description: str
    """What the model is told the tool does."""
    parameters: Mapping[str, Any]
    """JSON schema of the arguments."""
    execution_mode: ToolExecutionMode | None = None
    """Per-tool override of the agent's tool execution mode; ``None`` keeps the default."""

    def prepare_arguments(self, args: Any) -> Any:
        """Adapt raw tool-call arguments before they are validated (pi's ``prepareArguments``).

        A compatibility shim for arguments in an old or sloppy shape. The default returns
        ``args`` unchanged. ``args`` is the agent's own deep copy, so it may be modified in place.

        Args:
            args: the arguments as the model sent them.

        Returns:
            Arguments that should match :attr:`parameters`.
        """
        return args

    @abc.abstractmethod
    async def execute(
        self,
        call_id: str,
        params: dict[str, Any],
        on_update: ToolUpdateCallback,
    ) -> AgentToolResult:
        """Run one tool call.

        Raise on failure rather than returning an error in ``content``: the agent turns the
        exception's message into an error result for the model.

        Cancellation: there is no abort signal. When the user aborts, the agent cancels the
        task running this method, so it may receive :class:`trio.Cancelled` at any checkpoint.
        Let it propagate and release resources in ``finally`` blocks (shielded, with a timeout,
        if the cleanup itself must await).

        Args:
            call_id: the tool call's id.
            params: the validated, coerced arguments.
            on_update: call it with partial results to stream progress; it does not block.

        Returns:
            The tool's result.
        """

    def to_tool(self) -> Tool:
        """Return the provider's view of this tool: name, description and parameter schema."""
        return Tool(name=self.name, description=self.description, parameters=self.parameters)


@attrs.frozen(kw_only=True, eq=False)
class FunctionTool(AgentTool):
    """An :class:`AgentTool` whose :meth:`execute` calls a function.

    ``fn(call_id, params, on_update)`` may be an async function or a plain one, and may return an
    :class:`AgentToolResult` or a ``str`` (sent to the model as one text block, with no
    details). A plain function runs on the Trio thread, so it must not block; do blocking work in
    an async function with :func:`trio.to_thread.run_sync`.

    Tools compare and hash by identity.
    """

    name: str
    label: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=_empty_object_schema)
    fn: ToolFunction
    """The function that runs each call."""
    execution_mode: ToolExecutionMode | None = None
    prepare: Callable[[Any], Any] | None = None
    """Optional :meth:`prepare_arguments` hook."""

    def prepare_arguments(self, args: Any) -> Any:
        """Apply :attr:`prepare` to the raw arguments, or return them unchanged without one."""
        return args if self.prepare is None else self.prepare(args)

    async def execute(
        self,
        call_id: str,
        params: dict[str, Any],
        on_update: ToolUpdateCallback,
    ) -> AgentToolResult:
        """Call :attr:`fn` and normalise what it returns.

        Raises:
            TypeError: ``fn`` returned something other than an ``AgentToolResult`` or ``str``.
        """
        outcome = self.fn(call_id, params, on_update)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        else:
            # A sync function has no checkpoint of its own; give cancellation one.
            await trio.lowlevel.checkpoint()
        if isinstance(outcome, AgentToolResult):
            return outcome
        if isinstance(outcome, str):
            return text_result(outcome)
        raise TypeError(
            f"tool {self.name!r} returned {type(outcome).__name__}, expected AgentToolResult or str"
        )


@overload
def tool(
    fn: ToolFunction,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    execution_mode: ToolExecutionMode | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
) -> FunctionTool: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    execution_mode: ToolExecutionMode | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
) -> Callable[[ToolFunction], FunctionTool]: ...
def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    execution_mode: ToolExecutionMode | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Build a :class:`FunctionTool` from a function; use directly or as a decorator.

    ::

        @tool(parameters={"type": "object", "properties": {"text": {"type": "string"}}})
        async def echo(call_id, params, on_update):
            \"\"\"Echo the given text back.\"\"\"
            return params["text"]

    Args:
        fn: ``fn(call_id, params, on_update)``; see :class:`FunctionTool`.
        name: the tool's name; defaults to the function's ``__name__``.
        label: the UI label; defaults to the name.
        description: defaults to the function's docstring (or ``""``).
        parameters: JSON schema of the arguments; defaults to an object with no properties.
        execution_mode: ``"sequential"`` or ``"parallel"`` override.
        prepare_arguments: optional shim applied to raw arguments before validation.

    Returns:
        The tool, or (without ``fn``) a decorator that makes one.

    Raises:
        UsageError: no ``name`` was given and ``fn`` has no ``__name__``.
    """

    def build(func: ToolFunction) -> FunctionTool:
        tool_name = name if name is not None else getattr(func, "__name__", None)
        if not tool_name or tool_name == "<lambda>":
            raise UsageError("tool() needs a name= for a function without a usable __name__")
        return FunctionTool(
            name=tool_name,
            label=label if label is not None else tool_name,
            description=description if description is not None else inspect.getdoc(func) or "",
            parameters=parameters if parameters is not None else _empty_object_schema(),
            fn=func,
            execution_mode=execution_mode,
            prepare=prepare_arguments,
        )

    return build if fn is None else build(fn)


def find_tool(tools: Iterable[AgentTool] | None, name: str) -> AgentTool:
    """Return the first tool called ``name``, as pi's ``tools.find(t => t.name === name)``.

    Raises:
        ToolNotFound: no tool has that name; the message is ``Tool NAME not found``.
    """
    for candidate in tools or ():
        if candidate.name == name:
            return candidate
    raise ToolNotFound(name)
