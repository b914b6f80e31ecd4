"""The interactive mode driven through a pseudo-terminal, read with a terminal emulator."""

from __future__ import annotations

import os
import signal
import termios
from pathlib import Path

import pytest
from tui_harness import open_tui, set_size

ANSWER = "The answer is forty-two, said the model after some thought."

pytestmark = pytest.mark.usefixtures("autojump_clock")


async def test_typing_and_submitting_shows_the_answer_once_and_in_order(tmp_path: Path) -> None:
    script = ["First answer, with **bold** words.", "Second answer follows."]
    async with open_tui(tmp_path, script) as tui:
        tui.type("hello pitrio")
        await tui.wait_for("hello pitrio")
        tui.type("\r")
        await tui.wait_for("First answer")
        tui.type("and again\r")
        await tui.wait_for("Second answer follows.")
        transcript = tui.transcript()
    assert transcript.count("First answer, with bold words.") == 1
    assert transcript.count("Second answer follows.") == 1
    order = [transcript.index(t) for t in ("hello pitrio", "First answer", "and again", "Second")]
    assert order == sorted(order)
    assert tui.user_texts() == ["hello pitrio", "and again"]


async def test_a_streamed_answer_arrives_whole_and_once(tmp_path: Path) -> None:
    """Paced at 20 tokens per (virtual) second, a long answer is shown once, in order."""
    words = " ".join(f"word{i:03d}" for i in range(60))
    async with open_tui(tmp_path, [words], speed=20, columns=40, rows=10) as tui:
        tui.type("go\r")
        await tui.wait_for(lambda: "word059" in tui.text() and "Working" not in tui.text())
        transcript = tui.transcript()
    found = [transcript.count(f"word{i:03d}") for i in range(60)]
    assert found == [1] * 60
    positions = [transcript.index(f"word{i:03d}") for i in range(60)]
    assert positions == sorted(positions)


async def test_steering_while_streaming_is_delivered_after_the_turn(tmp_path: Path) -> None:
    long = " ".join(["streaming"] * 30)
    script = [long, "Steered reply."]
    async with open_tui(tmp_path, script, speed=20) as tui:
        tui.type("start\r")
        await tui.wait_for("Working...")
        tui.type("change course\r")
        await tui.wait_for("Steered reply.")
        await tui.wait_for(lambda: "Working" not in tui.text())
    assert tui.user_texts() == ["start", "change course"]
    assert tui.roles() == ["user", "assistant", "user", "assistant"]


async def test_alt_enter_queues_a_follow_up(tmp_path: Path) -> None:
    script = [" ".join(["busy"] * 40), "Follow-up reply."]
    async with open_tui(tmp_path, script, speed=10) as tui:
        tui.type("start\r")
        await tui.wait_for("Working...")
        tui.type("later please\x1b\r")  # alt+enter
        await tui.wait_for("Follow-up: later please")
        await tui.wait_for("Follow-up reply.")
    assert tui.user_texts() == ["start", "later please"]


async def test_escape_aborts_and_puts_queued_messages_back(tmp_path: Path) -> None:
    script = [" ".join(["slow"] * 200), "never used"]
    async with open_tui(tmp_path, script, speed=5) as tui:
        tui.type("start\r")
        await tui.wait_for("Working...")
        tui.type("queued one\x1b\r")
        await tui.wait_for("Follow-up: queued one")
        tui.type("\x1b")
        await tui.wait_for("Operation aborted")
        # The queue is cleared (and shown so) before the abort finishes and the editor gets
        # the queued text: wait for the editor, below the abort notice, to hold it.
        await tui.wait_for(
            lambda: (
                "Follow-up:" not in tui.text()
                and "queued one" in tui.text().split("Operation aborted")[-1]
            )
        )
    assert tui.user_texts() == ["start"]
    assert tui.roles() == ["user", "assistant"]


