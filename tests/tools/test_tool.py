"""The AgentTool protocol, FunctionTool, the tool() factory and tool results on the wire."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import pytest
import trio
import trio.testing

import pitrio.tools
from pitrio._exceptions import UsageError
from pitrio.codec import dumps, from_wire, to_wire
from pitrio.providers import ImageContent, TextContent, Tool
from pitrio.tools import (
    AgentTool,
    AgentToolResult,
    FunctionTool,
    ToolError,
    ToolNotFound,
    ToolUpdateCallback,
    error_result,
    find_tool,
    text_result,
    tool,
    tool_not_found_message,
)

from pi_data import load_json, load_jsonl

ECHO_PARAMETERS = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "description": "Text to echo"}},
}


async def echo_fn(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> Any:
    on_update(text_result("working", {"progress": 0.5}))
    await trio.lowlevel.checkpoint()
    return AgentToolResult(
        content=[TextContent(text=params["text"])],
        details={"echoed": params["text"], "toolCallId": call_id},
    )


ECHO = FunctionTool(
    name="echo",
    label="Echo",
    description="Echo the given text back.",
    parameters=ECHO_PARAMETERS,
    fn=echo_fn,
)


# --------------------------------------------------------------------------- results


def test_error_result_has_pi_shape() -> None:
    """``error_result`` encodes as pi's ``{content: [text], details: {}}``."""
    assert to_wire(error_result("Tool nope not found")) == {
        "content": [{"type": "text", "text": "Tool nope not found"}],
        "details": {},
    }


def test_text_result_without_details_omits_them() -> None:
    """A result whose details are ``None`` leaves ``details`` out, as pi does for undefined."""
    assert to_wire(text_result("hi")) == {"content": [{"type": "text", "text": "hi"}]}
    assert to_wire(text_result("hi", {"n": 1})) == {
        "content": [{"type": "text", "text": "hi"}],
        "details": {"n": 1},
    }


def test_result_encodes_terminate_and_images() -> None:
    """``terminate`` is written only when set; image blocks use pi's camelCase keys."""
    result = AgentToolResult(
        content=[ImageContent(data="aGk=", mime_type="image/png")], details=[1], terminate=True
    )
    assert result.content == (ImageContent(data="aGk=", mime_type="image/png"),)
    assert to_wire(result) == {
        "content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
        "details": [1],
        "terminate": True,
    }


def test_result_decodes_pi_json_and_keeps_unknown_keys() -> None:
    """pi's tool results decode, and unknown keys survive a round trip."""
    data = {
        "content": [{"type": "text", "text": "one"}],
        "details": {"echoed": "one"},
        "x-future": 1,
    }
    result = from_wire(AgentToolResult, data)
    assert result.content == (TextContent(text="one"),)
    assert result.details == {"echoed": "one"}
    assert result.terminate is None
    assert to_wire(result) == data


def test_pi_tool_execution_results_round_trip() -> None:
    """Every tool result in pi's captured agent events decodes and re-encodes unchanged."""
    events = [
        event
        for name in ("agent_events_tool_call.jsonl", "agent_events_steering.jsonl")
        for event in load_jsonl(name)
        if event["type"] in ("tool_execution_end", "tool_execution_update")
    ]
    assert events
    for event in events:
        key = "result" if event["type"] == "tool_execution_end" else "partialResult"
        assert to_wire(from_wire(AgentToolResult, event[key])) == event[key]


# --------------------------------------------------------------------------- tools


async def test_function_tool_executes_and_streams_updates() -> None:
    """``FunctionTool.execute`` calls the function, which reports progress through on_update."""
    updates: list[AgentToolResult] = []
    result = await ECHO.execute("call_1", {"text": "héllo"}, updates.append)
    assert result.content == (TextContent(text="héllo"),)
    assert result.details == {"echoed": "héllo", "toolCallId": "call_1"}
    assert updates == [text_result("working", {"progress": 0.5})]


