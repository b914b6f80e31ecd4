"""pi-coding-agent's sessions: the session file format, SessionManager, context building.

* Entries and the file format (seed 002 s.7.3-7.7, Appendix B): :class:`SessionHeader`, the nine
  entry types, :class:`UnknownEntry` for types from newer versions, the coding agent's message
  kinds (:class:`BashExecutionMessage`, :class:`CustomMessage`, :class:`BranchSummaryMessage`,
  :class:`CompactionSummaryMessage`), and the v1 -> v2 -> v3 migrations.
* :class:`SessionManager`: the entry tree, appends, branching, forks, listing.
* :func:`build_session_context`: the path to the leaf as LLM messages (seed 002 s.4).
* :class:`Persistence`: the actor that writes a running session's file (lazy first flush,
  line-atomic appends); :func:`load_session_file` reads one back.

Layering: imports ``actors``, ``providers``, ``codec``; this is the only layer that touches
session files. ``host`` and ``cli`` import it.
"""

from pitrio._publish import publish as _publish
from pitrio.sessions.compaction._compaction import AutoCompactionEndEvent as AutoCompactionEndEvent
from pitrio.sessions.compaction._compaction import (
    AutoCompactionStartEvent as AutoCompactionStartEvent,
)
from pitrio.sessions.compaction._compaction import CompactionEndEvent as CompactionEndEvent
from pitrio.sessions.compaction._compaction import CompactionError as CompactionError
from pitrio.sessions.compaction._compaction import CompactionPreparation as CompactionPreparation
from pitrio.sessions.compaction._compaction import CompactionResult as CompactionResult
from pitrio.sessions.compaction._compaction import CompactionStartEvent as CompactionStartEvent
from pitrio.sessions.compaction._compaction import (
    calculate_context_tokens as calculate_context_tokens,
)
from pitrio.sessions.compaction._compaction import compact as compact
from pitrio.sessions.compaction._compaction import (
    estimate_context_tokens as estimate_context_tokens,
)
from pitrio.sessions.compaction._compaction import estimate_tokens as estimate_tokens
from pitrio.sessions.compaction._compaction import find_cut_point as find_cut_point
from pitrio.sessions.compaction._compaction import generate_summary as generate_summary
from pitrio.sessions.compaction._compaction import prepare_compaction as prepare_compaction
from pitrio.sessions.compaction._compaction import should_compact as should_compact
from pitrio.sessions.compaction._compaction_branch import (
    collect_entries_for_branch_summary as collect_entries_for_branch_summary,
)
from pitrio.sessions.compaction._compaction_branch import (
    generate_branch_summary as generate_branch_summary,
)
from pitrio.sessions.compaction._compaction_branch import (
    prepare_branch_entries as prepare_branch_entries,
)
from pitrio.sessions.compaction._compaction_utils import (
    serialize_conversation as serialize_conversation,
)
from pitrio.sessions.context._messages import bash_execution_to_text as bash_execution_to_text
from pitrio.sessions.context._messages import convert_to_llm as convert_to_llm
from pitrio.sessions.runtime._agent_session import AgentSession as AgentSession
from pitrio.sessions.runtime._agent_session import ContextUsage as ContextUsage
from pitrio.sessions.runtime._agent_session import open_agent_session as open_agent_session
from pitrio.sessions.runtime._agent_session_types import (
    AGENT_SESSION_EVENT_TYPES as AGENT_SESSION_EVENT_TYPES,
)
from pitrio.sessions.runtime._agent_session_types import AgentSessionEvent as AgentSessionEvent
from pitrio.sessions.runtime._agent_session_types import (
    BeforeAgentStartResult as BeforeAgentStartResult,
)
from pitrio.sessions.runtime._agent_session_types import BeforeCompactResult as BeforeCompactResult
from pitrio.sessions.runtime._agent_session_types import BeforeForkResult as BeforeForkResult
from pitrio.sessions.runtime._agent_session_types import BeforeTreeResult as BeforeTreeResult
from pitrio.sessions.runtime._agent_session_types import (
    CompactionEventStyle as CompactionEventStyle,
)
from pitrio.sessions.runtime._agent_session_types import ExtensionErrorEvent as ExtensionErrorEvent
from pitrio.sessions.runtime._agent_session_types import ForkResult as ForkResult
from pitrio.sessions.runtime._agent_session_types import InputResult as InputResult
from pitrio.sessions.runtime._agent_session_types import ModelCycleResult as ModelCycleResult
from pitrio.sessions.runtime._agent_session_types import NavigateTreeResult as NavigateTreeResult
from pitrio.sessions.runtime._agent_session_types import QueueUpdateEvent as QueueUpdateEvent
from pitrio.sessions.runtime._agent_session_types import ScopedModel as ScopedModel
from pitrio.sessions.runtime._agent_session_types import SessionHooks as SessionHooks
from pitrio.sessions.runtime._agent_session_types import (
    SessionInfoChangedEvent as SessionInfoChangedEvent,
)
from pitrio.sessions.runtime._agent_session_types import SessionSnapshot as SessionSnapshot
from pitrio.sessions.runtime._agent_session_types import (
    ThinkingLevelChangedEvent as ThinkingLevelChangedEvent,
)
from pitrio.sessions.runtime._agent_session_types import TreePreparation as TreePreparation
from pitrio.sessions.runtime._agent_session_types import UserBashResult as UserBashResult
from pitrio.sessions.runtime._bash_executor import BashResult as BashResult
from pitrio.sessions.runtime._bash_executor import (
    execute_bash_with_operations as execute_bash_with_operations,
)
from pitrio.sessions.runtime._prompt_pipeline import BuiltinCommandResult as BuiltinCommandResult
from pitrio.sessions.runtime._retry import PI_RETRYABLE_ERROR_PATTERN as PI_RETRYABLE_ERROR_PATTERN
from pitrio.sessions.runtime._retry import RETRYABLE_ERROR_PATTERN as RETRYABLE_ERROR_PATTERN
from pitrio.sessions.runtime._retry import AutoRetryEndEvent as AutoRetryEndEvent
from pitrio.sessions.runtime._retry import AutoRetryStartEvent as AutoRetryStartEvent
from pitrio.sessions.runtime._retry import Retry as Retry
from pitrio.sessions.runtime._retry import is_retryable_error as is_retryable_error
from pitrio.sessions.settings._settings import BranchSummarySettings as BranchSummarySettings
from pitrio.sessions.settings._settings import CompactionSettings as CompactionSettings
from pitrio.sessions.settings._settings import FileSettingsStorage as FileSettingsStorage
from pitrio.sessions.settings._settings import InMemorySettingsStorage as InMemorySettingsStorage
from pitrio.sessions.settings._settings import ProviderRetrySettings as ProviderRetrySettings
from pitrio.sessions.settings._settings import RetrySettings as RetrySettings
from pitrio.sessions.settings._settings import SettingsError as SettingsError
from pitrio.sessions.settings._settings import SettingsFileError as SettingsFileError
from pitrio.sessions.settings._settings import SettingsManager as SettingsManager
from pitrio.sessions.settings._settings import SettingsStorage as SettingsStorage
from pitrio.sessions.settings._settings import SettingsValueError as SettingsValueError
from pitrio.sessions.storage._codec import decode_entry as decode_entry
from pitrio.sessions.storage._context import LAST_ENTRY as LAST_ENTRY
from pitrio.sessions.storage._context import ContextModel as ContextModel
from pitrio.sessions.storage._context import SessionContext as SessionContext
from pitrio.sessions.storage._context import SessionTreeCycle as SessionTreeCycle
from pitrio.sessions.storage._context import build_session_context as build_session_context
from pitrio.sessions.storage._context import (
    get_latest_compaction_entry as get_latest_compaction_entry,
)
from pitrio.sessions.storage._context import path_to_root as path_to_root
from pitrio.sessions.storage._entries import CURRENT_SESSION_VERSION as CURRENT_SESSION_VERSION
from pitrio.sessions.storage._entries import ENTRY_TYPES as ENTRY_TYPES
from pitrio.sessions.storage._entries import BashExecutionMessage as BashExecutionMessage
from pitrio.sessions.storage._entries import BranchSummaryEntry as BranchSummaryEntry
from pitrio.sessions.storage._entries import BranchSummaryMessage as BranchSummaryMessage
from pitrio.sessions.storage._entries import CompactionEntry as CompactionEntry
from pitrio.sessions.storage._entries import CompactionSummaryMessage as CompactionSummaryMessage
from pitrio.sessions.storage._entries import CustomEntry as CustomEntry
from pitrio.sessions.storage._entries import CustomMessage as CustomMessage
from pitrio.sessions.storage._entries import CustomMessageEntry as CustomMessageEntry
from pitrio.sessions.storage._entries import EntryType as EntryType
from pitrio.sessions.storage._entries import FileEntry as FileEntry
from pitrio.sessions.storage._entries import LabelEntry as LabelEntry
from pitrio.sessions.storage._entries import ModelChangeEntry as ModelChangeEntry
from pitrio.sessions.storage._entries import SessionEntry as SessionEntry
from pitrio.sessions.storage._entries import SessionEntryNotFound as SessionEntryNotFound
from pitrio.sessions.storage._entries import SessionError as SessionError
from pitrio.sessions.storage._entries import SessionFileChanged as SessionFileChanged
from pitrio.sessions.storage._entries import SessionFileCorrupt as SessionFileCorrupt
from pitrio.sessions.storage._entries import SessionHeader as SessionHeader
from pitrio.sessions.storage._entries import SessionInfoEntry as SessionInfoEntry
from pitrio.sessions.storage._entries import SessionLocked as SessionLocked
from pitrio.sessions.storage._entries import SessionMessageEntry as SessionMessageEntry
from pitrio.sessions.storage._entries import SessionWriteError as SessionWriteError
from pitrio.sessions.storage._entries import ThinkingLevelChangeEntry as ThinkingLevelChangeEntry
from pitrio.sessions.storage._entries import UnknownEntry as UnknownEntry
from pitrio.sessions.storage._entries import (
    create_branch_summary_message as create_branch_summary_message,
)
from pitrio.sessions.storage._entries import (
    create_compaction_summary_message as create_compaction_summary_message,
)
from pitrio.sessions.storage._entries import create_custom_message as create_custom_message
from pitrio.sessions.storage._entries import generate_id as generate_id
from pitrio.sessions.storage._entries import is_assistant_entry as is_assistant_entry
from pitrio.sessions.storage._entries import iso_timestamp as iso_timestamp
from pitrio.sessions.storage._entries import random_entry_id as random_entry_id
from pitrio.sessions.storage._entries import timestamp_ms as timestamp_ms
from pitrio.sessions.storage._entries import uuid7 as uuid7
from pitrio.sessions.storage._files import FILE_WORK_THREADS as FILE_WORK_THREADS
from pitrio.sessions.storage._files import file_limiter as file_limiter
from pitrio.sessions.storage._files import run_file_work as run_file_work
from pitrio.sessions.storage._files import write_file_atomically as write_file_atomically
from pitrio.sessions.storage._loader import FileTail as FileTail
from pitrio.sessions.storage._loader import LoadedSession as LoadedSession
from pitrio.sessions.storage._loader import LoadProblem as LoadProblem
from pitrio.sessions.storage._loader import load_session_file as load_session_file
from pitrio.sessions.storage._manager import Clock as Clock
from pitrio.sessions.storage._manager import IdSource as IdSource
from pitrio.sessions.storage._manager import SessionManager as SessionManager
from pitrio.sessions.storage._manager import SessionTreeNode as SessionTreeNode
from pitrio.sessions.storage._migrations import migrate_session_entries as migrate_session_entries
from pitrio.sessions.storage._paths import AGENT_DIR_ENV as AGENT_DIR_ENV
from pitrio.sessions.storage._paths import SessionInfo as SessionInfo
from pitrio.sessions.storage._paths import encode_cwd as encode_cwd
from pitrio.sessions.storage._paths import find_most_recent_session as find_most_recent_session
from pitrio.sessions.storage._paths import get_default_session_dir as get_default_session_dir
from pitrio.sessions.storage._paths import get_sessions_dir as get_sessions_dir
from pitrio.sessions.storage._paths import read_session_info as read_session_info
from pitrio.sessions.storage._persistence import PERSISTENCE_INBOX as PERSISTENCE_INBOX
from pitrio.sessions.storage._persistence import Persistence as Persistence
from pitrio.sessions.storage._persistence import PersistenceHost as PersistenceHost
from pitrio.sessions.storage._persistence import PersistenceStatistics as PersistenceStatistics
from pitrio.sessions.storage._persistence import open_persistence as open_persistence
from pitrio.sessions.storage._writer import SessionFileWriter as SessionFileWriter