async def test_resize_mid_stream_redraws_at_the_new_width(tmp_path: Path) -> None:
    words = " ".join(f"w{i:02d}" for i in range(80))
    async with open_tui(tmp_path, [words], speed=10, columns=80, rows=20) as tui:
        tui.type("go\r")
        await tui.wait_for("w10")
        set_size(tui.slave, 40, 20)
        tui.screen.resize(40, 20)
        os.kill(os.getpid(), signal.SIGWINCH)
        await tui.wait_for(lambda: "w79" in tui.text() and "Working" not in tui.text())
        shown = tui.text()
    assert all(len(line) <= 40 for line in shown.split("\n"))
    assert "─" * 40 in shown


async def test_a_crash_inside_a_component_restores_the_terminal(tmp_path: Path) -> None:
    """An exception while rendering ends the UI, and the terminal's attributes are exactly
    what they were before it started."""

    class Boom:
        def render(self, width: int) -> list[str]:
            raise RuntimeError("component failed")

    with pytest.raises(BaseException) as caught:
        async with open_tui(tmp_path, ["x"]) as tui:
            assert not termios.tcgetattr(tui.slave)[3] & termios.ECHO  # raw mode is on
            tui.app.chat.add(Boom())
            tui.app.request_render()
            await tui.wait_exit()
    assert "component failed" in repr(caught.value)
    assert tui.final_attrs == tui.original_attrs
    assert tui.raw_output.endswith(b"\x1b[?2004l\x1b[<u\x1b[?25h")


async def test_quitting_restores_the_terminal(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        tui.type("/quit\r")
        assert await tui.wait_exit() == 0
    assert tui.final_attrs == tui.original_attrs


async def test_a_fast_stream_is_coalesced_into_few_frames(tmp_path: Path) -> None:
    """Thousands of deltas arriving at once cost a handful of renders, and the last one shows
    the whole answer."""
    answer = " ".join(f"token{i}" for i in range(3000))
    async with open_tui(tmp_path, [answer], rows=10) as tui:
        tui.type("go\r")
        await tui.wait_for(lambda: "token2999" in tui.text() and "Working" not in tui.text())
        frames = tui.app.stats.frames
    deltas = len(answer) // 4
    assert frames < deltas / 50


async def test_the_command_line_message_is_sent_first(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Answer to the first."], "first from argv") as tui:
        await tui.wait_for("Answer to the first.")
        assert "first from argv" in tui.text()
    assert tui.user_texts() == ["first from argv"]


async def test_sigterm_quits_and_restores_the_terminal(tmp_path: Path) -> None:
    async with open_tui(tmp_path, []) as tui:
        os.kill(os.getpid(), signal.SIGTERM)
        assert await tui.wait_exit() == 128 + signal.SIGTERM
    assert tui.final_attrs == tui.original_attrs


async def test_a_very_narrow_terminal_still_works(tmp_path: Path) -> None:
    script = ["A reply with `code` and **bold** that wraps a lot.", "Two."]
    async with open_tui(tmp_path, script, columns=12, rows=20) as tui:
        tui.type("a prompt that is longer than the screen is wide\r")
        await tui.wait_for(lambda: "wraps" in tui.transcript() and "Working" not in tui.text())
        tui.type("/model\r")
        await tui.wait_for("→ faux/")
        tui.type("\x1b")
        await tui.wait_for(lambda: "→ faux/" not in tui.text())
        assert all(len(line) <= 12 for line in tui.text().split("\n"))


async def test_continue_shows_the_earlier_conversation(tmp_path: Path) -> None:
    async with open_tui(tmp_path, ["Earlier answer."]) as tui:
        tui.type("earlier question\r")
        await tui.wait_for("Earlier answer.")
    async with open_tui(tmp_path, ["Later answer."], "-c") as tui:
        await tui.wait_for("Earlier answer.")
        assert "earlier question" in tui.text()
        tui.type("later question\r")
        await tui.wait_for("Later answer.")
    assert tui.user_texts() == ["earlier question", "later question"]


async def test_a_refused_prompt_is_an_error_in_the_chat(tmp_path: Path) -> None:
    """No API key: the UI still starts, and the prompt's refusal is shown."""
    async with open_tui(tmp_path, [], provider="anthropic") as tui:
        tui.type("hello\r")
        await tui.wait_for("Error:")
        assert "api key" in tui.text().lower()
        assert tui.app.session.messages == ()
