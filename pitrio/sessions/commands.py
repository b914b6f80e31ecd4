"""The commands an :class:`~pitrio.sessions.AgentSession` executes, for the layers above.

One import point for the session's command vocabulary
(:mod:`pitrio.sessions.runtime._session_commands`):
the facade's methods build these, :meth:`AgentSession.execute
<pitrio.sessions.AgentSession.execute>` sends one built elsewhere, and RPC mode and the
websocket host decode pi's JSON commands into them.
"""

from __future__ import annotations

from pitrio.sessions.runtime._session_commands import (
    Abort,
    AbortBash,
    AbortBranchSummary,
    AbortCompaction,
    AbortRetry,
    Bash,
    BusyPolicy,
    ClearQueue,
    Compact,
    CycleModel,
    CycleThinkingLevel,
    FollowUp,
    Fork,
    NavigateTree,
    NewSession,
    Prompt,
    RecordBashResult,
    SendCustomMessage,
    SessionCommand,
    SetAutoCompaction,
    SetAutoRetry,
    SetFollowUpMode,
    SetLabel,
    SetModel,
    SetSessionName,
    SetSteeringMode,
    SetSystemPrompt,
    SetThinkingLevel,
    SetTools,
    Steer,
    StreamingBehavior,
    SwitchSession,
)

__all__ = [
    "Abort",
    "AbortBash",
    "AbortBranchSummary",
    "AbortCompaction",
    "AbortRetry",
    "Bash",
    "BusyPolicy",
    "ClearQueue",
    "Compact",
    "CycleModel",
    "CycleThinkingLevel",
    "FollowUp",
    "Fork",
    "NavigateTree",
    "NewSession",
    "Prompt",
    "RecordBashResult",
    "SendCustomMessage",
    "SessionCommand",
    "SetAutoCompaction",
    "SetAutoRetry",
    "SetFollowUpMode",
    "SetLabel",
    "SetModel",
    "SetSessionName",
    "SetSteeringMode",
    "SetSystemPrompt",
    "SetThinkingLevel",
    "SetTools",
    "Steer",
    "StreamingBehavior",
    "SwitchSession",
]
