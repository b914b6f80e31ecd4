"""pitrio's exception tree.

::

    PitrioError
     +-- WireFormatError (also ValueError)       pitrio.codec: JSON not of the expected pi shape
     +-- UsageError (also RuntimeError)          a caller mistake (prompting a busy agent ...)
     |    +-- FileArgumentError                  pitrio.sessions.resources: an @file argument
     +-- RequestRejected                         pitrio.actors: a provider request hook refused
     +-- CommandRefused                          pitrio.host: a command answered as an error (kind)
     +-- HostCommandFailed                       pitrio.host load harness: a command refused
     +-- JsonParseError (also ValueError)        pitrio.host: a JSONL line that is not JSON
     +-- InvalidCommand (also ValueError)        pitrio.host: an RPC command of the wrong shape
     +-- UnknownCommand (also LookupError)       pitrio.host: an RPC command type pi lacks
     +-- ClusterError                            pitrio.host.cluster: the Redis Streams layer
     |    +-- LeaseHeld                          a live other node holds the lease (name, holder)
     |    +-- StaleOwner                         a fenced write by a lost owner (session_id, epoch)
     |    +-- NotAMember                         this node's membership lease is gone
     |    +-- CommandTimeout (also TimeoutError) no reply to a routed command in time
     |    +-- ClusterUnavailable (also ConnectionError)  Redis unreachable or failing requests
     +-- CliError                                pitrio.cli: a command line that cannot run
     +-- ExportError                             pitrio.cli: a session that cannot be exported
     +-- FauxScriptError (also ValueError)       pitrio.cli: a PITRIO_FAUX_SCRIPT that is unusable
     +-- ProviderError                           pitrio.providers
     |    +-- ProviderNotFound (also LookupError) no provider for a model's API
     |    +-- ModelNotFound (also LookupError)    no such model in the catalogue
     |    +-- UnknownPreset (also LookupError)    no openai-completions compat preset of that name
     |    +-- ModelsJsonError (also ValueError)   a user models.json that cannot be used
     |    +-- RequestAuthError                    a models.json key or header did not resolve
     |    |    +-- TokenRefreshError              an expired OAuth token could not be renewed
     |    +-- AuthFileError (also ValueError)     an auth.json that is not a JSON object (path)
     |    +-- AuthLockTimeout (also TimeoutError) the auth.json lock stayed held (path)
     |    +-- AuthLockCompromised                 the auth.json lock was taken over while held
     |    +-- LoginError                          a sign-in did not complete (port, state, refusal)
     |    +-- MissingApiKey                       no API key for the model's provider
     |    +-- HTTPStatusError                     raised inside the HTTP layer, becomes data
     |    |    +-- BedrockHTTPError               an AWS error status, worded as pi words it
     |    |    +-- CodexHTTPError                 a Codex backend error status, as pi words it
     |    +-- InvalidStreamError                  an SSE event a provider cannot read
     |    |    +-- NotAnEventStreamError          a 2xx answer whose body is not SSE (type, head)
     |    |    +-- EventStreamError               a Bedrock event stream frame that is not valid
     |    +-- StreamStalledError                  no byte from the server for the stall timeout
     |    +-- StreamErrorChunk                    an error object inside an SSE stream
     |    +-- FinishReasonError                   a finish reason that ends the answer in error
     |    +-- TruncatedStreamError                a stream that ended before its final event
     |    +-- BedrockServiceError                 an exception frame inside a Bedrock stream
     |    +-- CodexApiError                       a failure the Codex backend reported in-stream
     |    +-- MistralStreamError                  an error object inside a Mistral stream
     |    +-- VertexAuthError                     Vertex ADC credentials could not be loaded
     +-- SessionError                            pitrio.sessions
     |    +-- SessionFileCorrupt (also ValueError)  a session line that cannot be read (file, line)
     |    +-- SessionEntryNotFound (also LookupError)
     |    +-- SessionWriteError (also OSError)     the session file could not be written
     |    +-- SessionLocked                        another process writes that session file (pid)
     |    +-- SessionFileChanged                   the file changed on disk since it was read
     |    +-- SessionTreeCycle (also ValueError)   parentId links that loop
     |    +-- CompactionError                      compaction could not run or summarise
     |    +-- ContextPatchError (also ValueError)  a context patch op that cannot apply (op, index)
     +-- SettingsError                           pitrio.sessions settings
     |    +-- SettingsFileError (also ValueError)  a settings.json that is not valid JSON
     |    +-- SettingsValueError (also ValueError) a known setting with a value of the wrong type
     +-- ToolError                               pitrio.tools (turned into error tool results)
          +-- ToolNotFound (also LookupError)
          +-- ToolArgumentsInvalid (also ValueError)  arguments fail the JSON schema
          +-- ToolSchemaInvalid (also ValueError)     a tool's own schema is not valid
          +-- FileToolError                           a file tool failed (path, code)
          +-- BashExecutionError                      a bash command failed (exit_code, timed_out)

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


def unwrap_group(exc: BaseException) -> BaseException:
    """Return the one exception inside nested single-member exception groups, else ``exc``.

    Trio wraps whatever escapes a nursery in an ``ExceptionGroup``; a failure in a provider, a
    hook or a tool should read as itself ("converter exploded"), not as "Exceptions from Trio
    nursery (1 sub-exception)". A group of several is kept as it is.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
