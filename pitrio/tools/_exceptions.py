"""The tools subtree of pitrio's exception tree.

::

    PitrioError
     +-- ToolError                                   pitrio.tools: a tool call cannot run
          +-- ToolNotFound (also LookupError)        no tool of that name
          +-- ToolArgumentsInvalid (also ValueError) arguments fail the tool's JSON schema
          +-- ToolSchemaInvalid (also ValueError)    the tool's own schema is not a JSON schema
          +-- FileToolError                          a built-in file tool failed

None of these reaches the model as an exception: the agent turns each into an error tool result
(pi's ``prepareToolCall``), whose text is the exception's message.
"""

from __future__ import annotations

from typing import Any

import attrs

from pitrio._exceptions import PitrioError


def tool_not_found_message(name: str) -> str:
    """Return pi-agent-core's text for a call to an unknown tool: ``Tool NAME not found``."""
    return f"Tool {name} not found"


@attrs.frozen(kw_only=True)
class SchemaViolation:
    """One way in which tool arguments fail the tool's schema."""

    path: str
    """Dotted path of the offending value (``root``, ``address.zip``, ``items.0``); for a missing
    required property, the property's own path."""
    message: str
    """What is wrong, in jsonschema's words."""
    keyword: str
    """The schema keyword that failed (``type``, ``required``, ``minimum``, ...)."""


class ToolError(PitrioError):
    """A tool call that cannot run.

    Attributes:
        tool_name: the name the model called.
    """

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolNotFound(ToolError, LookupError):
    """The model called a tool that the agent does not have.

    The message is pi-agent-core's, ``Tool NAME not found``.
    """

    def __init__(self, tool_name: str) -> None:
        super().__init__(tool_not_found_message(tool_name), tool_name=tool_name)


class ToolArgumentsInvalid(ToolError, ValueError):
    """Tool-call arguments that do not match the tool's schema, even after coercion.

    The message is pi-ai's ``Validation failed for tool "NAME": ...`` text, which lists every
    violation and the arguments as received.

    Attributes:
        tool_name: the tool's name.
        errors: every violation, in the order the validator found them.
        arguments: the arguments as received (after ``prepare_arguments``, before coercion).
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str,
        errors: tuple[SchemaViolation, ...],
        arguments: Any,
    ) -> None:
        super().__init__(message, tool_name=tool_name)
        self.errors = errors
        self.arguments = arguments


class ToolSchemaInvalid(ToolError, ValueError):
    """A tool whose ``parameters`` is not a valid JSON schema (a bug in the tool, not the call).

    Attributes:
        tool_name: the tool's name.
    """
