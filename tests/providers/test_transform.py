"""transform_messages prepares a mixed-provider conversation for replay as pi-ai 0.73.1 does."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pitrio.codec import from_wire, to_wire
from pitrio.providers._messages import (
    AssistantContentBlock,
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pitrio.providers._transform import (
    NO_RESULT_PROVIDED,
    NON_VISION_TOOL_IMAGE_PLACEHOLDER,
    NON_VISION_USER_IMAGE_PLACEHOLDER,
    transform_messages,
)


def _model(
    api: str, provider: str, model_id: str, *, images: bool = True, base_url: str = "http://x"
) -> Model:
    return Model(
        id=model_id,
        name=model_id,
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=True,
        input=("text", "image") if images else ("text",),
        context_window=200_000,
        max_tokens=32_000,
    )


CLAUDE = _model("anthropic-messages", "anthropic", "claude-sonnet-4-5")
GPT = _model("openai-responses", "openai", "gpt-5")
GEMINI = _model("google-generative-ai", "google", "gemini-2.5-pro")
GROQ = _model("openai-completions", "groq", "openai/gpt-oss-120b", images=False)


def _assistant(
    model: Model,
    *blocks: AssistantContentBlock,
    stop_reason: StopReason = "stop",
    error: str | None = None,
    timestamp: int = 2,
) -> AssistantMessage:
    return AssistantMessage(
        content=blocks,
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=stop_reason,
        error_message=error,
        timestamp=timestamp,
    )


def _user(text: str = "hi", timestamp: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=timestamp)


def _result(call_id: str, name: str = "read", text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name=name,
        content=(TextContent(text=text),),
        is_error=False,
        timestamp=3,
    )


def _anthropic_ids(call_id: str, model: Model, source: AssistantMessage) -> str:
    """An Anthropic-style normaliser: ``^[a-zA-Z0-9_-]+$``, at most 64 characters."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64]


# --------------------------------------------------------------------------- thinking and text


def test_thinking_from_another_model_becomes_text() -> None:
    """A different model's thinking is replayed as plain text without its signature."""
    message = _assistant(GPT, ThinkingContent(thinking="Let me think.", thinking_signature="rs_1"))
    (out,) = transform_messages([message], CLAUDE)
    assert isinstance(out, AssistantMessage)
    assert out.content == (TextContent(text="Let me think."),)


def test_empty_thinking_from_another_model_is_dropped() -> None:
    """Empty or whitespace-only thinking from another model is left out, signed or not."""
    message = _assistant(
        GPT,
        ThinkingContent(thinking="", thinking_signature="encrypted"),
        ThinkingContent(thinking="  \n"),
        TextContent(text="answer"),
    )
    (out,) = transform_messages([message], CLAUDE)
    assert isinstance(out, AssistantMessage)
    assert out.content == (TextContent(text="answer"),)


def test_redacted_thinking_is_dropped_for_another_model_and_kept_for_the_same() -> None:
    """Redacted thinking is opaque: only the model that wrote it may see it again."""
    redacted = ThinkingContent(thinking="", thinking_signature="opaque", redacted=True)
    message = _assistant(CLAUDE, redacted, TextContent(text="done"))
    (other,) = transform_messages([message], GPT)
    (same,) = transform_messages([message], CLAUDE)
    assert isinstance(other, AssistantMessage)
    assert other.content == (TextContent(text="done"),)
    assert same is message


def test_same_model_keeps_thinking_and_signatures() -> None:
    """Same provider, API and model id: thinking, signatures and text signatures survive."""
    blocks = (
        ThinkingContent(thinking="reasoning", thinking_signature="sig"),
        ThinkingContent(thinking="", thinking_signature="rs_encrypted"),
        TextContent(text="answer", text_signature='{"id":"msg_1"}'),
    )
    message = _assistant(GPT, *blocks)
    (out,) = transform_messages([message], GPT)
    assert out is message


def test_same_model_drops_empty_unsigned_thinking() -> None:
    """An empty thinking block with no signature carries nothing and is dropped even for the
    same model."""
    message = _assistant(CLAUDE, ThinkingContent(thinking=" "), TextContent(text="a"))
    (out,) = transform_messages([message], CLAUDE)
    assert isinstance(out, AssistantMessage)
    assert out.content == (TextContent(text="a"),)


def test_same_model_requires_provider_api_and_id_to_match() -> None:
    """A model with the same id behind a different provider counts as another model."""
    proxied = _model("anthropic-messages", "my-proxy", CLAUDE.id)
    message = _assistant(CLAUDE, ThinkingContent(thinking="t", thinking_signature="sig"))
    (out,) = transform_messages([message], proxied)
    assert isinstance(out, AssistantMessage)
    assert out.content == (TextContent(text="t"),)


