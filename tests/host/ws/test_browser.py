"""The host's browser page in a real headless Chromium (tests/host/cdp.py drives it).

Chromium is required, not optional: ``.ci/run`` installs it, and without ``/usr/bin/chromium``
these tests fail rather than skip. Waits are conditions checked inside the page
(``Page.wait_for``), never sleeps; the faux model is paced only so that the page can be caught
while an answer is still streaming.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.host.browser_host import open_page_host
from tests.host.cdp import CHROMIUM, Page, open_browser

NOTES = "first line of the notes\nsecond line, with <i>markup</i> that stays text\n"
THINKING = "The notes file should answer this."
ANSWER = (
    "Here is what the notes say, one point at a time.\n\n"
    + "".join(
        f"Point {n}: the page streams this sentence, and <b>tags</b> stay text.\n"
        for n in range(1, 13)
    )
    + "That is all."
)
SCRIPT: list[Any] = [
    {
        "content": [
            {"type": "thinking", "thinking": THINKING},
            {"type": "toolCall", "name": "read", "arguments": {"path": "notes.txt"}},
        ]
    },
    ANSWER,
]
TOKENS_PER_SECOND = 60
"""About four seconds for the answer: long enough to drop the socket in the middle of it."""

LAST_ASSISTANT = "[...document.querySelectorAll('#log article[data-role=assistant]')].pop()"
# In one evaluation: if the answer is streaming (shown, not finished), drop the socket and
# return the text shown so far; so the drop is certain to fall inside the stream.
DROP_MID_STREAM = """(() => {
    const s = window.pitrio.state;
    const last = s.messages[s.messages.length - 1];
    const text = last && last.message.role === "assistant" && last.open
        && (last.message.content.find((b) => b.type === "text") || {}).text;
    if (!text) return null;
    window.pitrio.dropSocket();
    return {text, connections: s.connections};
})()"""


def _last_assistant_text_in_file(path: str) -> str:
    entries = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    messages = [e["message"] for e in entries if e.get("type") == "message"]
    last = [m for m in messages if m["role"] == "assistant"][-1]
    return "".join(b["text"] for b in last["content"] if b["type"] == "text")


async def _click(page: Page, element_id: str) -> None:
    await page.evaluate(f"document.getElementById({json.dumps(element_id)}).click()")


async def _type(page: Page, text: str) -> None:
    await page.evaluate(f"document.getElementById('input').value = {json.dumps(text)}")


def test_chromium_is_installed() -> None:
    """The browser tests need /usr/bin/chromium (.ci/run installs it); they never skip."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium"


async def test_page_streams_resumes_after_a_dropped_socket_and_shows_the_tool_call(
    tmp_path: Path,
) -> None:
    """A prompt sent from the page streams its answer; a socket dropped mid-stream is reopened
    and resumed, and the page ends with exactly the session file's text, the tool call with
    its arguments and result, and the thinking collapsed."""
    (tmp_path / "notes.txt").write_text(NOTES)
    async with (
        open_page_host(tmp_path, script=SCRIPT, tokens_per_second=TOKENS_PER_SECOND) as host,
        open_browser() as browser,
    ):
        page = await browser.open_page(host.page_url)
        await page.wait_for("window.pitrio.state.connected")
        await _click(page, "new-session")
        await page.wait_for(
            "window.pitrio.state.current && !document.getElementById('input').disabled"
        )

        await _type(page, "What do the notes say?")
        await _click(page, "send")
        dropped = await page.wait_for(DROP_MID_STREAM)
        assert 0 < len(dropped["text"]) < len(ANSWER)
        assert ANSWER.startswith(dropped["text"])

        # Reconnected, resumed, and the run finished (the answer stopped, the agent ended).
        await page.wait_for(f"window.pitrio.state.connections > {dropped['connections']}")
        await page.wait_for(
            f"!window.pitrio.state.streaming && {LAST_ASSISTANT}"
            " && !window.pitrio.state.messages.at(-1).open"
            " && window.pitrio.state.messages.at(-1).message.stopReason === 'stop'"
        )
        shown = await page.evaluate(f"{LAST_ASSISTANT}.querySelector('.block-text').textContent")
        session = await page.evaluate(
            "window.pitrio.state.sessions.find((s) => s.session === window.pitrio.state.current)"
        )
        assert shown == _last_assistant_text_in_file(session["sessionFile"]) == ANSWER

        # One user message, the tool-call message and the answer: nothing doubled.
        roles = await page.evaluate(
            "[...document.querySelectorAll('#log article')].map((a) => a.dataset.role)"
        )
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        assert await page.evaluate("document.querySelector('#log article.user').textContent") == (
            "YouWhat do the notes say?"
        )

        tool = await page.evaluate(
            """(() => { const card = document.querySelector('#log .tool');
                return {status: card.dataset.status, name: card.querySelector('h3').textContent,
                        args: card.querySelector('.tool-args').textContent,
                        result: card.querySelector('.tool-result').textContent}; })()"""
        )
        assert tool["status"] == "done"
        assert tool["name"] == "read (done)"
        assert json.loads(tool["args"]) == {"path": "notes.txt"}
        assert NOTES.strip() in tool["result"]

        thinking = await page.evaluate(
            """(() => { const d = document.querySelector('#log details.thinking');
                return {open: d.open, text: d.querySelector('pre').textContent}; })()"""
        )
        assert thinking == {"open": False, "text": THINKING}

        # Model and tool output went in as text: no element was made from it.
        assert await page.evaluate("document.querySelectorAll('#log b, #log i').length") == 0
        assert not [line for line in page.console if line.startswith("exception")]


async def test_page_reopens_a_session_from_the_list_with_its_history(tmp_path: Path) -> None:
    """A second page opening a finished session from the list shows its messages once."""
    (tmp_path / "notes.txt").write_text(NOTES)
    async with (
        open_page_host(tmp_path, script=SCRIPT) as host,
        open_browser() as browser,
    ):
        first = await browser.open_page(host.page_url)
        await first.wait_for("window.pitrio.state.connected")
        await _click(first, "new-session")
        await first.wait_for("!document.getElementById('input').disabled")
        await _type(first, "What do the notes say?")
        await _click(first, "send")
        await first.wait_for(
            "window.pitrio.state.messages.length === 4 && !window.pitrio.state.streaming"
        )

        second = await browser.open_page(host.page_url)
        await second.wait_for("document.querySelector('#session-list button.session')")
        await second.evaluate("document.querySelector('#session-list button.session').click()")
        await second.wait_for("document.querySelectorAll('#log article').length === 4")
        roles = await second.evaluate(
            "[...document.querySelectorAll('#log article')].map((a) => a.dataset.role)"
        )
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        shown = await second.evaluate(f"{LAST_ASSISTANT}.querySelector('.block-text').textContent")
        assert shown == ANSWER
        assert await second.evaluate("document.querySelector('#log .tool').dataset.status") == (
            "done"
        )
