"""The websocket host: serve AgentSessions on a loopback port and drive one as a client.

The host runs in this process (``pitrio serve`` runs the same host from the command line); the
client speaks docs/host-protocol.md over trio-websocket: create a session, prompt it, and read
its events (each with the session's ``seq``) until ``agent_end``.

Run: python examples/host_websocket.py
"""

import json
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
import trio
from trio_websocket import open_websocket_url

from pitrio.host import HostConfig, OpenedSession, SessionRequest, open_host
from pitrio.providers import faux_assistant_message, register_faux_provider
from pitrio.sessions import SessionManager, open_agent_session

faux = register_faux_provider(api="faux", tokens_per_second=200)  # paced, so it streams
faux.set_responses([faux_assistant_message("Hello over the websocket, a few words at a time.")])


@asynccontextmanager
async def open_session(request: SessionRequest) -> AsyncIterator[OpenedSession]:
    """The host's session factory: one file-backed AgentSession per create_session."""
    manager = SessionManager.create(request.cwd or request.session_dir, request.session_dir)
    async with open_agent_session(session_manager=manager, model=faux.get_model()) as session:
        yield OpenedSession(session=session)


async def main() -> None:
    # The host logs with structlog; as `pitrio serve` does, send its lines to stderr.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    with tempfile.TemporaryDirectory() as session_dir:
        config = HostConfig(port=0, session_dir=session_dir, roots=(session_dir,))
        async with open_host(open_session, config) as host:
            url = f"ws://127.0.0.1:{host.port}/ws?token={host.token}"
            async with open_websocket_url(url) as ws:
                await ws.send_message(json.dumps({"type": "create_session", "id": "c1"}))
                created = json.loads(await ws.get_message())
                session = created["data"]["session"]
                print("created", session)
                prompt = {"type": "prompt", "session": session, "message": "Hi!", "id": "p1"}
                await ws.send_message(json.dumps(prompt))
                while True:
                    frame = json.loads(await ws.get_message())
                    kind = frame["type"]
                    if kind == "message_update":  # pi's event, carrying the provider's
                        inner = frame["assistantMessageEvent"]
                        if inner["type"] == "text_delta":
                            print(f"seq {frame['seq']}: text_delta {inner['delta']!r}")
                    elif kind != "response":  # responses are matched by their "id"
                        print(f"seq {frame['seq']}: {kind}")
                    if kind == "agent_end":
                        break


if __name__ == "__main__":
    trio.run(main)
