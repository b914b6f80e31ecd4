"""The ContextEnvelope of seed 001: patch ops, the system prompt parts, persistence and replay."""

from __future__ import annotations

import pytest

from pitrio.providers import Tool, UserMessage
from pitrio.sessions import SessionManager
from pitrio.sessions.context._envelope import (
    ContextEnvelope,
    ContextMeta,
    ContextPatchError,
    GenerationOptions,
    SystemPrompt,
    apply_patch,
)
from pitrio.sessions.context._envelope_wire import decode_patch
from pitrio.sessions.resources import build_system_prompt, split_system_prompt
from pitrio.sessions.runtime._agent_session_types import SessionHooks
from pitrio.sessions.runtime._context_engine import ContextEngine
from pitrio.sessions.storage._context_ops import (
    CompactionApplyOp,
    MessagesCachedReplaceOp,
    MessagesUncachedAppendOp,
    OptionsSetOp,
    SystemPart,
    SystemPartRemoveOp,
    SystemPartSetOp,
    SystemPartsReplaceOp,
    ToolsRemoveOp,
    ToolsReplaceOp,
)
from tests.actors.helpers import assistant


def _user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def _tool(name: str) -> Tool:
    return Tool(name=name, description=name, parameters={"type": "object"})


BASE = ContextEnvelope(
    system=SystemPrompt(
        parts=(SystemPart(name="base", text="A"), SystemPart(name="skills", text="B"))
    ),
    tools=(_tool("read"), _tool("bash")),
)


def test_system_parts_set_remove_replace() -> None:
    """system_part_set replaces in place or appends; remove and replace work on names."""
    env = apply_patch(
        BASE, [SystemPartSetOp(part_name="base", text="X", invalidate_cache_reason="r")]
    )
    assert env.system.compiled == "XB"
    env = apply_patch(
        env, [SystemPartSetOp(part_name="policy", text="P", invalidate_cache_reason="r")]
    )
    assert env.system.compiled == "XBP"
    env = apply_patch(env, [SystemPartRemoveOp(part_name="skills", invalidate_cache_reason="r")])
    assert [p.name for p in env.system.parts] == ["base", "policy"]
    env = apply_patch(
        env,
        [SystemPartsReplaceOp(parts=[SystemPart(name="z", text="Z")], invalidate_cache_reason="r")],
    )
    assert env.system.compiled == "Z"
    assert BASE.system.compiled == "AB"  # pure


def test_tools_messages_options_and_compaction() -> None:
    """Tools, cached/uncached messages, options and compaction_apply change what they name."""
    env = apply_patch(BASE, [ToolsRemoveOp(names=["bash"], invalidate_cache_reason="r")])
    assert env.tool_names == ("read",)
    env = apply_patch(env, [ToolsReplaceOp(tools=[_tool("bash")], invalidate_cache_reason="r")])
    assert env.tool_names == ("bash",)
    msgs = [_user("a"), _user("b"), _user("c")]
    env = apply_patch(env, [MessagesCachedReplaceOp(messages=msgs, invalidate_cache_reason="r")])
    env = apply_patch(env, [MessagesUncachedAppendOp(messages=[_user("eph")])])
    assert [m.content for m in env.messages.all] == ["a", "b", "c", "eph"]  # type: ignore[attr-defined]
    env = apply_patch(env, [OptionsSetOp(temperature=0.5)])
    assert env.options == GenerationOptions(temperature=0.5)
    env = apply_patch(
        env,
        [
            CompactionApplyOp(
                summary="S", tokens_before=9, first_kept_index=2, invalidate_cache_reason="c"
            )
        ],
    )
    assert [getattr(m, "summary", None) or m.content for m in env.messages.cached] == ["S", "c"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "op",
    [
        SystemPartSetOp(part_name="x", text="y"),
        SystemPartRemoveOp(part_name="x"),
        ToolsRemoveOp(names=["read"]),
        ToolsReplaceOp(tools=[]),
        MessagesCachedReplaceOp(messages=[]),
        CompactionApplyOp(summary="s", tokens_before=1, first_kept_index=0),
    ],
)
def test_cached_ops_need_an_invalidate_cache_reason(op: object) -> None:
    """Every op that touches cached content is rejected without invalidateCacheReason."""
    with pytest.raises(ContextPatchError, match="invalidateCacheReason"):
        apply_patch(BASE, [op])  # type: ignore[list-item]


