"""AssistantMessageBuilder.set_text: replacing streamed text keeps earlier snapshots intact."""

from __future__ import annotations

from pitrio.providers import AssistantMessageBuilder, TextContent, ToolCall
from pitrio.providers._json_parse import parse_streaming_json


def test_set_text_replaces_the_block_and_leaves_old_snapshots_alone() -> None:
    builder = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    index = builder.add_text("Hello wor", signature="sig")
    before = builder.snapshot()
    builder.set_text(index, "Hello, world")
    builder.append(index, "!")
    assert before.content == (TextContent(text="Hello wor", text_signature="sig"),)
    assert builder.build().content == (TextContent(text="Hello, world!", text_signature="sig"),)


def test_set_text_on_a_tool_call_keeps_id_and_name() -> None:
    builder = AssistantMessageBuilder(
        api="x", provider="p", model="m", timestamp=1, parse_partial_arguments=parse_streaming_json
    )
    index = builder.add_tool_call(id="call_1", name="read")
    builder.append(index, '{"path": "a')
    early = builder.snapshot()
    builder.set_text(index, '{"path": "b.txt"}')
    call = builder.snapshot().content[index]
    assert isinstance(call, ToolCall)
    assert (call.id, call.name, call.arguments) == ("call_1", "read", {"path": "b.txt"})
    early_call = early.content[index]
    assert isinstance(early_call, ToolCall)
    assert early_call.arguments == {"path": "a"}
