"""pi-agent-core's tool layer: the ``AgentTool`` protocol, tool results, argument validation.

This layer sits beside :mod:`pitrio.providers`: it imports only :mod:`pitrio.codec`,
:mod:`pitrio.channels` and :mod:`pitrio.providers`, and never ``actors`` or anything above,
which import it. It defines what a tool is and how its arguments are checked; running tools
(ordering, concurrency, cancellation, events) is the agent's job.
"""

from pitrio._publish import publish as _publish
from pitrio.tools._exceptions import SchemaViolation as SchemaViolation
from pitrio.tools._exceptions import ToolArgumentsInvalid as ToolArgumentsInvalid
from pitrio.tools._exceptions import ToolError as ToolError
from pitrio.tools._exceptions import ToolNotFound as ToolNotFound
from pitrio.tools._exceptions import ToolSchemaInvalid as ToolSchemaInvalid
from pitrio.tools._exceptions import tool_not_found_message as tool_not_found_message
from pitrio.tools._result import AgentToolResult as AgentToolResult
from pitrio.tools._result import ToolUpdateCallback as ToolUpdateCallback
from pitrio.tools._result import error_result as error_result
from pitrio.tools._result import text_result as text_result
from pitrio.tools._tool import AgentTool as AgentTool
from pitrio.tools._tool import FunctionTool as FunctionTool
from pitrio.tools._tool import ToolExecutionMode as ToolExecutionMode
from pitrio.tools._tool import ToolFunction as ToolFunction
from pitrio.tools._tool import find_tool as find_tool
from pitrio.tools._tool import tool as tool
from pitrio.tools._validation import validate_tool_arguments as validate_tool_arguments

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "FunctionTool",
    "SchemaViolation",
    "ToolArgumentsInvalid",
    "ToolError",
    "ToolExecutionMode",
    "ToolFunction",
    "ToolNotFound",
    "ToolSchemaInvalid",
    "ToolUpdateCallback",
    "error_result",
    "find_tool",
    "text_result",
    "tool",
    "tool_not_found_message",
    "validate_tool_arguments",
]

_publish(globals(), __all__)