def test_text_from_another_model_loses_its_signature_and_unknown_keys() -> None:
    """Text is rebuilt from its text alone when it crosses models."""
    text = from_wire(
        TextContent, {"type": "text", "text": "hello", "textSignature": "sig", "future": 1}
    )
    (out,) = transform_messages([_assistant(GPT, text)], CLAUDE)
    assert isinstance(out, AssistantMessage)
    assert to_wire(out.content[0]) == {"type": "text", "text": "hello"}


# --------------------------------------------------------------------------- tool calls


def test_tool_call_thought_signature_is_removed_for_another_model() -> None:
    """Google's thought signature only means something to the model that produced it."""
    call = ToolCall(id="c1", name="bash", arguments={"command": "ls"}, thought_signature="TS")
    message = _assistant(GEMINI, call, stop_reason="toolUse")
    (other, _) = transform_messages([message, _result("c1", "bash")], CLAUDE)
    (same, _) = transform_messages([message, _result("c1", "bash")], GEMINI)
    assert isinstance(other, AssistantMessage)
    assert other.content == (ToolCall(id="c1", name="bash", arguments={"command": "ls"}),)
    assert same is message


def test_tool_call_ids_are_normalised_and_results_follow() -> None:
    """The provider's id normaliser rewrites foreign call ids, and later results use the new ids."""
    long_id = "call_abc|fc_" + "x" * 80 + "+/="
    message = _assistant(
        GPT,
        ToolCall(id=long_id, name="read", arguments={"path": "a"}),
        ToolCall(id="plain_id", name="ls"),
        stop_reason="toolUse",
    )
    seen: list[tuple[str, Model, AssistantMessage]] = []

    def normalise(call_id: str, model: Model, source: AssistantMessage) -> str:
        seen.append((call_id, model, source))
        return _anthropic_ids(call_id, model, source)

    out = transform_messages(
        [_user(), message, _result(long_id), _result("plain_id", "ls")], CLAUDE, normalise
    )
    new_id = _anthropic_ids(long_id, CLAUDE, message)
    assistant = out[1]
    assert isinstance(assistant, AssistantMessage)
    assert [c.id for c in assistant.tool_calls()] == [new_id, "plain_id"]
    assert [m.tool_call_id for m in out[2:] if isinstance(m, ToolResultMessage)] == [
        new_id,
        "plain_id",
    ]
    assert [(call_id, model.id, source) for call_id, model, source in seen] == [
        (long_id, CLAUDE.id, message),
        ("plain_id", CLAUDE.id, message),
    ]


def test_tool_call_ids_of_the_same_model_are_not_normalised() -> None:
    """The normaliser is only consulted for calls made by another model."""

    def never(call_id: str, model: Model, source: AssistantMessage) -> str:
        raise AssertionError("called for the same model")

    message = _assistant(GPT, ToolCall(id="call|x", name="read"), stop_reason="toolUse")
    out = transform_messages([message, _result("call|x")], GPT, never)
    assert out[0] is message


# --------------------------------------------------------------------------- orphaned calls


def _synthetic(message: Message, call_id: str, name: str) -> None:
    assert isinstance(message, ToolResultMessage)
    assert message.tool_call_id == call_id
    assert message.tool_name == name
    assert message.is_error is True
    assert message.content == (TextContent(text=NO_RESULT_PROVIDED),)


def test_orphaned_tool_call_before_a_user_message_gets_an_error_result() -> None:
    """A call with no result before the next user message is answered with "No result provided"."""
    call = ToolCall(id="t1", name="bash")
    out = transform_messages(
        [_user(), _assistant(CLAUDE, call, stop_reason="toolUse"), _user("next")], CLAUDE
    )
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "user"]
    _synthetic(out[2], "t1", "bash")
    assert NO_RESULT_PROVIDED == "No result provided"


def test_orphaned_tool_call_at_the_end_gets_an_error_result() -> None:
    """A conversation that ends with unanswered calls gets a result for each of them."""
    message = _assistant(
        CLAUDE, ToolCall(id="a", name="read"), ToolCall(id="b", name="ls"), stop_reason="toolUse"
    )
    out = transform_messages([_user(), message], CLAUDE)
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "toolResult"]
    _synthetic(out[2], "a", "read")
    _synthetic(out[3], "b", "ls")


def test_only_the_unanswered_calls_get_synthetic_results() -> None:
    """Existing results are kept; the missing ones are added after them."""
    message = _assistant(
        CLAUDE, ToolCall(id="a", name="read"), ToolCall(id="b", name="ls"), stop_reason="toolUse"
    )
    real = _result("b", "ls", "listing")
    out = transform_messages(
        [_user(), message, real, _assistant(CLAUDE, TextContent(text="x"))], CLAUDE
    )
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert out[2] is real
    _synthetic(out[3], "a", "read")


