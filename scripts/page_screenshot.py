"""Save docs/page.png: the browser page of ``pitrio serve`` after a short conversation.

Run from the repository root: ``.venv/bin/python scripts/page_screenshot.py [OUT.png]``. It
starts an in-process host whose sessions use a scripted faux model (a read tool call, then an
answer), opens the page in headless Chromium (/usr/bin/chromium, driven by tests/host/cdp.py),
creates a session, sends a prompt through the page's input box, waits for the answer to finish
and captures a 1000x700 screenshot.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.host.browser_host import open_page_host  # noqa: E402
from tests.host.cdp import open_browser  # noqa: E402

WIDTH, HEIGHT = 1000, 700
PROMPT = "What does greet.py do?"
GREET = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
SCRIPT = [
    {
        "content": [
            {"type": "thinking", "thinking": "I should read the file before answering."},
            {"type": "toolCall", "name": "read", "arguments": {"path": "greet.py"}},
        ]
    },
    "greet.py defines one function, greet(name), which returns a greeting for that name: "
    'greet("Ada") gives "Hello, Ada!".\n\nIt has no side effects and no dependencies.',
]


async def main(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="pitrio-page-") as root:
        (Path(root) / "greet.py").write_text(GREET)
        async with open_page_host(root, script=SCRIPT) as host, open_browser() as browser:
            page = await browser.open_page()
            await page.set_viewport(WIDTH, HEIGHT)
            await page.navigate(host.page_url)
            await page.wait_for("window.pitrio.state.connected")
            await page.evaluate("document.getElementById('new-session').click()")
            await page.wait_for("!document.getElementById('input').disabled")
            await page.evaluate(
                f"document.getElementById('input').value = {json.dumps(PROMPT)};"
                "document.getElementById('send').click()"
            )
            await page.wait_for(
                "window.pitrio.state.messages.length === 4 && !window.pitrio.state.streaming"
                " && window.pitrio.state.sessions.length === 1"
            )
            await page.screenshot(os.fspath(out), WIDTH, HEIGHT)
    print(f"wrote {out}")


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "page.png")
