"""pitrio's exception tree.

::

    PitrioError
     +-- WireFormatError (also ValueError)       pitrio.codec: JSON not of the expected pi shape
     +-- UsageError (also RuntimeError)          a caller mistake (prompting a busy agent ...)
     +-- ProviderError                           pitrio.providers
     |    +-- ProviderNotFound (also LookupError) no provider for a model's API
     |    +-- ModelNotFound (also LookupError)    no such model in the catalogue
     +-- ToolError                               pitrio.tools (turned into error tool results)
          +-- ToolNotFound (also LookupError)
          +-- ToolArgumentsInvalid (also ValueError)  arguments fail the JSON schema
          +-- ToolSchemaInvalid (also ValueError)     a tool's own schema is not valid

Provider *failures* (HTTP errors, dropped connections, aborts) are not exceptions: they end a
stream with an ``error`` event whose message carries ``stop_reason`` and ``error_message``.
Caller mistakes raise ``UsageError`` (a ``RuntimeError``); Trio's own ``ClosedResourceError``
and ``BrokenResourceError`` are reused where their meaning fits.
"""

from __future__ import annotations


class PitrioError(Exception):
    """Root of every exception pitrio defines."""


class UsageError(PitrioError, RuntimeError):
    """The caller used an API in a way it does not allow (e.g. prompting a busy agent)."""
