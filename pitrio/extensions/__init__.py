"""Extensions (seeds 003/004): Python modules with ``register(pi)`` that hook into a session.

* :func:`load_extensions` finds and imports them (project, global, entry points, ``-e``);
* :class:`ExtensionAPI` is the ``pi`` their ``register`` receives (``on``, ``register_tool``,
  ``register_command``, ``register_flag`` ...), :class:`ExtensionContext` the ``ctx`` of handlers;
* :class:`ExtensionRunner` is the session's :class:`~pitrio.sessions.SessionHooks`, running every
  handler with seed 004's chaining rules; :func:`open_extension_session` opens a session with it;
* ``ctx.ui``: :class:`HeadlessUI` (print, json) or :class:`UiBridge` (RPC's extension-UI records).

Layering: above ``sessions`` (which never imports this package), below ``host`` and ``cli``.
"""

from pitrio._publish import publish as _publish
from pitrio.extensions._api import EventBus as EventBus
from pitrio.extensions._api import ExecResult as ExecResult
from pitrio.extensions._api import Extension as Extension
from pitrio.extensions._api import ExtensionAPI as ExtensionAPI
from pitrio.extensions._api import ExtensionContext as ExtensionContext
from pitrio.extensions._api import ExtensionRuntime as ExtensionRuntime
from pitrio.extensions._api import ExtensionTool as ExtensionTool
from pitrio.extensions._api import ModelRegistryView as ModelRegistryView
from pitrio.extensions._api import RegisteredCommand as RegisteredCommand
from pitrio.extensions._api import RegisteredFlag as RegisteredFlag
from pitrio.extensions._api import RegisteredShortcut as RegisteredShortcut
from pitrio.extensions._api import ToolInfo as ToolInfo
from pitrio.extensions._events import EVENT_NAMES as EVENT_NAMES
from pitrio.extensions._events import AfterProviderResponseEvent as AfterProviderResponseEvent
from pitrio.extensions._events import BeforeAgentStartEvent as BeforeAgentStartEvent
from pitrio.extensions._events import BeforeAgentStartEventResult as BeforeAgentStartEventResult
from pitrio.extensions._events import BeforeProviderRequestEvent as BeforeProviderRequestEvent
from pitrio.extensions._events import ContextEvent as ContextEvent
from pitrio.extensions._events import ContextEventResult as ContextEventResult
from pitrio.extensions._events import InputEvent as InputEvent
from pitrio.extensions._events import InputEventResult as InputEventResult
from pitrio.extensions._events import MessageEndEventResult as MessageEndEventResult
from pitrio.extensions._events import ModelSelectEvent as ModelSelectEvent
from pitrio.extensions._events import ResourcesDiscoverEvent as ResourcesDiscoverEvent
from pitrio.extensions._events import ResourcesDiscoverResult as ResourcesDiscoverResult
from pitrio.extensions._events import SessionBeforeCompactEvent as SessionBeforeCompactEvent
from pitrio.extensions._events import SessionBeforeCompactResult as SessionBeforeCompactResult
from pitrio.extensions._events import SessionBeforeForkEvent as SessionBeforeForkEvent
from pitrio.extensions._events import SessionBeforeForkResult as SessionBeforeForkResult
from pitrio.extensions._events import SessionBeforeSwitchEvent as SessionBeforeSwitchEvent
from pitrio.extensions._events import SessionBeforeSwitchResult as SessionBeforeSwitchResult
from pitrio.extensions._events import SessionBeforeTreeEvent as SessionBeforeTreeEvent
from pitrio.extensions._events import SessionBeforeTreeResult as SessionBeforeTreeResult
from pitrio.extensions._events import SessionCompactEvent as SessionCompactEvent
from pitrio.extensions._events import SessionDirectoryEvent as SessionDirectoryEvent
from pitrio.extensions._events import SessionDirectoryResult as SessionDirectoryResult
from pitrio.extensions._events import SessionForkEvent as SessionForkEvent
from pitrio.extensions._events import SessionShutdownEvent as SessionShutdownEvent
from pitrio.extensions._events import SessionStartEvent as SessionStartEvent
from pitrio.extensions._events import SessionSwitchEvent as SessionSwitchEvent
from pitrio.extensions._events import SessionTreeEvent as SessionTreeEvent
from pitrio.extensions._events import ThinkingLevelSelectEvent as ThinkingLevelSelectEvent
from pitrio.extensions._events import ToolCallEvent as ToolCallEvent
from pitrio.extensions._events import ToolCallEventResult as ToolCallEventResult
from pitrio.extensions._events import ToolResultEvent as ToolResultEvent
from pitrio.extensions._events import ToolResultEventResult as ToolResultEventResult
from pitrio.extensions._events import TurnEndEvent as TurnEndEvent
from pitrio.extensions._events import TurnStartEvent as TurnStartEvent
from pitrio.extensions._events import UserBashEvent as UserBashEvent
from pitrio.extensions._events import UserBashEventResult as UserBashEventResult
from pitrio.extensions._events import field_of as field_of
from pitrio.extensions._loader import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from pitrio.extensions._loader import discover_extension_paths as discover_extension_paths
from pitrio.extensions._loader import find_entry_points as find_entry_points
from pitrio.extensions._loader import load_extension as load_extension
from pitrio.extensions._loader import load_extensions as load_extensions
from pitrio.extensions._runner import ExtensionRunner as ExtensionRunner
from pitrio.extensions._runner import LoadError as LoadError
from pitrio.extensions._runner import open_extension_session as open_extension_session
from pitrio.extensions._tool_events import BashToolCallEvent as BashToolCallEvent
from pitrio.extensions._tool_events import BashToolInput as BashToolInput
from pitrio.extensions._tool_events import EditToolCallEvent as EditToolCallEvent
from pitrio.extensions._tool_events import EditToolInput as EditToolInput
from pitrio.extensions._tool_events import FindToolCallEvent as FindToolCallEvent
from pitrio.extensions._tool_events import FindToolInput as FindToolInput
from pitrio.extensions._tool_events import GrepToolCallEvent as GrepToolCallEvent
from pitrio.extensions._tool_events import GrepToolInput as GrepToolInput
from pitrio.extensions._tool_events import LsToolCallEvent as LsToolCallEvent
from pitrio.extensions._tool_events import LsToolInput as LsToolInput
from pitrio.extensions._tool_events import ReadToolCallEvent as ReadToolCallEvent
from pitrio.extensions._tool_events import ReadToolInput as ReadToolInput
from pitrio.extensions._tool_events import WriteToolCallEvent as WriteToolCallEvent
from pitrio.extensions._tool_events import WriteToolInput as WriteToolInput
from pitrio.extensions._tool_events import is_tool_call_event_type as is_tool_call_event_type
from pitrio.extensions._ui import UI_OUTBOX as UI_OUTBOX
from pitrio.extensions._ui import ExtensionUI as ExtensionUI
from pitrio.extensions._ui import HeadlessUI as HeadlessUI
from pitrio.extensions._ui import UiBridge as UiBridge

