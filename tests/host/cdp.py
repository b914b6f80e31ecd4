"""A small Chrome DevTools Protocol driver: a real headless Chromium, driven over trio-websocket.

``open_browser()`` starts Chromium with ``--remote-debugging-port=0`` in a fresh profile, reads
the address of the port it chose from its stderr (``DevTools listening on ws://...``), connects
to that browser endpoint and yields a :class:`Browser`; ``browser.open_page(url)`` creates a tab and attaches to
it with a flat session (one websocket for every tab). On a page, ``evaluate`` runs JavaScript
and ``wait_for`` waits until a JavaScript condition holds: the condition is polled inside the
page and the answer comes back as one awaited promise, so the test never sleeps to synchronise.

Console messages and uncaught exceptions of every page are kept (``page.console``) so that a
failing test can say what the page complained about.
"""

from __future__ import annotations

import base64
import collections
import json
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import trio
from trio_websocket import WebSocketConnection, open_websocket_url

CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_FLAGS: Final = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)
START_TIMEOUT: Final = 60.0
"""Seconds Chromium may take to open its debugging port (a cold start on a busy CI machine)."""
WAIT_TIMEOUT: Final = 60.0
"""Default seconds for ``Page.wait_for``: generous, it only bounds a hang."""
CONSOLE_KEPT: Final = 200
"""Console lines kept per page for failure messages."""
POLL_MS: Final = 25
"""How often a ``wait_for`` condition is re-checked inside the page (and on every DOM change)."""


class CdpError(Exception):
    """A CDP command failed.

    Attributes:
        method: the command.
        error: the protocol's error object.
    """

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        super().__init__(f"{method}: {error.get('message')} ({error.get('data', '')})")
        self.method = method
        self.error = error