def test_synthetic_results_use_normalised_ids() -> None:
    """The synthetic result answers the call under the id the target provider will see."""
    message = _assistant(GPT, ToolCall(id="call|1", name="read"), stop_reason="toolUse")
    out = transform_messages([_user(), message, _user("again")], CLAUDE, _anthropic_ids)
    _synthetic(out[2], "call_1", "read")


# --------------------------------------------------------------------------- errored turns


@pytest.mark.parametrize("stop_reason", ["error", "aborted"])
def test_errored_and_aborted_assistant_messages_are_skipped(stop_reason: StopReason) -> None:
    """Incomplete turns are not replayed, and their tool calls get no synthetic results."""
    failed = _assistant(
        CLAUDE,
        ThinkingContent(thinking="half"),
        ToolCall(id="f1", name="bash"),
        stop_reason=stop_reason,
        error="terminated",
    )
    out = transform_messages([_user(), failed, _user("retry")], CLAUDE)
    assert [m.role for m in out] == ["user", "user"]


def test_results_of_a_skipped_turn_are_kept_as_pi_0_73_1_does() -> None:
    """pi 0.73.1 drops the failed assistant turn but passes a tool result for it through."""
    failed = _assistant(CLAUDE, ToolCall(id="f1", name="bash"), stop_reason="error")
    late = _result("f1", "bash")
    user = _user()
    out = transform_messages([user, failed, late], CLAUDE)
    assert out == [user, late]


def test_pending_calls_are_answered_before_a_skipped_turn() -> None:
    """Unanswered calls of the previous turn are answered before an errored turn is dropped."""
    ok = _assistant(CLAUDE, ToolCall(id="ok1", name="read"), stop_reason="toolUse")
    failed = _assistant(CLAUDE, TextContent(text="partial"), stop_reason="error")
    out = transform_messages([_user(), ok, failed], CLAUDE)
    assert [m.role for m in out] == ["user", "assistant", "toolResult"]
    _synthetic(out[2], "ok1", "read")


# --------------------------------------------------------------------------- images


def _image(data: str = "AAAA") -> ImageContent:
    return ImageContent(data=data, mime_type="image/png")


def test_images_become_placeholders_for_a_text_only_model() -> None:
    """Each run of adjacent images becomes one placeholder, in user messages and tool results."""
    user = UserMessage(
        content=(TextContent(text="look"), _image(), _image(), TextContent(text="and"), _image()),
        timestamp=1,
    )
    call = _assistant(CLAUDE, ToolCall(id="t", name="screenshot"), stop_reason="toolUse")
    result = ToolResultMessage(
        tool_call_id="t",
        tool_name="screenshot",
        content=(_image(), TextContent(text="caption")),
        is_error=False,
        timestamp=3,
    )
    out = transform_messages([user, call, result], GROQ)
    assert isinstance(out[0], UserMessage)
    assert out[0].content == (
        TextContent(text="look"),
        TextContent(text=NON_VISION_USER_IMAGE_PLACEHOLDER),
        TextContent(text="and"),
        TextContent(text=NON_VISION_USER_IMAGE_PLACEHOLDER),
    )
    assert isinstance(out[2], ToolResultMessage)
    assert out[2].content == (
        TextContent(text=NON_VISION_TOOL_IMAGE_PLACEHOLDER),
        TextContent(text="caption"),
    )


def test_an_existing_placeholder_absorbs_the_images_after_it() -> None:
    """Images right after a placeholder text (from an earlier downgrade) add no second one."""
    user = UserMessage(
        content=(TextContent(text=NON_VISION_USER_IMAGE_PLACEHOLDER), _image()), timestamp=1
    )
    (out,) = transform_messages([user], GROQ)
    assert isinstance(out, UserMessage)
    assert out.content == (TextContent(text=NON_VISION_USER_IMAGE_PLACEHOLDER),)


def test_images_are_kept_for_a_vision_model_and_text_only_messages_are_untouched() -> None:
    """Nothing changes for a model that accepts images, or for messages without images."""
    user = UserMessage(content=(TextContent(text="look"), _image()), timestamp=1)
    plain = _user("just text")
    assert transform_messages([user, plain], CLAUDE) == [user, plain]
    out = transform_messages([user, plain], GROQ)
    assert out[1] is plain


# --------------------------------------------------------------------------- purity


def test_inputs_are_not_modified_and_unchanged_messages_are_shared() -> None:
    """The function is pure: the input list is untouched and unchanged messages are reused."""
    user = _user()
    foreign = _assistant(GPT, ThinkingContent(thinking="t"), ToolCall(id="c|1", name="read"))
    result = _result("c|1")
    messages: list[Message] = [user, foreign, result]
    before = [to_wire(m) for m in messages]
    out = transform_messages(messages, CLAUDE, _anthropic_ids)
    assert [to_wire(m) for m in messages] == before
    assert out[0] is user
    assert out[1] is not foreign
    assert isinstance(out[2], ToolResultMessage) and out[2].tool_call_id == "c_1"


