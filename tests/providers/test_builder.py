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


def test_a_single_block_snapshot_keeps_its_unset_signature_and_arguments() -> None:
    """A one-block snapshot taken before the signature, the arguments or the redacted flag
    were set still shows them unset afterwards, for text, thinking and tool-call blocks."""
    text = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    index = text.add_text()
    text.append(index, "Hel")
    early = text.snapshot()
    text.append(index, "lo")
    text.set_signature(index, "sig")
    assert early.content == (TextContent(text="Hel"),)
    assert text.snapshot().content == (TextContent(text="Hello", text_signature="sig"),)
    assert repr(early) == "PartialAssistantMessage(blocks=1, model='m')"

    thinking = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    index = thinking.add_thinking()
    thinking.append(index, "hmm")
    early = thinking.snapshot()
    thinking.set_redacted(index, True)
    assert early.content == (ThinkingContent(thinking="hmm"),)
    assert thinking.snapshot().content == (ThinkingContent(thinking="hmm", redacted=True),)

    call = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    index = call.add_tool_call(id="c1", name="read")
    call.append(index, '{"path"')
    early = call.snapshot()
    call.set_arguments(index, {"path": "a"})
    assert early.content == (ToolCall(id="c1", name="read", arguments={}),)
    assert call.snapshot().content == (ToolCall(id="c1", name="read", arguments={"path": "a"}),)


def test_a_snapshot_makes_its_content_once_and_keeps_describing_itself() -> None:
    """Reading a snapshot's content twice gives the same tuple (made on the first read), and
    its repr, equality and message stay what they were before the read, in both forms."""
    builder = AssistantMessageBuilder(api="x", provider="p", model="m", timestamp=1)
    text = builder.add_text("He")
    compact = builder.snapshot()
    builder.add_tool_call(id="c", name="echo")
    general = builder.snapshot()
    for snapshot, blocks in ((compact, 1), (general, 2)):
        described = repr(snapshot)
        assert described == f"PartialAssistantMessage(blocks={blocks}, model='m')"
        first = snapshot.content
        assert snapshot.content is first
        assert repr(snapshot) == described
        assert snapshot.to_message().content == first
    builder.append(text, "llo")
    assert compact.content == (TextContent(text="He"),)
    assert general.content == (TextContent(text="He"), ToolCall(id="c", name="echo", arguments={}))
    assert compact == compact.to_message()
