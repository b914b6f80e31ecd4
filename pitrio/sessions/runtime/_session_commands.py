"""The commands an AgentSession's actor executes, one attrs type per operation.

Every front end (the Python facade :class:`~pitrio.sessions.AgentSession`, RPC over stdio, a
websocket host, an extension) is a sender of these commands into the session's bounded inbox:
RPC mode decodes pi's JSON commands straight into these classes (``pitrio.host``'s one
converter: the JSON keys are the fields' names in camelCase, ``type`` names the class), so the
fields that pi's commands carry have pi's names (``message``, ``parent_session``, ``entry_id``
...). They are named after pi 0.73.1's RPC commands (``docs/rpc.md``: ``prompt``, ``steer``,
``follow_up``, ``abort``, ``set_model``, ``cycle_model``, ``set_thinking_level``,
``cycle_thinking_level``, ``set_steering_mode``, ``set_follow_up_mode``, ``compact``,
``set_auto_compaction``, ``set_auto_retry``, ``abort_retry``, ``new_session``,
``switch_session``, ``fork``, ``set_session_name``, ``bash``, ``abort_bash`` ...) and each
carries a :class:`Reply` that the actor answers exactly once: with the operation's result, or
with the exception it raised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeAlias

import attrs
import trio

# Every annotation's type is imported at run time (none under TYPE_CHECKING): the RPC decoder's
# converter resolves these classes' annotations.
from pitrio.channels import Reply
from pitrio.providers import ImageContent, Model, ModelThinkingLevel, TextContent
from pitrio.sessions.compaction._compaction import CompactionResult
from pitrio.sessions.runtime._agent_session_types import (
    ForkResult,
    InputSource,
    ModelCycleResult,
    NavigateTreeResult,
)
from pitrio.sessions.runtime._bash_executor import BashResult, ChunkCallback
from pitrio.tools import AgentTool
from pitrio.tools.builtin import BashOperations

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

BusyPolicy: TypeAlias = Literal["reject", "steer", "follow_up", "interrupt"]
"""What a prompt does while the session is busy: ``"reject"`` raises pi's error (default),
``"steer"`` / ``"follow_up"`` queue it, ``"interrupt"`` aborts the run and then runs it."""


StreamingBehavior: TypeAlias = Literal["steer", "follow_up", "interrupt"]
"""What a prompt sent while the session is busy does (pi's ``streamingBehavior``)."""


def _reply() -> Any:
    return Reply()


@attrs.define(kw_only=True, eq=False)
class Prompt:
    """``prompt``: run a user message, or queue it while the session is busy.

    The facade (:meth:`AgentSession.execute <pitrio.sessions.AgentSession.execute>`) runs the
    prompt pipeline on it (input hook, built-in commands, template expansion: see
    :meth:`~pitrio.sessions.AgentSession.prompt`), sets ``policy`` and sends it to the actor.
    """

    message: str
    images: tuple[ImageContent, ...] | None = None
    streaming_behavior: StreamingBehavior | None = None
    """While busy: queue it (``"steer"``, ``"follow_up"``) or interrupt; ``None``: the
    session's ``busy_policy``."""
    source: InputSource = "interactive"
    """Who sent it (the ``input`` hook's ``source``)."""
    expand_prompt_templates: bool = True
    """Whether built-in commands and ``/skill:`` / ``/template`` expansion apply."""
    policy: BusyPolicy = "reject"
    """The busy policy the actor applies (set by the facade from ``streaming_behavior``)."""
    reply: Reply[None] = attrs.field(factory=_reply)
    abandoned: bool = False
    """Set by a sender that stopped waiting: if not yet executed, the prompt is dropped."""
    on_accepted: Callable[[], Awaitable[None]] | None = None
    """Awaited once the prompt passed its checks and its run is about to start (pi's
    ``preflightResult(true)``): RPC answers ``prompt`` here, before the run's first event."""


@attrs.define(kw_only=True, eq=False)
class Steer:
    """``steer``: queue a message for the next turn (skips a running batch's unstarted calls)."""

    message: str
    images: tuple[ImageContent, ...] | None = None
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class FollowUp:
    """``follow_up``: queue a message for when the agent would otherwise stop."""

    message: str
    images: tuple[ImageContent, ...] | None = None
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class Abort:
    """``abort``: cancel the run, its retry backoff and compaction; answered once idle."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class AbortRetry:
    """``abort_retry``: end a retry backoff (the run then ends with its error)."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class AbortCompaction:
    """Cancel a compaction in progress."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class AbortBranchSummary:
    """Cancel a branch summary in progress."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class ClearQueue:
    """Drop the queued steering and follow-up messages; answered with their texts."""

    reply: Reply[tuple[list[str], list[str]]] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SendCustomMessage:
    """An extension message (``custom_message`` entry), queued, kept or run."""

    custom_type: str
    content: str | Sequence[TextContent | ImageContent]
    display: bool = True
    details: Any = None
    trigger_turn: bool = False
    deliver_as: Literal["steer", "follow_up", "next_turn"] | None = None
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetModel:
    """``set_model``: ``model``, or (pi's RPC command) the one of the session's models named by
    ``provider`` and ``model_id``; answered with the model."""

    provider: str | None = None
    model_id: str | None = None
    model: Model | None = None
    reply: Reply[Model] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class CycleModel:
    """``cycle_model``; answered with the new model, or None when there is nothing to cycle."""

    direction: Literal["forward", "backward"] = "forward"
    reply: Reply[ModelCycleResult | None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetThinkingLevel:
    """``set_thinking_level`` (clamped to the model)."""

    level: ModelThinkingLevel
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class CycleThinkingLevel:
    """``cycle_thinking_level``; answered with the new level, or None without reasoning."""

    reply: Reply[ModelThinkingLevel | None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetSteeringMode:
    """``set_steering_mode``."""

    mode: Literal["all", "one-at-a-time"]
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetFollowUpMode:
    """``set_follow_up_mode``."""

    mode: Literal["all", "one-at-a-time"]
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetAutoCompaction:
    """``set_auto_compaction``."""

    enabled: bool
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetAutoRetry:
    """``set_auto_retry``."""

    enabled: bool
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetTools:
    """Offer ``tools`` to the model from the next run on (an extension's
    ``set_active_tools``); a run in progress keeps the tools it started with."""

    tools: tuple[AgentTool, ...]
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetSessionName:
    """``set_session_name``."""

    name: str
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetLabel:
    """Label (or, with ``None``, unlabel) an entry: a ``label`` entry (pi's ``setLabel``)."""

    entry_id: str
    label: str | None
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SetSystemPrompt:
    """Replace the base system prompt (``ctx.reload()``: resources loaded again); a run that
    is going on keeps its own, the next one gets this."""

    system_prompt: str
    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class Compact:
    """``compact``: abort what runs, then compact; answered with the result."""

    custom_instructions: str | None = None
    reply: Reply[CompactionResult] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class NewSession:
    """``new_session``; answered False when a hook cancelled."""

    parent_session: str | None = None
    reply: Reply[bool] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class SwitchSession:
    """``switch_session``; answered False when a hook cancelled."""

    session_path: str
    reply: Reply[bool] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class Fork:
    """``fork``."""

    entry_id: str
    position: Literal["before", "at"] = "before"
    reply: Reply[ForkResult] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class NavigateTree:
    """Move to another entry of the tree (pi's ``/tree``), optionally summarising."""

    target_id: str
    summarize: bool = False
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None
    reply: Reply[NavigateTreeResult] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class Bash:
    """``bash``: run a command in the session's cwd and record it (pi's ``executeBash``);
    answered with its :class:`BashResult` once recorded (or deferred while a run streams)."""

    command: str
    exclude_from_context: bool | None = None
    """True for ``!!``: recorded, never sent to the model. ``None`` (pi's RPC ``bash``) leaves
    the key out of the message."""
    on_chunk: ChunkCallback | None = None
    operations: BashOperations | None = None
    """Run it with these instead of the local shell (pi's ``operations`` option)."""
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    """Cancelled by ``abort_bash`` (or by a sender that stopped waiting)."""
    reply: Reply[BashResult] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class AbortBash:
    """``abort_bash``: cancel the running user commands (answered at once, as pi; each ``bash``
    is answered with its cancelled result once its process is gone)."""

    reply: Reply[None] = attrs.field(factory=_reply)


@attrs.define(kw_only=True, eq=False)
class RecordBashResult:
    """Record a user command's result (pi's ``recordBashResult``): a ``bashExecution``
    message, kept back until the next prompt while the session is busy."""

    command: str
    result: BashResult
    exclude_from_context: bool | None = None
    reply: Reply[None] = attrs.field(factory=_reply)


SessionCommand: TypeAlias = (
    Prompt
    | Steer
    | FollowUp
    | Abort
    | AbortRetry
    | AbortCompaction
    | AbortBranchSummary
    | ClearQueue
    | SendCustomMessage
    | SetModel
    | CycleModel
    | SetThinkingLevel
    | CycleThinkingLevel
    | SetSteeringMode
    | SetFollowUpMode
    | SetAutoCompaction
    | SetAutoRetry
    | SetSessionName
    | SetLabel
    | SetSystemPrompt
    | SetTools
    | Compact
    | NewSession
    | SwitchSession
    | Fork
    | NavigateTree
    | Bash
    | AbortBash
    | RecordBashResult
)
"""Every command an AgentSession's inbox accepts."""