def test_unknown_tool_names_and_malformed_ops_are_rejected() -> None:
    """tools_replace naming no loaded tool, unknown ops and wrong scopes raise clear errors."""
    with pytest.raises(ContextPatchError, match="nope"):
        apply_patch(
            BASE,
            [ToolsReplaceOp(tools=[_tool("nope")], invalidate_cache_reason="r")],
            loaded_tools={"read"},
        )
    with pytest.raises(ContextPatchError, match="unknown op"):
        decode_patch([{"op": "explode"}])
    with pytest.raises(ContextPatchError, match="scope"):
        apply_patch(
            BASE,
            [
                SystemPartSetOp(
                    scope="uncached", part_name="x", text="", invalidate_cache_reason="r"
                )
            ],
        )
    ops = decode_patch(
        [
            {
                "op": "system_part_set",
                "scope": "cached",
                "partName": "p",
                "text": "t",
                "invalidateCacheReason": "r",
            }
        ]
    )
    assert ops == (SystemPartSetOp(part_name="p", text="t", invalidate_cache_reason="r"),)


def test_split_system_prompt_concatenates_to_the_prompt(tmp_path: object) -> None:
    """The four parts of pi's default prompt concatenate to the prompt byte for byte."""
    from pitrio.sessions.resources import ContextFile, Skill  # noqa: F401

    prompt = build_system_prompt(cwd="/w", selected_tools=["read", "bash"])
    parts = split_system_prompt(prompt)
    assert [n for n, _ in parts] == ["base", "project_context", "skills", "runtime"]
    assert "".join(t for _, t in parts) == prompt
    assert parts[3][1].startswith("\nCurrent date: ")


class _Hooks(SessionHooks):
    def __init__(self) -> None:
        self.calls = 0


def _engine(
    manager: SessionManager, transcript: list[object], hooks: SessionHooks
) -> ContextEngine:
    return ContextEngine(
        manager=lambda: manager,
        hooks=hooks,
        transcript=lambda: transcript,  # type: ignore[arg-type,return-value]
        tools=lambda: [_tool("read")],
        loaded_tools=lambda: {"read"},
        system_prompt=lambda: "SYS",
        options=GenerationOptions,
        meta=ContextMeta,
    )


def test_reopened_session_replays_transforms_without_hooks(tmp_path: object) -> None:
    """context_transform entries replay in order after a reopen; ephemeral entries never do."""
    import pathlib

    directory = pathlib.Path(str(tmp_path))
    manager = SessionManager.create(str(directory), str(directory))
    first = _user("hello")
    manager.append_message(first)
    marker = _user("[marker]", 2)
    manager.append_context_transform(
        "before_request",
        [MessagesCachedReplaceOp(messages=[first, marker], invalidate_cache_reason="add marker")],
        "marker",
    )
    manager.append_context_transform(
        "turn_end",
        [SystemPartSetOp(part_name="policy", text="P", invalidate_cache_reason="policy")],
        "system-policy",
    )
    manager.append_ephemeral([MessagesUncachedAppendOp(messages=[_user("eph")])])
    reply = assistant("ok")
    manager.append_message(reply)  # the first assistant message flushes the file (pi's rule)
    hooks = _Hooks()
    live = _engine(manager, [first, reply], hooks).replay()
    assert [m.role for m in live.messages.cached] == ["user", "user", "assistant"]  # type: ignore[attr-defined]
    assert live.messages.uncached == ()
    assert live.system.compiled.endswith("P")
    path = manager.get_session_file()
    assert path is not None
    reopened = SessionManager.open(path)
    again = _engine(reopened, reopened.build_session_context().messages, hooks).replay()
    assert again.messages == live.messages and again.system == live.system
    assert hooks.calls == 0