async def test_function_returning_str_becomes_a_text_result() -> None:
    """A function may return a plain string, which becomes one text block without details."""

    async def shout(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> str:
        return str(params["text"]).upper()

    shout_tool = tool(shout, parameters=ECHO_PARAMETERS)
    assert await shout_tool.execute("c", {"text": "hi"}, lambda _: None) == text_result("HI")


async def test_sync_function_is_accepted() -> None:
    """A plain (non-async) function works too and may return either kind of result."""

    def add(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> str:
        return str(params["a"] + params["b"])

    assert await tool(add).execute("c", {"a": 1, "b": 2}, lambda _: None) == text_result("3")


async def test_function_with_a_wrong_return_type_raises() -> None:
    """Returning anything but a result or a string is a ``TypeError`` (an error for the model)."""

    async def broken(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> Any:
        return 42

    with pytest.raises(TypeError, match="'broken' returned int"):
        await tool(broken).execute("c", {}, lambda _: None)


async def test_execute_is_cancelled_by_trio_and_cleans_up() -> None:
    """A cancelled tool sees ``trio.Cancelled`` at its checkpoint and runs its ``finally``."""
    cleaned: list[str] = []

    async def slow(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> str:
        try:
            await trio.sleep_forever()
        finally:
            cleaned.append(call_id)
        return "never"  # pragma: no cover

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tool(slow).execute, "c1", {}, lambda _: None)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
    assert scope.cancelled_caught
    assert cleaned == ["c1"]


def test_tool_decorator_defaults_come_from_the_function() -> None:
    """``@tool`` takes the name from ``__name__``, the label from the name, the docs from the
    docstring, and an empty object schema for parameters."""

    @tool
    async def list_files(
        call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
    ) -> str:
        """List the files in the workspace."""
        return ""

    assert isinstance(list_files, FunctionTool)
    assert (list_files.name, list_files.label) == ("list_files", "list_files")
    assert list_files.description == "List the files in the workspace."
    assert list_files.parameters == {"type": "object", "properties": {}}
    assert list_files.execution_mode is None


def test_tool_decorator_with_arguments() -> None:
    """``@tool(...)`` overrides every default and sets the execution mode and prepare hook."""

    @tool(
        name="read",
        label="Read file",
        description="Read a file.",
        parameters=ECHO_PARAMETERS,
        execution_mode="sequential",
        prepare_arguments=lambda args: {"text": args.get("path", "")},
    )
    def read_file(call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback) -> str:
        return ""

    assert (read_file.name, read_file.label, read_file.description) == (
        "read",
        "Read file",
        "Read a file.",
    )
    assert read_file.execution_mode == "sequential"
    assert read_file.prepare_arguments({"path": "a.txt"}) == {"text": "a.txt"}


def test_tool_needs_a_name_for_a_lambda() -> None:
    """A lambda has no usable name, so ``tool()`` insists on ``name=``."""
    with pytest.raises(UsageError):
        tool(lambda call_id, params, on_update: "")
    assert tool(lambda call_id, params, on_update: "", name="anon").name == "anon"


def test_prepare_arguments_defaults_to_identity() -> None:
    """Without a hook, ``prepare_arguments`` returns the very same object."""
    args = {"text": "x"}
    assert ECHO.prepare_arguments(args) is args


def test_to_tool_is_what_the_provider_sees() -> None:
    """``to_tool`` gives the provider's ``Tool``: name, description and schema only."""
    assert ECHO.to_tool() == Tool(
        name="echo", description="Echo the given text back.", parameters=ECHO_PARAMETERS
    )


def test_function_tools_compare_by_identity() -> None:
    """Two FunctionTools with equal fields are still different tools."""
    twin = FunctionTool(
        name="echo",
        label="Echo",
        description=ECHO.description,
        parameters=ECHO_PARAMETERS,
        fn=echo_fn,
    )
    assert twin != ECHO
    assert len({twin, ECHO}) == 2


# --------------------------------------------------------------------------- tools on the wire


def test_agent_tool_encodes_like_json_stringify_of_a_pi_tool() -> None:
    """A tool encodes as pi's ``{name, label, description, parameters}``, in that order."""
    pi_tools = load_json("agent_events_tool_call.input.json")["tools"]
    encoded = to_wire(ECHO)
    assert encoded == pi_tools[0]
    assert list(encoded) == ["name", "label", "description", "parameters"]
    assert dumps([ECHO]) == (
        b'[{"name":"echo","label":"Echo","description":"Echo the given text back.",'
        b'"parameters":{"type":"object","required":["text"],"properties":'
        b'{"text":{"type":"string","description":"Text to echo"}}}}]'
    )


def test_subclassed_agent_tool_encodes_with_its_execution_mode() -> None:
    """A user's AgentTool subclass encodes the same way, adding ``executionMode`` when set."""

    class Bash(AgentTool):
        name = "bash"
        label = "Bash"
        description = "Run a command."
        parameters: Mapping[str, Any] = {
            "type": "object",
            "properties": {"limit": {"type": "number"}},
        }
        execution_mode = "sequential"

        async def execute(
            self, call_id: str, params: dict[str, Any], on_update: ToolUpdateCallback
        ) -> AgentToolResult:
            return text_result("ok")

    assert to_wire(Bash()) == {
        "name": "bash",
        "label": "Bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"limit": {"type": "number"}}},
        "executionMode": "sequential",
    }
    assert to_wire([Bash(), ECHO])[1]["name"] == "echo"


def test_agent_tool_cannot_be_instantiated_without_execute() -> None:
    """``execute`` is abstract: a subclass that forgets it cannot be created."""

    class Incomplete(AgentTool):
        name = "x"

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


# --------------------------------------------------------------------------- lookup


def test_find_tool_returns_the_first_tool_with_the_name() -> None:
    """``find_tool`` returns the first match, as pi's ``tools.find``."""
    other = tool(echo_fn, name="echo")
    assert find_tool([ECHO, other], "echo") is ECHO


def test_unknown_tool_uses_pi_agent_core_wording() -> None:
    """An unknown tool raises ``ToolNotFound`` with the message ``Tool NAME not found``."""
    assert tool_not_found_message("nope") == "Tool nope not found"
    with pytest.raises(ToolNotFound) as info:
        find_tool([ECHO], "nope")
    assert str(info.value) == "Tool nope not found"
    assert info.value.tool_name == "nope"
    assert isinstance(info.value, ToolError)
    assert isinstance(info.value, LookupError)
    with pytest.raises(ToolNotFound):
        find_tool(None, "echo")


# --------------------------------------------------------------------------- namespace


def _ruff_sort_key(name: str) -> tuple[int, str]:
    if name.isupper() or (name.upper() == name and "_" in name):
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_namespace_all_is_sorted_and_complete() -> None:
    """``pitrio.tools.__all__`` is in ruff's isort-style order and lists every public name."""
    names = pitrio.tools.__all__
    assert names == sorted(set(names), key=_ruff_sort_key)
    public = {
        name
        for name, value in vars(pitrio.tools).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "pitrio").startswith("pitrio")
        and not isinstance(value, type(pitrio))
    }
    assert public <= set(names)


def test_public_classes_report_their_public_path() -> None:
    """Public classes say they live in ``pitrio.tools``, not in an underscore module."""
    module = importlib.import_module("pitrio.tools")
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type):
            assert obj.__module__ == "pitrio.tools", name
