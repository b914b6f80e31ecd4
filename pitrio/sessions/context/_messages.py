"""``convert_to_llm`` for the coding agent's message kinds (seed 002 s.3.3, s.4.2-4.5).

Before every LLM call the transcript (``AgentMessage``\\ s) becomes pi-ai ``Message``\\ s:

* ``user``, ``assistant``, ``toolResult`` pass through;
* ``bashExecution`` becomes a user message describing the command and its output, unless it
  was run with ``!!`` (``excludeFromContext``), which keeps it out of the context;
* ``custom`` becomes a user message with the same content (a string becomes one text block);
* ``branchSummary`` and ``compactionSummary`` become user messages wrapping the summary in
  ``<summary>`` tags after a one-line explanation;
* anything else (a role from a newer version, an extension kind nobody maps) is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from pitrio.actors import AgentMessage
from pitrio.providers import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolResultMessage,
    UserContentBlock,
    UserMessage,
)
from pitrio.sessions.storage._entries import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "IMAGES_BLOCKED_TEXT",
    "bash_execution_to_text",
    "convert_to_llm",
]

COMPACTION_SUMMARY_PREFIX: Final = (
    "The conversation history before this point was compacted into the following summary:\n"
    "\n"
    "<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX: Final = "\n</summary>"
BRANCH_SUMMARY_PREFIX: Final = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX: Final = "\n</summary>"
"""Seed 002 s.4.3 puts ``</summary>`` on a line of its own, as for compaction summaries (pi
0.73.1 appends it directly to the summary text; the seed wins)."""

IMAGES_BLOCKED_TEXT: Final = "Image reading is disabled."
"""Replaces each image when images are blocked (pi's ``images.blockImages`` setting)."""


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """Describe a user-run command for the model (seed 002 s.4.5)."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _user(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=(TextContent(text=text),), timestamp=timestamp)


def _convert(message: AgentMessage) -> Message | None:
    if isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
        return message
    if isinstance(message, BashExecutionMessage):
        if message.exclude_from_context:
            return None
        return _user(bash_execution_to_text(message), message.timestamp)
    if isinstance(message, CustomMessage):
        content = message.content
        blocks = (TextContent(text=content),) if isinstance(content, str) else content
        return UserMessage(content=blocks, timestamp=message.timestamp)
    if isinstance(message, BranchSummaryMessage):
        text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
        return _user(text, message.timestamp)
    if isinstance(message, CompactionSummaryMessage):
        text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
        return _user(text, message.timestamp)
    return None


def _without_images(blocks: Sequence[UserContentBlock]) -> tuple[UserContentBlock, ...]:
    out: list[UserContentBlock] = []
    for block in blocks:
        if isinstance(block, ImageContent):
            previous = out[-1] if out else None
            # Consecutive images collapse into one placeholder.
            if isinstance(previous, TextContent) and previous.text == IMAGES_BLOCKED_TEXT:
                continue
            out.append(TextContent(text=IMAGES_BLOCKED_TEXT))
        else:
            out.append(block)
    return tuple(out)


def _block_images(message: Message) -> Message:
    if isinstance(message, UserMessage) and not isinstance(message.content, str):
        if any(isinstance(b, ImageContent) for b in message.content):
            return attrs.evolve(message, content=_without_images(message.content))
    elif isinstance(message, ToolResultMessage) and any(
        isinstance(b, ImageContent) for b in message.content
    ):
        return attrs.evolve(message, content=_without_images(message.content))
    return message


def convert_to_llm(
    messages: Sequence[AgentMessage], *, block_images: bool = False
) -> list[Message]:
    """Turn a coding-agent transcript into the messages an LLM understands.

    Args:
        messages: the transcript.
        block_images: replace every image of user and tool-result messages with the text
            :data:`IMAGES_BLOCKED_TEXT` (pi's ``images.blockImages``).
    """
    out: list[Message] = []
    for message in messages:
        converted = _convert(message)
        if converted is not None:
            out.append(_block_images(converted) if block_images else converted)
    return out
