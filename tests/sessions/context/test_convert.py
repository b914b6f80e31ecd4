"""convert_to_llm for the coding agent's message kinds (seed 002 s.3.3, s.4.2-4.5)."""

from __future__ import annotations

from pitrio.actors import OpaqueMessage
from pitrio.providers import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
)
from pitrio.sessions import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
)
from pitrio.sessions.context._messages import IMAGES_BLOCKED_TEXT, convert_to_llm

IMAGE = ImageContent(data="AAAA", mime_type="image/png")


def bash(**fields: object) -> BashExecutionMessage:
    options: dict[str, object] = {
        "command": "ls -la",
        "output": "a.txt\nb.txt",
        "exit_code": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 42,
    }
    options.update(fields)
    return BashExecutionMessage(**options)  # type: ignore[arg-type]


def only_text(message: object) -> str:
    assert isinstance(message, UserMessage)
    assert not isinstance(message.content, str)
    (block,) = message.content
    assert isinstance(block, TextContent)
    return block.text


def test_bash_execution_becomes_a_user_message_describing_the_run() -> None:
    """A successful command: the command line and its output in a fence, timestamp kept."""
    (converted,) = convert_to_llm([bash()])
    assert isinstance(converted, UserMessage)
    assert converted.timestamp == 42
    assert only_text(converted) == "Ran `ls -la`\n```\na.txt\nb.txt\n```"


def test_bash_execution_reports_exit_code_cancel_and_truncation() -> None:
    """Non-zero exit, cancellation, empty output and truncation each add their line."""
    failed = convert_to_llm([bash(exit_code=2, output="", truncated=True, full_output_path="/t")])
    assert only_text(failed[0]) == (
        "Ran `ls -la`\n(no output)\n\nCommand exited with code 2\n\n"
        "[Output truncated. Full output: /t]"
    )
    cancelled = convert_to_llm([bash(cancelled=True, exit_code=None)])
    assert only_text(cancelled[0]).endswith("```\n\n(command cancelled)")
    # Truncated without a saved file: no truncation line.
    assert "truncated" not in only_text(convert_to_llm([bash(truncated=True)])[0])


def test_bash_execution_excluded_from_context_is_dropped() -> None:
    """A !! command stays out of the LLM context."""
    assert convert_to_llm([bash(exclude_from_context=True)]) == []


def test_custom_message_becomes_a_user_message_with_its_content() -> None:
    """String content becomes one text block; block content is kept, images included."""
    text = CustomMessage(custom_type="note", content="remember", display=False, timestamp=7)
    blocks = CustomMessage(
        custom_type="note", content=[TextContent(text="look"), IMAGE], display=True, timestamp=8
    )
    first, second = convert_to_llm([text, blocks])
    assert only_text(first) == "remember"
    assert isinstance(second, UserMessage)
    assert second.content == (TextContent(text="look"), IMAGE)
    assert second.timestamp == 8


def test_summaries_are_wrapped_in_summary_tags() -> None:
    """Compaction and branch summaries become user messages with their explanations."""
    compaction = CompactionSummaryMessage(summary="S1", tokens_before=10, timestamp=1)
    branch = BranchSummaryMessage(summary="S2", from_id="abc", timestamp=2)
    first, second = convert_to_llm([compaction, branch])
    assert only_text(first) == (
        "The conversation history before this point was compacted into the following summary:"
        "\n\n<summary>\nS1\n</summary>"
    )
    assert only_text(second) == (
        "The following is a summary of a branch that this conversation came back from:"
        "\n\n<summary>\nS2\n</summary>"
    )


def test_llm_messages_pass_through_and_unknown_kinds_are_dropped() -> None:
    """user, assistant and toolResult are kept as they are, in order; unknown roles vanish."""
    user = UserMessage(content="hi", timestamp=1)
    assistant: AssistantMessage = faux_assistant_message("hello")
    result = ToolResultMessage(
        tool_call_id="c",
        tool_name="t",
        content=[TextContent(text="r")],
        is_error=False,
        timestamp=3,
    )
    unknown = OpaqueMessage({"role": "fromTheFuture", "x": 1})
    converted = convert_to_llm([user, unknown, assistant, result])
    assert converted == [user, assistant, result]
    assert converted[1] is assistant


def test_blocked_images_are_replaced_by_one_placeholder_per_run() -> None:
    """With block_images, images in user and tool-result messages become placeholder text."""
    user = UserMessage(content=[TextContent(text="see"), IMAGE, IMAGE], timestamp=1)
    result = ToolResultMessage(
        tool_call_id="c", tool_name="read", content=[IMAGE], is_error=False, timestamp=2
    )
    blocked_user, blocked_result = convert_to_llm([user, result], block_images=True)
    assert isinstance(blocked_user, UserMessage)
    assert blocked_user.content == (
        TextContent(text="see"),
        TextContent(text=IMAGES_BLOCKED_TEXT),
    )
    assert isinstance(blocked_result, ToolResultMessage)
    assert blocked_result.content == (TextContent(text=IMAGES_BLOCKED_TEXT),)
    assert convert_to_llm([user])[0] is user
