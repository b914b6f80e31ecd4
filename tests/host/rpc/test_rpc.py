"""``pitrio --mode rpc`` as a real subprocess, driven over its pipes with the faux provider."""

from __future__ import annotations

import os
from typing import Any

import trio

from pitrio.host import MAX_LINE_BYTES
from tests.host.rpc_process import open_rpc


def _fifo(tmp: str, name: str) -> str:
    path = os.path.join(tmp, name)
    os.mkfifo(path)
    return path


def _tool(command: str, call_id: str) -> dict[str, Any]:
    return {
        "content": [
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
        ]
    }


async def _release(path: str) -> None:
    def write() -> None:
        with open(path, "w") as file:
            file.write("go\n")

    await trio.to_thread.run_sync(write)


async def test_framing_and_errors_answer_as_pi(tmp_path: Any) -> None:
    """Bad, unknown, CRLF, U+2028 and overlong records get pi's answers and serving goes on."""
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, str(tmp_path), "--no-session")
        with trio.fail_after(60):
            await rpc.send_raw(b"abc\n")
            assert await rpc.raw_line() == (
                b'{"type":"response","command":"parse","success":false,'
                b'"error":"Failed to parse command: Unexpected token \'a\', \\"abc\\" is not valid JSON"}'
            )
            await rpc.send_raw(b'{"type":"nope","id":5}\n')
            assert await rpc.raw_line() == (
                b'{"type":"response","command":"nope","success":false,'
                b'"error":"Unknown command: nope"}'
            )
            await rpc.send_raw(b'{"id":"crlf","type":"get_state"}\r\n')
            state = await rpc.record()
            assert state["id"] == "crlf" and state["success"] is True
            await rpc.send_raw(
                '{"id":"a\u2028b","type":"set_session_name","name":"x\u2029y"}\n'.encode()
            )
            event = await rpc.raw_line()
            assert event == '{"type":"session_info_changed","name":"x\u2029y"}'.encode()
            line = await rpc.raw_line()
            assert (
                line
                == '{"id":"a\u2028b","type":"response","command":"set_session_name","success":true}'.encode()
            )
            huge = b'{"type":"prompt","message":"' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n'
            nursery.start_soon(rpc.send_raw, huge)
            error = await rpc.record()
            assert error["command"] == "parse" and error["success"] is False
            assert "exceeds the limit" in error["error"]
            state = await rpc.call({"id": "after", "type": "get_state"})
            assert state["data"]["sessionName"] == "x\u2029y"
            assert state["data"]["messageCount"] == 0
            assert "sessionFile" not in state["data"]
            empty = await rpc.call({"id": "n", "type": "set_session_name", "name": "  "})
            assert empty == {
                "id": "n",
                "type": "response",
                "command": "set_session_name",
                "success": False,
                "error": "Session name cannot be empty",
            }
            bad = await rpc.call({"id": "b", "type": "set_thinking_level", "level": 3})
            assert bad["success"] is False and "level" in bad["error"]
        assert rpc.process.stdin is not None
        await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0