__all__ = [
    "ENTRY_POINT_GROUP",
    "EVENT_NAMES",
    "UI_OUTBOX",
    "AfterProviderResponseEvent",
    "BashToolCallEvent",
    "BashToolInput",
    "BeforeAgentStartEvent",
    "BeforeAgentStartEventResult",
    "BeforeProviderRequestEvent",
    "ContextEvent",
    "ContextEventResult",
    "EditToolCallEvent",
    "EditToolInput",
    "EventBus",
    "ExecResult",
    "Extension",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionRunner",
    "ExtensionRuntime",
    "ExtensionTool",
    "ExtensionUI",
    "FindToolCallEvent",
    "FindToolInput",
    "GrepToolCallEvent",
    "GrepToolInput",
    "HeadlessUI",
    "InputEvent",
    "InputEventResult",
    "LoadError",
    "LsToolCallEvent",
    "LsToolInput",
    "MessageEndEventResult",
    "ModelRegistryView",
    "ModelSelectEvent",
    "ReadToolCallEvent",
    "ReadToolInput",
    "RegisteredCommand",
    "RegisteredFlag",
    "RegisteredShortcut",
    "ResourcesDiscoverEvent",
    "ResourcesDiscoverResult",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeForkEvent",
    "SessionBeforeForkResult",
    "SessionBeforeSwitchEvent",
    "SessionBeforeSwitchResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "SessionCompactEvent",
    "SessionDirectoryEvent",
    "SessionDirectoryResult",
    "SessionForkEvent",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "SessionSwitchEvent",
    "SessionTreeEvent",
    "ThinkingLevelSelectEvent",
    "ToolCallEvent",
    "ToolCallEventResult",
    "ToolInfo",
    "ToolResultEvent",
    "ToolResultEventResult",
    "TurnEndEvent",
    "TurnStartEvent",
    "UiBridge",
    "UserBashEvent",
    "UserBashEventResult",
    "WriteToolCallEvent",
    "WriteToolInput",
    "discover_extension_paths",
    "field_of",
    "find_entry_points",
    "is_tool_call_event_type",
    "load_extension",
    "load_extensions",
    "open_extension_session",
]

_publish(globals(), __all__)
