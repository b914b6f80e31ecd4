"""The error the built-in tools raise (see the tree in :mod:`pitrio._exceptions`).

The agent sends its message to the model as an error tool result, as pi does with the ``Error``
its tools throw, so the message is pi's text word for word; the data is in attributes.
"""

from __future__ import annotations

from pitrio.tools._exceptions import ToolError


class FileToolError(ToolError):
    """A built-in tool could not do what it was asked (missing file, text not found, ...).

    Attributes:
        tool_name: the tool that failed (``read``, ``edit``, ...).
        path: the path involved as the model gave it or as it resolved, if any.
        code: the file-system error code (``ENOENT``) when an OS call failed, else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str,
        path: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, tool_name=tool_name)
        self.path = path
        self.code = code
