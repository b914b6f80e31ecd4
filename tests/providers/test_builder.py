"""AssistantMessageBuilder.set_text: replacing streamed text keeps earlier snapshots intact."""

from __future__ import annotations

from pitrio.providers import AssistantMessageBuilder, TextContent, ThinkingContent, ToolCall
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


def test_snapshots_of_several_blocks_keep_each_block_as_it_was() -> None:
    """A snapshot of a thinking, a text and a tool-call block shows each block (text, signature,
    arguments) as it was when taken, also after all three moved on."""
    builder = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    think = builder.add_thinking()
    builder.append(think, "hmm")
    text = builder.add_text("He", signature="t1")
    call = builder.add_tool_call(id="c", name="echo")
    builder.append(call, '{"a"')
    early = builder.snapshot()
    builder.append(think, "...")
    builder.set_signature(think, "s2")
    builder.append(text, "llo")
    builder.set_arguments(call, {"a": 1})
    assert repr(early) == "PartialAssistantMessage(blocks=3, model='m')"
    assert early.content == (
        ThinkingContent(thinking="hmm"),
        TextContent(text="He", text_signature="t1"),
        ToolCall(id="c", name="echo", arguments={}),
    )
    assert builder.build().content == (
        ThinkingContent(thinking="hmm...", thinking_signature="s2"),
        TextContent(text="Hello", text_signature="t1"),
        ToolCall(id="c", name="echo", arguments={"a": 1}),
    )