__all__ = [
    "AGENT_DIR_ENV",
    "AGENT_SESSION_EVENT_TYPES",
    "CURRENT_SESSION_VERSION",
    "ENTRY_TYPES",
    "FILE_WORK_THREADS",
    "LAST_ENTRY",
    "PERSISTENCE_INBOX",
    "PI_RETRYABLE_ERROR_PATTERN",
    "RETRYABLE_ERROR_PATTERN",
    "AgentSession",
    "AgentSessionEvent",
    "AutoCompactionEndEvent",
    "AutoCompactionStartEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BashExecutionMessage",
    "BashResult",
    "BeforeAgentStartResult",
    "BeforeCompactResult",
    "BeforeForkResult",
    "BeforeTreeResult",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "BranchSummarySettings",
    "BuiltinCommandResult",
    "Clock",
    "CompactionEndEvent",
    "CompactionEntry",
    "CompactionError",
    "CompactionEventStyle",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CompactionStartEvent",
    "CompactionSummaryMessage",
    "ContextModel",
    "ContextUsage",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "EntryType",
    "ExtensionErrorEvent",
    "FileEntry",
    "FileSettingsStorage",
    "FileTail",
    "ForkResult",
    "IdSource",
    "InMemorySettingsStorage",
    "InputResult",
    "LabelEntry",
    "LoadProblem",
    "LoadedSession",
    "ModelChangeEntry",
    "ModelCycleResult",
    "NavigateTreeResult",
    "Persistence",
    "PersistenceHost",
    "PersistenceStatistics",
    "ProviderRetrySettings",
    "QueueUpdateEvent",
    "Retry",
    "RetrySettings",
    "ScopedModel",
    "SessionContext",
    "SessionEntry",
    "SessionEntryNotFound",
    "SessionError",
    "SessionFileChanged",
    "SessionFileCorrupt",
    "SessionFileWriter",
    "SessionHeader",
    "SessionHooks",
    "SessionInfo",
    "SessionInfoChangedEvent",
    "SessionInfoEntry",
    "SessionLocked",
    "SessionManager",
    "SessionMessageEntry",
    "SessionSnapshot",
    "SessionTreeCycle",
    "SessionTreeNode",
    "SessionWriteError",
    "SettingsError",
    "SettingsFileError",
    "SettingsManager",
    "SettingsStorage",
    "SettingsValueError",
    "ThinkingLevelChangeEntry",
    "ThinkingLevelChangedEvent",
    "TreePreparation",
    "UnknownEntry",
    "UserBashResult",
    "bash_execution_to_text",
    "build_session_context",
    "calculate_context_tokens",
    "collect_entries_for_branch_summary",
    "compact",
    "convert_to_llm",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "decode_entry",
    "encode_cwd",
    "estimate_context_tokens",
    "estimate_tokens",
    "execute_bash_with_operations",
    "file_limiter",
    "find_cut_point",
    "find_most_recent_session",
    "generate_branch_summary",
    "generate_id",
    "generate_summary",
    "get_default_session_dir",
    "get_latest_compaction_entry",
    "get_sessions_dir",
    "is_assistant_entry",
    "is_retryable_error",
    "iso_timestamp",
    "load_session_file",
    "migrate_session_entries",
    "open_agent_session",
    "open_persistence",
    "path_to_root",
    "prepare_branch_entries",
    "prepare_compaction",
    "random_entry_id",
    "read_session_info",
    "run_file_work",
    "serialize_conversation",
    "should_compact",
    "timestamp_ms",
    "uuid7",
    "write_file_atomically",
]

_publish(globals(), __all__)
