"""Deterministic session helpers, and the script that writes ``pitrio_written.jsonl``.

``pitrio_written.jsonl`` (tests/data/pi/sessions) is a session pitrio writes with fixed ids and a
fixed clock; pi's capture script opens it and records what pi sees. Regenerate it with

    .venv/bin/python tests/sessions/session_script.py

and then re-run the capture (tests/data/pi/README.md).
"""

from __future__ import annotations

import itertools
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pitrio.providers import (
    AssistantMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.sessions import BashExecutionMessage, CustomMessage, SessionManager

SESSIONS_DATA = Path(__file__).parent.parent / "data" / "pi" / "sessions"
PITRIO_WRITTEN = SESSIONS_DATA / "pitrio_written.jsonl"
T0 = 1735689600000
"""2025-01-01T00:00:00.000Z"""
CWD = "/work/project"
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def counter_ids(start: int = 1) -> Callable[[], str]:
    """Entry ids ``00000001``, ``00000002``, ... (what the capture script makes pi produce)."""
    counter = itertools.count(start)
    return lambda: f"{next(counter):08x}"


def step_clock(start: int, step: int = 1000) -> Callable[[], int]:
    """A clock that starts at ``start`` ms and advances ``step`` ms per reading."""
    counter = itertools.count(start, step)
    return lambda: next(counter)


def deterministic(**overrides: Any) -> dict[str, Any]:
    """SessionManager options for reproducible files."""
    options: dict[str, Any] = {
        "clock": step_clock(T0 + 8_000_000),
        "new_id": counter_ids(),
        "new_session_id": lambda: "01941f00-0000-7000-8000-0000p1tr10aa",
    }
    options.update(overrides)
    return options


class Messages:
    """Messages with increasing fixed timestamps."""

    def __init__(self, start: int) -> None:
        self._ts = start

    def _next(self) -> int:
        self._ts += 1000
        return self._ts

    def user(self, text: str) -> UserMessage:
        return UserMessage(content=text, timestamp=self._next())

    def assistant(self, text: str, **fields: Any) -> AssistantMessage:
        options: dict[str, Any] = {
            "content": [TextContent(text=text)],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": Usage(
                input=100,
                output=20,
                total_tokens=120,
                cost=Cost(input=0.0003, output=0.0003, total=0.0006),
            ),
            "stop_reason": "stop",
            "timestamp": self._next(),
        }
        options.update(fields)
        return AssistantMessage(**options)

    def tool_result(self, call_id: str, text: str) -> ToolResultMessage:
        return ToolResultMessage(
            tool_call_id=call_id,
            tool_name="read",
            content=[TextContent(text=text)],
            details={"lines": 2},
            is_error=False,
            timestamp=self._next(),
        )

    def bash(self, command: str, output: str, **fields: Any) -> BashExecutionMessage:
        options: dict[str, Any] = {"exit_code": 0, "cancelled": False, "truncated": False}
        options.update(fields)
        return BashExecutionMessage(
            command=command, output=output, timestamp=self._next(), **options
        )

    def custom(self, text: str) -> CustomMessage:
        return CustomMessage(
            custom_type="my-ext",
            content=text,
            display=True,
            details={"via": "append_message"},
            timestamp=self._next(),
        )


def write_pitrio_session(directory: Path) -> Path:
    """Write the reference session: every entry type, branches, labels, compactions, summaries."""
    sm = SessionManager.create(CWD, directory, **deterministic())
    m = Messages(T0 + 800_000)
    sm.append_model_change("anthropic", "claude-sonnet-4-5")
    sm.append_thinking_level_change("high")
    u1 = sm.append_message(m.user("Read README.md please"))
    a1 = sm.append_message(
        m.assistant(
            "",
            content=[
                ThinkingContent(thinking="The user wants the README.", thinking_signature="sig-1"),
                TextContent(text="Reading it."),
                ToolCall(id="call_1", name="read", arguments={"path": "README.md"}),
            ],
            stop_reason="toolUse",
        )
    )
    sm.append_message(m.tool_result("call_1", "# Project\nHello."))
    a2 = sm.append_message(m.assistant("The README says hello."))
    sm.append_custom_entry("my-ext", {"count": 42})
    sm.append_custom_entry("my-ext-no-data")
    sm.append_custom_message_entry("my-ext", "Injected context", True, {"source": "pitrio"})
    sm.append_custom_message_entry(
        "my-ext",
        [TextContent(text="Look at this:"), ImageContent(data=PNG_1X1, mime_type="image/png")],
        False,
    )
    sm.append_message(m.bash("ls", "README.md\nsrc"))
    sm.append_message(
        m.bash(
            "yes",
            "y\n",
            exit_code=None,
            cancelled=True,
            truncated=True,
            full_output_path="/tmp/pitrio-bash-1.log",
            exclude_from_context=True,
        )
    )
    sm.append_message(m.custom("A custom message appended as a message entry"))
    sm.append_label_change(u1, "start")
    sm.append_label_change(a2, "answer")
    sm.append_label_change(a2, None)
    sm.append_session_info("  pitrio session  ")
    u3 = sm.append_message(m.user("Third question"))
    sm.append_message(m.assistant("Third answer"))
    sm.append_compaction(
        "README read; a bash command ran.",
        u3,
        4321,
        {"readFiles": ["README.md"], "modifiedFiles": []},
    )
    u4 = sm.append_message(m.user("After the compaction"))
    sm.append_message(m.assistant("Answer after the compaction"))
    # Branches: back to the first answer, with and without summaries, and a second root.
    sm.branch(a1)
    sm.append_message(m.user("A different follow-up"))
    sm.append_message(m.assistant("A different answer"))
    sm.branch_with_summary(u4, "Left the 'different follow-up' branch.", {"readFiles": []}, False)
    sm.append_label_change(u4, "after-compaction")
    sm.append_message(m.user("Continue after the branch summary"))
    sm.append_message(
        m.assistant("Continued.", provider="openai", model="gpt-4o", api="openai-responses")
    )
    sm.reset_leaf()
    sm.append_message(m.user("A second root"))
    sm.branch_with_summary(None, "A summary from the root, by an extension.", None, True)
    sm.append_model_change("openai", "gpt-4o")
    sm.append_message(m.user("Last question"))
    sm.append_message(m.assistant("Last answer."))
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    return Path(path)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else PITRIO_WRITTEN
    work = target.parent / ".pitrio_written.tmp"
    shutil.rmtree(work, ignore_errors=True)
    written = write_pitrio_session(work)
    shutil.copyfile(written, target)
    shutil.rmtree(work)
    print(f"wrote {target}")