# --------------------------------------------------------------------------- handoff


def _handoff_conversation() -> list[Message]:
    """A session that hopped across four APIs, shaped like what each provider returns."""
    openai_call = "call_8fK2|fc_68b9c0d1e2f3a4b5c6d7e8f9" + "0" * 40 + "a1b2/c3+d4=="
    return [
        _user("List the files, then read the README."),
        # OpenAI Responses: encrypted reasoning (empty text, signature), a message id in the
        # text signature, a 100+ character tool-call id with '|'.
        _assistant(
            GPT,
            ThinkingContent(thinking="", thinking_signature='{"id":"rs_1","encrypted":"..."}'),
            TextContent(text="Listing.", text_signature='{"v":1,"id":"msg_1"}'),
            ToolCall(id=openai_call, name="ls", arguments={"path": "."}),
            stop_reason="toolUse",
        ),
        _result(openai_call, "ls", "README.md\nsrc"),
        # Anthropic: signed thinking, redacted thinking, a toolu_ id.
        _assistant(
            CLAUDE,
            ThinkingContent(thinking="Now read it.", thinking_signature="EqQBCkYIBxgCKkA"),
            ThinkingContent(thinking="", thinking_signature="EmwKAhgB", redacted=True),
            ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="read", arguments={"path": "R"}),
            stop_reason="toolUse",
        ),
        _result("toolu_01A09q90qw90lq917835lq9", "read", "# Project"),
        # Google: thought text and a thought signature on the call; the call is never answered.
        _assistant(
            GEMINI,
            ThinkingContent(thinking="**Summarising**"),
            ToolCall(
                id="bash_1", name="bash", arguments={"command": "wc"}, thought_signature="Cs4"
            ),
            stop_reason="toolUse",
        ),
        _user("Stop, just summarise."),
        # OpenAI Completions behind Groq, then an aborted turn.
        _assistant(GROQ, TextContent(text="It is a project."), stop_reason="stop"),
        _assistant(CLAUDE, TextContent(text="Partial"), stop_reason="aborted"),
        _user("Thanks."),
    ]


@pytest.mark.parametrize("target", [CLAUDE, GPT, GEMINI, GROQ], ids=lambda m: m.api)
def test_handoff_to_each_api_yields_a_replayable_conversation(target: Model) -> None:
    """A conversation from four APIs becomes one the target API accepts: no foreign signatures,
    valid tool-call ids, one result per call right after its assistant turn, no failed turns."""
    messages = _handoff_conversation()
    out = transform_messages(messages, target, _anthropic_ids)

    pending: set[str] = set()
    for message in out:
        if isinstance(message, AssistantMessage):
            assert not pending, "a call was left unanswered before the next turn"
            assert message.stop_reason not in ("error", "aborted")
            same = (message.provider, message.api, message.model) == (
                target.provider,
                target.api,
                target.id,
            )
            for block in message.content:
                if same:
                    continue
                assert not isinstance(block, ThinkingContent)
                if isinstance(block, TextContent):
                    assert block.text_signature is None
                if isinstance(block, ToolCall):
                    assert block.thought_signature is None
                    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", block.id)
            pending = {call.id for call in message.tool_calls()}
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in pending
            pending.discard(message.tool_call_id)
        else:
            assert not pending, "a call was left unanswered before a user message"
    assert not pending

    # Every message survives a round trip through pi's JSON.
    for message in out:
        assert from_wire(Message, to_wire(message)) == message

    # The unanswered Google call got a synthetic result under the normalised id.
    synthetic = [m for m in out if isinstance(m, ToolResultMessage) and m.is_error]
    assert [(m.tool_call_id, m.tool_name) for m in synthetic] == [("bash_1", "bash")]
    # The aborted Claude turn is gone; the Groq answer is there as text.
    texts = [
        block.text
        for m in out
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, TextContent)
    ]
    assert "Partial" not in texts
    assert "It is a project." in texts


def test_handoff_keeps_the_targets_own_reasoning() -> None:
    """Handing the conversation back to Claude keeps Claude's signed and redacted thinking,
    and turns the other models' thinking into text."""
    out = transform_messages(_handoff_conversation(), CLAUDE, _anthropic_ids)
    blocks: list[Any] = [b for m in out if isinstance(m, AssistantMessage) for b in m.content]
    kinds = [(type(b).__name__, getattr(b, "thinking_signature", None)) for b in blocks]
    assert ("ThinkingContent", "EqQBCkYIBxgCKkA") in kinds
    assert ("ThinkingContent", "EmwKAhgB") in kinds
    assert TextContent(text="**Summarising**") in blocks
    # GPT's encrypted reasoning had no text: dropped, not turned into an empty text block.
    assert TextContent(text="") not in blocks