async def test_a_conversation_with_steer_follow_up_abort_and_session_commands(
    tmp_path: Any,
) -> None:
    """Prompt, steer, follow-up, abort, models, thinking, compaction, stats, new session."""
    tmp = str(tmp_path)
    hold, hang = _fifo(tmp, "hold"), _fifo(tmp, "hang")
    script = [
        "Hello there",
        _tool(f"cat {hold}", "call-1"),
        "Steered answer",
        "Followed up",
        _tool(f"cat {hang}", "call-2"),
        "A summary of the conversation",
    ]
    async with trio.open_nursery() as nursery:
        rpc = await open_rpc(nursery, tmp, "--session-dir", os.path.join(tmp, "s"), script=script)
        with trio.fail_after(60):
            # A prompt is answered before its run's first event, then streams.
            await rpc.send({"id": "p1", "type": "prompt", "message": "hi"})
            first = await rpc.record()
            assert first == {"id": "p1", "type": "response", "command": "prompt", "success": True}
            events = await rpc.until(lambda r: r["type"] == "agent_end")
            kinds = [e["type"] for e in events]
            assert kinds[:2] == ["agent_start", "turn_start"]
            deltas = [
                e["assistantMessageEvent"]["delta"]
                for e in events
                if e["type"] == "message_update"
                and e["assistantMessageEvent"]["type"] == "text_delta"
            ]
            assert "".join(deltas) == "Hello there"
            text = await rpc.call({"id": "t", "type": "get_last_assistant_text"})
            assert text["data"] == {"text": "Hello there"}

            # Steer and follow up while a tool runs.
            await rpc.send({"id": "p2", "type": "prompt", "message": "run it"})
            await rpc.until(lambda r: r["type"] == "tool_execution_start")
            busy = await rpc.call({"id": "busy", "type": "prompt", "message": "again"})
            assert busy["success"] is False
            assert busy["error"].startswith(
                "Agent is already processing. Specify streamingBehavior"
            )
            await rpc.send({"id": "s", "type": "steer", "message": "steer now"})
            before = await rpc.until(lambda r: r.get("id") == "s")
            assert before[-2]["type"] == "queue_update"
            assert before[-2]["steering"] == ["steer now"]
            await rpc.call({"id": "f", "type": "follow_up", "message": "then this"})
            state = await rpc.call({"id": "st", "type": "get_state"})
            assert state["data"]["isStreaming"] is True
            assert state["data"]["pendingMessageCount"] == 2
            await _release(hold)
            events = await rpc.until(lambda r: r["type"] == "agent_end")
            users = [
                e["message"]["content"][0]["text"]
                for e in events
                if e["type"] == "message_start" and e["message"]["role"] == "user"
            ]
            assert users == ["steer now", "then this"]

            # Abort a tool that would never end.
            await rpc.send({"id": "p3", "type": "prompt", "message": "hang"})
            await rpc.until(lambda r: r["type"] == "tool_execution_start")
            aborted = await rpc.call({"id": "a", "type": "abort"})
            assert aborted == {"id": "a", "type": "response", "command": "abort", "success": True}
            assert any(r["type"] == "agent_end" for r in rpc.seen)

            # Models and thinking.
            model = await rpc.call(
                {"id": "m", "type": "set_model", "provider": "faux", "modelId": "faux-1"}
            )
            assert model["data"]["id"] == "faux-1" and model["data"]["provider"] == "faux"
            missing = await rpc.call(
                {"id": "m2", "type": "set_model", "provider": "x", "modelId": "y"}
            )
            assert missing["error"] == "Model not found: x/y"
            cycled = await rpc.call({"id": "c", "type": "cycle_model"})
            assert cycled == {
                "id": "c",
                "type": "response",
                "command": "cycle_model",
                "success": True,
                "data": None,
            }
            level = await rpc.call({"id": "l", "type": "set_thinking_level", "level": "high"})
            assert level["success"] is True and "data" not in level
            cycle = await rpc.call({"id": "cl", "type": "cycle_thinking_level"})
            assert cycle["data"] is None
            models = await rpc.call({"id": "am", "type": "get_available_models"})
            assert [m["id"] for m in models["data"]["models"]] == ["faux-1"]

            # Messages, stats, compaction, a new session.
            messages = await rpc.call({"id": "gm", "type": "get_messages"})
            roles = [m["role"] for m in messages["data"]["messages"]]
            assert roles[:2] == ["user", "assistant"]
            stats = await rpc.call({"id": "ss", "type": "get_session_stats"})
            assert stats["data"]["userMessages"] == 5
            assert stats["data"]["toolCalls"] == 2
            assert stats["data"]["sessionFile"].endswith(".jsonl")
            forks = await rpc.call({"id": "fm", "type": "get_fork_messages"})
            assert [m["text"] for m in forks["data"]["messages"]][:2] == ["hi", "run it"]
            compacted = await rpc.call({"id": "k", "type": "compact"})
            assert compacted["success"] is True, compacted
            assert compacted["data"]["summary"].startswith("A summary of the conversation")
            fresh = await rpc.call({"id": "n", "type": "new_session"})
            assert fresh["data"] == {"cancelled": False}
            state = await rpc.call({"id": "st2", "type": "get_state"})
            assert state["data"]["messageCount"] == 0
        assert rpc.process.stdin is not None
        await rpc.process.stdin.aclose()
        assert await rpc.process.wait() == 0