class Connection:
    """One websocket to the browser endpoint; commands are matched to answers by id."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws
        self._next_id = 1
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.pages: dict[str, Page] = {}

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """Send one command and return its ``result``.

        Raises:
            CdpError: the browser answered with an error.
        """
        call_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[call_id] = send
        try:
            await self._ws.send_message(json.dumps(message))
            answer = await receive.receive()
        finally:
            del self._waiting[call_id]
        if "error" in answer:
            raise CdpError(method, answer["error"])
        result: dict[str, Any] = answer.get("result", {})
        return result

    async def read_loop(self) -> None:
        """Deliver answers to their callers and page events to their pages, until closed."""
        while True:
            message = json.loads(await self._ws.get_message())
            if "id" in message:
                waiter = self._waiting.get(message["id"])
                if waiter is not None:
                    waiter.send_nowait(message)
                continue
            page = self.pages.get(message.get("sessionId", ""))
            if page is not None:
                page.on_event(message["method"], message.get("params", {}))


class Page:
    """One tab, attached through a flat session."""

    def __init__(self, connection: Connection, target_id: str, session_id: str) -> None:
        self._connection = connection
        self.target_id = target_id
        self.session_id = session_id
        self.console: collections.deque[str] = collections.deque(maxlen=CONSOLE_KEPT)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Keep console output and uncaught exceptions."""
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            exception = details.get("exception", {})
            self.console.append(f"exception: {exception.get('description', details['text'])}")

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command to this tab."""
        return await self._connection.send(method, params, self.session_id)

    async def navigate(self, url: str) -> None:
        """Load ``url`` and wait until its document has loaded."""
        await self.send("Page.navigate", {"url": url})
        await self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    async def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        """The JSON value of a JavaScript expression in the page.

        Raises:
            CdpError: the expression threw.
        """
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CdpError(
                "Runtime.evaluate",
                {"message": details.get("exception", {}).get("description", details["text"])},
            )
        return result["result"].get("value")

    async def wait_for(self, condition: str, seconds: float = WAIT_TIMEOUT) -> Any:
        """Wait until the JavaScript expression ``condition`` is truthy; returns its value.

        Raises:
            TimeoutError: it did not hold within ``seconds`` (the message has the page's console).
        """
        script = f"""new Promise((resolve) => {{
            const check = () => {{
                let value;
                try {{ value = ({condition}); }} catch (e) {{ value = undefined; }}
                if (value) {{ observer.disconnect(); clearInterval(timer); resolve(value); }}
            }};
            const observer = new MutationObserver(check);
            observer.observe(document, {{subtree: true, childList: true, characterData: true,
                                         attributes: true}});
            const timer = setInterval(check, {POLL_MS});
            check();
        }})"""
        try:
            with trio.fail_after(seconds):
                return await self.evaluate(script, await_promise=True)
        except trio.TooSlowError:
            console = "\n".join(self.console)
            raise TimeoutError(f"not true after {seconds} s: {condition}\n{console}") from None

    async def screenshot(self, path: str, width: int, height: int) -> None:
        """Save a PNG of the viewport, sized ``width`` x ``height`` CSS pixels."""
        await self.set_viewport(width, height)
        data = await self.send("Page.captureScreenshot", {"format": "png"})
        await trio.Path(path).write_bytes(base64.b64decode(data["data"]))

    async def set_viewport(self, width: int, height: int) -> None:
        """Emulate a ``width`` x ``height`` window at device scale 1."""
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )


class Browser:
    """The browser endpoint of a running Chromium."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def open_page(self, url: str = "about:blank") -> Page:
        """Open a new tab, attach to it, enable its events and load ``url``."""
        target = await self.connection.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.connection.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        page = Page(self.connection, target["targetId"], attached["sessionId"])
        self.connection.pages[page.session_id] = page
        await page.send("Runtime.enable")
        await page.send("Page.enable")
        if url != "about:blank":
            await page.navigate(url)
        return page


_LISTENING: Final = "DevTools listening on "


async def _devtools_url(process: trio.Process, stderr: collections.deque[str]) -> str:
    """Wait for Chromium to announce the websocket address of its browser endpoint."""
    assert process.stderr is not None
    buffer = b""
    async for chunk in process.stderr:
        buffer += chunk
        *lines, rest = buffer.split(b"\n")
        buffer = rest
        for raw in lines:
            line = raw.decode(errors="replace")
            stderr.append(line)
            # The browser endpoint's address, as Puppeteer reads it. (The same port and path
            # go to DevToolsActivePort in the profile, but that file is written on another
            # thread and may appear only after this line: reading it here would race.)
            if line.startswith(_LISTENING):
                return line.removeprefix(_LISTENING).strip()
    raise RuntimeError("Chromium exited before opening its debugging port:\n" + "\n".join(stderr))


async def _drain(stream: trio.abc.ReceiveStream, lines: collections.deque[str]) -> None:
    # Keep reading so that a chatty Chromium never blocks on a full pipe.
    async for chunk in stream:
        lines.extend(chunk.decode(errors="replace").splitlines())


@asynccontextmanager
async def open_browser(executable: str = CHROMIUM) -> AsyncIterator[Browser]:
    """Start a headless Chromium in a throw-away profile; yield its browser endpoint.

    Resource handling: the browser is closed (``Browser.close``, then killed if it lingers) and
    its profile removed when the block exits.

    Raises:
        FileNotFoundError: ``executable`` does not exist.
    """
    if not await trio.Path(executable).exists():
        raise FileNotFoundError(executable)
    profile = tempfile.mkdtemp(prefix="pitrio-chromium-")
    stderr: collections.deque[str] = collections.deque(maxlen=CONSOLE_KEPT)
    try:
        async with trio.open_nursery() as nursery:
            process = await trio.lowlevel.open_process(
                [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            try:
                with trio.fail_after(START_TIMEOUT):
                    url = await _devtools_url(process, stderr)
                assert process.stderr is not None
                nursery.start_soon(_drain, process.stderr, stderr)
                async with open_websocket_url(url, max_message_size=64 * 1024 * 1024) as ws:
                    connection = Connection(ws)
                    nursery.start_soon(connection.read_loop)
                    try:
                        yield Browser(connection)
                    finally:
                        nursery.cancel_scope.cancel()
                        with trio.move_on_after(5, shield=True):
                            await ws.send_message(json.dumps({"id": 0, "method": "Browser.close"}))
            finally:
                with trio.move_on_after(10, shield=True):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    with trio.CancelScope(shield=True):
                        await process.wait()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
