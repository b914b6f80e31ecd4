"""The faux provider's fast paths (usage-estimate serialisation, builder over a message) give
what pi's plain algorithm gives."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from pitrio.providers import (
    AssistantMessage,
    AssistantMessageBuilder,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pitrio.providers.faux._usage import _estimate_tokens, serialize_context


def _pi_json(value: Any) -> str:
    """JavaScript's JSON.stringify for plain data (no spaces, non-ASCII as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _pi_user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b.text if b.type == "text" else f"[image:{b.mime_type}:{_utf16_length(b.data)}]"
        for b in content
    )


def _pi_assistant_text(content: Any) -> str:
    return "\n".join(
        b.text
        if b.type == "text"
        else b.thinking
        if b.type == "thinking"
        else f"{b.name}:{_pi_json(b.arguments)}"
        for b in content
    )


def _pi_serialize(context: Context) -> str:
    """pi's serializeContext, written out plainly over the same messages."""
    parts = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    for m in context.messages:
        if m.role == "user":
            text = _pi_user_text(m.content)
        elif m.role == "assistant":
            text = _pi_assistant_text(m.content)
        else:
            text = "\n".join([m.tool_name, *(_pi_user_text([b]) for b in m.content)])
        parts.append(f"{m.role}:{text}")
    if context.tools:
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                 for t in context.tools]  # fmt: skip
        parts.append(f"tools:{_pi_json(tools)}")
    return "\n\n".join(parts)


texts = st.text(max_size=12)
text_blocks = st.builds(TextContent, text=texts)
image_blocks = st.builds(ImageContent, data=texts, mime_type=st.sampled_from(["image/png"]))
user_blocks = st.lists(st.one_of(text_blocks, image_blocks), max_size=3)
# JSON numbers as a model sends them (JavaScript-safe integers).
safe_integers = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
arguments = st.dictionaries(st.text(max_size=4), st.one_of(safe_integers, texts), max_size=3)
assistant_blocks = st.lists(
    st.one_of(
        text_blocks,
        st.builds(ThinkingContent, thinking=texts),
        st.builds(
            ToolCall, id=st.just("c1"), name=st.sampled_from(["echo", "ls"]), arguments=arguments
        ),
    ),
    max_size=3,
)
messages = st.one_of(
    st.builds(UserMessage, content=st.one_of(texts, user_blocks), timestamp=st.just(1)),
    st.builds(
        AssistantMessage,
        content=assistant_blocks,
        api=st.just("faux"),
        provider=st.just("faux"),
        model=st.just("faux-1"),
        stop_reason=st.just("stop"),
        timestamp=st.just(1),
    ),
    st.builds(
        ToolResultMessage,
        tool_call_id=st.just("c1"),
        tool_name=st.sampled_from(["echo", "ls"]),
        content=user_blocks,
        is_error=st.booleans(),
        timestamp=st.just(1),
    ),
)
tools = st.builds(
    Tool,
    name=st.sampled_from(["echo", "ls"]),
    description=texts,
    parameters=st.fixed_dictionaries({"type": st.just("object"), "x": texts}),
)
contexts = st.builds(
    Context,
    system_prompt=st.one_of(st.none(), texts),
    messages=st.lists(messages, max_size=4),
    tools=st.one_of(st.none(), st.lists(tools, max_size=2)),
)


@settings(deadline=None, max_examples=300)
@given(contexts)
def test_serialize_context_equals_pis_plain_algorithm(context: Context) -> None:
    """Every message kind and block mix serialises as pi's serializeContext does."""
    assert serialize_context(context) == _pi_serialize(context)


@settings(deadline=None)
@given(st.text(max_size=40))
def test_token_estimate_is_the_ceiling_of_utf16_length_over_four(text: str) -> None:
    """The estimate is pi's Math.ceil(text.length / 4), length in UTF-16 code units."""
    assert _estimate_tokens(text) == math.ceil(_utf16_length(text) / 4)


def _message() -> AssistantMessage:
    return AssistantMessage(
        content=(TextContent(text="final"),),
        api="faux",
        provider="prov",
        model="faux-1",
        response_id="r1",
        usage=Usage(input=3, output=2, total_tokens=5),
        stop_reason="toolUse",
        timestamp=42,
    )


def test_builder_for_message_takes_its_fields_but_not_its_content() -> None:
    """A builder made for a message shows the message's fields and only the blocks streamed so
    far, and builds the message once every block is in."""
    message = _message()
    builder = AssistantMessageBuilder.for_message(message)
    empty = builder.snapshot()
    index = builder.add_text()
    builder.append(index, "fin")
    early = builder.snapshot()
    builder.append(index, "al")
    assert empty.content == ()
    assert early.content == (TextContent(text="fin"),)
    assert (early.api, early.provider, early.model, early.response_id) == (
        "faux",
        "prov",
        "faux-1",
        "r1",
    )
    assert (early.usage, early.stop_reason, early.timestamp) == (message.usage, "toolUse", 42)
    assert builder.build() == message


def test_builder_for_message_update_leaves_the_message_and_old_snapshots_alone() -> None:
    """update() on such a builder (an abort) changes later snapshots only, not the message."""
    message = _message()
    builder = AssistantMessageBuilder.for_message(message)
    builder.add_text("fi")
    before = builder.snapshot()
    builder.update(stop_reason="aborted", error_message="Request was aborted", timestamp=7)
    after = builder.build()
    assert (before.stop_reason, before.timestamp) == ("toolUse", 42)
    assert (message.stop_reason, message.error_message) == ("toolUse", None)
    assert after == attrs.evolve(
        message,
        content=(TextContent(text="fi"),),
        stop_reason="aborted",
        error_message="Request was aborted",
        timestamp=7,
    )
